"""Cases for minigrad/ops/elementwise.py: arithmetic with broadcasting, unary functions, where, clip, astype."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np
import scipy.special as sp

import minigrad as mg
from minigrad import F

from .base import _rng, _sid, add_case, away, pos, rn, separated, torch_table

# ---- elementwise, binary, with broadcasting and rank promotion -----------------------------
BCAST = [((3, 4), (3, 4)), ((3, 1, 4), (5, 4)), ((), (2, 3)), ((2, 3), ()), ((4,), (3, 1)),
         ((2, 1, 3), (1, 4, 1))]
for sa, sb in BCAST:
    sid = _sid(sa, sb)
    add_case("add", sid, F.add, np.add, rn(*sa), rn(*sb))
    add_case("sub", sid, F.sub, np.subtract, rn(*sa), rn(*sb))
    add_case("mul", sid, F.mul, np.multiply, rn(*sa), rn(*sb))
    add_case("div", sid, F.div, np.divide, rn(*sa), away(sb, 0.5))
    add_case("maximum", sid, F.maximum, np.maximum, *separated(sa, sb))
    add_case("minimum", sid, F.minimum, np.minimum, *separated(sa, sb))
    add_case("pow", "tensor-exp-" + sid, F.pow, np.power, pos(*sa), rn(*sb))
_C34 = rn(3, 4)
add_case("add", "const-array", lambda a: F.add(a, _C34), lambda a: a + _C34, rn(2, 3, 4),
         keeps_dtype=False)
add_case("add", "python-scalar", lambda a: 2.5 + a, lambda a: 2.5 + a, rn(3))
add_case("sub", "rsub-scalar", lambda a: 1.5 - a, lambda a: 1.5 - a, rn(2, 3))
add_case("mul", "self", lambda a: a * a, lambda a: a * a, rn(3, 2))
add_case("div", "rdiv-scalar", lambda a: 2.0 / a, lambda a: 2.0 / a, away((2, 3), 0.5))
add_case("maximum", "vs-const", lambda a: F.maximum(a, 0.3), lambda a: np.maximum(a, 0.3),
         0.3 + away((2, 5), 0.05))
add_case("minimum", "const-first", lambda a: F.minimum(_C34, a), lambda a: np.minimum(_C34, a),
         _C34 + away((2, 1, 4), 0.05), keeps_dtype=False)
for e in (2, 3, 2.0, 0.5, -1.5, 0, 1):
    add_case("pow", f"scalar-exp-{e!r}", lambda a, e=e: a ** e, lambda a, e=e: a ** e, pos(2, 3))
add_case("pow", "square-negative-base", lambda a: F.pow(a, 2), lambda a: a ** 2, rn(3, 3))
add_case("pow", "int-exp-negative-base", lambda a: a ** 3, lambda a: a ** 3, rn(4))
add_case("pow", "scalar-base", lambda b: 2.0 ** b, lambda b: 2.0 ** b, rn(2, 3))
add_case("pow", "const-array-exp", lambda a: F.pow(a, _C34), lambda a: a ** _C34, pos(2, 1, 4),
         keeps_dtype=False)

# ---- elementwise, unary ----------------------------------------------------------------------
UNARY_SHAPES = [(), (5,), (2, 3, 4)]
for s in UNARY_SHAPES:
    sid = _sid(s)
    add_case("neg", sid, F.neg, np.negative, rn(*s))
    add_case("exp", sid, F.exp, np.exp, rn(*s))
    add_case("log", sid, F.log, np.log, pos(*s))
    add_case("sqrt", sid, F.sqrt, np.sqrt, pos(*s))
    add_case("tanh", sid, F.tanh, np.tanh, rn(*s))
    add_case("abs", sid, F.abs, np.abs, away(s))
    add_case("sigmoid", sid, F.sigmoid, sp.expit, rn(*s) * 3)
    add_case("relu", sid, F.relu, lambda a: np.maximum(a, 0.0), away(s))
add_case("sigmoid", "large", F.sigmoid, sp.expit, np.array([-40.0, -12.0, 0.3, 15.0, 40.0]))
add_case("tanh", "large", F.tanh, np.tanh, np.array([-8.0, -3.0, 0.1, 4.0]))

# ---- where, clip, astype ---------------------------------------------------------------------
WHERE = [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), (4,)), ((2, 1, 3), (3,), (4, 1)),
         ((4,), (), (2, 1))]
for sc, sa, sb in WHERE:
    add_case("where", _sid(sc, sa, sb), F.where, np.where, _rng.random(sc) > 0.5, rn(*sa), rn(*sb))
_mask = _rng.random((3, 4)) > 0.5
add_case("where", "tensor-cond", lambda a, b: F.where(mg.Tensor(_mask), a, b),
         lambda a, b: np.where(_mask, a, b), rn(3, 4), rn(4))
add_case("where", "scalar-branch", lambda a: F.where(_mask, a, 0.0),
         lambda a: np.where(_mask, a, 0.0), rn(3, 4))

_clip_x = away((3, 4), 0.05)  # |x| >= 0.05 and |x - 0.5| checked below: no element at a bound
_clip_x[np.abs(_clip_x - 0.5) < 0.05] += 0.2
_lo, _hi = np.array([-0.5, 0.0, -1.0, 0.25]), np.array([[0.5], [1.5], [0.5]])
for label, lo, hi in [("both", -0.5, 0.5), ("min-only", 0.0, None), ("max-only", None, 0.5),
                      ("array-bounds", _lo, _hi)]:
    x = _clip_x.copy()
    for bound in (lo, hi):
        if bound is not None:  # keep every element >= 0.02 from its bound
            b = np.broadcast_to(bound, x.shape)
            x = np.where(np.abs(x - b) < 0.02, x + 0.05, x)
    add_case("clip", label, lambda a, lo=lo, hi=hi: F.clip(a, lo, hi),
             lambda a, lo=lo, hi=hi: np.clip(a, lo, hi), x, keeps_dtype=np.ndim(lo) == 0)
_wide_lo = np.array([[-0.3], [0.1]])[:, :, None] * np.ones((2, 1, 4))  # (2, 1, 4) > x's rank
add_case("clip", "bounds-broadcast-beyond-input", lambda a: F.clip(a, _wide_lo, 0.9),
         lambda a: np.clip(a, _wide_lo, 0.9), np.array([[-0.8, -0.1, 0.3, 1.4],
                                                       [0.5, -0.5, 2.0, 0.0],
                                                       [-2.0, 0.7, 0.2, -0.05]]),
         keeps_dtype=False)
add_case("astype", "f64-to-f64", lambda a: F.astype(a, np.float64), lambda a: a, rn(2, 3),
         keeps_dtype=False)
add_case("astype", "f64-to-f32-roundtrip", lambda a: F.astype(F.astype(a, np.float32), np.float64),
         lambda a: a.astype(np.float32).astype(np.float64), rn(2, 3),
         gc=dict(eps=1e-2, atol=1e-4, rtol=1e-3), keeps_dtype=False)


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: the elementwise ops."""
    rng = np.random.default_rng(99)

    case = add  # float64

    rn = partial(helpers.rn, rng)

    pos = partial(helpers.uniform, rng, 0.5, 2.0)

    def _ti(a):  # an index / label array as a torch tensor
        return torch.as_tensor(a)

    for name, tname in [("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "div"),
                        ("maximum", "maximum"), ("minimum", "minimum")]:
        f, tf = getattr(F, name), getattr(torch, tname)
        case(name, "bcast", f, tf, rn(3, 1, 4), rn(5, 4) + (3.0 if name == "div" else 0.0))
        case(name, "0d", f, tf, rn(), rn(2, 3) + (3.0 if name == "div" else 0.0))
    _tie_a, _tie_b = np.array([1.0, 2.0, 3.0, -1.0, 0.5]), np.array([1.0, 0.0, 5.0, -1.0, 0.5])
    case("maximum", "ties", F.maximum, torch.maximum, _tie_a, _tie_b)
    case("minimum", "ties", F.minimum, torch.minimum, _tie_a, _tie_b)
    case("pow", "tensor-exp", F.pow, torch.pow, pos(3, 1), rn(4))
    case("pow", "zero-base", F.pow, torch.pow, np.array([0.0, 0.0, 0.0, 1.5]),
         np.array([0.0, 1.0, 2.5, 0.0]))
    case("pow", "zero-exp", lambda a: a ** 0, lambda a: a ** 0, np.array([0.0, -1.0, 2.0]))
    case("pow", "scalar-exp", lambda a: a ** 3, lambda a: a ** 3, rn(2, 3))
    case("pow", "half-exp", lambda a: a ** 0.5, lambda a: a ** 0.5, pos(2, 3))
    case("pow", "scalar-base", lambda b: 2.0 ** b, lambda b: 2.0 ** b, rn(4))
    for name in ("neg", "exp", "tanh", "sigmoid"):
        case(name, "3d", getattr(F, name), getattr(torch, name), rn(2, 3, 4) * 3)
    case("log", "pos", F.log, torch.log, pos(3, 4))
    case("sqrt", "pos", F.sqrt, torch.sqrt, pos(3, 4))
    _kinks = np.array([-1.5, -0.0, 0.0, 0.7, 2.0])
    case("abs", "with-zero", F.abs, torch.abs, np.concatenate([rn(6), _kinks]))
    case("relu", "with-zero", F.relu, torch.relu, np.concatenate([rn(6), _kinks]))
    case("sigmoid", "large", F.sigmoid, torch.sigmoid, np.array([-50.0, -20.0, 0.0, 20.0, 50.0]))
    _cond = rng.random((3, 4)) > 0.5
    case("where", "bcast", lambda a, b: F.where(_cond, a, b),
         lambda a, b: torch.where(_ti(_cond), a, b), rn(1, 4), rn(3, 1))


    def _next_to(*bounds):
        """Each bound's two floating-point neighbours: the closest points off the bound."""
        return [np.nextafter(b, s) for b in bounds for s in (-np.inf, np.inf)]


    # Exactly at a clip bound torch's gradient depends on its version (2.13: 1; 2.14.1: 0 for
    # number bounds, 1/2 for tensor bounds), so torch is compared off the bounds only, where every
    # version agrees, up to the bounds' floating-point neighbours. minigrad's own rule at the
    # bounds is tested with hand-derived values in ops/test_elementwise.py (docs/backward.md §13).
    _cx = np.array([-2.0, 0.0, 0.3, 1.7, *_next_to(-0.5, 1.0, 0.0, 0.3)])
    case("clip", "both", lambda a: F.clip(a, -0.5, 1.0), lambda a: torch.clamp(a, -0.5, 1.0), _cx)
    case("clip", "min-only", lambda a: F.clip(a, 0.0), lambda a: torch.clamp(a, min=0.0),
         _cx[_cx != 0.0])
    case("clip", "max-only", lambda a: F.clip(a, None, 0.3), lambda a: torch.clamp(a, max=0.3),
         _cx[_cx != 0.3])
    case("clip", "equal-bounds", lambda a: F.clip(a, 0.3, 0.3), lambda a: torch.clamp(a, 0.3, 0.3),
         _cx[_cx != 0.3])
    case("clip", "crossed-bounds", lambda a: F.clip(a, 1.0, -0.5),  # all a_max, as np.clip
         lambda a: torch.clamp(a, 1.0, -0.5), _cx)
    case("astype", "f64", lambda a: F.astype(a, np.float64), lambda a: a.to(torch.float64),
         rn(3, 2))
    case("astype", "f32-f64", lambda a: F.astype(F.astype(a, np.float32), np.float64),
         lambda a: a.to(torch.float32).to(torch.float64), rn(3, 2))
