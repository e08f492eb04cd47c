"""The gradient checker: it passes correct VJPs and names what is wrong in broken ones.

Each broken op below is a deliberate, realistic mistake written with ``mg.op``.
"""
from __future__ import annotations

from functools import partial

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(5)
leaf = partial(helpers.leaf, RNG, within=(0.5, 1.5))


# ---- deliberately wrong ops --------------------------------------------------------------
@mg.op
def wrong_sign_exp(x):
    out = np.exp(x)
    return out, lambda g: -g * out


@mg.op
def mean_forgets_n(x):
    return np.mean(x), lambda g: np.broadcast_to(g, x.shape)  # should be g / n


BAD_AT = (1, 2)


@mg.op
def square_one_bad_element(x):
    def vjp(g):
        gx = 2 * g * x
        gx[BAD_AT] += 1.0
        return gx
    return x * x, vjp


@mg.op
def bias_add_wrong_broadcast(x, b):
    """x (N, D) + b (D,); the VJP of b takes row 0 instead of summing over the rows."""
    return x + b, (lambda g: g, lambda g: g[0])


@mg.op
def mul_wrong_second(a, b):
    return a * b, (lambda g: g * b, lambda g: g * a * 1.01)


@mg.op
def tanh_plus_constant(x):
    out = np.tanh(x)
    return out, lambda g: g * (1 - out * out) + 1e-9  # tiny: within the element tolerance


_noise = np.random.default_rng(0)


@mg.op
def tanh_nondeterministic(x):
    out = np.tanh(x)
    return out, lambda g: g * (1 - out * out) * (1 + 1e-12 * _noise.standard_normal(x.shape))


# ---- passes on correct ops ---------------------------------------------------------------
CORRECT = [
    ("mul-broadcast", lambda a, b: a * b, [(3, 4), (4,)]),
    ("matmul-tanh", lambda a, b: (a @ b).tanh(), [(2, 3, 4), (4, 5)]),
    ("softmax-composed", lambda a: (a - a.max(axis=-1, keepdims=True)).exp()
     / (a - a.max(axis=-1, keepdims=True)).exp().sum(axis=-1, keepdims=True), [(3, 5)]),
    ("fused-softmax", lambda a: F.softmax(a, axis=0), [(4, 3)]),
    ("scalar-out", lambda a: (a * a).mean(), [(5,)]),
    ("0d-in", lambda a, b: a * b.exp(), [(3,), ()]),
]


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("name,fn,shapes", CORRECT, ids=[c[0] for c in CORRECT])
def test_passes_on_correct_ops(name, fn, shapes, fast):
    inputs = [leaf(*s) for s in shapes]
    report = mg.gradcheck(fn, inputs, fast=fast)
    assert report.ok and bool(report) and not report.problems
    assert [r.index for r in report.inputs] == list(range(len(shapes)))
    assert all(r.mode == ("fast" if fast else "elementwise") for r in report.inputs)
    assert "passed" in str(report)


# ---- catches wrong VJPs and names the element ---------------------------------------------
def test_wrong_sign_is_caught_with_values():
    x = leaf(2, 3)
    with pytest.raises(mg.GradcheckError) as info:
        mg.gradcheck(wrong_sign_exp, [x])
    assert isinstance(info.value, AssertionError)
    rep = info.value.report.inputs[0]
    assert not rep.ok and rep.index == 0
    i = rep.worst_index
    assert len(i) == 2
    # L = <exp(x), v>: the element's numeric gradient is v_i e^{x_i}; the analytic the negation
    assert rep.analytic == pytest.approx(-rep.numeric, rel=1e-6)
    assert abs(rep.numeric) > 0
    text = str(info.value)
    assert "FAILED" in text and "FAIL" in text and str(i) in text


