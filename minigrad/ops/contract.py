"""Contractions: ``einsum`` (NumPy's grammar), ``tensordot``, ``outer``, ``inner``.

The VJP of an einsum operand is itself an einsum: of the cotangent with the other operands,
producing that operand's labels (docs/backward.md §20 derives it, repeated labels included).
Labels of size 1 that NumPy broadcast come back at the broadcast size, and the engine sums
them back (``graph.unbroadcast``), as for any broadcasting op.
"""
from __future__ import annotations

import string
from collections import Counter
from typing import Any, Sequence

import numpy as np

from ..defop import as_array_input, op, record
from ..tensor import Tensor

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # pragma: no cover
    from numpy.core.numeric import normalize_axis_tuple

__all__ = ["einsum", "tensordot", "outer", "inner"]


def _parse(subscripts: str, shapes: Sequence[tuple]) -> tuple[list[str], str]:
    """NumPy's subscripts as explicit labels: one string per operand and one for the output,
    with ``...`` spelled as letters no term uses (right-aligned, as NumPy broadcasts it).
    Called after ``np.einsum`` accepted the subscripts, so only valid input reaches it."""
    s = subscripts.replace(" ", "")
    lhs, arrow, out = s.partition("->")
    terms = lhs.split(",")
    rank = [len(shape) - len(t.replace("...", "")) if "..." in t else 0
            for t, shape in zip(terms, shapes)]
    width = max(rank, default=0)
    used = set(s)
    ellipsis = "".join([c for c in string.ascii_letters if c not in used][:width])
    if len(ellipsis) < width:
        raise ValueError(f"einsum subscripts: {subscripts!r} leaves {len(ellipsis)} unused "
                         f"letters for the {width} dimensions of '...'; expected at most 52 "
                         "labels in all")
    ops = [t.replace("...", ellipsis[width - r:]) for t, r in zip(terms, rank)]
    if arrow:
        out = out.replace("...", ellipsis)
    else:  # implicit: '...' first, then the labels that occur once, in ASCII order (NumPy)
        counts = Counter("".join(t.replace("...", "") for t in terms))
        out = ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1))
    return ops, out


def _sizes(ops: Sequence[str], shapes: Sequence[tuple]) -> dict:
    """Each label's size: the largest of its axes (the others are 1, broadcast by NumPy)."""
    sizes: dict = {}
    for labels, shape in zip(ops, shapes):
        for c, n in zip(labels, shape):
            sizes[c] = max(sizes.get(c, 1), n)
    return sizes


def _einsum_vjp(k: int, ops: list, out: str, arrays: list, sizes: dict, optimize: Any):
    """ā_k = einsum(ḡ, the other operands -> operand k's labels), placed on the diagonal
    where operand k repeats a label, and broadcast along labels only operand k has."""
    labels = ops[k]
    unique = "".join(dict.fromkeys(labels))
    others = [j for j in range(len(ops)) if j != k]
    reachable = set(out).union(*(ops[j] for j in others))
    present = "".join(c for c in unique if c in reachable)
    spec = ",".join([out] + [ops[j] for j in others]) + "->" + present

    def vjp(g):
        grad = np.einsum(spec, g, *(arrays[j] for j in others), optimize=optimize)
        if len(present) < len(unique):  # summed in operand k alone: constant along it
            grad = np.expand_dims(grad, tuple(i for i, c in enumerate(unique)
                                              if c not in reachable))
            grad = np.broadcast_to(grad, tuple(sizes[c] for c in unique))
        if len(unique) == len(labels):
            return grad
        full = np.zeros(tuple(sizes[c] for c in labels), dtype=grad.dtype)
        np.einsum(f"{labels}->{unique}", full)[...] = grad  # a writeable view: the diagonal
        return full

    return vjp


