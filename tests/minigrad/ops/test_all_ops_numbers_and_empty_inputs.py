"""A Python number as an op's array input, and empty arrays, as NumPy takes them.

A number stands for a 0-d array wherever no array input of the op is an array (``F.sum(3.5)``
is ``np.sum(3.5)``); next to an array it stays a weakly typed number (``x32 * 2.0`` stays
float32). Expected values come from NumPy itself; empty reductions are refused only where
NumPy refuses them (nothing to reduce for some output element). Products and splits along an
empty axis are NumPy's, values and gradients.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

EPS = np.finfo(np.float64).eps


@pytest.mark.parametrize("name, call, want", [
    ("sum", lambda v: F.sum(v), np.sum),
    ("mean", lambda v: F.mean(v), np.mean),
    ("max", lambda v: F.max(v), np.max),
    ("min", lambda v: F.min(v), np.min),
    ("var", lambda v: F.var(v), np.var),
    ("exp", lambda v: F.exp(v), np.exp),
    ("softmax", lambda v: F.softmax(v), lambda v: np.float64(1.0)),
    ("log_softmax", lambda v: F.log_softmax(v), lambda v: np.float64(0.0)),
    ("logsumexp", lambda v: F.logsumexp(v), lambda v: np.float64(v)),
    ("gelu_tanh", lambda v: F.gelu_tanh(v),
     lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))),
    ("reshape", lambda v: F.reshape(v, (1, 1)), lambda v: np.reshape(v, (1, 1))),
    ("expand_dims", lambda v: F.expand_dims(v, 0), lambda v: np.expand_dims(v, 0)),
    ("astype", lambda v: F.astype(v, np.float32), lambda v: np.asarray(v).astype(np.float32)),
    ("squeeze", lambda v: F.squeeze(v), np.squeeze),
    ("transpose", lambda v: F.transpose(v), np.transpose),
    ("broadcast_to", lambda v: F.broadcast_to(v, (2,)), lambda v: np.broadcast_to(v, (2,))),
    ("clip", lambda v: F.clip(v, 0.0, 1.0), lambda v: np.clip(v, 0.0, 1.0)),
])
@pytest.mark.parametrize("value", [3.5, 2, True])
def test_a_python_number_as_the_array_input(name, call, want, value):
    if name in ("softmax", "log_softmax", "logsumexp", "gelu_tanh") or (
            name in ("mean", "var") and isinstance(value, bool)):
        value = float(value)  # integer input is computed in float64 there: same NumPy value
    out = call(value)
    expected = np.asarray(want(value))
    assert isinstance(out, mg.Tensor) and isinstance(out.data, np.ndarray)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_allclose(out.data, expected, rtol=4 * EPS, atol=0)


def test_a_numpy_scalar_keeps_its_dtype():
    assert F.sum(np.float32(3.5)).dtype == np.float32
    assert F.max(np.float32(3.5)).dtype == np.float32


def test_layer_norm_of_a_number_and_of_a_0d_array():
    """x̂ of a single feature is 0: (x - x) / sqrt(0 + eps)."""
    for x in (3.5, np.array(3.5)):
        out = F.layer_norm(x)
        assert out.shape == () and out.item() == 0.0


@pytest.mark.parametrize("call, match", [
    (lambda: F.matmul(3.5, 2.0), "at least 1-D"),
    (lambda: F.matmul(3.5, np.ones(2)), "at least 1-D"),
    (lambda: F.cross_entropy(3.5, 0), "cross_entropy logits"),
    (lambda: F.self_attention(3.5, 1), "self_attention qkv"),
    (lambda: F.linear(3.5, np.ones((1, 1))), "linear"),
])
def test_a_number_where_dimensions_are_needed_is_a_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_number_next_to_an_array_stays_weakly_typed():
    x32 = np.ones(3, np.float32)
    for out in (F.mul(x32, 2.0), F.add(2, x32), F.clip(x32, 0.0, 0.5), F.where(x32 > 0, x32, 0.0)):
        assert out.dtype == np.float32
    x0 = np.array(1.5, np.float32)  # 0-d next to a number: NumPy keeps float32 too
    assert F.mul(x0, 2.0).dtype == np.float32 and F.add(2.0, x0).dtype == np.float32


def test_two_numbers_follow_numpy():
    for call, want in ((F.add(2, 3.5), np.add(2, 3.5)), (F.pow(2, 3), np.power(2, 3)),
                       (F.div(1, 2), np.true_divide(1, 2)), (F.maximum(True, 0.5), np.maximum(True, 0.5))):
        assert call.dtype == np.asarray(want).dtype and call.item() == want


def test_gradient_flows_to_the_tensor_next_to_a_number():
    t = mg.Tensor(np.array(1.5), requires_grad=True)
    (F.mul(t, 2.0) + F.sum(3.5)).backward()
    assert t.grad == 2.0


# ---- empty arrays -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("shape, axis", [((4, 0), 0), ((0, 4), 1), ((2, 0, 3), (0, 2)),
                                         ((5, 0, 0), 0)])
def test_extremum_of_an_empty_array_with_something_to_reduce(name, shape, axis):
    a = np.zeros(shape)
    want = getattr(np, name)(a, axis=axis)
    t = mg.Tensor(a, requires_grad=True)
    out = getattr(F, name)(t, axis=axis)
    assert out.shape == want.shape
    out.sum().backward()
    assert t.grad.shape == shape


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("shape, axis", [((4, 0), 1), ((0, 0), 0), ((0,), None), ((3, 0), None)])
def test_extremum_with_nothing_to_reduce_is_refused(name, shape, axis):
    with pytest.raises(ValueError):  # NumPy refuses these too
        getattr(np, name)(np.zeros(shape), axis=axis)
    with pytest.raises(ValueError, match=rf"{name}: got an empty array of shape"):
        getattr(F, name)(np.zeros(shape), axis=axis)


@pytest.mark.parametrize("shape, axis", [((3, 0), 1), ((3, 0), None), ((0, 3), None), ((0,), None),
                                         ((2, 0, 4), (0, 1))])
def test_logsumexp_of_an_empty_slice_is_minus_inf(shape, axis):
    """The log of an empty sum, as torch.logsumexp and np.logaddexp.reduce (identity -inf);
    it used to be NumPy's "zero-size array to reduction operation maximum"."""
    t = mg.Tensor(np.zeros(shape), requires_grad=True)
    out = F.logsumexp(t, axis=axis)
    want = np.logaddexp.reduce(np.zeros(shape), axis=axis)  # identity -inf
    assert out.shape == np.shape(want)
    np.testing.assert_array_equal(out.data, want)
    out.sum().backward()
    assert t.grad.shape == shape and t.grad.size == 0


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
@pytest.mark.parametrize("shape, axis", [((3, 0), -1), ((0, 3), 0), ((0, 3), -1), ((2, 0, 4), (0, 1)),
                                         ((0,), None), ((0, 3), None)])
