"""NumPy's elementwise math functions: the unary ones, and the binary arctan2, hypot,
logaddexp and mod.

As in ``elementwise.py``: each VJP returns the gradient in the output's shape and the
engine sums it back over broadcast axes (``gradients.unbroadcast``). Dtypes follow the NumPy
function of the same name (integers become float64 where NumPy's result is floating; a bool
input gives float16, as NumPy's ufuncs do); a function NumPy lacks (``rsqrt``) computes
integers in float64. Piecewise-constant functions (sign, floor, ceil, round, trunc) have
gradient 0 everywhere, as in PyTorch. Where each derivative is undefined and what is returned
there: docs/backward.md §24, one line per function.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sp

from ..defop import JointVJP, as_floating, op

__all__ = [
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arctanh",
    "log1p", "expm1", "log2", "log10", "exp2", "square", "reciprocal", "rsqrt",
    "arctan2", "hypot", "logaddexp", "sign", "floor", "ceil", "round", "trunc", "mod",
    "erf", "erfc",
]

_LN2 = math.log(2.0)  # Python numbers: they keep a float32 g float32
_LN10 = math.log(10.0)


def _zero(g):
    return np.zeros_like(g)


def _one_minus_square(a):
    """1 - a² as (1 - a)(1 + a): exact factors near |a| = 1, where 1 - a·a cancels (off by
    2^-31 relative at a = 1 - 2^-30)."""
    return (1 - a) * (1 + a)


@op(arrays=1)
def sin(a):
    """out = sin a.   VJP: ā = g cos a.

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    return np.sin(a), lambda g: g * np.cos(a)


@op(arrays=1)
def cos(a):
    """out = cos a.   VJP: ā = -g sin a.

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py.
    """
    return np.cos(a), lambda g: -g * np.sin(a)


@op(arrays=1)
def tan(a):
    """out = tan a.   VJP: ā = g (1 + out²).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py.
    """
    out = np.tan(a)
    return out, lambda g: g * (1 + out * out)


@op(arrays=1)
def arcsin(a):
    """out = arcsin a.   VJP: ā = g / √(1 - a²).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    return np.arcsin(a), lambda g: g / np.sqrt(_one_minus_square(a))


@op(arrays=1)
def arccos(a):
    """out = arccos a.   VJP: ā = -g / √(1 - a²).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py.
    """
    return np.arccos(a), lambda g: -g / np.sqrt(_one_minus_square(a))


@op(arrays=1)
def arctan(a):
    """out = arctan a.   VJP: ā = g / (1 + a²).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    return np.arctan(a), lambda g: g / (1 + a * a)


@op(arrays=1)
def sinh(a):
    """out = sinh a.   VJP: ā = g cosh a.

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py.
    """
    return np.sinh(a), lambda g: g * np.cosh(a)


@op(arrays=1)
def cosh(a):
    """out = cosh a.   VJP: ā = g sinh a.

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py.
    """
    return np.cosh(a), lambda g: g * np.sinh(a)


@op(arrays=1)
def arcsinh(a):
    """out = arcsinh a.   VJP: ā = g / √(1 + a²).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py.
    """
    # hypot: √(1 + a²) without forming a², which overflows past |a| ~ 1.3e154
    return np.arcsinh(a), lambda g: g / np.hypot(1, a).astype(g.dtype, copy=False)


@op(arrays=1)
def arctanh(a):
    """out = arctanh a.   VJP: ā = g / (1 - a²).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    return np.arctanh(a), lambda g: g / _one_minus_square(a)


@op(arrays=1)
def log1p(a):
    """out = ln(1 + a).   VJP: ā = g / (1 + a).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    return np.log1p(a), lambda g: g / (1 + a)


@op(arrays=1)
def expm1(a):
    """out = e^a - 1.   VJP: ā = g (out + 1).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py.
    """
    out = np.expm1(a)
    # e^a itself, not out + 1: expm1(-40) rounds to -1, and out + 1 would be 0, not 4.2e-18
    return out, lambda g: g * np.exp(a).astype(out.dtype, copy=False)


@op(arrays=1)
def log2(a):
    """out = log₂ a.   VJP: ā = g / (a ln 2).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py.
    """
    return np.log2(a), lambda g: g / (a * _LN2)


@op(arrays=1)
def log10(a):
    """out = log₁₀ a.   VJP: ā = g / (a ln 10).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    return np.log10(a), lambda g: g / (a * _LN10)


@op(arrays=1)
def exp2(a):
    """out = 2^a.   VJP: ā = g out ln 2.

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    out = np.exp2(a)
    return out, lambda g: g * out * _LN2


@op(arrays=1)
def square(a):
    """out = a².   VJP: ā = 2 g a.

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    return np.square(a), lambda g: g * (a + a)


@op(arrays=1)
def reciprocal(a):
    """out = 1 / a.   VJP: ā = -g out².

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    out = np.reciprocal(a)
    return out, lambda g: -g * out * out