def einsum(subscripts: str, *operands: Any, optimize: Any = False) -> Tensor:
    """out = np.einsum(subscripts, *operands).   VJP: ā_k = einsum(ḡ, the others -> labels_k),
    on the diagonal for repeated labels.   docs/backward.md §20; tests op_cases/contract.py."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum subscripts: got {type(subscripts).__name__}; expected a "
                        "string such as 'ij,jk->ik' (the sublist form is not supported)")
    if not operands:
        raise ValueError("einsum operands: got none; expected at least one array")
    arrays = []
    for i, x in enumerate(operands):
        a = x.data if isinstance(x, Tensor) else np.asarray(
            as_array_input(x, "einsum", f"operands[{i}]"))
        if a.dtype.kind not in "biuf":
            raise TypeError(f"einsum operands[{i}]: got an array of dtype {a.dtype}; expected "
                            "real numbers (a bool, integer or floating dtype)")
        arrays.append(a)
    out_array = np.asarray(np.einsum(subscripts, *arrays, optimize=optimize))  # NumPy checks
    shapes = [a.shape for a in arrays]
    ops, out = _parse(subscripts, shapes)
    sizes = _sizes(ops, shapes)
    vjps = [_einsum_vjp(k, ops, out, arrays, sizes, optimize) for k in range(len(arrays))]
    params = [f"operands[{i}]" for i in range(len(arrays))]
    return record(out_array, list(operands), vjps, "einsum", params)


def _tensordot_axes(axes: Any, ndim_a: int, ndim_b: int) -> tuple[tuple, tuple]:
    """``axes`` as two equal-length tuples of non-negative axes of a and of b."""
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if not 0 <= n <= min(ndim_a, ndim_b):
            raise ValueError(f"tensordot axes: got {n} for operands of {ndim_a} and {ndim_b} "
                             f"dimensions; expected an integer in [0, {min(ndim_a, ndim_b)}]")
        return tuple(range(ndim_a - n, ndim_a)), tuple(range(n))
    try:
        axes_a, axes_b = axes
    except (TypeError, ValueError):
        raise TypeError(f"tensordot axes: got {axes!r}; expected an integer or a pair of "
                        "sequences of axes") from None
    axes_a = (axes_a,) if isinstance(axes_a, (int, np.integer)) else tuple(axes_a)
    axes_b = (axes_b,) if isinstance(axes_b, (int, np.integer)) else tuple(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError(f"tensordot axes: got {len(axes_a)} axes of a and {len(axes_b)} of b; "
                         "expected as many of each")
    return (normalize_axis_tuple(axes_a, ndim_a, "tensordot axes[0]"),
            normalize_axis_tuple(axes_b, ndim_b, "tensordot axes[1]"))


@op(arrays=2)
def tensordot(a, b, axes=2):
    """out[free_a, free_b] = Σ_axes a b.   VJP: ā = tensordot(ḡ, b, free_b),
    b̄ = tensordot(a, ḡ, free_a), each transposed to its operand's axes.
    docs/backward.md §20; op_cases/contract.py."""
    a, b = np.asarray(a), np.asarray(b)
    axes_a, axes_b = _tensordot_axes(axes, a.ndim, b.ndim)
    out = np.tensordot(a, b, axes=(axes_a, axes_b))
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [i for i in range(b.ndim) if i not in axes_b]

    def vjp_a(g):  # axes of the result: free_a, then b's contracted axes in b's order
        grad = np.tensordot(g, b, axes=(range(len(free_a), g.ndim), free_b))
        order = free_a + [axes_a[axes_b.index(i)] for i in sorted(axes_b)]
        return np.transpose(grad, np.argsort(order))

    def vjp_b(g):  # axes of the result: a's contracted axes in a's order, then free_b
        grad = np.tensordot(a, g, axes=(free_a, range(len(free_a))))
        order = [axes_b[axes_a.index(i)] for i in sorted(axes_a)] + free_b
        return np.transpose(grad, np.argsort(order))

    return out, (vjp_a, vjp_b)


@op(arrays=2)
def outer(a, b):
    """out[i, j] = a_i b_j over the flattened inputs.   VJP: ā = ḡ b, b̄ = ḡᵀ a (reshaped).
    docs/backward.md §20; op_cases/contract.py."""
    a, b = np.asarray(a), np.asarray(b)
    fa, fb = a.reshape(-1), b.reshape(-1)
    out = np.outer(fa, fb)
    return out, (lambda g: (g @ fb).reshape(a.shape), lambda g: (fa @ g).reshape(b.shape))


@op(arrays=2)
def inner(a, b):
    """out[I, J] = Σ_k a[I, k] b[J, k] (a product when one is 0-d).
    VJP: ā[I, k] = Σ_J ḡ[I, J] b[J, k]; b̄ likewise.   §20; op_cases/contract.py."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:  # np.inner is then a * b; the engine sums back
        return np.multiply(a, b), (lambda g: g * b, lambda g: g * a)
    out = np.inner(a, b)
    na = a.ndim - 1

    def vjp_a(g):
        return np.tensordot(g, b, axes=(range(na, g.ndim), range(b.ndim - 1)))

    def vjp_b(g):
        return np.tensordot(g, a, axes=(range(na), range(na)))

    return out, (vjp_a, vjp_b)
