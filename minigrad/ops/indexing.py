"""Ops that pick or write elements by position: ``a[index]``, gathers, scatters, diagonals,
one-hot codes.

Their VJPs send each output element's gradient back to the one input element it came from;
where an input element feeds several outputs (a gather with repeated indices, a broadcast
diagonal) the contributions add up (``np.add.at``). docs/backward.md §29 and §30 derive them.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import integer
from ..defop import op
from ..tensor import Tensor
from .bounds import check_output, elements

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # pragma: no cover
    from numpy.core.multiarray import normalize_axis_index  # type: ignore[no-redef]  # (NumPy 1.x)

__all__ = ["getitem", "take_along_axis", "put_along_axis", "diagonal", "trace", "one_hot",
           "IndexRangeError"]


class IndexRangeError(IndexError, ValueError):
    """An index outside its axis: an IndexError as NumPy raises, and a ValueError (a wrong
    value) as every other bad argument here."""


def _is_basic(index) -> bool:
    """True if ``index`` uses only ints, slices, None and Ellipsis (no element repeats)."""
    items = index if isinstance(index, tuple) else (index,)
    return all(
        i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer)) for i in items
    )


def _unwrap_index(index):
    if isinstance(index, Tensor):
        return index.data
    if isinstance(index, tuple):
        return tuple(i.data if isinstance(i, Tensor) else i for i in index)
    if isinstance(index, list):  # NumPy reads a list index as an integer/boolean array
        return np.asarray(index)
    return index


@op(name="getitem", arrays=1)
def _getitem(a, index):
    """out = a[index].   VJP: ā = zeros, then ā[index] += g.

    With basic indexing each element of ``a`` appears at most once in ``out``, so the
    gradient is scattered by assignment. With integer-array indexing an element may be
    picked several times, and ``np.add.at`` accumulates every pick (repeated indices add up).
    """
    out = a[index]
    basic = _is_basic(index)
    in_shape = a.shape

    def vjp(g):
        ga = np.zeros(in_shape, dtype=g.dtype)
        if basic:
            ga[index] = g
        else:
            np.add.at(ga, index, g)
        return ga

    return out, vjp


def getitem(a: Tensor, index) -> Tensor:
    """``a[index]`` with NumPy semantics: ints, slices, None, Ellipsis, integer arrays and
    boolean masks (Tensors allowed as index arrays). See ``_getitem`` for the VJP.
    Derivation: docs/backward.md §5. Tests: tests/minigrad/op_cases/shape.py.
    """
    return _getitem(a, _unwrap_index(index))


def _axis(op: str, axis: Any, ndim: int) -> int:
    integer("axis", axis, owner=op)
    try:
        return normalize_axis_index(int(axis), ndim)
    except np.exceptions.AxisError:
        raise np.exceptions.AxisError(f"{op} axis: got {axis} for an array with {ndim} "
                                      f"dimensions; expected an integer in [-{ndim}, {ndim})") \
            from None


def _along_axis(op: str, shape: tuple, indices: Any, axis: int) -> tuple:
    """The integer-array index that picks ``a[..., indices[i...], ...]`` along ``axis`` and
    element i of every other axis (broadcasting a's size-1 axes against the indices' and
    back, as np.take_along_axis does), after checking ``indices``."""
    if isinstance(indices, list):
        indices = np.asarray(indices)
    if not isinstance(indices, np.ndarray) or indices.dtype.kind not in "iu":
        shown = indices.dtype if isinstance(indices, np.ndarray) else type(indices).__name__
        raise TypeError(f"{op} indices: got {shown}; expected an array of integers")
    if indices.ndim != len(shape):
        raise ValueError(f"{op} indices: got {indices.ndim} dimensions for an array of shape "
                         f"{shape}; expected {len(shape)} (as many as the array)")
    index = []
    for d, size in enumerate(shape):
        if d == axis:
            index.append(indices)
        else:
            fit = [1] * len(shape)
            fit[d] = size
            index.append(np.arange(size).reshape(fit))
    try:
        writes = np.broadcast_shapes(*(i.shape for i in index))
    except ValueError:
        raise ValueError(f"{op} indices: got shape {indices.shape} for an array of shape "
                         f"{shape}; expected a shape that broadcasts against it outside axis "
                         f"{axis}") from None
    # (M, 1) against (1, N) indices broadcasts to M·N reads or writes: bounded before built,
    # and before the indices are scanned (a broadcast view may hold 10**12 of them)
    check_output(op, "indices", elements(writes), f"shape {indices.shape} for an array of "
                 f"shape {shape} (broadcast to {writes})")
    n = shape[axis]
    if indices.size and (indices.min() < -n or indices.max() >= n):
        bad = indices.min() if indices.min() < -n else indices.max()
        raise IndexRangeError(f"{op} indices: got {bad} along an axis of length {n}; "
                              f"expected indices in [-{n}, {n})")
    return tuple(index)


def _read_along(op_name: str, a: np.ndarray, indices, axis) -> tuple[np.ndarray, tuple]:
    """(a, or a flattened when ``axis`` is None; the full index tuple of ``indices`` along the
    axis), checked: the shared start of take_along_axis and put_along_axis."""
    if axis is None:
        a, ax = a.reshape(-1), 0
    else:
        ax = _axis(op_name, axis, a.ndim)
    return a, _along_axis(op_name, a.shape, indices, ax)


@op(arrays=1)
def take_along_axis(a, indices, axis):
    """out[..., i, ...] = a[..., indices[..., i, ...], ...] along ``axis`` (np.take_along_axis;
    torch.gather); axis=None reads the flattened array with 1-D indices.

    VJP: ā = zeros, then ā[index] += ḡ (scatter-add: repeated indices add up).
    Derivation: docs/backward.md §29. Tests: tests/minigrad/op_cases/indexing.py,
    tests/minigrad/ops/test_indexing.py.
    """
    in_shape = a.shape
    a, index = _read_along("take_along_axis", a, indices, axis)
    flat_shape = a.shape

    def vjp(g):
        ga = np.zeros(flat_shape, dtype=g.dtype)
        np.add.at(ga, index, g)
        return ga.reshape(in_shape)

    return a[index], vjp


@op(arrays=3)
def put_along_axis(a, indices, values, axis):
    """out = a, then out[..., indices[..., i, ...], ...] = values[..., i, ...] along ``axis``
    (np.put_along_axis, but returning a new array; torch.scatter). Where several writes hit
    one element the last one in C order of the indices wins.

    VJP: ā = ḡ with the written elements zeroed; v̄ = ḡ[index] at the writes that survive,
    0 at those overwritten.
    Derivation: docs/backward.md §29. Tests: tests/minigrad/op_cases/indexing.py,
    tests/minigrad/ops/test_indexing.py.
    """
    in_shape = a.shape
    a, index = _read_along("put_along_axis", a, indices, axis)
    flat_shape = a.shape
    writes = np.broadcast_shapes(*(i.shape for i in index))
    try:
        vals = np.broadcast_to(values, writes)
    except ValueError:
        raise ValueError(f"put_along_axis values: got shape {np.shape(values)}; expected a "
                         f"shape that broadcasts to the writes' {writes}") from None
    # NumPy does not promise an order for repeated fancy-index assignments: write only the
    # last write to each element (in C order of the writes), so the result is defined.
    target = np.ravel_multi_index(np.broadcast_arrays(*index), flat_shape, mode="wrap").ravel()
    _, last = np.unique(target[::-1], return_index=True)
    keep = target.size - 1 - last
    survivors = np.zeros(target.size, dtype=bool)
    survivors[keep] = True
    dtype = np.result_type(a, values)  # a Python number stays weakly typed
    out = np.array(a, dtype=dtype, order="C")
    out.reshape(-1)[target[keep]] = vals.reshape(-1)[keep]

    def vjp_a(g):
        ga = np.array(g, order="C")
        ga.reshape(-1)[target] = 0
        return ga.reshape(in_shape)

    def vjp_values(g):
        picked = np.ascontiguousarray(g).reshape(-1)[target]
        return np.where(survivors, picked, 0).astype(g.dtype, copy=False).reshape(writes)

    return out.reshape(in_shape), (vjp_a, None, vjp_values)


def _diagonal_index(op: str, shape: tuple, offset: Any, axis1: Any, axis2: Any) -> tuple:
    """Checked (offset, axis1, axis2) and the rows and columns of the diagonal's elements."""
    if len(shape) < 2:
        raise ValueError(f"{op} a: got shape {shape}; expected at least 2 dimensions")
    offset = integer("offset", offset, owner=op)
    ax1 = normalize_axis_index(integer("axis1", axis1, owner=op), len(shape))
    ax2 = normalize_axis_index(integer("axis2", axis2, owner=op), len(shape))
    if ax1 == ax2:
        raise ValueError(f"{op} axis1, axis2: got {axis1} and {axis2} (the same axis); "
                         "expected two different axes")
    rows, cols = shape[ax1], shape[ax2]
    # past the array every offset gives the same empty diagonal: one NumPy can hold
    offset = min(max(offset, -rows - 1), cols + 1)
    n = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    i = np.arange(n)
    return offset, ax1, ax2, i - min(offset, 0), i + max(offset, 0)


