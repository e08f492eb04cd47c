"""Cases for minigrad/ops/shape.py: reshape, transposes, indexing of every kind, joins and splits."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

import minigrad as mg
from minigrad import F

from .base import _rng, _sid, add_case, away, pos, rn, separated, torch_table  # noqa: F401

# ---- shape ops ------------------------------------------------------------------------------
for shape in [(6, 4), (-1,), (4, 1, 6), (2, -1, 3)]:
    add_case("reshape", _sid(shape), lambda a, s=shape: F.reshape(a, s),
             lambda a, s=shape: np.reshape(a, s), rn(2, 3, 4))
add_case("reshape", "0d", lambda a: F.reshape(a, (1, 1)), lambda a: a.reshape(1, 1), rn())
for axes in [None, (1, 0, 2), (2, 0, 1), (-1, 0, -2)]:
    add_case("transpose", f"{axes}", lambda a, ax=axes: F.transpose(a, ax),
             lambda a, ax=axes: np.transpose(a, ax), rn(2, 3, 4))
add_case("transpose", "2d", F.transpose, np.transpose, rn(3, 5))
add_case("permute", "varargs", lambda a: F.permute(a, 2, 0, 1),
         lambda a: np.transpose(a, (2, 0, 1)), rn(2, 3, 4))
add_case("permute", "tuple", lambda a: F.permute(a, (1, 2, 0)),
         lambda a: np.transpose(a, (1, 2, 0)), rn(2, 3, 4))
for a1, a2 in [(0, 2), (-1, 0), (1, 1), (0, 1)]:
    add_case("swapaxes", f"{a1},{a2}", lambda a, a1=a1, a2=a2: F.swapaxes(a, a1, a2),
             lambda a, a1=a1, a2=a2: np.swapaxes(a, a1, a2), rn(2, 3, 4))
for axis in [0, -1, 1, (0, 2)]:
    add_case("expand_dims", f"{axis}", lambda a, ax=axis: F.expand_dims(a, ax),
             lambda a, ax=axis: np.expand_dims(a, ax), rn(3, 4))
for axis in [None, 0, -2, (0, 2)]:
    add_case("squeeze", f"{axis}", lambda a, ax=axis: F.squeeze(a, ax),
             lambda a, ax=axis: np.squeeze(a, ax), rn(1, 3, 1, 4))
for s_in, s_out in [((3, 1), (2, 3, 4)), ((4,), (3, 4)), ((), (2, 2)), ((2, 1, 3), (2, 5, 3))]:
    add_case("broadcast_to", _sid(s_in, s_out), lambda a, s=s_out: F.broadcast_to(a, s),
             lambda a, s=s_out: np.broadcast_to(a, s), rn(*s_in))

_bool = np.array([[True, False, True, True], [False, False, True, False],
                  [True, True, False, True]])
INDICES = {
    "int": 1, "neg-ints": (-1, 2), "slices": (slice(1, None), slice(None, None, 2)),
    "reverse": slice(None, None, -1), "none": (None, 1), "ellipsis": (Ellipsis, 1),
    "ellipsis-none-slice": (Ellipsis, None, slice(1, 3)),
    "int-array-repeats": np.array([0, 0, 2, 0]),
    "2d-int-array-repeats": np.array([[1, 1], [0, 1]]),
    "list-repeats": [2, 2, 1],
    "paired-arrays-repeats": (np.array([0, 0, 1, 0]), np.array([2, 2, 2, 2])),
    "slice-and-array": (slice(None), np.array([3, 3, 0])),
    "bool-mask": _bool, "bool-rows": np.array([True, False, True]),
    "slice-and-bool": (slice(0, 2), np.array([True, False, False, True])),
}
for label, idx in INDICES.items():
    add_case("getitem", label, lambda a, i=idx: a[i], lambda a, i=idx: a[i], rn(3, 4))
add_case("getitem", "tensor-index-repeats", lambda a: a[mg.Tensor(np.array([2, 2, 0]))],
         lambda a: a[np.array([2, 2, 0])], rn(3, 4))
add_case("getitem", "tensor-bool-mask", lambda a: F.getitem(a, mg.Tensor(_bool)),
         lambda a: a[_bool], rn(3, 4))
add_case("getitem", "tuple-with-tensor", lambda a: a[1:, mg.Tensor(np.array([0, 0]))],
         lambda a: a[1:, np.array([0, 0])], rn(3, 4))

_K = rn(2, 2, 4)
for axis, shapes in [(0, [(2, 3, 4), (1, 3, 4), (3, 3, 4)]), (1, [(2, 1, 4), (2, 3, 4), (2, 2, 4)]),
                     (-1, [(2, 3, 1), (2, 3, 2), (2, 3, 3)])]:
    add_case("concatenate", f"axis={axis}", lambda a, b, c, ax=axis: F.concatenate([a, b, c], ax),
             lambda a, b, c, ax=axis: np.concatenate([a, b, c], ax), *[rn(*s) for s in shapes])
add_case("concatenate", "with-constant", lambda a: F.concatenate((_K, a), axis=1),
         lambda a: np.concatenate((_K, a), axis=1), rn(2, 3, 4), keeps_dtype=False)
for axis in [0, 1, 2, -1, -2]:
    add_case("stack", f"axis={axis}", lambda a, b, c, ax=axis: F.stack([a, b, c], ax),
             lambda a, b, c, ax=axis: np.stack([a, b, c], ax), rn(3, 4), rn(3, 4), rn(3, 4))


def _weighted(pieces):
    """Join pieces scaled 1, 2, 3, ...: a gradient sent to the wrong piece shows."""
    return F.concatenate([p * float(i + 1) for i, p in enumerate(pieces)], axis=-1)


for how, axis in [(2, 0), (3, 1), (2, -1), ([1, 3], 2), ([2], -2)]:
    def fn(a, how=how, axis=axis):
        return _weighted([F.reshape(p, (-1,)) for p in F.split(a, how, axis=axis)])

    def ref(a, how=how, axis=axis):
        pieces = np.split(a, how, axis)
        return np.concatenate([p.reshape(-1) * (i + 1) for i, p in enumerate(pieces)])

    add_case("split", f"{how}-axis={axis}", fn, ref, rn(2, 3, 4))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: the shape ops and getitem."""
    rng = np.random.default_rng(9903)

    case = add  # float64

    rn = partial(helpers.rn, rng)

    def _ti(a):  # an index / label array as a torch tensor
        return torch.as_tensor(a)

    case("reshape", "2d", lambda a: F.reshape(a, (6, 4)), lambda a: a.reshape(6, 4), rn(2, 3, 4))
    case("transpose", "none", F.transpose, lambda a: a.permute(2, 1, 0), rn(2, 3, 4))
    case("transpose", "axes", lambda a: F.transpose(a, (1, 2, 0)), lambda a: a.permute(1, 2, 0),
         rn(2, 3, 4))
    case("permute", "varargs", lambda a: F.permute(a, 2, 0, 1), lambda a: a.permute(2, 0, 1),
         rn(2, 3, 4))
    case("swapaxes", "0,-1", lambda a: F.swapaxes(a, 0, -1), lambda a: torch.swapaxes(a, 0, -1),
         rn(2, 3, 4))
    case("expand_dims", "1", lambda a: F.expand_dims(a, 1), lambda a: a.unsqueeze(1), rn(3, 4))
    case("squeeze", "all", F.squeeze, torch.squeeze, rn(1, 3, 1, 4))
    case("squeeze", "dims", lambda a: F.squeeze(a, (0, 2)), lambda a: a.squeeze((0, 2)),
         rn(1, 3, 1, 4))
    case("broadcast_to", "3d", lambda a: F.broadcast_to(a, (2, 3, 4)),
         lambda a: torch.broadcast_to(a, (2, 3, 4)), rn(3, 1))
    _rep = np.array([0, 2, 2, 0, 0])
    _mask = rng.random((3, 4)) > 0.4
    for label, idx in [("slices", (slice(1, None), slice(None, None, 2))), ("int-none", (None, 1)),
                       ("ellipsis", (Ellipsis, 1)), ("repeats", _rep), ("mask", _mask),
                       ("pairs", (_rep[:3], np.array([3, 3, 1]))),
                       ("slice-array", (slice(None), _rep))]:
        tidx = tuple(_ti(i) if isinstance(i, np.ndarray) else i for i in idx) \
            if isinstance(idx, tuple) else _ti(idx)
        case("getitem", label, lambda a, i=idx: a[i], lambda a, i=tidx: a[i], rn(3, 4))
    case("getitem", "tensor-index", lambda a: a[mg.Tensor(_rep)], lambda a: a[_ti(_rep)], rn(3, 4))
    for ax in (0, -1):
        case("concatenate", f"axis={ax}", lambda a, b, ax=ax: F.concatenate([a, b], axis=ax),
             lambda a, b, ax=ax: torch.cat([a, b], dim=ax), rn(2, 3), rn(2, 3))
        case("stack", f"axis={ax}", lambda a, b, ax=ax: F.stack([a, b], axis=ax),
             lambda a, b, ax=ax: torch.stack([a, b], dim=ax), rn(2, 3), rn(2, 3))
    for how, ax in [(3, 1), ([1, 3], -1)]:
        case("split", f"{how}-axis={ax}",
             lambda a, h=how, ax=ax: F.concatenate([p.reshape(-1) * (i + 1.0) for i, p in
                                                    enumerate(F.split(a, h, axis=ax))]),
             lambda a, h=how, ax=ax: torch.cat([p.reshape(-1) * (i + 1.0) for i, p in
                                                enumerate(torch.tensor_split(a, h, dim=ax))]),
             rn(2, 3, 4))
