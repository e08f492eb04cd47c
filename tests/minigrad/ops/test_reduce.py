"""The reductions' rules beyond the case table, derived by hand.

prod and cumprod with 0, 1 and 2 zeros: exact gradients (docs/backward.md §21), and no
division by zero on the way (errors raised, not warned). std, norm and the
non-differentiable reductions (argmax, argmin, any, all): the rules at the points where the
gradient needs a convention (docs/backward.md §23). logsumexp against its composition from
primitive ops and against SciPy (logits of magnitude 1e4), and its exact gradient at large,
equal and infinite inputs. norm where Σ|x|^p leaves the dtype's range but the norm does
not: np.linalg.norm squares first, so ‖(1e30, 1e30)‖ in float32 would be inf (the squares
overflow) and ‖(1e-30, 1e-30)‖ 0 (they underflow), though both norms are ordinary float32
numbers (torch overflows the same way); for p = 1.5 at 1e200 a rounded exponent 1/p costs
2.6e-14 relative."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp
from helpers import assert_same_function, c_logsumexp, value_and_grads

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(7)


def _grad(fn, x, g, dtype=np.float64):
    t = mg.Tensor(np.asarray(x, dtype), requires_grad=True)
    with np.errstate(all="raise"):  # a division by zero (or 0/0) would raise here
        out = fn(t)
        out.backward(np.asarray(g, dtype))
    return out, t.grad


# ā_k = ḡ Π_{j != k} x_j
PROD = [
    ([2.0, 3.0, 4.0], [12.0, 8.0, 6.0]),  # no zero: the product of the others
    ([2.0, 0.0, 4.0], [0.0, 8.0, 0.0]),  # one zero: the others' product at it, 0 elsewhere
    ([0.0, 3.0, 0.0], [0.0, 0.0, 0.0]),  # two zeros: every product of others holds one
    ([0.0], [1.0]),  # one element: the empty product
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("x, expected", PROD, ids=["no-zero", "one-zero", "two-zeros", "single"])
def test_prod_gradient_with_zeros(x, expected, dtype):
    out, g = _grad(F.prod, x, 1.5, dtype)
    assert out.dtype == dtype and g.dtype == dtype
    np.testing.assert_array_equal(g, 1.5 * np.array(expected, dtype))


def test_prod_gradient_with_zeros_along_an_axis():
    x = [[2.0, 0.0, 4.0], [1.0, 2.0, 3.0], [0.0, 5.0, 0.0]]
    _, g = _grad(lambda t: F.prod(t, axis=1), x, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(g, [[0, 8, 0], [12, 6, 4], [0, 0, 0]])
    _, g = _grad(lambda t: F.prod(t, axis=0, keepdims=True), np.transpose(x), [[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(g, np.transpose([[0, 8, 0], [12, 6, 4], [0, 0, 0]]))
    _, g = _grad(F.prod, [[1.0, 2.0], [0.0, 3.0]], 1.0)  # all axes, one zero
    np.testing.assert_array_equal(g, [[0, 0], [6, 0]])


# ā_k = Σ_{i >= k} ḡ_i Π_{j <= i, j != k} x_j
CUMPROD = [
    ([2.0, 3.0, 4.0], [1.0, 1.0, 1.0], [1 + 3 + 12, 2 + 8, 6]),
    ([2.0, 0.0, 4.0], [1.0, 1.0, 1.0], [1, 2 + 8, 0]),
    ([2.0, 0.0, 4.0, 5.0], [1.0, 2.0, 3.0, 4.0], [1, 2 * 2 + 3 * 8 + 4 * 40, 0, 0]),
    ([0.0, 2.0, 3.0], [1.0, 1.0, 1.0], [1 + 2 + 6, 0, 0]),  # the zero first
    ([0.0, 3.0, 0.0, 5.0], [1.0, 1.0, 1.0, 1.0], [1 + 3, 0, 0, 0]),  # two zeros
    ([1.0, 2.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [1 + 2, 1, 2, 0]),  # two at the end
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("x, g, expected", CUMPROD,
                         ids=["no-zero", "one-zero", "one-zero-weighted", "zero-first",
                              "two-zeros", "two-zeros-last"])
def test_cumprod_gradient_with_zeros(x, g, expected, dtype):
    out, grad = _grad(lambda t: F.cumprod(t, axis=0), x, g, dtype)
    np.testing.assert_array_equal(out.data, np.cumprod(np.asarray(x, dtype)))
    assert grad.dtype == dtype
    np.testing.assert_array_equal(grad, np.array(expected, dtype))


def test_cumprod_lanes_with_different_zeros_along_axis_1_and_flattened():
    rows = [r for r, _, _ in CUMPROD[:2]]  # two lanes of length 3, one with a zero
    gs = [g for _, g, _ in CUMPROD[:2]]
    _, grad = _grad(lambda t: F.cumprod(t, axis=1), rows, gs)
    np.testing.assert_array_equal(grad, [e for _, _, e in CUMPROD[:2]])
    _, grad = _grad(lambda t: F.cumprod(t, axis=0), np.transpose(rows), np.transpose(gs))
    np.testing.assert_array_equal(grad, np.transpose([e for _, _, e in CUMPROD[:2]]))
    # axis=None scans the flattened array: one lane [2, 0, 4, 5], shaped (2, 2)
    x, g, expected = CUMPROD[2]
    _, grad = _grad(F.cumprod, np.reshape(x, (2, 2)), g)
    np.testing.assert_array_equal(grad, np.reshape(expected, (2, 2)))


def test_prod_of_integers_is_not_differentiable_and_keeps_numpys_dtype():
    out = F.prod(np.array([[1, 2], [3, 4]]), axis=0)
    assert out.dtype == np.prod(np.array([[1, 2], [3, 4]]), axis=0).dtype
    assert not out.requires_grad


# ---- std, norm, argmax, argmin, any, all: the rules at the conventions (docs/backward.md §23) ---
def _grad_at(fn, x, g=1.0):
    t = mg.Tensor(np.asarray(x, float), requires_grad=True)
    out = fn(t)
    out.backward(np.broadcast_to(np.asarray(g, float), out.shape).copy())
    return out, t.grad


@pytest.mark.parametrize("name", ["argmax", "argmin", "any", "all"])
def test_index_and_truth_reductions_return_arrays_not_tensors(name):
    x = mg.Tensor(np.array([[1.0, 5.0, 5.0], [-2.0, 0.0, 7.0]]), requires_grad=True)
    for kw in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}):
        got = getattr(F, name)(x, **kw)
        assert type(got) is np.ndarray, type(got)
        np.testing.assert_array_equal(got, getattr(np, name)(x.data, **kw))
    assert x.grad is None and x.is_leaf


def test_argmax_ties_take_the_first_as_numpy():
    assert F.argmax(np.array([1.0, 5.0, 5.0])) == 1
    assert F.argmin(mg.Tensor(np.array([3.0, -1.0, -1.0]))) == 1


def test_any_all_of_a_comparison():
    x = mg.Tensor(np.array([0.5, 2.0, -1.0]), requires_grad=True)
    assert F.any(x > 1.0).dtype == np.bool_ and bool(F.any(x > 1.0))
    assert not bool(F.all(x > 0.0))


def test_std_gradient_of_a_constant_slice_is_zero_not_nan():
    """√var has no derivative at var = 0; 0 is a subgradient (std is a scaled norm of
    x - mean), and it is what PyTorch gives."""
    _, g = _grad_at(lambda t: F.std(t, axis=1), [[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]], [1.0, 1.0])
    np.testing.assert_array_equal(g[1], [0.0, 0.0, 0.0])
    # the first row: (x - μ) / (n σ), μ = 7/3, σ² = ((4/3)² + (1/3)² + (5/3)²) / 3 = 14/9
    d = np.array([1.0, 2.0, 4.0]) - 7 / 3
    np.testing.assert_allclose(g[0], d / (3 * np.sqrt(14 / 9)), rtol=1e-14)


def test_std_is_the_square_root_of_var_with_ddof():
    x = np.random.default_rng(7).standard_normal((4, 5))
    for ddof in (0, 1, 2):
        np.testing.assert_allclose(F.std(x, axis=0, ddof=ddof).data,
                                   np.sqrt(np.var(x, axis=0, ddof=ddof)), rtol=1e-15)


@pytest.mark.parametrize("ord", [None, 2, 3, 1, 0.5, np.inf])
def test_norm_gradient_at_zero_is_zero(ord):
    """At x = 0 every vector norm has a subgradient 0 (the unit ball of the dual norm holds
    0): the rule PyTorch follows."""
    _, g = _grad_at(lambda t: F.norm(t, ord=ord), [0.0, 0.0, 0.0], 2.0)
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])


def test_norm_gradients_derived_by_hand():
    x = [3.0, -4.0]
    _, g = _grad_at(F.norm, x)  # x / |x| = (0.6, -0.8)
    np.testing.assert_allclose(g, [0.6, -0.8], rtol=1e-15)
    _, g = _grad_at(lambda t: F.norm(t, 1), [3.0, -4.0, 0.0])  # sign(x), 0 at 0
    np.testing.assert_array_equal(g, [1.0, -1.0, 0.0])
    _, g = _grad_at(lambda t: F.norm(t, np.inf), [-2.0, 2.0, 1.0])  # ties share: ±1/2
    np.testing.assert_array_equal(g, [-0.5, 0.5, 0.0])
    _, g = _grad_at(lambda t: F.norm(t, -np.inf), [-2.0, 1.0, -1.0])
    np.testing.assert_array_equal(g, [0.0, 0.5, -0.5])
    _, g = _grad_at(lambda t: F.norm(t, 0), [3.0, 0.0, 1.0])  # a count: piecewise constant
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])
    # p = 3: sign(x) |x|² / out², out = (27 + 64)^(1/3)
    out, g = _grad_at(lambda t: F.norm(t, 3), x)
    np.testing.assert_allclose(g, np.array([9.0, -16.0]) / 91.0 ** (2 / 3), rtol=1e-14)
    # a zero element with p < 1: 0 there (|x|^(p-1) is infinite), as PyTorch
    _, g = _grad_at(lambda t: F.norm(t, 0.5), [0.0, 4.0])
    np.testing.assert_allclose(g, [0.0, 1.0], rtol=1e-15)


def test_norm_frobenius_and_axes_are_numpys():
    x = np.random.default_rng(8).standard_normal((2, 3, 4))
    for kw in ({}, {"axis": 1}, {"axis": (0, 2)}, {"axis": (2, 0), "keepdims": True},
               {"ord": 3, "axis": -1}, {"ord": "fro", "axis": (0, 1)}):
        np.testing.assert_allclose(F.norm(x, **kw).data, np.linalg.norm(x, **kw), rtol=1e-14)
    m = x[0]
    np.testing.assert_allclose(F.norm(m, "fro").data, np.linalg.norm(m, "fro"), rtol=1e-15)


def test_norm_keeps_float32_and_takes_integers_as_float64():
    t = mg.Tensor(np.array([3.0, 4.0], np.float32), requires_grad=True)
    out = F.norm(t)
    assert out.dtype == np.float32
    out.backward()
    assert t.grad.dtype == np.float32
    assert F.norm(np.array([3, 4])).dtype == np.float64


# ---- a 0-d array reduced over axis 0 or -1 ----------------------------------------------------
# NumPy's ufunc reductions (np.sum, np.prod, np.max, np.min) take an int axis 0 or -1 on a 0-d
# array and return it (a tuple axis (0,) is out of bounds there); np.mean, np.var, np.std and
# np.linalg.norm refuse any axis of a 0-d array. minigrad follows NumPy in both.
ZERO_D_REDUCTIONS = ["sum", "prod", "max", "min"]


@pytest.mark.parametrize("axis", [0, -1, np.int64(0), np.int8(-1)], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ZERO_D_REDUCTIONS)
def test_a_0d_array_reduced_over_axis_0_or_minus_1_is_itself_as_numpy(name, dtype, keepdims, axis):
    x = np.array(-2.5, dtype)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    out, grad = _grad(lambda t: getattr(F, name)(t, axis=axis, keepdims=keepdims), x, 1.75, dtype)
    assert out.shape == np.shape(want) == ()
    assert out.dtype == np.asarray(want).dtype == dtype
    np.testing.assert_array_equal(out.data, want)
    assert grad.shape == () and grad.dtype == dtype
    np.testing.assert_array_equal(grad, 1.75)  # out = x: ā = ḡ


@pytest.mark.parametrize("x", [np.array(3), np.array(True), np.array(7, np.int8)], ids=str)
@pytest.mark.parametrize("name", ZERO_D_REDUCTIONS)
def test_a_0d_integer_or_bool_array_reduced_over_axis_0_has_numpys_value_and_dtype(name, x):
    want = getattr(np, name)(x, axis=0)
    out = getattr(F, name)(x, axis=-1)
    assert out.dtype == np.asarray(want).dtype and out.shape == ()
    np.testing.assert_array_equal(out.data, want)


@pytest.mark.parametrize("name", ZERO_D_REDUCTIONS + ["mean", "var", "std", "norm"])
@pytest.mark.parametrize("axis", [(0,), (-1,), 1, -2])
def test_a_0d_array_refuses_a_tuple_axis_or_another_axis_as_numpy(name, axis):
    x = np.array(1.5)
    ref = np.linalg.norm if name == "norm" else getattr(np, name)
    with pytest.raises(np.exceptions.AxisError):
        ref(x, axis=axis)
    with pytest.raises(np.exceptions.AxisError):
        getattr(F, name)(mg.Tensor(x, requires_grad=True), axis=axis)


@pytest.mark.parametrize("name", ["mean", "var", "std", "norm"])
@pytest.mark.parametrize("axis", [0, -1])
def test_mean_var_std_norm_of_a_0d_array_refuse_axis_0_as_numpy(name, axis):
    x = np.array(1.5)
    ref = np.linalg.norm if name == "norm" else getattr(np, name)
    with pytest.raises(np.exceptions.AxisError):
        ref(x, axis=axis)
    with pytest.raises(np.exceptions.AxisError):
        getattr(F, name)(mg.Tensor(x, requires_grad=True), axis=axis)


@pytest.mark.parametrize("name", ["argmax", "argmin", "any", "all", "cumsum", "cumprod",
                                  "logsumexp", "logcumsumexp"])
@pytest.mark.parametrize("axis", [0, -1])
def test_the_other_reductions_and_scans_of_a_0d_array_over_axis_0_are_numpys(name, axis):
    x = np.array(0.75)
    refs = {"logsumexp": lambda a, axis: a * 1.0,  # ln e^a; a scan of a 0-d array is (1,)
            "logcumsumexp": lambda a, axis: np.reshape(a * 1.0, 1)}
    ref = refs[name] if name in refs else getattr(np, name)
    out = getattr(F, name)(x, axis=axis)
    want = ref(x, axis=axis)
    data = out.data if isinstance(out, mg.Tensor) else out
    assert data.shape == np.shape(want) and data.dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(data, want)


# ---- logsumexp against its composition and SciPy --------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (2, 1, 0)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_equals_composition(axis, keepdims):
    x = RNG.standard_normal((2, 3, 4)) * 3
    assert_same_function(lambda t: F.logsumexp(t, axis=axis, keepdims=keepdims),
                         lambda t: c_logsumexp(t, axis, keepdims), [x])


@pytest.mark.parametrize("scale", [1.0, 1e4, -1e4])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (1, False), (-1, True),
                                           ((0, 2), False), ((0, 2), True)])
def test_logsumexp_matches_scipy(scale, axis, keepdims):
    x = RNG.standard_normal((3, 4, 5)) * scale
    v, (g,), cot = value_and_grads(lambda t: F.logsumexp(t, axis=axis, keepdims=keepdims), [x])
    expected = sp.logsumexp(x, axis=axis, keepdims=keepdims)
    assert v.shape == np.shape(expected)
    np.testing.assert_allclose(v, expected, rtol=1e-13)
    lse = sp.logsumexp(x, axis=axis, keepdims=True)
    np.testing.assert_allclose(g, np.reshape(cot, lse.shape) * np.exp(x - lse), rtol=1e-9,
                               atol=1e-300)
    assert np.all(np.isfinite(g))


# ---- logsumexp's gradient at large and infinite inputs --------------------------------------
def _lse_grad(x, axis=-1, keepdims=False, seed=0):
    """logsumexp's value and gradient for a non-uniform cotangent (and the cotangent)."""
    t = mg.Tensor(x.copy(), requires_grad=True)
    out = F.logsumexp(t, axis=axis, keepdims=keepdims)
    cot = np.random.default_rng(seed).uniform(0.5, 2.0, out.shape).astype(x.dtype)
    with np.errstate(invalid="ignore"):  # a nan row
        out.backward(cot)
    return out.data, t.grad, cot


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_gradient_of_large_equal_inputs_is_the_uniform_softmax(dtype):
    """x̄ = g softmax(x): ¼ of g to each of four equal inputs, however large. e^(x - y) with y
    rounded to its ulp gave 1 each at 1e20 (float64) and e^-1 each at 1e7 (float32)."""
    x = np.array([[1e20] * 4, [-1e20] * 4, [1e7] * 4, [-3e7] * 4, [0.5] * 4], dtype)
    _, grad, cot = _lse_grad(x)
    np.testing.assert_array_equal(grad, np.repeat(cot[:, None] / 4, 4, axis=1))  # exact
    assert grad.dtype == dtype
    _, grad, cot = _lse_grad(np.full((3, 4), 1e20, dtype), axis=None)  # one slice of 12
    np.testing.assert_allclose(grad, np.full((3, 4), cot / 12), rtol=4 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_gradient_of_large_inputs_one_apart_is_their_softmax(dtype):
    """[b, b, b + 1, b - 2] with b = 1e7 (all exact in float32): softmax of [0, 0, 1, -2]."""
    b = 1e7
    x = np.array([[b, b, b + 1, b - 2], [-b, -b, -b + 1, -b - 2]], dtype)
    _, grad, cot = _lse_grad(x, keepdims=True)
    e = np.exp([0.0, 0.0, 1.0, -2.0])
    expected = cot * (e / e.sum())  # cot (2, 1) broadcasts
    np.testing.assert_allclose(grad, expected, rtol=8 * np.finfo(dtype).eps)


def test_logsumexp_gradient_at_infinities():
    """The softmax's limit: a +inf takes the whole gradient from the finite inputs, several
    +inf share it equally, and an all -inf slice shares it equally too (its limit along
    x = t·1, t -> -inf; PyTorch gives nan for all three); a nan keeps its slice nan."""
    inf, nan = np.inf, np.nan
    x = np.array([[inf, 1.0, -inf, 2.0], [inf, -inf, inf, 0.0], [-inf] * 4,
                  [-inf, 3.0, -inf, -inf], [nan, 1.0, 2.0, 3.0]])
    out, grad, cot = _lse_grad(x)
    np.testing.assert_array_equal(out, [inf, inf, -inf, 3.0, nan])
    share = np.array([[1, 0, 0, 0], [0.5, 0, 0.5, 0], [0.25] * 4, [0, 1, 0, 0], [nan] * 4])
    np.testing.assert_array_equal(grad, cot[:, None] * share)
    out, grad, cot = _lse_grad(np.array([[inf, 1.0], [2.0, inf]]), axis=None)
    assert out == inf
    np.testing.assert_array_equal(grad, cot * np.array([[0.5, 0], [0, 0.5]]))


# ---- norm where the powers leave the dtype's range ------------------------------------------
@pytest.mark.parametrize("dtype, v", [(np.float32, 1e30), (np.float32, 1e-30),
                                      (np.float64, 1e200), (np.float64, 1e-200),
                                      (np.float64, 1e-310)])
@pytest.mark.parametrize("ord", [None, 2, 3, 1.5])
def test_norm_of_values_whose_powers_leave_the_range(dtype, v, ord):
    x = np.array([[v, -v, 0.0], [v, 0.0, 0.0]], dtype)
    p = 2 if ord is None else ord
    t = mg.Tensor(x.copy(), requires_grad=True)
    out = F.norm(t, ord=ord, axis=1)
    out.backward(np.ones(2, dtype))
    # by hand: row 0 has two entries of |v|, row 1 one: ‖·‖ = |v| 2^(1/p) and |v|
    want = np.array([v * 2 ** (1 / p), v])
    eps = np.finfo(dtype).eps
    tiny = np.finfo(dtype).smallest_subnormal
    np.testing.assert_allclose(out.data, want.astype(dtype), rtol=8 * eps, atol=4 * tiny)
    # ∂‖x‖/∂x_i = sign(x_i) (|x_i| / ‖x‖)^(p-1): ±2^(-(p-1)/p) in row 0, 1 in row 1
    c = 2 ** (-(p - 1) / p)
    grad = np.array([[c, -c, 0.0], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(t.grad, grad, rtol=64 * eps if v > 1e-300 else 1e-3)


def test_norm_keeps_its_bits_for_ordinary_values():
    x = np.random.default_rng(5).standard_normal((4, 7))
    np.testing.assert_array_equal(F.norm(x, axis=1).data, np.linalg.norm(x, axis=1))
    np.testing.assert_array_equal(F.norm(x, ord=1, axis=0).data,
                                  np.linalg.norm(x, ord=1, axis=0))
    # other orders are scaled to ~1 first: as np.linalg.norm to a few ulps there
    np.testing.assert_allclose(F.norm(x, ord=3, axis=0).data, np.linalg.norm(x, ord=3, axis=0),
                               rtol=8 * np.finfo(np.float64).eps)
