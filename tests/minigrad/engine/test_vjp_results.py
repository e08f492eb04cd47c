"""What a VJP may return, and what the backward sweep makes of it (minigrad/gradients.py).

An array of a shape the input's shape broadcasts to is summed back to the input's shape; any
other shape is refused with a message that names the op and the shapes it would accept. A
VJP that returns something other than an array (a list, None, a float, a complex or object
array, a Tensor) is refused naming the op and the input; a NumPy scalar or an integer array
of the right shape is taken (cast to the input's dtype)."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg


# ---- the shape of a VJP's result ------------------------------------------------------------
def _op_whose_vjp_returns(shape):
    @mg.op
    def badly_shaped(x):
        return x * 2.0, lambda g: np.ones(shape)
    return badly_shaped


def test_a_wrong_vjp_shape_is_told_what_would_be_accepted():
    x = mg.Tensor(np.ones((3, 2)), requires_grad=True)
    with pytest.raises(ValueError) as info:
        _op_whose_vjp_returns((1, 2))(x).backward(np.ones((3, 2)))
    msg = str(info.value)
    assert "badly_shaped" in msg and "(1, 2)" in msg and "(3, 2)" in msg
    # (1, 2) does broadcast to (3, 2): the rule is the other way round
    assert "(or a shape that broadcasts to it)" not in msg
    assert "a shape that (3, 2) broadcasts to" in msg


@pytest.mark.parametrize("returned", [(3, 2), (4, 3, 2), (3, 3, 2), (1, 3, 2)])
def test_the_shapes_the_message_allows_are_accepted(returned):
    """The input's shape (3, 2) broadcasts to each of these: the engine sums them back."""
    x = mg.Tensor(np.ones((3, 2)), requires_grad=True)
    _op_whose_vjp_returns(returned)(x).backward(np.ones((3, 2)))
    np.testing.assert_array_equal(x.grad, np.full((3, 2), np.prod(returned) / 6))


@pytest.mark.parametrize("returned", [(1, 2), (3, 1), (2,), (6,), (2, 3)])
def test_shapes_the_input_does_not_broadcast_to_are_refused(returned):
    x = mg.Tensor(np.ones((3, 2)), requires_grad=True)
    with pytest.raises(ValueError, match="broadcasts to"):
        _op_whose_vjp_returns(returned)(x).backward(np.ones((3, 2)))


# ---- a VJP returning something other than an array ------------------------------------
def make_op(result, name):
    @mg.op(name=name)
    def bad(x, w):
        return x * w, (lambda g: g * w, lambda g: result(g))
    return bad


@pytest.mark.parametrize("result, words", [
    (lambda g: [1.0, 2.0, 3.0], "a list"),
    (lambda g: None, "None"),
    (lambda g: 1.5, "a float"),
    (lambda g: g.astype(np.complex128), "complex128"),
    (lambda g: g.astype(object), "object"),
    (lambda g: mg.Tensor(g), "a Tensor"),
])
@pytest.mark.parametrize("x_needs_grad", [True, False])  # False: w is the only edge
def test_a_vjp_returning_a_non_array_names_the_op_and_input(result, words, x_needs_grad):
    x = mg.Tensor(np.ones(3), requires_grad=x_needs_grad)
    w = mg.Tensor(np.full(3, 2.0), requires_grad=True)
    y = make_op(result, "badvjp")(x, w)
    with pytest.raises(TypeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "'badvjp'" in msg and "input 1" in msg and words in msg, msg
    assert "expected" in msg


def test_a_vjp_returning_a_numpy_scalar_or_ints_still_works():
    @mg.op(name="ok")
    def ok(x):
        return x.sum(), lambda g: np.broadcast_to(np.float64(g), x.shape).astype(np.int64)
    x = mg.Tensor(np.ones(3), requires_grad=True)
    ok(x).backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad, np.ones(3))
