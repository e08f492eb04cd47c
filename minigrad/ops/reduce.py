"""Reductions over ``axis`` (None, an int, a tuple; negative allowed), with ``keepdims``.

On a 0-d array the axes NumPy takes: an int 0 or -1 for sum, prod, max and min (nothing is
reduced, as in NumPy's ufunc reductions), none for mean, var, std and norm (NumPy refuses).
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

from ..checks import integer
from ..defop import as_array_input, as_floating, op
from ..tensor import Tensor
from .matrix_norms import is_matrix_ord, matrix_norm

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # pragma: no cover
    from numpy.core.numeric import normalize_axis_tuple  # type: ignore[no-redef]  # (NumPy 1.x)

__all__ = ["sum", "mean", "max", "min", "var", "std", "prod", "norm", "logsumexp",
           "argmax", "argmin", "any", "all"]


def _axes(axis, ndim, scalar_axis=False):
    """``axis`` as a sorted tuple of non-negative ints (all axes for None).

    ``scalar_axis``: an int axis 0 or -1 of a 0-d array reduces nothing, (), as NumPy's ufunc
    reductions (np.sum, np.prod, np.max, np.min) take it; np.mean, np.var and np.std refuse
    it, and a tuple (0,) is out of bounds for all of them, as it is here.
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        if scalar_axis and not ndim and axis in (0, -1) and not isinstance(axis, bool):
            return ()
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
    """out = Σ_axis a.   VJP: ā = g broadcast back over the summed axes.

    Derivation: docs/backward.md §4. Tests: tests/minigrad/op_cases/reduce.py.
    """
    axes = _axes(axis, a.ndim, scalar_axis=True)
    out = np.sum(a, axis=axes, keepdims=keepdims)
    shape, ndim = a.shape, a.ndim  # the VJP must not keep ``a`` alive
    return out, lambda g: np.broadcast_to(_keep(g, ndim, axes, keepdims), shape)


@op(arrays=1)
def mean(a, axis=None, keepdims=False):
    """out = (1/n) Σ_axis a, n the number of elements reduced.   VJP: ā = g / n, broadcast.

    Derivation: docs/backward.md §4. Tests: tests/minigrad/op_cases/reduce.py,
    tests/minigrad/ops/test_reduce.py.
    """
    axes = _axes(axis, a.ndim)
    out = np.mean(a, axis=axes, keepdims=keepdims)
    n = _count(a.shape, axes)
    shape, ndim = a.shape, a.ndim
    return out, lambda g: np.broadcast_to(_keep(g, ndim, axes, keepdims) / n, shape)


