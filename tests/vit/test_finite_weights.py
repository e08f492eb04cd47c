"""A model's weights are finite wherever they come from (a model file, a timm folder), and its
inputs stay within the range its arithmetic keeps finite: a NaN weight or an input beyond that
range is refused with the entry or the argument named, never turned into NaN answers."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from cli_util import run_cli

from vit import TinyViT
from vit.model.normalizer import Normalizer

CFG = dict(img_size=8, patch_size=4, dim=8, num_heads=2, mlp_dim=8, num_classes=3)


def saved_with(path, name, value, normalizer=None):
    model = TinyViT(**CFG, seed=0)
    model.normalizer = normalizer
    dict(model.named_parameters())[name].data.flat[1] = value
    model.save(path)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("name", ["head.weight", "patch_embed.weight"])
def test_a_model_file_with_a_non_finite_weight_is_refused(tmp_path, name, value):
    saved_with(tmp_path / "m.npz", name, value, Normalizer(np.zeros(1), np.ones(1)))
    with pytest.raises(ValueError, match=f"param/{name}.*finite"):
        TinyViT.load(tmp_path / "m.npz")


def test_predict_never_prints_nan_from_a_model_file(tmp_path, capsys):
    saved_with(tmp_path / "m.npz", "head.weight", np.nan, Normalizer(np.zeros(1), np.ones(1)))
    np.save(tmp_path / "x.npy", np.zeros((2, 8, 8), np.float32))
    status, out, err = run_cli(["predict", tmp_path / "m.npz", tmp_path / "x.npy", "--json"],
                               capsys)
    assert status == 2 and "head.weight" in err and err.count("\n") == 1, err
    assert "NaN" not in out and "nan" not in out


def test_vit_import_refuses_a_non_finite_weight(tmp_path, capsys):
    st = pytest.importorskip("safetensors.numpy")
    model = TinyViT(**CFG, seed=0)
    model.normalizer = Normalizer(np.zeros(1), np.ones(1))
    model.save(tmp_path / "m.npz")
    out = tmp_path / "t"
    assert run_cli(["export", tmp_path / "m.npz", "--to", "timm", "--out", out], capsys)[0] == 0
    state = st.load_file(str(out / "model.safetensors"))
    state["head.weight"][0, 0] = np.inf
    config = json.loads((out / "config.json").read_text())
    config["minigrad_vit"].pop("weights_sha256")
    os.unlink(out / "model.safetensors")
    st.save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config))
    status, _, err = run_cli(["import", out, "--out", tmp_path / "back.npz"], capsys)
    assert status == 2 and "head.weight" in err and "finite" in err, err
    assert not (tmp_path / "back.npz").exists()


def test_pixels_beyond_what_the_arithmetic_keeps_finite_are_refused():
    from vit.model.input_bound import input_limit
    model = TinyViT(**CFG, dtype=np.float32, seed=0)  # inputs used as given
    assert 1e12 < input_limit(model) < 1e19  # sqrt(3.4e38 / 8) / 4 over the column sums
    huge = np.full((2, 8, 8), 2**64 - 1, np.uint64)
    with pytest.raises(ValueError, match="images.*normalized pixels reach 1.8.e\\+19"):
        model.predict(huge, probabilities=True)
    assert np.isfinite(model.predict(np.full((2, 8, 8), 1e6), probabilities=True)).all()


def test_a_std_at_the_floor_is_refused_where_it_would_overflow():
    from vit.model.normalizer import STD_FLOOR
    model = TinyViT(**CFG, dtype=np.float32, seed=0)
    model.normalizer = Normalizer(np.zeros(1), np.full(1, STD_FLOOR))
    images = np.zeros((2, 8, 8), np.float32)
    assert model.predict(images).shape == (2,)  # zero pixels: zero inputs, finite
    images[0, 3, 3] = 16
    with pytest.raises(ValueError, match="normalization std"):
        model.predict(images)


def test_training_refuses_test_pixels_beyond_the_bound_before_any_epoch(tmp_path, capsys):
    rng = np.random.default_rng(0)
    y = np.tile(np.arange(2), 20)
    x = (rng.integers(0, 2, (40, 8, 8)) * 1e-30).astype(np.float32)  # std about 5e-31
    np.savez(tmp_path / "d.npz", x=x, y=y, x_test=np.full((4, 8, 8), 16, np.float32),
             y_test=np.arange(4) % 2)
    out = tmp_path / "run"
    status, _, err = run_cli(["train", "--data", tmp_path / "d.npz", "--out", out, "--dim", "8",
                              "--heads", "2", "--mlp-dim", "8", "--epochs", "1", "--quiet"],
                             capsys)
    assert status == 2 and "test images" in err and err.count("\n") == 1, err
    assert not (out / "checkpoint.npz").exists() and not (out / "metrics.jsonl").exists()
