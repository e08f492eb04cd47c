"""Every public op: values against NumPy/SciPy and VJPs against finite differences (float64).

The cases live in ``op_cases/`` (``OP_CASES``, one module per op family): several shapes per op, broadcasting with
size-1 dims and rank promotion, every reduction axis form, every index kind, every matmul
rank combination. The exact tie rules are checked here with hand-derived expected values.
"""
from __future__ import annotations

import pkgutil

import numpy as np
import op_cases  # the case table: one module per op family
import pytest
from helpers import leaves
from op_cases import OP_CASES

import minigrad as mg
from minigrad import F
from minigrad.ops import PUBLIC_OPS


def test_every_public_op_has_gradcheck_cases():
    assert set(OP_CASES) == set(PUBLIC_OPS), (
        f"ops without cases: {sorted(set(PUBLIC_OPS) - set(OP_CASES))}; "
        f"cases for unknown ops: {sorted(set(OP_CASES) - set(PUBLIC_OPS))}")
    for name in PUBLIC_OPS:
        assert callable(getattr(F, name)), name
        assert len(OP_CASES[name]) >= 2, f"{name}: expected several shapes/variants"


def test_every_case_module_is_named_after_an_op_family():
    """op_cases/<family>.py for minigrad/ops/<family>.py: an op's cases are one hop away."""
    families = {m.name for m in pkgutil.iter_modules(mg.ops.__path__)}
    modules = {m.name for m in pkgutil.iter_modules(op_cases.__path__)}
    assert modules - set(op_cases.NOT_FAMILIES) <= families, sorted(modules - families)


def test_value_matches_numpy_reference(mg_op_case):
    case = mg_op_case
    out = case.fn(*leaves(case.inputs, np.float64))
    expected = np.asarray(case.ref(*case.inputs))
    assert isinstance(out, mg.Tensor)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.data, expected, rtol=1e-11, atol=1e-12)


def test_gradcheck_float64(mg_op_case):
    case = mg_op_case
    inputs = [x.copy() for x in case.inputs]
    kw = dict(atol=1e-7, rtol=1e-6)  # central differences are good to ~1e-9 here
    kw.update(case.gc)
    report = mg.gradcheck(case.fn, inputs, **kw)
    assert report.ok
    assert report.inputs, "no input was checked"


def test_gradcheck_catches_a_wrong_vjp():
    """The checks above can fail: a getitem VJP that assigns instead of accumulating is caught
    on repeated indices (and only there)."""
    @mg.op
    def bad_take(a, idx):
        def vjp(g):
            ga = np.zeros_like(a)
            ga[idx] = g  # repeated indices overwrite: the bug
            return ga
        return a[idx], vjp

    x = np.random.default_rng(0).standard_normal(5)
    mg.gradcheck(lambda t: bad_take(t, np.array([0, 1, 3])), [x])
    with pytest.raises(mg.GradcheckError):
        mg.gradcheck(lambda t: bad_take(t, np.array([0, 1, 1, 3])), [x])


# ---- exact gradients: the documented rules ---------------------------------------------------

