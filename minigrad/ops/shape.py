"""Ops that move elements without changing them: their VJPs move the gradient back."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..defop import as_array_input, op, record

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # pragma: no cover
    from numpy.core.multiarray import normalize_axis_index
from ..tensor import Tensor

__all__ = [
    "reshape", "transpose", "permute", "swapaxes", "expand_dims", "squeeze", "broadcast_to",
    "getitem", "concatenate", "stack", "split",
]


@op(arrays=1)
def reshape(a, shape):
    """out = a viewed with ``shape``.   VJP: ā = g reshaped to a's shape."""
    in_shape = a.shape
    return np.reshape(a, shape), lambda g: g.reshape(in_shape)


@op(arrays=1)
def transpose(a, axes=None):
    """out = a with axes permuted (reversed for None).   VJP: ā = g with the inverse permutation."""
    if axes is not None and len(axes) != np.ndim(a):
        raise ValueError(f"transpose axes: got {tuple(axes)} for an array of shape "
                         f"{np.shape(a)}; expected a permutation of its {np.ndim(a)} axes")
    out = np.transpose(a, axes)
    inverse = None if axes is None else np.argsort([ax % a.ndim for ax in axes])
    return out, lambda g: g.transpose(inverse)


def permute(a, *axes):
    """PyTorch's name for ``transpose(a, axes)``."""
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    if not isinstance(a, Tensor):
        a = as_array_input(a, "permute", "a")
    return transpose(a, axes)


@op(arrays=1)
def swapaxes(a, axis1, axis2):
    """out = a with two axes exchanged.   VJP: ā = g with the same two axes exchanged."""
    return np.swapaxes(a, axis1, axis2), lambda g: g.swapaxes(axis1, axis2)


@op(arrays=1)
def expand_dims(a, axis):
    """out = a with size-1 axes inserted.   VJP: ā = g reshaped to a's shape."""
    in_shape = a.shape
    return np.expand_dims(a, axis), lambda g: g.reshape(in_shape)


@op(arrays=1)
def squeeze(a, axis=None):
    """out = a without (the given) size-1 axes.   VJP: ā = g reshaped to a's shape."""
    in_shape = np.shape(a)
    try:
        out = np.squeeze(a, axis)
    except np.exceptions.AxisError:  # out of range: NumPy's error, an IndexError too
        raise np.exceptions.AxisError(
            f"squeeze axis: got {axis} for an array of shape {in_shape}; expected axes in "
            f"[-{len(in_shape)}, {len(in_shape)})") from None
    except ValueError:
        raise ValueError(f"squeeze axis: got {axis} for an array of shape {in_shape}; expected "
                         "axes of size 1") from None
    return out, lambda g: g.reshape(in_shape)


@op(arrays=1)
def broadcast_to(a, shape):
    """out = a broadcast to ``shape`` (a read-only view).

    VJP: ā = g summed over the broadcast axes, which is exactly what the engine's
    ``unbroadcast`` does for every op, so the VJP itself is the identity.
    """
    try:
        out = np.broadcast_to(a, shape)
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast an array of shape {np.shape(a)} to "
                         f"{tuple(np.atleast_1d(shape).tolist())}; expected a shape it broadcasts to") \
            from None
    return out, lambda g: g


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
    boolean masks (Tensors allowed as index arrays). See ``_getitem`` for the VJP."""
    return _getitem(a, _unwrap_index(index))


def _sequence_inputs(tensors, op: str) -> tuple[list, list]:
    """The inputs of a variadic op as a list (a generator would be spent before the graph
    is recorded) and their arrays, each checked as an array input."""
    if isinstance(tensors, (Tensor, np.ndarray, str)) or not hasattr(tensors, "__iter__"):
        shown = "None" if tensors is None else type(tensors).__name__
        raise TypeError(f"{op} tensors: got {shown}; expected a list or tuple of Tensors or "
                        "arrays")
    tensors = list(tensors)
    arrays = [t.data if isinstance(t, Tensor) else np.asarray(as_array_input(t, op, f"tensors[{i}]"))
              for i, t in enumerate(tensors)]
    return tensors, arrays


def concatenate(tensors: Sequence, axis: int = 0) -> Tensor:
    """out = the inputs joined along ``axis``.   VJP: input i gets its slice of g."""
    tensors, arrays = _sequence_inputs(tensors, "concatenate")
    out = np.concatenate(arrays, axis=axis)
    ax = axis % out.ndim
    bounds = np.cumsum([0] + [x.shape[ax] for x in arrays])

    def slicer(lo, hi):
        index = (slice(None),) * ax + (slice(lo, hi),)
        return lambda g: g[index]

    vjps = [slicer(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
    return record(out, tensors, vjps, "concatenate")


def stack(tensors: Sequence, axis: int = 0) -> Tensor:
    """out = the inputs stacked along a new ``axis``.   VJP: input i gets g taken at i on it."""
    tensors, arrays = _sequence_inputs(tensors, "stack")
    shapes = {x.shape for x in arrays}
    if len(shapes) > 1:
        raise ValueError(f"stack tensors: got shapes {[x.shape for x in arrays]}; expected "
                         "all of one shape")
    out = np.stack(arrays, axis=axis)
    ax = axis % out.ndim

    def taker(i):
        index = (slice(None),) * ax + (i,)
        return lambda g: g[index]

    return record(out, tensors, [taker(i) for i in range(len(arrays))], "stack")


def split(a: Tensor, indices_or_sections, axis: int = 0) -> list:
    """Split ``a`` along ``axis`` as ``np.split`` does; each piece is a slice of ``a``,
    so its gradient flows back through ``getitem``."""
    data = a.data if isinstance(a, Tensor) else np.asarray(as_array_input(a, "split", "a"))
    try:
        ax = normalize_axis_index(axis, data.ndim)
    except (ValueError, IndexError, TypeError):
        raise ValueError(f"split axis: got {axis!r} for an array of shape {data.shape}; "
                         f"expected an integer in [-{data.ndim}, {data.ndim})") from None
    n = data.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or n % sections:
            raise ValueError(
                f"split: indices_or_sections={sections} does not divide axis {axis} of "
                f"length {n} into equal parts"
            )
        step = n // sections  # 0 along an empty axis: every piece is empty, as in NumPy
        cuts = [i * step for i in range(1, sections)]
    else:
        cuts = list(indices_or_sections)
    edges = [0] + cuts + [n]
    lead = (slice(None),) * ax
    return [getitem(a, lead + (slice(lo, hi),)) for lo, hi in zip(edges[:-1], edges[1:])]
