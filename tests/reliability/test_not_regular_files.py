"""Inputs that are not regular files: a FIFO, /dev/stdin, a character device or a folder where
a file is expected is refused before anything opens it for a blocking read; every reader goes
through one helper, ``vit.io.files.open_regular``, whose check is on the opened descriptor.
The command-line cases run in a child with a timeout, so a loader that blocks fails the test
instead of hanging it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import one_line_refusal
from hostile_util import ROOT, idx_gz, small_checkpoint
from reliability_util import TINY

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def vit_cli(args, timeout=60) -> tuple[int, str]:
    """``python -m vit ARGS`` in a child: (exit status, stderr)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    try:
        done = subprocess.run([sys.executable, "-m", "vit", *map(str, args)], env=env,
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.PIPE)
        return done.returncode, done.stderr
    except subprocess.TimeoutExpired:
        pytest.fail(f"vit {' '.join(map(str, args))} blocked for {timeout} s")


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.npz"
    os.mkfifo(path)
    return path


@pytest.mark.slow  # a child process; fast: test_every_reader_refuses_what_is_not_a_regular_file
def test_eval_of_a_fifo_is_refused(fifo):
    one_line_refusal(*vit_cli(["eval", fifo]), "pipe.npz", "not a regular file")


@pytest.mark.slow  # a child process
def test_train_data_fifo_is_refused(tmp_path, fifo):
    one_line_refusal(*vit_cli(["train", "--data", fifo, "--out", tmp_path / "r", *TINY]),
                    "pipe.npz", "not a regular file")


@pytest.mark.slow  # a child process
def test_train_data_dev_stdin_is_refused(tmp_path):
    one_line_refusal(*vit_cli(["train", "--data", "/dev/stdin", "--out", tmp_path / "r", *TINY]),
                    "/dev/stdin", "not a regular file")


@pytest.mark.slow  # a child process
def test_eval_of_a_checkpoint_whose_data_is_a_fifo(tmp_path, fifo):
    ck = small_checkpoint(tmp_path / "ck.npz", options={"data": str(fifo)})
    one_line_refusal(*vit_cli(["eval", ck]), "pipe.npz", "not a regular file")


@pytest.mark.slow  # a child process
def test_idx_folder_holding_a_fifo_is_refused(tmp_path):
    folder = tmp_path / "idx"
    folder.mkdir()
    idx_gz(folder / "train-images-idx3-ubyte.gz", (20, 8, 8))
    os.mkfifo(folder / "train-labels-idx1-ubyte")
    one_line_refusal(*vit_cli(["train", "--data", folder, "--out", tmp_path / "r", *TINY]),
                    "train-labels-idx1-ubyte", "not a regular file")


def test_every_reader_refuses_what_is_not_a_regular_file(tmp_path, fifo):
    from vit.io.npz import load_npz
    from vit.model.tinyvit import TinyViT
    from vit.train.checkpoint import load_checkpoint
    from vit.train.data import load_npz_dataset, read_idx
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
