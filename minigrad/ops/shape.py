"""Ops that move elements without changing them: their VJPs move the gradient back."""
from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from ..checks import integer, shown
from ..defop import as_array_input, op

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # pragma: no cover
    from numpy.core.multiarray import normalize_axis_index  # type: ignore[no-redef]  # (NumPy 1.x)
from ..tensor import Tensor
from .bounds import check_output, elements
from .indexing import getitem
from .variadic import record_variadic

__all__ = [
    "reshape", "transpose", "permute", "swapaxes", "expand_dims", "squeeze", "broadcast_to",
    "concatenate", "stack", "split",
    "moveaxis", "flip", "roll", "tile", "repeat", "tril", "triu",
]


@op(arrays=1)
def reshape(a, shape):
    """out = a viewed with ``shape``.   VJP: ā = g reshaped to a's shape.

    Derivation: docs/backward.md §1 (notation; the VJP is the formula above). Tests:
    tests/minigrad/op_cases/shape.py.
    """
    in_shape = a.shape
    return np.reshape(a, shape), lambda g: g.reshape(in_shape)


@op(arrays=1)
def transpose(a, axes=None):
    """out = a with axes permuted (reversed for None).   VJP: ā = g with the inverse permutation.

    Derivation: docs/backward.md §1 (notation; the VJP is the formula above). Tests:
    tests/minigrad/op_cases/shape.py.
    """
    if axes is not None and len(axes) != np.ndim(a):
        given = tuple(axes) if len(axes) <= 8 else f"{len(axes)} axes"  # never all 10**7
        raise ValueError(f"transpose axes: got {given} for an array of shape "
                         f"{np.shape(a)}; expected a permutation of its {np.ndim(a)} axes")
    out = np.transpose(a, axes)
    inverse = None if axes is None else np.argsort([ax % a.ndim for ax in axes])
    return out, lambda g: g.transpose(inverse)


def permute(a, *axes):
    """PyTorch's name for ``transpose(a, axes)``.

    Derivation: docs/backward.md §1 (notation; the VJP is the formula above). Tests:
    tests/minigrad/op_cases/shape.py.
    """
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    if not isinstance(a, Tensor):
        a = as_array_input(a, "permute", "a")
    return transpose(a, axes)


@op(arrays=1)
def swapaxes(a, axis1, axis2):
    """out = a with two axes exchanged.   VJP: ā = g with the same two axes exchanged.

    Derivation: docs/backward.md §1 (notation; the VJP is the formula above). Tests:
    tests/minigrad/op_cases/shape.py.
    """
    return np.swapaxes(a, axis1, axis2), lambda g: g.swapaxes(axis1, axis2)


@op(arrays=1)
def expand_dims(a, axis):
    """out = a with size-1 axes inserted.   VJP: ā = g reshaped to a's shape.

    Derivation: docs/backward.md §1 (notation; the VJP is the formula above). Tests:
    tests/minigrad/op_cases/shape.py.
    """
    in_shape = a.shape
    return np.expand_dims(a, axis), lambda g: g.reshape(in_shape)


