"""Faults during training: SIGKILL at random points, a kill in the middle of a checkpoint
write, a torn metrics line, a full disk (a real tiny tmpfs when this process may mount one,
else skipped; a simulated ENOSPC always) and a read-only output folder.

What must hold: a killed run resumed with ``--resume`` ends bit for bit where the
uninterrupted run does (weights, optimizer state, metrics); the checkpoint on disk is always
a complete, loadable one; every metrics line but possibly the last parses; a full or
read-only disk gives one clear line, no traceback, and leaves the last checkpoint intact.
"""
from __future__ import annotations

import contextlib
import errno
import inspect
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from reliability_util import ROOT, python_m_vit, run_cli

import vit.io.npz
from vit.io.npz import save_npz_atomic
from vit.model.tinyvit import TinyViT
from vit.train.checkpoint import load_checkpoint, save_checkpoint
from vit.train.runfolder import read_metrics

RUN = ["--dim", "8", "--heads", "2", "--mlp-dim", "8", "--batch-size", "128", "--quiet"]
slow = pytest.mark.slow


def same_run(a: Path, b: Path) -> None:
    """Two run folders hold the same final state: parameters, optimizer, rng, metrics."""
    ca, cb = load_checkpoint(a / "checkpoint.npz"), load_checkpoint(b / "checkpoint.npz")
    assert ca.epoch == cb.epoch
    pa, pb = ca.model.state_dict(), cb.model.state_dict()
    assert pa.keys() == pb.keys() and all(np.array_equal(pa[k], pb[k]) for k in pa)
    assert ca.optim.keys() == cb.optim.keys()
    assert all(np.array_equal(ca.optim[k], cb.optim[k]) for k in ca.optim)
    assert ca.rng.bit_generator.state == cb.rng.bit_generator.state
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert strip(read_metrics(a / "metrics.jsonl")) == strip(read_metrics(b / "metrics.jsonl"))


def lines_parse_but_maybe_the_last(path: Path) -> int:
    """Every complete line of a metrics log parses; an unterminated last one may not."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = text.split("\n")
    for line in lines[:-1]:
        json.loads(line)
    return len(lines) - 1


def start(args, cwd) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "vit", *map(str, args)], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


# ---- SIGKILL at random points ----------------------------------------------------------------
@slow
def test_sigkill_at_random_points_then_resume_ends_with_the_same_run(tmp_path):
    args = [*RUN, "--epochs", 30]
    t0 = time.perf_counter()
    done = python_m_vit(["train", "--out", tmp_path / "whole", *args])
    whole_seconds = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    cut, delays = tmp_path / "cut", []
    for _ in range(4):
        resume = (cut / "checkpoint.npz").exists()
        proc = start(["train", "--out", cut, *args] + (["--resume"] if resume else
                                                       ["--overwrite"]), tmp_path)
        delays.append(rng.uniform(0.2, whole_seconds))
        time.sleep(delays[-1])
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if (cut / "checkpoint.npz").exists():  # always complete and loadable
            load_checkpoint(cut / "checkpoint.npz")
        lines_parse_but_maybe_the_last(cut / "metrics.jsonl")
    more = ["--resume"] if (cut / "checkpoint.npz").exists() else ["--overwrite"]
    done = python_m_vit(["train", "--out", cut, *args, *more])
    assert done.returncode == 0, (done.stderr, f"seed {seed}, delays {delays}")
    same_run(tmp_path / "whole", cut)
    leftovers = {p.name for p in cut.iterdir()} - {"checkpoint.npz", "metrics.jsonl"}
    assert all(name.startswith(".tmp-") for name in leftovers), leftovers


@slow
def test_a_checkpoint_is_always_loadable_under_repeated_kills(tmp_path):
    """Kill a run many times at random moments (many land inside the per-epoch checkpoint
    write of this 80-epoch run); after every kill the checkpoint loads and its epoch never
    goes back."""
    out, rng, last_epoch = tmp_path / "run", random.Random(), -1
    args = ["train", "--out", out, *RUN, "--batch-size", "512", "--epochs", 80]
    for _ in range(6):
        resume = (out / "checkpoint.npz").exists()
        proc = start(args + (["--resume"] if resume else ["--overwrite"]), tmp_path)
        time.sleep(rng.uniform(0.3, 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if (out / "checkpoint.npz").exists():
            epoch = load_checkpoint(out / "checkpoint.npz").epoch
            assert epoch >= last_epoch
            last_epoch = epoch
            assert lines_parse_but_maybe_the_last(out / "metrics.jsonl") >= epoch


KILL_DURING_SAVE = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import vit.io.npz as vm
    from vit import TinyViT
    path, marker, stage = sys.argv[1:4]
    TinyViT(seed=1).save(path)                       # the previous file
    def hang(*args, **kwargs):
        open(marker, "w").close()                    # tell the parent: kill me now
        time.sleep(120)
    if stage == "mid-write":                         # half the bytes are out, then stuck
        real_savez = np.savez
        def savez(f, **arrays):
            f.write(b"PK\\x03\\x04" + b"x" * 5000)
            f.flush()
            hang()
        vm.np.savez = savez
    else:                                            # written, not yet fsynced nor renamed
        vm.os.fsync = hang
    TinyViT(seed=2).save(path)
""")


