"""Contractions: ``einsum`` (NumPy's grammar), ``tensordot``, ``outer``, ``inner``.

The VJP of an einsum operand is itself an einsum: of the cotangent with the other operands,
producing that operand's labels (docs/backward.md §20 derives it, repeated labels included).
Labels of size 1 that NumPy broadcast come back at the broadcast size, and the engine sums
them back (``gradients.unbroadcast``), as for any broadcasting op; where only operand k has
a label at a size other than 1, its gradient (computed from the others' size 1) is spread out.
"""
from __future__ import annotations

import string
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..defop import as_array_input, op
from ..tensor import Tensor
from . import bounds
from .variadic import record_variadic

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # pragma: no cover
    from numpy.core.numeric import normalize_axis_tuple  # type: ignore[no-redef]  # (NumPy 1.x)

__all__ = ["einsum", "tensordot", "outer", "inner"]


def _arrays(a, b):
    """Both operands as arrays; a Python number (a 0-d operand, made weakly typed by ``op``)
    takes the dtype NumPy would compute it in, so a float32 partner stays float32."""
    dtype = np.result_type(a, b)
    return tuple(x if isinstance(x, np.ndarray) else np.asarray(x, dtype) for x in (a, b))


def _bad(subscripts: str, why: str) -> ValueError:
    return ValueError(f"einsum subscripts: got {subscripts!r}; {why}")


def _parse(subscripts: str, shapes: Sequence[tuple]) -> tuple[list[str], str]:
    """NumPy's subscripts as explicit labels: one string per operand and one for the output,
    with ``...`` spelled as letters no term uses (right-aligned, as NumPy broadcasts it)."""
    s = subscripts.replace(" ", "")
    lhs, arrow, out = s.partition("->")
    if "->" in out or "-" in lhs or ">" in lhs:
        raise _bad(subscripts, "expected at most one '->', between the inputs and the output")
    for c in lhs + out:
        if c not in ",." and c not in string.ascii_letters:
            raise _bad(subscripts, f"expected letters, ',', '...' and '->' only, not {c!r}")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum operands: got {len(shapes)} for the {len(terms)} terms of "
                         f"{subscripts!r}; expected one operand per term")
    rank = []
    for i, (t, shape) in enumerate(zip(terms, shapes, strict=True)):
        labels = t.replace("...", "", 1)
        if "." in labels:
            raise _bad(subscripts, f"expected '...' at most once per term, not {t!r}")
        if len(labels) > len(shape) or ("..." not in t and len(labels) != len(shape)):
            raise ValueError(f"einsum operands[{i}]: got shape {shape} for the term {t!r}; "
                             f"expected {len(labels)} dimensions"
                             + (" or more" if "..." in t else ""))
        rank.append(len(shape) - len(labels))
    width = max(rank, default=0)
    used = set(s)
    ellipsis = "".join([c for c in string.ascii_letters if c not in used][:width])
    if len(ellipsis) < width:
        raise _bad(subscripts, f"it leaves {len(ellipsis)} unused letters for the {width} "
                   "dimensions of '...'; expected at most 52 labels in all")
    ops = [t.replace("...", ellipsis[width - r:]) for t, r in zip(terms, rank, strict=True)]
    if arrow:
        if out.count("...") > 1 or "." in out.replace("...", ""):
            raise _bad(subscripts, "expected '...' at most once in the output")
        if width and "..." not in out:
            raise _bad(subscripts, f"the operands have {width} dimensions under '...'; "
                       "expected '...' in the output too (as NumPy: to sum them away, "
                       "sum the result)")
        out = out.replace("...", ellipsis)
        for c in out:
            if out.count(c) > 1 or not any(c in t for t in ops):
                raise _bad(subscripts, f"expected each output label once and in an input, "
                           f"not {c!r}")
    else:  # implicit: '...' first, then the labels that occur once, in ASCII order (NumPy)
        counts = Counter("".join(t.replace("...", "") for t in terms))
        out = ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1))
    return ops, out


def _sizes(ops: Sequence[str], shapes: Sequence[tuple]) -> dict:
    """Each label's size: its one size other than 1 (NumPy broadcasts the 1s)."""
    sizes: dict = {}
    for i, (labels, shape) in enumerate(zip(ops, shapes, strict=True)):
        for c, n in zip(labels, shape, strict=True):
            m = sizes.get(c, 1)
            if n != 1 and m != 1 and n != m:
                raise ValueError(f"einsum operands[{i}]: label {c!r} has size {n} there and "
                                 f"{m} before; expected one size per label (or 1, which "
                                 "broadcasts)")
            sizes[c] = max(m, n)
    return sizes


