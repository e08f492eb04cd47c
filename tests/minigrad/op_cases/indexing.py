"""Cases for minigrad/ops/indexing.py (take_along_axis, put_along_axis, diagonal, trace) and the
issue-14 ops of minigrad/ops/shape.py (moveaxis, flip, roll, tile, repeat, tril, triu).

The references are NumPy's own functions (the spec these ops follow) or explicit loops; the
inputs come from this module's own generator, so the other families' inputs do not move.
"""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import _sid, add_case, torch_table

_rng = np.random.default_rng(1414)
rn = partial(helpers.rn, _rng)


# ---- take_along_axis / put_along_axis ---------------------------------------------------------
_idx_rows = np.array([[0, 2, 2, 1], [3, 3, 0, 0]])  # (2, 4) along axis 0 of a (4, 4): repeats
_idx_cols = np.array([[1], [0], [1]])  # (3, 1) along axis 1 of a (3, 2)
_idx_neg = np.array([[[-1, 0, -1]], [[2, 2, -3]]])  # (2, 1, 3) along axis 2 of a (2, 3, 3)
for label, shape, idx, axis in [("rows-repeats", (4, 4), _idx_rows, 0),
                                ("cols", (3, 2), _idx_cols, 1),
                                ("neg-bcast", (2, 3, 3), _idx_neg, -1),
                                ("flat", (2, 3), np.array([5, 0, 0, 3]), None)]:
    add_case("take_along_axis", label,
             lambda a, i=idx, ax=axis: F.take_along_axis(a, i, ax),
             lambda a, i=idx, ax=axis: np.take_along_axis(a, i, ax), rn(*shape))


def np_put_loop(a, idx, values, axis):
    """Write by write in C order of the indices (the last write wins), with loops."""
    out = a.copy()
    vals = np.broadcast_to(values, idx.shape)
    ax = axis % a.ndim
    for pos in np.ndindex(idx.shape):
        target = list(pos)
        target[ax] = idx[pos]
        out[tuple(target)] = vals[pos]
    return out


_put_unique = np.array([[2, 0], [1, 3], [0, 1]])  # (3, 2) along axis 1 of a (3, 4)
_put_repeat = np.array([[1, 1, 3], [0, 2, 0]])  # (2, 3) along axis 1 of a (2, 4): repeats
for label, a_shape, idx, v_shape, axis in [("unique", (3, 4), _put_unique, (3, 2), 1),
                                           ("repeats", (2, 4), _put_repeat, (2, 3), -1),
                                           ("values-bcast", (2, 4), _put_repeat, (2, 1), 1),
                                           ("axis0", (3, 2), np.array([[2, 0]]), (1, 2), 0)]:
    add_case("put_along_axis", label,
             lambda a, v, i=idx, ax=axis: F.put_along_axis(a, i, v, ax),
             lambda a, v, i=idx, ax=axis: np_put_loop(a, i, v, ax), rn(*a_shape), rn(*v_shape))
add_case("put_along_axis", "scalar-value",
         lambda a: F.put_along_axis(a, _put_repeat, 0.5, 1),
         lambda a: np_put_loop(a, _put_repeat, 0.5, 1), rn(2, 4))

# ---- diagonal / trace -------------------------------------------------------------------------


def np_diagonal_loop(a, offset, axis1, axis2):
    """out[..., i] = a[..., i, i + offset], by a loop over i on axes moved last."""
    m = np.moveaxis(a, (axis1, axis2), (-2, -1))
    rows, cols = m.shape[-2:]
    pairs = [(i, i + offset) for i in range(-min(offset, 0), rows)
             if 0 <= i + offset < cols]
    return np.stack([m[..., i, j] for i, j in pairs], axis=-1) if pairs \
        else np.zeros(m.shape[:-2] + (0,))


for shape, offset, a1, a2 in [((4, 4), 0, 0, 1), ((3, 5), 2, 0, 1), ((5, 3), -1, 0, 1),
                              ((2, 3, 4), 1, 2, 0), ((3, 2, 3), 0, -1, 0)]:
    lbl = f"{_sid(shape)}-off{offset}-ax{a1},{a2}"
    add_case("diagonal", lbl, lambda a, o=offset, x=a1, y=a2: F.diagonal(a, o, x, y),
             lambda a, o=offset, x=a1, y=a2: np_diagonal_loop(a, o, x, y), rn(*shape))
    add_case("trace", lbl, lambda a, o=offset, x=a1, y=a2: F.trace(a, o, x, y),
             lambda a, o=offset, x=a1, y=a2: np_diagonal_loop(a, o, x, y).sum(-1), rn(*shape))

