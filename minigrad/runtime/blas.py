"""The one owner of the BLAS thread count while minigrad's kernels run.

BLAS libraries run their own thread pools. Their threads keep spinning for a while after a
product, and a spinning BLAS thread competes for a core with the block pool's threads
(measured in docs/performance.md, "The measurements behind the engine's constants"). So
while minigrad's kernels run, BLAS is held to one thread (:class:`one_blas_thread`) and
``minigrad.runtime.parallel`` does the splitting; :class:`blas_threads` is the one way to change the
count outside those sections.

NumPy's OpenBLAS (pthreads build) keeps one count for the whole process, which
``openblas_set_num_threads`` may change from any thread; threadpoolctl (3.8) lets only the
first thread that set it change it again and silently ignores every other thread, so the
limit is set here through the library's own function. An OpenMP build keeps one count per
thread: that is set in each thread (and once in each pool thread, which only ever runs
minigrad's kernels).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable

from ..checks import positive_int

__all__ = ["one_blas_thread", "blas_threads", "limit_pool_thread"]

_blas_lock = threading.Lock()
_blas_users = 0  # threads inside one_blas_thread
_blas_saved: dict = {}  # the process-wide libraries' counts outside, while _blas_users > 0
_local = threading.local()  # .depth: this thread's nesting; .saved: its per-thread counts
_blas_libs: tuple[list, list] | None = None
_libs_lock = threading.Lock()


class _BlasLibrary:
    """One BLAS library's thread count, read and set from any thread."""

    def __init__(self, controller) -> None:
        self.per_thread = getattr(controller, "threading_layer", None) == "openmp"
        self.get: Callable[[], int] = lambda: controller.num_threads
        self.set: Callable[[int], object] = controller.set_num_threads
        if controller.internal_api == "openblas" and not self.per_thread:
            import ctypes
            for name in ("openblas_get_num_threads", "openblas_set_num_threads"):
                for affix in ("{}", "scipy_{}", "{}64_", "scipy_{}64_", "{}_64", "scipy_{}_64"):
                    fn = getattr(controller.dynlib, affix.format(name), None)
                    if fn is not None:
                        break
                else:  # pragma: no cover - an OpenBLAS without the usual symbols
                    return
                fn.restype, fn.argtypes = (ctypes.c_int, []) if "get" in name else \
                    (None, [ctypes.c_int])
                if "get" in name:
                    self.get = fn
                else:
                    self.set = fn


def _blas_libraries() -> tuple[list, list]:
    """(process-wide, per-thread) BLAS libraries loaded now (none without threadpoolctl)."""
    global _blas_libs
    if _blas_libs is not None:
        return _blas_libs
    with _libs_lock:  # once: every caller must see the same objects (they key _blas_saved)
        if _blas_libs is not None:
            return _blas_libs
        try:
            from threadpoolctl import ThreadpoolController
            libs = [_BlasLibrary(c) for c in
                    ThreadpoolController().select(user_api="blas").lib_controllers]
        except Exception:  # pragma: no cover - threadpoolctl missing or failing: no limit
            libs = []
        _blas_libs = ([lib for lib in libs if not lib.per_thread],
                      [lib for lib in libs if lib.per_thread])
        return _blas_libs


def _limit(libs: list) -> dict:
    """Set each library to one thread; returns their counts before."""
    saved = {lib: lib.get() for lib in libs}
    try:
        for lib, n in saved.items():
            if n != 1:
                lib.set(1)
    except BaseException:
        _restore(saved)
        raise
    return saved


def _restore(saved: dict) -> None:
    """Give each library back its saved thread count, if it still has the 1 we set."""
    for lib, n in saved.items():
        if n != 1 and lib.get() == 1:
            lib.set(n)


def limit_pool_thread() -> None:
    """A pool thread's initializer: one BLAS thread for good (a per-thread, OpenMP, BLAS;
    the pool threads only ever run minigrad's kernels)."""
    for lib in _blas_libraries()[1]:
        lib.set(1)


class one_blas_thread:
    """Context manager: BLAS uses one thread inside, whichever thread enters (re-entrant and
    thread-safe: the first thread in saves the thread counts, the last out restores them,
    unless someone set another count meanwhile)."""

    def __enter__(self) -> None:
        global _blas_users
        depth = getattr(_local, "depth", 0)
        if depth == 0:
            shared, own = _blas_libraries()
            with _blas_lock:
                if _blas_users == 0:
                    _blas_saved.clear()
                    _blas_saved.update(_limit(shared))
                _blas_users += 1
            try:
                _local.saved = _limit(own)
            except BaseException:
                _leave_shared()
                raise
        _local.depth = depth + 1

    def __exit__(self, *exc: object) -> None:
        _local.depth -= 1
        if _local.depth == 0:
            try:
                _restore(_local.saved)
            finally:
                _leave_shared()


def _leave_shared() -> None:
    global _blas_users
    with _blas_lock:
        _blas_users -= 1
        if _blas_users == 0:
            _restore(_blas_saved)


class blas_threads:
    """Context manager: BLAS uses ``n`` threads inside, outside ``one_blas_thread`` sections
    (for the process; for a per-thread (OpenMP) BLAS, in this thread). The one way to change
    the BLAS thread count that minigrad's own limit respects (``python -m vit --threads N``).
    """

    def __init__(self, n: int) -> None:
        self.n = positive_int("n", n, owner="blas_threads")
        self._before: list = []

    def __enter__(self) -> None:
        self._before.append(_set_outside(self.n))

    def __exit__(self, *exc: object) -> None:
        _set_outside(self._before.pop())


def _set_outside(counts) -> dict:
    """Set every library's count outside one_blas_thread (an int, or a dict by library);
    returns the counts before. Inside a section, the count takes effect on leaving it."""
    shared, own = _blas_libraries()
    before = {}
    with _blas_lock:
        for lib in shared:
            before[lib] = _blas_saved[lib] if _blas_users else lib.get()
            n = counts if isinstance(counts, int) else counts[lib]
            if _blas_users:
                _blas_saved[lib] = n
            else:
                lib.set(n)
    inside = getattr(_local, "depth", 0) > 0
    for lib in own:
        before[lib] = _local.saved[lib] if inside else lib.get()
        n = counts if isinstance(counts, int) else counts[lib]
        if inside:
            _local.saved[lib] = n
        else:
            lib.set(n)
    return before


def _reset_after_fork() -> None:
    """A forked child inherits these locks in whatever state the parent's threads left them.
    If the fork happened inside ``one_blas_thread`` (in another thread), give BLAS its
    threads back: no one in the child will leave that block."""
    global _blas_lock, _libs_lock, _blas_users
    _blas_lock = threading.Lock()
    _libs_lock = threading.Lock()
    inside = getattr(_local, "depth", 0) > 0  # the forking thread, the child's only one
    if _blas_users and not inside:
        _restore(_blas_saved)
    _blas_users = 1 if inside else 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
