"""Attack review: cumprod's gradient where dividing by a_k is not exact.

The VJP took Σ_{i>=k} ḡ_i out_i / a_k before the first zero. When the running product
underflows (out_i = 0 with no zero among the a_j) or overflows (inf / inf), that quotient
loses whole terms: for a = (1e-200, 1e-200, 1e200), ∂out_2/∂a_0 = a_1 a_2 = 1, but out_2
underflowed to 0, so the gradient came out 1 where it is 2; an inf input gave inf / inf =
NaN. (torch divides the same way.)
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F


def _oracle(x, g):
    """ā_k = Σ_{i>=k} ḡ_i Π_{j<=i, j!=k} a_j in exact rationals (finite inputs), rounded."""
    xs, gs = [Fraction(float(v)) for v in x], [Fraction(float(v)) for v in g]
    n = len(xs)
    out = []
    for k in range(n):
        total = Fraction(0)
        for i in range(k, n):
            term = gs[i]
            for j in range(i + 1):
                if j != k:
                    term *= xs[j]
            total += term
        out.append(float(total))
    return np.array(out)


CASES = [
    [1e-200, 1e-200, 1e200],          # the running product underflows to 0
    [1e-300, 1e-300, 0.0, 5.0],       # underflow before a zero
    [1e-160, 1e-160, 1e-160, 1e300],  # a subnormal running product
    [0.5, -2.0, 3.0, 0.25],           # an ordinary case
    [0.5, 0.0, 3.0, 0.0, 2.0],        # two zeros
]


def test_cumprod_gradient_through_an_infinite_input():
    # out = (inf, 2 inf, 6 inf): ∂out_i/∂a_0 = 1, 2, 6 (finite); inf / inf gave NaN
    g = np.array([0.75, 1.125, 1.5])
    t = mg.Tensor(np.array([np.inf, 2.0, 3.0]), requires_grad=True)
    F.cumprod(t, axis=0).backward(g)
    np.testing.assert_array_equal(t.grad, [0.75 + 2 * 1.125 + 6 * 1.5, np.inf, np.inf])


@pytest.mark.parametrize("x", CASES, ids=[str(c) for c in CASES])
def test_cumprod_gradient_matches_the_term_by_term_sum(x):
    x = np.array(x)
    g = np.linspace(0.75, 1.5, len(x))
    t = mg.Tensor(x.copy(), requires_grad=True)
    out = F.cumprod(t, axis=0)
    out.backward(g)
    want = _oracle(x, g)
    tol = 64 * np.finfo(np.float64).eps * np.abs(want) + np.finfo(np.float64).smallest_subnormal
    assert np.all(np.abs(t.grad - want) <= tol), (t.grad, want)


def test_cumprod_gradient_lanes_along_axis_1():
    x = np.array([[1e-200, 1e-200, 1e200], [0.5, 2.0, -1.0]])
    g = np.array([[1.0, 0.5, 2.0], [1.5, -1.0, 0.25]])
    t = mg.Tensor(x.copy(), requires_grad=True)
    F.cumprod(t, axis=-1).backward(g)
    want = np.stack([_oracle(r, s) for r, s in zip(x, g)])
    np.testing.assert_allclose(t.grad, want, rtol=64 * np.finfo(np.float64).eps)


def test_cumprod_gradient_in_float32_keeps_its_dtype_where_the_product_underflows():
    x = np.array([1e-30, 1e-30, 1e30], np.float32)  # out_1 = 1e-60 underflows in float32
    g = np.array([0.75, 1.125, 1.5], np.float32)
    t = mg.Tensor(x.copy(), requires_grad=True)
    F.cumprod(t, axis=0).backward(g)
    assert t.grad.dtype == np.float32
    want = _oracle(x, g)  # exact in rationals from the float32 values
    tol = 64 * np.finfo(np.float32).eps * np.abs(want) + np.finfo(np.float32).smallest_subnormal
    assert np.all(np.abs(t.grad - want) <= tol), (t.grad, want)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp"])
@pytest.mark.parametrize("axis", [0, -1, None])
def test_scans_of_a_0d_array_agree(name, axis):
    # logcumsumexp raised NumPy's "cannot accumulate on a scalar" for an int axis; cumsum
    # and cumprod give NumPy's (1,) there, and logcumsumexp now does the same
    t = mg.Tensor(np.array(0.75), requires_grad=True)
    out = getattr(F, name)(t, axis=axis)
    assert out.shape == (1,)
    want = {"cumsum": 0.75, "cumprod": 0.75, "logcumsumexp": 0.75}[name]
    np.testing.assert_array_equal(out.data, [want])
    out.backward(np.array([2.0]))
    assert t.grad.shape == ()
    np.testing.assert_allclose(t.grad, 2.0, rtol=4 * np.finfo(np.float64).eps)
