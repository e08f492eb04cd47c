"""Cases for minigrad/ops/scatter.py: scatter, scatter_add, scatter_reduce (every reduce, with
and without x's own elements), index_add.

The reference is one loop over the writes, in C order of the index, that gathers the
values landing on each element and reduces them there by the definition (``np_scatter``):
nothing of the op's vectorized bookkeeping. Indices repeat on purpose; values come from
this module's own generator, spread apart, so amax/amin have no ties within a finite
difference's step (ties: ops/test_scatter.py and the torch table below).
"""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import add_case, torch_table

_rng = np.random.default_rng(3636)
rn = partial(helpers.rn, _rng)
spread = partial(helpers.spread, _rng)  # normals no two within 1e-3


def _groups(x, axis, index, src):
    """element of x -> the values written to it, in C order of the index."""
    groups: dict = {}
    for pos in np.ndindex(index.shape):
        target = list(pos)
        target[axis % x.ndim] = index[pos]
        groups.setdefault(tuple(target), []).append(src[pos] if np.ndim(src) else src)
    return groups


def np_scatter(x, axis, index, src, reduce=None, include_self=True):
    """out = x with each element's writes reduced into it (``reduce=None``: the last one)."""
    out = x.astype(np.result_type(x, src))
    combine = {"sum": sum, "prod": np.prod, "mean": np.mean, "amax": max, "amin": min}
    for target, values in _groups(x, axis, index, src).items():
        if reduce is None:
            out[target] = values[-1]
        else:
            members = ([x[target]] if include_self else []) + values
            out[target] = combine[reduce](members)
    return out


def np_index_add(x, axis, index, source, alpha=1.0):
    out = x.copy()
    for i, j in enumerate(index):
        dest = [slice(None)] * x.ndim
        dest[axis % x.ndim] = j
        src = [slice(None)] * x.ndim
        src[axis % x.ndim] = i
        out[tuple(dest)] += alpha * source[tuple(src)]
    return out


_rows = np.array([[0, 2, 2], [3, 0, 2]])  # (2, 3) along axis 0 of a (4, 3): repeats
_cols = np.array([[1, 1, 3], [0, 2, 0], [3, 3, 3]])  # (3, 3) along axis 1 of a (3, 4)
_cube = np.array([[[2], [0]], [[1], [1]]])  # (2, 2, 1) along axis -1 of a (2, 3, 3)
SHAPES = [("rows", (4, 3), _rows, (2, 3), 0), ("cols", (3, 4), _cols, (3, 3), 1),
          ("src-larger", (3, 4), _cols[:2, :2], (3, 4), -1), ("3d", (2, 3, 3), _cube, (2, 2, 2), -1),
          ("1d", (5,), np.array([4, 0, 4, 4]), (4,), 0)]

def pair(x_shape, src_shape):
    """x and src from one spread draw: no value of one ties with a value of the other."""
    n = int(np.prod(x_shape))
    both = spread(n + int(np.prod(src_shape)))
    return both[:n].reshape(x_shape), both[n:].reshape(src_shape)


for label, xs, idx, ss, axis in SHAPES:
    add_case("scatter_add", label, lambda x, s, i=idx, ax=axis: F.scatter_add(x, ax, i, s),
             lambda x, s, i=idx, ax=axis: np_scatter(x, ax, i, s, "sum"), rn(*xs), rn(*ss))
    add_case("scatter", label, lambda x, s, i=idx, ax=axis: F.scatter(x, ax, i, s),
             lambda x, s, i=idx, ax=axis: np_scatter(x, ax, i, s), rn(*xs), rn(*ss))
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            add_case("scatter_reduce", f"{label}-{reduce}-include_self={inc}",
                     lambda x, s, i=idx, ax=axis, r=reduce, inc=inc:
                     F.scatter_reduce(x, ax, i, s, r, include_self=inc),
                     lambda x, s, i=idx, ax=axis, r=reduce, inc=inc:
                     np_scatter(x, ax, i, s, r, inc), *pair(xs, ss))
# prod with zeros: one zero in a group, two in a group, a zero in x (prod is linear in each
# input, so the finite differences are exact there too)
_x0, _s0 = rn(3, 4), rn(3, 3)
_x0[0, 1], _s0[0, 1], _s0[2, 0], _s0[2, 2] = 0.0, 0.0, 0.0, 0.0
for inc in (True, False):
    add_case("scatter_reduce", f"prod-zeros-include_self={inc}",
             lambda x, s, inc=inc: F.scatter_reduce(x, 1, _cols, s, "prod", include_self=inc),
             lambda x, s, inc=inc: np_scatter(x, 1, _cols, s, "prod", inc), _x0, _s0)
for reduce in ("add", "multiply"):
    add_case("scatter", f"reduce={reduce}",
             lambda x, s, r=reduce: F.scatter(x, 1, _cols, s, reduce=r),
             lambda x, s, r=reduce: np_scatter(x, 1, _cols, s, {"add": "sum"}.get(r, "prod")),
             rn(3, 4), rn(3, 3))
