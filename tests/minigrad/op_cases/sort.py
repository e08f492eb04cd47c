"""Cases for minigrad/ops/sort.py: sort and topk along every axis form, both directions;
median (the lower one) and quantile (linear), with their own references by sorting.

The references are written from the definitions: an ascending sort is np.sort, a
descending one the ascending sort of -x (exact in floating point, and free of the
implementation's reversal), topk the slice of that. Inputs come from this module's own
generator, spread apart (no ties within a finite difference's step); ties are checked
against hand-derived gradients in ops/test_sort.py and against torch below.
"""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import _sid, add_case, torch_table

_rng = np.random.default_rng(3535)
rn = partial(helpers.rn, _rng)
spread = partial(helpers.spread, _rng)  # normals no two within 1e-3


def np_sort_desc(a, axis):
    return -np.sort(-a, axis=axis)


for shape, axis in [((5,), -1), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((2, 3), None),
                    ((), -1)]:
    for desc in (False, True):
        ref = (lambda a, ax=axis: np_sort_desc(a, ax)) if desc else \
            (lambda a, ax=axis: np.sort(a, axis=ax))
        if shape == ():  # one element: itself (np.sort has no axis on a 0-d array)
            ref = np.copy
        add_case("sort", f"{_sid(shape)}-axis={axis}-desc={desc}",
                 lambda a, ax=axis, d=desc: F.sort(a, axis=ax, descending=d), ref,
                 spread(*shape))


def np_topk(a, k, axis, largest):
    """The k largest (smallest) along axis, largest (smallest) first, by sorting."""
    s = np_sort_desc(a, axis) if largest else np.sort(a, axis=axis)
    return np.take(s, np.arange(k), axis=axis)


for shape, k, axis, largest in [((6,), 3, -1, True), ((3, 5), 2, 1, False), ((4, 3), 4, 0, True),
                                ((2, 3, 4), 1, -2, True), ((2, 5), 0, 1, True),
                                ((2, 4), 4, -1, False)]:
    add_case("topk", f"{_sid(shape)}-k{k}-axis={axis}-largest={largest}",
             lambda a, k=k, ax=axis, lg=largest: F.topk(a, k, axis=ax, largest=lg).values,
             lambda a, k=k, ax=axis, lg=largest: np_topk(a, k, ax, lg), spread(*shape))
# sorted=False: the chosen values in the order of their positions
add_case("topk", "unsorted", lambda a: F.topk(a, 3, sorted=False).values,
         lambda a: np.take_along_axis(a, np.sort(np.argsort(-a, axis=-1)[:, :3], axis=-1), -1),
         spread(2, 7))



