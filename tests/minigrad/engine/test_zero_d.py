"""0-d tensors: every Tensor holds an np.ndarray (never a NumPy scalar), comparisons included.

NumPy returns scalars, not 0-d arrays, from most operations on 0-d arrays (``a < b``,
``np.sum(a)``, ``a[()]``); a Tensor wrapping one would hold a value that no op accepts.
"""
from __future__ import annotations

import operator

import numpy as np
import pytest

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


def test_the_issue_cases_work():
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


def _zero_d_catalog():
    """Every public op applied to 0-d operands (or, where the op needs axes, reduced to a 0-d
    result), as ``name -> list of functions of two 0-d float Tensors``."""
    v = mg.Tensor(np.arange(1.0, 4.0))  # a vector, for ops that need axes
    m = mg.Tensor(np.arange(6.0).reshape(2, 3))
    return {
        "add": [F.add], "sub": [F.sub], "mul": [F.mul], "div": [F.div], "pow": [F.pow],
        "neg": [lambda a, b: F.neg(a)], "exp": [lambda a, b: F.exp(a)],
        "log": [lambda a, b: F.log(a)], "sqrt": [lambda a, b: F.sqrt(a)],
        "tanh": [lambda a, b: F.tanh(a)], "abs": [lambda a, b: F.abs(a)],
        "sigmoid": [lambda a, b: F.sigmoid(a)], "relu": [lambda a, b: F.relu(a)],
        "maximum": [F.maximum], "minimum": [F.minimum],
        "where": [lambda a, b: F.where(a < b, a, b), lambda a, b: F.where(True, a, 2.0)],
        "clip": [lambda a, b: F.clip(a, 0.0, b)], "astype": [lambda a, b: F.astype(a, np.float32)],
        "sum": [lambda a, b: F.sum(a), lambda a, b: F.sum(v * a)],
        "mean": [lambda a, b: F.mean(a), lambda a, b: F.mean(v * a)],
        "max": [lambda a, b: F.max(a), lambda a, b: F.max(v * a)],
        "min": [lambda a, b: F.min(a), lambda a, b: F.min(v * a)],
        "var": [lambda a, b: F.var(a), lambda a, b: F.var(v * a)],
        "reshape": [lambda a, b: F.reshape(a, ()), lambda a, b: F.reshape(v * a, (3, 1))[1, 0]],
        "transpose": [lambda a, b: F.transpose(a)], "permute": [lambda a, b: F.permute(a)],
        "swapaxes": [lambda a, b: F.swapaxes(F.reshape(a, (1, 1)), 0, 1)[0, 0]],
        "expand_dims": [lambda a, b: F.expand_dims(a, 0)[0]],
        "squeeze": [lambda a, b: F.squeeze(a), lambda a, b: F.squeeze(F.reshape(a, (1,)))],
        "broadcast_to": [lambda a, b: F.broadcast_to(a, ())],
        "getitem": [lambda a, b: a[()], lambda a, b: a[...], lambda a, b: (v * a)[1],
                    lambda a, b: (m * a)[1, 2], lambda a, b: (v * a)[np.array(2)]],
        "concatenate": [lambda a, b: F.concatenate([F.reshape(a, (1,)), v])[0]],
        "stack": [lambda a, b: F.stack([a, b])[0]],
        "split": [lambda a, b: F.split(v * a, 3)[0][0]],
        "matmul": [lambda a, b: F.matmul(v * a, v)],
        "linear": [lambda a, b: F.linear(v * a, np.ones((3, 1)))[0]],
        "softmax": [lambda a, b: F.softmax(v * a)[0]],
        "log_softmax": [lambda a, b: F.log_softmax(v * a)[0]],
        "logsumexp": [lambda a, b: F.logsumexp(a), lambda a, b: F.logsumexp(v * a)],
        "layer_norm": [lambda a, b: F.layer_norm(v * a)[0]],
        "gelu_tanh": [lambda a, b: F.gelu_tanh(a)],
        "cross_entropy": [lambda a, b: F.cross_entropy(v * a, 1),
                          lambda a, b: F.cross_entropy(v * a, np.array(1), reduction="none")],
        "self_attention": [lambda a, b: F.self_attention(
            F.reshape(F.broadcast_to(a, (6,)), (1, 1, 6)), 2)[0, 0, 0]],
        "conv2d": [lambda a, b: F.conv2d(F.reshape(a, (1, 1, 1, 1)),
                                         F.reshape(b, (1, 1, 1, 1)))[0, 0, 0, 0]],
        "conv1d": [lambda a, b: F.conv1d(F.reshape(a, (1, 1, 1)), F.reshape(b, (1, 1, 1)))[0, 0, 0]],
        "max_pool2d": [lambda a, b: F.max_pool2d(F.reshape(a, (1, 1, 1, 1)), 1)[0, 0, 0, 0]],
        "avg_pool2d": [lambda a, b: F.avg_pool2d(F.reshape(a, (1, 1, 1, 1)), 1)[0, 0, 0, 0]],
        "pad": [lambda a, b: F.pad(F.reshape(a, (1,)), 1)[1]],
        # issue 14: indexing, shape and attention (ops-c)
        "take_along_axis": [lambda a, b: F.take_along_axis(v * a, np.array([2]), 0)[0]],
        "put_along_axis": [lambda a, b: F.put_along_axis(v * a, np.array([1]), b, 0)[1]],
        "tile": [lambda a, b: F.tile(a, ()), lambda a, b: F.tile(a, 2)[1]],
        "repeat": [lambda a, b: F.repeat(a, 3)[2]], "roll": [lambda a, b: F.roll(a, 1)],
        "flip": [lambda a, b: F.flip(a)],
        "tril": [lambda a, b: F.tril(F.reshape(a, (1, 1)))[0, 0]],
        "triu": [lambda a, b: F.triu(F.reshape(a, (1, 1)))[0, 0]],
        "moveaxis": [lambda a, b: F.moveaxis(F.reshape(a, (1, 1)), 0, 1)[0, 0]],
        "diagonal": [lambda a, b: F.diagonal(F.reshape(a, (1, 1)))[0]],
        "trace": [lambda a, b: F.trace(F.reshape(a, (1, 1)))],
        "scaled_dot_product_attention": [lambda a, b: F.scaled_dot_product_attention(
            F.reshape(a, (1, 1)), F.reshape(b, (1, 1)), F.reshape(b, (1, 1)))[0, 0]],
        "softplus": [lambda a, b: F.softplus(a)], "silu": [lambda a, b: F.silu(a)],
        "gelu": [lambda a, b: F.gelu(a)], "leaky_relu": [lambda a, b: F.leaky_relu(a)],
        "elu": [lambda a, b: F.elu(a)], "selu": [lambda a, b: F.selu(a)],
        "log_sigmoid": [lambda a, b: F.log_sigmoid(a)], "hardtanh": [lambda a, b: F.hardtanh(a)],
        "softmin": [lambda a, b: F.softmin(a), lambda a, b: F.softmin(v * a)[0]],
        "mse_loss": [F.mse_loss, lambda a, b: F.mse_loss(v * a, v * b)],
        "l1_loss": [F.l1_loss, lambda a, b: F.l1_loss(v * a, v * b)],
        "smooth_l1_loss": [F.smooth_l1_loss, lambda a, b: F.smooth_l1_loss(v * a, v * b)],
        "binary_cross_entropy_with_logits": [F.binary_cross_entropy_with_logits],
        "nll_loss": [lambda a, b: F.nll_loss(v * a, 1),
                     lambda a, b: F.nll_loss(v * a, np.array(1), reduction="none")],
    }


def test_the_catalog_covers_every_public_op():
    from test_ops_a_catalogs import OPS_A  # the ops-a ops (issue 14) have their own catalog

    assert set(_zero_d_catalog()) | set(OPS_A) == set(PUBLIC_OPS)


@pytest.mark.parametrize("name", sorted(_zero_d_catalog()))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_op_with_a_0d_result_holds_an_ndarray_and_0d_leaves_get_ndarray_grads(name, dtype):
    for fn in _zero_d_catalog()[name]:
        a = mg.Tensor(np.array(0.75, dtype), requires_grad=True)
        b = mg.Tensor(np.array(1.5, dtype), requires_grad=True)
        out = fn(a, b)
        assert isinstance(out, mg.Tensor) and type(out.data) is np.ndarray, name
        assert out.shape == ()
        if out.requires_grad:
            out.backward()
            for t in (a, b):
                assert t.grad is None or (type(t.grad) is np.ndarray and t.grad.shape == ()
                                          and t.grad.dtype == dtype), name


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