@op(arrays=1)
def squeeze(a, axis=None):
    """out = a without (the given) size-1 axes.   VJP: ā = g reshaped to a's shape.

    Derivation: docs/backward.md §1 (notation; the VJP is the formula above). Tests:
    tests/minigrad/op_cases/shape.py.
    """
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
    Derivation: docs/backward.md §2. Tests: tests/minigrad/op_cases/shape.py.
    """
    try:
        out = np.broadcast_to(a, shape)
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast an array of shape {np.shape(a)} to "
                         f"{tuple(np.atleast_1d(shape).tolist())}; expected a shape it "
                         "broadcasts to") from None
    return out, lambda g: g


def _sequence_inputs(tensors, op: str) -> tuple[list, list]:
    """The inputs of a variadic op as a list (a generator would be spent before the graph
    is recorded) and their arrays, each checked as an array input."""
    if isinstance(tensors, (Tensor, np.ndarray, str)) or not hasattr(tensors, "__iter__"):
        shown = "None" if tensors is None else type(tensors).__name__
        raise TypeError(f"{op} tensors: got {shown}; expected a list or tuple of Tensors or "
                        "arrays")
    tensors = list(tensors)
    arrays = [t.data if isinstance(t, Tensor)
              else np.asarray(as_array_input(t, op, f"tensors[{i}]"))
              for i, t in enumerate(tensors)]
    return tensors, arrays


def concatenate(tensors: Sequence, axis: int = 0) -> Tensor:
    """out = the inputs joined along ``axis``.   VJP: input i gets its slice of g.

    Derivation: docs/backward.md §1 (notation; the VJP is the formula above). Tests:
    tests/minigrad/op_cases/shape.py.
    """
    tensors, arrays = _sequence_inputs(tensors, "concatenate")
    return record_variadic(concatenate, _concatenate, tensors, arrays, "concatenate",
                           [f"tensors[{i}]" for i in range(len(arrays))], axis=axis)


def _concatenate(*arrays: np.ndarray, axis: int = 0) -> tuple:
    """concatenate's forward: (out, one VJP per input)."""
    out = np.concatenate(arrays, axis=_c_long("concatenate", "axis", axis))
    ax = axis % out.ndim
    bounds = np.cumsum([0] + [x.shape[ax] for x in arrays])

    def slicer(lo, hi):
        index = (slice(None),) * ax + (slice(lo, hi),)
        return lambda g: g[index]

    return out, [slicer(lo, hi) for lo, hi in pairwise(bounds)]


def stack(tensors: Sequence, axis: int = 0) -> Tensor:
    """out = the inputs stacked along a new ``axis``.   VJP: input i gets g taken at i on it.

    Derivation: docs/backward.md §1 (notation; the VJP is the formula above). Tests:
    tests/minigrad/op_cases/shape.py.
    """
    tensors, arrays = _sequence_inputs(tensors, "stack")
    shapes = {x.shape for x in arrays}
    if len(shapes) > 1:
        raise ValueError(f"stack tensors: got shapes {[x.shape for x in arrays]}; expected "
                         "all of one shape")
    return record_variadic(stack, _stack, tensors, arrays, "stack",
                           [f"tensors[{i}]" for i in range(len(arrays))], axis=axis)


def _stack(*arrays: np.ndarray, axis: int = 0) -> tuple:
    """stack's forward: (out, one VJP per input)."""
    out = np.stack(arrays, axis=_c_long("stack", "axis", axis))
    ax = axis % out.ndim

    def taker(i):
        index = (slice(None),) * ax + (i,)
        return lambda g: g[index]

    return out, [taker(i) for i in range(len(arrays))]


def split(a: Tensor, indices_or_sections, axis: int = 0) -> list:
    """Split ``a`` along ``axis`` as ``np.split`` does; each piece is a slice of ``a``,
    so its gradient flows back through ``getitem``.
    Derivation: docs/backward.md §5 (split is getitem). Tests: tests/minigrad/op_cases/shape.py.
    """
    data = a.data if isinstance(a, Tensor) else np.asarray(as_array_input(a, "split", "a"))
    try:
        ax = normalize_axis_index(axis, data.ndim)
    except (ValueError, IndexError, TypeError, OverflowError):
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
        cuts = [_c_long("split", "indices_or_sections", c) for c in indices_or_sections]
    edges = [0] + cuts + [n]
    lead = (slice(None),) * ax
    return [getitem(a, lead + (slice(lo, hi),)) for lo, hi in pairwise(edges)]


def _c_long(op: str, name: str, value):
    """``value`` unchanged if it is not an int beyond a C long (which NumPy would turn into an
    OverflowError), else a ValueError naming the op and the argument (what ``@op`` does for
    the ops it wraps; these three take a sequence and record their node themselves)."""
    if type(value) is int and not -2**63 <= value < 2**63:
        raise ValueError(f"{op} {name}: got {shown(value)}; expected integers between -2**63 "
                         "and 2**63 - 1 (what NumPy takes as an axis, a size or a count)")
    return value


