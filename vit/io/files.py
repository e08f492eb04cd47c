"""Opening files read from paths a user or a file gave: regular files only, and decoded sizes
bounded before anything is allocated.

Every reader of ``vit`` (the ``.npz`` loader behind models, checkpoints and data sets, and
the IDX reader) opens its file with :func:`open_regular`, so a FIFO, ``/dev/stdin``, a
device or a folder is refused before any read could block or run forever.
:func:`decoded_limit` is the one bound on how many bytes a compressed file may inflate to, and
:func:`check_built` the one rule for what is derived from input: the count times the itemsize
of what is about to be built (a float copy of uint8 pixels, an (N, K) table of a model with K
classes, a K x K matrix), checked against a stated bound before it is allocated, not only the
bytes that were read.
"""
from __future__ import annotations

import os
import stat
from typing import IO, BinaryIO

import numpy as np

__all__ = ["fspath", "open_regular", "decoded_limit", "check_built", "read_into", "shorten",
           "is_finite_real",
           "MAX_DECODED_BYTES", "MAX_EXPANSION", "EXPANSION_FLOOR", "SHOWN_CHARS"]

#: The most bytes one data, model or checkpoint file may decode to (all its arrays together).
MAX_DECODED_BYTES = 4 << 30
#: ... and at most this multiple of the file's own size (a compressed file) ...
MAX_EXPANSION = 100
#: ... except that any file may decode to this much (small files of legitimate zeros).
EXPANSION_FLOOR = 256 << 20


#: The most characters of a value read from a file that an error message shows.
SHOWN_CHARS = 40


def shorten(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)``, cut to its first ``limit`` characters + "..." when longer: an error
    never echoes a 400-digit number or a megabyte of text in full."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def is_finite_real(value) -> bool:
    """Whether ``value`` (an int or float, NumPy's included) is a finite real that a float64
    can hold: ``math.isfinite`` raises OverflowError for an int beyond 1.8e308."""
    if isinstance(value, (int, np.integer)):
        return abs(int(value)) <= _FLOAT_MAX
    return bool(np.isfinite(value))


_FLOAT_MAX = int(np.finfo(np.float64).max)


def fspath(path, what: str) -> str:
    """``os.fspath(path)``, or a TypeError naming ``what`` (the argument or option)."""
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(f"{what}: got {type(path).__name__} {path!r}; expected a file path "
                        "(str or os.PathLike)") from None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path, what: str = "file") -> BinaryIO:
    """``path`` opened for binary reading, if it is a regular file (symlinks followed).

    Checked twice: ``os.stat`` before opening (a FIFO is never opened), then ``fstat`` of the
    descriptor, opened with ``O_NONBLOCK`` so that a FIFO swapped in between cannot make the
    open wait for a writer. FileNotFoundError for a missing path; ValueError for anything
    that is not a regular file.
    """
    where = fspath(path, what)

    def refuse(mode: int):
        return ValueError(f"{where}: cannot be read: not a regular file ({_kind(mode)}); "
                          f"expected a regular {what}")

    mode = os.stat(where).st_mode  # FileNotFoundError, PermissionError: as they are
    if not stat.S_ISREG(mode):
        raise refuse(mode)
    fd = os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise refuse(mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def decoded_limit(file_size: int, max_bytes: int = MAX_DECODED_BYTES) -> int:
    """The most bytes a file of ``file_size`` bytes may decode to:
    ``min(max_bytes, max(EXPANSION_FLOOR, MAX_EXPANSION * file_size))``."""
    return min(max_bytes, max(EXPANSION_FLOOR, MAX_EXPANSION * file_size))


def check_built(where: str, what: str, count: int, itemsize: int, limit: int,
                raise_it: str = "") -> None:
    """ValueError naming ``where`` unless ``count`` elements of ``itemsize`` bytes (``what``:
    the array about to be built from input, or all its copies together) fit in ``limit``
    bytes. Exact integers: a count of 10**30 is refused, never wrapped. ``raise_it`` says how
    to go beyond the bound, where one can."""
    need = int(count) * int(itemsize)
    if need > limit:
        raise ValueError(f"{where}: {what} would take {need:,} bytes; expected at most "
                         f"{limit:,}" + (f" ({raise_it})" if raise_it else ""))


def read_into(f: IO[bytes], out: memoryview) -> int:
    """Fill ``out`` from the stream ``f`` in chunks (a decompressing stream inflates no more
    than a chunk beyond it); returns the bytes filled, fewer if the stream ends first."""
    view, done = out.cast("B"), 0
    while done < len(view):
        chunk = f.read(min(1 << 20, len(view) - done))
        if not chunk:
            break
        view[done:done + len(chunk)] = chunk
        done += len(chunk)
    return done