def test_softmax_over_an_empty_axis_is_empty(fn, shape, axis):
    t = mg.Tensor(np.zeros(shape), requires_grad=True)
    out = fn(t, axis=axis)
    assert out.shape == shape and out.dtype == np.float64
    out.sum().backward()
    assert t.grad.shape == shape


@pytest.mark.parametrize("shape, axis", [((4, 3, 1), 50), ((4, 3, 1), -4), ((), 1), ((), -2)])
def test_squeeze_out_of_range_is_numpy_axis_error(shape, axis):
    with pytest.raises(np.exceptions.AxisError):
        np.squeeze(np.ones(shape), axis)
    with pytest.raises(np.exceptions.AxisError, match="squeeze axis"):
        F.squeeze(mg.Tensor(np.ones(shape)), axis)


def test_squeeze_of_a_non_unit_axis_stays_a_value_error():
    with pytest.raises(ValueError, match="squeeze axis") as info:
        F.squeeze(np.ones((4, 3, 1)), 1)
    assert not isinstance(info.value, IndexError)


# ---- empty products and splits --------------------------------------------------------------
MATMUL_EMPTY = [((3, 4, 0), (0, 3)), ((2, 0), (0, 3)), ((0,), (0,)), ((0, 4), (4, 3)),
                ((4, 0), (0,)), ((0,), (0, 3)), ((3, 4, 0), (0,)), ((0,), (2, 0, 3)),
                ((2, 3, 0), (2, 0, 4)), ((2, 0, 4), (4, 3)), ((3, 4), (4, 0)),
                ((0, 3, 4), (4, 2)), ((2, 3, 4), (4, 0)), ((2, 3, 0), (0, 0))]


