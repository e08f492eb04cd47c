"""One run per run folder, and nothing outside it touched.

A run holds an exclusive lock on its folder for its whole life: a second run (``--overwrite``
and ``--resume`` included) is refused with one line naming the holder, and touches nothing,
not even the running job's temporary files; the lock of a killed run is released by the
kernel. Every file a run (or ``vit plot``) writes replaces a symbolic link at its name instead
of writing where it points, and gets the permissions the umask gives.
"""
from __future__ import annotations

import importlib.util
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import one_line_refusal
from reliability_util import ROOT, TINY, python_m_vit, run_cli

from vit.model.tinyvit import TinyViT
from vit.train.loop import train
from vit.train.options import TrainOptions

slow = pytest.mark.slow
OPTIONS = dict(dim=8, heads=2, mlp_dim=8, batch_size=256)


def start(args, cwd) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "vit", *map(str, args)], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for_epochs(proc, metrics: Path, n: int = 1, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while not (metrics.exists() and metrics.read_text().count("\n") >= n):
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() < deadline, "the first run did not start"
        time.sleep(0.05)


@pytest.fixture
def running(tmp_path):
    """A real ``python -m vit train`` run in progress in tmp_path/run (killed at the end)."""
    out = tmp_path / "run"
    proc = start(["train", "--out", out, *TINY, "--epochs", 5000], tmp_path)
    try:
        wait_for_epochs(proc, out / "metrics.jsonl")
        yield out, proc
    finally:
        proc.kill()
        proc.wait()


@slow
def test_a_second_run_on_a_folder_in_use_is_refused_naming_the_holder(running, tmp_path):
    out, proc = running
    inflight = out / ".tmp-inflight1.npz"  # what the running job's next checkpoint write looks like
    inflight.write_bytes(b"half a checkpoint")
    for args in ([*TINY, "--epochs", 3, "--overwrite"], ["--resume", "--quiet"],
                 [*TINY, "--epochs", 3]):
        done = python_m_vit(["train", "--out", out, *args], cwd=tmp_path)
        one_line_refusal(done.returncode, done.stderr, str(out), f"pid {proc.pid}", "another run")
        assert inflight.exists(), f"a refused run ({args}) deleted the running job's temp file"
    assert proc.poll() is None  # the running job goes on
    rows = (out / "metrics.jsonl").read_text().splitlines()
    epochs = [int(r.split(",")[0].split(":")[1]) for r in rows if r.endswith("}")]
    assert epochs == list(range(1, len(epochs) + 1))  # its log alone, not interleaved


@slow
def test_the_lock_of_a_killed_run_needs_no_cleanup(tmp_path):
    out = tmp_path / "run"
    proc = start(["train", "--out", out, *TINY, "--epochs", 5000], tmp_path)
    try:
        wait_for_epochs(proc, out / "metrics.jsonl")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    done = python_m_vit(["train", "--out", out, *TINY, "--epochs", 3, "--overwrite"],
                        cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.npz", "metrics.jsonl"]


def test_two_runs_in_one_process_cannot_share_a_folder(tmp_path):
    """flock is per open file: a second train() on a folder held in the same process (another
    thread) is refused too."""
    from vit.train.runfolder import RunLock
    (tmp_path / "run").mkdir()
    with RunLock(tmp_path / "run"):
        with pytest.raises(ValueError, match=f"pid {os.getpid()}.*expected"):
            train(TrainOptions(**OPTIONS, epochs=1), tmp_path / "run", quiet=True,
                  log=lambda s: None)
        assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [".run.lock"]
    assert not list((tmp_path / "run").iterdir())  # released and removed


def test_two_threads_training_into_one_folder_one_is_refused(tmp_path):
    results, go = {}, threading.Barrier(2)

    def run(name):
        go.wait()
        try:
            train(TrainOptions(**OPTIONS, epochs=2), tmp_path / "run", quiet=True,
                  overwrite=True, log=lambda s: None)
            results[name] = "done"
        except ValueError as e:
            results[name] = str(e)

    threads = [threading.Thread(target=run, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcomes = sorted(results.values())
    # both may finish one after the other; they may never both run at once
    assert outcomes == ["done", "done"] or (outcomes[1] == "done" and "another run" in
                                            outcomes[0]), outcomes
    rows = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ['{"epoch": 1', '{"epoch": 2']


# ---- symlinks ---------------------------------------------------------------------------------
@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "elsewhere"
    path.write_text("precious\n")
    return path


def unchanged(victim: Path) -> None:
    assert victim.read_text() == "precious\n", "a file outside the run folder was written"


@pytest.mark.parametrize("name", ["metrics.jsonl", "checkpoint.npz"])
def test_a_symlink_planted_in_a_fresh_run_folder_is_replaced_not_followed(tmp_path, victim,
                                                                          name, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / name).symlink_to(victim)
    status, _, err = run_cli(["train", "--out", out, *TINY, "--epochs", 2], capsys)
    if name == "checkpoint.npz":  # a planted checkpoint is "a run here": refused, untouched
        assert status == 2 and "already holds a run" in err
        assert (out / name).is_symlink()
    else:
        assert status == 0, err
        assert not (out / name).is_symlink() and (out / name).read_text().count("\n") == 2
    unchanged(victim)


def test_a_symlinked_checkpoint_is_replaced_on_overwrite(tmp_path, victim, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "checkpoint.npz").symlink_to(victim)
    status, _, err = run_cli(["train", "--out", out, *TINY, "--epochs", 2, "--overwrite"],
                             capsys)
    assert status == 0, err
    assert not (out / "checkpoint.npz").is_symlink()
    unchanged(victim)


def test_metrics_tmp_and_temp_names_cannot_be_redirected_on_resume(tmp_path, victim, capsys):
    out = tmp_path / "run"
    assert run_cli(["train", "--out", out, *TINY, "--epochs", 3, "--stop-after", 2],
                   capsys)[0] == 0
    (out / "metrics.tmp").symlink_to(victim)  # the fixed name the old rewrite used
    status, _, err = run_cli(["train", "--out", out, "--resume", "--quiet"], capsys)
    assert status == 0, err
    unchanged(victim)
    assert (out / "metrics.jsonl").read_text().count("\n") == 3
    assert not (out / "metrics.jsonl").is_symlink()


def test_a_symlinked_metrics_log_on_resume_is_replaced_not_followed(tmp_path, capsys):
    out = tmp_path / "run"
    assert run_cli(["train", "--out", out, *TINY, "--epochs", 3, "--stop-after", 2],
                   capsys)[0] == 0
    outside = tmp_path / "outside.jsonl"
    (out / "metrics.jsonl").rename(outside)
    before = outside.read_bytes()
    (out / "metrics.jsonl").symlink_to(outside)
    status, _, err = run_cli(["train", "--out", out, "--resume", "--quiet"], capsys)
    assert status == 0, err
    assert outside.read_bytes() == before
    assert not (out / "metrics.jsonl").is_symlink()


def test_a_symlinked_lock_file_is_refused(tmp_path, victim, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / ".run.lock").symlink_to(victim)
    status, _, err = run_cli(["train", "--out", out, *TINY, "--epochs", 2], capsys)
    assert status == 2 and ".run.lock" in err and "symbolic link" in err, err
    unchanged(victim)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_lock_file_that_is_not_a_file_is_refused_without_blocking(tmp_path, kind, capsys):
    out = tmp_path / "run"
    out.mkdir()
    os.mkfifo(out / ".run.lock") if kind == "fifo" else (out / ".run.lock").mkdir()
    status, _, err = run_cli(["train", "--out", out, *TINY, "--epochs", 2], capsys)
    assert status == 2 and ".run.lock" in err and err.count("\n") == 1, err
    assert sorted(p.name for p in out.iterdir()) == [".run.lock"]


def test_the_model_save_replaces_a_symlink(tmp_path, victim):
    link = tmp_path / "model.npz"
    link.symlink_to(victim)
    TinyViT(seed=0).save(link)
    assert not link.is_symlink()
    unchanged(victim)
    TinyViT.load(link)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    folder = tmp_path_factory.mktemp("finished") / "run"
    from vit.cli.main import main
    assert main(["train", "--out", str(folder), *TINY, "--epochs", "2"]) == 0
    return folder


def test_plot_replaces_symlinked_figures(finished, tmp_path, victim, capsys):
    pytest.importorskip("matplotlib")
    figures = tmp_path / "figures"
    figures.mkdir()
    for name in ("curves.png", "confusion.png", "attention.png"):
        (figures / name).symlink_to(victim)
    status, _, err = run_cli(["plot", finished, "--out", figures], capsys)
    assert status == 0, err
    unchanged(victim)
    for name in ("curves.png", "confusion.png", "attention.png"):
        assert not (figures / name).is_symlink()
        assert (figures / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in figures.iterdir()) == ["attention.png", "confusion.png",
                                                         "curves.png"]


# ---- permissions ------------------------------------------------------------------------------
@pytest.fixture(params=[0o022, 0o027, 0o002])
def umask(request):
    before = os.umask(request.param)
    yield request.param
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_every_file_gets_the_permissions_the_umask_gives(tmp_path, umask, capsys):
    out = tmp_path / "run"
    status, _, err = run_cli(["train", "--out", out, *TINY, "--epochs", 2], capsys)
    assert status == 0, err
    expected = 0o666 & ~umask
    assert {p.name: oct(mode(p)) for p in out.iterdir()} == \
        {"checkpoint.npz": oct(expected), "metrics.jsonl": oct(expected)}
    TinyViT(seed=0).save(tmp_path / "model.npz")
    assert oct(mode(tmp_path / "model.npz")) == oct(expected)
    if importlib.util.find_spec("matplotlib"):
        from vit.cli.plots import plot_curves
        rows = [dict(epoch=1, train_loss=1.0, train_acc=0.5, test_loss=1.0, test_acc=0.5,
                     lr=0.1, seconds=1.0)]
        plot_curves(rows, tmp_path / "curves.png")
        assert oct(mode(tmp_path / "curves.png")) == oct(expected)


# ---- stale temporary files ------------------------------------------------------------------
def test_a_refused_run_touches_nothing_and_the_owner_removes_only_stale_temps(tmp_path, capsys):
    out = tmp_path / "run"
    assert run_cli(["train", "--out", out, *TINY, "--epochs", 2], capsys)[0] == 0
    stale = out / ".tmp-killed1.npz"
    stale.write_bytes(b"half a checkpoint")
    old = time.time() - 60
    os.utime(stale, (old, old))
    other = out / "notes.tmp-keep.txt"
    other.write_text("mine")
    status, _, err = run_cli(["train", "--out", out, *TINY, "--epochs", 2], capsys)
    assert status == 2 and "already holds a run" in err
    assert stale.exists()  # refused: nothing touched
    assert run_cli(["train", "--out", out, *TINY, "--epochs", 2, "--overwrite"], capsys)[0] == 0
    assert not stale.exists() and other.read_text() == "mine"


@pytest.mark.slow  # two child processes; fast: the refusals in process of this file
def test_a_fifo_as_the_metrics_log_is_refused_on_resume_not_waited_on(tmp_path):
    out = tmp_path / "run"
    assert python_m_vit(["train", "--out", out, *TINY, "--epochs", 3, "--stop-after", 1],
                        cwd=tmp_path).returncode == 0
    (out / "metrics.jsonl").unlink()
    os.mkfifo(out / "metrics.jsonl")
    done = python_m_vit(["train", "--out", out, "--resume", "--quiet"], cwd=tmp_path,
                        timeout=60)
    one_line_refusal(done.returncode, done.stderr, "metrics.jsonl", "not a regular file")


# ---- the one mechanism ------------------------------------------------------------------------
def test_every_write_in_vit_goes_through_vit_atomic():
    """No module of vit opens a file for writing, or saves one, but through vit.atomic."""
    import re
    pattern = re.compile(r"""open\([^)]*["'][wax]b?\+?["']|\.write_text\(|\.write_bytes\(|"""
                         r"""np\.save\(|\.savefig\(\s*path|os\.O_WRONLY|os\.O_RDWR""")
    allowed = {"atomic.py", "runfolder.py"}  # the mechanism itself, and the lock file
    found = []
    for path in sorted((ROOT / "vit").glob("*.py")):
        if path.name in allowed:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, found


def test_write_atomic_is_temp_file_fsync_rename_fsync_folder():
    import inspect

    from vit.cli import plots
    from vit.io import atomic, npz
    src = inspect.getsource(atomic.write_atomic).split('"""')[2]  # the body
    order = [src.index(s) for s in ("mkstemp(", "fchmod(", "write(f)", "os.fsync(f.fileno())",
                                    "os.replace(tmp, path)", "_fsync_folder(folder)")]
    assert order == sorted(order)
    assert "os.fsync(dir_fd)" in inspect.getsource(atomic._fsync_folder)
    assert "write_atomic(" in inspect.getsource(npz.save_npz_atomic)
    assert "write_atomic(" in inspect.getsource(plots._save)


def test_append_refuses_links_fifos_folders_and_hard_links(tmp_path, victim):
    from vit.io.atomic import open_append_nofollow
    (tmp_path / "link").symlink_to(victim)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    os.link(victim, tmp_path / "hardlink")
    for name, words in (("link", "symbolic link"), ("fifo", "not a regular file"),
                        ("folder", "not a regular file"), ("hardlink", "2 hard links")):
        with pytest.raises(ValueError, match=words):
            open_append_nofollow(tmp_path / name)
    unchanged(victim)
    with open_append_nofollow(tmp_path / "new.jsonl") as f:
        f.write("x\n")
    assert (tmp_path / "new.jsonl").read_text() == "x\n"


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    from vit.io.atomic import write_atomic
    target = tmp_path / "file.npz"
    target.write_bytes(b"old")

    def fail(f):
        f.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match=f"cannot write {target}.*unchanged"):
        write_atomic(target, fail)
    assert target.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["file.npz"]


def test_the_holders_details_are_shown_printable_and_bounded(tmp_path):
    """What another holder wrote is only shown, and shown as one short printable line."""
    import fcntl
    import json

    from vit.train.runfolder import RunLock
    folder = tmp_path / "run"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)  # the lock is the folder's own
    fcntl.flock(fd, fcntl.LOCK_EX)
    (folder / ".run.lock").write_text(json.dumps(
        {"pid": 7, "host": "evil\x1b[2J\nhost" + "x" * 1000, "started": "now"}))
    try:
        with pytest.raises(ValueError) as info:
            RunLock(folder).acquire()
    finally:
        os.close(fd)
    message = str(info.value)
    assert "pid 7 on evil[2Jhost" in message and "\x1b" not in message and "\n" not in message
    assert len(message) < 400
    RunLock(folder).acquire().release()  # the kernel released it with the descriptor
