"""0-d tensors: every Tensor holds an np.ndarray (never a NumPy scalar), comparisons included.

NumPy returns scalars, not 0-d arrays, from most operations on 0-d arrays (``a < b``,
``np.sum(a)``, ``a[()]``); a Tensor wrapping one would hold a value that no op accepts.
"""
from __future__ import annotations

import operator

import numpy as np
import pytest
from op_cases.catalogs import zero_d_catalog  # the catalog: tests/minigrad/op_cases/

import minigrad as mg
from minigrad import F
from minigrad.ops import PUBLIC_OPS

COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("compare", COMPARISONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("other", ["tensor", "array", "number"])
def test_a_comparison_of_0d_operands_holds_a_0d_bool_array(compare, other):
    x = mg.Tensor(1.0, requires_grad=True)
    y = {"tensor": mg.Tensor(2.0), "array": np.array(2.0), "number": 2.0}[other]
    out = compare(x, y)
    assert type(out.data) is np.ndarray and out.shape == () and out.dtype == bool
    assert out.data == compare(1.0, 2.0)
    assert not out.requires_grad


def test_a_0d_comparison_serves_as_a_mask_in_where_and_arithmetic():
    x = mg.Tensor(1.0, requires_grad=True)
    y = mg.Tensor(2.0)
    picked = F.where(x < y, x, 0.0)
    assert picked.item() == 1.0
    picked.backward()
    assert x.grad == 1.0 and type(x.grad) is np.ndarray
    assert ((x < y) * 1.0).item() == 1.0
    assert (x < y).sum().item() == 1


def test_comparisons_take_0d_operands_as_weakly_typed_numbers():
    """``x32 > Tensor(0.1)`` is ``x32 > 0.1`` (0.1 rounded to float32, as PyTorch compares),
    not the float64 comparison that NumPy makes for a 0-d float64 array."""
    x32 = np.array([0.1, 0.2], dtype=np.float32)
    for compare in COMPARISONS:
        expected = compare(x32, 0.1)
        for y in (mg.Tensor(0.1), np.array(0.1)):
            np.testing.assert_array_equal(compare(mg.Tensor(x32), y).data, expected)


def test_the_catalog_covers_every_public_op():
    assert set(zero_d_catalog()) == set(PUBLIC_OPS)


@pytest.mark.parametrize("name", sorted(zero_d_catalog()))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_op_with_a_0d_result_holds_an_ndarray_and_0d_leaves_get_ndarray_grads(name, dtype):
    for fn in zero_d_catalog()[name]:
        a = mg.Tensor(np.array(0.75, dtype), requires_grad=True)
        b = mg.Tensor(np.array(1.5, dtype), requires_grad=True)
        out = fn(a, b)
        assert isinstance(out, mg.Tensor) and type(out.data) is np.ndarray, name
        assert out.shape == ()
        assert out.requires_grad, name
        out.backward()
        for t in (a, b):
            assert t.grad is None or (type(t.grad) is np.ndarray and t.grad.shape == ()
                                      and t.grad.dtype == dtype), name
        assert a.grad is not None, name


def test_a_0d_tensor_of_0d_tensors_ops_in_no_grad_mode_holds_an_ndarray():
    a = mg.Tensor(2.0)
    with mg.no_grad():
        for out in (a + a, a < a, a.sum(), a[()], -a, F.stack([a, a]).sum()):
            assert type(out.data) is np.ndarray


def test_a_0d_operand_indexed_by_an_array_stays_an_array():
    """Only operands are weakly typed: an index array does not turn the 0-d array it indexes
    into a Python number."""
    t = mg.Tensor(2.0, requires_grad=True)
    for index in (np.array([True]), np.array([0])):  # NumPy's IndexError, not a float's error
        with pytest.raises(IndexError):
            np.array(2.0)[index]
        with pytest.raises(IndexError):
            t[index]
    picked = t[np.array(True)]
    np.testing.assert_array_equal(picked.data, np.array(2.0)[np.array(True)])
    picked.backward(np.array([3.0]))
    assert t.grad == 3.0
    with pytest.raises(ValueError, match="cross_entropy logits"):
        F.cross_entropy(mg.Tensor(1.0), np.array([0]))


def test_constants_are_not_operands():
    """A 0-d array passed as a constant (an axis, a label) reaches the forward as given."""
    x = mg.Tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    assert F.sum(x, axis=np.array(1)).shape == (2,)
    assert F.cross_entropy(x[0], np.array(2)).dtype == np.float32


@pytest.mark.parametrize("other", [None, "abc", object()])
def test_equality_with_a_non_array_is_python_identity_not_an_error(other):
    """``t == None`` is False and ``t != None`` True (as in PyTorch): comparing with something
    that is not array-like falls back to identity, so ``t in [None, t]`` works."""
    t = mg.Tensor(np.arange(3.0))
    assert (t == other) is False
    assert (t != other) is True
    assert t in [other, t]
