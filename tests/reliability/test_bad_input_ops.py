"""Bad input to every op in ``minigrad.ops.PUBLIC_OPS``: a clear error, nothing modified.

Two tables. ``GENERIC`` feeds each op, in place of its main array argument, the same wrong
things: None, a string, an object array, a complex array (a Tensor cannot hold complex data,
so an op must not return one either); and a nested list must work as the array it spells.
``SPECIFIC`` covers each op's own arguments: axes, shapes, eps, labels, indices.

The array inputs of every op are checked in one place, ``minigrad.defop.as_array_input``
(each op declares how many leading parameters are arrays); each op checks its own other
arguments.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.ops import PUBLIC_OPS

from reliability_util import bad, check_bad, params

pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning",
                                        "ignore::RuntimeWarning")

VALUES = np.arange(1.0, 7.0).reshape(2, 3) / 7  # in (0, 1): fine for log, sqrt, pow
LABELS = np.array([0, 2])
MASK = np.array([[True, False, True], [False, True, False]])


def leaf():
    return mg.Tensor(VALUES.copy(), requires_grad=True)


T = leaf()  # the valid Tensor argument of the binary ops (checked unchanged by every case)

#: op -> a call with ``v`` in the place of its main array argument (shape (2, 3), or (3, 2)
#: for matmul's right operand)
SLOT = {
    "add": lambda v: F.add(T, v), "sub": lambda v: F.sub(T, v), "mul": lambda v: F.mul(T, v),
    "div": lambda v: F.div(T, v), "pow": lambda v: F.pow(T, v),
    "maximum": lambda v: F.maximum(T, v), "minimum": lambda v: F.minimum(T, v),
    "neg": F.neg, "exp": F.exp, "log": F.log, "sqrt": F.sqrt, "tanh": F.tanh, "abs": F.abs,
    "sigmoid": F.sigmoid, "relu": F.relu,
    "where": lambda v: F.where(MASK, T, v), "clip": lambda v: F.clip(v, 0.2, 0.8),
    "astype": lambda v: F.astype(v, np.float32),
    "sum": F.sum, "mean": F.mean, "max": F.max, "min": F.min, "var": F.var,
    "reshape": lambda v: F.reshape(v, (6,)), "transpose": F.transpose,
    "permute": lambda v: F.permute(v, 1, 0), "swapaxes": lambda v: F.swapaxes(v, 0, 1),
    "expand_dims": lambda v: F.expand_dims(v, 0), "squeeze": F.squeeze,
    "broadcast_to": lambda v: F.broadcast_to(v, (2, 2, 3)), "getitem": lambda v: F.getitem(v, 0),
    "concatenate": lambda v: F.concatenate([T, v]), "stack": lambda v: F.stack([T, v]),
    "split": lambda v: F.split(v, 3, axis=1),
    "matmul": lambda v: F.matmul(T, v),
    "linear": lambda v: F.linear(v, np.ones((3, 4))),
    "softmax": F.softmax, "log_softmax": F.log_softmax, "logsumexp": F.logsumexp,
    "layer_norm": F.layer_norm, "gelu_tanh": F.gelu_tanh,
    "cross_entropy": lambda v: F.cross_entropy(v, LABELS),
    "self_attention": lambda v: F.self_attention(v, 1),  # (1, 2, 3): B 1, T 2, D 1
    "conv1d": lambda v: F.conv1d(v, np.ones((1, 2, 1))),  # (1, 2, 3): B 1, C 2, L 3
    "conv2d": lambda v: F.conv2d(v, np.ones((1, 1, 1, 1))),  # (1, 1, 2, 3): NCHW
    "max_pool2d": lambda v: F.max_pool2d(v, 1), "avg_pool2d": lambda v: F.avg_pool2d(v, 1),
    "pad": lambda v: F.pad(v, 1),
    # issue 14: indexing, shape and attention (ops-c)
    "take_along_axis": lambda v: F.take_along_axis(v, np.array([[0], [2]]), 1),
    "put_along_axis": lambda v: F.put_along_axis(v, np.array([[0], [2]]), 0.5, 1),
    "tile": lambda v: F.tile(v, 2), "repeat": lambda v: F.repeat(v, 2, 1),
    "roll": lambda v: F.roll(v, 1), "flip": F.flip, "tril": F.tril, "triu": F.triu,
    "moveaxis": lambda v: F.moveaxis(v, 0, 1), "diagonal": F.diagonal, "trace": F.trace,
    "scaled_dot_product_attention": lambda v: F.scaled_dot_product_attention(v, T, T),
    "softplus": F.softplus, "silu": F.silu, "gelu": F.gelu, "leaky_relu": F.leaky_relu,
    "elu": F.elu, "selu": F.selu, "log_sigmoid": F.log_sigmoid, "hardtanh": F.hardtanh,
    "softmin": F.softmin,
    "mse_loss": lambda v: F.mse_loss(v, T), "l1_loss": lambda v: F.l1_loss(v, T),
    "smooth_l1_loss": lambda v: F.smooth_l1_loss(v, T),
    "binary_cross_entropy_with_logits": lambda v: F.binary_cross_entropy_with_logits(v, T),
    "nll_loss": lambda v: F.nll_loss(v, LABELS),
}


def test_the_table_covers_every_public_op():
    from test_bad_input_ops_more import SLOT as SLOT_MORE  # the ops-a ops (issue 14)

    assert sorted(set(SLOT) | set(SLOT_MORE)) == sorted(PUBLIC_OPS)


def slot_values(op):
    if op in ("self_attention", "conv1d"):
        return VALUES.reshape(1, 2, 3).copy()
    if op in ("conv2d", "max_pool2d", "avg_pool2d"):
        return VALUES.reshape(1, 1, 2, 3).copy()
    return VALUES.T.copy() if op == "matmul" else VALUES.copy()


KINDS = {  # kind -> (make the bad value from valid values, words the message must hold)
    "None": (lambda v: None, ("None",)),
    "str": (lambda v: "abc", (("'abc'", "str", "<U3"),)),
    "object": (lambda v: v.astype(object), ("object",)),
    "complex": (lambda v: v.astype(np.complex128), ("complex",)),
}
def _generic():
    cases = []
    for kind, (make, words) in KINDS.items():
        for op in SLOT:
            value = make(slot_values(op))
            keep = (T.data,) + ((value,) if isinstance(value, np.ndarray) else ())
            cases.append(bad(f"{op}-{kind}", lambda f=SLOT[op], v=value: f(v), (TypeError,),
                             op, *words, keep=keep))
    for case in cases:  # cross_entropy's message names its logits as a dtype problem
        if case.id in ("cross_entropy-complex", "cross_entropy-object"):
            case.exc = (ValueError, TypeError)
    return cases


GENERIC = _generic()


@pytest.mark.parametrize("case", params(GENERIC))
def test_wrong_kind_of_argument(case):
    check_bad(case)


@pytest.mark.parametrize("op", list(SLOT))
def test_nested_list_is_read_as_the_array_it_spells(op):
    """A list where an array goes: the op works as on ``np.asarray(list)`` (or refuses it
    with a TypeError naming it), but never fails with an AttributeError from inside."""
    values = slot_values(op)
    nested = values.tolist()
    try:
        got = SLOT[op](nested)
    except TypeError as e:
        assert "list" in str(e) and op in str(e)
        return
    want = SLOT[op](values)
    got, want = (got, want) if isinstance(got, list) else ([got], [want])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.data, w.data)


# ---- each op's own arguments -----------------------------------------------------------------
E23 = np.zeros((0, 3))
SPECIFIC = [
    # shape ops
    bad("reshape-size", lambda: F.reshape(T, (4,)), ValueError, "6", "(4,)", keep=(T.data,),
        numpy=True),
    bad("transpose-repeated-axis", lambda: F.transpose(T, (0, 0)), ValueError, "repeated axis",
        numpy=True),
    bad("transpose-too-many-axes", lambda: F.transpose(T, (0, 1, 2)), ValueError,
        "(0, 1, 2)", "2"),
    bad("swapaxes-out-of-range", lambda: F.swapaxes(T, 0, 5), ValueError, "5", "dimension 2",
        numpy=True),
    bad("expand_dims-out-of-range", lambda: F.expand_dims(T, 5), ValueError, "5", numpy=True),
    bad("squeeze-axis-not-1", lambda: F.squeeze(T, 0), ValueError, "squeeze", "(2, 3)"),
    bad("broadcast_to-incompatible", lambda: F.broadcast_to(T, (4,)), ValueError, "(2, 3)",
        "(4,)"),
    bad("getitem-out-of-range", lambda: T[5], IndexError, "5", "size 2", numpy=True),
    bad("getitem-float-index", lambda: T[1.5], IndexError, "integers", numpy=True),
    bad("getitem-bool-mask-shape", lambda: T[np.array([True, False, True])], IndexError,
        "3", "2", numpy=True),
    bad("concatenate-empty-list", lambda: F.concatenate([]), ValueError, "at least one",
        numpy=True),
    bad("concatenate-mismatch", lambda: F.concatenate([T, np.ones((2, 4))]), ValueError,
        "size 3", "size 4", numpy=True),
    bad("concatenate-None", lambda: F.concatenate(None), TypeError, "concatenate", "None"),
    bad("stack-mismatch", lambda: F.stack([T, np.ones((2, 4))]), ValueError, "(2, 3)",
        "(2, 4)"),
    bad("stack-empty-list", lambda: F.stack([]), ValueError, "at least one", numpy=True),
    bad("split-uneven", lambda: F.split(T, 4, axis=1), ValueError, "4", "length 3",
        keep=(T.data,), numpy=True),  # (split's own message: clear, without 'expected')
    bad("split-axis-out-of-range", lambda: F.split(T, 3, axis=5), ValueError, "axis", "5"),
    bad("split-zero-sections", lambda: F.split(T, 0), ValueError, "0", keep=(T.data,),
        numpy=True),
    # reductions
    bad("sum-axis-out-of-range", lambda: F.sum(T, axis=5), ValueError, "axis", "5",
        numpy=True),
    bad("sum-axis-str", lambda: F.sum(T, axis="a"), TypeError, "str", numpy=True),
    bad("mean-axis-repeated", lambda: F.mean(T, axis=(0, 0)), ValueError, "repeated",
        numpy=True),
    bad("max-empty", lambda: F.max(E23), ValueError, "max", "(0, 3)"),
    bad("min-empty", lambda: F.min(E23, axis=0), ValueError, "min", "(0, 3)"),
    bad("var-ddof-str", lambda: F.var(T, ddof="a"), TypeError, "ddof", "'a'",
    ),
    # linalg
    bad("matmul-inner-mismatch", lambda: F.matmul(T, np.ones((2, 2))), ValueError,
        "size 2", "3", numpy=True, keep=(T.data,)),
    bad("matmul-0d", lambda: F.matmul(T, mg.Tensor(1.0)), ValueError, "matmul", "()"),
    bad("linear-inner-mismatch", lambda: F.linear(T, np.ones((4, 2))), ValueError, "linear",
        "(2, 3)", "(4, 2)", keep=(T.data,)),
    bad("linear-bias-shape", lambda: F.linear(T, np.ones((3, 2)), np.ones(3)), ValueError,
        "bias", "(3,)", "(2,)"),
    # elementwise
    bad("add-shape-mismatch", lambda: F.add(T, np.ones(4)), ValueError, "(2,3)", "(4,)",
        numpy=True, keep=(T.data,)),
    bad("where-cond-shape", lambda: F.where(np.ones(4, bool), T, 0.0), ValueError, "(4,)",
        "(2,3)", numpy=True),
    bad("where-cond-None", lambda: F.where(None, T, 0.0), TypeError, "where", "None"),
    bad("clip-no-bound", lambda: F.clip(T, None, None), ValueError, "a_min", "a_max"),
    bad("clip-str-bound", lambda: F.clip(T, "a", 1.0), TypeError, "<U1", numpy=True),
    bad("astype-unknown-dtype", lambda: F.astype(T, "foo"), TypeError, "foo", numpy=True),
    bad("astype-complex", lambda: F.astype(T, np.complex128), TypeError, "complex"),
    # fused nn ops
    bad("softmax-axis-out-of-range", lambda: F.softmax(T, axis=5), ValueError, "5",
        numpy=True),
    bad("layer_norm-weight-wrong-length", lambda: F.layer_norm(T, np.ones(4)), ValueError,
        "weight", "(4,)", "(3,)"),
    bad("layer_norm-weight-2d", lambda: F.layer_norm(T, np.ones((2, 3))), ValueError,
        "weight", "(2, 3)", "(3,)"),
    bad("layer_norm-bias-2d", lambda: F.layer_norm(T, None, np.ones((2, 3))), ValueError,
        "bias", "(2, 3)", "(3,)"),
    bad("layer_norm-negative-eps", lambda: F.layer_norm(T, eps=-1.0), ValueError, "eps",
        "-1.0"),
    bad("layer_norm-eps-str", lambda: F.layer_norm(T, eps="a"), TypeError, "eps", "'a'"),
    bad("cross_entropy-label-too-big", lambda: F.cross_entropy(T, np.array([0, 3])),
        ValueError, "target", "[0, 3]", "[0, 2]", keep=(T.data,)),
    bad("cross_entropy-label-negative", lambda: F.cross_entropy(T, np.array([-1, 0])),
        ValueError, "target", "-1"),
    bad("cross_entropy-labels-shape", lambda: F.cross_entropy(T, np.array([0, 1, 2])),
        ValueError, "target", "(3,)", "(2,)"),
    bad("cross_entropy-labels-bool", lambda: F.cross_entropy(T, np.array([True, False])),
        TypeError, "target", "bool"),
    bad("cross_entropy-labels-None", lambda: F.cross_entropy(T, None), TypeError, "target",
        "object"),
    bad("cross_entropy-soft-shape", lambda: F.cross_entropy(T, np.ones((2, 4)) / 4),
        ValueError, "target", "(2, 4)", "(2, 3)"),
    bad("cross_entropy-int-logits", lambda: F.cross_entropy(np.ones((2, 3), int), LABELS),
        ValueError, "logits", "int64"),
    bad("cross_entropy-0d-logits", lambda: F.cross_entropy(mg.Tensor(1.0), np.array(0)),
        ValueError, "logits", "()"),
    bad("cross_entropy-reduction", lambda: F.cross_entropy(T, LABELS, reduction="avg"),
        ValueError, "reduction", "'avg'"),
    bad("cross_entropy-smoothing-range", lambda: F.cross_entropy(T, LABELS,
                                                                label_smoothing=1.5),
        ValueError, "label_smoothing", "1.5"),
    bad("cross_entropy-smoothing-nan", lambda: F.cross_entropy(T, LABELS,
                                                              label_smoothing=np.nan),
        ValueError, "label_smoothing", "nan"),
    bad("cross_entropy-smoothing-str", lambda: F.cross_entropy(T, LABELS, label_smoothing="a"),
        TypeError, "label_smoothing", "'a'"),
    bad("cross_entropy-no-classes", lambda: F.cross_entropy(np.zeros((2, 0)), np.zeros(2, int)),
        ValueError, "target", "[0, -1]"),
    # self_attention: packed (B, T, 3D) projections
    bad("self_attention-2d", lambda: F.self_attention(T, 1), ValueError, "qkv", "(2, 3)",
        "(B, T, 3·D)", keep=(T.data,)),
    bad("self_attention-width", lambda: F.self_attention(np.ones((2, 3, 6)), 4), ValueError,
        "qkv", "(2, 3, 6)", "num_heads = 4"),
    bad("self_attention-empty", lambda: F.self_attention(np.ones((0, 3, 6)), 1), ValueError,
        "qkv", "(0, 3, 6)", "B, T > 0"),
    bad("self_attention-heads-zero", lambda: F.self_attention(np.ones((2, 3, 6)), 0),
        ValueError, "num_heads", "0", "positive integer"),
    bad("self_attention-heads-float", lambda: F.self_attention(np.ones((2, 3, 6)), 1.0),
        ValueError, "num_heads", "1.0", "positive integer"),
    bad("self_attention-scale-negative", lambda: F.self_attention(np.ones((2, 3, 6)), 1,
                                                                   scale=-1.0),
        ValueError, "scale", "-1.0", "positive finite"),
    bad("self_attention-scale-nan", lambda: F.self_attention(np.ones((2, 3, 6)), 1,
                                                              scale=np.nan),
        ValueError, "scale", "nan", "positive finite"),
]


@pytest.mark.parametrize("case", params(SPECIFIC))
def test_op_argument(case):
    check_bad(case)
    assert np.array_equal(T.data, VALUES) and T.grad is None


def test_a_failed_op_records_nothing():
    """An op that raises leaves no half-built graph: the inputs stay leaves without grads."""
    t = leaf()
    with pytest.raises(ValueError):
        F.add(t, np.ones(4))
    assert t.is_leaf and t.grad is None
    (t * 2).sum().backward()
    np.testing.assert_array_equal(t.grad, np.full((2, 3), 2.0))