# ---- moves, repeats and triangles (docs/backward.md §30) ------------------------------------

def _axis(op: str, name: str, axis, ndim: int) -> int:
    """``axis`` as an index in [0, ndim), or an AxisError (a ValueError and an IndexError, as
    NumPy's) naming the op and the argument."""
    integer(name, axis, owner=op)  # bools, floats and strings: TypeError
    try:
        return normalize_axis_index(int(axis), ndim)
    except np.exceptions.AxisError:
        raise np.exceptions.AxisError(f"{op} {name}: got {axis} for an array with {ndim} "
                                      f"dimensions; expected an integer in [-{ndim}, {ndim})") \
            from None


def _axes(op: str, name: str, axis, ndim: int) -> tuple:
    """An int or a sequence of ints as a tuple of distinct axes in [0, ndim)."""
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(_axis(op, name, ax, ndim) for ax in items)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op} {name}: got {axis} (repeated axes); expected distinct axes")
    return axes


@op(arrays=1)
def moveaxis(a, source, destination):
    """out = a with axes ``source`` moved to ``destination``, the others in order (np.moveaxis).

    VJP: ā = moveaxis(ḡ, destination, source).
    Derivation: docs/backward.md §30. Tests: tests/minigrad/op_cases/indexing.py.
    """
    src, dst = _axes("moveaxis", "source", source, a.ndim), \
        _axes("moveaxis", "destination", destination, a.ndim)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis source, destination: got {source} and {destination}; "
                         "expected as many destinations as sources")
    return np.moveaxis(a, src, dst), lambda g: np.moveaxis(g, dst, src)


@op(arrays=1)
def flip(a, axis=None):
    """out = a reversed along ``axis`` (all axes for None), as np.flip.

    VJP: ā = flip(ḡ, axis).
    Derivation: docs/backward.md §30. Tests: tests/minigrad/op_cases/indexing.py.
    """
    axes = None if axis is None else _axes("flip", "axis", axis, a.ndim)
    return np.flip(a, axes), lambda g: np.flip(g, axes)


@op(arrays=1)
def roll(a, shift, axis=None):
    """out[(i + shift) mod n] = a[i] along ``axis`` (over the flattened array for None), as np.roll.

    VJP: ā = roll(ḡ, −shift, axis).
    Derivation: docs/backward.md §30. Tests: tests/minigrad/op_cases/indexing.py.
    """
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    shifts = tuple(integer("shift", s, owner="roll") for s in shifts)
    if axis is None:
        if len(shifts) != 1:
            raise ValueError(f"roll shift: got {shift} with axis=None; expected one integer "
                             "(the flattened array has one axis)")
        back = -shifts[0]
        return np.roll(a, shifts[0]), lambda g: np.roll(g, back)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(_axis("roll", "axis", ax, a.ndim) for ax in axes)  # repeats add up (NumPy)
    if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise ValueError(f"roll shift, axis: got {shift} and {axis}; expected one shift per "
                         "axis (or one of them a single integer)")
    shift_array, axis_array = np.broadcast_arrays(np.array(shifts), np.array(axes))
    shifts, axes = tuple(shift_array.tolist()), tuple(axis_array.tolist())
    back = tuple(-s for s in shifts)
    return np.roll(a, shifts, axes), lambda g: np.roll(g, back, axes)


@op(arrays=1)
def tile(a, reps):
    """out = a repeated ``reps[i]`` times along axis i (np.tile: the shorter of a.shape and
    reps is padded with leading 1s).

    VJP: ḡ viewed as (r₀, n₀, r₁, n₁, ...), summed over the r axes.
    Derivation: docs/backward.md §30. Tests: tests/minigrad/op_cases/indexing.py,
    tests/minigrad/ops/test_indexing.py.
    """
    if isinstance(reps, np.ndarray):
        reps = reps.tolist()
    reps = reps if isinstance(reps, (tuple, list)) else (reps,)
    reps = tuple(integer("reps", r, low=0, owner="tile") for r in reps)
    in_shape = a.shape
    d = max(a.ndim, len(reps))
    shape = (1,) * (d - a.ndim) + in_shape
    full = (1,) * (d - len(reps)) + reps
    check_output("tile", "reps", elements(full) * elements(shape), f"{reps} for shape {in_shape}")
    out = np.tile(a, reps)
    interleaved = tuple(x for r, n in zip(full, shape, strict=True) for x in (r, n))

    def vjp(g):
        return g.reshape(interleaved).sum(axis=tuple(range(0, 2 * d, 2))).reshape(in_shape)

    return out, vjp


