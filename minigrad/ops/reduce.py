"""Reductions over ``axis`` (None, an int, a tuple; negative allowed), with ``keepdims``."""
from __future__ import annotations

import math

import numpy as np

from ..defop import op

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # pragma: no cover
    from numpy.core.numeric import normalize_axis_tuple

__all__ = ["sum", "mean", "max", "min", "var"]


def _axes(axis, ndim):
    """``axis`` as a sorted tuple of non-negative ints (all axes for None)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    return tuple(sorted(normalize_axis_tuple(axis, ndim, "axis")))


def _count(shape, axes):
    n = 1
    for ax in axes:
        n *= shape[ax]
    return n


def _keep(g, ndim, axes, keepdims):
    """Re-insert the reduced axes of ``g`` as size-1 axes (undoing ``keepdims=False``)."""
    if keepdims or not axes:
        return g
    return np.expand_dims(g, axes) if np.ndim(g) else np.reshape(g, (1,) * ndim)


@op(arrays=1)
def sum(a, axis=None, keepdims=False):
    """out = Σ_axis a.   VJP: ā = g broadcast back over the summed axes."""
    axes = _axes(axis, a.ndim)
    out = np.sum(a, axis=axes, keepdims=keepdims)
    shape, ndim = a.shape, a.ndim  # the VJP must not keep ``a`` alive
    return out, lambda g: np.broadcast_to(_keep(g, ndim, axes, keepdims), shape)


@op(arrays=1)
def mean(a, axis=None, keepdims=False):
    """out = (1/n) Σ_axis a, n the number of elements reduced.   VJP: ā = g / n, broadcast."""
    axes = _axes(axis, a.ndim)
    out = np.mean(a, axis=axes, keepdims=keepdims)
    n = _count(a.shape, axes)
    shape, ndim = a.shape, a.ndim
    return out, lambda g: np.broadcast_to(_keep(g, ndim, axes, keepdims) / n, shape)


def _extremum(reduce, a, axis, keepdims):
    axes = _axes(axis, a.ndim)
    if a.size == 0 and _count(a.shape, axes) == 0:  # only an empty reduction, as NumPy
        raise ValueError(f"{reduce.__name__}: got an empty array of shape {a.shape} with "
                         f"nothing to reduce along axis {axis}; expected at least one element "
                         "per result (a max or min of nothing has no value)")
    kept = reduce(a, axis=axes, keepdims=True)
    out = kept if keepdims else np.squeeze(kept, axis=axes)

    # a reduction's dtype= names a type, not a byte order: a big-endian a's dtype is refused
    count_dtype = a.dtype.newbyteorder("=")

    def vjp(g):
        hit = a == kept
        share = hit / hit.sum(axis=axes, keepdims=True, dtype=count_dtype)
        return _keep(g, a.ndim, axes, keepdims) * share

    return out, vjp


@op(arrays=1)
def max(a, axis=None, keepdims=False):
    """out = max_axis a.   VJP: ā = g * [a = out] / #ties.

    Ties split the gradient evenly among the maximal elements (as ``torch.amax``).
    """
    return _extremum(np.max, a, axis, keepdims)


@op(arrays=1)
def min(a, axis=None, keepdims=False):
    """out = min_axis a.   VJP: ā = g * [a = out] / #ties (ties split evenly)."""
    return _extremum(np.min, a, axis, keepdims)


@op(arrays=1)
def var(a, axis=None, ddof=0, keepdims=False):
    """out = Σ_axis (a - μ)² / (n - ddof), μ the mean.   VJP: ā = g * 2 (a - μ) / (n - ddof).

    ``ddof=0`` is the population variance (NumPy's default; LayerNorm uses it).
    The mean's own dependence on ``a`` cancels: Σ (a - mean) = 0.
    With ``ddof >= n`` the count n - ddof is taken as 0, as NumPy and PyTorch do: the
    variance is inf (nan for a constant slice), and so is its gradient.
    """
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise TypeError(f"var ddof: got {ddof!r}; expected a non-negative integer")
    axes = _axes(axis, a.ndim)
    d = a - np.mean(a, axis=axes, keepdims=True)
    n = _count(a.shape, axes)
    denom = n - ddof if n > ddof else 0
    out = np.sum(d * d, axis=axes, keepdims=keepdims) / denom
    scale = 2 / denom if denom else math.inf  # a Python number: keeps g's dtype
    ndim = a.ndim
    return out, lambda g: _keep(g, ndim, axes, keepdims) * scale * d