def np_lower_median(a, axis):
    """The element of rank (n - 1) // 2 by sorting (the lower of the two middle ones)."""
    if axis is None:
        a, axis = a.reshape(-1), 0
    n = a.shape[axis]
    return np.take(np.sort(a, axis=axis), (n - 1) // 2, axis=axis)


for shape, axis, kd in [((7,), None, False), ((4, 6), 1, False), ((4, 6), 0, True),
                        ((2, 3, 4), None, True), ((2, 3, 4), -2, False), ((), None, False)]:
    add_case("median", f"{_sid(shape)}-axis={axis}-keepdims={kd}",
             lambda a, ax=axis, kd=kd: F.median(a, axis=ax, keepdims=kd),
             lambda a, ax=axis, kd=kd, s=shape: np.reshape(
                 np_lower_median(a, ax), np.median(np.zeros(s), axis=ax, keepdims=kd).shape),
             spread(*shape))


def np_quantile_linear(a, q, axis):
    """(1 - f)·s_j + f·s_(j+1) by its definition, q's axis first (no keepdims)."""
    if axis is None:
        a, axis = a.reshape(-1), 0
    s = np.moveaxis(np.sort(a, axis=axis), axis, -1)
    n = s.shape[-1]
    out = []
    for qi in np.atleast_1d(q):
        h = (n - 1) * qi
        j = int(np.floor(h))
        f = h - j
        out.append((1 - f) * s[..., j] + f * s[..., min(j + 1, n - 1)])
    return out[0] if np.ndim(q) == 0 else np.stack(out)


for shape, q, axis in [((9,), 0.3, None), ((4, 6), np.array([0.0, 0.25, 0.5, 1.0]), 1),
                       ((5, 3), 0.9, 0), ((2, 3, 4), np.array([0.1, 0.75]), None),
                       ((2, 5, 3), 0.5, -2), ((6,), np.array([0.2, 0.2]), 0)]:
    add_case("quantile", f"{_sid(shape)}-q={np.round(q, 2).tolist()}-axis={axis}",
             lambda a, q=q, ax=axis: F.quantile(a, q, axis=ax),
             lambda a, q=q, ax=axis: np_quantile_linear(a, q, ax), spread(*shape))
add_case("quantile", "keepdims", lambda a: F.quantile(a, np.array([0.4, 0.6]), 1, keepdims=True),
         lambda a: np_quantile_linear(a, np.array([0.4, 0.6]), 1)[:, :, None], spread(3, 4))

# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: sort = torch.sort(stable=True).values, ties included (both
    stable, so the gradient takes the same permutation); topk = torch.topk away from ties
    (torch picks among tied values by its own selection; ops/test_sort.py)."""
    rng = np.random.default_rng(3536)

    def case(*args):  # float64 and float32, tolerances from the dtype
        add(*args, dtypes=(np.float64, np.float32))

    rn = partial(helpers.rn, rng)
    for axis in (0, -1):
        for desc in (False, True):
            case("sort", f"axis={axis}-desc={desc}",
                 lambda a, ax=axis, d=desc: F.sort(a, axis=ax, descending=d),
                 lambda a, ax=axis, d=desc: torch.sort(a, dim=ax, descending=d,
                                                       stable=True).values, rn(3, 5))
    ties = np.array([[2.0, 1.0, 2.0, 0.5, 1.0, 2.0], [0.0, 0.0, -1.0, 0.0, 3.0, -1.0]])
    for desc in (False, True):
        case("sort", f"ties-desc={desc}", lambda a, d=desc: F.sort(a, descending=d),
             lambda a, d=desc: torch.sort(a, descending=d, stable=True).values, ties)
    case("sort", "0d", F.sort, lambda a: torch.sort(a).values, rn())
    for k, axis, largest in [(2, -1, True), (3, 0, False), (1, 1, True)]:
        case("topk", f"k{k}-axis={axis}-largest={largest}",
             lambda a, k=k, ax=axis, lg=largest: F.topk(a, k, axis=ax, largest=lg).values,
             lambda a, k=k, ax=axis, lg=largest: torch.topk(a, k, dim=ax, largest=lg).values,
             rn(4, 5))
    case("topk", "0d", lambda a: F.topk(a, 1).values, lambda a: torch.topk(a, 1).values, rn())
    for axis in (0, 1):
        case("median", f"axis={axis}", lambda a, ax=axis: F.median(a, axis=ax),
             lambda a, ax=axis: torch.median(a, dim=ax).values, rn(4, 6))
    case("median", "all", F.median, torch.median, rn(3, 5))
    # ties: torch.median(x, dim) gives the gradient to the index it returns, the stable one
    case("median", "ties", lambda a: F.median(a, axis=1),
         lambda a: torch.median(a, dim=1).values,
         np.array([[1.0, 3.0, 3.0, 3.0, 0.0], [3.0, 1.0, 3.0, 0.0, 3.0], [2.0, 2.0, 2.0, 2.0, 2.0]]))
    for q, axis in [(0.3, None), (np.array([0.0, 0.5, 0.9]), 1), (np.array([0.25, 1.0]), 0)]:
        case("quantile", f"q={np.asarray(q).tolist()}-axis={axis}",
             lambda a, q=q, ax=axis: F.quantile(a, q, axis=ax),
             lambda a, q=q, ax=axis: torch.quantile(a, torch.as_tensor(q, dtype=a.dtype),
                                                    dim=ax), rn(4, 6))
