"""The dispatch path's fast paths give what the general, checked path gives.

The backward sweep takes a VJP result that is a plain array of its input's shape and dtype
straight to accumulation, and sends anything else (a broadcast shape, another dtype, a NumPy
scalar, a subclass, a wrong type) through the checked path; it asks whether a VJP's array
may be kept as a gradient buffer only for an input's first gradient; ``record`` and ``op``'s
wrapper build results and nodes with fewer steps. Each test here would fail if one of those
shortcuts were wrong: expected gradients are written out by hand from the op's formula.
"""
from __future__ import annotations

import weakref
from functools import partial

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(1611)
leaf = partial(helpers.leaf, RNG, within=(0.5, 1.5))


def close(dtype):
    """A tolerance of a few hundred ulps of ``dtype`` (for sums whose order may differ)."""
    eps = np.finfo(dtype).eps
    return {"rtol": 300 * eps, "atol": 300 * eps}


# ---- the plain case: same shape, same dtype ---------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_same_shape_products_give_the_formula_bit_for_bit(dtype):
    a, b = leaf(5, dtype=dtype), leaf(5, dtype=dtype)
    g = RNG.standard_normal(5).astype(dtype)
    (a * b).backward(g)
    np.testing.assert_array_equal(a.grad, g * b.data)
    np.testing.assert_array_equal(b.grad, g * a.data)
    assert a.grad.dtype == dtype and b.grad.dtype == dtype
    assert type(a.grad) is np.ndarray and type(b.grad) is np.ndarray


def test_the_fast_path_and_the_broadcast_path_agree():
    """(4, 3) * (4, 3) takes the fast path; (4, 3) * (1, 3) and (4, 3) * (3,) sum b's
    gradient over the broadcast axis, with keepdims where the input has a 1."""
    a = leaf(4, 3)
    g = RNG.standard_normal((4, 3))
    for b_shape in [(4, 3), (1, 3), (3,)]:
        a.grad = None
        b = leaf(*b_shape)
        (a * b).backward(g)
        np.testing.assert_array_equal(a.grad, g * np.broadcast_to(b.data, (4, 3)))
        if b_shape == (4, 3):
            np.testing.assert_array_equal(b.grad, g * a.data)
        else:
            expected = (g * a.data).sum(axis=0).reshape(b_shape)
            np.testing.assert_allclose(b.grad, expected, **close(np.float64))
        assert b.grad.shape == b_shape


# ---- 0-d operands, NumPy scalars, Python numbers ------------------------------------------
def test_a_0d_operand_next_to_a_vector_gets_a_0d_ndarray_gradient():
    s, v = leaf(dtype=np.float32), leaf(6, dtype=np.float32)
    g = RNG.standard_normal(6).astype(np.float32)
    out = s * v
    assert out.dtype == np.float32
    out.backward(g)
    assert type(s.grad) is np.ndarray and s.grad.shape == () and s.grad.dtype == np.float32
    np.testing.assert_allclose(s.grad, (g * v.data).sum(), **close(np.float32))
    np.testing.assert_array_equal(v.grad, g * s.data)


def test_vjps_on_0d_arrays_return_numpy_scalars_and_every_gradient_is_still_an_ndarray():
    """Arithmetic on 0-d arrays returns NumPy scalars (np.float64), which take the checked
    path: a leaf's .grad and an intermediate node's gradient become 0-d ndarrays."""
    x, y, z = leaf(), leaf(), leaf()
    h = x * y  # h's gradient, z * g, is a NumPy scalar
    out = h * z + h  # and h receives two of them: summed, not written into a scalar
    out.backward()
    for t in (x, y, z):
        assert type(t.grad) is np.ndarray and t.grad.shape == ()
    x0, y0, z0 = x.data.item(), y.data.item(), z.data.item()
    assert x.grad.item() == pytest.approx((z0 + 1.0) * y0, rel=1e-15)
    assert y.grad.item() == pytest.approx((z0 + 1.0) * x0, rel=1e-15)
    assert z.grad.item() == x0 * y0


@pytest.mark.parametrize("number", [2.5, np.float64(2.5), np.array(2.5)])
def test_a_number_keeps_a_float32_tensor_float32_and_scales_its_gradient(number):
    t = leaf(4, dtype=np.float32)
    g = RNG.standard_normal(4).astype(np.float32)
    out = t * number
    assert out.dtype == np.float32
    out.backward(g)
    assert t.grad.dtype == np.float32
    np.testing.assert_array_equal(t.grad, g * np.float32(2.5))


def test_0d_operands_alone_keep_numpy_rules():
    """Weak typing applies only next to an operand with dimensions: a 0-d float64 array
    with a 0-d float32 tensor promotes, as NumPy does."""
    t = leaf(dtype=np.float32)
    out = t * np.array(2.0)
    assert out.dtype == np.float64
    out.backward()
    assert t.grad.dtype == np.float32 and t.grad.item() == 2.0


