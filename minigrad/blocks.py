"""Run a row-wise kernel over cache-sized blocks of rows, on every core.

The fused ops (softmax, layer_norm, gelu_tanh) make several elementwise passes over their
data. Done over whole arrays, each pass streams the array through memory; done block by
block, the passes after the first hit a block that is still in cache. NumPy releases the GIL
inside its loops, so blocks handed to a few threads run in parallel. The blocks depend only
on the array's shape, never on the thread count, so results are bit-identical whatever
the number of threads.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

__all__ = ["for_each_block", "set_num_threads", "get_num_threads"]

#: Elements per block (256 KiB of float32): large enough that NumPy's per-call cost (about a
#: microsecond per ufunc call, some twenty calls per block) stays small, small enough that a
#: kernel's temporaries stay in L2. Measured on the training-step benchmark: 64K beat 8K and
#: 16K (call overhead) and whole arrays (cache misses, page faults) on configs B-D.
BLOCK_ELEMENTS = 1 << 16
#: Below this many elements a single thread wins (handing work to a thread costs ~10 µs).
PARALLEL_ELEMENTS = 1 << 17

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_threads = max(1, min(int(os.environ.get("MINIGRAD_NUM_THREADS", 0)) or (os.cpu_count() or 1), 8))


def get_num_threads() -> int:
    """Threads the fused ops use for large arrays (default: the CPU count, at most 8;
    the environment variable MINIGRAD_NUM_THREADS overrides it)."""
    return _threads


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (1 disables threading) for the fused ops' large arrays."""
    global _threads, _pool
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads n: got {n!r}; expected a positive integer")
    with _lock:
        _threads = n
        if _pool is not None:
            _pool.shutdown(wait=True)
            _pool = None


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_threads - 1, thread_name_prefix="minigrad")
        return _pool


def for_each_block(kernel: Callable[[int, int], None], rows: int, cols: int) -> None:
    """Call ``kernel(lo, hi)`` for consecutive row ranges that cover ``range(rows)``.

    Each range holds about ``BLOCK_ELEMENTS`` elements (rows of ``cols`` elements). Ranges
    go to ``get_num_threads()`` threads, the caller's included, when the array is large;
    the kernel must write only rows ``lo:hi`` of its outputs.
    """
    if rows * cols <= BLOCK_ELEMENTS:
        if rows:
            kernel(0, rows)
        return
    step = max(1, BLOCK_ELEMENTS // max(cols, 1))
    bounds = [(lo, min(lo + step, rows)) for lo in range(0, rows, step)]
    threads = min(_threads, len(bounds))
    if threads == 1 or rows * cols < PARALLEL_ELEMENTS:
        for lo, hi in bounds:
            kernel(lo, hi)
        return
    # The blocks are the same whatever the thread count (so are the results, bit for bit);
    # each thread takes a contiguous run of them.
    share = -(-len(bounds) // threads)

    def run(first: int) -> None:
        for lo, hi in bounds[first:first + share]:
            kernel(lo, hi)

    pool = _get_pool()
    futures = [pool.submit(run, first) for first in range(share, len(bounds), share)]
    run(0)
    for f in futures:
        f.result()
