"""Hostile and broken files: training checkpoints, model files and datasets that hold pickles
(one that would create a marker file if unpickled), wrong dtypes or shapes, extra or missing
entries, truncated bytes, non-zip junk, and a zip-bomb-sized declared array. Each is refused
with a ValueError naming the file, nothing is ever unpickled, and no big array is allocated
before the header has been checked. Paths are used as given, and a training run writes
nothing outside ``--out``."""
from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import tracemalloc
import zipfile
from dataclasses import asdict

import numpy as np
import pytest
from reliability_util import ROOT, TINY

from minigrad.optim import AdamW, OneCycle
from vit.io.npz import load_npz
from vit.model.normalizer import Normalizer
from vit.model.tinyvit import TinyViT
from vit.train.checkpoint import load_checkpoint, save_checkpoint
from vit.train.data import load_data
from vit.train.options import TrainOptions


class Marker:
    """Unpickling this creates the file at ``path``: proof that a loader ran foreign code."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.fixture(autouse=True)
def no_unpickling(monkeypatch):
    """Any call into pickle during a test fails it (np.load would go through these)."""
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise AssertionError("something tried to unpickle")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    yield
    assert not calls


def checkpoint_arrays(tmp_path) -> dict:
    """The arrays of a real training checkpoint (AdamW state included)."""
    model = TinyViT(dim=8, num_heads=2, mlp_dim=8, num_classes=10, dtype=np.float32, seed=0)
    opt = AdamW(list(model.parameters()), lr=1e-3)
    for p in model.parameters():
        p.grad = np.ones_like(p.data)
    opt.step()
    options = asdict(TrainOptions(dim=8, heads=2, mlp_dim=8))
    path = tmp_path / "good-ckpt.npz"
    save_checkpoint(path, model=model, options=options, epoch=1,
                    normalizer=Normalizer(np.zeros(1), np.ones(1)),
                    rng=np.random.default_rng(0), optimizer=opt,
                    scheduler=OneCycle(opt, 1e-3, 10))
    load_checkpoint(path)
    return load_npz(path)


def dataset_arrays() -> dict:
    rng = np.random.default_rng(0)
    return dict(x=rng.normal(size=(20, 4, 4)).astype(np.float32), y=np.arange(20) % 2)


def evil(marker) -> np.ndarray:
    a = np.empty(2, dtype=object)
    a[0], a[1] = Marker(marker), 1.0
    return a


def save_with_pickles(path, arrays):
    """np.savez writes object arrays as pickles (allow_pickle is its default)."""
    np.savez(path, **arrays)


CHECKPOINT_CHANGES = {
    "pickled-param": lambda a, m: a.update({"param/head.bias": evil(m)}),
    "pickled-rng": lambda a, m: a.update(rng=evil(m)),
    "pickled-extra-entry": lambda a, m: a.update(extra=evil(m)),
    "complex-param": lambda a, m: a.update({"param/head.bias": a["param/head.bias"] + 0j}),
    "float64-param": lambda a, m: a.update({"param/head.weight": a["param/head.weight"]
                                            .astype(np.float64)}),
    "int-param": lambda a, m: a.update({"param/cls_token": np.zeros((1, 1, 8), int)}),
    "string-param": lambda a, m: a.update({"param/head.bias": np.array(["a"] * 10)}),
    "param-shape": lambda a, m: a.update({"param/pos_embed": np.zeros((1, 4, 8), np.float32)}),
    "missing-param": lambda a, m: a.pop("param/block.norm1.weight"),
    "extra-param": lambda a, m: a.update({"param/block.extra": np.zeros(3, np.float32)}),
    "missing-rng": lambda a, m: a.pop("rng"),
    "missing-format": lambda a, m: a.pop("format"),
    "wrong-format": lambda a, m: a.update(format=np.array("vit-train/99")),
    "config-not-json": lambda a, m: a.update(config=np.array("{oops")),
    "config-bad-heads": lambda a, m: a.update(config=np.array(json.dumps(
        {**json.loads(str(a["config"])), "num_heads": 3}))),
    "rng-not-json": lambda a, m: a.update(rng=np.array("[1, 2")),
    "rng-unknown-generator": lambda a, m: a.update(rng=np.array(json.dumps(
        {"bit_generator": "os.system", "state": {}}))),
    "norm-std-zero": lambda a, m: a.update({"norm/std": np.zeros(1)}),
    "norm-shape": lambda a, m: a.update({"norm/mean": np.zeros(3)}),
}


@pytest.mark.parametrize("change", list(CHECKPOINT_CHANGES))
def test_broken_training_checkpoint(tmp_path, change):
    arrays, marker = checkpoint_arrays(tmp_path), tmp_path / "unpickled"
    CHECKPOINT_CHANGES[change](arrays, marker)
    path = tmp_path / "bad-ckpt.npz"
    save_with_pickles(path, arrays)
    with pytest.raises(ValueError, match="bad-ckpt.npz") as info:
        load_checkpoint(path)
    if change == "pickled-extra-entry":  # refused by its name, before its contents are read
        assert "unexpected entries ['extra']" in str(info.value)
    elif change.startswith("pickled"):
        assert "object (pickled)" in str(info.value)
    assert not marker.exists()


DATA_CHANGES = {
    "pickled-x": lambda a, m: a.update(x=evil(m)),
    "pickled-y": lambda a, m: a.update(y=evil(m)),
    "pickled-extra": lambda a, m: a.update(notes=evil(m)),
    "complex-x": lambda a, m: a.update(x=a["x"] + 1j),
    "string-y": lambda a, m: a.update(y=a["y"].astype(str)),
    "x-rank": lambda a, m: a.update(x=a["x"].reshape(20, 16)),
    "y-length": lambda a, m: a.update(y=a["y"][:5]),
    "missing-y": lambda a, m: a.pop("y"),
    "only-x-test": lambda a, m: a.update(x_test=a["x"][:4]),
    "inf-x": lambda a, m: a.update(x=np.where(a["x"] > 1, np.inf, a["x"])),
}


@pytest.mark.parametrize("change", list(DATA_CHANGES))
def test_broken_dataset(tmp_path, change):
    arrays, marker = dataset_arrays(), tmp_path / "unpickled"
    DATA_CHANGES[change](arrays, marker)
    path = tmp_path / "bad-data.npz"
    save_with_pickles(path, arrays)
    with pytest.raises(ValueError, match="bad-data.npz"):
        load_data(path)
    assert not marker.exists()


def junk_files(tmp_path, marker) -> dict:
    good = tmp_path / "good.npz"
    np.savez(good, **dataset_arrays())
    data = good.read_bytes()
    npy = io.BytesIO()
    np.save(npy, np.zeros(3))
    pickled_npy = io.BytesIO()
    np.save(pickled_npy, evil(marker), allow_pickle=True)
    inner_pickle = io.BytesIO()
    with zipfile.ZipFile(inner_pickle, "w") as z:  # a pickle posing as an .npy member
        z.writestr("x.npy", pickle.dumps(Marker(marker)))
    other_member = io.BytesIO()
    with zipfile.ZipFile(other_member, "w") as z:
        z.writestr("x.npy", npy.getvalue())
        z.writestr("readme.txt", b"hello")
    cases = {
        "empty": b"", "text": b"hello, I am not an archive",
        "pickle": pickle.dumps(Marker(marker)), "npy": npy.getvalue(),
        "pickled-npy": pickled_npy.getvalue(), "zip-with-a-pickle-member":
            inner_pickle.getvalue(), "zip-with-a-text-member": other_member.getvalue(),
        "zip-magic-then-junk": b"PK\x03\x04" + b"\x00" * 100,
    }
    for cut in (10, 100, len(data) // 2, len(data) - 30, len(data) - 1):
        cases[f"truncated-at-{cut}"] = data[:cut]
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0xFF
    cases["flipped-byte"] = bytes(flipped)
    return cases


def test_junk_and_truncated_files_are_refused_by_every_loader(tmp_path):
    marker = tmp_path / "unpickled"
    loaders = {"load_data": load_data, "load_checkpoint": load_checkpoint,
               "TinyViT.load": TinyViT.load, "load_npz": load_npz}
    for name, content in junk_files(tmp_path, marker).items():
        path = tmp_path / f"{name}.npz"
        path.write_bytes(content)
        for loader_name, loader in loaders.items():
            with pytest.raises(ValueError, match=f"{name}.npz") as info:
                loader(path)
            message = str(info.value)
            if name in ("empty", "text", "pickle"):  # not misreported as a pickled array
                assert "not an .npz archive" in message and "pickled" not in message
            if name in ("npy", "pickled-npy"):
                assert "single .npy array" in message, (loader_name, message)
    assert not marker.exists()


def bomb(path, shape=(10**12,), descr="<f8", data=b"\x00" * 64, compress=zipfile.ZIP_STORED):
    """An .npz whose one member's header declares ``shape`` over only ``data`` bytes."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": descr, "fortran_order": False,
                                                  "shape": shape})
    with zipfile.ZipFile(path, "w", compression=compress) as z:
        z.writestr("x.npy", header.getvalue() + data)
        z.writestr("y.npy", b"")  # never reached
    return path