# ---- dtypes: a VJP result of another dtype is cast to the input's ---------------------------
def test_float16_times_float32_gives_each_input_a_gradient_of_its_own_dtype():
    a, b = leaf(5, dtype=np.float16), leaf(5, dtype=np.float32)
    g = RNG.standard_normal(5).astype(np.float32)
    out = a * b
    assert out.dtype == np.float32
    out.backward(g)
    assert a.grad.dtype == np.float16 and b.grad.dtype == np.float32
    np.testing.assert_array_equal(a.grad, (g * b.data).astype(np.float16))
    np.testing.assert_array_equal(b.grad, g * a.data.astype(np.float32))


def test_a_vjp_returning_float64_for_a_float32_input_is_cast_and_kept():
    @mg.op
    def up(x):
        return x * 3.0, lambda g: g.astype(np.float64) * 3.0

    x = leaf(3, dtype=np.float32)
    up(x).backward(np.ones(3, np.float32))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, np.full(3, 3.0, np.float32))


# ---- constants and requires_grad=False ------------------------------------------------------
def test_a_constant_tensor_gets_no_gradient_and_is_still_an_operand():
    a = leaf(4)
    c = mg.Tensor(RNG.standard_normal(4))  # requires_grad=False
    g = RNG.standard_normal(4)
    (c * a).backward(g)  # the constant first: input 1 is edge 0
    assert c.grad is None
    np.testing.assert_array_equal(a.grad, g * c.data)


def test_a_write_into_a_constant_operand_is_detected():
    a = leaf(4)
    c = mg.Tensor(RNG.standard_normal(4))
    out = c * a
    c += 1.0  # allowed (c requires no grad), and counted
    with pytest.raises(RuntimeError, match=r"op 'mul': input 0 \(shape \(4,\), float64\)"):
        out.backward(np.ones(4))
    assert a.grad is None


def test_a_write_into_an_edge_input_is_detected():
    a = leaf(4)
    h = a * 2.0
    out = h * h
    with mg.no_grad():
        h += 1.0
    with pytest.raises(RuntimeError, match="op 'mul': input 0"):
        out.backward(np.ones(4))


def test_a_write_through_a_view_made_under_no_grad_is_detected():
    """A result that views its input shares the input's version cell, in no_grad too."""
    a = leaf(6)
    c = mg.Tensor(RNG.standard_normal(6))
    out = a * c
    with mg.no_grad():
        v = c.reshape(2, 3)
    v[0, 0] = 5.0
    assert c.version == 1
    with pytest.raises(RuntimeError, match="op 'mul'"):
        out.backward(np.ones(6))


def test_no_grad_records_nothing():
    a, b = leaf(3), leaf(3)
    with mg.no_grad():
        out = a * b
    assert not out.requires_grad and out.is_leaf and out.version == 0


# ---- which VJP results may be kept as gradient buffers ------------------------------------
def test_an_unshared_first_gradient_of_an_intermediate_is_summed_into_in_place():
    """h feeds two ops whose VJPs return fresh arrays: the first becomes h's gradient
    buffer and the second is added into it, so h's VJP receives the first array itself."""
    made, seen = [], []

    @mg.op
    def fresh(x):
        def vjp(g):
            out = g * 2.0
            made.append(weakref.ref(out))  # a weak reference does not count as a user
            return out
        return x * 2.0, vjp

    @mg.op
    def spy(x):
        def vjp(g):
            seen.append(g)
            return g
        return x.copy(), vjp

    a = leaf(3)
    h = spy(a)
    (fresh(h) + fresh(h)).backward(np.ones(3))
    assert any(r() is seen[0] for r in made)
    np.testing.assert_array_equal(a.grad, np.full(3, 4.0))


def test_a_saved_array_returned_by_a_vjp_is_never_written_into():
    """A VJP that returns an array it keeps: neither an intermediate's running sum nor a
    leaf's .grad may be that array, or the next contribution would be added into it."""
    saved = np.arange(3.0)

    @mg.op
    def returns_saved(x):
        return x * 1.0, lambda g: saved  # (wrong math on purpose)

    a = leaf(3)
    h = a * 1.0
    (returns_saved(h) + returns_saved(h) + h).backward(np.ones(3))
    np.testing.assert_array_equal(saved, np.arange(3.0))
    np.testing.assert_array_equal(a.grad, 2 * np.arange(3.0) + 1.0)
    b = leaf(3)
    (returns_saved(b) + b).backward(np.ones(3))  # a leaf's first gradient is the saved one
    np.testing.assert_array_equal(saved, np.arange(3.0))
    np.testing.assert_array_equal(b.grad, np.arange(3.0) + 1.0)