@op(arrays=1)
def diagonal(a, offset=0, axis1=0, axis2=1):
    """out[..., i] = a[..., i, i + offset] over axes (axis1, axis2), the diagonal last
    (np.diagonal, a read-only view).

    VJP: ā = zeros with ḡ written on that diagonal.
    Derivation: docs/backward.md §30. Tests: tests/minigrad/op_cases/indexing.py,
    tests/minigrad/ops/test_indexing.py.
    """
    offset, ax1, ax2, rows, cols = _diagonal_index("diagonal", a.shape, offset, axis1, axis2)
    in_shape = a.shape

    def vjp(g):
        ga = np.zeros(in_shape, dtype=g.dtype)
        np.moveaxis(ga, (ax1, ax2), (-2, -1))[..., rows, cols] = g
        return ga

    return np.diagonal(a, offset, ax1, ax2), vjp


@op(arrays=1)
def trace(a, offset=0, axis1=0, axis2=1):
    """out[...] = Σ_i a[..., i, i + offset] over axes (axis1, axis2) (np.trace).

    VJP: ā = zeros with ḡ[...] written on every element of that diagonal.
    Derivation: docs/backward.md §30. Tests: tests/minigrad/op_cases/indexing.py,
    tests/minigrad/ops/test_indexing.py.
    """
    offset, ax1, ax2, rows, cols = _diagonal_index("trace", a.shape, offset, axis1, axis2)
    in_shape = a.shape

    def vjp(g):
        ga = np.zeros(in_shape, dtype=g.dtype)
        np.moveaxis(ga, (ax1, ax2), (-2, -1))[..., rows, cols] = np.asarray(g)[..., None]
        return ga

    return np.asarray(np.trace(a, offset, ax1, ax2)), vjp


