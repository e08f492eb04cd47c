"""Bad input to the ops of ops-a (issue 14): the GENERIC and SPECIFIC tables of
test_bad_input_ops.py for these ops, in a file of their own so that the shared table need
not be edited by several helpers at once. Same checker (``reliability_util.check_bad``)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

from reliability_util import bad, check_bad, params

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "minigrad"))
from test_ops_a_catalogs import OPS_A  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning",
                                        "ignore::RuntimeWarning")

VALUES = np.arange(1.0, 7.0).reshape(2, 3) / 7  # in (0, 1): inside every domain here
T = mg.Tensor(VALUES.copy(), requires_grad=True)
_UNARY = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
          "arctanh", "log1p", "expm1", "log2", "log10", "exp2", "square", "reciprocal", "rsqrt",
          "sign", "floor", "ceil", "round", "trunc", "std", "prod", "norm", "cumsum", "cumprod",
          "logcumsumexp")
SLOT = {name: getattr(F, name) for name in _UNARY}
SLOT.update({name: (lambda v, f=getattr(F, name): f(T, v))
             for name in ("arctan2", "hypot", "logaddexp", "mod")})
SLOT.update({
    "einsum": lambda v: F.einsum("ij,ij->j", T, v), "tensordot": lambda v: F.tensordot(T, v),
    "outer": lambda v: F.outer(T, v), "inner": lambda v: F.inner(T, v),
})
KINDS = {
    "None": (lambda v: None, ("None",)),
    "str": (lambda v: "abc", (("'abc'", "str", "<U3"),)),
    "object": (lambda v: v.astype(object), ("object",)),
    "complex": (lambda v: v.astype(np.complex128), ("complex",)),
}
GENERIC = [bad(f"{op}-{kind}", lambda f=SLOT[op], v=make(VALUES.copy()): f(v), (TypeError,),
               op, *words, keep=(T.data,))
           for kind, (make, words) in KINDS.items() for op in sorted(SLOT)]


def test_the_table_covers_every_op_of_ops_a():
    assert sorted(SLOT) == sorted(OPS_A)


@pytest.mark.parametrize("case", params(GENERIC))
def test_wrong_kind_of_argument(case):
    check_bad(case)


@pytest.mark.parametrize("op", sorted(SLOT))
def test_nested_list_is_read_as_the_array_it_spells(op):
    got, want = SLOT[op](VALUES.tolist()), SLOT[op](VALUES.copy())
    np.testing.assert_array_equal(got.data, want.data)


M3 = np.ones((2, 2, 2))
SPECIFIC = [
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
    bad("norm-matrix-ord", lambda: F.norm(T, ord=2), ValueError, "norm ord", "2", "'fro'"),
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