def _grad(fn, *arrays, cot=None):
    ts = [mg.Tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(np.ones(out.shape) if cot is None else np.asarray(cot, dtype=np.float64))
    return [t.grad for t in ts]


@pytest.mark.parametrize("name", ["max", "min"])
def test_reduction_ties_split_evenly(name):
    sign = 1.0 if name == "max" else -1.0
    f = getattr(F, name)
    x = sign * np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [5.0, 1.0, 0.0, 4.0]])
    g = np.array([0.6, -1.2, 2.0])
    (gx,) = _grad(lambda t: f(t, axis=1), x, cot=g)
    expected = np.array([[0, 0.3, 0.3, 0], [-0.3, -0.3, -0.3, -0.3], [2.0, 0, 0, 0]])
    np.testing.assert_array_equal(gx, expected)
    (gk,) = _grad(lambda t: f(t, axis=-1, keepdims=True), x, cot=g[:, None])
    np.testing.assert_array_equal(gk, expected)
    # all axes: the extreme value 5 is unique; 3 ties in the first row only matter along rows
    y = sign * np.array([[4.0, 1.0], [4.0, 4.0]])
    (gy,) = _grad(lambda t: f(t), y, cot=0.9)
    np.testing.assert_allclose(gy, [[0.3, 0.0], [0.3, 0.3]], rtol=1e-15)
    (gz,) = _grad(lambda t: f(t, axis=(0, 1), keepdims=True), y, cot=[[0.9]])
    np.testing.assert_allclose(gz, [[0.3, 0.0], [0.3, 0.3]], rtol=1e-15)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_binary_ties_split_half_half(name):
    f = getattr(F, name)
    sign = 1.0 if name == "maximum" else -1.0
    a = sign * np.array([1.0, 2.0, 3.0, -1.0])
    b = sign * np.array([1.0, 0.0, 5.0, -1.0])
    g = np.array([2.0, 3.0, 4.0, -6.0])
    ga, gb = _grad(f, a, b, cot=g)
    np.testing.assert_array_equal(ga, [1.0, 3.0, 0.0, -3.0])
    np.testing.assert_array_equal(gb, [1.0, 0.0, 4.0, -3.0])
    # broadcast tie: a 0-d b equal to two of a's elements collects their halves
    ga, gb = _grad(f, sign * np.array([2.0, 2.0, 1.0]), sign * np.array(2.0), cot=g[:3])
    np.testing.assert_array_equal(ga, [1.0, 1.5, 0.0])
    assert gb.shape == () and gb == 1.0 + 1.5 + 4.0


def test_getitem_repeated_indices_accumulate():
    x = np.arange(5.0)
    (g,) = _grad(lambda t: t[np.array([0, 0, 3, 0, 4, 3])], x, cot=[1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(g, [7.0, 0.0, 0.0, 9.0, 5.0])
    (g,) = _grad(lambda t: t[[1, 1], [2, 2]], np.ones((2, 3)), cot=[0.5, 0.25])
    np.testing.assert_array_equal(g, [[0, 0, 0], [0, 0, 0.75]])
    (g,) = _grad(lambda t: t[mg.Tensor(np.array([[2, 2], [2, 1]]))], x, cot=[[1, 1], [1, 10]])
    np.testing.assert_array_equal(g, [0.0, 10.0, 3.0, 0.0, 0.0])


def test_getitem_boolean_mask_gradient_lands_on_selected():
    x = np.arange(6.0).reshape(2, 3)
    mask = np.array([[True, False, True], [False, True, False]])
    (g,) = _grad(lambda t: t[mask], x, cot=[1.0, 2.0, 3.0])
    np.testing.assert_array_equal(g, [[1.0, 0, 2.0], [0, 3.0, 0]])


def test_kink_conventions():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    (g,) = _grad(lambda t: F.clip(t, 0.0, 1.0), x)
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 0])  # at a bound it passes (closed interval)
    (g,) = _grad(F.abs, x)
    np.testing.assert_array_equal(g, [-1, 0, 1, 1, 1])
    (g,) = _grad(F.relu, x)
    np.testing.assert_array_equal(g, [0, 0, 1, 1, 1])


