"""The elementwise family's rules beyond the case table: clip (docs/backward.md, section 13).

clip's gradient exactly at a bound is the closed interval: d clip(x, lo, hi)/dx = 1 where
lo <= x <= hi, 0 elsewhere: at x == lo or x == hi the gradient passes, including lo == hi;
with lo > hi (NumPy: every output is hi) it is 0. clip differentiates its bounds too: each
point's gradient goes to exactly one of x, a_min, a_max: to x on the closed interval, to
a_min where x < a_min, to a_max where x > a_max or where the bounds cross. The expected
values are written by hand from that rule; the one-sided difference quotients from inside
the interval and gradcheck away from the kinks confirm them. Torch is no oracle at the
bounds: its rule there changed between versions (op_cases/elementwise.py compares off them).
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


# ---- clip differentiates its bounds -------------------------------------------------------------
def grads(x, lo, hi, g=G, dtype=np.float64):
    """(x̄, lō, hī) of clip(x, lo, hi) with every argument a Tensor that requires grad."""
    t = mg.Tensor(np.array(x, dtype), requires_grad=True)
    tl = None if lo is None else mg.Tensor(np.array(lo, dtype), requires_grad=True)
    th = None if hi is None else mg.Tensor(np.array(hi, dtype), requires_grad=True)
    F.clip(t, tl, th).backward(np.array(g, dtype))
    return t.grad, None if tl is None else tl.grad, None if th is None else th.grad


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("lo,hi,to_x,to_lo,to_hi", [
    # X = [-2, -0.5, 0, 0.3, 1, 1.7]
    (-0.5, 1.0, [0, 1, 1, 1, 1, 0], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]),  # x == a bound: to x
    (0.0, None, [0, 0, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0], None),
    (None, 0.3, [1, 1, 1, 1, 0, 0], None, [0, 0, 0, 0, 1, 1]),
    (0.3, 0.3, [0, 0, 0, 1, 0, 0], [1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 1, 1]),
    (1.0, -0.5, [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1]),  # crossed: out = hi
])
def test_number_bounds_by_hand(dtype, lo, hi, to_x, to_lo, to_hi):
    gx, gl, gh = grads(X, lo, hi, dtype=dtype)
    g = G.astype(dtype)
    np.testing.assert_array_equal(gx, g * np.array(to_x, dtype))
    if to_lo is not None:  # a 0-d bound gets the sum of what its points sent it
        assert gl.shape == () and gl.dtype == dtype
        np.testing.assert_allclose(gl, np.sum(g * np.array(to_lo, dtype)), rtol=0,
                                   atol=8 * np.finfo(dtype).eps * np.abs(g).sum())
    if to_hi is not None:
        assert gh.shape == () and gh.dtype == dtype
        np.testing.assert_allclose(gh, np.sum(g * np.array(to_hi, dtype)), rtol=0,
                                   atol=8 * np.finfo(dtype).eps * np.abs(g).sum())


def test_array_bounds_elementwise_partition():
    lo = np.array([-2.0, 0.0, 0.0, 0.5, -1.0, 1.7])  # equal to x at 0, 2, 5
    hi = np.array([0.0, 1.0, 0.0, 2.0, 1.0, 1.7])  # equal to x at 2, 4, 5; crossed nowhere
    gx, gl, gh = grads(X, lo, hi)
    np.testing.assert_array_equal(gx, G * [1, 0, 1, 0, 1, 1])
    np.testing.assert_array_equal(gl, G * [0, 1, 0, 1, 0, 0])
    np.testing.assert_array_equal(gh, G * [0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(gx + gl + gh, G)  # each point's gradient goes to one place


def test_crossed_array_bounds_send_everything_to_a_max():
    lo, hi = np.array([2.0, 0.0, 1.0]), np.array([1.0, 1.0, 0.5])  # crossed at 0 and 2
    x, g = np.array([0.0, 3.0, 0.7]), np.array([0.3, -0.8, 1.9])
    gx, gl, gh = grads(x, lo, hi, g=g)
    np.testing.assert_array_equal(gx, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(gl, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(gh, g)


def test_broadcast_bounds_sum_back():
    x = np.linspace(-1.9, 1.9, 12).reshape(3, 4)  # no point on a bound
    lo, hi = np.array([[-1.0], [0.0], [0.5]]), np.array([-0.5, 0.5, 1.0, 1.5])
    g = np.random.default_rng(1).standard_normal((3, 4))
    gx, gl, gh = grads(x, lo, hi, g=g)
    xb, lb, hb = np.broadcast_arrays(x, lo, hi)
    np.testing.assert_array_equal(gx, np.where((xb >= lb) & (xb <= hb), g, 0.0))
    np.testing.assert_allclose(gl, np.where((xb < lb) & (lb <= hb), g, 0.0).sum(1, keepdims=True),
                               rtol=8 * np.finfo(float).eps)
    np.testing.assert_allclose(gh, np.where((xb > hb) | (lb > hb), g, 0.0).sum(0),
                               rtol=8 * np.finfo(float).eps)


def test_gradcheck_away_from_the_kinks():
    rng = np.random.default_rng(7)
    x = rng.uniform(-3, 3, (4, 5))
    lo, hi = rng.uniform(-2, -0.5, (1, 5)), rng.uniform(0.5, 2, (4, 1))
    for arr, ref in ((x, lo), (x, hi), (lo, hi)):
        assert np.min(np.abs(np.subtract(arr, ref))) > 0.02  # gradcheck's eps never crosses a kink
    mg.gradcheck(lambda a, b, c: F.clip(a, b, c), [x, lo, hi])
    mg.gradcheck(lambda a, b: F.clip(a, b, None), [x, lo])
    mg.gradcheck(lambda a, c: F.clip(a, None, c), [x, hi])


def test_tensor_method_differentiates_the_bounds():
    t = mg.Tensor(X.copy(), requires_grad=True)
    lo = mg.Tensor(np.array(-0.5), requires_grad=True)
    t.clip(lo, 1.0).backward(G)
    assert lo.grad == G[0]


def test_against_torch_off_the_bounds():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.uniform(-3, 3, (4, 5))
    lo, hi = rng.uniform(-2, -0.5, (1, 5)), rng.uniform(0.5, 2, (4, 1))
    g = rng.standard_normal((4, 5))
    gx, gl, gh = grads(x, lo, hi, g=g)
    tx, tl, th = (torch.tensor(a, requires_grad=True) for a in (x, lo, hi))
    torch.clamp(tx, tl, th).backward(torch.tensor(g))
    tol = dict(rtol=16 * np.finfo(float).eps, atol=16 * np.finfo(float).eps)
    np.testing.assert_allclose(gx, tx.grad.numpy(), **tol)
    np.testing.assert_allclose(gl, tl.grad.numpy(), **tol)
    np.testing.assert_allclose(gh, th.grad.numpy(), **tol)
