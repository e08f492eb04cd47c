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
    ax = normalize_axis_index(int(axis), max(a.ndim, 1), f"{name} axis")
    # a 0-d array scans as (1,), as np.cumsum does (np.logaddexp.accumulate refuses it)
    return (np.reshape(a, 1) if a.ndim == 0 else a), ax


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
    zeros, infinities and under- or overflowing products.
    Derivation: docs/backward.md §21. Tests: tests/minigrad/op_cases/scan.py,
    tests/minigrad/ops/test_reduce.py, tests/reliability/test_attack_scan.py.
    """
    x, ax = _scan_input(np.asarray(a), axis, "cumprod")
    shape = np.shape(a)
    out = np.cumprod(x, axis=ax)

    def vjp(g):
        zero = x == 0
        seen = np.cumsum(zero, axis=ax)  # zeros at or before each position
        before = seen == 0  # k before the first zero: a_k != 0, so dividing by it is exact
        if not _quotients_exact(x, out, before):
            return _cumprod_vjp_by_recurrence(x, g, ax).reshape(shape)
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


def _quotients_exact(x, out, before) -> bool:
    """Whether out_i / a_k is a_k's cofactor to rounding: every a finite and every running
    product before the first zero a normal, finite number (one that underflowed to 0 or
    overflowed to inf has lost the cofactor: out_i / a_k would drop or NaN whole terms)."""
    tiny = np.finfo(out.dtype).tiny if out.dtype.kind == "f" else 0
    with np.errstate(invalid="ignore"):
        ok = ~before | (np.isfinite(out) & (np.abs(out) >= tiny))
    return bool(np.isfinite(x).all() and ok.all())


def _cumprod_vjp_by_recurrence(x, g, axis):
    """ā_k = P_k S_k without a division: P_k = Π_{j<k} a_j and S_k = Σ_{i>=k} ḡ_i Π_{k<j<=i}
    a_j = ḡ_k + a_{k+1} S_{k+1}, one NumPy step per element along the axis (the slow path).
    Every running value is carried as m 2^e (np.frexp), so none under- or overflows on the
    way: ā_k is rounded once, at the end, however far the a_j range."""
    dtype = np.result_type(x, g)
    am, ae = np.frexp(np.moveaxis(x, axis, 0).astype(dtype))
    gm, ge = np.frexp(np.moveaxis(g, axis, 0).astype(dtype))
    ae, ge = _exponents(am, ae), _exponents(gm, ge)
    n = len(gm)
    sm, se = np.empty_like(gm), np.empty_like(ge)
    out = np.empty_like(gm)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for k in range(n - 1, -1, -1):
            if k == n - 1:
                sm[k], se[k] = gm[k], ge[k]
                continue
            tm, te = np.frexp(am[k + 1] * sm[k + 1])  # a_{k+1} S_{k+1}
            te = _exponents(tm, te + ae[k + 1] + se[k + 1])
            top = np.maximum(te, ge[k])  # + ḡ_k, aligned on the larger exponent
            m, e = np.frexp(_ldexp(tm, te - top) + _ldexp(gm[k], ge[k] - top))
            sm[k], se[k] = m, _exponents(m, e + top)
        pm, pe = np.ones_like(gm[:1][0]), np.zeros_like(ge[:1][0])
        for k in range(n):
            out[k] = _ldexp(pm * sm[k], pe + se[k])
            m, e = np.frexp(pm * am[k])
            pm, pe = m, _exponents(m, e + pe + ae[k])
    return np.moveaxis(out, 0, axis)


#: The exponent of a zero in ``_cumprod_vjp_by_recurrence`` (far below any float's) and
#: the clip that keeps sums of exponents within int64 and ``np.ldexp``'s int32.
_ZERO_EXP, _MAX_EXP = -(1 << 40), 1 << 20


def _exponents(m, e):
    """frexp exponents with a zero's set to ``_ZERO_EXP`` (so it never wins an alignment)."""
    return np.where(m == 0, _ZERO_EXP, np.asarray(e, np.int64))


def _ldexp(m, e):
    return np.ldexp(m, np.clip(e, -_MAX_EXP, _MAX_EXP).astype(np.int32))


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