@op(arrays=1)
def rsqrt(a):
    """out = 1 / √a.   VJP: ā = -g out³ / 2.

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    out = 1 / np.sqrt(as_floating(a))  # NumPy has no rsqrt: integers computed in float64
    return out, lambda g: g * out * out * out * -0.5


@op(arrays=2)
def arctan2(a, b):
    """out = atan2(a, b), the angle of the point (b, a).   VJP: ā = g b / (a² + b²),
    b̄ = -g a / (a² + b²) (0 at the origin).
    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    out = np.arctan2(a, b)
    # where a² + b² under- or overflows (|a|, |b| beyond 1e±154; 0 would be taken for the
    # origin), x / r / r with r = hypot(a, b) instead of x / (a² + b²)
    with np.errstate(over="ignore", under="ignore"):
        r2 = a * a + b * b
    r = np.hypot(a, b)
    tiny = np.finfo(np.result_type(out)).tiny if np.result_type(out).kind == "f" else 0
    scaled = ~np.isfinite(r2) | (r2 < tiny)

    def share(g, x):  # 0 at the origin, where atan2 has no limit (as PyTorch gives)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return np.where(r == 0, 0, g * np.where(scaled, x / r / r, x / r2))

    return out, (lambda g: share(g, b), lambda g: share(-g, a))


@op(arrays=2)
def hypot(a, b):
    """out = √(a² + b²).   VJP: ā = g a / out, b̄ = g b / out (0 at out = 0).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    out = np.hypot(a, b)

    def share(g, x):  # at the origin: 0, the 2-norm's subgradient (PyTorch: nan, see §24)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(out == 0, 0, g * x / out)

    return out, (lambda g: share(g, a), lambda g: share(g, b))


@op(arrays=2)
def logaddexp(a, b):
    """out = ln(e^a + e^b).   VJP: ā = g e^(a - out), b̄ = g e^(b - out).
    Computed as ā = g σ(a - b), b̄ = g σ(b - a), equal to them but exact where out is rounded
    (½ and ½ for any a = b, equal infinities included).
    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    out = np.logaddexp(a, b)

    def gradients(g, needed):
        # σ(a - b), not e^(a - out): out is rounded to its own ulp, which for |out| >= 2^53
        # (float64; 2^24 in float32) is 1 or more, and a - out then loses the ½ of a = b.
        # a - b is exact where a = b, also where both are the same infinity (nan there)
        with np.errstate(invalid="ignore"):
            d = np.subtract(a, b)
        if not np.isfinite(d).all():
            d = np.where(np.equal(a, b), 0, d)  # equal infinities: σ(0) = ½, the limit along a = b
        return (g * sp.expit(d) if needed[0] else None,
                g * sp.expit(-d) if needed[1] else None)

    return out, JointVJP(gradients)


@op(arrays=1)
def sign(a):
    """out = sign a.   VJP: ā = 0 (piecewise constant).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    try:
        out = np.sign(a)
    except TypeError:  # checked only on failure: no cost to the common case
        if getattr(a, "dtype", None) == np.bool_ or isinstance(a, bool):
            raise TypeError("sign a: got a bool operand; expected numbers (NumPy has no sign "
                            "of a bool; cast with astype first)") from None
        raise
    return out, _zero


@op(arrays=1)
def floor(a):
    """out = ⌊a⌋.   VJP: ā = 0 (piecewise constant).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    return np.floor(a), _zero


@op(arrays=1)
def ceil(a):
    """out = ⌈a⌉.   VJP: ā = 0 (piecewise constant).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    return np.ceil(a), _zero


@op(arrays=1)
def round(a, decimals=0):
    """out = a rounded to ``decimals`` places, halves to even (np.round).   VJP: ā = 0.

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"round decimals: got {decimals!r}; expected an integer")
    return np.round(a, int(decimals)), _zero


@op(arrays=1)
def trunc(a):
    """out = a rounded toward 0.   VJP: ā = 0 (piecewise constant).

    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    return np.trunc(a), _zero


@op(arrays=2)
def mod(a, b):
    """out = a - ⌊a / b⌋ b, with the sign of b (np.mod, torch.remainder).   VJP: ā = g,
    b̄ = -g ⌊a / b⌋.
    Derivation: docs/backward.md §24. Tests: tests/minigrad/op_cases/unary.py,
    tests/minigrad/ops/test_unary.py.
    """
    out = np.mod(a, b)

    def vjp_b(g):
        with np.errstate(divide="ignore", invalid="ignore"):  # b = 0: NumPy's nan already
            return -g * np.floor_divide(a, b)

    return out, (lambda g: g, vjp_b)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@op(arrays=1)
def erf(a):
    """out = erf a = (2/√π) ∫₀^a e^(-t²) dt.   VJP: ā = g (2/√π) e^(-a²).

    Derivation: docs/backward.md §40. Tests: tests/minigrad/op_cases/unary.py.
    """
    a = as_floating(a)
    return sp.erf(a), lambda g: g * (_TWO_OVER_SQRT_PI * np.exp(-a * a))


@op(arrays=1)
def erfc(a):
    """out = erfc a = 1 - erf a (accurate where erf a is near 1).   VJP: ā = -g (2/√π) e^(-a²).

    Derivation: docs/backward.md §40. Tests: tests/minigrad/op_cases/unary.py.
    """
    a = as_floating(a)
    return sp.erfc(a), lambda g: g * (-_TWO_OVER_SQRT_PI * np.exp(-a * a))