@op(arrays=1)
def repeat(a, repeats, axis=None):
    """out = each element of a repeated ``repeats`` times along ``axis`` (of the flattened
    array for None), as np.repeat; ``repeats`` an int or one count per element.

    VJP: ā_i = Σ of ḡ over the copies of element i.
    Derivation: docs/backward.md §30. Tests: tests/minigrad/op_cases/indexing.py,
    tests/minigrad/ops/test_indexing.py.
    """
    in_shape = a.shape
    if axis is None:
        a, ax = a.reshape(-1), 0
    else:
        ax = _axis("repeat", "axis", axis, a.ndim)
    n = a.shape[ax]
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        r = integer("repeats", repeats, low=0, owner="repeat")
        counts = None
    else:
        counts = np.asarray(repeats.data if isinstance(repeats, Tensor) else repeats)
        if counts.dtype.kind not in "iu" or counts.ndim > 1:
            raise TypeError(f"repeat repeats: got {counts.dtype} of shape {counts.shape}; "
                            "expected an integer or a 1-D array of integers")
        if counts.size not in (1, n):
            raise ValueError(f"repeat repeats: got {counts.size} counts for an axis of length "
                             f"{n}; expected 1 or {n}")
        if counts.size and counts.min() < 0:
            raise ValueError(f"repeat repeats: got a negative count {counts.min()}; expected "
                             "counts >= 0")
        if counts.size == 1:
            r, counts = int(counts.reshape(())), None
    # the output's length along the axis, in exact integers (hostile counts overflow int64)
    length = n * r if counts is None else sum(counts.tolist())
    check_output("repeat", "repeats", length * elements(a.shape) // max(n, 1),
                 f"{r}" if counts is None else f"counts summing to {length:,}")
    out = np.repeat(a, r if counts is None else counts, axis=ax)

    def vjp(g):
        gm = np.moveaxis(g, ax, 0)
        if counts is None:  # copies of element i are rows i·r ... i·r + r − 1
            ga = gm.reshape((n, r) + gm.shape[1:]).sum(axis=1)
        else:
            ga = np.zeros((n,) + gm.shape[1:], dtype=g.dtype)
            np.add.at(ga, np.repeat(np.arange(n), counts), gm)
        return np.moveaxis(ga, 0, ax).reshape(in_shape)

    return out, vjp


def _triangle(a, k, which: str):
    if a.ndim < 2:
        raise ValueError(f"{which} a: got shape {a.shape}; expected at least 2 dimensions "
                         "(the triangle is taken over the last two)")
    k = integer("k", k, owner=which)
    # past the array every k gives the same (full or empty) triangle: one NumPy can hold
    k = min(max(k, -a.shape[-2] - 1), a.shape[-1] + 1)
    f = np.tril if which == "tril" else np.triu
    return f(a, k), lambda g: f(g, k)


@op(arrays=1)
def tril(a, k=0):
    """out = a with the elements above diagonal k of the last two axes zeroed (np.tril).

    VJP: ā = tril(ḡ, k).
    Derivation: docs/backward.md §30. Tests: tests/minigrad/op_cases/indexing.py.
    """
    return _triangle(a, k, "tril")


@op(arrays=1)
def triu(a, k=0):
    """out = a with the elements below diagonal k of the last two axes zeroed (np.triu).

    VJP: ā = triu(ḡ, k).
    Derivation: docs/backward.md §30. Tests: tests/minigrad/op_cases/indexing.py.
    """
    return _triangle(a, k, "triu")
