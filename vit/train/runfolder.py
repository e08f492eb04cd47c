"""One command per folder: an exclusive lock held for the command's whole life.

``RunLock(folder)`` takes ``fcntl.flock(LOCK_EX | LOCK_NB)`` on the folder itself (a
descriptor of the directory, ``O_RDONLY | O_DIRECTORY``) before the command writes anything
and keeps it until the command ends. Every command that writes a folder takes it: a training
run, a cross-validation (its own folder; each of its runs locks its run folder too) and a
timm export. The lock lives on the folder's inode, not on a file in it, so deleting or
replacing any file there (``.run.lock`` included) cannot free it. The holder's pid, host and
start time are written into ``folder/.run.lock`` for the error a second command shows; that
file is only a note, removed when the holder ends. A lock whose holder died is released by
the kernel with the process: it never needs cleaning up.
"""
from __future__ import annotations

import json
import os
import socket
import stat
import time
from collections.abc import Callable
from pathlib import Path

from ..io.atomic import TEMP_PREFIX, write_atomic
from ..io.files import is_finite_real, shorten

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

__all__ = ["CHECKPOINT", "METRICS", "LOCK", "RunLock", "RunFolderBusy", "remove_stale_temps",
           "read_metrics", "check_metrics_row", "METRIC_FIELDS", "open_run_folder",
           "keep_metrics_until"]

#: The files of a run folder: the training checkpoint, the metrics log, the lock.
CHECKPOINT = "checkpoint.npz"
METRICS = "metrics.jsonl"
LOCK = ".run.lock"
#: The temporary files a run leaves when killed mid-write (checkpoint, metrics, lock note).
RUN_TEMPS = (".npz", ".jsonl", ".lock")
_MAX_HOLDER_BYTES = 4096  # what is read of another holder's lock file


class RunFolderBusy(ValueError):
    """Another live process holds the run folder."""


