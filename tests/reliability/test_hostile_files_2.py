"""Inputs that are not files (issue 10, item 6) and numbers that silently go wrong in the data
and in ``train_step`` (item 8: labels, ``Normalizer.fit``, a step that overflows).

A FIFO, /dev/stdin, a character device or a folder where a file is expected must be refused
before anything opens it for a blocking read: every reader goes through one helper,
``vit.io.files.open_regular``. The FIFO tests run in a child with a timeout, so a loader that
blocks fails the test instead of hanging it."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from hostile_util import ROOT, idx_gz, small_checkpoint
from reliability_util import TINY, run_cli

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def vit_cli(args, timeout=60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    try:
        return subprocess.run([sys.executable, "-m", "vit", *map(str, args)], env=env,
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.PIPE)
    except subprocess.TimeoutExpired:
        pytest.fail(f"vit {' '.join(map(str, args))} blocked for {timeout} s")


def one_line_exit_2(proc: subprocess.CompletedProcess, *words: str) -> None:
    err = proc.stderr
    assert proc.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, f"{err!r} does not name {w!r}"


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.npz"
    os.mkfifo(path)
    return path


def test_eval_of_a_fifo_is_refused(fifo):
    one_line_exit_2(vit_cli(["eval", fifo]), "pipe.npz", "not a regular file")


def test_train_data_fifo_is_refused(tmp_path, fifo):
    one_line_exit_2(vit_cli(["train", "--data", fifo, "--out", tmp_path / "r", *TINY]),
                    "pipe.npz", "not a regular file")


def test_train_data_dev_stdin_is_refused(tmp_path):
    one_line_exit_2(vit_cli(["train", "--data", "/dev/stdin", "--out", tmp_path / "r", *TINY]),
                    "/dev/stdin", "not a regular file")


def test_eval_of_a_checkpoint_whose_data_is_a_fifo(tmp_path, fifo):
    ck = small_checkpoint(tmp_path / "ck.npz", options={"data": str(fifo)})
    one_line_exit_2(vit_cli(["eval", ck]), "pipe.npz", "not a regular file")


def test_idx_folder_holding_a_fifo_is_refused(tmp_path):
    folder = tmp_path / "idx"
    folder.mkdir()
    idx_gz(folder / "train-images-idx3-ubyte.gz", (20, 8, 8))
    os.mkfifo(folder / "train-labels-idx1-ubyte")
    one_line_exit_2(vit_cli(["train", "--data", folder, "--out", tmp_path / "r", *TINY]),
                    "train-labels-idx1-ubyte", "not a regular file")


def test_every_reader_refuses_what_is_not_a_regular_file(tmp_path, fifo):
    from vit.train.checkpoint import load_checkpoint
    from vit.train.data import load_npz_dataset, read_idx
    from vit.model.tinyvit import TinyViT
    from vit.io.npz import load_npz
    for call in (load_npz, load_checkpoint, TinyViT.load, load_npz_dataset, read_idx):
        for path in (fifo, "/dev/null", tmp_path):
            with pytest.raises(ValueError, match="not a regular file") as info:
                call(path)
            assert str(path) in str(info.value) and "expected" in str(info.value)


def test_open_regular_does_not_block_on_a_fifo_swapped_in_after_stat(tmp_path, monkeypatch):
    """The check is on the opened descriptor: a FIFO put in place between a stat and the open
    is still refused, and opening it does not wait for a writer (O_NONBLOCK)."""
    from vit.io import files
    path = tmp_path / "f"
    os.mkfifo(path)
    monkeypatch.setattr(os, "stat", lambda *a, **k: os.lstat(__file__))  # stat says: regular
    with pytest.raises(ValueError, match="not a regular file"):
        files.open_regular(path, "test file")


# ---- labels ----------------------------------------------------------------------------------
def images(n=40):
    return np.random.default_rng(0).normal(size=(n, 8, 8)).astype(np.float32)


@pytest.mark.parametrize("y, words", [
    (np.array([0, 1] * 19 + [2**63, 1], np.uint64), [str(2**63)]),
    (np.array([0, 1] * 19 + [2**64 - 1, 1], np.uint64), [str(2**64 - 1)]),
    (np.full(40, 3), ["one class", "3"]),
    (np.full(40, 0), ["one class"]),
    (np.array([0, 1] * 19 + [10**6, 1]), ["1000000"]),
    (np.array([0, 1] * 19 + [10**10, 1]), ["10000000000"]),
    (np.array([0.0, 1.0] * 19 + [1e30, 1.0]), ["1e+30"]),
    (np.array([True, False] * 20), ["bool"]),
], ids=["uint64-2**63", "uint64-max", "all-3", "all-0", "label-1e6", "label-1e10",
        "float-1e30", "bool"])
def test_bad_labels_are_refused(tmp_path, y, words):
    from vit.train.data import load_npz_dataset
    path = tmp_path / "labels.npz"
    np.savez(path, x=images(len(y)), y=y)
    with pytest.raises(ValueError) as info:
        load_npz_dataset(path)
    message = str(info.value)
    assert "labels.npz" in message and "expected" in message, message
    for w in words:
        assert w in message, f"{message!r} does not name {w!r}"


def test_cli_train_on_a_single_class_is_exit_2(tmp_path, capsys):
    path = tmp_path / "one.npz"
    np.savez(path, x=images(), y=np.full(40, 5))
    status, _, err = run_cli(["train", "--data", path, "--out", tmp_path / "r", *TINY], capsys)
    assert status == 2 and err.count("\n") == 1 and "one class" in err, err


def test_max_class_count_is_a_stated_limit(tmp_path):
    from vit.train.data import MAX_CLASSES, load_npz_dataset
    path = tmp_path / "ok.npz"
    y = np.arange(40) % 2
    y[0] = MAX_CLASSES - 1
    np.savez(path, x=images(), y=y)
    assert load_npz_dataset(path).num_classes == MAX_CLASSES
    y[0] = MAX_CLASSES
    np.savez(path, x=images(), y=y)
    with pytest.raises(ValueError, match=f"{MAX_CLASSES - 1}"):
        load_npz_dataset(path)


# ---- Normalizer ------------------------------------------------------------------------------
def test_normalizer_fit_is_finite_and_exact_for_large_float32_pixels():
    from vit.model.normalizer import Normalizer
    rng = np.random.default_rng(0)
    x = (rng.random((64, 2, 8, 8)) * 3e38).astype(np.float32)
    n = Normalizer.fit(x)
    ref = x.astype(np.float64)
    assert np.all(np.isfinite(n.std)) and n.std.dtype == np.float64
    np.testing.assert_allclose(n.mean, ref.mean(axis=(0, 2, 3)), rtol=1e-12)
    np.testing.assert_allclose(n.std, ref.std(axis=(0, 2, 3)), rtol=1e-12)
    out = n(x)
    assert np.isfinite(out).all() and 0.5 < out.std() < 2.0


def test_normalizer_fit_of_float32_uses_float64_sums():
    """1e7 + small values: a float32 mean loses the small part, float64 keeps it."""
    from vit.model.normalizer import Normalizer
    x = np.full((1000, 1, 4, 4), 1e4, np.float32)
    x[::2] += 1
    n = Normalizer.fit(x)
    assert n.mean[0] == 1e4 + 0.5 and n.std[0] == 0.5


@pytest.mark.parametrize("mean, std", [([0.0], [np.inf]), ([np.nan], [1.0]), ([0.0], [0.0]),
                                       ([0.0], [-1.0]), ([[0.0]], [[1.0]])])
def test_normalizer_refuses_bad_statistics(mean, std):
    from vit.model.normalizer import Normalizer
    with pytest.raises(ValueError, match="Normalizer.*expected"):
        Normalizer(np.array(mean), np.array(std))


# ---- train_step ------------------------------------------------------------------------------
@pytest.mark.parametrize("full", [False, True], ids=["probe", "full"])
@pytest.mark.parametrize("lr", [1e300, 1e40], ids=["1e300", "1e40"])
def test_train_step_that_would_make_parameters_non_finite_changes_nothing(full, lr):
    from vit.model.tinyvit import TinyViT
    model = TinyViT(dim=8, num_heads=2, mlp_dim=8, dtype=np.float32, seed=0)
    x = np.random.default_rng(0).normal(size=(4, 1, 8, 8)).astype(np.float32)
    y = np.array([0, 1, 0, 1])
    before = {k: v.copy() for k, v in model.state_dict().items()}
    with np.errstate(all="raise"):  # no floating-point warning escapes either
        with pytest.raises(ValueError, match="lr.*non-finite.*expected") as info:
            model.train_step(x, y, lr=lr, full=full)
    assert "\n" not in str(info.value)
    for k, v in model.state_dict().items():
        assert np.array_equal(v, before[k]), k
    assert np.isfinite(model.train_step(x, y, lr=0.1, full=full))  # a sane step still works
