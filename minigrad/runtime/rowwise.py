"""Row-wise building blocks of the fused kernels: arrays as (rows, last axis) matrices,
fast sums and maxima along rows, and the one scaffold that runs a kernel over blocks of rows.

The row-wise ops (``minigrad/ops/``: softmax and gelu_tanh in ``activations.py``, layer_norm in
``normalization.py``, attention's softmax in ``attention.py``) treat their input as a stack of
independent rows. :func:`map_rows` owns what they share: allocate the result, run the kernel
over cache-sized blocks of rows on every core (``minigrad.runtime.parallel.for_each_block``),
hand back the result in the input's shape. The kernel itself is plain NumPy arithmetic on one
block.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from . import parallel

__all__ = ["as_rows", "matrix", "map_rows", "row_sum", "row_max", "column_sum"]


def as_rows(a) -> np.ndarray:
    """``a`` as a C-contiguous floating (rows, last axis) matrix (a view when it already is
    one); integer and bool input becomes float64, as the primitive ops' results do."""
    a = np.asarray(a)
    if a.dtype.kind != "f":
        a = a.astype(np.float64)
    if not a.ndim:
        return a.reshape(1, 1)
    return matrix(np.ascontiguousarray(a))


def matrix(a: np.ndarray) -> np.ndarray:
    """A C-contiguous ``a`` of shape (..., n) viewed as (rows, n); a 0-d one as (1, 1)."""
    if not a.ndim:
        return a.reshape(1, 1)
    # not reshape(-1, n): an axis of length 0 would leave -1 undetermined
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def map_rows(kernel: Callable[..., None], shape: tuple, dtype: np.dtype,
             *inputs: np.ndarray) -> np.ndarray:
    """A new array of ``shape`` and ``dtype`` filled block by block of rows.

    ``kernel(out, *blocks)`` writes ``out``, rows lo:hi of the result seen as a (rows, n)
    matrix; ``blocks`` are the same rows lo:hi of each of ``inputs`` (matrices with the
    result's number of rows: data it reads, or per-row outputs such as a saved statistic
    that it writes). Blocks go to every core for large arrays (see ``for_each_block``); the
    result is owned by the caller (no view), so a VJP may return it for the engine to adopt.
    An empty result runs no kernel (per-row outputs among ``inputs`` are then not written).
    """
    result = np.empty(shape, dtype=dtype)
    out = matrix(result)
    if out.size <= parallel.BLOCK_ELEMENTS:  # one block (a small model's arrays): no scheduling
        if out.size:
            kernel(out, *inputs)
        return result

    def block(lo: int, hi: int) -> None:
        kernel(out[lo:hi], *[a[lo:hi] for a in inputs])

    parallel.for_each_block(block, *out.shape)
    return result


@functools.lru_cache(maxsize=64)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    ones = np.ones(n, dtype=dtype)
    ones.flags.writeable = False
    return ones


#: Elements per GEMV in ``row_sum``: below OpenBLAS's threshold for splitting one across its
#: own threads (these sums run inside the block pool's threads; nested threads would
#: oversubscribe the cores).
GEMV_ELEMENTS = 8192


def row_sum(a: np.ndarray) -> np.ndarray:
    """Σ over the last axis of a (rows, n) matrix, as (rows, 1).

    A product with a vector of ones (a GEMV): BLAS sums short rows several times faster than
    NumPy's reduction, which pays per row (docs/performance.md, "What dominates, and what
    was done").
    """
    if a.dtype.kind in "biu":  # a product with ones is no sum there: see column_sum
        return np.add.reduce(a, axis=1, keepdims=True)
    n_rows, n = a.shape
    ones = _ones(n, a.dtype)
    if n_rows * n <= GEMV_ELEMENTS:  # one GEMV (the small arrays this is called on most)
        return (a @ ones).reshape(n_rows, 1)
    step = max(1, GEMV_ELEMENTS // n)
    out = np.empty(n_rows, dtype=np.result_type(a, ones))
    for lo in range(0, n_rows, step):
        np.matmul(a[lo:lo + step], ones, out=out[lo:lo + step])
    return out.reshape(-1, 1)


def column_sum(a: np.ndarray) -> np.ndarray:
    """Σ over the rows of a (rows, n) matrix, as (n,): x̄ = 1ᵀ a.

    For narrow rows (n <= 64) a product of a vector of ones with ``a`` (GEMVs of at most
    ``GEMV_ELEMENTS`` numbers each, so BLAS never threads them and the result does not depend
    on the thread count), 2-3x faster than NumPy's ``sum(axis=0)``, which pays per row; wider
    rows are NumPy's reduction, which is faster there (docs/performance.md, "The embedding
    and the head as single ops").
    """
    n_rows, n = a.shape
    # bool and integers: a product with ones is a logical OR, or wraps at int8's width, where
    # NumPy's sum counts, or widens to int64. No columns: nothing to sum (and no part shape,
    # since reshape(-1, height, 0) cannot tell how many parts)
    if n > 64 or not n or not n_rows or a.dtype.kind in "biu":
        return np.add.reduce(a, axis=0)
    if n_rows * n <= GEMV_ELEMENTS:  # one GEMV
        return _ones(n_rows, a.dtype) @ a
    step = GEMV_ELEMENTS // n
    # k parts of equal height (at most step rows): one stacked product, k GEMVs in NumPy's
    # own loop (splitting the row axis is a view, whatever a's strides); the rows that do
    # not fill a part (fewer than k) are one more GEMV
    k = -(-n_rows // step)
    height = -(-n_rows // k)
    ones = _ones(height, a.dtype)
    whole = n_rows // height * height
    parts = ones @ a[:whole].reshape(-1, height, n)
    total = np.add.reduce(parts, axis=0)
    if whole < n_rows:
        total += _ones(n_rows - whole, a.dtype) @ a[whole:]
    return total


def row_max(a: np.ndarray) -> np.ndarray:
    """max over the last axis of a (rows, n) matrix, as (rows, 1). For short rows NumPy's
    reduction pays per row, so they are transposed first and reduced across (the maximum is
    exact either way)."""
    if a.shape[1] <= 32:
        return np.maximum.reduce(a.T.copy(), axis=0).reshape(-1, 1)
    return a.max(axis=1, keepdims=True)
