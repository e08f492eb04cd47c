"""Bad input to every op in ``minigrad.ops.PUBLIC_OPS``: a clear error, nothing modified.

Two tables. ``GENERIC`` feeds each op, in place of its main array argument, the same wrong
things: None, a string, an object array, a complex array (a Tensor cannot hold complex data,
so an op must not return one either); and a nested list must work as the array it spells.
``SPECIFIC`` covers each op's own arguments: axes, shapes, eps, labels, indices. The call
with a value in each op's main array slot is the shared catalog
``tests/minigrad/op_cases/catalogs.py:slot_catalog``.

The array inputs of every op are checked in one place, ``minigrad.defop.as_array_input``
(each op declares how many leading parameters are arrays); each op checks its own other
arguments.
"""
from __future__ import annotations

import numpy as np
import pytest
from op_cases.catalogs import SLOT_LABELS, SLOT_MASK, SLOT_VALUES, slot_catalog, slot_values
from reliability_util import bad, check_bad, params

import minigrad as mg
from minigrad import F
from minigrad.ops import PUBLIC_OPS

pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning",
                                        "ignore::RuntimeWarning")

VALUES = SLOT_VALUES  # in (0, 1): fine for log, sqrt, pow and every domain of ops/unary.py
LABELS = SLOT_LABELS
MASK = SLOT_MASK


def values_leaf():
    return mg.Tensor(VALUES.copy(), requires_grad=True)


T = values_leaf()  # the valid Tensor argument of the binary ops (checked unchanged by every case)

SLOT = slot_catalog(T)  # op -> a call with v in the place of its main array argument


def test_the_table_covers_every_public_op():
    assert sorted(SLOT) == sorted(PUBLIC_OPS)


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
    """A list where an array goes: the op works as on ``np.asarray(list)`` (every op does;
    none fails with an AttributeError from inside)."""
    values = slot_values(op)
    got = SLOT[op](values.tolist())
    want = SLOT[op](values)
    got, want = (got, want) if isinstance(got, list) else ([got], [want])
    for g, w in zip(got, want, strict=True):
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
        ValueError, "logits", "(2, 0)", "no classes"),
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

M3 = np.ones((2, 2, 2))
SPECIFIC += [  # contractions, reductions, scans, unary
    bad("einsum-subscripts-int", lambda: F.einsum(3, T), TypeError, "subscripts", "int"),
    bad("einsum-sublist-form", lambda: F.einsum(T, [0, 1]), TypeError, "subscripts", "Tensor"),
    bad("einsum-no-operands", lambda: F.einsum("ij"), ValueError, "operands", "at least one"),
    bad("einsum-too-many-operands", lambda: F.einsum("ij", T, T), ValueError, "operands",
        "got 2", "1 terms", keep=(T.data,)),
    bad("einsum-labels-vs-dims", lambda: F.einsum("ijk", T), ValueError, "operands[0]",
        "(2, 3)", "'ijk'", "3 dimensions"),
    bad("einsum-too-few-for-ellipsis", lambda: F.einsum("ijk...", T), ValueError,
        "operands[0]", "3 dimensions or more"),
    bad("einsum-size-mismatch", lambda: F.einsum("ij,ij", T, np.ones((3, 2))), ValueError,
        "operands[1]", "'i'", "size 3", "2"),
    bad("einsum-bad-label", lambda: F.einsum("i1", T), ValueError, "subscripts", "'1'"),
    bad("einsum-two-arrows", lambda: F.einsum("ij->j->i", T), ValueError, "'->'"),
    bad("einsum-output-label-twice", lambda: F.einsum("ij->ii", T), ValueError, "'i'"),
    bad("einsum-output-label-unknown", lambda: F.einsum("ij->k", T), ValueError, "'k'"),
    bad("einsum-ellipsis-missing-in-output", lambda: F.einsum("...j->j", M3), ValueError,
        "'...'", "output"),
    bad("einsum-stray-dot", lambda: F.einsum("i.j", T), ValueError, "'i.j'"),
    bad("tensordot-axes-too-many", lambda: F.tensordot(T, T, 3), ValueError, "axes", "3",
        "[0, 2]"),
    bad("tensordot-axes-unequal", lambda: F.tensordot(T, T, ([0, 1], [0])), ValueError,
        "axes", "2 axes of a", "1 of b"),
    bad("tensordot-axes-str", lambda: F.tensordot(T, T, "a"), TypeError, "axes", "'a'"),
    bad("tensordot-axis-out-of-range", lambda: F.tensordot(T, T, ([5], [0])), ValueError,
        "axes[0]", "5", numpy=True),
    bad("tensordot-size-mismatch", lambda: F.tensordot(T, T, ([0], [1])), ValueError,
        "mismatch", numpy=True, keep=(T.data,)),
    bad("std-ddof-negative", lambda: F.std(T, ddof=-1), ValueError, "std ddof", "-1"),
    bad("std-ddof-float", lambda: F.std(T, ddof=1.0), TypeError, "std ddof", "1.0"),
    bad("std-axis-out-of-range", lambda: F.std(T, axis=5), ValueError, "axis", "5",
        numpy=True),
    bad("prod-axis-repeated", lambda: F.prod(T, axis=(0, 0)), ValueError, "repeated",
        numpy=True),
    bad("norm-matrix-ord", lambda: F.norm(T, ord=3), ValueError, "norm ord", "3", "'nuc'"),
    bad("norm-3d-with-ord", lambda: F.norm(M3, ord=1), ValueError, "norm x", "3 dimensions"),
    bad("norm-three-axes", lambda: F.norm(M3, axis=(0, 1, 2)), ValueError, "norm axis",
        "(0, 1, 2)"),
    bad("norm-vector-ord-str", lambda: F.norm(VALUES[0], ord="nuc"), ValueError, "'nuc'"),
    bad("norm-axis-out-of-range", lambda: F.norm(T, axis=4), ValueError, "axis", "4",
        numpy=True),
    bad("round-decimals-float", lambda: F.round(T, 1.5), TypeError, "round decimals", "1.5"),
    bad("cumsum-axis-out-of-range", lambda: F.cumsum(T, axis=5), ValueError, "cumsum axis",
        "5", numpy=True),
    bad("cumprod-axis-float", lambda: F.cumprod(T, axis=1.0), TypeError, "cumprod axis",
        "1.0"),
    bad("logcumsumexp-axis-tuple", lambda: F.logcumsumexp(T, axis=(0, 1)), TypeError,
        "logcumsumexp axis", "(0, 1)"),
    bad("mod-shape-mismatch", lambda: F.mod(T, np.ones(4)), ValueError, "(2,3)", "(4,)",
        numpy=True, keep=(T.data,)),
    bad("argmax-None", lambda: F.argmax(None), TypeError, "argmax", "None"),
    bad("any-str", lambda: F.any("abc"), TypeError, "any", "'abc'"),
    bad("argmin-axis-out-of-range", lambda: F.argmin(T, axis=3), ValueError, "axis", "3",
        numpy=True),
]


@pytest.mark.parametrize("case", params(SPECIFIC))
def test_op_argument(case):
    check_bad(case)
    assert np.array_equal(T.data, VALUES) and T.grad is None


def test_a_failed_op_records_nothing():
    """An op that raises leaves no half-built graph: the inputs stay leaves without grads."""
    t = values_leaf()
    with pytest.raises(ValueError):
        F.add(t, np.ones(4))
    assert t.is_leaf and t.grad is None
    (t * 2).sum().backward()
    np.testing.assert_array_equal(t.grad, np.full((2, 3), 2.0))
