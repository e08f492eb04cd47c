"""Sorting along an axis: ``sort``, ``argsort``, ``topk``, and the order statistics
``median`` and ``quantile``.

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
from ..defop import as_array_input, as_floating, op
from ..tensor import Tensor
from .bounds import check_output, elements

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # pragma: no cover
    from numpy.core.multiarray import normalize_axis_index  # type: ignore[no-redef]  # (NumPy 1.x)

__all__ = ["sort", "argsort", "topk", "median", "quantile", "TopK"]


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
    """values, indices = the k largest (``largest=False``: smallest) elements along ``axis``.

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


def _nonempty(op: str, a: np.ndarray, ax: int) -> int:
    n = a.shape[ax]
    if n == 0:
        raise ValueError(f"{op} x: got an empty axis {ax} (shape {a.shape}); expected at least "
                         "one element to take an order statistic of")
    return n


def _first_nan(a: np.ndarray, ax: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(which slices along ``ax`` hold a NaN, the position of their first one), kept dims;
    None when there is none. Such a slice's order statistic is NaN (torch, NumPy)."""
    if a.dtype.kind != "f":
        return None
    isnan = np.isnan(a)
    if not isnan.any():
        return None
    return isnan.any(axis=ax, keepdims=True), np.argmax(isnan, axis=ax, keepdims=True)


def _reduced_shape(shape: tuple, axis: Any, ax: int, keepdims: bool) -> tuple:
    if not keepdims:
        return () if axis is None else shape[:ax] + shape[ax + 1:]
    return (1,) * len(shape) if axis is None or not shape else shape[:ax] + (1,) + shape[ax + 1:]


@op(arrays=1)
def median(x, axis=None, keepdims=False):
    """y = x_(m), m = (n - 1) // 2 along ``axis``: the lower median (torch.median).

    The element at position m of the stable sort; NaN if the slice holds one.

    x any shape, axis an int or None (all elements); y x's shape without the axis (kept as 1
    with ``keepdims``). An element of x, not np.median's mean of the two middle ones. VJP:
    x̄ = ḡ at that one element (ties: the one the stable sort puts at m, which is the index
    torch.median(x, dim) returns; a NaN slice: its first NaN), 0 elsewhere.
    Derivation: docs/backward.md §35. Tests: tests/minigrad/op_cases/sort.py,
    tests/minigrad/ops/test_sort.py.
    """
    keepdims = boolean("keepdims", keepdims, owner="median")
    a, ax = _along("median", x, axis)
    n = _nonempty("median", a, ax)
    pick = np.take(_order(a, ax, False), [(n - 1) // 2], axis=ax)
    nans = _first_nan(a, ax)
    if nans is not None:
        pick = np.where(nans[0], nans[1], pick)
    in_shape = x.shape

    def vjp(g):
        gx = np.zeros(a.shape, dtype=g.dtype)
        np.put_along_axis(gx, pick, np.reshape(g, pick.shape), ax)
        return gx.reshape(in_shape)

    y = np.take_along_axis(a, pick, ax)
    return y.reshape(_reduced_shape(x.shape, axis, ax, keepdims)), vjp


def _lerp(lo: np.ndarray, hi: np.ndarray, t: np.ndarray) -> np.ndarray:
    """lo + t·(hi - lo), from the nearer end (NumPy's: exact at t = 0 and t = 1)."""
    d = hi - lo
    return np.where(t >= 0.5, hi - d * (1 - t), lo + d * t)


@op(arrays=1)
def quantile(x, q, axis=None, keepdims=False):
    """y = (1 - f)·s_j + f·s_(j+1), s = x sorted along ``axis``, j + f = (n - 1)·q.

    j = ⌊(n - 1)·q⌋: NumPy's default method "linear" (torch.quantile's default too).

    x any shape (integers as float64); q a number or 1-D array in [0, 1]; axis an int or
    None; y q.shape + x's shape without the axis (kept as 1 with ``keepdims``), as
    np.quantile. A slice holding NaN gives NaN. VJP: x̄ = (1 - f)·ḡ at the element sorted to j
    and f·ḡ at the one sorted to j + 1 (stable order), summed over q; a NaN slice sends ḡ to
    its first NaN (as torch).
    Derivation: docs/backward.md §35. Tests: tests/minigrad/op_cases/sort.py,
    tests/minigrad/ops/test_sort.py.
    """
    keepdims = boolean("keepdims", keepdims, owner="quantile")
    qs = np.asarray(as_array_input(q, "quantile", "q"))
    if qs.ndim > 1 or qs.dtype.kind == "b":
        raise TypeError(f"quantile q: got {'dtype bool' if qs.ndim < 2 else f'shape {qs.shape}'}"
                        "; expected a number or a 1-D array of numbers in [0, 1]")
    qs = qs.astype(np.float64)
    if qs.size and not (np.all(qs >= 0) and np.all(qs <= 1)):  # (NaN fails both)
        bad = qs[~((qs >= 0) & (qs <= 1))][0]
        raise ValueError(f"quantile q: got {bad}; expected numbers in [0, 1]")
    x = as_floating(x)
    a, ax = _along("quantile", x, axis)
    n = _nonempty("quantile", a, ax)
    rest = _reduced_shape(x.shape, axis, ax, keepdims)
    check_output("quantile", "q", elements(qs.shape + rest), f"{qs.size} quantiles of "
                 f"{elements(rest)} slices")
    perm = np.moveaxis(_order(a, ax, False), ax, -1)  # (..., n): each slice's order last
    h = (n - 1) * qs.reshape(-1)  # (Q,)
    j = np.floor(h).astype(np.int64)
    j1 = np.minimum(j + 1, n - 1)
    f = (h - j).astype(a.dtype)
    lo, hi = perm[..., j], perm[..., j1]  # (..., Q): positions in x
    last = np.moveaxis(a, ax, -1)
    y = _lerp(np.take_along_axis(last, lo, -1), np.take_along_axis(last, hi, -1), f)
    nans = _first_nan(a, ax)
    if nans is not None:  # NaN, and the gradient to the first NaN, for every q
        nan_rows = np.moveaxis(nans[0], ax, -1)
        y = np.where(nan_rows, np.nan, y)
        lo = np.where(nan_rows, np.moveaxis(nans[1], ax, -1), lo)
        w_hi = np.where(nan_rows, 0, f).astype(a.dtype)
    else:
        w_hi = np.broadcast_to(f, y.shape)
    out_shape = qs.shape + rest
    last_shape = last.shape

    def vjp(g):
        gq = np.moveaxis(np.reshape(g, (qs.size,) + rest), 0, -1)  # (..., Q) as y
        gq = np.broadcast_to(gq.reshape(y.shape), y.shape)
        rows = last_shape[:-1]
        gl = np.zeros(last_shape, dtype=g.dtype).reshape(-1, n)  # one slice a row
        r, per_row = np.arange(gl.shape[0])[:, None], (gl.shape[0], -1)
        np.add.at(gl, (r, lo.reshape(per_row)), ((1 - w_hi) * gq).reshape(per_row))
        np.add.at(gl, (r, hi.reshape(per_row)), (w_hi * gq).reshape(per_row))
        return np.moveaxis(gl.reshape(rows + (n,)), -1, ax).reshape(x_shape)

    x_shape = x.shape
    return np.moveaxis(y, -1, 0).reshape(out_shape), vjp