def test_a_saved_array_of_an_equal_but_distinct_dtype_is_never_written_into():
    """float64 with metadata equals float64 but is another dtype object: such a result
    takes the checked path, which passes it on unchanged; it is still not ours to keep."""
    saved = np.arange(3.0).astype(np.dtype(np.float64, metadata={"note": 1}))
    assert saved.dtype == np.float64 and saved.dtype is not np.dtype(np.float64)

    @mg.op
    def returns_saved(x):
        return x * 1.0, lambda g: saved  # (wrong math on purpose)

    a = leaf(3)
    h = a * 1.0
    (returns_saved(h) + returns_saved(h)).backward(np.ones(3))
    b = leaf(3)
    (returns_saved(b) + b).backward(np.ones(3))
    np.testing.assert_array_equal(saved, np.arange(3.0))
    np.testing.assert_array_equal(a.grad, 2 * np.arange(3.0))
    np.testing.assert_array_equal(b.grad, np.arange(3.0) + 1.0)


def test_a_subclass_result_becomes_a_plain_copy():
    class Marked(np.ndarray):
        pass

    kept = []

    @mg.op
    def marked(x):
        def vjp(g):
            out = np.asarray(g * 1.0).view(Marked)
            kept.append(out)
            return out
        return x * 1.0, vjp

    a = leaf(3)
    h = a * 1.0
    (marked(h) + marked(h)).backward(np.ones(3))
    assert type(a.grad) is np.ndarray
    np.testing.assert_array_equal(a.grad, np.full(3, 2.0))
    for out in kept:  # never written into
        np.testing.assert_array_equal(out, np.ones(3))


# ---- bad VJP results: the same errors on every path ----------------------------------------
@pytest.mark.parametrize("result, error, message", [
    (lambda g: g.tolist(), TypeError, "returned a list"),
    (lambda g: None, TypeError, "returned None"),
    (lambda g: 1.0, TypeError, "returned a float"),
    (lambda g: g.astype(np.complex128), TypeError, "returned an array of dtype complex128"),
    (lambda g: np.ones(5), ValueError, r"returned a gradient of shape \(5,\)"),
    (lambda g: np.ones((3, 2)), ValueError, r"returned a gradient of shape \(3, 2\)"),
])
def test_a_bad_vjp_result_is_refused_naming_the_op_and_input(result, error, message):
    @mg.op
    def bad(c, x):
        return x * 1.0, (None, result)

    x = leaf(3)
    with pytest.raises(error, match=message) as info:
        bad(np.ones(3), x).backward(np.ones(3))
    assert "op 'bad'" in str(info.value)
    if error is TypeError:
        assert "for input 1" in str(info.value)
    assert x.grad is None


def test_a_vjp_result_in_the_output_shape_is_summed_to_the_input_shape():
    @mg.op
    def spread(x):
        return np.broadcast_to(x, (4, 3)).copy(), lambda g: g  # the engine sums it back

    x = leaf(1, 3)
    g = RNG.standard_normal((4, 3))
    spread(x).backward(g)
    np.testing.assert_allclose(x.grad, g.sum(axis=0, keepdims=True), **close(np.float64))


# ---- op's wrapper ---------------------------------------------------------------------
def test_a_tensor_requiring_grad_without_a_vjp_is_refused_in_every_position():
    @mg.op
    def first_only(x, y, z):
        return x + y + z, (lambda g: g,)  # no VJP for y and z

    x, y = leaf(2), leaf(2)
    with pytest.raises(TypeError, match="first_only y: a Tensor that requires grad"):
        first_only(x, y, 1.0)
    with pytest.raises(TypeError, match="first_only z: a Tensor that requires grad"):
        first_only(x, 1.0, y)
    first_only(x, y.detach(), 1.0).backward(np.ones(2))
    np.testing.assert_array_equal(x.grad, np.ones(2))


def test_keyword_arguments_reach_the_forward_and_arrays_by_keyword_are_inputs():
    x = leaf(2, 3)
    x.sum(axis=1, keepdims=True).backward(np.ones((2, 1)))
    np.testing.assert_array_equal(x.grad, np.ones((2, 3)))
    x.grad = None
    w = leaf(3)
    F.mul(x, b=w).backward(np.ones((2, 3)))
    np.testing.assert_array_equal(w.grad, x.data.sum(axis=0))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_backward_without_grad_seeds_ones_of_the_output_dtype(dtype, shape):
    x = leaf(*shape, dtype=dtype)
    (x * 3.0).backward()
    assert x.grad.dtype == dtype and x.grad.shape == shape
    np.testing.assert_array_equal(x.grad, np.full(shape, 3.0, dtype))
