"""Sorting along an axis: ``sort``, ``argsort``, ``topk``.

One order everywhere: NumPy's stable sort (``kind="stable"``). Equal elements keep their
order, ascending and descending alike, and NaN counts as larger than every number: NumPy's
ascending sort puts it at the end, so a descending one puts it first (where torch puts it
too). The values' VJP sends each output element's gradient back through the permutation;
docs/backward.md §35 derives it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..checks import boolean, integer
from ..defop import as_array_input, op
from ..tensor import Tensor

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # pragma: no cover
    from numpy.core.multiarray import normalize_axis_index  # type: ignore[no-redef]  # (NumPy 1.x)

__all__ = ["sort", "argsort", "topk", "TopK"]


class TopK(NamedTuple):
    """``topk``'s result, as torch.topk's: the values (a Tensor, differentiable) and their
    positions along the axis (an int64 np.ndarray, as ``argsort`` and ``argmax`` give)."""

    values: Tensor
    indices: np.ndarray


def _along(op: str, a: np.ndarray, axis: Any) -> tuple[np.ndarray, int]:
    """(``a`` as the array to sort, the axis): axis None sorts the flattened array, as
    np.sort; a 0-d array is one element along axis 0 or -1, as torch.sort takes it."""
    if axis is None:
        return a.reshape(-1), 0
    axis = integer("axis", axis, owner=op)
    if a.ndim == 0:
        if axis not in (0, -1):
            raise np.exceptions.AxisError(f"{op} axis: got {axis} for a 0-d array; expected "
                                          "0, -1 or None")
        return a.reshape(1), 0
    try:
        return a, normalize_axis_index(axis, a.ndim)
    except (np.exceptions.AxisError, OverflowError):  # (past a C long: 2**70)
        raise np.exceptions.AxisError(f"{op} axis: got {axis} for an array with {a.ndim} "
                                      f"dimensions; expected an integer in [-{a.ndim}, "
                                      f"{a.ndim}) or None") from None


def _order(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The stable sorting permutation along ``axis`` (int64). Descending: sort the reversed
    array ascending and read the result backwards, so that equal elements keep their order
    (negating would break unsigned integers and -0.0 against 0.0) and NaN comes first."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable").astype(np.int64, copy=False)
    n = a.shape[axis]
    backwards = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(backwards, axis).astype(np.int64, copy=False)


def _data(op: str, a: Any) -> np.ndarray:
    return a.data if isinstance(a, Tensor) else np.asarray(as_array_input(a, op, "x"))


@op(arrays=1)
def sort(x, axis=-1, descending=False):
    """y = x sorted along ``axis``: y[..., i] = x[..., p_i], p the stable sorting permutation.

    x any shape; y its shape (flattened for ``axis=None``, as np.sort). NumPy's order
    (``kind="stable"``): ties keep their order, also with ``descending=True`` (torch's name);
    NaN is the largest value (last ascending, first descending, as torch). The values only, as
    np.sort: torch.sort's indices are ``argsort(x)``. VJP: x̄[..., p_i] = ḡ[..., i].
    Derivation: docs/backward.md §35. Tests: tests/minigrad/op_cases/sort.py,
    tests/minigrad/ops/test_sort.py.
    """
    descending = boolean("descending", descending, owner="sort")
    a, ax = _along("sort", x, axis)
    perm = _order(a, ax, descending)
    in_shape, shape = x.shape, a.shape

    def vjp(g):
        gx = np.empty(shape, dtype=g.dtype)
        np.put_along_axis(gx, perm, np.reshape(g, shape), ax)  # a permutation: every slot once
        return gx.reshape(in_shape)

    y = np.take_along_axis(a, perm, ax)
    return (y if axis is None or x.ndim else y.reshape(())), vjp


def argsort(x, axis=-1, descending=False) -> np.ndarray:
    """The stable sorting permutation along ``axis`` (np.argsort(kind="stable"), int64).

    Not differentiable: an np.ndarray, as ``argmax``. Ties keep their order in both
    directions (``descending=True``: torch's stable descending argsort); NaN sorts as the
    largest value.
    Derivation: docs/backward.md §35 (no gradient). Tests: tests/minigrad/ops/test_sort.py.
    """
    descending = boolean("descending", descending, owner="argsort")
    data = _data("argsort", x)
    a, ax = _along("argsort", data, axis)
    perm = _order(a, ax, descending)
    return perm if axis is None or data.ndim else perm.reshape(())


@op(name="topk", arrays=1)
def _topk(x, indices, axis):
    """The values at ``indices`` along ``axis``; VJP: ḡ written back there (no repeats)."""
    shape = x.shape
    a = x.reshape(1) if not x.ndim else x  # a 0-d x: its one element, along axis 0
    at = indices.reshape(1) if not x.ndim else indices

    def vjp(g):
        gx = np.zeros(a.shape, dtype=g.dtype)
        np.put_along_axis(gx, at, np.reshape(g, at.shape), axis)
        return gx.reshape(shape)

    return np.take_along_axis(a, at, axis).reshape(indices.shape), vjp


def topk(x, k, axis=-1, largest=True, sorted=True) -> TopK:
    """values, indices = the k largest (smallest: ``largest=False``) elements along ``axis``.

    x (..., n, ...) with 0 <= k <= n along ``axis``; both results (..., k, ...). A named tuple
    ``TopK(values, indices)`` as torch.topk: values a Tensor, indices an int64 np.ndarray.
    Ties go to the lower index (the first k of the stable sort); NaN counts as the largest
    value. ``sorted=True`` lists them in sorted order (largest first for largest=True);
    ``sorted=False`` in the order of their indices. VJP: x̄ = ḡ at the chosen positions, 0
    elsewhere.
    Derivation: docs/backward.md §35. Tests: tests/minigrad/op_cases/sort.py,
    tests/minigrad/ops/test_sort.py.
    """
    data = _data("topk", x)
    largest = boolean("largest", largest, owner="topk")
    sorted = boolean("sorted", sorted, owner="topk")
    if axis is None:
        raise TypeError("topk axis: got None; expected an integer (torch.topk works along "
                        "one axis)")
    a, ax = _along("topk", data, axis)
    n = a.shape[ax]
    k = integer("k", k, low=0 if data.ndim else 1, high=n, owner="topk")
    perm = np.take(_order(a, ax, largest), np.arange(k), axis=ax)
    if not sorted:
        perm = np.sort(perm, axis=ax)
    if not data.ndim:  # torch.topk of a 0-d tensor: 0-d values and index
        perm = perm.reshape(())
    return TopK(_topk(x if isinstance(x, Tensor) else data, perm, ax), perm)