# ---- moveaxis, flip, roll ---------------------------------------------------------------------
for src, dst in [(0, -1), (-1, 0), ((0, 1), (2, 0)), ([2], [1])]:
    add_case("moveaxis", f"{src}->{dst}", lambda a, s=src, d=dst: F.moveaxis(a, s, d),
             lambda a, s=src, d=dst: np.moveaxis(a, s, d), rn(2, 3, 4))
for axis in [None, 0, -1, (0, 2)]:
    add_case("flip", f"{axis}", lambda a, ax=axis: F.flip(a, ax),
             lambda a, ax=axis: a[tuple(slice(None, None, -1) if ax is None or i in
                                         np.atleast_1d(ax) % 3 else slice(None)
                                         for i in range(3))], rn(2, 3, 4))
for shift, axis in [(2, None), (-1, 0), (5, -1), ((1, -2), (0, 2)), ((1, 2), (1, 1))]:
    def np_roll_loop(a, shift=shift, axis=axis):
        """out[(i + shift) mod n] = a[i] by index arithmetic, axis by axis."""
        if axis is None:
            flat = a.reshape(-1)
            return flat[(np.arange(flat.size) - shift) % flat.size].reshape(a.shape)
        out = a
        for s, ax in zip(np.atleast_1d(shift), np.atleast_1d(axis), strict=True):
            out = np.take(out, (np.arange(a.shape[ax]) - s) % a.shape[ax], axis=ax)
        return out

    add_case("roll", f"{shift}-axis={axis}", lambda a, s=shift, ax=axis: F.roll(a, s, ax),
             np_roll_loop, rn(2, 3, 4))

# ---- tile, repeat -----------------------------------------------------------------------------
for shape, reps in [((2, 3), (2, 1)), ((3,), (2, 2)), ((2, 1, 3), 3), ((2, 3), (1, 2, 3))]:
    add_case("tile", f"{_sid(shape)}-{reps}", lambda a, r=reps: F.tile(a, r),
             lambda a, r=reps: np.tile(a, r), rn(*shape))


def np_repeat_loop(a, repeats, axis):
    """Copies element by element along the (flattened for None) axis."""
    if axis is None:
        a, axis = a.reshape(-1), 0
    counts = np.broadcast_to(repeats, (a.shape[axis],))
    pieces = [np.take(a, [i], axis=axis) for i, r in enumerate(counts) for _ in range(r)]
    return np.concatenate(pieces, axis=axis)


for shape, repeats, axis in [((2, 3), 2, None), ((2, 3), 3, 1), ((3, 2), np.array([0, 2, 1]), 0),
                             ((2, 4), np.array([1, 0, 3, 2]), -1), ((2, 3), np.array([2]), 0)]:
    add_case("repeat", f"{_sid(shape)}-{np.asarray(repeats).tolist()}-axis={axis}",
             lambda a, r=repeats, ax=axis: F.repeat(a, r, ax),
             lambda a, r=repeats, ax=axis: np_repeat_loop(a, r, ax), rn(*shape))

# ---- tril, triu -------------------------------------------------------------------------------


def np_triangle_loop(a, k, lower):
    rows, cols = np.indices(a.shape[-2:])
    keep = (cols - rows <= k) if lower else (cols - rows >= k)
    return np.where(keep, a, 0.0)


