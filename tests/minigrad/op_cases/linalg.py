"""Cases for minigrad/ops/linalg.py: matmul over every rank combination, linear."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import _rng, _sid, add_case, away, pos, rn, separated, torch_table  # noqa: F401

# ---- matmul ---------------------------------------------------------------------------------
MATMUL = [((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)),
          ((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
          ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 2)), ((4,), (2, 1, 4, 3)),
          ((2, 1, 3, 4), (4,))]
for sa, sb in MATMUL:
    add_case("matmul", _sid(sa, sb), F.matmul, np.matmul, rn(*sa), rn(*sb))
add_case("matmul", "operator", lambda a, b: a @ b, np.matmul, rn(2, 3), rn(3, 2))
add_case("matmul", "same-tensor", lambda a: a @ a, lambda a: a @ a, rn(3, 3))
for sx in [(4,), (3, 4), (2, 3, 4), (2, 1, 3, 4)]:
    add_case("linear", _sid(sx) + "-bias", F.linear, lambda x, w, b: x @ w + b,
             rn(*sx), rn(4, 5), rn(5))
    add_case("linear", _sid(sx), lambda x, w: F.linear(x, w), np.matmul, rn(*sx), rn(4, 5))
add_case("linear", "strided-x", lambda x, w, b: F.linear(x.transpose(1, 0, 2), w, b),
         lambda x, w, b: x.transpose(1, 0, 2) @ w + b, rn(3, 2, 4), rn(4, 5), rn(5))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: matmul and linear."""
    rng = np.random.default_rng(9904)

    case = add  # float64

    rn = partial(helpers.rn, rng)

    for sa, sb in [((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)), ((2, 3, 4), (4,)),
                   ((4,), (2, 4, 3)),
                   ((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
                   ((2, 1, 3, 4), (5, 4, 2))]:
        case("matmul", "x".join(map(str, sa)) + "@" + "x".join(map(str, sb)), F.matmul,
             torch.matmul,
             rn(*sa), rn(*sb))

    for sx in [(4,), (3, 4), (2, 3, 4)]:  # minigrad's weight is (in, out); torch's is (out, in)
        case("linear", "x".join(map(str, sx)), F.linear,
             lambda x, w, b: torch.nn.functional.linear(x, w.T, b), rn(*sx), rn(4, 5), rn(5))
