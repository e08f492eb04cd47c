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
    from numpy.core.multiarray import normalize_axis_index  # type: ignore[no-redef]  # (NumPy 1.x)

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
    tests/minigrad/ops/test_reduce.py, tests/minigrad/ops/test_scan.py.
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


def _exp_difference(u, w, infinite):
    """e^(u - w), with ∞ - ∞ (u and w the same infinity, possible only if ``infinite``) taken
    as 0: they are equal, and e^0 = 1."""
    with np.errstate(over="ignore", invalid="ignore"):  # -1e308 - 1e308 = -inf: e^-inf = 0
        d = np.subtract(u, w)
        if infinite:
            d = np.where(u == w, 0, d)
        return np.exp(d)


def _scaled_scan(v, m, axis, reverse, infinite):
    """S_i = Σ_{j <= i} v_j e^{m_j - m_i} (reverse: S_k = Σ_{i >= k} v_i e^{m_k - m_i}) along
    ``axis``, for a nondecreasing m: every weight is at most 1, so nothing overflows.

    Hillis-Steele doubling: after the step of offset d, each S covers 2d terms, joined to the
    d before (after) it by the one factor e^{m_j - m_{j+d}}, a difference of two inputs taken
    directly. So no weight is ever formed from a large running total (as e^{m_k} e^{-m_i} or
    a cumsum of log-weights would be), whatever the magnitude of m: log2(n) vectorized steps.
    """
    s = np.array(v, copy=True)
    n = s.shape[axis]
    lead = (slice(None),) * axis
    d = 1
    while d < n:
        lo, hi = lead + (slice(0, n - d),), lead + (slice(d, n),)
        f = _exp_difference(m[lo], m[hi], infinite)  # e^{m_j - m_{j+d}}
        if reverse:
            s[lo] += f * s[hi]  # the product is formed first, from the values before the step
        else:
            s[hi] += f * s[lo]
        d *= 2
    return s


@op(arrays=1)
def logcumsumexp(a, axis=None):
    """out_i = ln Σ_{j <= i} e^{a_j}.   VJP: ā_k = Σ_{i >= k} ḡ_i e^{a_k - out_i}, in logs.
    The weights e^{a_k - out_i} (prefix softmaxes) come from differences of inputs, relative
    to the running max, never from the rounded out: exact at any magnitude.
    Derivation: docs/backward.md §22. Tests: tests/minigrad/op_cases/scan.py,
    tests/minigrad/ops/test_scan.py.
    """
    x, ax = _scan_input(as_floating(a), axis, "logcumsumexp")
    shape = np.shape(a)
    # logaddexp.accumulate keeps every partial result in log space: exact to a few ulps
    # at any magnitude, where exp, cumsum, log overflows past ~709 (float64) or ~88 (float32)
    out = np.logaddexp.accumulate(x, axis=ax)

    def vjp(g):
        # e^{a_k - out_i} = v_k e^{m_k - m_i} / Z_i with m the running max, v_k = e^{a_k - m_k}
        # and Z_i = Σ_{j <= i} v_j e^{m_j - m_i} (in [1, i + 1]): so
        # ā_k = v_k Σ_{i >= k} (ḡ_i / Z_i) e^{m_k - m_i}, two scans of weights <= 1
        m = np.maximum.accumulate(x, axis=ax)
        # ∞ - ∞ needs a case only where a running max is infinite (x = +inf implies m = +inf)
        infinite = not np.isfinite(m).all()
        v = _exp_difference(x, m, infinite)
        z = _scaled_scan(v, m, ax, False, infinite)
        return (v * _scaled_scan(g / z, m, ax, True, infinite)).reshape(shape)

    return out, vjp
