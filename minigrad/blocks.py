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
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable

import numpy as np

__all__ = ["for_each_block", "for_each_part", "one_blas_thread", "set_num_threads",
           "get_num_threads"]

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


_threads = max(1, min(int(os.environ.get("MINIGRAD_NUM_THREADS", 0)) or _cores(), MAX_THREADS))
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def get_num_threads() -> int:
    """Threads the fused ops use for large arrays (default: the cores this process may use,
    at most 8; the environment variable MINIGRAD_NUM_THREADS overrides it)."""
    return _threads


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (1 disables threading) for the fused ops' large arrays."""
    global _threads
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_THREADS:
        raise ValueError(f"set_num_threads n: got {n!r}; expected an integer in "
                         f"[1, {MAX_THREADS}]")
    _threads = n


def _get_pool() -> ThreadPoolExecutor:
    """One pool for the process, created on first use and never shut down (so a concurrent
    ``set_num_threads`` cannot pull it from under a running kernel)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=MAX_THREADS - 1,
                                       thread_name_prefix="minigrad")
        return _pool


def _forget_pool_after_fork() -> None:
    """A forked child inherits the pool object but not its threads: start afresh. If the
    fork happened inside ``one_blas_thread`` (in another thread), give BLAS its threads back:
    no one in the child will leave that block."""
    global _pool, _lock, _blas_lock, _blas_users
    _pool = None
    _lock = threading.Lock()
    _blas_lock = threading.Lock()
    if _blas_users:
        _restore(_blas_saved)
    _blas_users = 0


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
# while the block pool works, BLAS is held to one thread, and the pool does the splitting.
_blas_lock = threading.Lock()
_blas_users = 0
_blas_saved: list = []
_blas_libs: list | None = None


def _blas_controllers() -> list:
    """threadpoolctl's controllers of the loaded BLAS libraries (none without threadpoolctl)."""
    global _blas_libs
    if _blas_libs is None:
        try:
            from threadpoolctl import ThreadpoolController
            _blas_libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
        except Exception:  # pragma: no cover - threadpoolctl missing or failing: no limit
            _blas_libs = []
    return _blas_libs


class one_blas_thread:
    """Context manager: BLAS uses one thread inside (re-entrant and thread-safe: the first to
    enter saves the BLAS thread counts, the last to leave restores them, unless someone set
    another count meanwhile)."""

    def __enter__(self) -> None:
        global _blas_users
        with _blas_lock:
            if _blas_users == 0:
                saved = [(lib, lib.num_threads) for lib in _blas_controllers()]
                try:
                    for lib, n in saved:
                        if n != 1:
                            lib.set_num_threads(1)
                except BaseException:
                    _restore(saved)
                    raise
                _blas_saved[:] = saved
            _blas_users += 1

    def __exit__(self, *exc: object) -> None:
        global _blas_users
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                _restore(_blas_saved)


def _restore(saved: list) -> None:
    """Give each library back its saved thread count, if it still has the 1 we set."""
    for lib, n in saved:
        if n != 1 and lib.num_threads == 1:
            lib.set_num_threads(n)