def test_mean_missing_division_is_caught():
    x = leaf(4, 5)
    report = mg.gradcheck(mean_forgets_n, [x], raise_exception=False)
    assert not report and not report.ok
    rep = report.inputs[0]
    assert rep.analytic == pytest.approx(20 * rep.numeric, rel=1e-6)


@pytest.mark.parametrize("fast", [False, True])
def test_single_wrong_element_is_named(fast):
    x = leaf(3, 4)
    report = mg.gradcheck(square_one_bad_element, [x], fast=fast, raise_exception=False)
    rep = report.inputs[0]
    assert not rep.ok and rep.worst_index == BAD_AT
    assert rep.mode == "elementwise"  # fast mode fell back to name the element
    assert rep.analytic - rep.numeric == pytest.approx(1.0, rel=1e-5)
    assert rep.max_abs_err == pytest.approx(1.0, rel=1e-5)
    assert str(BAD_AT) in str(report)


def test_wrong_broadcast_handling_is_caught_on_the_right_input():
    x, b = leaf(3, 4), leaf(4)
    with pytest.raises(mg.GradcheckError) as info:
        mg.gradcheck(bias_add_wrong_broadcast, [x, b])
    reps = info.value.report.inputs
    assert reps[0].ok and not reps[1].ok and reps[1].index == 1
    assert reps[1].worst_index is not None and len(reps[1].worst_index) == 1


def test_failure_of_the_second_input_only():
    report = mg.gradcheck(mul_wrong_second, [leaf(6), leaf(6)], raise_exception=False)
    assert [r.ok for r in report.inputs] == [True, False]
    rep = report.inputs[1]
    assert rep.analytic == pytest.approx(1.01 * rep.numeric, rel=1e-6)
    assert rep.max_rel_err == pytest.approx(0.01, rel=1e-3)


def test_zero_cotangent_check_catches_a_constant_added():
    report = mg.gradcheck(tanh_plus_constant, [leaf(5)], raise_exception=False)
    assert report.inputs[0].ok  # 1e-9 hides inside the element-wise tolerance ...
    assert not report.ok  # ... but not from the zero-cotangent check
    assert any("input 0" in p and "zero cotangent" in p for p in report.problems)
    assert "zero cotangent" in str(report)


def test_repeatability_check_catches_nondeterminism():
    report = mg.gradcheck(tanh_nondeterministic, [leaf(5)], raise_exception=False)
    assert report.inputs[0].ok and not report.ok
    assert any("differ" in p for p in report.problems)


# ---- float32, restoration, closures, constants -------------------------------------------
def test_float32_input_warns_and_is_restored():
    x = leaf(3, 2, dtype=np.float32)
    data, before = x.data, x.data.copy()
    sentinel = np.full((3, 2), 7.0, np.float32)
    x.grad = sentinel
    with pytest.warns(UserWarning, match="float32"):
        report = mg.gradcheck(lambda t: t.tanh() * t, [x])
    assert report.ok
    assert x.data is data and x.dtype == np.float32 and x.grad is sentinel
    np.testing.assert_array_equal(x.data, before)
    np.testing.assert_array_equal(sentinel, 7.0)
    with pytest.warns(UserWarning, match="float32"):
        mg.gradcheck(lambda t: t * 2, [before.copy()])  # a float32 array warns too


def test_inputs_restored_after_failure_and_after_fn_raises():
    x = leaf(2, 3, dtype=np.float32)
    data = x.data
    with pytest.warns(UserWarning), pytest.raises(mg.GradcheckError):
        mg.gradcheck(wrong_sign_exp, [x])
    assert x.data is data and x.grad is None

    def boom(t):
        raise KeyError("from fn")

    with pytest.warns(UserWarning), pytest.raises(KeyError):
        mg.gradcheck(boom, [x])
    assert x.data is data and x.dtype == np.float32


def test_same_tensor_twice_is_restored():
    x = leaf(3, dtype=np.float32)
    data = x.data
    with pytest.warns(UserWarning):
        assert mg.gradcheck(lambda a, b: a * b, [x, x])
    assert x.data is data