def _extremum(reduce, a, axis, keepdims):
    axes = _axes(axis, a.ndim, scalar_axis=True)
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
    Derivation: docs/backward.md §4. Tests: tests/minigrad/op_cases/reduce.py.
    """
    return _extremum(np.max, a, axis, keepdims)


@op(arrays=1)
def min(a, axis=None, keepdims=False):
    """out = min_axis a.   VJP: ā = g * [a = out] / #ties (ties split evenly).

    Derivation: docs/backward.md §4. Tests: tests/minigrad/op_cases/reduce.py.
    """
    return _extremum(np.min, a, axis, keepdims)


@op(arrays=1)
def var(a, axis=None, ddof=0, keepdims=False):
    """out = Σ_axis (a - μ)² / (n - ddof), μ the mean.   VJP: ā = g * 2 (a - μ) / (n - ddof).

    ``ddof=0`` is the population variance (NumPy's default; LayerNorm uses it).
    The mean's own dependence on ``a`` cancels: Σ (a - mean) = 0.
    With ``ddof >= n`` the count n - ddof is taken as 0, as NumPy and PyTorch do: the
    variance is inf (nan for a constant slice), and so is its gradient.
    Derivation: docs/backward.md §4. Tests: tests/minigrad/op_cases/reduce.py,
    tests/minigrad/ops/test_reduce.py.
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


@op(arrays=1)
def std(a, axis=None, ddof=0, keepdims=False):
    """out = √var(a).   VJP: ā = ḡ (a - μ) / ((n - ddof) out), 0 where out = 0.

    Derivation: docs/backward.md §23. Tests: tests/minigrad/op_cases/reduce.py,
    tests/minigrad/ops/test_reduce.py.
    """
    ddof = integer("ddof", ddof, low=0, owner="std")  # TypeError for 1.0, ValueError for -1
    axes = _axes(axis, a.ndim)
    d = a - np.mean(a, axis=axes, keepdims=True)
    n = _count(a.shape, axes)
    denom = n - ddof if n > ddof else 0  # as var: n - ddof <= 0 counts as 0 (inf or nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        kept = np.sqrt(np.sum(d * d, axis=axes, keepdims=True) / denom)
    out = kept if keepdims else np.squeeze(kept, axis=axes)
    ndim = a.ndim

    def vjp(g):
        # a constant slice (out = 0): 0, a subgradient of the norm √(Σ d²) there, as for norm
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(kept == 0, 0, 1 / (kept * denom))
        return _keep(g, ndim, axes, keepdims) * scale * d

    return out, vjp


def _others_product(x, axes):
    """p_k = Π_{j != k} x_j over ``axes``, for every k: the product of the elements before k
    times that of those after it (two cumprods), so no division and zeros need no case."""
    moved = np.moveaxis(x, axes, tuple(range(-len(axes), 0)))
    flat = moved.reshape(moved.shape[:moved.ndim - len(axes)] + (-1,))
    before = np.ones_like(flat)
    after = np.ones_like(flat)
    if flat.shape[-1] > 1:
        before[..., 1:] = np.cumprod(flat[..., :-1], axis=-1)
        after[..., :-1] = np.cumprod(flat[..., :0:-1], axis=-1)[..., ::-1]
    return np.moveaxis((before * after).reshape(moved.shape),
                       tuple(range(-len(axes), 0)), axes)


@op(arrays=1)
def prod(a, axis=None, keepdims=False):
    """out = Π_axis a.   VJP: ā_k = ḡ Π_{j != k} a_j, exact with zeros (no division).

    Derivation: docs/backward.md §21. Tests: tests/minigrad/op_cases/reduce.py,
    tests/minigrad/ops/test_reduce.py.
    """
    axes = _axes(axis, a.ndim, scalar_axis=True)
    out = np.prod(a, axis=axes, keepdims=keepdims)
    ndim = a.ndim
    if not axes:  # nothing reduced: out = a
        return out, lambda g: g
    return out, lambda g: _keep(g, ndim, axes, keepdims) * _others_product(a, axes)


def _norm_axes(x, ord, axis):
    """The axes np.linalg.norm reduces, and whether it takes a matrix norm over them."""
    if axis is None:
        if ord is None:
            return tuple(range(x.ndim)), False  # the 2-norm of the flattened array
        if x.ndim not in (1, 2):
            raise ValueError(f"norm x: got {x.ndim} dimensions with ord={ord!r} and axis=None; "
                             "expected 1 or 2 dimensions (or pass axis)")
        return tuple(range(x.ndim)), x.ndim == 2
    axes = normalize_axis_tuple((int(axis),) if isinstance(axis, (int, np.integer)) else axis,
                                x.ndim, "norm axis")
    if len(axes) not in (1, 2):
        raise ValueError(f"norm axis: got {axis!r}; expected one axis (a vector norm) or two "
                         "(a matrix norm)")
    return axes, len(axes) == 2


def _in_range(x, out, ord, axis, axes, keepdims, p):
    """``out``, recomputed as 2^e ‖x / 2^e‖ (2^e the largest |x| rounded to a power of two,
    an exact scaling) where the largest |x|^p under- or overflows: Σ|x|^p then loses the
    norm (inf for (1e30, 1e30) in float32) though the norm itself is an ordinary number.
    For p other than 1 and 2 always: (Σ|x|^p)^(1/p) with 1/p rounded errs by
    |ln Σ|x|^p| ulps of 1/p, 2.6e-14 relative at 1e200 (p = 1.5), and by few ulps near 1.
    Elsewhere ``out`` keeps np.linalg.norm's bits."""
    info = np.finfo(x.dtype)
    big = np.max(np.abs(x), axis=axes, keepdims=True)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        power = big.astype(np.float64) ** p  # float64: no overflow for float16/32 checks
        lost = np.isfinite(big) & (big > 0) & (
            (p not in (1, 2)) | (power < float(info.tiny) / float(info.eps))
            | (power > float(info.max) / x.size))
        if not lost.any():
            return out
        e = np.frexp(np.where(lost, big, 1))[1]
        scaled = np.linalg.norm(np.ldexp(x, -e).astype(x.dtype, copy=False), ord=ord,
                                axis=None if axis is None else axes, keepdims=True)
        scaled = np.ldexp(np.asarray(scaled, x.dtype), e).astype(x.dtype, copy=False)
    if not keepdims:
        lost, scaled = (np.squeeze(a, axis=axes) for a in (lost, scaled))
    return np.asarray(np.where(lost, scaled, out), dtype=x.dtype)


@op(arrays=1)
def norm(x, ord=None, axis=None, keepdims=False):
    """out = (Σ |x|^p)^(1/p) (p = 2 for ord=None; max |x|, min |x| for ±inf; for matrices
    (axis a pair, or 2-d x with an ord) Frobenius, or as np.linalg.norm: ord ±1, ±inf (column,
    row sums), ±2 (singular values), 'nuc').   VJP: x̄ = ḡ sign(x) |x|^(p-1) / out^(p-1), 0
    where out = 0; ord=2: ḡ u₁v₁ᵀ, 'nuc': ḡ UVᵀ (ties: their mean, torch's).
    Derivation: docs/backward.md §23, §41. Tests: tests/minigrad/op_cases/reduce.py,
    tests/minigrad/ops/test_reduce.py, tests/minigrad/ops/test_matrix_norms.py.
    """
    x = as_floating(x)
    axes, matrix = _norm_axes(x, ord, axis)
    if matrix and ord not in (None, "fro"):
        if not is_matrix_ord(ord):
            raise ValueError(f"norm ord: got {ord!r} for a matrix norm; expected None, 'fro', "
                             "'nuc', 1, -1, 2, -2, inf or -inf")
        return matrix_norm(x, ord, (axes[0], axes[1]), keepdims)
    p = 2 if ord in (None, "fro") else ord
    if isinstance(p, str) or isinstance(p, bool) or not isinstance(p, (int, float, np.number)):
        raise ValueError(f"norm ord: got {ord!r} for a vector norm; expected None, a number, "
                         "inf or -inf")
    rescue = 0 < p < np.inf and x.size  # Σ|x|^p out of range is recomputed just below
    with np.errstate(over="ignore", under="ignore") if rescue else contextlib.nullcontext():
        out = np.linalg.norm(x, ord=ord, axis=None if axis is None else axes,
                             keepdims=keepdims)
    out = np.asarray(out, dtype=x.dtype)
    if rescue:
        out = _in_range(x, out, ord, axis, axes, keepdims, p)
    ndim = x.ndim
    kept = _keep(out, ndim, axes, keepdims)

    def vjp(g):
        g = _keep(g, ndim, axes, keepdims)
        with np.errstate(divide="ignore", invalid="ignore"):
            if p == 2:  # the common case first: x / out
                grad = g * x / kept
            elif p == 1:
                return g * np.sign(x)
            elif p == 0:  # a count of the nonzero elements: piecewise constant
                return np.zeros_like(x)
            elif np.isinf(p):  # as max |x| (min for -inf): ties share evenly
                hit = np.abs(x) == kept
                return g * np.sign(x) * hit / hit.sum(axis=axes, keepdims=True)
            else:  # x_k = 0 gets 0 also for p < 1, where |x|^(p-1) is infinite (PyTorch)
                grad = g * np.sign(x) * (np.abs(x) / kept) ** (p - 1)
                return np.where((kept == 0) | (x == 0), 0, grad)
        return np.where(kept == 0, 0, grad)  # the subgradient 0 at out = 0, as PyTorch

    return out, vjp


def _data(a, name):
    data = a.data if isinstance(a, Tensor) else np.asarray(as_array_input(a, name, "a"))
    return data


def argmax(a, axis=None, keepdims=False) -> np.ndarray:
    """The index of the largest element (np.argmax).   Not differentiable: an np.ndarray.

    Derivation: docs/backward.md §23 (no gradient). Tests: tests/minigrad/ops/test_reduce.py.
    """
    return np.asarray(np.argmax(_data(a, "argmax"), axis=axis, keepdims=bool(keepdims)))


def argmin(a, axis=None, keepdims=False) -> np.ndarray:
    """The index of the smallest element (np.argmin).   Not differentiable: an np.ndarray.

    Derivation: docs/backward.md §23 (no gradient). Tests: tests/minigrad/ops/test_reduce.py.
    """
    return np.asarray(np.argmin(_data(a, "argmin"), axis=axis, keepdims=bool(keepdims)))


def any(a, axis=None, keepdims=False) -> np.ndarray:
    """Whether any element is true (np.any).   Not differentiable: a bool np.ndarray.

    Derivation: docs/backward.md §23 (no gradient). Tests: tests/minigrad/ops/test_reduce.py.
    """
    return np.asarray(np.any(_data(a, "any"), axis=axis, keepdims=bool(keepdims)))


def all(a, axis=None, keepdims=False) -> np.ndarray:
    """Whether every element is true (np.all).   Not differentiable: a bool np.ndarray.

    Derivation: docs/backward.md §23 (no gradient). Tests: tests/minigrad/ops/test_reduce.py.
    """
    return np.asarray(np.all(_data(a, "all"), axis=axis, keepdims=bool(keepdims)))


@op(arrays=1)
def logsumexp(x, axis=None, keepdims=False):
    """y = m + log Σ_axis e^(x - m), m = max_axis x (so no overflow).

    VJP: x̄ = g ⊙ softmax(x) = g ⊙ e^(x - m) / Σ_axis e^(x - m), g broadcast over the reduced
    axes (∞ - ∞ in x - m taken as 0: infinite maxima share the gradient equally).
    Derivation: docs/backward.md §8. Tests: tests/minigrad/op_cases/reduce.py,
    tests/minigrad/ops/test_reduce.py.
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
    y = y_kept if keepdims or (axis is None and x.ndim == 0) else np.squeeze(y_kept, axis=axis)

    def vjp(g):
        if not keepdims:
            g = np.reshape(g, s.shape)
        # e / s, the softmax from the forward's own terms; not e^(x - y): y is rounded to its
        # ulp, 1 or more past 2^53 (float64; 2^24 in float32), and x - y would carry it all
        if not e.size:
            return np.zeros_like(e)
        return e * (g / s)

    return y, vjp