@slow
@pytest.mark.parametrize("stage", ["mid-write", "before-rename"])
def test_a_kill_during_a_checkpoint_write_leaves_the_previous_one(tmp_path, stage):
    path, marker = tmp_path / "model.npz", tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", KILL_DURING_SAVE, path, marker, stage],
                            env=env, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not marker.exists():
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read()
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    loaded, before = TinyViT.load(path), TinyViT(seed=1)
    for (name, a), (_, b) in zip(loaded.named_parameters(), before.named_parameters(), strict=True):
        np.testing.assert_array_equal(a.data, b.data, err_msg=name)
    temps = [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    assert len(temps) == 1  # the interrupted write, never renamed over the good file


def test_the_write_is_temp_file_fsync_rename_and_every_saver_uses_it():
    # the order of the steps inside write_atomic: tests/reliability/test_run_folder.py
    assert "write_atomic(" in inspect.getsource(save_npz_atomic)
    assert "save_npz_atomic(" in inspect.getsource(save_checkpoint)
    assert "save_npz_atomic(" in inspect.getsource(TinyViT.save)


# ---- the metrics log ------------------------------------------------------------------------
def test_a_torn_metrics_line_is_dropped_and_redone_on_resume(tmp_path, capsys):
    common = [*RUN, "--epochs", 3]
    assert run_cli(["train", "--out", tmp_path / "whole", *common], capsys)[0] == 0
    cut = tmp_path / "cut"
    assert run_cli(["train", "--out", cut, *common, "--stop-after", 2], capsys)[0] == 0
    with open(cut / "metrics.jsonl", "a", encoding="utf-8") as f:  # killed mid-line
        f.write('{"epoch": 3, "train_loss": 2.1')
    with pytest.warns(RuntimeWarning, match="line 3 is incomplete"):  # said, then ignored
        assert read_metrics(cut / "metrics.jsonl")[-1]["epoch"] == 2
    assert run_cli(["train", "--out", cut, "--resume", "--quiet"], capsys)[0] == 0
    assert lines_parse_but_maybe_the_last(cut / "metrics.jsonl") == 3
    assert (cut / "metrics.jsonl").read_text().endswith("}\n")
    same_run(tmp_path / "whole", cut)


# ---- a full disk, a read-only folder ---------------------------------------------------------
@contextlib.contextmanager
def tmpfs(size: str, readonly: bool = False):
    """A fresh tmpfs of ``size`` (a real full disk), or skip where mounting is not allowed."""
    point = Path(tempfile.mkdtemp(prefix="vit-tmpfs-"))
    options = f"size={size}" + (",ro" if readonly else "")
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
                              capture_output=True, text=True)
    except OSError as e:
        done = None
        reason = str(e)
    if done is None or done.returncode:
        point.rmdir()
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() if done else reason})")
    try:
        yield point
    finally:
        subprocess.run(["umount", str(point)], check=False)
        point.rmdir()


def check_write_failure(done, where: str):
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "No space left on device" in done.stderr and where in done.stderr, done.stderr


@slow
def test_a_full_disk_is_a_clear_error_before_training_starts(tmp_path):
    with tmpfs("8k") as disk:  # less than the first checkpoint (16 kB: no AdamW state yet)
        done = python_m_vit(["train", "--out", disk / "run", *RUN, "--epochs", 2])
        check_write_failure(done, "checkpoint.npz")
        assert "epoch" not in done.stdout  # no step was taken
        assert sorted(p.name for p in (disk / "run").iterdir()) == ["metrics.jsonl"]


@slow
def test_a_disk_filling_up_mid_run_keeps_the_last_checkpoint_and_resumes(tmp_path):
    args = [*RUN, "--epochs", 4]
    assert python_m_vit(["train", "--out", tmp_path / "whole", *args]).returncode == 0
    with tmpfs("64k") as disk:  # room for one full checkpoint (36 kB), not for two
        run = disk / "run"
        done = python_m_vit(["train", "--out", run, *args])
        check_write_failure(done, "checkpoint.npz")
        epoch = load_checkpoint(run / "checkpoint.npz").epoch  # intact
        assert epoch < 4 and not [p for p in run.iterdir() if p.name.startswith(".tmp-")]
        lines_parse_but_maybe_the_last(run / "metrics.jsonl")
        subprocess.run(["mount", "-o", "remount,size=1m", str(disk)], check=True)
        done = python_m_vit(["train", "--out", run, "--resume", "--quiet"])
        assert done.returncode == 0, done.stderr
        same_run(tmp_path / "whole", run)


@slow
def test_a_read_only_folder_is_a_clear_error_before_training(tmp_path):
    with tmpfs("1m", readonly=True) as disk:
        done = python_m_vit(["train", "--out", disk / "run", *RUN, "--epochs", 1])
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "not a writable folder" in done.stderr and "Read-only" in done.stderr
        assert done.stdout == ""


def test_a_simulated_full_disk_anywhere(tmp_path, capsys, monkeypatch):
    """Without a tmpfs: np.savez failing with ENOSPC gives the same one line, status 1."""
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(vit.io.npz.np, "savez", full)
    status, out, err = run_cli(["train", "--out", tmp_path / "run", *RUN, "--epochs", 1], capsys)
    assert status == 1 and err.count("\n") == 1 and "No space left on device" in err
    assert "checkpoint.npz" in err and "unchanged" in err and out == ""
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["metrics.jsonl"]
