"""Every op on inputs of non-native byte order, negative strides or no contiguity.

Such arrays are ordinary NumPy arrays (``np.load`` of a big-endian file, ``x[::-1]``,
``x[:, ::2]``); every op must give the value and the gradients that it gives for the same
numbers in a native contiguous array.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import minigrad as mg

NON_NATIVE = ">" if sys.byteorder == "little" else "<"


def _big_endian(x):
    return x.astype(x.dtype.newbyteorder(NON_NATIVE))


def _reversed(x):
    """The same values in a view with negative strides on every axis."""
    return np.flip(np.flip(x).copy())


def _strided(x):
    """The same values in a view that is not contiguous."""
    return np.stack([x, -x], axis=-1)[..., 0]


LAYOUTS = {"big-endian": _big_endian, "reversed": _reversed, "strided": _strided,
           "big-endian-reversed": lambda x: _reversed(_big_endian(x))}


def _run(case, convert):
    ts = [mg.Tensor(convert(x), requires_grad=True) if x.dtype.kind == "f" else x
          for x in case.inputs]
    out = case.fn(*ts)
    cot = np.random.default_rng(0).standard_normal(out.shape)
    out.backward(cot)
    return out, [t.grad for t in ts if isinstance(t, mg.Tensor)]


def test_max_backward_on_a_big_endian_array():
    t = mg.Tensor(_big_endian(np.arange(6.0)), requires_grad=True)
    t.max().backward()
    np.testing.assert_array_equal(t.grad, [0, 0, 0, 0, 0, 1])
    t = mg.Tensor(_big_endian(np.array([1.0, 3.0, 3.0])), requires_grad=True)
    t.min().backward()
    np.testing.assert_array_equal(t.grad, [1, 0, 0])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_op_gives_the_native_result_for_any_layout(mg_op_case, layout):
    case = mg_op_case
    inputs = case.inputs
    native_out, native_grads = _run(case, lambda x: x)
    before = [x.copy() for x in inputs]
    out, grads = _run(case, LAYOUTS[layout])
    tol = 200 * np.finfo(np.float64).eps  # BLAS need not take the same path for a copy
    assert out.shape == native_out.shape and out.dtype.kind == native_out.dtype.kind
    np.testing.assert_allclose(out.data, native_out.data, rtol=tol, atol=tol, err_msg=case.id)
    for g, ng in zip(grads, native_grads, strict=True):
        assert g.shape == ng.shape
        np.testing.assert_allclose(g, ng, rtol=tol, atol=tol, err_msg=case.id)
    for x, b in zip(inputs, before, strict=True):
        np.testing.assert_array_equal(x, b)
