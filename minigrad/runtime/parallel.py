"""Run a row-wise kernel over cache-sized blocks of rows, on every core.

The fused ops (softmax, layer_norm, gelu_tanh) make several elementwise passes over their
data. Done over whole arrays, each pass streams the array through memory; done block by
block, the passes after the first hit a block that is still in cache. NumPy releases the GIL
inside its loops, so blocks handed to a few threads run in parallel. Large matrix products
are cut into parts the same way. Blocks and parts depend only on the array's shape, never on
the thread count, so results are bit-identical whatever the number of threads (BLAS itself
can return different last bits for a row depending on which rows share its call). While
the pool runs, BLAS is held to one thread (``minigrad.runtime.blas``, re-exported here).
"""
from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from types import FrameType

import numpy as np

from ..checks import integer
from .blas import limit_pool_thread, one_blas_thread

__all__ = ["for_each_block", "for_each_part", "for_each_range", "set_num_threads",
           "get_num_threads"]

# The constants below were chosen by measurement: docs/performance.md, "The measurements
# behind the engine's constants".
#: Elements per block (256 KiB of float32): NumPy's per-call cost stays small against the
#: block, and a kernel's temporaries stay in L2.
BLOCK_ELEMENTS = 1 << 16
#: Below this many elements a single thread wins: handing a block to another thread costs
#: more than smaller arrays earn back.
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
    frame: FrameType | None = sys._getframe(2)
    level = 2
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
#: ``.threads``: in a thread that runs a range of a parallel region, the threads a kernel
#: called there may use (a shard of ``minigrad.data_parallel`` calls every op): the region's
#: threads' share of ``get_num_threads()``, so 1 where the region already keeps every core
#: busy. Blocks and parts do not depend on who runs them, so neither do the bits.
_region = threading.local()


def _available() -> int:
    """The threads this thread's kernels may use: its region's share, or all of them."""
    return getattr(_region, "threads", _threads)


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
                                       initializer=limit_pool_thread)
        return _pool


def _forget_pool_after_fork() -> None:
    """A forked child inherits the pool object but not its threads: start afresh (the BLAS
    state is reset by ``minigrad.runtime.blas``'s own handler)."""
    global _pool, _lock
    _pool = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def for_each_block(kernel: Callable[[int, int], object], rows: int, cols: int) -> None:
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
    if rows * cols < PARALLEL_ELEMENTS or min(_available(), len(bounds)) == 1:
        for lo, hi in bounds:
            kernel(lo, hi)
        return
    _fan_out(kernel, bounds)


def for_each_range(kernel: Callable[[int, int], object], bounds: list[tuple[int, int]]) -> None:
    """``kernel(lo, hi)`` for every range of ``bounds``, given by the caller (so by shape,
    never by the thread count), on up to ``get_num_threads()`` threads with BLAS held to one;
    kernels called inside share the threads left over (none on 2 cores with 2 or more
    ranges). Returns when every range has finished, raising the first error."""
    _fan_out(kernel, bounds)


def _even_parts(n: int, parts: int) -> list[tuple[int, int]]:
    """``range(n)`` cut into ``min(parts, n)`` consecutive ranges whose sizes differ by 1 at
    most."""
    parts = max(1, min(parts, n))
    return [(n * i // parts, n * (i + 1) // parts) for i in range(parts)]


def _fan_out(kernel: Callable[[int, int], object], bounds: list[tuple[int, int]]) -> None:
    """``kernel(lo, hi)`` for every range of ``bounds``, with BLAS held to one thread, on up
    to ``get_num_threads()`` threads; returns when all have finished, raising the first error.

    The ranges are the same whatever the thread count, and whoever runs a range computes
    the same bits, so are the results. The threads take ranges one at a time from a shared
    counter, the caller's thread too, so on a busy machine the caller runs what a worker
    still waiting for a core has not started, and a slow thread takes fewer ranges.
    """
    threads = min(_available(), len(bounds))
    with one_blas_thread():
        if threads == 1:
            for lo, hi in bounds:
                kernel(lo, hi)
            return
        _share(kernel, bounds, threads)


def _share(kernel: Callable[[int, int], object], bounds: list[tuple[int, int]],
           threads: int) -> None:
    """``_fan_out``'s parallel region: the caller and ``threads - 1`` pool tasks take ranges
    from one counter; tasks that have not started when the caller runs out are cancelled."""
    n, errors = len(bounds), np.geterr()  # floating-point error handling is per thread
    lock, counter = threading.Lock(), [0]

    share = max(1, _available() // threads)  # for the kernels the ranges call

    def work() -> None:
        outer = getattr(_region, "threads", None)
        _region.threads = share
        try:
            take()
        finally:
            if outer is None:
                del _region.threads
            else:
                _region.threads = outer

    def take() -> None:
        with np.errstate(**errors):
            while True:
                with lock:
                    i = counter[0]
                    counter[0] = i + 1
                if i >= n:
                    return
                try:
                    kernel(*bounds[i])
                except BaseException:
                    with lock:  # no range is started after an error
                        counter[0] = n
                    raise

    futures = [_get_pool().submit(work) for _ in range(threads - 1)]
    try:
        work()
    finally:
        # A task still queued is dropped (wait() would count it done only once a pool thread
        # had dequeued it); a running one ends after its range.
        running = [f for f in futures if not f.cancel()]
        wait(running)
    for f in running:
        f.result()  # a worker's error, if the caller's own ranges raised none


#: Below this many floating-point operations a product runs on the caller's thread alone:
#: splitting a smaller one saves less than handing half of it to another thread costs.
PARALLEL_FLOPS = 1 << 25
#: From this size on (2·m·n·k, OpenBLAS's m·n·k >= 2^18) BLAS would start its own threads.
BLAS_THREADED_FLOPS = 1 << 19


#: A product large enough to split is cut into this many parts, whatever ``set_num_threads``
#: says (so that every thread count gives the same bits): the cores this process may use, as
#: found at import (more parts than cores only add calls). The threads take them one at a time.
PARTS = max(1, min(_cores(), MAX_THREADS))


def for_each_part(kernel: Callable[[int, int], object], n: int, flops: float) -> None:
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
    if min(_available(), len(bounds)) == 1:
        with one_blas_thread():
            for lo, hi in bounds:
                kernel(lo, hi)
        return
    _fan_out(kernel, bounds)
