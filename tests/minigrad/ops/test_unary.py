"""The elementwise functions at the points docs/backward.md §24 lists: where a derivative is
undefined, what is returned there; mod's sign convention; dtypes.

Near their singular points the inverse-trig VJPs are checked against exact rationals:
``1 - a*a`` cancels as |a| -> 1 (for a = 1 - 2^-30 it is off by 2^-31 relative), which put
the gradients of arcsin, arccos and arctanh about a million ulps off there (torch computes
the same formula); ``1 + a*a`` overflows past |a| ~ 1.3e154, which made arcsinh's gradient
1/sqrt(1 + a^2) ~ 1/|a| (an ordinary number) come out 0. Likewise expm1's gradient where
out rounds to -1, and arctan2's where a² + b² leaves the range."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from helpers import grad_of

import minigrad as mg
from minigrad import F


def _grads(fn, *xs, g=None):
    ts = [mg.Tensor(np.asarray(x, float), requires_grad=True) for x in xs]
    with np.errstate(all="ignore"):
        out = fn(*ts)
        out.backward(np.ones(out.shape) if g is None else np.asarray(g, float))
    return out, [t.grad for t in ts]


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "trunc"])
def test_piecewise_constant_functions_have_zero_gradient_even_at_their_jumps(name):
    x = [-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5, 0.3]  # jumps of each one among them
    out, (g,) = _grads(getattr(F, name), x)
    np.testing.assert_array_equal(out.data, getattr(np, name)(x))
    np.testing.assert_array_equal(g, np.zeros(len(x)))
    assert g.dtype == np.float64


def test_round_halves_to_even_with_decimals_as_numpy():
    x = np.array([0.5, 1.5, 2.5, -0.5, 1.25, 12.5])
    np.testing.assert_array_equal(F.round(x).data, [0.0, 2.0, 2.0, -0.0, 1.0, 12.0])
    np.testing.assert_array_equal(F.round(x, 1).data, np.round(x, 1))
    np.testing.assert_array_equal(F.round(x, -1).data, np.round(x, -1))


def test_mod_takes_the_sign_of_the_divisor_and_its_gradients():
    """np.mod (torch.remainder): a - ⌊a/b⌋ b. ā = 1, b̄ = -⌊a/b⌋."""
    a, b = [5.5, -5.5, 5.5, -5.5], [2.0, 2.0, -2.0, -2.0]
    out, (ga, gb) = _grads(F.mod, a, b)
    np.testing.assert_array_equal(out.data, [1.5, 0.5, -0.5, -1.5])
    np.testing.assert_array_equal(ga, [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(gb, [-2.0, 3.0, 3.0, -2.0])  # -⌊2.75⌋, -⌊-2.75⌋, ...


def test_mod_broadcast_divisor_collects_its_gradient():
    out, (ga, gb) = _grads(F.mod, [[5.5, 1.0], [-3.0, 7.0]], [2.0, 3.0])
    # b̄_j = -Σ_i ⌊a_ij / b_j⌋: column 0: -(2 + -2) = 0, column 1: -(0 + 2) = -2
    np.testing.assert_array_equal(gb, [0.0, -2.0])
    np.testing.assert_array_equal(ga, np.ones((2, 2)))


def test_hypot_and_arctan2_at_the_origin_give_zero():
    """hypot is the 2-norm of (a, b): 0 is its subgradient at the origin (PyTorch gives nan
    there). atan2 has no limit at the origin; PyTorch gives 0, and so do we."""
    _, (ga, gb) = _grads(F.hypot, [0.0, 3.0], [0.0, -4.0])
    np.testing.assert_array_equal(ga, [0.0, 0.6])
    np.testing.assert_array_equal(gb, [0.0, -0.8])
    _, (ga, gb) = _grads(F.arctan2, [0.0, 1.0], [0.0, 1.0])
    np.testing.assert_array_equal(ga, [0.0, 0.5])  # b / (a² + b²)
    np.testing.assert_array_equal(gb, [0.0, -0.5])  # -a / (a² + b²)


def test_domain_edges_follow_the_formula_as_pytorch():
    """Outside a domain NumPy's value is nan and so is the gradient; at its edge the
    derivative's limit (±inf) is returned."""
    _, (g,) = _grads(F.arcsin, [1.0, -1.0, 0.0])
    np.testing.assert_array_equal(g, [np.inf, np.inf, 1.0])
    _, (g,) = _grads(F.arctanh, [1.0, 0.5])
    np.testing.assert_allclose(g, [np.inf, 4 / 3], rtol=1e-15)
    _, (g,) = _grads(F.rsqrt, [0.0, 4.0])  # -½ out³ = -1/16 at 4
    np.testing.assert_array_equal(g, [-np.inf, -1 / 16])
    _, (g,) = _grads(F.log1p, [-1.0])
    np.testing.assert_array_equal(g, [np.inf])


