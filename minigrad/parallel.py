"""Run a row-wise kernel over cache-sized blocks of rows, on every core.

The fused ops (softmax, layer_norm, gelu_tanh) make several elementwise passes over their
data. Done over whole arrays, each pass streams the array through memory; done block by
block, the passes after the first hit a block that is still in cache. NumPy releases the GIL
inside its loops, so blocks handed to a few threads run in parallel. Large matrix products
are cut into parts the same way. Blocks and parts depend only on the array's shape, never on
the thread count, so results are bit-identical whatever the number of threads (BLAS itself
can return different last bits for a row depending on which rows share its call).
"""
from __future__ import annotations

import os
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable

import numpy as np

from .checks import integer, positive_int

__all__ = ["for_each_block", "for_each_part", "one_blas_thread", "blas_threads",
           "set_num_threads", "get_num_threads"]

#: Elements per block (256 KiB of float32): large enough that NumPy's per-call cost (about a
#: microsecond per ufunc call, some twenty calls per block) stays small, small enough that a
#: kernel's temporaries stay in L2. Measured on the training-step benchmark: 64K beat 8K and
#: 16K (call overhead) and whole arrays (cache misses, page faults) on configs B-D.
BLOCK_ELEMENTS = 1 << 16
#: Below this many elements a single thread wins: each NumPy call in a worker costs a GIL
#: hand-off (tens of µs on a VM), which arrays of config B's size (139K-278K elements) did
#: not earn back. Measured interleaved on B, C and D: 2^19 beat 2^17 and 2^21.
PARALLEL_ELEMENTS = 1 << 19
#: Arrays that run in parallel are cut into a multiple of this many blocks (of at most
#: BLOCK_ELEMENTS), so that 2 or 4 threads get equal shares: 5 blocks would run 3:2.
BALANCE = 4
#: The pool's size; ``set_num_threads`` only changes how many of its threads get work.
MAX_THREADS = 8


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use (containers)
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _threads_from_environment() -> int:
    """MINIGRAD_NUM_THREADS, at most MAX_THREADS, or the default: the cores this process may
    use. Like OpenMP with a bad OMP_NUM_THREADS, a value that is not a positive integer is
    ignored with one warning rather than making ``import minigrad`` fail."""
    default = min(_cores(), MAX_THREADS)
    text = os.environ.get("MINIGRAD_NUM_THREADS", "")
    if not text.strip():
        return default
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        warnings.warn(f"MINIGRAD_NUM_THREADS: got {text!r}; expected a positive integer; "
                      f"using the default, {default}", RuntimeWarning,
                      stacklevel=_importer_stacklevel())
        return default
    return min(n, MAX_THREADS)


def _importer_stacklevel() -> int:
    """The warnings stacklevel of the first caller outside minigrad and the import system
    (the user's ``import minigrad``), for ``_threads_from_environment``'s warning."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(2), 2
    while frame is not None:
        name = frame.f_code.co_filename
        if "importlib" in name and "_bootstrap" in name:  # warnings skips these itself
            frame = frame.f_back
            continue
        if not name.startswith(package):
            break
        frame, level = frame.f_back, level + 1
    return level


_threads = _threads_from_environment()
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def get_num_threads() -> int:
    """Threads the fused ops use for large arrays (default: the cores this process may use,
    at most 8; the environment variable MINIGRAD_NUM_THREADS overrides it)."""
    return _threads


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (1 disables threading) for the fused ops' large arrays."""
    global _threads
    _threads = integer("n", n, low=1, high=MAX_THREADS, owner="set_num_threads")