def _check_size(subscripts: str, ops: Sequence[str], out: str, sizes: dict,
                optimize: Any) -> None:
    """Refuse, before NumPy runs, an output beyond ``bounds.MAX_OUTPUT_ELEMENTS`` (labels of
    size 1 broadcast, so a small or broadcast input can ask for terabytes) and, unoptimized, a
    loop of more than ``bounds.MAX_EINSUM_STEPS`` steps (one per combination of all labels), and
    an 'optimal' path search over more than ``bounds.MAX_OPTIMAL_OPERANDS`` operands.
    The VJPs are einsums over a subset of the same labels: bounded by the same numbers."""
    if isinstance(optimize, str) and optimize == "optimal" and \
            len(ops) > bounds.MAX_OPTIMAL_OPERANDS:
        raise ValueError(f"einsum optimize: got 'optimal' for {len(ops)} operands; expected "
                         f"at most {bounds.MAX_OPTIMAL_OPERANDS} (NumPy's search for that path "
                         "is factorial in the operands: pass optimize='greedy' or True)")
    shown = ", ".join(f"{c}={sizes[c]}" for c in sorted(sizes))
    bounds.check_output("einsum", "operands", bounds.elements(sizes[c] for c in out),
                        f"sizes {shown} for {subscripts!r}")
    steps = bounds.elements(sizes.values())
    if optimize is False and steps > bounds.MAX_EINSUM_STEPS:
        raise ValueError(f"einsum operands: got sizes {shown} for {subscripts!r}, "
                         f"{steps:,} steps of NumPy's unoptimized loop; expected at most "
                         f"{bounds.MAX_EINSUM_STEPS:,} (pass optimize=True to contract the "
                         "operands pairwise)")


def _einsum_vjp(k: int, ops: list, out: str, arrays: Sequence[np.ndarray], sizes: dict,
                optimize: Any):
    """ā_k = einsum(ḡ, the other operands -> operand k's labels), placed on the diagonal
    where operand k repeats a label, and broadcast along labels only operand k has or has at
    a size other than 1 (the engine sums back those operand k has at size 1)."""
    labels = ops[k]
    unique = "".join(dict.fromkeys(labels))
    others = [j for j in range(len(ops)) if j != k]
    reachable = set(out).union(*(ops[j] for j in others))
    present = "".join(c for c in unique if c in reachable)
    spec = ",".join([out] + [ops[j] for j in others]) + "->" + present

    full_sizes = tuple(sizes[c] for c in unique)

    def vjp(g):
        grad = np.einsum(spec, g, *(arrays[j] for j in others), optimize=optimize)
        if len(present) < len(unique):  # summed in operand k alone: constant along it
            grad = np.expand_dims(grad, tuple(i for i, c in enumerate(unique)
                                              if c not in reachable))
        if grad.shape != full_sizes:
            # a label of size 1 in ḡ and every other operand (broadcast there, n in operand
            # k) leaves the einsum at size 1: the gradient is constant along it, spread to n
            grad = np.broadcast_to(grad, full_sizes)
        if len(unique) == len(labels):
            return grad
        full = np.zeros(tuple(sizes[c] for c in labels), dtype=grad.dtype)
        np.einsum(f"{labels}->{unique}", full)[...] = grad  # a writeable view: the diagonal
        return full

    return vjp


def einsum(subscripts: str, *operands: Any, optimize: Any = False) -> Tensor:
    """out = np.einsum(subscripts, *operands).   VJP: ā_k = einsum(ḡ, the others -> labels_k),
    on the diagonal for repeated labels.
    Derivation: docs/backward.md §20. Tests: tests/minigrad/op_cases/contract.py,
    tests/minigrad/ops/test_contract.py.
    """
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
    return record_variadic(einsum, _einsum, list(operands), arrays, "einsum",
                           [f"operands[{i}]" for i in range(len(arrays))],
                           subscripts=subscripts, optimize=optimize)


def _einsum(*arrays: np.ndarray, subscripts: str, optimize: Any) -> tuple:
    """einsum's forward over the operands' arrays: (out, one VJP per operand)."""
    shapes = [a.shape for a in arrays]
    ops, out = _parse(subscripts, shapes)
    sizes = _sizes(ops, shapes)
    _check_size(subscripts, ops, out, sizes, optimize)
    out_array = np.asarray(np.einsum(subscripts, *arrays, optimize=optimize))
    return out_array, [_einsum_vjp(k, ops, out, arrays, sizes, optimize)
                       for k in range(len(arrays))]


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
    Derivation: docs/backward.md §20. Tests: tests/minigrad/op_cases/contract.py,
    tests/minigrad/ops/test_contract.py.
    """
    a, b = _arrays(a, b)
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

    Derivation: docs/backward.md §20. Tests: tests/minigrad/op_cases/contract.py,
    tests/minigrad/ops/test_contract.py.
    """
    a, b = _arrays(a, b)
    fa, fb = a.reshape(-1), b.reshape(-1)
    out = np.outer(fa, fb)
    return out, (lambda g: (g @ fb).reshape(a.shape), lambda g: (fa @ g).reshape(b.shape))


@op(arrays=2)
def inner(a, b):
    """out[I, J] = Σ_k a[I, k] b[J, k] (a product when one is 0-d).
    VJP: ā[I, k] = Σ_J ḡ[I, J] b[J, k]; b̄ likewise.
    Derivation: docs/backward.md §20. Tests: tests/minigrad/op_cases/contract.py,
    tests/minigrad/ops/test_contract.py.
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:  # np.inner is then a * b; the engine sums back
        return np.multiply(a, b), (lambda g: g * b, lambda g: g * a)
    out = np.inner(a, b)
    na = a.ndim - 1

    def vjp_a(g):
        return np.tensordot(g, b, axes=(range(na, g.ndim), range(b.ndim - 1)))

    def vjp_b(g):
        return np.tensordot(g, a, axes=(range(na), range(na)))

    return out, (vjp_a, vjp_b)