def test_logaddexp_of_large_values_is_exact_and_its_gradient_a_softmax():
    out, (ga, gb) = _grads(F.logaddexp, [1000.0, -1000.0], [1000.0, -1000.0])
    np.testing.assert_allclose(out.data, [1000 + np.log(2), -1000 + np.log(2)], rtol=1e-15)
    np.testing.assert_allclose(ga, [0.5, 0.5], rtol=1e-12)
    np.testing.assert_allclose(gb, [0.5, 0.5], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logaddexp_gradient_splits_equally_for_large_equal_inputs(dtype):
    """∂/∂a ln(e^a + e^b) = σ(a - b): ½ wherever a = b, however large. e^(a - out) with out
    rounded lost it (1e20 gave 1 and 1 in float64; 1e7 gave e^-1 in float32)."""
    x = np.array([1e20, -1e20, 1e7, -1e7, 3e30, 0.25], dtype)
    g = np.random.default_rng(0).uniform(0.5, 2.0, x.shape).astype(dtype)
    ta, tb = (mg.Tensor(x.copy(), requires_grad=True) for _ in range(2))
    F.logaddexp(ta, tb).backward(g)
    # σ(0) = ½ and g · ½ are exact: bit-exact
    np.testing.assert_array_equal(ta.grad, g / 2)
    np.testing.assert_array_equal(tb.grad, g / 2)
    assert ta.grad.dtype == tb.grad.dtype == dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logaddexp_gradient_of_large_inputs_one_apart_is_the_sigmoid_of_their_difference(dtype):
    """a = 1e7, b = 1e7 + 1 (both exact in float32): ā = σ(-1) = 1 / (1 + e), b̄ = σ(1)."""
    a = np.array([1e7, -1e7 - 1], dtype)
    b = np.array([1e7 + 1, -1e7], dtype)
    ta, tb = mg.Tensor(a, requires_grad=True), mg.Tensor(b, requires_grad=True)
    F.logaddexp(ta, tb).backward(np.ones(2, dtype))
    low, high = 1 / (1 + np.e), 1 / (1 + np.exp(-1.0))
    tol = 4 * np.finfo(dtype).eps
    np.testing.assert_allclose(ta.grad, [low, low], rtol=tol)
    np.testing.assert_allclose(tb.grad, [high, high], rtol=tol)


def test_logaddexp_gradient_at_infinities():
    """σ(a - b) at its limits: an infinite argument takes the whole gradient from a finite or
    opposite one; equal infinities (where a - b is nan) split it ½ and ½, the limit along
    a = b, the value σ(0) has at every finite a = b (PyTorch gives nan for both); a nan
    argument keeps the gradient nan."""
    inf, nan = np.inf, np.nan
    a = [inf, -inf, inf, 1.0, -inf, 0.0, inf, -inf, nan, 1.0]
    b = [-inf, inf, 1.0, inf, 0.0, -inf, inf, -inf, 1.0, nan]
    out, (ga, gb) = _grads(F.logaddexp, a, b)
    with np.errstate(invalid="ignore"):  # nan in, nan out
        np.testing.assert_array_equal(out.data, np.logaddexp(a, b))
    np.testing.assert_array_equal(ga, [1, 0, 1, 0, 0, 1, 0.5, 0.5, nan, nan])
    np.testing.assert_array_equal(gb, [0, 1, 0, 1, 1, 0, 0.5, 0.5, nan, nan])


@pytest.mark.parametrize("name", ["sin", "exp2", "log10", "square", "reciprocal", "rsqrt",
                                  "arctan", "floor"])
def test_float32_stays_float32(name):
    t = mg.Tensor(np.array([0.5, 1.5, 2.0], np.float32), requires_grad=True)
    out = getattr(F, name)(t)
    assert out.dtype == np.float32
    out.backward(np.ones(3, np.float32))
    assert t.grad.dtype == np.float32


def test_integers_follow_numpy_and_rsqrt_computes_in_float64():
    x = np.array([1, 4, 9])
    assert F.sin(x).dtype == np.sin(x).dtype == np.float64
    assert F.square(x).dtype == x.dtype and not F.square(x).requires_grad
    np.testing.assert_array_equal(F.rsqrt(x).data, [1.0, 0.5, 1 / 3])
    assert F.rsqrt(x).dtype == np.float64


def test_sign_of_a_mask_is_refused_with_our_message():
    mask = np.array([[True, False, True], [False, False, True]])
    with pytest.raises(TypeError, match=r"^sign a: got a bool operand.*astype"):
        F.sign(mg.Tensor(mask))


# ---- inverse-trig, expm1 and arctan2 gradients near their singular points -------------------
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


@pytest.mark.parametrize("name, sign, f", [
    ("arcsin", 1, lambda d: 1 / np.sqrt(d)),
    ("arccos", -1, lambda d: -1 / np.sqrt(d)),
    ("arctanh", 1, lambda d: 1 / d),
])
def test_inverse_trig_gradients_near_one_are_exact_to_a_few_ulps(name, sign, f):
    if np.finfo(np.longdouble).nmant < 60:
        pytest.skip("needs an extended-precision long double for the oracle")
    got = grad_of(getattr(F, name), A)[1]
    want = _exact(A, f)
    assert np.all(np.abs(got - want) <= ULPS * np.spacing(np.abs(want))), (got, want)


def test_arcsinh_gradient_does_not_overflow():
    a = np.array([1e200, -1e300, 3e154, 2.0, 0.0])
    got = grad_of(F.arcsinh, a)[1]
    # 1 / sqrt(1 + a^2): for |a| >= 1e154, 1 + a^2 = a^2 to far below an ulp, so it is 1/|a|
    want = np.array([1e-200, 1e-300, 1 / 3e154, 1 / np.sqrt(5.0), 1.0])
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np.float64).eps)


def test_expm1_gradient_is_e_to_the_a_also_where_out_is_minus_one():
    # expm1(-40) rounds to -1.0, so g (out + 1) gave 0 where the gradient is e^-40 = 4.2e-18
    a = np.array([-40.0, -800.0, -1e-20, 0.0, 1.0, 30.0])
    got = grad_of(F.expm1, a)[1]
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
