"""Scans along one axis: ``cumsum``, ``cumprod``, ``logcumsumexp``.

``axis=None`` scans the flattened array (out has shape ``(a.size,)``), as ``np.cumsum``
does; an int axis may be negative. The VJP of a scan is a scan the other way: every input
reaches the outputs at and after it (docs/backward.md §21, §22). cumsum and cumprod keep
NumPy's dtypes (integers stay integers, without a gradient); logcumsumexp, which NumPy spells
``np.logaddexp.accumulate``, computes integers and bools in float64.
"""
from __future__ import annotations

import numpy as np

from ..defop import as_floating, op

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # pragma: no cover
    from numpy.core.multiarray import normalize_axis_index

__all__ = ["cumsum", "cumprod", "logcumsumexp"]


def _scan_input(a, axis, name):
    """``a`` as scanned (flattened for ``axis=None``) and the axis as a non-negative int."""
    if axis is None:
        return np.reshape(a, -1), 0
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name} axis: got {axis!r}; expected an integer or None")
    return a, normalize_axis_index(int(axis), max(a.ndim, 1), f"{name} axis")


def _flip(x, axis):
    return np.flip(x, axis)


def _reverse_cumsum(x, axis):
    """r_k = Σ_{i >= k} x_i along ``axis``."""
    return _flip(np.cumsum(_flip(x, axis), axis=axis), axis)


@op(arrays=1)
def cumsum(a, axis=None):
    """out_i = Σ_{j <= i} a_j.   VJP: ā_k = Σ_{i >= k} ḡ_i.

    Derivation: docs/backward.md §22. Tests: tests/minigrad/op_cases/scan.py,
    tests/minigrad/ops/test_scan.py.
    """
    x, ax = _scan_input(np.asarray(a), axis, "cumsum")
    shape = np.shape(a)
    out = np.cumsum(x, axis=ax)
    return out, lambda g: _reverse_cumsum(g, ax).reshape(shape)


@op(arrays=1)
def cumprod(a, axis=None):
    """out_i = Π_{j <= i} a_j.   VJP: ā_k = Σ_{i >= k} ḡ_i Π_{j <= i, j != k} a_j, exact with
    zeros.
    Derivation: docs/backward.md §21. Tests: tests/minigrad/op_cases/scan.py,
    tests/minigrad/ops/test_reduce.py.
    """
    x, ax = _scan_input(np.asarray(a), axis, "cumprod")
    shape = np.shape(a)
    out = np.cumprod(x, axis=ax)

    def vjp(g):
        zero = x == 0
        seen = np.cumsum(zero, axis=ax)  # zeros at or before each position
        before = seen == 0  # k before the first zero: a_k != 0, so dividing by it is exact
        first = zero & (seen == 1)
        # Before the first zero z: Σ_{i >= k} ḡ_i out_i / a_k (out_i = 0 from z on).
        safe = np.where(before, x, 1)
        grad = np.where(before, _reverse_cumsum(g * out, ax) / safe, 0)
        if first.any():
            # At z: Σ_{i >= z} ḡ_i Π_{j <= i, j != z} a_j, the cumprod with a_z set to 1.
            skipped = np.cumprod(np.where(first, 1, x), axis=ax)
            grad = np.where(first, _reverse_cumsum(g * skipped, ax), grad)
        return grad.reshape(shape)  # after the first zero: 0 (every product holds a_z)

    return out, vjp


def _reverse_logcumsumexp(x, axis):
    """r_k = ln Σ_{i >= k} e^{x_i} along ``axis``, accumulated pairwise (no overflow)."""
    return _flip(np.logaddexp.accumulate(_flip(x, axis), axis=axis), axis)


@op(arrays=1)
def logcumsumexp(a, axis=None):
    """out_i = ln Σ_{j <= i} e^{a_j}.   VJP: ā_k = Σ_{i >= k} ḡ_i e^{a_k - out_i}, in logs.

    Derivation: docs/backward.md §22. Tests: tests/minigrad/op_cases/scan.py,
    tests/minigrad/ops/test_scan.py.
    """
    x, ax = _scan_input(as_floating(a), axis, "logcumsumexp")
    shape = np.shape(a)
    # logaddexp.accumulate keeps every partial result in log space: exact to a few ulps
    # at any magnitude, where exp, cumsum, log overflows past ~709 (float64) or ~88 (float32)
    out = np.logaddexp.accumulate(x, axis=ax)

    def vjp(g):
        # ā_k = e^{a_k} Σ_{i >= k} ḡ_i e^{-out_i}, with the sum taken in logs separately for
        # the positive and the negative part of ḡ, so that nothing overflows
        with np.errstate(divide="ignore"):
            log_pos = np.log(np.maximum(g, 0)) - out
            log_neg = np.log(np.maximum(-g, 0)) - out
        pos = np.exp(x + _reverse_logcumsumexp(log_pos, ax))
        neg = np.exp(x + _reverse_logcumsumexp(log_neg, ax))
        return (pos - neg).reshape(shape)

    return out, vjp
