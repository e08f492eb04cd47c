"""layer_norm and rms_norm: normalization over the trailing axes with an optional scale (and
shift), computed in one pass over rows (faster and numerically safer than its composition
from primitive ops; the tests check values and gradients both ways); docs/backward.md derives
the VJPs. Integer and bool input is computed in float64. The normalizations by batch,
instance and group statistics (a scale and shift per channel) are in channel_norm.py.
"""
from __future__ import annotations

import math

import numpy as np

from ..checks import integer, real, shown
from ..defop import op
from ..runtime.rowwise import as_rows, map_rows, row_sum

__all__ = ["layer_norm", "rms_norm"]


def _normalized_shape(x, normalized_shape, owner) -> tuple[int, ...]:
    """PyTorch's ``normalized_shape`` (an int or a sequence of ints) checked to be the trailing
    shape of ``x``: the axes normalized together."""
    given = normalized_shape
    items = normalized_shape if isinstance(normalized_shape, (tuple, list)) else (given,)
    try:
        shape = tuple(integer("normalized_shape", n, low=0) for n in items)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{owner} normalized_shape: got {shown(given)}; expected an int or a "
                      "tuple of ints, the trailing shape of x") from None
    k = len(shape)
    if not k or k > np.ndim(x) or np.shape(x)[np.ndim(x) - k:] != shape:
        raise ValueError(f"{owner} normalized_shape: got {shown(given)} for x of shape "
                         f"{np.shape(x)}; expected the trailing shape of x (one axis or more)")
    return shape


def _check_params(x, shape, params, owner, hint=""):
    for name, p in params:
        if p is not None and np.shape(p) != shape:
            raise ValueError(f"{owner} {name}: got shape {np.shape(p)}; expected {shape}, the "
                             f"normalized trailing shape of x {np.shape(x)}{hint}")


def _check_layer_norm(x, weight, bias, eps, normalized_shape) -> tuple[float, tuple | None]:
    eps = real("eps", eps, low=0.0, low_open=True, owner="layer_norm")
    if normalized_shape is None:
        shape: tuple = (np.shape(x)[-1],) if np.ndim(x) else (None,)
        hint = (" (a torch-style shape goes by keyword: layer_norm(x, weight, bias, "
                "normalized_shape=...))" if np.asarray(weight).dtype.kind in "iu" else "")
        _check_params(x, shape, (("weight", weight), ("bias", bias)), "layer_norm", hint)
        return eps, None
    shape = _normalized_shape(x, normalized_shape, "layer_norm")
    _check_params(x, shape, (("weight", weight), ("bias", bias)), "layer_norm")
    return eps, shape


def _flat(x, k):
    """x with its last k axes merged into one (a view when it can be)."""
    # the merged size is given, not -1: NumPy cannot infer it when a leading axis is 0
    return x.reshape(x.shape[:x.ndim - k] + (math.prod(x.shape[x.ndim - k:]),)) if k > 1 else x


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
def layer_norm(x, weight=None, bias=None, eps=1e-5, *, normalized_shape=None):
    """Normalize over the last axis: x̂ = (x - μ) / √(σ² + eps), y = x̂ ⊙ w + b.

    μ and σ² are the mean and the *population* variance over the last axis (D features);
    ``weight`` and ``bias`` (shape (D,)) are optional. ``normalized_shape`` (PyTorch's
    argument, here a keyword: an int or a tuple, the trailing shape of x) normalizes over
    that many trailing axes together, with ``weight`` and ``bias`` of that shape.
    VJP, with ĝ = g ⊙ w (or g without weight) and r = 1/√(σ² + eps):
        x̄ = r · (ĝ - mean(ĝ) - x̂ ⊙ mean(ĝ ⊙ x̂)),   w̄ = Σ_rows g ⊙ x̂,   b̄ = Σ_rows g.
    Rows are independent, so both passes run block by block on every core.
    Derivation: docs/backward.md §9, §33. Tests: tests/minigrad/op_cases/normalization.py,
    tests/minigrad/ops/test_normalization.py, tests/minigrad/ops/test_normalization_more.py.
    """
    eps, normalized = _check_layer_norm(x, weight, bias, eps, normalized_shape)
    if normalized is not None and len(normalized) > 1:  # the same rows over merged axes
        return _merged_layer_norm(x, weight, bias, eps, len(normalized))
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


def _merged_layer_norm(x, weight, bias, eps, k):
    """layer_norm over the last k axes: the last-axis kernel on x with those axes merged."""
    flat = [None if p is None else p.reshape(-1) for p in (weight, bias)]
    y, (vjp_x, vjp_w, vjp_b) = layer_norm.forward(_flat(x, k), *flat, eps)
    shape, pshape = x.shape, x.shape[x.ndim - k:]
    return y.reshape(shape), (lambda g: vjp_x(_flat(g, k)).reshape(shape),
                              lambda g: vjp_w(_flat(g, k)).reshape(pshape),
                              lambda g: vjp_b(_flat(g, k)).reshape(pshape))


@op(arrays=1)
def rms_norm(x, normalized_shape, weight=None, eps=None):
    """y = x / √(mean(x²) + eps) ⊙ w, the mean over the trailing ``normalized_shape`` axes.

    PyTorch's ``F.rms_norm``: ``normalized_shape`` (an int or a tuple) is the trailing shape
    of x; ``weight`` has that shape (optional); ``eps=None`` means the machine epsilon of the
    dtype computed in (``np.finfo(dtype).eps``, as torch's ``finfo(x.dtype).eps``). With
    r = 1/√(mean(x²) + eps), ŷ = x·r and ĝ = g ⊙ w (or g):
        x̄ = r · (ĝ - ŷ ⊙ mean(ĝ ⊙ ŷ)),   w̄ = Σ_rows g ⊙ ŷ.
    Derivation: docs/backward.md §33. Tests: tests/minigrad/op_cases/normalization.py,
    tests/minigrad/ops/test_normalization_more.py.
    """
    shape = _normalized_shape(x, normalized_shape, "rms_norm")
    if weight is not None:
        weight = np.asarray(weight)
        if weight.dtype.kind not in "biuf":
            raise TypeError(f"rms_norm weight: got dtype {weight.dtype}; expected numbers")
        _check_params(x, shape, (("weight", weight),), "rms_norm")
    k = len(shape)
    x2 = _widened_rows(_flat(x, k), None if weight is None else weight.reshape(-1), None)
    if eps is None:
        eps = float(np.finfo(x2.dtype).eps)
    eps = real("eps", eps, low=0.0, owner="rms_norm")
    n = x2.shape[1]
    r = 1.0 / np.sqrt(np.einsum("ij,ij->i", x2, x2)[:, None] / n + eps) if n else \
        np.zeros((x2.shape[0], 1), x2.dtype)
    yh = x2 * r
    w = None if weight is None else weight.reshape(-1)
    y = yh if w is None else yh * w

    def vjp_x(g):
        gh = as_rows(_flat(g, k)) if w is None else as_rows(_flat(g, k)) * w
        mean = np.einsum("ij,ij->i", gh, yh)[:, None] / max(n, 1)
        return ((gh - yh * mean) * r).reshape(x.shape)

    def vjp_w(g):
        return np.einsum("ij,ij->j", as_rows(_flat(g, k)), yh).reshape(shape)

    return y.reshape(x.shape), (vjp_x, None, vjp_w)
