"""``JointVJP``: one function gives every input's gradient, called once per backward pass; a
subclass of it (say, one that names itself in reprs) is recorded as one, in grad mode as well as
under no_grad, for ops with one output and with several."""
from __future__ import annotations

import weakref
from functools import partial

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(21)
CALLS = []


@mg.op(arrays=3)
def affine(x, w, b):
    """y = x w + b, x (n, k), w (k, m), b (m,).  x̄ = ȳ wᵀ, w̄ = xᵀ ȳ, b̄ = Σ_rows ȳ."""
    def gradients(g, needed):
        CALLS.append(needed)
        return [g @ w.T if needed[0] else None, x.T @ g if needed[1] else None,
                g.sum(axis=0) if needed[2] else None]
    return x @ w + b, mg.JointVJP(gradients)


@mg.op(arrays=1)
def split_affine(x, w):
    """(x w, 2 x w): two outputs.   x̄ = (ȳ_0 + 2 ȳ_1) wᵀ,  w̄ = xᵀ (ȳ_0 + 2 ȳ_1)."""
    y = x @ w

    def gradients(gs, needed):
        CALLS.append(needed)
        g = gs[0] + 2.0 * gs[1]
        return [g @ w.T, x.T @ g]
    return (y, 2.0 * y), mg.JointVJP(gradients)


leaf = partial(helpers.leaf, RNG)


def test_gradients_match_finite_differences_with_and_without_constants():
    x, w, b = leaf(4, 3), leaf(3, 5), leaf(5)
    mg.gradcheck(affine, (x, w, b))
    mg.gradcheck(lambda x, w: affine(x, w, np.ones(5)), (x, w))
    mg.gradcheck(lambda x, w: F.tanh(split_affine(x, w)[1]) * split_affine(x, w)[0], (x, w))


def test_called_once_per_pass_with_what_is_needed():
    x, w = leaf(4, 3), leaf(3, 5)
    b = mg.Tensor(RNG.standard_normal(5))  # a constant Tensor: not needed
    y = affine(x, w, b)
    cot = RNG.standard_normal((4, 5))
    CALLS.clear()
    y.backward(cot, retain_graph=True)
    assert CALLS == [(True, True, False)]
    first = x.grad.copy(), w.grad.copy()
    y.backward(cot)  # a second pass calls it again
    assert CALLS == [(True, True, False)] * 2
    np.testing.assert_array_equal(x.grad, 2 * first[0])
    np.testing.assert_array_equal(w.grad, 2 * first[1])
    np.testing.assert_allclose(w.grad, 2 * x.data.T @ cot, rtol=1e-13)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward(cot)


def test_a_multi_output_op_gets_the_tuple_of_cotangents_once():
    x, w = leaf(3, 2), leaf(2, 4)
    a, b = split_affine(x, w)
    CALLS.clear()
    (a.sum() + b.sum()).backward()
    assert CALLS == [(True, True)]
    np.testing.assert_allclose(w.grad, x.data.T @ np.full((3, 4), 3.0), rtol=1e-13)


def test_a_result_nobody_else_holds_becomes_the_gradient_buffer():
    made = []

    @mg.op(arrays=1)
    def double(x):
        def gradients(g, needed):
            made.append(2.0 * g)
            return [made[-1]]
        return 2.0 * x, mg.JointVJP(gradients)

    x = leaf(3)
    double(x).backward(np.ones(3))
    assert x.grad is not made[0]  # the op keeps it in its list: the engine copies it
    np.testing.assert_array_equal(x.grad, made[0])

    refs = []

    @mg.op(arrays=1)
    def triple(x):
        def gradients(g, needed):
            result = 3.0 * g
            refs.append(weakref.ref(result))  # (a weak reference adds no count)
            return [result]
        return 3.0 * x, mg.JointVJP(gradients)

    z = leaf(3)
    triple(z).backward(np.ones(3))
    assert z.grad is refs[0]()  # adopted, not copied
    np.testing.assert_array_equal(z.grad, np.full(3, 3.0))


