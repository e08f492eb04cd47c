"""examples/autoencoder_digits.py: the autoencoder's shapes and gradient, its baselines
against a direct computation, and a tiny run that trains (its loss falls) and writes its
results (no time is asserted)."""
import json
import sys
from pathlib import Path

import numpy as np

import minigrad as mg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import autoencoder_digits as ae


def test_shapes_code_and_output_range():
    model = ae.ConvAutoencoder()
    x = mg.Tensor(np.random.default_rng(0).uniform(0, 1, (3, 1, 8, 8)).astype(np.float32))
    code = model.encode(x)
    assert code.shape == (3, 4, 2, 2)
    out = model(x)
    assert out.shape == (3, 1, 8, 8) and out.dtype == np.float32
    assert np.all((out.data > 0) & (out.data < 1))


def test_gradient_matches_finite_differences():
    model = ae.ConvAutoencoder(dtype=np.float64, seed=1)
    x = mg.Tensor(np.random.default_rng(1).uniform(0, 1, (2, 1, 8, 8)), requires_grad=True)
    # random directions of the input and of the transposed convolution's weight (every
    # element would take a thousand forwards); ReLU kinks: none hit by these inputs
    report = mg.gradcheck(lambda x, w: model(x), [x, model.up1.weight], fast=True,
                          directions=4)
    assert report.ok, report


def test_baselines_are_the_mean_image_and_a_rank_k_projection():
    rng = np.random.default_rng(2)
    train = rng.uniform(0, 1, (80, 1, 8, 8))  # more images than pixels
    test = rng.uniform(0, 1, (10, 1, 8, 8))
    b = ae.baselines(train, test, 64)  # every component: the projection is exact
    mean = train.mean(axis=0)
    assert np.isclose(b["mean_image_mse"], np.mean((test - mean) ** 2), rtol=1e-12)
    assert b["pca_mse"] < 1e-20
    b0 = ae.baselines(train, test, 0)  # no component: the mean image again
    assert np.isclose(b0["pca_mse"], b0["mean_image_mse"], rtol=1e-12)


def test_a_tiny_run_trains_and_writes_its_results(tmp_path):
    out = tmp_path / "ae.json"
    assert ae.main(["--epochs", "4", "--limit", "128", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["train_images"] == 128 and r["test_images"] == 359 and r["code_size"] == 16
    losses = r["train_loss"]
    assert len(losses) == 4 and losses[-1] < 0.8 * losses[0], losses
    assert 0 < r["test_mse"] < 1 and 0 < r["pca_mse"] < r["mean_image_mse"]


def test_bad_options_exit_2_with_one_line_before_training(tmp_path, capsys):
    """A negative or huge seed, and an output folder that cannot exist, are refused by the
    parser (exit 2, one line naming the option) before a single epoch runs."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for argv, option in ((["--seed", "-1"], "--seed"), (["--seed", str(2**64)], "--seed"),
                         (["--out", str(blocker / "r.json")], "--out")):
        try:
            ae.main(["--epochs", "1", "--limit", "8", *argv])
        except SystemExit as e:
            assert e.code == 2, argv
        else:
            raise AssertionError(f"{argv} was accepted")
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert option in err, err
