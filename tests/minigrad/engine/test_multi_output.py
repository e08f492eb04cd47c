"""Ops with several outputs: ``@mg.op`` forwards that return a tuple of arrays.

The op returns a tuple of Tensors; its VJPs each receive a tuple of cotangents, one per
output, zeros for an output that did not reach the loss (torch.autograd.Function's default),
and are called once per backward, whatever the number of outputs used.
"""
from __future__ import annotations

from functools import partial

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(3)
CALLS = {"sum_prod": 0, "split2": 0}


@mg.op
def sum_prod(x, y):
    """(s, p) = (x + y, x y).   VJPs: x̄ = s̄ + p̄ y,  ȳ = s̄ + p̄ x."""
    def vjp_x(gs):
        CALLS["sum_prod"] += 1
        gsum, gprod = gs
        return gsum + gprod * y

    def vjp_y(gs):
        gsum, gprod = gs
        return gsum + gprod * x

    return (x + y, x * y), (vjp_x, vjp_y)


@mg.op
def split2(x, at):
    """(x[:at], x[at:]) along axis 0.   VJP: x̄ = concatenate(ḡ0, ḡ1)."""
    def vjp(gs):
        CALLS["split2"] += 1
        assert len(gs) == 2
        return np.concatenate(gs, axis=0)

    return (x[:at], x[at:]), vjp


leaf = partial(helpers.leaf, RNG)


def test_outputs_are_a_tuple_of_tensors_with_their_values():
    x0, y0 = RNG.standard_normal(4), RNG.standard_normal(4)
    out = sum_prod(mg.Tensor(x0, requires_grad=True), mg.Tensor(y0))
    assert type(out) is tuple and len(out) == 2
    s, p = out
    assert isinstance(s, mg.Tensor) and s.op == "sum_prod" and p.op == "sum_prod"
    np.testing.assert_array_equal(s.data, x0 + y0)
    np.testing.assert_array_equal(p.data, x0 * y0)


def test_tuple_is_no_longer_stacked_into_one_tensor():
    a, b = split2(leaf(5, 2), 2)
    assert a.shape == (2, 2) and b.shape == (3, 2)


@pytest.mark.parametrize("use", ["first", "second", "both", "first twice"])
def test_gradients_with_outputs_used_or_not(use):
    x, y = leaf(3), leaf(3)
    s, p = sum_prod(x, y)
    v = RNG.standard_normal(3)
    loss = {"first": lambda: (s * v).sum(), "second": lambda: (p * v).sum(),
            "both": lambda: (s * v).sum() + (p * p).sum(),
            "first twice": lambda: (s * v).sum() + (s * s).sum()}[use]()
    CALLS["sum_prod"] = 0
    loss.backward()
    assert CALLS["sum_prod"] == 1  # once per backward, with every cotangent gathered
    xd, yd, sd, pd = x.data, y.data, s.data, p.data
    gs = {"first": v, "second": 0, "both": v, "first twice": v + 2 * sd}[use]
    gp = {"first": 0, "second": v, "both": 2 * pd, "first twice": 0}[use]
    np.testing.assert_allclose(x.grad, gs + gp * yd, rtol=1e-14)
    np.testing.assert_allclose(y.grad, gs + gp * xd, rtol=1e-14)


def test_an_unused_output_gets_a_zero_cotangent_of_its_shape_and_dtype():
    seen = {}

    @mg.op
    def spy(x):
        def vjp(gs):
            seen["gs"] = gs
            return gs[0] * 2
        return (x * 2, np.zeros((4, 1), np.float32)), vjp

    a, _ = spy(leaf(3))
    a.sum().backward()
    g0, g1 = seen["gs"]
    np.testing.assert_array_equal(g0, np.ones(3))
    assert g1.shape == (4, 1) and g1.dtype == np.float32 and not g1.any()


def test_split_like_op_gradients_and_gradcheck():
    x = leaf(5, 3)
    a, b = split2(x, 2)
    wa, wb = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 3))
    CALLS["split2"] = 0
    ((a * wa).sum() + (b * wb).sum()).backward()
    assert CALLS["split2"] == 1
    np.testing.assert_array_equal(x.grad, np.concatenate([wa, wb]))
    mg.gradcheck(lambda t: split2(t, 2), [leaf(5, 3)])
    mg.gradcheck(lambda t: split2(t, 2)[1], [leaf(5, 3)])  # one output unused


