"""Scatters along an axis, as torch's: ``scatter``, ``scatter_add``, ``scatter_reduce``,
``index_add``.

Each writes the elements of a source into a copy of ``x`` at positions an integer index
names; where several writes land on one element, ``scatter_add`` and ``index_add`` add every
one (as ``np.add.at``), ``scatter_reduce`` reduces them (sum, prod, mean, amax, amin), and
plain ``scatter`` keeps the last one in C order of the index. torch's argument names and
orders, with NumPy's ``axis`` for torch's ``dim``. docs/backward.md §36 derives the VJPs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import boolean, choice, integer, real
from ..defop import as_array_input, op
from .bounds import check_output

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # pragma: no cover
    from numpy.core.multiarray import normalize_axis_index  # type: ignore[no-redef]  # (NumPy 1.x)

__all__ = ["scatter", "scatter_add", "scatter_reduce", "index_add", "ScatterIndexError"]

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


class ScatterIndexError(IndexError, ValueError):
    """An index outside its axis: an IndexError as torch raises, and a ValueError (a wrong
    value) as every other bad argument here."""


def _axis(op: str, axis: Any, ndim: int) -> int:
    axis = integer("axis", axis, owner=op)
    try:
        return normalize_axis_index(axis, max(ndim, 1))
    except (np.exceptions.AxisError, OverflowError):  # (past a C long: 2**70)
        raise np.exceptions.AxisError(f"{op} axis: got {axis} for an array with {ndim} "
                                      f"dimensions; expected an integer in [-{ndim}, {ndim})"
                                      ) from None


def _index(op: str, index: Any) -> np.ndarray:
    """``index`` as an integer array (a list becomes one), or a TypeError naming it."""
    if isinstance(index, (list, tuple)):
        try:
            index = np.asarray(index)
        except (ValueError, OverflowError):
            index = None
    if not isinstance(index, np.ndarray) or index.dtype.kind not in "iu":
        shown = index.dtype if isinstance(index, np.ndarray) else type(index).__name__
        raise TypeError(f"{op} index: got {shown}; expected an array of integers (torch's "
                        "int64 index)")
    # every position is read below: a broadcast view may hold 10**12 of them
    check_output(op, "index", index.size, f"shape {index.shape}")
    return index


def _in_range(op: str, index: np.ndarray, n: int) -> None:
    if index.size and (index.min() < 0 or index.max() >= n):
        bad = index.min() if index.min() < 0 else index.max()
        raise ScatterIndexError(f"{op} index: got {bad} along an axis of length {n}; expected "
                                f"indices in [0, {n}) (negative ones are refused, as torch "
                                "does)")


def _source(op: str, name: str, src: Any, x: np.ndarray, number: bool = False) -> Any:
    src = as_array_input(src, op, name)
    if type(src) is not np.ndarray and not number:
        src = np.asarray(src)
    if isinstance(src, np.ndarray) and (src.dtype.kind == "b") != (x.dtype.kind == "b"):
        raise TypeError(f"{op} {name}: got dtype {src.dtype} for x of dtype {x.dtype}; "
                        "expected both bool or both numbers")
    return src


def _writes(op: str, x: np.ndarray, axis: Any, index: Any, src: Any) -> tuple:
    """Checked arguments of the scatters: (axis, targets, block), ``targets`` the flat
    position in x of each write in C order of ``index``, ``block`` the slices of ``src`` it
    reads (index.shape from the start). torch's rules: index, x and src have as many
    dimensions; index no larger than src along every axis, nor than x off ``axis``."""
    ax = _axis(op, axis, x.ndim)
    index = _index(op, index)
    shape = x.shape if x.ndim else (1,)
    if index.ndim != len(shape) and not (index.ndim == 0 == x.ndim):
        raise ValueError(f"{op} index: got {index.ndim} dimensions for x of shape {x.shape}; "
                         f"expected {x.ndim} (as many as x)")
    idx = index.reshape(-1) if not x.ndim else index
    if isinstance(src, np.ndarray) and src.ndim != x.ndim and not (x.ndim == 0 == src.ndim - 1):
        raise ValueError(f"{op} src: got shape {src.shape} for x of shape {x.shape}; expected "
                         f"{x.ndim} dimensions (as many as x)")
    src_shape = src.shape if isinstance(src, np.ndarray) and src.ndim else None
    for d, size in enumerate(idx.shape):
        if (src_shape is not None and size > src_shape[d]) or (d != ax and size > shape[d]):
            raise ValueError(f"{op} index: got shape {index.shape} for x of shape {x.shape}"
                             + (f" and src of shape {src.shape}" if src_shape else "")
                             + f"; expected no larger than src along every axis and than x "
                             f"along every axis but {ax}")
    _in_range(op, idx, shape[ax])
    coords = list(np.indices(idx.shape, sparse=True))
    coords[ax] = idx
    targets = np.ravel_multi_index(tuple(np.broadcast_arrays(*coords)), shape).reshape(-1)
    block = tuple(slice(0, size) for size in idx.shape) if src_shape else None
    return ax, targets, block


def _values(src: Any, block: tuple | None, n: int) -> Any:
    """The flat values of the writes, C order of the index (a number stays a number)."""
    if block is None:
        return src.reshape(-1)[:1].repeat(n) if isinstance(src, np.ndarray) else src
    return src[block].reshape(-1)


def _src_grad(src: Any, block: tuple | None, flat: np.ndarray) -> np.ndarray:
    """The gradient of ``src`` from the per-write gradients ``flat`` (0 outside the block)."""
    if not isinstance(src, np.ndarray):  # a number (a 0-d Tensor next to x): every write
        return np.asarray(flat.sum(dtype=flat.dtype))
    if block is None:  # a 0-d src (of a 0-d x): one element, written at most once
        return np.asarray(flat.sum(dtype=flat.dtype)).reshape(src.shape)
    gs = np.zeros(src.shape, dtype=flat.dtype)
    gs[block] = flat.reshape(tuple(s.stop for s in block))
    return gs


def _reduce_forward(x: np.ndarray, t: np.ndarray, v: Any, reduce: str,
                    include_self: bool) -> tuple[np.ndarray, np.ndarray]:
    """(out flat, how many values each element of out reduced) of scatter_reduce."""
    dtype = np.result_type(x, v)
    out = np.array(x, dtype=dtype, order="C").reshape(-1)
    written = np.bincount(t, minlength=out.size)
    if not include_self:  # the written elements start from the reduction's identity
        if reduce in ("amax", "amin"):
            out[t] = v  # some write of each (no identity is needed: any one is a member)
        else:
            out[t] = 0 if reduce in ("sum", "mean") else 1
    count = written + (1 if include_self else 0)
    if reduce in ("sum", "mean"):
        np.add.at(out, t, v)
        if reduce == "mean":
            n = np.maximum(count, 1)
            out = out // n if dtype.kind in "iu" else out / n.astype(dtype)  # torch: floor
    elif reduce == "prod":
        np.multiply.at(out, t, v)
    else:
        (np.maximum if reduce == "amax" else np.minimum).at(out, t, v)
    return out.astype(dtype, copy=False), count


@op(arrays=1)
def scatter_reduce(x, axis, index, src, reduce, include_self=True):
    """out[j] = reduce(x[j], src[i] for each i with t(i) = j), t(i) = i with index[i].

    t(i): index position i with its ``axis`` coordinate replaced by index[i]. torch's
    scatter_reduce: ``reduce`` "sum", "prod", "mean", "amax" or "amin" over every write to an
    element; ``include_self=False`` leaves x's written elements out of it.

    x (..., n, ...); index integer, as many dimensions as x, each in [0, n), no larger than src
    along any axis nor than x off ``axis``; src read over index's shape from its start.
    VJPs as torch's (amax/amin: the tied winners share evenly; prod: the product of the other
    values, zeros handled without dividing by them).
    Derivation: docs/backward.md §36. Tests: tests/minigrad/op_cases/scatter.py,
    tests/minigrad/ops/test_scatter.py.
    """
    reduce = choice("reduce", reduce, REDUCTIONS, owner="scatter_reduce")
    include_self = boolean("include_self", include_self, owner="scatter_reduce")
    src = _source("scatter_reduce", "src", src, x)
    if x.dtype.kind == "b":
        raise TypeError(f"scatter_reduce x: got dtype bool; expected numbers ({reduce!r} of "
                        "truth values: use scatter)")
    ax, t, block = _writes("scatter_reduce", x, axis, index, src)
    v = _values(src, block, t.size)
    out, count = _reduce_forward(x, t, v, reduce, include_self)
    in_shape = x.shape
    written = count > (1 if include_self else 0)
    vjp_x, vjp_src = _reduce_vjps(x.reshape(-1), t, v, out, count, written, reduce,
                                  include_self, in_shape, src, block)
    return out.reshape(in_shape), (vjp_x, None, None, vjp_src)


def _reduce_vjps(x: np.ndarray, t: np.ndarray, v: Any, out: np.ndarray, count: np.ndarray,
                 written: np.ndarray, reduce: str, include_self: bool, in_shape: tuple,
                 src: Any, block: tuple | None) -> tuple:
    """(VJP of x, VJP of src) of scatter_reduce; docs/backward.md §36."""
    if reduce == "sum":
        dx: Any = 1
        def dv(gf):
            return gf[t]
    elif reduce == "mean":
        n = np.maximum(count, 1)
        dx = 1 / n
        def dv(gf):
            return gf[t] / n[t]
    elif reduce == "prod":
        dx, dv = _prod_partials(x, t, v, include_self)
    else:  # amax, amin: the winners (equal to the result) share evenly
        self_wins = (x == out) if include_self else np.zeros(x.shape, dtype=bool)
        src_wins = v == out[t]
        winners = self_wins + np.bincount(t, weights=src_wins, minlength=x.size)
        share = 1 / np.maximum(winners, 1)
        dx = self_wins * share
        def dv(gf):
            return np.where(src_wins, gf[t] * share[t], 0)

    def vjp_x(g):
        gf = np.reshape(g, -1)
        gx = gf * dx
        if not include_self:
            gx = np.where(written, 0, gf)
        return np.asarray(gx, dtype=g.dtype).reshape(in_shape)

    def vjp_src(g):
        return _src_grad(src, block, np.asarray(dv(np.reshape(g, -1)), dtype=g.dtype))

    return vjp_x, vjp_src


def _prod_partials(x: np.ndarray, t: np.ndarray, v: Any, include_self: bool) -> tuple:
    """∂out/∂x and ∂out/∂v of the scatter product: the product of the other members of each
    group. Zeros are counted, never divided by: a member that is the group's only zero gets
    the product of the nonzero others; with two zeros every partial is 0."""
    v = np.broadcast_to(v, t.shape)
    dx = np.ones(x.shape, dtype=np.result_type(x, v))
    np.multiply.at(dx, t, v)  # x's partial: the product of the writes (exact, any zeros)
    zeros = np.bincount(t, weights=v == 0, minlength=x.size)
    nonzero = np.ones(x.shape, dtype=dx.dtype)
    np.multiply.at(nonzero, t, np.where(v == 0, 1, v))
    if include_self:
        zeros = zeros + (x == 0)
        nonzero = nonzero * np.where(x == 0, 1, x)
    vt, zt, nzt = v, zeros[t], nonzero[t]
    with np.errstate(divide="ignore", invalid="ignore"):
        others = np.where(vt == 0, np.where(zt == 1, nzt, 0),
                          np.where(zt == 0, nzt / np.where(vt == 0, 1, vt), 0))

    def dv(gf):
        return gf[t] * others

    return dx, dv


@op(arrays=1)
def scatter_add(x, axis, index, src):
    """out[j] = x[j] + Σ_{i: t(i) = j} src[i], t(i) = i with index[i] along ``axis``.

    torch.scatter_add: every write counts, repeated indices add up (np.add.at).

    Shapes as ``scatter_reduce``'s. VJP: x̄ = ḡ; s̄rc[i] = ḡ[..., index[i], ...].
    Derivation: docs/backward.md §36. Tests: tests/minigrad/op_cases/scatter.py,
    tests/minigrad/ops/test_scatter.py.
    """
    src = _source("scatter_add", "src", src, x)
    if x.dtype.kind == "b":
        raise TypeError("scatter_add x: got dtype bool; expected numbers (sums of truth "
                        "values: use scatter)")
    ax, t, block = _writes("scatter_add", x, axis, index, src)
    v = _values(src, block, t.size)
    out, _ = _reduce_forward(x, t, v, "sum", True)

    def vjp_src(g):
        return _src_grad(src, block, np.reshape(g, -1)[t])

    return out.reshape(x.shape), (lambda g: g, None, None, vjp_src)


@op(arrays=1)
def scatter(x, axis, index, src, reduce=None):
    """out[j] = src[i] for the last write i with t(i) = j, else x[j] (t(i) = i with index[i]).

    torch.scatter along ``axis``; where several writes hit one element the last one in C
    order of ``index`` wins (torch leaves that undefined). ``reduce="add"`` / ``"multiply"``
    are scatter_reduce's "sum" / "prod".

    Shapes as ``scatter_reduce``'s; ``src`` may be a number (torch's ``value``). VJP (no
    reduce): x̄ = ḡ with the written elements zeroed; s̄rc[i] = ḡ at its target if the write
    survives, else 0.
    Derivation: docs/backward.md §36. Tests: tests/minigrad/op_cases/scatter.py,
    tests/minigrad/ops/test_scatter.py.
    """
    if reduce is not None:
        reduce = {"add": "sum", "multiply": "prod"}[
            choice("reduce", reduce, ("add", "multiply"), owner="scatter")]
        if x.dtype.kind == "b":
            raise TypeError(f"scatter x: got dtype bool with reduce={reduce!r}; expected "
                            "numbers")
    src = _source("scatter", "src", src, x, number=True)
    ax, t, block = _writes("scatter", x, axis, index, src)
    v = _values(src, block, t.size)
    if reduce is not None:
        out, count = _reduce_forward(x, t, v, reduce, True)
        reduced = _reduce_vjps(x.reshape(-1), t, v, out, count, count > 1, reduce, True,
                               x.shape, src, block)
        return out.reshape(x.shape), (reduced[0], None, None, reduced[1])
    # the last write to each element: the first in the reversed list
    _, last = np.unique(t[::-1], return_index=True)
    keep = t.size - 1 - last
    survives = np.zeros(t.size, dtype=bool)
    survives[keep] = True
    out = np.array(x, dtype=np.result_type(x, v), order="C").reshape(-1)
    out[t[keep]] = np.broadcast_to(v, t.shape)[keep]
    in_shape = x.shape

    def vjp_x(g):
        gx = np.array(g, order="C").reshape(-1)
        gx[t] = 0
        return gx.reshape(in_shape)

    def vjp_src(g):
        return _src_grad(src, block, np.where(survives, np.reshape(g, -1)[t], 0)
                         .astype(g.dtype, copy=False))

    return out.reshape(in_shape), (vjp_x, None, None, vjp_src)


@op(arrays=1)
def index_add(x, axis, index, source, alpha=1):
    """out[..., index[i], ...] = x[..., index[i], ...] + alpha · Σ source[..., i, ...].

    torch.index_add along ``axis``: the sum over every i, repeated indices add up (np.add.at).

    x (..., n, ...); index 1-D integers in [0, n) (0-d: one); source (..., len(index), ...),
    x's shape elsewhere. VJP: x̄ = ḡ; s̄ource[..., i, ...] = alpha · ḡ[..., index[i], ...].
    Derivation: docs/backward.md §36. Tests: tests/minigrad/op_cases/scatter.py,
    tests/minigrad/ops/test_scatter.py.
    """
    ax = _axis("index_add", axis, x.ndim)
    index = _index("index_add", index)
    source = _source("index_add", "source", source, x)
    alpha = real("alpha", alpha, owner="index_add")
    if x.dtype.kind == "b":
        raise TypeError("index_add x: got dtype bool; expected numbers")
    if index.ndim > 1:
        raise ValueError(f"index_add index: got shape {index.shape}; expected 1 dimension "
                         "(torch's vector of indices; a 0-d one is one index)")
    index = index.reshape(-1)
    shape = x.shape if x.ndim else (1,)
    want = shape[:ax] + (index.size,) + shape[ax + 1:]
    if source.shape != want and not (x.ndim == 0 and source.size == index.size == 1):
        raise ValueError(f"index_add source: got shape {source.shape} for x of shape {x.shape} "
                         f"and {index.size} indices along axis {ax}; expected {want}")
    _in_range("index_add", index, shape[ax])
    if alpha.is_integer() and x.dtype.kind in "iu" and source.dtype.kind in "iu":
        scaled = source * int(alpha)  # integers stay integers (torch takes an int alpha)
    else:
        scaled = source * alpha if alpha != 1 else source
    out = np.array(x, dtype=np.result_type(x, scaled), order="C").reshape(shape)
    np.add.at(out, (slice(None),) * ax + (index,), scaled.reshape(want))

    def vjp_source(g):
        picked = np.take(np.reshape(g, shape), index, axis=ax)
        return (picked * alpha if alpha != 1 else picked).reshape(source.shape)

    return out.reshape(x.shape), (lambda g: g, None, None, vjp_source)
