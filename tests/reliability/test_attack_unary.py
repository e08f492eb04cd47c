"""Attack review: inverse-trig VJPs near their singular points, against exact rationals.

``1 - a*a`` cancels as |a| -> 1: for a = 1 - 2^-30 it is off by 2^-31 relative, so the
gradients of arcsin, arccos and arctanh were off by about a million ulps there (torch
computes the same formula). ``1 + a*a`` overflows past |a| ~ 1.3e154, so arcsinh's gradient,
1/sqrt(1 + a^2) ~ 1/|a| (an ordinary number), came out 0.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F

A = np.array([1 - 2.0**-30, -(1 - 2.0**-40), 0.999999, 1 - 2.0**-52, 0.5, -0.25, 0.0])
ULPS = 4


def _exact(a, f):
    """f(1 - a^2) for each a, 1 - a^2 exact (a rational), then in extended precision."""
    out = []
    for v in a:
        d = 1 - Fraction(float(v)) ** 2
        ld = np.longdouble(d.numerator) / np.longdouble(d.denominator)
        out.append(float(f(ld)))
    return np.array(out)


def _grad(fn, a):
    t = mg.Tensor(a.copy(), requires_grad=True)
    fn(t).backward(np.ones_like(a))
    return t.grad


@pytest.mark.parametrize("name, sign, f", [
    ("arcsin", 1, lambda d: 1 / np.sqrt(d)),
    ("arccos", -1, lambda d: -1 / np.sqrt(d)),
    ("arctanh", 1, lambda d: 1 / d),
])
def test_inverse_trig_gradients_near_one_are_exact_to_a_few_ulps(name, sign, f):
    if np.finfo(np.longdouble).nmant < 60:
        pytest.skip("needs an extended-precision long double for the oracle")
    got = _grad(getattr(F, name), A)
    want = _exact(A, f)
    assert np.all(np.abs(got - want) <= ULPS * np.spacing(np.abs(want))), (got, want)


def test_arcsinh_gradient_does_not_overflow():
    a = np.array([1e200, -1e300, 3e154, 2.0, 0.0])
    got = _grad(F.arcsinh, a)
    # 1 / sqrt(1 + a^2): for |a| >= 1e154, 1 + a^2 = a^2 to far below an ulp, so it is 1/|a|
    want = np.array([1e-200, 1e-300, 1 / 3e154, 1 / np.sqrt(5.0), 1.0])
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np.float64).eps)


def test_expm1_gradient_is_e_to_the_a_also_where_out_is_minus_one():
    # expm1(-40) rounds to -1.0, so g (out + 1) gave 0 where the gradient is e^-40 = 4.2e-18
    a = np.array([-40.0, -800.0, -1e-20, 0.0, 1.0, 30.0])
    got = _grad(F.expm1, a)
    want = np.array([float(np.exp(np.longdouble(v))) for v in a])
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np.float64).eps, atol=0)


def test_arctan2_gradient_where_a2_plus_b2_leaves_the_range():
    # a² + b² underflowed to 0 (taken as the origin: gradient 0) or overflowed to inf
    # (gradient 0); ∂atan2(a, b)/∂a = b / (a² + b²) = 1 / (2 v) at a = b = v
    for v in (1e-200, 1e200, 1e-160, 3.0):
        a = mg.Tensor(np.array([v]), requires_grad=True)
        b = mg.Tensor(np.array([v]), requires_grad=True)
        F.arctan2(a, b).backward(np.ones(1))
        np.testing.assert_allclose(a.grad, [1 / (2 * v)], rtol=4 * np.finfo(np.float64).eps)
        np.testing.assert_allclose(b.grad, [-1 / (2 * v)], rtol=4 * np.finfo(np.float64).eps)
    a = mg.Tensor(np.zeros(1), requires_grad=True)
    b = mg.Tensor(np.zeros(1), requires_grad=True)
    F.arctan2(a, b).backward(np.ones(1))  # the origin itself: 0, as PyTorch
    assert a.grad[0] == 0 and b.grad[0] == 0
