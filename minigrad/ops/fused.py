"""Fused neural-network ops: faster and numerically safer than their compositions.

Each equals the same function composed from primitive ops (the tests check values and
gradients both ways); docs/backward.md derives every VJP below. Integer and bool input is
computed in float64 (NumPy has no function of its own to follow here; ``np.mean`` does that).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..parallel import for_each_block
from ..defop import as_floating, op

__all__ = ["softmax", "log_softmax", "logsumexp", "layer_norm", "gelu_tanh"]


def _log_softmax(x, axis):
    # initial=-inf: over an empty axis the result is empty, not NumPy's reduction error
    shifted = x - np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    if not shifted.size:  # nothing to normalise (and no log of an empty sum)
        return shifted
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@functools.lru_cache(maxsize=64)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    ones = np.ones(n, dtype=dtype)
    ones.flags.writeable = False
    return ones


def _row_sum(a):
    """Σ over the last axis of a (rows, n) matrix, as (rows, 1).

    A product with a vector of ones (a GEMV): BLAS sums short rows several times faster than
    NumPy's reduction, which pays per row. Each GEMV covers at most 8K elements, under
    OpenBLAS's threshold for splitting it across its own threads: these sums run inside the
    block pool's threads, and nested threading would oversubscribe the cores.
    """
    rows, n = a.shape
    ones = _ones(n, a.dtype)
    step = max(1, _GEMV_ELEMENTS // max(n, 1))
    if rows <= step:
        return (a @ ones).reshape(-1, 1)
    out = np.empty(rows, dtype=np.result_type(a, ones))
    for lo in range(0, rows, step):
        np.matmul(a[lo:lo + step], ones, out=out[lo:lo + step])
    return out.reshape(-1, 1)


_GEMV_ELEMENTS = 8192


def _row_max(a):
    """max over the last axis of a (rows, n) matrix, as (rows, 1). For short rows NumPy's
    reduction pays per row, so they are transposed first and reduced across (the maximum is
    exact either way)."""
    if a.shape[1] <= 32:
        return np.maximum.reduce(a.T.copy(), axis=0).reshape(-1, 1)
    return a.max(axis=1, keepdims=True)


def _rows(a):
    """``a`` as a C-contiguous floating (rows, last axis) matrix (a view when it already is
    one); integer and bool input becomes float64, as the primitive ops' results do."""
    a = np.asarray(a)
    if a.dtype.kind != "f":
        a = a.astype(np.float64)
    if not a.ndim:
        return a.reshape(1, 1)
    return np.ascontiguousarray(a).reshape(math.prod(a.shape[:-1]), a.shape[-1])


@op(arrays=1)
def softmax(x, axis=-1):
    """y = e^(x - max x) / Σ e^(x - max x) along ``axis``.

    VJP: x̄ = y ⊙ (g - Σ_axis g ⊙ y).
    Along the last axis (attention's case) it runs block by block on every core.
    """
    if x.ndim and axis in (-1, x.ndim - 1):
        return _softmax_last(x)
    x = as_floating(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True, initial=-np.inf))  # see _log_softmax
    y = e / np.sum(e, axis=axis, keepdims=True)

    def vjp(g):
        gx = g * y
        gx -= y * np.sum(gx, axis=axis, keepdims=True)
        return gx

    return y, vjp


def _softmax_last(x):
    shape = x.shape  # the VJP keeps y, not x
    x2 = _rows(x)
    y2 = np.empty_like(x2)

    def forward(lo, hi):
        ys = y2[lo:hi]
        np.subtract(x2[lo:hi], _row_max(x2[lo:hi]), out=ys)
        np.exp(ys, out=ys)
        ys /= _row_sum(ys)

    for_each_block(forward, *x2.shape)

    def vjp(g):
        g2 = _rows(g)
        result = np.empty(shape, dtype=g.dtype)  # returned whole: the engine may adopt it
        gx = result.reshape(y2.shape)

        def backward(lo, hi):
            gs, ys, out = g2[lo:hi], y2[lo:hi], gx[lo:hi]
            np.multiply(gs, ys, out=out)
            np.subtract(gs, _row_sum(out), out=out)
            out *= ys

        for_each_block(backward, *gx.shape)
        return result

    return y2.reshape(shape), vjp


@op(arrays=1)
def log_softmax(x, axis=-1):
    """y = x - logsumexp(x) along ``axis``.   VJP: x̄ = g - e^y ⊙ Σ_axis g."""
    y = _log_softmax(as_floating(x), axis)
    return y, lambda g: g - np.exp(y) * np.sum(g, axis=axis, keepdims=True)


@op(arrays=1)
def logsumexp(x, axis=None, keepdims=False):
    """y = m + log Σ_axis e^(x - m), m = max_axis x (so no overflow).

    VJP: x̄ = g ⊙ softmax(x) = g ⊙ e^(x - y), g broadcast over the reduced axes.
    """
    x = as_floating(x)
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)  # -inf for an empty slice
    if not np.all(np.isfinite(m)):  # an all -inf or empty slice: -inf (log 0), not nan
        m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):  # log 0 = -inf: the empty sum, as torch and NumPy
        y_kept = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    y = y_kept if keepdims or axis is None and x.ndim == 0 else np.squeeze(y_kept, axis=axis)

    def vjp(g):
        if not keepdims:
            g = np.reshape(g, y_kept.shape)
        return g * np.exp(x - y_kept)

    return y, vjp