@pytest.mark.parametrize("shape, descr, words", [
    ((10**12,), "<f8", ["(1000000000000,)", "8,000,000,000,000 bytes"]),
    ((2**62, 2**62), "<f8", ["declares shape"]),  # overflows any 64-bit size
    ((10**6, 10**6), "|u1", ["1,000,000,000,000 bytes"]),
    ((5,), "<f8", ["40 bytes", "holds 8 bytes"]),  # small, but more than the member holds
    ((-3,), "<f8", ["(-3,)", "non-negative"]),
])
def test_declared_sizes_are_checked_before_anything_is_allocated(tmp_path, monkeypatch, shape,
                                                                 descr, words):
    path = bomb(tmp_path / "bomb.npz", shape, descr, data=b"\x00" * 8)

    def never(*args, **kwargs):
        raise AssertionError("the array was read before its header was checked")

    monkeypatch.setattr(np.lib.format, "read_array", never)
    tracemalloc.start()
    try:
        for loader in (load_data, load_checkpoint, TinyViT.load):
            with pytest.raises(ValueError, match="bomb.npz") as info:
                loader(path)
            # a checkpoint has no entry named 'x': refused by the name, before its header
            expected = ["unexpected entries ['x']"] if loader is load_checkpoint else words
            assert all(w in str(info.value) for w in expected), str(info.value)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000