def test_params_used_by_closure():
    w, b = leaf(3, 2), leaf(2)
    x = RNG.standard_normal((4, 3))
    assert mg.gradcheck(lambda *_: ((mg.Tensor(x) @ w) + b).tanh(), [w, b])
    with pytest.raises(mg.GradcheckError):
        mg.gradcheck(lambda *_: wrong_sign_exp(mg.Tensor(x) @ w), [w])


def test_non_floating_arrays_are_constants():
    seen = []

    def fn(x, idx, mask):
        seen.append((idx, mask))
        return x[idx] * mg.Tensor(mask.astype(float))

    idx, mask = np.array([2, 0, 2]), np.array([True, False, True])
    report = mg.gradcheck(fn, [leaf(4), idx, mask])
    assert [r.index for r in report.inputs] == [0]
    assert all(i is idx and m is mask for i, m in seen)


def test_arrays_become_checked_float64_inputs_and_constant_tensors_are_not_checked():
    a = RNG.standard_normal(3)
    c = mg.Tensor(RNG.standard_normal(3))  # no requires_grad: a constant
    report = mg.gradcheck(lambda p, q: p * q.exp(), [a, c])
    assert [r.index for r in report.inputs] == [0]
    with pytest.raises(ValueError, match="none requires grad"):
        mg.gradcheck(lambda q: q * 2, [c])


def test_non_leaf_input_is_checked_as_a_leaf():
    w = leaf(3)
    h = w * 2.0
    assert mg.gradcheck(lambda t: t * t.exp(), [h])
    h.sum().backward()  # the graph that made h is untouched by gradcheck
    np.testing.assert_array_equal(w.grad, np.full(3, 2.0))


def test_output_independent_of_an_input_gives_zero_gradient():
    report = mg.gradcheck(lambda a, b: a * 3.0, [leaf(2), leaf(2)])
    assert report.inputs[1].max_abs_err == 0


# ---- taylor_check -------------------------------------------------------------------------
def test_taylor_check_order_two_for_correct_gradients():
    x, w = leaf(3, 4), leaf(4, 2)
    rep = mg.taylor_check(lambda a, b: F.softmax(a @ b, axis=-1) * a.sum(), [x, w])
    assert rep.ok and 1.8 <= rep.order <= 2.3
    assert "passed" in str(rep)


def test_taylor_check_order_one_for_a_wrong_gradient():
    with pytest.raises(AssertionError, match="FAILED"):
        mg.taylor_check(wrong_sign_exp, [leaf(5)])
    rep = mg.taylor_check(wrong_sign_exp, [leaf(5)], raise_exception=False)
    assert not rep.ok and 0.9 <= rep.order <= 1.1
    # a 1% error in one input's gradient: the O(h) term wins only at the small steps
    rep = mg.taylor_check(mul_wrong_second, [leaf(5), leaf(5)], raise_exception=False)
    assert not rep.ok and rep.order < 1.5


def test_taylor_check_linear_function_passes():
    rep = mg.taylor_check(lambda a: a * 3.0 + 1.0, [leaf(4)])
    assert rep.ok


def test_tensors_reached_by_closure_keep_their_grad():
    """A parameter fn uses without it being passed (a model's weight) is not an input: the
    check's backward passes must leave its .grad as it was, array and contents."""
    rng = np.random.default_rng(0)
    w = mg.Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    held = rng.standard_normal((3, 2))
    w.grad = held
    before = held.copy()
    report = mg.gradcheck(lambda x: F.tanh(x @ w), [rng.standard_normal((4, 3))])
    assert report.ok
    assert w.grad is held
    np.testing.assert_array_equal(held, before)
    fresh = mg.Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    mg.gradcheck(lambda x: F.tanh(x @ fresh), [rng.standard_normal((4, 3))], fast=True)
    assert fresh.grad is None