for shape, k in [((4, 4), 0), ((3, 5), 1), ((2, 4, 3), -1), ((3, 3), -5)]:
    add_case("tril", f"{_sid(shape)}-k{k}", lambda a, k=k: F.tril(a, k),
             lambda a, k=k: np_triangle_loop(a, k, True), rn(*shape))
    add_case("triu", f"{_sid(shape)}-k{k}", lambda a, k=k: F.triu(a, k),
             lambda a, k=k: np_triangle_loop(a, k, False), rn(*shape))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: take_along_axis = take_along_dim, put_along_axis = scatter
    (unique indices only: with repeated ones torch's order is unspecified; see
    ops/test_indexing.py), repeat = repeat_interleave; float64 and float32."""
    rng = np.random.default_rng(1415)

    def case(*args):  # float64 and float32, tolerances from the dtype
        add(*args, dtypes=(np.float64, np.float32))

    rn = partial(helpers.rn, rng)

    def _ti(a):  # an index / label array as a torch tensor
        return torch.as_tensor(a)

    _gather = np.array([[0, 2, 2, 1], [3, 3, 0, 0]])
    case("take_along_axis", "repeats", lambda a: F.take_along_axis(a, _gather, 0),
         lambda a: torch.take_along_dim(a, _ti(_gather), 0), rn(4, 4))
    _gather3 = np.array([[[2, 0, 2]], [[1, 1, 0]]])
    case("take_along_axis", "bcast", lambda a: F.take_along_axis(a, _gather3, -1),
         lambda a: torch.take_along_dim(a, _ti(_gather3), -1), rn(2, 3, 3))
    case("take_along_axis", "flat", lambda a: F.take_along_axis(a, np.array([5, 0, 0, 3]), None),
         lambda a: torch.take_along_dim(a, _ti(np.array([5, 0, 0, 3]))), rn(2, 3))

    _scatter = np.array([[2, 0], [1, 3], [0, 1]])  # unique along axis 1
    case("put_along_axis", "axis1", lambda a, v: F.put_along_axis(a, _scatter, v, 1),
         lambda a, v: torch.scatter(a, 1, _ti(_scatter), v), rn(3, 4), rn(3, 2))
    _scatter0 = np.array([[2, 0, 1], [0, 1, 2]])  # unique along axis 0
    case("put_along_axis", "axis0", lambda a, v: F.put_along_axis(a, _scatter0, v, 0),
         lambda a, v: torch.scatter(a, 0, _ti(_scatter0), v), rn(3, 3), rn(2, 3))
    case("put_along_axis", "values-bcast", lambda a, v: F.put_along_axis(a, _scatter, v, 1),
         lambda a, v: torch.scatter(a, 1, _ti(_scatter), v.expand(3, 2)), rn(3, 4), rn(3, 1))

    for reps in [(2, 1), (2, 2, 3)]:
        case("tile", f"{reps}", lambda a, r=reps: F.tile(a, r), lambda a, r=reps: torch.tile(a, r),
             rn(2, 3))
    for reps, axis in [(2, None), (3, 1), (np.array([0, 2, 1]), 0)]:
        case("repeat", f"{np.asarray(reps).tolist()}-{axis}",
             lambda a, r=reps, ax=axis: F.repeat(a, r, ax),
             lambda a, r=reps, ax=axis: torch.repeat_interleave(
                 a, _ti(r) if isinstance(r, np.ndarray) else r, dim=ax), rn(3, 2))
    for shift, axis in [(2, None), (-1, 0), ((1, -2), (0, 2))]:
        case("roll", f"{shift}-{axis}", lambda a, s=shift, ax=axis: F.roll(a, s, ax),
             lambda a, s=shift, ax=axis: torch.roll(a, s, ax), rn(2, 3, 4))
    for axis in [None, 1, (0, 2)]:
        case("flip", f"{axis}", lambda a, ax=axis: F.flip(a, ax),
             lambda a, ax=axis: torch.flip(a, tuple(range(a.ndim)) if ax is None else
                                           np.atleast_1d(ax).tolist()), rn(2, 3, 4))
    for k in (0, 1, -2):
        case("tril", f"k{k}", lambda a, k=k: F.tril(a, k), lambda a, k=k: torch.tril(a, k),
             rn(2, 4, 5))
        case("triu", f"k{k}", lambda a, k=k: F.triu(a, k), lambda a, k=k: torch.triu(a, k),
             rn(2, 4, 5))
    for src, dst in [(0, -1), ((0, 1), (2, 0))]:
        case("moveaxis", f"{src}-{dst}", lambda a, s=src, d=dst: F.moveaxis(a, s, d),
             lambda a, s=src, d=dst: torch.moveaxis(a, s, d), rn(2, 3, 4))
    for offset, a1, a2 in [(0, 0, 1), (1, 2, 0), (-1, -1, 1)]:
        case("diagonal", f"{offset}-{a1},{a2}",
             lambda a, o=offset, x=a1, y=a2: F.diagonal(a, o, x, y),
             lambda a, o=offset, x=a1, y=a2: torch.diagonal(a, o, x, y), rn(3, 4, 5))
        case("trace", f"{offset}-{a1},{a2}", lambda a, o=offset, x=a1, y=a2: F.trace(a, o, x, y),
             lambda a, o=offset, x=a1, y=a2: torch.diagonal(a, o, x, y).sum(-1), rn(3, 4, 5))
    case("trace", "2d", F.trace, torch.trace, rn(4, 3))