def test_a_compressed_bomb_is_refused_before_it_is_inflated(tmp_path):
    """20 MB of zeros deflate to ~20 kB; with a 1 MB budget the header alone refuses it."""
    path = tmp_path / "deflated.npz"
    np.savez_compressed(path, x=np.zeros(20 * 2**20, np.uint8), y=np.zeros(2, int))
    assert path.stat().st_size < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="20,971,520 bytes"):
            load_npz(path, max_bytes=2**20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000
    assert load_npz(path)["x"].shape == (20 * 2**20,)  # within the default budget: loads


def test_fortran_order_and_big_endian_members_still_load(tmp_path):
    a = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    np.savez(tmp_path / "ok.npz", a=a, b=np.arange(5, dtype=">i4"))
    got = load_npz(tmp_path / "ok.npz")
    assert np.array_equal(got["a"], a) and np.array_equal(got["b"], np.arange(5))


# ---- paths --------------------------------------------------------------------------------------
def test_paths_are_used_as_given(tmp_path, monkeypatch):
    """No ~ or $VAR expansion, no globbing: a relative path is relative to the cwd."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("~", "$HOME", "*"):
        os.mkdir(name)
        TinyViT(seed=0).save(f"{name}/m.npz")
        assert (tmp_path / name / "m.npz").exists()
        TinyViT.load(f"{name}/m.npz")
    assert not (tmp_path / "home").exists()
    with pytest.raises(FileNotFoundError, match="~/absent.npz"):
        TinyViT.load("~/absent.npz")


def walk(root) -> set:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


@pytest.mark.slow
def test_a_training_run_writes_nothing_outside_out(tmp_path):
    """Run, eval and plot in a fresh process whose cwd, HOME and TMPDIR are watched folders:
    the run writes only OUT/checkpoint.npz and OUT/metrics.jsonl, eval writes nothing, and
    plot writes only its three figures into its --out."""
    for d in ("cwd", "home", "tmp"):
        (tmp_path / d).mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home"),
           "TMPDIR": str(tmp_path / "tmp"), "MPLCONFIGDIR": str(tmp_path / "mpl"),
           "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}

    def vit(*args):
        done = subprocess.run([sys.executable, "-m", "vit", *map(str, args)], env=env,
                              cwd=tmp_path / "cwd", capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done

    out = tmp_path / "cwd" / "sub" / "run"
    vit("train", "--out", "sub/run", *TINY, "--epochs", 2)
    assert walk(tmp_path) == {"cwd/sub/run/checkpoint.npz", "cwd/sub/run/metrics.jsonl"}
    vit("eval", out / "checkpoint.npz")
    assert walk(tmp_path) == {"cwd/sub/run/checkpoint.npz", "cwd/sub/run/metrics.jsonl"}
    pytest.importorskip("matplotlib")
    vit("plot", out, "--images", 2, "--out", tmp_path / "figs")
    found = walk(tmp_path) - {f for f in walk(tmp_path) if f.startswith("mpl/")}
    assert found == {"cwd/sub/run/checkpoint.npz", "cwd/sub/run/metrics.jsonl",
                     "figs/curves.png", "figs/confusion.png", "figs/attention.png"}