def _check_layer_norm(x, weight, bias, eps):
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"layer_norm eps: got {eps!r}; expected a positive number")
    if not eps > 0:
        raise ValueError(f"layer_norm eps: got {eps!r}; expected a positive number")
    D = np.shape(x)[-1] if np.ndim(x) else None
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and np.shape(p) != (D,):
            raise ValueError(f"layer_norm {name}: got shape {np.shape(p)}; expected ({D},), the "
                             f"size of the last axis of x {np.shape(x)}")


@op(arrays=3)
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """Normalize over the last axis: x̂ = (x - μ) / √(σ² + eps), y = x̂ ⊙ w + b.

    μ and σ² are the mean and the *population* variance over the last axis (D features);
    ``weight`` and ``bias`` (shape (D,)) are optional.
    VJP, with ĝ = g ⊙ w (or g without weight) and r = 1/√(σ² + eps):
        x̄ = r · (ĝ - mean(ĝ) - x̂ ⊙ mean(ĝ ⊙ x̂)),   w̄ = Σ_rows g ⊙ x̂,   b̄ = Σ_rows g.
    Rows are independent, so both passes run block by block on every core.
    """
    _check_layer_norm(x, weight, bias, eps)
    shape = x.shape  # the VJPs keep x̂ and r, not x
    x2 = _rows(x)
    dtype = np.result_type(x2, *(p for p in (weight, bias) if p is not None))
    if dtype != x2.dtype:  # float64 parameters widen a float32 x, as in x̂ ⊙ w + b in NumPy
        x2 = x2.astype(dtype)
    n = x2.shape[1]
    xhat = np.empty_like(x2)
    rstd = np.empty((x2.shape[0], 1), dtype=x2.dtype)
    y2 = xhat if weight is None and bias is None else np.empty_like(x2)

    def forward(lo, hi):
        xs, xh = x2[lo:hi], xhat[lo:hi]
        np.subtract(xs, _row_sum(xs) / n, out=xh)
        r = rstd[lo:hi]
        np.divide(_row_sum(xh * xh), n, out=r)
        r += eps
        np.sqrt(r, out=r)
        np.divide(1.0, r, out=r)
        xh *= r
        if y2 is not xhat:
            ys = y2[lo:hi]
            if weight is not None:
                np.multiply(xh, weight, out=ys)
                if bias is not None:
                    ys += bias
            else:
                np.add(xh, bias, out=ys)

    for_each_block(forward, *x2.shape)

    def vjp_x(g):
        g2 = _rows(g)
        result = np.empty(shape, dtype=g.dtype)
        gx = result.reshape(xhat.shape)

        def backward(lo, hi):
            gs, xh, out = g2[lo:hi], xhat[lo:hi], gx[lo:hi]
            if weight is None:
                np.copyto(out, gs)
            else:
                np.multiply(gs, weight, out=out)
            mean_gx = _row_sum(out * xh) / n
            out -= _row_sum(out) / n
            out -= xh * mean_gx
            out *= rstd[lo:hi]

        for_each_block(backward, *gx.shape)
        return result

    def vjp_w(g):
        return np.einsum("ij,ij->j", _rows(g), xhat)

    def vjp_b(g):
        return np.sum(_rows(g), axis=0)

    return y2.reshape(shape), (vjp_x, vjp_w, vjp_b)


_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_K = 0.044715


@op(arrays=1)
def gelu_tanh(x):
    """y = ½ x (1 + t),  t = tanh u,  u = √(2/π) (x + 0.044715 x³) = √(2/π) x (1 + 0.044715 x²).

    VJP: x̄ = g ⊙ [½ (1 + t) + ½ √(2/π) x (1 - t²) (1 + 3 · 0.044715 x²)].
    Runs block by block on every core; saves x and t for the VJP.
    """
    shape = x.shape
    x2 = _rows(x)
    t2 = np.empty_like(x2)
    y2 = np.empty_like(x2)

    def forward(lo, hi):
        xs, ts, ys = x2[lo:hi], t2[lo:hi], y2[lo:hi]
        np.multiply(xs, xs, out=ts)
        ts *= _GELU_K
        ts += 1.0
        ts *= xs
        ts *= _GELU_C
        np.tanh(ts, out=ts)
        np.add(ts, 1.0, out=ys)
        ys *= xs
        ys *= 0.5

    for_each_block(forward, *x2.shape)

    def vjp(g):
        g2 = _rows(g)
        result = np.empty(shape, dtype=g.dtype)
        gx = result.reshape(x2.shape)

        def backward(lo, hi):
            xs, ts, out = x2[lo:hi], t2[lo:hi], gx[lo:hi]
            slope = xs * xs  # becomes ½ √(2/π) x (1 + 3k x²) (1 - t²)
            slope *= 3 * _GELU_K
            slope += 1.0
            slope *= xs
            slope *= 0.5 * _GELU_C
            sq = ts * ts
            np.subtract(1.0, sq, out=sq)
            slope *= sq
            np.multiply(ts, 0.5, out=sq)
            slope += sq
            slope += 0.5
            np.multiply(g2[lo:hi], slope, out=out)

        for_each_block(backward, *gx.shape)
        return result

    return y2.reshape(shape), vjp
