"""Cases for minigrad/ops/contract.py: einsum's grammar (explicit and implicit output, '...',
repeated labels, a label summed out of one operand only, broadcasting), tensordot's axes
forms, outer, inner. References avoid np.einsum where a plainer NumPy spelling exists."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import _sid, add_case, torch_table

_rng = np.random.default_rng(1401)  # this family's own inputs (see base.py)
rn = partial(helpers.rn, _rng)


# (subscripts, reference, shapes)
EINSUM = [
    ("ij,jk->ik", lambda a, b: a @ b, [(3, 4), (4, 5)]),
    ("ij,jk", lambda a, b: a @ b, [(2, 3), (3, 4)]),  # implicit output
    ("ba", lambda a: a.T, [(2, 3)]),  # implicit: labels in ASCII order, so a transpose
    ("aB", lambda a: a.T, [(2, 3)]),  # upper case sorts first
    ("ii->i", np.diagonal, [(4, 4)]),
    ("ii", np.trace, [(3, 3)]),
    ("iij->ji", lambda a: np.diagonal(a, axis1=0, axis2=1), [(3, 3, 2)]),
    ("ij->", np.sum, [(3, 4)]),
    ("ij,j->j", lambda a, b: a.sum(axis=0) * b, [(3, 4), (4,)]),  # i: in one operand only
    ("ij,kl->jk", lambda a, b: np.outer(a.sum(0), b.sum(1)), [(2, 3), (4, 5)]),
    ("i,i", lambda a, b: np.sum(a * b), [(5,), (5,)]),
    ("ij,ij->i", lambda a, b: np.sum(a * b, axis=1), [(3, 4), (3, 4)]),
    ("ij,ij->ij", lambda a, b: a * b, [(3, 1), (3, 4)]),  # a size-1 label broadcast
    ("...ij,...jk->...ik", np.matmul, [(2, 3, 4), (4, 5)]),  # '...' broadcast, ranks differ
    ("...i,...i", lambda a, b: np.sum(a * b, axis=-1), [(2, 1, 3), (4, 3)]),
    ("i...->...", lambda a: np.sum(a, axis=0), [(3, 2, 2)]),
    ("bij,bjk,bkl->bil", lambda a, b, c: a @ b @ c, [(2, 3, 4), (2, 4, 2), (2, 2, 3)]),
    (" ij , jk -> ki ", lambda a, b: (a @ b).T, [(2, 3), (3, 2)]),  # spaces are ignored
    ("ii,i->", lambda a, b: np.diagonal(a) @ b, [(3, 3), (3,)]),
    (",ij->ij", lambda s, a: s * a, [(), (2, 3)]),  # a 0-d operand
]
for sub, ref, shapes in EINSUM:
    add_case("einsum", f"{sub.replace(' ', '')}-{_sid(*shapes)}",
             lambda *xs, sub=sub: F.einsum(sub, *xs), ref, *[rn(*s) for s in shapes])
add_case("einsum", "optimize-chain", lambda a, b, c: F.einsum("ij,jk,kl->il", a, b, c,
                                                              optimize=True),
         lambda a, b, c: a @ b @ c, rn(3, 4), rn(4, 5), rn(5, 2))

for axes, sa, sb in [(2, (3, 4, 5), (4, 5, 2)), (1, (3, 4), (4, 2)), (0, (3,), (2, 2)),
                     (([1, 0], [0, 2]), (3, 4, 2), (4, 5, 3)), ((2, 0), (2, 3, 4), (4, 5)),
                     (([-1], [-2]), (2, 3), (4, 3, 2))]:
    def _ref(a, b, axes=axes):
        if isinstance(axes, int):
            return np.tensordot(a, b, axes)
        ia, ib = ([axes[0]], [axes[1]]) if isinstance(axes[0], int) else axes
        ia = [i % a.ndim for i in ia]
        ib = [i % b.ndim for i in ib]
        fa = [i for i in range(a.ndim) if i not in ia]
        fb = [i for i in range(b.ndim) if i not in ib]
        at = np.transpose(a, fa + ia).reshape(int(np.prod([a.shape[i] for i in fa])), -1)
        bt = np.transpose(b, ib + fb).reshape(at.shape[1], -1)
        return (at @ bt).reshape([a.shape[i] for i in fa] + [b.shape[i] for i in fb])
    add_case("tensordot", f"axes={axes}-{_sid(sa, sb)}",
             lambda a, b, axes=axes: F.tensordot(a, b, axes=axes), _ref, rn(*sa), rn(*sb))

for sa, sb in [((3,), (4,)), ((2, 3), (2,)), ((), (3,))]:
    add_case("outer", _sid(sa, sb), F.outer,
             lambda a, b: a.reshape(-1, 1) * b.reshape(1, -1), rn(*sa), rn(*sb))

for sa, sb in [((4,), (4,)), ((3, 4), (5, 4)), ((2, 3, 4), (4,)), ((), (2, 3))]:
    add_case("inner", _sid(sa, sb), F.inner,
             lambda a, b: (a * b if a.ndim == 0 or b.ndim == 0 else
                           (a.reshape(-1, a.shape[-1]) @ b.reshape(-1, b.shape[-1]).T)
                           .reshape(a.shape[:-1] + b.shape[:-1])), rn(*sa), rn(*sb))

# a labelled axis of size 1 in one operand and n in another (NumPy broadcasts it): the first
# operand's gradient is summed back to 1, the second's spread out to n (own generator, so the
# cases above keep their inputs)
_gen = np.random.default_rng(1408)
for sub, ref, shapes in [
    ("ij,ij->i", lambda a, b: np.sum(a * b, axis=1), [(3, 1), (3, 5)]),
    ("ijk,ijk->ij", lambda a, b: np.sum(a * b, axis=-1), [(3, 4, 5), (3, 4, 1)]),
    ("ij,jk->ik", lambda a, b: a.sum(axis=1, keepdims=True) * b.sum(axis=0), [(3, 1), (4, 5)]),
    ("i,i->", lambda a, b: np.sum(a * b), [(1,), (4,)]),
]:
    add_case("einsum", f"size-1-label-{sub}-{_sid(*shapes)}",
             lambda *xs, sub=sub: F.einsum(sub, *xs), ref,
             *[np.asarray(_gen.standard_normal(s)) for s in shapes])


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: torch.einsum, tensordot, outer (of the flattened inputs, as
    np.outer), inner."""
    rng = np.random.default_rng(1405)

    case = add  # float64

    rn = partial(helpers.rn, rng)

    for sub, shapes in [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(2, 3), (3, 4)]),
                        ("ii->i", [(4, 4)]), ("ii", [(3, 3)]), ("ij,j->j", [(3, 4), (4,)]),
                        ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("ba", [(2, 3)]),
                        ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 2), (2, 2, 3)]),
                        ("ij,ij->ij", [(3, 1), (3, 4)])]:
        case("einsum", sub, lambda *xs, s=sub: F.einsum(s, *xs),
             lambda *xs, s=sub: torch.einsum(s, *xs), *[rn(*s) for s in shapes])
    case("tensordot", "int", lambda a, b: F.tensordot(a, b, 2),
         lambda a, b: torch.tensordot(a, b, 2),
         rn(3, 4, 5), rn(4, 5, 2))
    case("tensordot", "pairs", lambda a, b: F.tensordot(a, b, ([1, 0], [0, 2])),
         lambda a, b: torch.tensordot(a, b, ([1, 0], [0, 2])), rn(3, 4, 2), rn(4, 5, 3))
    case("outer", "2d@1d", F.outer, lambda a, b: torch.outer(a.reshape(-1), b.reshape(-1)),
         rn(2, 3), rn(4))
    case("inner", "3x4@5x4", F.inner, torch.inner, rn(3, 4), rn(5, 4))
    case("inner", "1d", F.inner, torch.inner, rn(4), rn(4))
    for sub, shapes in [("ij,ij->i", [(3, 1), (3, 5)]), ("ijk,ijk->ij", [(3, 4, 5), (3, 4, 1)]),
                        ("ij,jk->ik", [(3, 1), (4, 5)])]:  # torch broadcasts size 1 too
        case("einsum", f"size-1-label-{sub}", lambda *xs, s=sub: F.einsum(s, *xs),
             lambda *xs, s=sub: torch.einsum(s, *xs), *[rn(*s) for s in shapes])
