"""A Tensor that requires grad, passed where an op has no gradient, is refused by name.

The engine used to skip such an input without a word: its ``.grad`` stayed None, as if it
did not affect the result. Now ``record`` raises a TypeError naming the op and the
parameter (one rule for every op, built-in or custom); clip differentiates its bounds
(ops/test_elementwise.py) and cross_entropy its soft targets.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

rng = np.random.default_rng(0)


def rg(a):
    return mg.Tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def refused(op, param):
    return pytest.raises(TypeError, match=re.escape(
        f"{op} {param}: a Tensor that requires grad, but {op} has no gradient for {param}; "
        f"pass {param}.detach() or a constant"))


X = rng.standard_normal((2, 3, 6))


@pytest.mark.parametrize("label, call, op, param", [
    ("where-float-condition", lambda: F.where(rg([1.0, 0.0]), rg([1.0, 2.0]), 0.0), "where", "condition"),
    ("layer_norm-eps", lambda: F.layer_norm(rg(X), None, None, rg(1e-5)), "layer_norm", "eps"),
    ("layer_norm-eps-keyword", lambda: F.layer_norm(rg(X), eps=rg(1e-5)), "layer_norm", "eps"),
    ("self_attention-scale", lambda: F.self_attention(rg(X), 1, rg(0.5)), "self_attention", "scale"),
    ("cross_entropy-label_smoothing",
     lambda: F.cross_entropy(rg(X[0]), np.array([0, 1, 5]), "mean", rg(0.1)),
     "cross_entropy", "label_smoothing"),
])
def test_builtin_ops_refuse_a_dropped_gradient(label, call, op, param):
    with refused(op, param):
        call()


def test_the_input_alone_requires_grad():
    """Even when nothing else in the call requires grad (no edge at all)."""
    with refused("layer_norm", "eps"):
        F.layer_norm(X, None, None, rg(1e-5))


def test_constants_and_detached_tensors_still_pass():
    x = rg(X)
    F.layer_norm(x, None, None, mg.Tensor(np.array(1e-5))).sum().backward()
    F.layer_norm(x, None, None, rg(1e-5).detach())
    F.where(mg.Tensor(np.array([True, False])), rg([1.0, 2.0]), 0.0)


def test_no_grad_mode_records_nothing_and_refuses_nothing():
    with mg.no_grad():
        F.layer_norm(rg(X), None, None, rg(1e-5))


def test_comparisons_and_integer_casts_are_not_refused():
    """Their results are not floating: no gradient is expected from them, none is lost."""
    x, y = rg([1.0, 2.0]), rg([2.0, 1.0])
    assert (x < y).dtype == np.bool_
    assert F.astype(x, np.int64).dtype == np.int64


def test_soft_targets_are_differentiated():
    """d/dq of -Σ q log p is -log p (torch differentiates soft targets too)."""
    logits, q = rng.standard_normal((3, 4)), rng.dirichlet(np.ones(4), 3)
    mg.gradcheck(lambda a, b: F.cross_entropy(a, b, reduction="sum"), [logits, q])
    tq = rg(q)
    F.cross_entropy(mg.Tensor(logits), tq, reduction="sum").backward()
    np.testing.assert_allclose(tq.grad, -F.log_softmax(logits).data, rtol=4 * np.finfo(float).eps)


def test_custom_op_with_a_none_vjp():
    @mg.op
    def scaled(x, s):
        return x * s, (lambda g: g * s, None)

    scaled(rg([1.0]), 2.0)  # a number: fine
    with refused("scaled", "s"):
        scaled(rg([1.0]), rg(2.0))


def test_custom_op_with_fewer_vjps_than_inputs():
    @mg.op
    def shifted(x, s):
        return x + s, lambda g: g

    with refused("shifted", "s"):
        shifted(rg([1.0]), rg([2.0]))


def test_custom_multi_output_op():
    @mg.op
    def two(x, s):
        return (x * s, x + s), (lambda gs: gs[0] * s + gs[1], None)

    two(rg([1.0]), 2.0)
    with refused("two", "s"):
        two(rg([1.0]), rg(2.0))


def test_direct_record_names_the_position():
    """Variadic ops call ``record`` directly: without parameter names, the position."""
    from minigrad.defop import record
    with pytest.raises(TypeError, match=r"cat input 1: a Tensor that requires grad, but cat "
                                        r"has no gradient for input 1"):
        record(np.zeros(2), [rg([1.0]), rg([2.0])], (lambda g: g[:1], None), "cat")


def test_the_same_tensor_twice_names_the_position_without_a_vjp():
    @mg.op
    def scaled(x, s):
        return x * s, (lambda g: g * s, None)

    x = rg([3.0])
    with refused("scaled", "s"):
        scaled(x, x)


def test_every_op_case_gives_each_floating_input_a_gradient(mg_op_case):
    """The sweep over every public op (tests/minigrad/op_cases/, the case table): with every
    floating input a Tensor that requires grad, each one gets a gradient after backward, or
    the call is refused by name. None is left with .grad None."""
    case = mg_op_case
    ts = [mg.Tensor(x.copy(), requires_grad=x.dtype.kind == "f") for x in case.inputs]
    try:
        out = case.fn(*ts)
    except TypeError as e:
        assert "a Tensor that requires grad, but" in str(e)
        return
    outs = out if isinstance(out, (tuple, list)) else (out,)
    loss = sum(o.sum() for o in outs if o.requires_grad)
    if isinstance(loss, mg.Tensor):
        loss.backward()
    for i, t in enumerate(ts):
        if t.requires_grad:
            assert t.grad is not None, f"{case.id}: input {i} requires grad and got none"


def test_a_forward_returning_more_vjps_than_it_has_positional_parameters_is_refused():
    """As torch.autograd.Function's "incorrect number of gradients": a third VJP for a
    two-input op is a mistake in the op, not something to cut silently."""
    @mg.op
    def two_inputs(a, b):
        return a * b, (lambda g: g * b, lambda g: g * a, lambda g: g)

    a, b = (mg.Tensor(np.ones(3), requires_grad=True) for _ in range(2))
    with pytest.raises(TypeError, match=r"two_inputs.*3 VJPs.*2 positional"):
        two_inputs(a, b)
