"""Every file ``vit`` writes goes through here: never through a symbolic link at the
destination, atomically where the file is replaced, with the permissions the umask gives.

- :func:`write_atomic` writes a fresh temporary file beside the destination (``mkstemp``: a
  new name, created exclusively, so nothing planted in the folder can redirect it), flushes
  and fsyncs it, ``os.replace``\\ s it over the destination and fsyncs the folder. ``rename``
  replaces a symlink at the destination by the file rather than writing where it points.
- :func:`open_append_nofollow` opens a log for appending with ``O_NOFOLLOW`` (a symlink is
  refused) and ``O_NONBLOCK`` (a FIFO is refused instead of blocking), and accepts only a
  regular file.
"""
from __future__ import annotations

import os
import stat
import tempfile
import threading
from collections.abc import Callable
from typing import BinaryIO, TextIO

from .files import fspath

__all__ = ["write_atomic", "write_atomic_group", "open_append_nofollow", "append_line",
           "file_mode", "TEMP_PREFIX"]

#: Temporary files are named ``.tmp-XXXXXXXX<suffix of the destination>``.
TEMP_PREFIX = ".tmp-"

_umask_lock = threading.Lock()


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (/proc, since 4.7);
    elsewhere set and put back under a lock (``os.umask`` can only be read by setting it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:  # pragma: no cover - not Linux
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


def file_mode() -> int:
    """The permissions a new file gets from ``open``: ``0o666 & ~umask``."""
    return 0o666 & ~_umask()


def write_atomic(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> None:
    """Call ``write(f)`` on a binary temporary file beside ``path``, then put it in place.

    At any moment ``path`` is either what it was or the complete new file; a symlink at
    ``path`` is replaced, never followed; the file gets ``0o666 & ~umask``. An OSError (a full
    disk) names ``path`` and says the previous file is unchanged; the temporary file is
    removed on any error.
    """
    path = fspath(path, "save path")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{path}: the folder {folder} does not exist; expected an "
                                "existing folder to save into")
    suffix = os.path.splitext(path)[1]
    try:
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=suffix, dir=folder)
    except OSError as e:
        raise OSError(e.errno, f"cannot write {path} ({e.strerror}); any previous file there "
                      "is unchanged") from None
    try:
        os.fchmod(fd, file_mode())  # mkstemp makes 0600
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and not isinstance(e, FileNotFoundError):  # a full disk...
            raise OSError(e.errno, f"cannot write {path} ({e.strerror or e}); any previous "
                          "file there is unchanged") from None
        raise
    _fsync_folder(folder)


def write_atomic_group(folder: str | os.PathLike, files: list[tuple[str, bytes]]) -> None:
    """Write several files into ``folder`` all or nothing: every one goes to a fresh temporary
    file (fsynced) first; then each replaces its name in turn (a symlink there is replaced,
    never followed), the previous file kept aside as a hard link until all are in place. If
    anything fails, the names that were replaced get their previous files back (or are
    removed, where there was none) and every temporary file is removed: ``folder`` holds the
    old set or the new one. (A crash between two renames can leave a mix; the timm export
    ties its pair together by a hash, so a reader refuses such a mix.)"""
    folder = fspath(folder, "save folder")
    temps: list[str] = []
    backups: dict[str, str | None] = {}
    try:
        for name, data in files:
            fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=os.path.splitext(name)[1],
                                       dir=folder)
            temps.append(tmp)
            os.fchmod(fd, file_mode())
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for (name, _), tmp in zip(files, temps, strict=True):
            path = os.path.join(folder, name)
            backup = None
            if os.path.lexists(path):
                backup = tmp + ".old"
                os.link(path, backup, follow_symlinks=False)
            backups[path] = backup
            os.replace(tmp, path)
    except BaseException as e:
        for path, backup in backups.items():  # put back what was replaced
            try:
                if backup is not None:
                    os.replace(backup, path)
                elif os.path.lexists(path):
                    os.unlink(path)
            except OSError:
                pass
        for tmp in temps:
            for leftover in (tmp, tmp + ".old"):
                try:
                    os.unlink(leftover)
                except FileNotFoundError:
                    pass
        if isinstance(e, OSError) and not isinstance(e, FileNotFoundError):
            raise OSError(e.errno, f"cannot write {', '.join(n for n, _ in files)} in {folder} "
                          f"({e.strerror or e}); the files there are unchanged") from None
        raise
    for backup in backups.values():
        if backup is not None:
            os.unlink(backup)
    _fsync_folder(folder)


def _fsync_folder(folder: str) -> None:
    """Make a rename in ``folder`` durable."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover (platforms without directory file descriptors)
        return
    try:
        os.fsync(dir_fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(dir_fd)


def open_append_nofollow(path: str | os.PathLike) -> TextIO:
    """``path`` opened for appending UTF-8 text (created with ``0o666 & ~umask`` if missing).

    ValueError if ``path`` is a symbolic link, a FIFO, a device or anything but a regular
    file, or a file with other hard links: a log is never written through a link or into
    something that is not its own file.
    """
    where = fspath(path, "log path")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | \
        getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(where, flags, 0o666)
    except OSError as e:
        if os.path.islink(where):
            raise ValueError(f"{where}: a symbolic link; expected a regular file (a log is "
                             "never written through a link)") from None
        if e.errno is not None and os.path.exists(where) and \
                not stat.S_ISREG(os.lstat(where).st_mode):
            raise ValueError(f"{where}: not a regular file; expected a regular file to "
                             "append to") from None
        raise OSError(e.errno, f"cannot write {where} ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{where}: not a regular file; expected a regular file to "
                             "append to")
        if st.st_nlink > 1:  # a hard link would take the appends to a file elsewhere
            raise ValueError(f"{where}: has {st.st_nlink} hard links; expected a file only "
                             "this log uses")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def append_line(f: TextIO, line: str, where: str | os.PathLike) -> None:
    """Append ``line`` and a newline to ``f`` in one write, flushed and fsynced (after a kill
    every line but possibly the last is whole); an OSError (a full disk) names ``where``."""
    try:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
    except OSError as e:
        raise OSError(e.errno, f"cannot write {os.fspath(where)} ({e.strerror or e})") from None