class RunLock:
    """Context manager: hold ``folder`` for this run (``what`` names the folder in errors)."""

    def __init__(self, folder: str | os.PathLike, what: str = "--out") -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK
        self.what = what
        self.fd: int | None = None  # the folder's descriptor, which holds the lock
        self.note = -1  # the inode of the .run.lock this holder wrote
        self.since = 0.0  # time.time() when the lock was taken

    def acquire(self) -> RunLock:
        if fcntl is None:  # pragma: no cover
            raise RuntimeError("run-folder locks need fcntl (POSIX)")
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.folder, flags)
        except OSError as e:
            raise self._unwritable(e) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunFolderBusy(
                f"{self.what} {self.folder}: another run is using this folder "
                f"({_describe_holder(self.path)}); expected a folder no live run holds: wait "
                f"for it to end or choose another {self.what}") from None
        except OSError as e:
            os.close(fd)
            raise self._unwritable(e) from None
        try:
            self._check_note()
            info = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                               "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
            try:  # a fresh file renamed into place: a link at the name is replaced, not followed
                write_atomic(self.path, lambda f: f.write((info + "\n").encode()))
                self.note = os.stat(self.path, follow_symlinks=False).st_ino
            except OSError as e:
                raise self._unwritable(e) from None
        except BaseException:
            os.close(fd)
            raise
        self.fd, self.since = fd, time.time()
        return self

    def _check_note(self) -> None:
        """Refuse a symlink or anything but a regular file at ``.run.lock`` (what a user or
        another program put there is not silently replaced)."""
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            return
        if stat.S_ISLNK(mode):
            raise ValueError(f"{self.what} {self.folder}: {LOCK} is a symbolic link; "
                             "expected a regular file (or none)")
        if not stat.S_ISREG(mode):
            raise ValueError(f"{self.what} {self.folder}: {LOCK} is not a regular file; "
                             "expected a regular file (or none)")

    def _unwritable(self, e: OSError) -> ValueError:
        return ValueError(f"{self.what} {self.folder}: not a writable folder "
                          f"({e.strerror or e})")

    def release(self) -> None:
        """Remove the note (if it is still ours) and let the lock go."""
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        try:
            if os.stat(self.path, follow_symlinks=False).st_ino == self.note:
                os.unlink(self.path)
        except OSError:
            pass  # gone or unremovable: the kernel still releases the lock below
        finally:
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self if self.fd is not None else self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _describe_holder(path: Path) -> str:
    """What the holder wrote (pid, host, start time), read defensively: it is only shown."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) |
                     getattr(os, "O_CLOEXEC", 0))
        try:
            raw = os.pread(fd, _MAX_HOLDER_BYTES, 0) if stat.S_ISREG(os.fstat(fd).st_mode) \
                else b""
        finally:
            os.close(fd)
        info = json.loads(raw.decode("utf-8"))
        return (f"pid {int(info['pid'])} on {_printable(info['host'], 100)} started "
                f"{_printable(info['started'], 40)}")
    except (OSError, ValueError, KeyError, TypeError, OverflowError):
        return "a process whose details are not at hand"


def _printable(value: object, limit: int) -> str:
    """At most ``limit`` characters of ``value``, without control characters (escapes)."""
    return "".join(c for c in str(value)[:limit] if c.isprintable())


def remove_stale_temps(folder: str | os.PathLike, before: float) -> list[str]:
    """Remove the temporary files (``.tmp-*.npz``, ``.tmp-*.jsonl``) a killed run left in
    ``folder``: regular files only, last written before ``before`` (the time the caller, who
    holds the folder's lock, took it). Returns the names removed."""
    removed = []
    with os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if not (name.startswith(TEMP_PREFIX) and name.endswith(RUN_TEMPS)):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_mtime < before:
                    os.unlink(entry.path)
                    removed.append(name)
            except FileNotFoundError:
                pass
    return removed


# ---- the metrics log ----------------------------------------------------------------------
#: The fields of one metrics row, as ``vit train`` writes them, and the range of each number.
METRIC_FIELDS = {"train_loss": (0.0, None), "train_acc": (0.0, 1.0), "test_loss": (0.0, None),
                 "test_acc": (0.0, 1.0), "lr": (0.0, None), "seconds": (0.0, None)}
#: The longest line read (a row is about 200 bytes) and the largest log read.
MAX_METRICS_LINE = 4096
MAX_METRICS_BYTES = 1 << 28
#: The largest epoch number of a row, and of a run (``vit.train.options.MAX_EPOCHS``).
MAX_EPOCH = 1_000_000


def check_metrics_row(row: object, previous_epoch: int = 0) -> str | None:
    """What is wrong with one decoded row (None if nothing): a JSON object with exactly the
    keys ``vit train`` writes, ``epoch`` an integer above ``previous_epoch``, every other
    field a finite number in its range."""
    if not isinstance(row, dict):
        return f"a JSON {type(row).__name__}, not an object"
    expected = {"epoch", *METRIC_FIELDS}
    if set(row) != expected:
        missing, extra = sorted(expected - set(row)), sorted(set(row) - expected)
        return ", ".join(([f"missing {missing}"] if missing else [])
                         + ([f"unknown {[k[:40] for k in extra][:5]}"] if extra else []))
    epoch = row["epoch"]
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        return f"epoch is {shorten(epoch)} ({type(epoch).__name__}), not an integer"
    if epoch > MAX_EPOCH:  # a float64 must hold it (the plot's axis) and an int64 count it
        return f"epoch {shorten(epoch)}, beyond {MAX_EPOCH:,}"
    if epoch <= previous_epoch:
        return (f"epoch {shorten(epoch)} after epoch {previous_epoch}" if previous_epoch else
                f"epoch {shorten(epoch)}, not a positive integer")
    for name, (low, high) in METRIC_FIELDS.items():
        value = row[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{name} is {shorten(value)} ({type(value).__name__}), not a number"
        if not is_finite_real(value):  # 10**400 is an int no float holds
            return f"{name} is {shorten(value)}, not a finite number"
        if value < low or (high is not None and value > high):
            return (f"{name} is {shorten(value)}, outside "
                    f"[{low}, {high if high is not None else 'inf'}]")
    return None


def read_metrics(path: str | os.PathLike, note=None) -> list[dict]:
    """Every row of a ``metrics.jsonl``, each checked by :func:`check_metrics_row`.

    A torn last line (no newline, not valid JSON: a kill in the middle of its write) is
    ignored, and ``note`` (default: a RuntimeWarning) is told so. Any other bad line is a
    ValueError naming the file, the line and what is wrong: no row is ever dropped silently.
    """
    where = os.fspath(path)
    fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{where}: not a regular file; expected the metrics log "
                             "`vit train` writes")
        if st.st_size > MAX_METRICS_BYTES:
            raise ValueError(f"{where}: {st.st_size:,} bytes; expected at most "
                             f"{MAX_METRICS_BYTES:,} for a metrics log")
        rows, number = [], 0
        while True:
            raw = f.readline(MAX_METRICS_LINE + 1)
            if not raw:
                return rows
            number += 1
            last = not raw.endswith(b"\n")
            if last and len(raw) > MAX_METRICS_LINE:
                raise ValueError(f"{where}: line {number} is longer than {MAX_METRICS_LINE} "
                                 "bytes; expected one metrics row per line")
            try:
                row = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                if last and f.read(1) == b"":
                    message = (f"{where}: line {number} is incomplete (a run stopped while "
                               "writing it); ignored")
                    if note is None:
                        import warnings
                        warnings.warn(message, RuntimeWarning, stacklevel=2)
                    else:
                        note(message)
                    return rows
                reason = e.reason if isinstance(e, UnicodeDecodeError) else \
                    getattr(e, "msg", str(e))
                raise ValueError(f"{where}: line {number} is not valid JSON ({reason}); "
                                 "expected one metrics row per line as `vit train` writes; "
                                 "nothing was changed") from None
            problem = check_metrics_row(row, rows[-1]["epoch"] if rows else 0)
            if problem:
                raise ValueError(f"{where}: line {number}: {problem}; expected a row "
                                 f"{{epoch, {', '.join(METRIC_FIELDS)}}} as `vit train` "
                                 "writes; nothing was changed")
            rows.append(row)


def open_run_folder(out: Path, checkpoint: str, resume: bool, overwrite: bool = False) -> RunLock:
    """Create ``out`` and take its lock (proving it writable) before anything is written;
    refuse a folder another live run holds, and refuse to clobber a finished run (one with
    ``out/checkpoint``). Returns the held lock; only its holder removes the temporary files a
    killed run left."""
    if out.exists() and not out.is_dir():
        kind = "a file" if out.is_file() else "not a folder"
        raise ValueError(f"--out {out}: is {kind}, not a writable folder; expected a folder "
                         "(a run folder to create or one holding a run)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"--out {out}: not a writable folder ({e.strerror or e})") from None
    lock = RunLock(out).acquire()
    try:
        has_run = (out / checkpoint).exists()
        if resume and not has_run:
            raise ValueError(f"--resume: {out / checkpoint} does not exist; nothing to resume")
        if has_run and not (resume or overwrite):
            raise ValueError(f"--out {out} already holds a run; pass --resume to continue it "
                             "or --overwrite to start again")
        remove_stale_temps(out, before=lock.since)  # writes killed midway, by earlier runs
    except BaseException:
        lock.release()
        raise
    return lock


def keep_metrics_until(path: Path, epochs: int, log: Callable[[str], None]) -> None:
    """Drop records of epochs after the checkpoint's (they are about to be redone), saying
    so; a log that cannot be read in full is refused before anything is rewritten."""
    rows = read_metrics(path, note=log) if os.path.lexists(path) else []
    later = [r["epoch"] for r in rows if r["epoch"] > epochs]
    if later:
        log(f"{path}: the rows of epochs {later[0]}..{later[-1]} come after the checkpoint's "
            f"epoch {epochs}; dropped, to be redone")
    text = "".join(json.dumps(r) + "\n" for r in rows if r["epoch"] <= epochs)
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))
