"""examples/cnn_digits.py (the CNN vs ViT study): the CNN is built from minigrad's layers and
its gradient is right, the quarter split is stratified, and one short run trains."""
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import cnn_digits


def test_cnn_shapes_and_parameter_count():
    model = cnn_digits.SmallCNN(1, 8, 10)
    out = model(mg.Tensor(np.zeros((3, 1, 8, 8), np.float32)))
    assert out.shape == (3, 10) and out.dtype == np.float32
    # conv1 16*1*9+16, conv2 32*16*9+32, head 128*10+10, counted by hand
    assert sum(p.data.size for p in model.parameters()) == 160 + 4640 + 1290


def test_cnn_gradient_matches_finite_differences():
    model = cnn_digits.SmallCNN(1, 8, 3, dtype=np.float64, seed=1)
    x = np.random.default_rng(0).standard_normal((2, 1, 8, 8))
    # the max pools see no ties with continuous random inputs
    report = mg.gradcheck(lambda x: model(x), [x])
    assert report.ok, report


def test_quarter_is_stratified_seeded_and_sorted():
    y = np.repeat(np.arange(4), [40, 8, 13, 1])
    keep = cnn_digits.quarter(y, 0.25, seed=0)
    assert list(np.bincount(y[keep], minlength=4)) == [10, 2, 4, 1]  # ceil(count / 4)
    assert np.all(np.diff(keep) > 0)
    assert np.array_equal(keep, cnn_digits.quarter(y, 0.25, seed=0))
    assert not np.array_equal(keep, cnn_digits.quarter(y, 0.25, seed=1))


@pytest.mark.slow
def test_one_short_run_per_model_learns(tmp_path):
    for model in ("cnn", "vit"):
        r = cnn_digits.run(model, fold=0, fraction=0.25, augment=False, seed=0, epochs=3)
        assert r["test_examples"] == 360 and r["train_examples"] < 400
        assert r["accuracy"] > 0.3  # 10 classes: chance is 0.1
