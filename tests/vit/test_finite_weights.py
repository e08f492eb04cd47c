"""A model's weights are finite wherever they come from (a model file, a timm folder), and its
inputs stay within the range its arithmetic keeps finite: a NaN weight or an input beyond that
range is refused with the entry or the argument named, never turned into NaN answers."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from vit import TinyViT
from vit.model.normalizer import Normalizer

from cli_util import run_cli

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
