"""layer_norm: normalization over the last axis with an optional scale and shift, computed in
one pass over rows (faster and numerically safer than its composition from primitive ops;
the tests check values and gradients both ways); docs/backward.md derives its VJP. Integer
and bool input is computed in float64.
"""
from __future__ import annotations

import numpy as np

from ..checks import real
from ..defop import op
from ..runtime.rowwise import as_rows, map_rows, row_sum

__all__ = ["layer_norm"]


def _check_layer_norm(x, weight, bias, eps) -> float:
    eps = real("eps", eps, low=0.0, low_open=True, owner="layer_norm")
    D = np.shape(x)[-1] if np.ndim(x) else None
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and np.shape(p) != (D,):
            raise ValueError(f"layer_norm {name}: got shape {np.shape(p)}; expected ({D},), the "
                             f"size of the last axis of x {np.shape(x)}")
    return eps


def _widened_rows(x, weight, bias):
    """x as (rows, D), in the dtype of x̂ ⊙ w + b: float64 parameters widen a float32 x."""
    x2 = as_rows(x)
    dtype = np.result_type(x2, *(p for p in (weight, bias) if p is not None))
    return x2 if dtype == x2.dtype else x2.astype(dtype)


def _normalize(xh, xs, r, eps):
    """One block: x̂ = (x - μ) · r and r = 1/√(σ² + eps), written into ``xh`` and ``r``."""
    n = xs.shape[1]
    np.subtract(xs, row_sum(xs) / n, out=xh)
    np.divide(row_sum(xh * xh), n, out=r)
    r += eps
    np.sqrt(r, out=r)
    np.divide(1.0, r, out=r)
    xh *= r


def _scale_shift(ys, xh, weight, bias):
    """One block: y = x̂ ⊙ w + b (either of w, b may be None)."""
    if weight is None:
        np.add(xh, bias, out=ys)
        return
    np.multiply(xh, weight, out=ys)
    if bias is not None:
        ys += bias


def _layer_norm_vjp_x(gx, gs, xh, r, weight):
    """One block: x̄ = r · (ĝ - mean(ĝ) - x̂ ⊙ mean(ĝ ⊙ x̂)), ĝ = g ⊙ w, written into ``gx``."""
    n = xh.shape[1]
    if weight is None:
        np.copyto(gx, gs)
    else:
        np.multiply(gs, weight, out=gx)
    mean_gx = row_sum(gx * xh) / n
    gx -= row_sum(gx) / n
    gx -= xh * mean_gx
    gx *= r


@op(arrays=3)
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """Normalize over the last axis: x̂ = (x - μ) / √(σ² + eps), y = x̂ ⊙ w + b.

    μ and σ² are the mean and the *population* variance over the last axis (D features);
    ``weight`` and ``bias`` (shape (D,)) are optional.
    VJP, with ĝ = g ⊙ w (or g without weight) and r = 1/√(σ² + eps):
        x̄ = r · (ĝ - mean(ĝ) - x̂ ⊙ mean(ĝ ⊙ x̂)),   w̄ = Σ_rows g ⊙ x̂,   b̄ = Σ_rows g.
    Rows are independent, so both passes run block by block on every core.
    Derivation: docs/backward.md §9. Tests: tests/minigrad/op_cases/normalization.py,
    tests/minigrad/ops/test_normalization.py.
    """
    eps = _check_layer_norm(x, weight, bias, eps)
    shape = x.shape  # the VJPs keep x̂ and r, not x
    x2 = _widened_rows(x, weight, bias)
    rstd = np.empty((x2.shape[0], 1), dtype=x2.dtype)
    if weight is None and bias is None:  # y is x̂ itself
        y = map_rows(lambda xh, xs, r: _normalize(xh, xs, r, eps), shape, x2.dtype, x2, rstd)
        xhat = as_rows(y)
    else:
        xhat = np.empty_like(x2)

        def forward(ys, xs, xh, r):
            _normalize(xh, xs, r, eps)
            _scale_shift(ys, xh, weight, bias)

        y = map_rows(forward, shape, x2.dtype, x2, xhat, rstd)

    def vjp_x(g):
        return map_rows(lambda gx, gs, xh, r: _layer_norm_vjp_x(gx, gs, xh, r, weight),
                        shape, g.dtype, as_rows(g), xhat, rstd)

    def vjp_w(g):
        return np.einsum("ij,ij->j", as_rows(g), xhat)

    def vjp_b(g):
        return np.sum(as_rows(g), axis=0)

    return y, (vjp_x, vjp_w, vjp_b)