@pytest.mark.parametrize("sa,sb", MATMUL_EMPTY, ids=lambda s: "x".join(map(str, s)) or "0d")
def test_matmul_with_an_empty_axis_is_numpys_and_so_is_its_backward(sa, sb):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    ta, tb = mg.Tensor(a, requires_grad=True), mg.Tensor(b, requires_grad=True)
    out = ta @ tb
    expected = a @ b
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.data, expected)  # zeros, or nothing at all
    g = rng.standard_normal(expected.shape)
    out.backward(g)
    # out is linear in each operand: a's gradient at i is <g, e_i @ b>, with NumPy's matmul
    np.testing.assert_allclose(ta.grad, _linear_grad(lambda e: e @ b, a.shape, g), atol=1e-12)
    np.testing.assert_allclose(tb.grad, _linear_grad(lambda e: a @ e, b.shape, g), atol=1e-12)


def _linear_grad(f, shape, g):
    grad = np.zeros(shape)
    for i in np.ndindex(*shape):
        e = np.zeros(shape)
        e[i] = 1.0
        grad[i] = np.sum(g * f(e))
    return grad


@pytest.mark.parametrize("sx,n", [((2, 0), 3), ((0, 3), 2), ((2, 3, 0), 4)])
def test_linear_with_an_empty_axis(sx, n):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(sx)
    w, b = rng.standard_normal((sx[-1], n)), rng.standard_normal(n)
    tx, tw, tb = (mg.Tensor(v, requires_grad=True) for v in (x, w, b))
    out = F.linear(tx, tw, tb)
    np.testing.assert_array_equal(out.data, x @ w + b)
    g = rng.standard_normal(out.shape)
    out.backward(g)
    assert tx.grad.shape == x.shape and tw.grad.shape == w.shape
    np.testing.assert_allclose(tb.grad, g.reshape(-1, n).sum(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tw.grad, _linear_grad(lambda e: x @ e, w.shape, g), atol=1e-12)
    np.testing.assert_allclose(tx.grad, _linear_grad(lambda e: e @ w, x.shape, g), atol=1e-12)


@pytest.mark.parametrize("shape,sections,axis", [((0,), 3, 0), ((0, 2), 1, 0), ((2, 0), 2, 1),
                                                 ((3, 0, 2), 5, 1), ((0,), [0, 0], 0),
                                                 ((0, 4), [1, 3], 0)])
def test_split_along_an_empty_axis_is_numpys(shape, sections, axis):
    x = np.zeros(shape)
    t = mg.Tensor(x, requires_grad=True)
    pieces = F.split(t, sections, axis=axis)
    expected = np.split(x, sections, axis=axis)
    assert [p.shape for p in pieces] == [e.shape for e in expected]
    total = sum(F.sum(p) for p in pieces) + F.sum(t)
    total.backward()
    assert t.grad.shape == shape


def test_split_into_sections_is_numpys_with_gradients():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6))
    pieces = F.split(mg.Tensor(x), 3, axis=1)
    for p, e in zip(pieces, np.split(x, 3, axis=1), strict=True):
        np.testing.assert_array_equal(p.data, e)
    mg.gradcheck(lambda a: F.concatenate([p * (i + 1.0) for i, p in enumerate(F.split(a, 3, 1))],
                                         axis=1), [x], raise_exception=True)
