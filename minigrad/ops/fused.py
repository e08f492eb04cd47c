"""Fused neural-network ops: faster and numerically safer than their compositions.

Each equals the same function composed from primitive ops (the tests check values and
gradients both ways); docs/backward.md derives every VJP below. Integer and bool input is
computed in float64 (NumPy has no function of its own to follow here; ``np.mean`` does that).
"""
from __future__ import annotations

import math

import numpy as np

from ..checks import real
from ..defop import as_floating, op
from ..runtime.rowwise import as_rows, map_rows, row_max, row_sum

__all__ = ["softmax", "log_softmax", "logsumexp", "layer_norm", "gelu_tanh", "log_softmax_array"]


def log_softmax_array(x: np.ndarray, axis: int) -> np.ndarray:
    """x - logsumexp(x) along ``axis`` on plain arrays (no graph): the forward shared by
    ``log_softmax`` and ``cross_entropy``."""
    if x.size and x.ndim and axis in (-1, x.ndim - 1):  # rows: the classes of a loss
        # row_max is exact, so this is np.max's value, without its per-row cost on short rows
        shifted = x - row_max(x.reshape(-1, x.shape[-1])).reshape(x.shape[:-1] + (1,))
    else:  # initial=-inf: over an empty axis the result is empty, not NumPy's reduction error
        shifted = x - np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    if not shifted.size:  # nothing to normalise (and no log of an empty sum)
        return shifted
    # np.add.reduce is np.sum without its Python wrapper: the same bits
    return shifted - np.log(np.add.reduce(np.exp(shifted), axis=axis, keepdims=True))


@op(arrays=1)
def softmax(x, axis=-1):
    """y = e^(x - max x) / Σ e^(x - max x) along ``axis``.

    VJP: x̄ = y ⊙ (g - Σ_axis g ⊙ y).
    Along the last axis (attention's case) it runs block by block on every core.
    Derivation: docs/backward.md §6. Tests: tests/minigrad/op_cases/fused.py,
    tests/minigrad/ops/test_fused.py.
    """
    if x.ndim and axis in (-1, x.ndim - 1):
        return _softmax_last(x)
    x = as_floating(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True, initial=-np.inf))  # see log_softmax_array
    y = e / np.sum(e, axis=axis, keepdims=True)

    def vjp(g):
        gx = g * y
        gx -= y * np.sum(gx, axis=axis, keepdims=True)
        return gx

    return y, vjp


def _softmax_last(x):
    shape = x.shape  # the VJP keeps y, not x

    def forward(ys, xs):
        np.subtract(xs, row_max(xs), out=ys)
        np.exp(ys, out=ys)
        ys /= row_sum(ys)

    x2 = as_rows(x)
    y = map_rows(forward, shape, x2.dtype, x2)
    y2 = as_rows(y)

    def vjp(g):
        def backward(out, gs, ys):
            np.multiply(gs, ys, out=out)
            np.subtract(gs, row_sum(out), out=out)
            out *= ys

        return map_rows(backward, shape, g.dtype, as_rows(g), y2)

    return y, vjp


@op(arrays=1)
def log_softmax(x, axis=-1):
    """y = x - logsumexp(x) along ``axis``.   VJP: x̄ = g - e^y ⊙ Σ_axis g.

    Derivation: docs/backward.md §7. Tests: tests/minigrad/op_cases/fused.py,
    tests/minigrad/ops/test_fused.py.
    """
    y = log_softmax_array(as_floating(x), axis)
    return y, lambda g: g - np.exp(y) * np.sum(g, axis=axis, keepdims=True)


@op(arrays=1)
def logsumexp(x, axis=None, keepdims=False):
    """y = m + log Σ_axis e^(x - m), m = max_axis x (so no overflow).

    VJP: x̄ = g ⊙ softmax(x) = g ⊙ e^(x - m) / Σ_axis e^(x - m), g broadcast over the reduced
    axes (∞ - ∞ in x - m taken as 0: infinite maxima share the gradient equally).
    Derivation: docs/backward.md §8. Tests: tests/minigrad/op_cases/fused.py,
    tests/minigrad/ops/test_fused.py.
    """
    x = as_floating(x)
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)  # -inf for an empty slice
    if np.isfinite(m).all():
        e = np.exp(x - m)
    else:  # a slice whose max is ±inf: x - m is inf - inf = nan at its maxima; they are its
        # maxima all the same, so 0 there (e = 1): an all -inf slice gives -inf + log n = -inf,
        # one with +inf gives inf. A nan stays nan (nan == nan is False)
        with np.errstate(invalid="ignore"):
            e = np.exp(np.where(x == m, 0, x - m))
    s = np.sum(e, axis=axis, keepdims=True)
    with np.errstate(divide="ignore"):  # log 0 = -inf: the empty sum, as torch and NumPy
        y_kept = m + np.log(s)
    y = y_kept if keepdims or axis is None and x.ndim == 0 else np.squeeze(y_kept, axis=axis)

    def vjp(g):
        if not keepdims:
            g = np.reshape(g, s.shape)
        # e / s, the softmax from the forward's own terms; not e^(x - y): y is rounded to its
        # ulp, 1 or more past 2^53 (float64; 2^24 in float32), and x - y would carry it all
        if not e.size:
            return np.zeros_like(e)
        return e * (g / s)

    return y, vjp


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
    Derivation: docs/backward.md §9. Tests: tests/minigrad/op_cases/fused.py,
    tests/minigrad/ops/test_fused.py.
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


_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_K = 0.044715


@op(arrays=1)
def gelu_tanh(x):
    """y = ½ x (1 + t),  t = tanh u,  u = √(2/π) (x + 0.044715 x³) = √(2/π) x (1 + 0.044715 x²).

    VJP: x̄ = g ⊙ [½ (1 + t) + ½ √(2/π) x (1 - t²) (1 + 3 · 0.044715 x²)].
    Runs block by block on every core; saves x and t for the VJP.
    Derivation: docs/backward.md §10. Tests: tests/minigrad/op_cases/fused.py,
    tests/minigrad/ops/test_fused.py.
    """
    shape = x.shape
    x2 = as_rows(x)
    t2 = np.empty_like(x2)

    def forward(ys, xs, ts):
        np.multiply(xs, xs, out=ts)
        ts *= _GELU_K
        ts += 1.0
        ts *= xs
        ts *= _GELU_C
        np.tanh(ts, out=ts)
        np.add(ts, 1.0, out=ys)
        ys *= xs
        ys *= 0.5

    y = map_rows(forward, shape, x2.dtype, x2, t2)

    def backward(out, gs, xs, ts):
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
        np.multiply(gs, slope, out=out)

    return y, lambda g: map_rows(backward, shape, g.dtype, as_rows(g), x2, t2)