def _get_pool() -> ThreadPoolExecutor:
    """One pool for the process, created on first use and never shut down (so a concurrent
    ``set_num_threads`` cannot pull it from under a running kernel)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=MAX_THREADS - 1,
                                       thread_name_prefix="minigrad",
                                       initializer=_one_thread_in_pool_threads)
        return _pool


def _forget_pool_after_fork() -> None:
    """A forked child inherits the pool object but not its threads: start afresh. If the
    fork happened inside ``one_blas_thread`` (in another thread), give BLAS its threads back:
    no one in the child will leave that block."""
    global _pool, _lock, _blas_lock, _libs_lock, _blas_users
    _pool = None
    _lock = threading.Lock()
    _blas_lock = threading.Lock()
    _libs_lock = threading.Lock()
    inside = getattr(_local, "depth", 0) > 0  # the forking thread, the child's only one
    if _blas_users and not inside:
        _restore(_blas_saved)
    _blas_users = 1 if inside else 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def for_each_block(kernel: Callable[[int, int], None], rows: int, cols: int) -> None:
    """Call ``kernel(lo, hi)`` for consecutive row ranges that cover ``range(rows)``.

    Each range holds about ``BLOCK_ELEMENTS`` elements (rows of ``cols`` elements). Ranges
    go to ``get_num_threads()`` threads, the caller's included, when the array is large;
    the kernel must write only rows ``lo:hi`` of its outputs. Workers run under the caller's
    ``np.errstate``, and every block has finished when this returns or raises.
    """
    if rows * cols == 0:  # nothing to compute (an empty batch or empty rows)
        return
    if rows * cols <= BLOCK_ELEMENTS:
        kernel(0, rows)
        return
    if rows * cols < PARALLEL_ELEMENTS:
        step = max(1, BLOCK_ELEMENTS // max(cols, 1))
        bounds = [(lo, min(lo + step, rows)) for lo in range(0, rows, step)]
    else:  # a multiple of BALANCE blocks, so that 2 or 4 threads get equal shares
        bounds = _even_parts(rows, BALANCE * -(-rows * cols // (BALANCE * BLOCK_ELEMENTS)))
    threads = min(_threads, len(bounds))
    if threads == 1 or rows * cols < PARALLEL_ELEMENTS:
        for lo, hi in bounds:
            kernel(lo, hi)
        return
    # The blocks are the same whatever the thread count (so are the results, bit for bit);
    # each thread takes a contiguous run of them.
    share = -(-len(bounds) // threads)
    errors = np.geterr()  # floating-point error handling is per thread in NumPy

    def run(first: int) -> None:
        with np.errstate(**errors):
            for lo, hi in bounds[first:first + share]:
                kernel(lo, hi)

    _run_parallel(run, range(0, len(bounds), share))


def _even_parts(n: int, parts: int) -> list[tuple[int, int]]:
    """``range(n)`` cut into ``min(parts, n)`` consecutive ranges whose sizes differ by 1 at most."""
    parts = max(1, min(parts, n))
    return [(n * i // parts, n * (i + 1) // parts) for i in range(parts)]


def _run_parallel(run: Callable[[int], None], firsts) -> None:
    """``run(first)`` for each of ``firsts``, the first on the caller's thread, the others on
    the pool, with BLAS held to one thread meanwhile; returns when all have finished."""
    firsts = list(firsts)
    with one_blas_thread():
        pool = _get_pool()
        futures = [pool.submit(run, first) for first in firsts[1:]]
        try:
            run(firsts[0])
        finally:
            wait(futures)
        for f in futures:
            f.result()


#: Below this many floating-point operations a product runs on the caller's thread alone:
#: splitting a smaller one saved less than handing half of it to another thread costs (the
#: default training run, whose products are 8 MFLOP and less, took 30% longer at 2^22).
PARALLEL_FLOPS = 1 << 25
#: From this size on (2·m·n·k, OpenBLAS's m·n·k >= 2^18) BLAS would start its own threads.
BLAS_THREADED_FLOPS = 1 << 19


#: A product large enough to split is cut into this many parts, whatever ``set_num_threads``
#: says (so that every thread count gives the same bits): the cores this process may use, as
#: found at import. Each thread takes a run of parts. (4 parts on this 2-core machine made
#: the one-thread step 4-5% slower than 2, for the extra calls.)
PARTS = max(1, min(_cores(), MAX_THREADS))


def for_each_part(kernel: Callable[[int, int], None], n: int, flops: float) -> None:
    """Call ``kernel(lo, hi)`` on ranges covering ``range(n)``: ``PARTS`` equal parts, shared
    by ``get_num_threads()`` threads, when the work (``flops`` in all) is worth splitting;
    else ``kernel(0, n)`` once. The parts depend only on ``n`` and ``flops``.

    For matrix products split along an output axis, never along a summed one. BLAS runs on
    one thread inside every call large enough for it to start its own threads, so the cores
    hold one busy thread each and no result depends on the BLAS thread count either.
    """
    if flops < PARALLEL_FLOPS or n <= 1:
        if flops < BLAS_THREADED_FLOPS:
            kernel(0, n)
        else:
            with one_blas_thread():
                kernel(0, n)
        return
    bounds = _even_parts(n, PARTS)
    threads = min(_threads, len(bounds))
    if threads == 1:
        with one_blas_thread():
            for lo, hi in bounds:
                kernel(lo, hi)
        return
    share = -(-len(bounds) // threads)
    errors = np.geterr()

    def run(first: int) -> None:
        with np.errstate(**errors):
            for lo, hi in bounds[first:first + share]:
                kernel(lo, hi)

    _run_parallel(run, range(0, len(bounds), share))


# ---- BLAS threads ---------------------------------------------------------------------
# BLAS libraries run their own thread pools. Their threads keep spinning for a while after a
# product, and a spinning BLAS thread competes for a core with the block pool's threads: on a
# 2-core machine a step ran 20-40% slower with both pools active than with either alone. So
# while minigrad's kernels run, BLAS is held to one thread, and the pool does the splitting.
#
# This module is the one place that changes the BLAS thread count. NumPy's OpenBLAS (pthreads
# build) keeps one count for the whole process, which ``openblas_set_num_threads`` may change
# from any thread; threadpoolctl (3.8) lets only the first thread that set it change it again
# and silently ignores every other thread, so the limit is set here through the library's own
# function. An OpenMP build keeps one count per thread: that is set in each thread (and once
# in each pool thread, which only ever runs minigrad's kernels).
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


def _one_thread_in_pool_threads() -> None:
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