#: The largest one-hot array ``one_hot`` builds (elements): a label read from a file must not
#: be able to allocate the machine's memory away.
MAX_ONE_HOT_ELEMENTS = 2 ** 28


def check_one_hot_size(labels: int, num_classes: int) -> None:
    """ValueError unless a one-hot array of ``labels`` rows of ``num_classes`` is within
    ``MAX_ONE_HOT_ELEMENTS`` (the one bound of ``F.one_hot`` and ``vit.one_hot``)."""
    if labels * num_classes > MAX_ONE_HOT_ELEMENTS:
        raise ValueError(f"one_hot num_classes: got {num_classes:,} for {labels:,} labels "
                         f"({labels * num_classes:,} elements); expected at most "
                         f"{MAX_ONE_HOT_ELEMENTS:,} elements "
                         "(minigrad.ops.indexing.MAX_ONE_HOT_ELEMENTS)")


def one_hot(labels: Any, num_classes: int = -1, dtype: Any = np.int64) -> Tensor:
    """out[..., c] = 1 if labels[...] == c else 0, shape labels.shape + (num_classes,)
    (torch.nn.functional.one_hot). Not differentiable: labels are integers.

    ``num_classes=-1`` takes max(labels) + 1. The result is int64 as torch's; pass
    ``dtype=np.float32`` (any bool, integer or floating dtype) for a target to multiply
    into a float32 model. Labels must lie in [0, num_classes).
    Derivation: none (no gradient: integer labels). Tests: tests/minigrad/ops/test_indexing.py.
    """
    data = labels.data if isinstance(labels, Tensor) else labels
    if isinstance(data, (list, tuple)):
        data = np.asarray(data)
    if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
        data = np.asarray(data)
    if not isinstance(data, np.ndarray) or data.dtype.kind not in "iu":
        shown = data.dtype if isinstance(data, np.ndarray) else type(data).__name__
        raise TypeError(f"one_hot labels: got {shown}; expected integer labels")
    num_classes = integer("num_classes", num_classes, low=-1, owner="one_hot")
    if num_classes == 0:
        raise ValueError("one_hot num_classes: got 0; expected a positive integer or -1 "
                         "(max(labels) + 1)")
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"one_hot dtype: got {dtype!r}; expected a NumPy dtype") from None
    if dtype.kind not in "biuf":
        raise TypeError(f"one_hot dtype: got {dtype}; expected a bool, integer or floating "
                        "dtype")
    # the size first, from the shapes (at least one class): labels may be a broadcast view
    # of 10**12 elements, which scanning for their range would take hours over
    check_one_hot_size(data.size, max(num_classes, 1))
    if num_classes == -1:
        if data.size == 0:
            raise ValueError("one_hot num_classes: got -1 with no labels; expected a positive "
                             "number of classes")
        num_classes = int(data.max()) + 1
        check_one_hot_size(data.size, num_classes)
    if data.size and (data.min() < 0 or data.max() >= num_classes):
        bad = data.min() if data.min() < 0 else data.max()
        raise IndexRangeError(f"one_hot labels: got {bad}; expected labels in "
                              f"[0, {num_classes})")
    out = np.zeros(data.shape + (num_classes,), dtype=dtype)
    np.put_along_axis(out, data[..., None].astype(np.intp), 1, axis=-1)
    return Tensor(out)