def test_gradcheck_handles_tuple_outputs_and_finds_a_wrong_vjp():
    mg.gradcheck(sum_prod, [leaf(3, 2), leaf(3, 2)])
    mg.gradcheck(lambda x, y: sum_prod(x, y)[0] * sum_prod(x, y)[1], [leaf(4), leaf(4)])

    @mg.op
    def wrong(x):  # forgets the second output's contribution
        return (x * 2, x * x), lambda gs: gs[0] * 2

    with pytest.raises(mg.GradcheckError):
        mg.gradcheck(wrong, [leaf(3)])
    report = mg.gradcheck(wrong, [leaf(3)], raise_exception=False)
    assert not report.ok


def test_retain_graph_and_a_second_backward():
    x, y = leaf(3), leaf(3)
    s, p = sum_prod(x, y)
    loss = (s * p).sum()
    loss.backward(retain_graph=True)
    first = x.grad.copy()
    x.grad = None
    loss.backward()
    np.testing.assert_array_equal(x.grad, first)
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_backward_from_each_output_separately():
    x, y = leaf(3), leaf(3)
    s, p = sum_prod(x, y)
    s.sum().backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad, np.ones(3))
    x.grad = None
    p.sum().backward()
    np.testing.assert_array_equal(x.grad, y.data)


def test_topological_order_with_outputs_feeding_each_other():
    # p depends on s through a later op; the multi-output node must run after both
    x, y = leaf(3), leaf(3)
    s, p = sum_prod(x, y)
    s2, p2 = sum_prod(s, p)  # a second multi-output op on the first one's outputs
    loss = (F.tanh(s2) + p2 * s).sum()
    mg.gradcheck(lambda a, b: (lambda s, p: (F.tanh(sum_prod(s, p)[0])
                                             + sum_prod(s, p)[1] * s).sum())(*sum_prod(a, b)),
                 [x, y])
    loss.backward()
    assert np.all(np.isfinite(x.grad))


def test_retain_grad_on_an_output_and_no_grad():
    x = leaf(4)
    a, b = split2(x, 1)
    b.retain_grad()
    (b * 3.0).sum().backward()
    np.testing.assert_array_equal(b.grad, np.full(3, 3.0))
    with mg.no_grad():
        a, b = split2(x, 1)
    assert not a.requires_grad and not b.requires_grad


def test_integer_outputs_carry_no_gradient():
    @mg.op
    def max_and_argmax(x):
        i = np.argmax(x)
        def vjp(gs):
            g = np.zeros_like(x)
            g[i] = gs[0]
            return g
        return (x[i], i), vjp

    x = leaf(5)
    m, i = max_and_argmax(x)
    assert m.requires_grad and not i.requires_grad
    m.backward()
    assert x.grad[int(i.data)] == 1 and x.grad.sum() == 1


def test_versions_of_all_outputs_are_checked():
    @mg.op
    def exp_and_neg(x):
        e = np.exp(x)
        return (e, -x), (lambda gs: gs[0] * e - gs[1])

    x = leaf(3)
    e, n = exp_and_neg(x)
    with mg.no_grad():
        e[0] = 0.0
    with pytest.raises(RuntimeError, match=r"'exp_and_neg': its output 0 .*modified"):
        (e + n).sum().backward()


def test_graph_summary_lists_a_multi_output_op_once():
    x, y = leaf(3), leaf(3)
    s, p = sum_prod(x, y)
    summary = mg.graph_summary((s * p).sum())
    names = [row[0] for row in summary.rows]
    assert names == ["sum_prod", "mul", "sum"]
    assert summary.rows[0][1] == ((3,), (3,))
    assert "sum_prod" in str(summary)


def test_bad_forward_results_are_refused():
    @mg.op
    def empty(x):
        return (), lambda gs: gs

    @mg.op
    def listed(x):
        return [x, x], lambda g: g

    with pytest.raises(ValueError, match="'empty'.*empty tuple"):
        empty(leaf(2))
    with pytest.raises(TypeError, match="'listed'.*list.*tuple"):
        listed(leaf(2))
