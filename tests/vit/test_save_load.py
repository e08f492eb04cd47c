"""TinyViT.save / TinyViT.load and state_dict / load_state_dict."""
from __future__ import annotations

import json
import os
import pickle
import zipfile

import numpy as np
import pytest

from vit import TinyViT

CFG = dict(img_size=6, patch_size=3, in_chans=2, dim=8, num_heads=4, mlp_dim=10, num_classes=3)


def trained(dtype=np.float64, use_pos_emb=True):
    model = TinyViT(**CFG, use_pos_emb=use_pos_emb, dtype=dtype, seed=0)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((4, 2, 6, 6)), np.array([0, 1, 2, 1])
    model.train_step(x, y, lr=0.1, full=True)  # move every parameter off its initial value
    return model, x


def same_params(a, b):
    pa, pb = dict(a.named_parameters()), dict(b.named_parameters())
    assert list(pa) == list(pb)
    for name in pa:
        assert pa[name].dtype == pb[name].dtype, name
        np.testing.assert_array_equal(pa[name].data, pb[name].data, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("use_pos_emb", [True, False])
def test_round_trip_exact(tmp_path, dtype, use_pos_emb):
    model, x = trained(dtype, use_pos_emb)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = TinyViT.load(path)
    assert isinstance(loaded, TinyViT)
    assert loaded.config == model.config and loaded.config["use_pos_emb"] == use_pos_emb
    assert loaded.dtype == model.dtype == np.dtype(dtype)
    same_params(model, loaded)
    np.testing.assert_array_equal(loaded.forward(x), model.forward(x))
    loaded.save(str(tmp_path / "again.npz"))  # str paths too
    same_params(TinyViT.load(str(tmp_path / "again.npz")), model)


def test_save_overwrites_and_leaves_no_temporary_files(tmp_path):
    model, _ = trained()
    path = tmp_path / "m.npz"
    TinyViT(**CFG, seed=5).save(path)
    model.save(path)
    same_params(TinyViT.load(path), model)
    assert os.listdir(tmp_path) == ["m.npz"]


def test_state_dict_round_trip():
    model, x = trained()
    state = model.state_dict()
    assert list(state) == [name for name, _ in model.named_parameters()]
    assert all(isinstance(v, np.ndarray) for v in state.values())
    other = TinyViT(**CFG, seed=9)
    assert not np.array_equal(other.forward(x), model.forward(x))
    other.load_state_dict(state)
    same_params(other, model)
    np.testing.assert_array_equal(other.forward(x), model.forward(x))
    # copies both ways: training one model does not move the other or the saved state
    saved = {k: v.copy() for k, v in state.items()}
    other.train_step(x, np.array([0, 0, 0, 0]), full=True)
    for k in state:
        np.testing.assert_array_equal(state[k], saved[k])
        np.testing.assert_array_equal(model.state_dict()[k], saved[k])


# ---- broken files: always a ValueError, never an unpickle ---------------------------------------
def rewrite(tmp_path, change):
    """Save a model, let ``change`` edit its arrays, write them back with np.savez."""
    model, _ = trained()
    model.save(tmp_path / "good.npz")
    with np.load(tmp_path / "good.npz") as f:
        arrays = {k: f[k] for k in f.files}
    change(arrays)
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    return path


def param_key(arrays, suffix):
    return next(k for k in arrays if k.endswith(suffix))


@pytest.mark.parametrize("change", [
    lambda a: a.pop(param_key(a, "head.bias")),  # a missing array
    lambda a: a.pop(param_key(a, "cls_token")),
    lambda a: a.update({param_key(a, "head.bias").replace("head.bias", "extra"): np.zeros(3)}),
    lambda a: a.update({"unrelated": np.zeros(3)}),
    lambda a: a.update({param_key(a, "head.bias"): np.zeros(4)}),  # misshapen
    lambda a: a.update({param_key(a, "block.attn.qkv.weight"): np.zeros((8, 8))}),
    lambda a: a.update({param_key(a, "head.bias"): np.zeros(3, np.float32)}),  # wrong dtype
    lambda a: a.pop("config"),
    lambda a: a.update(config=np.array("{not json")),
    lambda a: a.update(config=np.array("5")),
    lambda a: a.update(config=np.array('["a", "b"]')),
    lambda a: a.update(config=np.array(json.dumps({**CFG, "dtype": "int32"}))),
    lambda a: a.update(config=np.array(json.dumps({**CFG, "dtype": "float64", "dim": 7}))),
    lambda a: a.update(config=np.array(json.dumps({**CFG, "dtype": "float64", "bogus": 1}))),
], ids=["missing", "missing-cls", "extra-param", "extra-entry", "misshapen", "misshapen-qkv",
        "dtype", "no-config", "bad-json", "config-number", "config-list", "config-int-dtype",
        "config-bad-heads", "config-unknown-key"])
def test_broken_contents_value_error(tmp_path, change):
    path = rewrite(tmp_path, change)
    with pytest.raises(ValueError, match="bad.npz|load"):
        TinyViT.load(path)


@pytest.mark.parametrize("keep", [0, 10, 0.5, -20])
def test_truncated_file_value_error(tmp_path, keep):
    model, _ = trained()
    model.save(tmp_path / "m.npz")
    data = (tmp_path / "m.npz").read_bytes()
    n = int(len(data) * keep) if isinstance(keep, float) else keep % len(data)
    (tmp_path / "cut.npz").write_bytes(data[:n])
    with pytest.raises(ValueError, match="cut.npz"):
        TinyViT.load(tmp_path / "cut.npz")


def test_corrupted_member_value_error(tmp_path):
    model, _ = trained()
    model.save(tmp_path / "m.npz")
    data = bytearray((tmp_path / "m.npz").read_bytes())
    with zipfile.ZipFile(tmp_path / "m.npz") as z:
        info = z.getinfo(z.namelist()[2])
    data[info.header_offset + 30 + len(info.filename) + info.file_size - 5] ^= 0xFF
    (tmp_path / "flip.npz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="flip.npz"):
        TinyViT.load(tmp_path / "flip.npz")


def test_not_an_npz(tmp_path):
    np.save(tmp_path / "single.npy", np.zeros(3))
    (tmp_path / "text.npz").write_text("hello, I am not a model")
    for name in ("single.npy", "text.npz"):
        with pytest.raises(ValueError, match=name):
            TinyViT.load(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        TinyViT.load(tmp_path / "absent.npz")


class _Marker:
    """Unpickling this object creates a file: proof that loading would run code."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_object_arrays_and_pickles_are_never_unpickled(tmp_path):
    marker = tmp_path / "unpickled"
    evil = np.empty(1, dtype=object)
    evil[0] = _Marker(marker)
    path = rewrite(tmp_path, lambda a: a.update({param_key(a, "head.bias"): evil}))
    with pytest.raises(ValueError, match="bad.npz"):
        TinyViT.load(path)
    (tmp_path / "raw.npz").write_bytes(pickle.dumps(_Marker(marker)))
    with pytest.raises(ValueError, match="raw.npz"):
        TinyViT.load(tmp_path / "raw.npz")
    assert not marker.exists()


# ---- the preprocessing a model file carries ----------------------------------------------------
def old_model_file(tmp_path):
    """A model file as TinyViT.save wrote it before model files held their preprocessing:
    config and parameters, no format entry."""
    model, x = trained()
    arrays = {f"param/{k}": v for k, v in model.state_dict().items()}
    arrays["config"] = np.array(json.dumps({**model.config, "dtype": "float64"}))
    np.savez(tmp_path / "old.npz", **arrays)
    return tmp_path / "old.npz", model, x


def test_save_keeps_the_normalizer_and_the_input_range(tmp_path):
    from vit.model.normalizer import Normalizer
    model, x = trained()
    model.normalizer = Normalizer(np.array([1.0, 2.0]), np.array([3.0, 0.5]))
    model.input_range = (-1.0, 4.5)
    model.save(tmp_path / "m.npz")
    back = TinyViT.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.normalizer.mean, [1.0, 2.0])
    np.testing.assert_array_equal(back.normalizer.std, [3.0, 0.5])
    assert back.input_range == (-1.0, 4.5)
    with np.load(tmp_path / "m.npz") as f:
        assert str(f["format"]) == "vit-model/1"
        assert {"norm/mean", "norm/std", "input/range"} <= set(f.files)


def test_a_model_without_a_normalizer_saves_that_it_takes_inputs_as_given(tmp_path):
    model, x = trained()
    model.save(tmp_path / "m.npz")
    back = TinyViT.load(tmp_path / "m.npz")
    assert back.normalizer is None and back.input_range is None
    with np.load(tmp_path / "m.npz") as f:
        assert not {"norm/mean", "norm/std", "input/range"} & set(f.files)


def test_an_old_model_file_is_refused_without_explicit_preprocessing(tmp_path):
    path, model, _ = old_model_file(tmp_path)
    with pytest.raises(ValueError, match=r"old.npz: saved before model files held their "
                       r"preprocessing .*mean=.*std=.*normalize='none'") as e:
        TinyViT.load(path)
    assert "\n" not in str(e.value)


def test_an_old_model_file_loads_with_explicit_statistics_or_none(tmp_path):
    path, model, x = old_model_file(tmp_path)
    given = TinyViT.load(path, mean=[0.5, 1.5], std=[2.0, 4.0])
    np.testing.assert_array_equal(given.normalizer.mean, [0.5, 1.5])
    np.testing.assert_array_equal(given.normalizer.std, [2.0, 4.0])
    same_params(given, model)
    plain = TinyViT.load(path, normalize="none")
    assert plain.normalizer is None
    np.testing.assert_array_equal(plain.forward(x), model.forward(x))


@pytest.mark.parametrize("kwargs, match", [
    (dict(mean=[0.5]), "std: missing"),
    (dict(mean=[0.5], std=[1.0]), r"mean: got \[0.5\]; expected 2 finite numbers"),
    (dict(mean=[0.5, 1.0], std=[1.0, 0.0]), "std"),
    (dict(normalize="zscore"), "normalize: got 'zscore'; expected 'none'"),
    (dict(normalize="none", mean=[0.0, 0.0], std=[1.0, 1.0]), "one of them"),
])
def test_bad_explicit_preprocessing_is_refused_naming_it(tmp_path, kwargs, match):
    path, _, _ = old_model_file(tmp_path)
    with pytest.raises(ValueError, match=match):
        TinyViT.load(path, **kwargs)


def test_explicit_preprocessing_for_a_file_that_states_its_own_is_refused(tmp_path):
    model, _ = trained()
    model.save(tmp_path / "m.npz")
    with pytest.raises(ValueError, match="states that its inputs are used as given"):
        TinyViT.load(tmp_path / "m.npz", mean=[0.0, 0.0], std=[1.0, 1.0])


@pytest.mark.parametrize("change, match", [
    (lambda a: a.update({"norm/mean": np.zeros(2)}), "'norm/mean' without 'norm/std'"),
    (lambda a: a.update({"norm/mean": np.zeros(3), "norm/std": np.ones(3)}),
     "'norm/mean' is float64 of shape \\(3,\\); expected 2"),
    (lambda a: a.update({"norm/mean": np.zeros(2), "norm/std": np.zeros(2)}), "norm/std"),
    (lambda a: a.update({"input/range": np.array([3.0, 1.0])}), "lowest <= highest"),
    (lambda a: a.update({"input/range": np.array([0.0, np.inf])}), "input/range"),
    (lambda a: a.update({"input/range": np.zeros(3)}), "input/range"),
    (lambda a: a.update({"format": np.array("vit-model/9")}), "entry 'format'"),
], ids=["mean-only", "mean-shape", "std-zero", "range-order", "range-inf", "range-shape",
        "format"])
def test_broken_preprocessing_entries_are_refused_naming_them(tmp_path, change, match):
    path = rewrite(tmp_path, change)
    with pytest.raises(ValueError, match=match):
        TinyViT.load(path)
