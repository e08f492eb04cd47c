"""Matrix products."""
from __future__ import annotations

import math

import numpy as np

from ..defop import op
from ..runtime.parallel import BLAS_THREADED_FLOPS, for_each_part

__all__ = ["matmul", "linear"]


def _mT(x):
    return x.swapaxes(-1, -2)


def _sum_leading(x):
    """Sum over every axis but the last: (..., k) -> (k,)."""
    return np.sum(x, axis=tuple(range(x.ndim - 1)))


@op(arrays=2)
def matmul(a, b):
    """out = a @ b with NumPy's rules (1-D operands, batched stacks, broadcast batch axes).

    VJP (2-D and batched): ā = g @ bᵀ, b̄ = aᵀ @ g, each summed over the batch axes it was
    broadcast along (the engine's ``unbroadcast``). A 1-D ``a`` acts as a row (k,) -> (1, k)
    and a 1-D ``b`` as a column (k,) -> (k, 1), whose added axis is then dropped from ``out``
    and from the gradients.

    A batched ``a`` times a 2-D ``b`` (every Linear layer on (B, N, D) tokens) takes
    ``linear``'s path: one (B·N, k) @ (k, n) product, and b̄ = Σ_batch aᵀ g as one
    (k, B·N) @ (B·N, n) product, so no (B, k, n) stack of per-example products is formed.
    Derivation: docs/backward.md §3 (broadcast batch axes: §2). Tests:
    tests/minigrad/op_cases/linalg.py.
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:  # a 0-d operand arrives as a Python number
        raise ValueError(
            f"matmul: got operands of shapes {np.shape(a)} and {np.shape(b)}; expected at least "
            "1-D operands (use * for scalars)"
        )
    if a.ndim == 1 and b.ndim == 1:
        return a @ b, (lambda g: g * b, lambda g: g * a)
    if a.ndim == 1:  # (k,) @ (..., k, n) -> (..., n)
        out = a @ b
        return out, (
            lambda g: _sum_leading(g[..., None, :] @ _mT(b)),
            lambda g: a[:, None] * g[..., None, :],
        )
    if b.ndim == 1:  # (..., m, k) @ (k,) -> (..., m)
        out = a @ b
        k = b.shape[0]
        return out, (
            lambda g: g[..., None] * b,
            lambda g: np.reshape(g, -1) @ np.broadcast_to(a, g.shape + (k,)).reshape(g.size, k),
        )
    if b.ndim == 2 and a.ndim > 2 and a.shape[-1] == b.shape[0]:  # tokens @ weight
        out, (vjp_a, vjp_b, _) = _rows_times_matrix(a, b, None)
        return out, (vjp_a, vjp_b)
    out = a @ b  # (a mismatch raises NumPy's own error, naming the sizes)
    return out, (lambda g: g @ _mT(b), lambda g: _mT(a) @ g)


@op(arrays=3)
def linear(x, weight, bias=None):
    """out = x @ W + b for x (..., k), W (k, n) and an optional b (n,): a Linear layer as one op.

    VJP, with x and g flattened to (rows, k) and (rows, n) matrices x₂ and g₂:
        x̄ = g @ Wᵀ,   W̄ = x₂ᵀ g₂,   b̄ = Σ_rows g₂.
    Every row goes through one GEMM, and the bias gradient is a column sum rather than the
    broadcast-undo of a separate add.
    Derivation: docs/backward.md §3 (the 2-D case, rows flattened). Tests:
    tests/minigrad/op_cases/linalg.py and, for large products,
    tests/minigrad/engine/test_parallel.py.
    """
    x, weight = np.asarray(x), np.asarray(weight)
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[0]:
        raise ValueError(f"linear: got x of shape {x.shape} and weight of shape "
                         f"{weight.shape}; expected x (..., k) and weight (k, n)")
    if bias is not None and np.shape(bias) != (weight.shape[1],):
        raise ValueError(f"linear bias: got shape {np.shape(bias)}; expected "
                         f"({weight.shape[1]},)")
    return _rows_times_matrix(x, weight, bias)


def _rows_times_matrix(x, weight, bias):
    """``linear``'s forward and VJPs for checked x (..., k), W (k, n), b (n,) or None; also
    ``matmul``'s for a batched x times a 2-D W."""
    k, n = weight.shape
    x_shape = x.shape
    rows = math.prod(x_shape[:-1])
    x2 = x.reshape(rows, k)  # kept for the weight's gradient (a copy only if x was strided)
    flops = 2.0 * rows * k * n
    small = flops < BLAS_THREADED_FLOPS  # one plain product each: no splitting, no BLAS limit
    out = x2 @ weight if small else _product(x2, weight, rows, flops)
    if bias is not None:
        if np.result_type(out, bias) == out.dtype:
            out += bias  # out is this op's own array
        else:  # a bias of a wider dtype widens the result, as NumPy's x @ W + b does
            out = out + bias

    def vjp_x(g):
        g2 = g.reshape(rows, n)
        if small:
            return (g2 @ weight.T).reshape(x_shape)
        gx = np.empty(x_shape, dtype=np.result_type(g, weight))
        _product(g2, weight.T, rows, flops, out=gx.reshape(rows, k))
        return gx

    def vjp_w(g):
        g2 = g.reshape(rows, n)
        if small:
            return x2.T @ g2
        gw = np.empty((k, n), dtype=np.result_type(x2, g2))
        for_each_part(lambda lo, hi: np.matmul(x2[:, lo:hi].T, g2, out=gw[lo:hi]), k, flops)
        return gw

    return out.reshape(x_shape[:-1] + (n,)), (
        vjp_x, vjp_w, lambda g: np.add.reduce(g.reshape(rows, n), axis=0))


def _product(a, b, rows, flops, out=None):
    """a @ b for a (rows, k), split by rows across the block pool when large."""
    if out is None:
        out = np.empty((rows, b.shape[1]), dtype=np.result_type(a, b))
    for_each_part(lambda lo, hi: np.matmul(a[lo:hi], b, out=out[lo:hi]), rows, flops)
    return out