def test_pow_exponent_gradient_at_zero_base():
    with np.errstate(divide="ignore"):  # d/da a^0.5 at a = 0 is +inf
        ga, gb = _grad(F.pow, [0.0, 0.0, 2.0], [2.0, 0.5, 3.0])
    np.testing.assert_allclose(gb, [0.0, 0.0, 8.0 * np.log(2.0)], rtol=1e-15)
    np.testing.assert_allclose(ga, [0.0, np.inf, 12.0])
    # a^0 = 1 is constant in a: its gradient is 0, also at a = 0 (not 0 * inf = nan)
    ga, gb = _grad(F.pow, [0.0, 0.0, 3.0], [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(ga, [0.0, 1.0, 0.0])
    np.testing.assert_allclose(gb, [0.0, 0.0, np.log(3.0)], rtol=1e-15)
    for e in (0, 0.0):
        (ga,) = _grad(lambda t, e=e: t ** e, [0.0, -2.0, 1.5])
        np.testing.assert_array_equal(ga, [0.0, 0.0, 0.0])


def test_split_values_and_shared_gradient():
    x = np.arange(24.0).reshape(2, 3, 4)
    for how, axis in [(2, 0), (3, 1), ([1, 3], -1)]:
        pieces = F.split(mg.Tensor(x), how, axis=axis)
        for p, q in zip(pieces, np.split(x, how, axis=axis), strict=True):
            np.testing.assert_array_equal(p.data, q)
    # pieces used together: the gradients of the pieces land in disjoint parts of x
    (g,) = _grad(lambda t: F.split(t, [1, 3], axis=-1)[0] * 2 + F.split(t, [1, 3], axis=-1)[2],
                 np.ones((2, 4)))
    np.testing.assert_array_equal(g, [[2, 0, 0, 1], [2, 0, 0, 1]])
    with pytest.raises(ValueError, match="indices_or_sections"):
        F.split(mg.Tensor(x), 5, axis=2)


def test_shared_input_gradients_accumulate_across_ops():
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    (g,) = _grad(lambda t: F.sum(t * t) + F.sum(F.matmul(t, t)), x)
    # d/dx Σ x² = 2x;  d/dx Σ (x x) = 1 xᵀ + xᵀ 1 with 1 the all-ones matrix
    ones = np.ones((2, 2))
    np.testing.assert_allclose(g, 2 * x + ones @ x.T + x.T @ ones, rtol=1e-14)


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")  # np.var's own
def test_var_with_ddof_at_least_n_follows_numpy():
    """n - ddof <= 0 counts as 0 (NumPy, PyTorch): inf or nan, never an exception or a
    negative 'variance'."""
    for x, ddof in [([1.0, 2.0], 2), ([1.0, 2.0], 3), ([3.0], 1)]:
        with np.errstate(divide="ignore", invalid="ignore"):
            t = mg.Tensor(np.array(x), requires_grad=True)
            v = F.var(t, ddof=ddof)
            v.backward()
            expected = np.var(x, ddof=ddof)
        np.testing.assert_array_equal(v.data, expected)
        assert not np.any(np.isfinite(t.grad))


def test_concatenate_and_stack_accept_a_generator():
    xs = [mg.Tensor(np.full(2, float(i)), requires_grad=True) for i in range(3)]
    out = F.concatenate(x * (i + 1.0) for i, x in enumerate(xs))
    out.backward(np.ones(6))
    out = F.stack((x * (i + 1.0) for i, x in enumerate(xs)), axis=1)
    out.backward(np.ones((2, 3)))
    for i, x in enumerate(xs):
        np.testing.assert_array_equal(x.grad, np.full(2, 2.0 * (i + 1)))


def test_tensor_arguments_by_keyword():
    rng = np.random.default_rng(3)
    x = mg.Tensor(rng.standard_normal((2, 3)), requires_grad=True)
    w = mg.Tensor(rng.standard_normal(3), requires_grad=True)
    b = mg.Tensor(rng.standard_normal(3), requires_grad=True)
    F.sum(F.layer_norm(x, weight=w, bias=b) * F.layer_norm(x, w, b)).backward()
    assert w.grad is not None and b.grad is not None
    F.cross_entropy(x, target=mg.Tensor(np.array([0, 2])))


def test_linear_with_empty_feature_axes():
    """k = 0 gives zeros; n = 0 gives an empty output; the gradients keep their shapes."""
    x, w = mg.Tensor(np.ones((3, 0)), requires_grad=True), mg.Tensor(np.ones((0, 4)),
                                                                      requires_grad=True)
    y = F.linear(x, w)
    y.backward(np.ones((3, 4)))
    assert np.array_equal(y.data, np.zeros((3, 4)))
    assert x.grad.shape == (3, 0) and w.grad.shape == (0, 4)
    x, w, b = (mg.Tensor(np.ones(s), requires_grad=True) for s in [(2, 3, 2), (2, 0), (0,)])
    y = F.linear(x, w, b)
    y.backward(np.ones((2, 3, 0)))
    assert y.shape == (2, 3, 0)
    assert np.array_equal(x.grad, np.zeros((2, 3, 2))) and w.grad.shape == (2, 0)
