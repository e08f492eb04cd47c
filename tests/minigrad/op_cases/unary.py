"""Cases for minigrad/ops/unary.py: each function on two or more shapes inside its domain
(kept away from the points where it or its derivative is undefined), the binary ones with
broadcasting and 0-d operands. The piecewise-constant ones get inputs away from their jumps,
where the finite difference of a step is 0 too. References are NumPy/SciPy spellings other
than the op's own where one exists (erf: its Taylor series)."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import _sid, add_case, torch_table

_rng = np.random.default_rng(1402)  # this family's own inputs (see base.py)
rn = partial(helpers.rn, _rng)
uni = partial(helpers.uniform, _rng)


def off_grid(*shape, lo=0.1, hi=0.9, step=1.0):
    """Multiples of ``step`` plus a fraction in [lo, hi) of it: away from every jump."""
    return step * (np.floor(rn(*shape) * 3) + uni(lo, hi, *shape))


def signed(x):
    return np.where(_rng.random(x.shape) < 0.5, -x, x)


SHAPES = [(3, 4), (2, 3, 4), ()]
UNARY = {  # name: (reference, input maker)
    "sin": (lambda a: np.imag(np.exp(1j * a)), rn),
    "cos": (lambda a: np.real(np.exp(1j * a)), rn),
    "tan": (lambda a: np.sin(a) / np.cos(a), lambda *s: uni(-1.2, 1.2, *s)),
    "arcsin": (lambda a: np.arctan2(a, np.sqrt(1 - a * a)), lambda *s: uni(-0.9, 0.9, *s)),
    "arccos": (lambda a: np.pi / 2 - np.arctan2(a, np.sqrt(1 - a * a)),
               lambda *s: uni(-0.9, 0.9, *s)),
    "arctan": (lambda a: np.arcsin(a / np.sqrt(1 + a * a)), lambda *s: 2 * rn(*s)),
    "sinh": (lambda a: (np.exp(a) - np.exp(-a)) / 2, lambda *s: 2 * rn(*s)),
    "cosh": (lambda a: (np.exp(a) + np.exp(-a)) / 2, lambda *s: 2 * rn(*s)),
    "arcsinh": (lambda a: np.sign(a) * np.log(np.abs(a) + np.sqrt(a * a + 1)),
                lambda *s: 3 * rn(*s)),
    "arctanh": (lambda a: 0.5 * np.log((1 + a) / (1 - a)), lambda *s: uni(-0.9, 0.9, *s)),
    "log1p": (lambda a: np.log(1 + a), lambda *s: uni(-0.5, 2.0, *s)),
    "expm1": (lambda a: np.exp(a) - 1, lambda *s: 2 * rn(*s)),
    "log2": (lambda a: np.log(a) / np.log(2), lambda *s: uni(0.3, 4.0, *s)),
    "log10": (lambda a: np.log(a) / np.log(10), lambda *s: uni(0.3, 4.0, *s)),
    "exp2": (lambda a: np.exp(a * np.log(2)), lambda *s: 2 * rn(*s)),
    "square": (lambda a: a * a, rn),
    "reciprocal": (lambda a: 1 / a, lambda *s: signed(uni(0.4, 2.0, *s))),
    "rsqrt": (lambda a: a ** -0.5, lambda *s: uni(0.3, 3.0, *s)),
    "sign": (lambda a: (a > 0) * 1.0 - (a < 0), lambda *s: signed(uni(0.1, 2.0, *s))),
    "floor": (lambda a: a - np.mod(a, 1.0), off_grid),
    "ceil": (lambda a: -np.floor(-a), off_grid),
    "trunc": (lambda a: np.sign(a) * np.floor(np.abs(a)), off_grid),
    # round halves to even: keep off the halves and the integers (jumps only at halves)
    "round": (lambda a: np.floor(a + 0.5), lambda *s: off_grid(*s, lo=0.05, hi=0.45) * 1.0),
}
for name, (ref, make) in UNARY.items():
    for shape in SHAPES:
        add_case(name, _sid(shape), getattr(F, name), ref, make(*shape))
add_case("round", "decimals=1", lambda a: F.round(a, 1), lambda a: np.floor(a * 10 + 0.5) / 10,
         off_grid(3, 4, lo=0.05, hi=0.45, step=0.1))
add_case("round", "decimals=-1", lambda a: F.round(a, decimals=-1),
         lambda a: np.floor(a / 10 + 0.5) * 10, off_grid(3, 4, lo=0.05, hi=0.45, step=10.0))

BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 1), (4,)), ((), (2, 3)), ((2, 1, 4), (3, 1))]
for sa, sb in BINARY_SHAPES:
    a, b = signed(uni(0.3, 2.0, *sa)), signed(uni(0.3, 2.0, *sb))  # off the origin
    add_case("arctan2", _sid(sa, sb), F.arctan2,
             lambda y, x: np.angle(x + 1j * y), a, b)
    add_case("hypot", _sid(sa, sb), F.hypot, lambda x, y: np.sqrt(x * x + y * y),
             signed(uni(0.3, 2.0, *sa)), signed(uni(0.3, 2.0, *sb)))
    add_case("logaddexp", _sid(sa, sb), F.logaddexp,
             lambda x, y: np.maximum(x, y) + np.log1p(np.exp(-np.abs(x - y))),
             3 * rn(*sa), 3 * rn(*sb))


def _quotients(*shape):
    """k + f, k in {-3, 1, 2}, f in [0.1, 0.9): a / b at these stays off the integers, where
    mod jumps (and away from 0, so b = a / q is not huge)."""
    return _rng.choice([-3.0, 1.0, 2.0], shape) + uni(0.1, 0.9, *shape)


for sa, sb in [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 3, 4), (3, 1))]:  # a the larger
    b = signed(uni(0.5, 2.0, *sb))
    add_case("mod", _sid(sa, sb), F.mod, lambda x, y: x - np.floor(x / y) * y,
             b * _quotients(*sa), b)
a = np.asarray(2.7)
add_case("mod", "0d@2x3", F.mod, lambda x, y: x - np.floor(x / y) * y, a,
         a / _quotients(2, 3))  # b the larger
add_case("logaddexp", "large", F.logaddexp,
         lambda x, y: np.maximum(x, y) + np.log1p(np.exp(-np.abs(x - y))),
         np.array([700.0, -700.0, 50.0, 3.0]), np.array([699.0, -702.0, 50.0, -40.0]),
         gc=dict(atol=1e-6))
# a = b: the gradient is σ(0) = ½ each (the engine's ties must not tip it either way)
_equal = np.array([[-2.5, 0.0, 1.25], [3.0, -0.5, 40.0]])
add_case("logaddexp", "equal", F.logaddexp,
         lambda x, y: np.maximum(x, y) + np.log1p(np.exp(-np.abs(x - y))), _equal, _equal.copy())


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: arcsin -> torch.asin (and the other arc- functions),
    arctan2 -> atan2, mod -> remainder (both take the divisor's sign); sign/floor on their
    jumps."""
    rng = np.random.default_rng(14054)

    case = add  # float64

    rn = partial(helpers.rn, rng)

    uni = partial(helpers.uniform, rng)

    _names = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
              "arctanh": "atanh"}
    _domain = {"arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9),
               "log1p": (-0.5, 2.0), "log2": (0.3, 4.0), "log10": (0.3, 4.0), "rsqrt": (0.3, 3.0),
               "reciprocal": (0.4, 2.0), "tan": (-1.2, 1.2)}
    for name in ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
                 "arctanh", "log1p", "expm1", "log2", "log10", "exp2", "square", "reciprocal",
                 "rsqrt"):
        lo, hi = _domain.get(name, (-2.0, 2.0))
        tf = getattr(torch, _names.get(name, name))
        case(name, "3x4", getattr(F, name), tf, uni(lo, hi, 3, 4))
        case(name, "0d", getattr(F, name), tf, uni(lo, hi))
    _jumps = np.array([-2.0, -1.5, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 2.5, 0.3, -0.7])  # on the jumps
    for name in ("sign", "floor", "ceil", "round", "trunc"):
        case(name, "at-jumps", getattr(F, name), getattr(torch, name), _jumps)
        case(name, "3x4", getattr(F, name), getattr(torch, name), 3 * rn(3, 4))
    case("round", "decimals=1", lambda a: F.round(a, 1), lambda a: torch.round(a, decimals=1),
         3 * rn(3, 4))
    for name, tname in [("arctan2", "atan2"), ("hypot", "hypot"), ("logaddexp", "logaddexp")]:
        case(name, "bcast", getattr(F, name), getattr(torch, tname), rn(3, 1, 4), rn(5, 4))
        case(name, "0d", getattr(F, name), getattr(torch, tname), rn(), rn(2, 3))
    case("arctan2", "origin", F.arctan2, torch.atan2, np.array([0.0, 1.0]), np.array([0.0, -1.0]))
    # equal and one-ulp-apart inputs past 2^24 (float32) and 2^53 (float64), where ln(e^a + e^b)
    # rounds to a or a + ulp: the gradient is σ(a - b) all the same
    case("logaddexp", "large", F.logaddexp, torch.logaddexp,
         np.array([1e20, -1e20, 1e7, -1e7, 1e18, 1e7]),
         np.array([1e20, -1e20, 1e7 + 1, -1e7, 1e18, 1e7 - 2]), dtypes=(np.float64, np.float32))
    _b = np.where(rng.random(4) < 0.5, -1.0, 1.0) * uni(0.5, 2.0, 4)
    case("mod", "bcast", F.mod, torch.remainder, _b * (rng.choice([-3.0, 1.0, 2.0], (3, 4))
                                                      + uni(0.1, 0.9, 3, 4)), _b)
    case("mod", "0d", F.mod, torch.remainder, np.asarray(2.7), np.array([[1.1, -0.8], [2.0, -1.3]]))


