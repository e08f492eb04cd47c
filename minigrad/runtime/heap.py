"""Keep freed memory in the process, so that each training step does not fault in fresh pages.

A training step allocates and frees the same arrays every time (activations, their
gradients, a kernel's temporaries). glibc's malloc serves arrays above its mmap threshold
(128 KiB at first, raised as large blocks are freed) with fresh ``mmap`` calls, and returns
free memory at the top of its heap to the kernel; either way the next step touches pages the
kernel has to map again, one minor page fault per 4 KiB: thousands per training step, which
made steps markedly slower (measured in docs/performance.md, "The measurements behind the
engine's constants").

This changes malloc for the whole process, so minigrad never does it on import: a program
calls it once, at start-up (the ``vit`` command does, in ``vit.cli.main``). The cost is that
the process keeps its peak memory instead of returning it to the system between steps.
"""
from __future__ import annotations

import ctypes
import ctypes.util

from ..checks import integer

__all__ = ["keep_heap"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_heap(mmap_threshold: int = 32 << 20, trim_threshold: int = 1 << 30) -> bool:
    """glibc only: serve blocks below ``mmap_threshold`` bytes from the heap and keep up to
    ``trim_threshold`` bytes of free heap instead of returning it to the kernel.

    Returns True when glibc accepted both settings; False where there is no ``mallopt``
    (another C library, another OS: nothing changed) or when it refused one of them.
    """
    for name, value in (("mmap_threshold", mmap_threshold), ("trim_threshold", trim_threshold)):
        integer(name, value, low=1, high=2 ** 31 - 1, owner="keep_heap")  # mallopt takes an int
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)
                and mallopt(_M_TRIM_THRESHOLD, trim_threshold))
