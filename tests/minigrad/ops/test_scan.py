"""cumsum, cumprod and logcumsumexp beyond the case table: logcumsumexp at magnitudes where
exp overflows (values and gradients derived by hand, docs/backward.md §22), float32 kept,
and the axis forms; every scan of a 0-d array.

cumprod's gradient where dividing by a_k is not exact: a VJP that takes
Σ_{i>=k} ḡ_i out_i / a_k before the first zero loses whole terms when the running product
underflows (out_i = 0 with no zero among the a_j) or overflows (inf / inf): for
a = (1e-200, 1e-200, 1e200), ∂out_2/∂a_0 = a_1 a_2 = 1, but out_2 underflows to 0, so the
gradient would come out 1 where it is 2, and an inf input would give inf / inf = NaN (torch
divides the same way). The oracle sums the terms in exact rationals."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import minigrad as mg
from minigrad import F


def _run(fn, x, g, dtype=np.float64):
    t = mg.Tensor(np.asarray(x, dtype), requires_grad=True)
    with np.errstate(over="raise", invalid="raise"):  # no overflow and no inf - inf inside
        out = fn(t)
        out.backward(np.asarray(g, dtype))
    return out, t.grad


@pytest.mark.parametrize("dtype, big", [(np.float64, 1000.0), (np.float64, -1000.0),
                                        (np.float32, 100.0), (np.float32, -100.0)])
def test_logcumsumexp_of_large_equal_values(dtype, big):
    """x = (c, c, c): out_i = c + ln(i + 1); with ḡ = 1, ā_k = Σ_{i >= k} e^{c - out_i}
    = Σ_{i >= k} 1/(i + 1). e^1000 (e^100 in float32) would overflow."""
    out, grad = _run(lambda t: F.logcumsumexp(t, axis=0), [big] * 3, [1.0, 1.0, 1.0], dtype)
    eps = np.finfo(dtype).eps
    assert out.dtype == dtype and grad.dtype == dtype
    np.testing.assert_allclose(out.data, big + np.log([1.0, 2.0, 3.0]), rtol=4 * eps)
    # the weights are taken relative to the running max, not from the rounded out_i (whose
    # ulp would be a relative error of |c| eps in e^{c - out_i}): a few eps at any c (§22)
    tol = 8 * eps
    np.testing.assert_allclose(grad, [1 + 1 / 2 + 1 / 3, 1 / 2 + 1 / 3, 1 / 3], rtol=tol)
    # a cotangent of both signs: ā = (1 - 2/2 + 3/3, -2/2 + 3/3, 3/3) = (1, 0, 1)
    _, grad = _run(lambda t: F.logcumsumexp(t, axis=0), [big] * 3, [1.0, -2.0, 3.0], dtype)
    np.testing.assert_allclose(grad, [1.0, 0.0, 1.0], rtol=tol, atol=tol)


def _prefix_softmax_vjp(offsets, g):
    """ā_k = Σ_{i >= k} g_i e^{a_k} / Σ_{j <= i} e^{a_j} in float64, from the inputs' offsets
    from a common value (which cancels): the reference for inputs too large to exponentiate."""
    e = np.exp(np.asarray(offsets, np.float64))
    g = np.asarray(g, np.float64)
    return np.array([sum(g[i] * e[k] / e[:i + 1].sum() for i in range(k, len(e)))
                     for k in range(len(e))])


@pytest.mark.parametrize("dtype, big", [(np.float64, 1e20), (np.float64, -1e20),
                                        (np.float32, 1e7), (np.float32, 1e20)])
def test_logcumsumexp_gradient_of_large_equal_values_is_exact(dtype, big):
    """x = (c, c, c, c): ā_k = Σ_{i >= k} g_i / (i + 1) at any c. Read through the rounded
    out_i (ulp(1e20) = 16384 in float64, ulp(1e7) = 1 in float32), the gradient lost every
    digit."""
    g = np.array([0.75, -1.25, 2.0, 1.5])
    out, grad = _run(lambda t: F.logcumsumexp(t, axis=0), [big] * 4, g, dtype)
    assert grad.dtype == dtype
    np.testing.assert_allclose(grad, _prefix_softmax_vjp([0.0] * 4, g),
                               rtol=8 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logcumsumexp_gradient_of_large_values_a_few_apart(dtype):
    """x = b + (0, 1, -2, 0, 3) with b = ±1e7 (exact in float32, where ulp(b) = 1)."""
    offsets = np.array([0.0, 1.0, -2.0, 0.0, 3.0])
    g = np.array([1.5, -0.5, 0.25, 2.0, -1.0])
    for b in (1e7, -1e7):
        _, grad = _run(lambda t: F.logcumsumexp(t, axis=-1), b + offsets, g, dtype)
        want = _prefix_softmax_vjp(offsets, g)
        tol = 16 * np.finfo(dtype).eps
        np.testing.assert_allclose(grad, want, rtol=tol, atol=tol * np.abs(want).max())


def test_logcumsumexp_gradient_at_infinities():
    """Limits of the prefix softmax: out_0 = a_0 whatever a_0 is, so ∂out_0/∂a_0 = 1 also at
    -inf (PyTorch: nan); a +inf takes its prefixes' whole gradient; equal infinities share
    it, as equal finite values do (PyTorch: nan); a nan makes its lane nan."""
    inf, nan = np.inf, np.nan
    g = np.array([0.75, 1.25, 2.0])
    rows = {  # input: expected gradient
        (-inf, 0.0, 1.0): [0.75, None, None],
        (-inf, -inf, -inf): [0.75 + 1.25 / 2 + 2.0 / 3, 1.25 / 2 + 2.0 / 3, 2.0 / 3],
        (inf, 1.0, 2.0): [0.75 + 1.25 + 2.0, 0.0, 0.0],
        (1.0, inf, 2.0): [0.75, 1.25 + 2.0, 0.0],
        (inf, inf, -inf): [0.75 + 1.25 / 2 + 2.0 / 2, 1.25 / 2 + 2.0 / 2, 0.0],
        (-inf, 3.0, -inf): [0.75, 1.25 + 2.0, 0.0],
    }
    for x, want in rows.items():
        t = mg.Tensor(np.array(x), requires_grad=True)
        with np.errstate(invalid="ignore"):
            F.logcumsumexp(t, axis=0).backward(g)
        if want[1] is None:  # the finite tail: the ordinary prefix softmax
            want = [want[0], *_prefix_softmax_vjp([0.0, 1.0], g[1:])]
        np.testing.assert_allclose(t.grad, want, rtol=4 * np.finfo(float).eps, err_msg=str(x))
    t = mg.Tensor(np.array([1.0, nan, 2.0]), requires_grad=True)
    with np.errstate(invalid="ignore"):
        F.logcumsumexp(t, axis=0).backward(g)
    assert np.isnan(t.grad).all()


def test_logcumsumexp_with_a_dominant_value():
    """x = (0, 1000): out = (0, 1000 + ln(1 + e^-1000)) = (0, 1000); ā = (ḡ_0 + ḡ_1 e^-1000,
    ḡ_1) = (ḡ_0, ḡ_1) in float64."""
    out, grad = _run(lambda t: F.logcumsumexp(t, axis=-1), [0.0, 1000.0], [2.0, 3.0])
    np.testing.assert_array_equal(out.data, [0.0, 1000.0])
    np.testing.assert_allclose(grad, [2.0, 3.0], rtol=8 * np.finfo(float).eps)


def test_logcumsumexp_axis_none_scans_the_flattened_array():
    x = np.array([[0.5, -1.0], [2.0, 0.0]])
    out, _ = _run(F.logcumsumexp, x, np.ones(4))
    flat = x.reshape(-1)
    expected = [np.log(np.sum(np.exp(flat[:i + 1]))) for i in range(4)]
    np.testing.assert_allclose(out.data, expected, rtol=1e-15)


def test_logcumsumexp_of_integers_is_float64_like_np_logaddexp():
    out = F.logcumsumexp(np.array([0, 1, 2]))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.data, np.log(np.cumsum(np.exp([0.0, 1.0, 2.0]))),
                               rtol=1e-15)


def test_cumsum_gradient_is_the_reversed_cumsum():
    _, grad = _run(lambda t: F.cumsum(t, axis=1), np.ones((2, 3)), [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(grad, [[6, 5, 3], [15, 11, 6]])
    _, grad = _run(F.cumsum, np.ones((2, 2)), [1, 2, 3, 4])  # flattened: (10, 9, 7, 4)
    np.testing.assert_array_equal(grad, [[10, 9], [7, 4]])


def test_cumsum_keeps_float32_and_integer_dtypes_as_numpy():
    out, grad = _run(lambda t: F.cumsum(t, axis=0), [1.0, 2.0], [1.0, 1.0], np.float32)
    assert out.dtype == np.float32 and grad.dtype == np.float32
    ints = F.cumsum(np.array([1, 2, 3], np.int32))
    assert ints.dtype == np.cumsum(np.array([1, 2, 3], np.int32)).dtype
    assert not ints.requires_grad


# ---- cumprod's gradient, term by term -------------------------------------------------------
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
    want = np.stack([_oracle(r, s) for r, s in zip(x, g, strict=True)])
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
