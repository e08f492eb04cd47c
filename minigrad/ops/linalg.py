"""Matrix products."""
from __future__ import annotations

import numpy as np

from ..op import op

__all__ = ["matmul"]


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

    A batched ``a`` times a 2-D ``b`` (every Linear layer on (B, N, D) tokens) runs as one
    (B·N, k) @ (k, n) product, and b̄ = Σ_batch aᵀ g as one (k, B·N) @ (B·N, n) product,
    so no (B, k, n) stack of per-example products is ever formed.
    """
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"matmul: got operands of shapes {a.shape} and {b.shape}; expected at least 1-D "
            "operands (use * for scalars)"
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
            lambda g: np.reshape(g, -1) @ np.broadcast_to(a, g.shape + (k,)).reshape(-1, k),
        )
    if b.ndim == 2 and a.ndim > 2:  # tokens @ weight: one big GEMM
        k, n = b.shape
        a_shape = a.shape
        a2 = a.reshape(-1, k)  # kept for the weight's gradient (a copy only if a was strided)
        out = (a2 @ b).reshape(a_shape[:-1] + (n,))
        return out, (
            lambda g: (g.reshape(-1, n) @ b.T).reshape(a_shape),
            lambda g: a2.T @ g.reshape(-1, n),
        )
    out = a @ b
    return out, (lambda g: g @ _mT(b), lambda g: _mT(a) @ g)