def test_wrong_results_are_named_errors():
    @mg.op(arrays=2)
    def short(x, w):
        return x * w, mg.JointVJP(lambda g, needed: [g])

    @mg.op(arrays=1)
    def not_a_list(x):
        return x * 1.0, mg.JointVJP(lambda g, needed: g)

    @mg.op(arrays=1)
    def gives_none(x):
        return x * 1.0, mg.JointVJP(lambda g, needed: [None])

    x, w = leaf(3), leaf(3)
    with pytest.raises(TypeError, match="'short'.*returned 1 gradients; expected .* 2"):
        short(x, w).sum().backward()
    with pytest.raises(TypeError, match="'not_a_list'.*returned a ndarray"):
        not_a_list(x).sum().backward()
    with pytest.raises(TypeError, match="'gives_none'.*input 0 returned None"):
        gives_none(x).sum().backward()
    with pytest.raises(TypeError, match="JointVJP gradients: got int"):
        mg.JointVJP(3)


def test_in_place_writes_are_still_caught():
    x, w = leaf(4, 3), leaf(3, 5)
    y = affine(x, w, np.zeros(5))
    with mg.no_grad():
        w += 1.0
    with pytest.raises(RuntimeError, match="affine"):
        y.sum().backward()


def test_graph_summary_counts_what_the_function_saved():
    x, w = leaf(40, 30), leaf(30, 50)
    s = mg.graph_summary(affine(x, w, np.zeros(50)).sum())
    assert s.total_saved_bytes >= x.data.nbytes + w.data.nbytes


def test_the_count_is_per_parameter_however_the_op_is_called():
    # one entry per positional parameter: passing w by keyword (which fills in b's default)
    # or positionally must not change what the function has to return
    @mg.op(arrays=3)
    def lin_short(x, w, b=None):
        return x @ w, mg.JointVJP(lambda g, needed: [g @ w.T, x.T @ g])

    @mg.op(arrays=3)
    def lin(x, w, b=None):
        def gradients(g, needed):
            CALLS.append(needed)
            return [g @ w.T, x.T @ g, None]
        return x @ w, mg.JointVJP(gradients)

    x, w = leaf(4, 3), leaf(3, 2)
    for call in (lambda: lin_short(x, w), lambda: lin_short(x, w=w)):
        with pytest.raises(TypeError, match="returned 2 gradients; expected .* 3"):
            call().sum().backward()
    for call in (lambda: lin(x, w), lambda: lin(x, w=w)):
        CALLS.clear()
        x.grad = w.grad = None
        call().sum().backward()
        assert CALLS == [(True, True, False)]
        np.testing.assert_allclose(w.grad, x.data.T @ np.ones((4, 2)), rtol=1e-13)


# ---- a subclass of JointVJP ----------------------------------------------------------------
class NamedJoint(mg.JointVJP):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"NamedJoint({self.gradients.__name__})"


@mg.op(arrays=2)
def scaled(x, w):
    """y = x ⊙ w.   x̄ = ȳ ⊙ w, w̄ = ȳ ⊙ x."""
    def gradients(g, needed):
        return [g * w if needed[0] else None, g * x if needed[1] else None]
    return x * w, NamedJoint(gradients)


@mg.op(arrays=1)
def pair(x):
    """(2x, x²).   x̄ = 2 ȳ_0 + 2 x ȳ_1."""
    def gradients(gs, needed):
        return [2.0 * gs[0] + 2.0 * x * gs[1]]
    return (2.0 * x, x * x), NamedJoint(gradients)


def test_a_subclass_is_recorded_as_a_joint_vjp():
    x, w = helpers.leaf(0, 4, 3), helpers.leaf(1, 4, 3)
    cot = np.random.default_rng(2).standard_normal((4, 3))
    scaled(x, w).backward(cot)
    np.testing.assert_array_equal(x.grad, cot * w.data)
    np.testing.assert_array_equal(w.grad, cot * x.data)
    mg.gradcheck(scaled, (helpers.leaf(3, 2, 3), helpers.leaf(4, 2, 3)))
    mg.gradcheck(lambda x: pair(x)[0] * pair(x)[1], (helpers.leaf(5, 3),))


def test_a_subclass_of_a_multi_output_op_gets_its_cotangents_once():
    x = helpers.leaf(6, 5)
    a, b = pair(x)
    (a.sum() + b.sum()).backward()
    np.testing.assert_allclose(x.grad, 2.0 + 2.0 * x.data, rtol=4 * np.finfo(float).eps)