add_case("scatter", "value", lambda x: F.scatter(x, 0, _rows, 0.5),
         lambda x: np_scatter(x, 0, _rows, 0.5), rn(4, 3))

_picks = np.array([2, 0, 2, 3, 2])
for axis, xs, alpha in [(0, (4, 3), 1.0), (1, (2, 4), 2.5), (-1, (2, 3, 4), -0.5)]:
    ss = list(xs)
    ss[axis] = _picks.size
    add_case("index_add", f"axis={axis}-alpha={alpha}",
             lambda x, s, ax=axis, a=alpha: F.index_add(x, ax, _picks, s, alpha=a),
             lambda x, s, ax=axis, a=alpha: np_index_add(x, ax, _picks, s, a), rn(*xs), rn(*ss))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: every reduce of scatter_reduce with include_self both ways,
    scatter_add, index_add, scatter with unique targets (with repeated ones torch's result
    is undefined) and with reduce (torch has no gradient for it: the reference is
    scatter_reduce's "sum"/"prod", which it stands for). torch's backward needs src of the
    index's shape; ties of amax/amin with include_self=True (torch shares them evenly, as
    minigrad; with include_self=False torch counts an x equal to the result among the winners:
    ops/test_scatter.py)."""
    rng = np.random.default_rng(3637)

    def case(*args):  # float64 and float32, tolerances from the dtype
        add(*args, dtypes=(np.float64, np.float32))

    rn = partial(helpers.rn, rng)

    def ti(a):
        return torch.as_tensor(a)

    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            case("scatter_reduce", f"{reduce}-include_self={inc}",
                 lambda x, s, r=reduce, inc=inc: F.scatter_reduce(x, 1, _cols, s, r,
                                                                  include_self=inc),
                 lambda x, s, r=reduce, inc=inc: torch.scatter_reduce(x, 1, ti(_cols), s, r,
                                                                      include_self=inc),
                 rn(3, 4), rn(3, 3))
    # ties: x and two writes share the maximum of element (0, 1)
    x_t, s_t = rn(3, 4), rn(3, 3)
    x_t[0, 1] = s_t[0, 0] = s_t[0, 1] = 3.0
    x_t[2, 3] = s_t[2, 2] = -3.0
    for reduce in ("amax", "amin"):
        case("scatter_reduce", f"{reduce}-ties",
             lambda x, s, r=reduce: F.scatter_reduce(x, 1, _cols, s, r),
             lambda x, s, r=reduce: torch.scatter_reduce(x, 1, ti(_cols), s, r), x_t, s_t)
    x_z, s_z = rn(3, 4), rn(3, 3)
    x_z[0, 1], s_z[0, 1], s_z[2, 0], s_z[2, 2] = 0.0, 0.0, 0.0, 0.0
    for inc in (True, False):
        case("scatter_reduce", f"prod-zeros-include_self={inc}",
             lambda x, s, inc=inc: F.scatter_reduce(x, 1, _cols, s, "prod", include_self=inc),
             lambda x, s, inc=inc: torch.scatter_reduce(x, 1, ti(_cols), s, "prod",
                                                        include_self=inc), x_z, s_z)
    case("scatter_add", "repeats", lambda x, s: F.scatter_add(x, 0, _rows, s),
         lambda x, s: torch.scatter_add(x, 0, ti(_rows), s), rn(4, 3), rn(2, 3))
    case("scatter_add", "3d", lambda x, s: F.scatter_add(x, -1, _cube, s),
         lambda x, s: torch.scatter_add(x, -1, ti(_cube), s), rn(2, 3, 3), rn(2, 2, 1))
    unique = np.array([[2, 0], [1, 3], [0, 1]])
    case("scatter", "unique", lambda x, s: F.scatter(x, 1, unique, s),
         lambda x, s: torch.scatter(x, 1, ti(unique), s), rn(3, 4), rn(3, 2))
    case("scatter", "value", lambda x: F.scatter(x, 1, unique, -2.0),
         lambda x: torch.scatter(x, 1, ti(unique), -2.0), rn(3, 4))
    for reduce, theirs in (("add", "sum"), ("multiply", "prod")):
        case("scatter", f"reduce={reduce}",
             lambda x, s, r=reduce: F.scatter(x, 1, _cols, s, reduce=r),
             lambda x, s, t=theirs: torch.scatter_reduce(x, 1, ti(_cols), s, t), rn(3, 4),
             rn(3, 3))
    for axis, xs, alpha in [(0, (4, 3), 1.0), (-1, (2, 3, 4), 2.5)]:
        ss = list(xs)
        ss[axis] = _picks.size
        case("index_add", f"axis={axis}-alpha={alpha}",
             lambda x, s, ax=axis, a=alpha: F.index_add(x, ax, _picks, s, alpha=a),
             lambda x, s, ax=axis, a=alpha: torch.index_add(x, ax, ti(_picks), s, alpha=a),
             rn(*xs), rn(*ss))