# ---- erf, erfc (docs/backward.md §40) --------------------------------------------------
def _erf_series(a):
    """erf by its Taylor series (2/√π) Σ (-1)^n a^(2n+1) / (n! (2n+1)): exact to rounding for
    |a| < 3 in 80 terms, and no SciPy (the op's own spelling)."""
    total, term = np.zeros_like(a), a.copy()
    for n in range(80):
        total = total + term / (2 * n + 1)
        term = -term * a * a / (n + 1)
    return 2.0 / np.sqrt(np.pi) * total


for shape in SHAPES:
    add_case("erf", _sid(shape), F.erf, _erf_series, uni(-2.5, 2.5, *shape))
    add_case("erfc", _sid(shape), F.erfc, lambda a: 1.0 - _erf_series(a), uni(-2.5, 2.5, *shape))


@torch_table
def _torch_erf(torch, add):
    """erf and erfc against torch.special in float64 and float32, into the tails (erfc(10)
    is 2e-45: a relative error only erfc itself keeps)."""
    rng = np.random.default_rng(14055)
    tails = np.array([-30.0, -6.0, -3.0, -0.0, 0.0, 3.0, 6.0, 10.0, 27.0, 30.0])
    for name, tf in [("erf", torch.special.erf), ("erfc", torch.special.erfc)]:
        add(name, "tails", getattr(F, name), tf, np.concatenate([rng.normal(0, 2, 8), tails]),
            dtypes=(np.float64, np.float32), close=helpers.close_32_ulps, fp_strict=True)
        add(name, "3x4", getattr(F, name), tf, rng.normal(0, 1.5, (3, 4)))
