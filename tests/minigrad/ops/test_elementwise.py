"""clip's gradient exactly at a bound (docs/backward.md, section 13): the closed interval.

d clip(x, lo, hi)/dx = 1 where lo <= x <= hi, 0 elsewhere: at x == lo or x == hi the
gradient passes, including lo == hi; with lo > hi (NumPy: every output is hi) it is 0.
The expected values are written by hand from that rule; the one-sided difference quotients
from inside the interval confirm them. Torch is no oracle here: its rule at the bounds
changed between versions (test_ops_torch.py compares off the bounds).
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

X = np.array([-2.0, -0.5, 0.0, 0.3, 1.0, 1.7])
G = np.array([0.7, -1.3, 2.1, 0.4, -0.9, 1.6])  # a non-uniform cotangent


def grad(x, lo, hi, g=G, dtype=np.float64):
    t = mg.Tensor(np.array(x, dtype), requires_grad=True)
    F.clip(t, lo, hi).backward(np.array(g, dtype))
    return t.grad


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("lo,hi,passes", [
    (-0.5, 1.0, [0, 1, 1, 1, 1, 0]),   # x == lo (-0.5) and x == hi (1.0) pass
    (0.0, None, [0, 0, 1, 1, 1, 1]),   # x == lo (0.0) passes
    (None, 0.3, [1, 1, 1, 1, 0, 0]),   # x == hi (0.3) passes
    (0.3, 0.3, [0, 0, 0, 1, 0, 0]),    # lo == hi: only x == lo == hi passes
    (1.0, -0.5, [0, 0, 0, 0, 0, 0]),   # crossed: the output is hi everywhere, a constant
])
def test_gradient_at_the_bounds_by_hand(dtype, lo, hi, passes):
    got = grad(X, lo, hi, dtype=dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, (G * np.array(passes)).astype(dtype))


def test_array_bounds_elementwise():
    lo = np.array([-2.0, 0.0, 0.0, 0.5, -1.0, 1.7])  # equal to x at 0, 2 and 5
    hi = np.array([0.0, 1.0, 0.0, 2.0, 1.0, 1.7])  # equal to x at 2, 4, 5; lo == hi at 2, 5
    np.testing.assert_array_equal(grad(X, lo, hi), G * np.array([1, 0, 1, 0, 1, 1]))


def test_the_convention_is_the_one_sided_derivative_from_inside():
    """At lo the right difference quotient, at hi the left one: both exactly 1 (clip is the
    identity on [lo, hi]); from outside they are 0. The gradient takes the inside value."""
    lo, hi, h = -0.5, 1.0, 2.0 ** -10

    def f(v):
        return F.clip(mg.Tensor(np.array([v])), lo, hi).data[0]

    assert (f(lo + h) - f(lo)) / h == 1.0 and (f(lo) - f(lo - h)) / h == 0.0
    assert (f(hi) - f(hi - h)) / h == 1.0 and (f(hi + h) - f(hi)) / h == 0.0
    np.testing.assert_array_equal(grad([lo, hi], lo, hi, g=[1.0, 1.0]), [1.0, 1.0])


def test_clip_and_relu_differ_only_in_the_gradient_at_zero():
    """relu keeps torch.relu's rule (0 at 0); clip(x, 0) passes at its bound."""
    x = np.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(F.clip(x, 0.0).data, F.relu(x).data)
    t = mg.Tensor(x.copy(), requires_grad=True)
    F.relu(t).sum().backward()
    np.testing.assert_array_equal(t.grad, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(grad(x, 0.0, None, g=np.ones(3)), [0.0, 1.0, 1.0])
