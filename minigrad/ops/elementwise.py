"""Elementwise ops with full NumPy broadcasting.

Each VJP returns the gradient in the *output's* shape; the engine sums it back to the
input's shape (``gradients.unbroadcast``), so no op here handles broadcasting itself.
Notation: ``g`` is the gradient of the output, ``out`` the forward result.
"""
from __future__ import annotations

import numpy as np

from ..defop import as_floating, op

__all__ = [
    "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "tanh", "abs",
    "sigmoid", "relu", "maximum", "minimum", "where", "clip", "astype",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
]


def _identity(g):
    return g


def _negate(g):
    return -g


@op(arrays=2)
def add(a, b):
    """out = a + b.   VJP: ā = g, b̄ = g.

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    return np.add(a, b), (_identity, _identity)


def _is_bool(a) -> bool:
    return isinstance(a, (bool, np.bool_)) or getattr(a, "dtype", None) == np.bool_


@op(arrays=2)
def sub(a, b):
    """out = a - b.   VJP: ā = g, b̄ = -g.   Two masks (bool) are refused, as NumPy does.

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    try:
        out = np.subtract(a, b)
    except TypeError:  # checked only on failure: no cost to the common case
        if _is_bool(a) and _is_bool(b):
            raise TypeError("sub: got two bool operands; expected numbers (for masks use "
                            "np.logical_xor, or cast with astype first)") from None
        raise
    return out, (_identity, _negate)


@op(arrays=2)
def mul(a, b):
    """out = a * b.   VJP: ā = g * b, b̄ = g * a.

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    return np.multiply(a, b), (lambda g: g * b, lambda g: g * a)


@op(arrays=2)
def div(a, b):
    """out = a / b.   VJP: ā = g / b, b̄ = -g * a / b² = -g * out / b.

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    out = np.true_divide(a, b)
    return out, (lambda g: g / b, lambda g: -g * out / b)


@op(arrays=1)
def neg(a):
    """out = -a.   VJP: ā = -g.   A mask (bool) is refused, as NumPy and PyTorch do.

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    try:
        out = np.negative(a)
    except TypeError:
        if _is_bool(a):
            raise TypeError("neg a: got a bool operand; expected numbers (to invert a mask use "
                            "np.logical_not, or cast with astype first)") from None
        raise
    return out, _negate


@op(arrays=2)
def pow(a, b):
    """out = a ** b.   VJP: ā = g * b * a^(b-1)  (0 where b = 0),
    b̄ = g * out * log(a)  (0 where a = 0, b >= 0).

    The exponent may be a number or a Tensor. Where b = 0, out = 1 is constant in a, so ā = 0
    even at a = 0 (where b * a^(b-1) would be 0 * inf). At a = 0 the exponent's gradient is
    taken as 0 when b >= 0 (the limit of a^b log a). Both as PyTorch does.
    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    out = np.power(a, b)

    def vjp_a(g):
        if isinstance(b, (int, float)):
            if b == 2:
                return g * (2 * a)
            if b == 0:
                return np.zeros_like(g)
            return g * b * np.power(a, b - 1)
        with np.errstate(divide="ignore", invalid="ignore"):  # the masked 0 * inf
            ga = g * b * np.power(a, b - 1)
        return np.where(b == 0, 0, ga)

    def vjp_b(g):
        with np.errstate(divide="ignore", invalid="ignore"):
            gb = g * out * np.log(a)
        return np.where((a == 0) & (b >= 0), 0, gb)

    return out, (vjp_a, vjp_b)


@op(arrays=1)
def exp(a):
    """out = e^a.   VJP: ā = g * out.

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    out = np.exp(a)
    return out, lambda g: g * out


@op(arrays=1)
def log(a):
    """out = ln a.   VJP: ā = g / a.

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    return np.log(a), lambda g: g / a


@op(arrays=1)
def sqrt(a):
    """out = √a.   VJP: ā = g / (2 out).

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    out = np.sqrt(a)
    return out, lambda g: g / (out + out)


@op(arrays=1)
def tanh(a):
    """out = tanh a.   VJP: ā = g * (1 - out²).

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    out = np.tanh(a)
    return out, lambda g: g * (1 - out * out)


@op(arrays=1)
def abs(a):
    """out = |a|.   VJP: ā = g * sign(a)  (0 at a = 0, the subgradient PyTorch uses).

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    return np.abs(a), lambda g: g * np.sign(a)


@op(arrays=1)
def sigmoid(a):
    """out = 1 / (1 + e^-a).   VJP: ā = g * out * (1 - out).   Integers and bool: float64.

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    out = np.exp(-np.logaddexp(0, -as_floating(a)))  # no overflow for large |a|
    return out, lambda g: g * out * (1 - out)


@op(arrays=1)
def relu(a):
    """out = max(a, 0).   VJP: ā = g where a > 0, else 0.

    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py,
    tests/minigrad/engine/test_tensor_relu_method.py.
    """
    return np.maximum(a, 0), lambda g: g * (a > 0)


def _tie_weight(win, tie, dtype):
    """1 where this side wins, 1/2 on a tie, 0 where it loses."""
    w = win.astype(dtype)
    w += 0.5 * tie
    return w


@op(arrays=2)
def maximum(a, b):
    """out = max(a, b) elementwise.   VJP: ā = g * [a > b] + g/2 * [a = b],  b̄ = g - ā.

    Ties split the gradient evenly between the two inputs (as PyTorch does).
    Derivation: docs/backward.md §4 (the tie rule) and §2. Tests:
    tests/minigrad/op_cases/elementwise.py.
    """
    out = np.maximum(a, b)

    def vjp_a(g):
        return g * _tie_weight(np.greater(a, b), np.equal(a, b), g.dtype)

    def vjp_b(g):
        return g * _tie_weight(np.greater(b, a), np.equal(a, b), g.dtype)

    return out, (vjp_a, vjp_b)


@op(arrays=2)
def minimum(a, b):
    """out = min(a, b) elementwise.   VJP: ā = g * [a < b] + g/2 * [a = b],  b̄ likewise.

    Ties split the gradient evenly between the two inputs.
    Derivation: docs/backward.md §4 (the tie rule) and §2. Tests:
    tests/minigrad/op_cases/elementwise.py.
    """
    out = np.minimum(a, b)

    def vjp_a(g):
        return g * _tie_weight(np.less(a, b), np.equal(a, b), g.dtype)

    def vjp_b(g):
        return g * _tie_weight(np.less(b, a), np.equal(a, b), g.dtype)

    return out, (vjp_a, vjp_b)


@op(arrays=3)
def where(condition, a, b):
    """out = a where condition else b.   VJP: ā = g where condition else 0, b̄ = the rest.

    ``condition`` is a boolean array (or bool Tensor) and gets no gradient.
    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    cond = np.asarray(condition, dtype=bool)
    out = np.where(cond, a, b)
    return out, (None, lambda g: np.where(cond, g, 0), lambda g: np.where(cond, 0, g))


@op(arrays=1)
def clip(a, a_min=None, a_max=None):
    """out = min(max(a, a_min), a_max).   VJP: ā = g where a_min <= a <= a_max,
    ā_min = g where a < a_min <= a_max,  ā_max = g where a > a_max or a_min > a_max.

    Either bound may be None, a number, an array or a Tensor (differentiated like ``a``).
    Each point's gradient goes to exactly one of a, a_min, a_max (NaN aside). The interval is
    closed: at a == a_min or a == a_max (a_min == a_max too) the gradient goes to ``a``, the
    one-sided derivative from inside (docs/backward.md, section 13; torch.clamp's rule there
    changed between versions). With a_min > a_max every output is a_max, and so is its
    gradient's destination.
    Derivation: docs/backward.md §13. Tests: tests/minigrad/op_cases/elementwise.py,
    tests/minigrad/ops/test_elementwise.py.
    """
    if a_min is None and a_max is None:
        raise ValueError("clip: got a_min=None and a_max=None; expected at least one bound")
    out = np.clip(a, a_min, a_max)

    # each in out's shape: array bounds may broadcast a (the engine sums back)
    def vjp(g):
        inside = np.ones(out.shape, dtype=bool)
        if a_min is not None:
            inside &= a >= a_min
        if a_max is not None:
            inside &= a <= a_max
        return g * inside

    def vjp_min(g):
        below = np.less(a, a_min)
        if a_max is not None:
            below &= np.less_equal(a_min, a_max)
        return g * np.broadcast_to(below, out.shape)

    def vjp_max(g):
        above = np.greater(a, a_max)
        if a_min is not None:
            above |= np.greater(a_min, a_max)
        return g * np.broadcast_to(above, out.shape)

    return out, (vjp, vjp_min, vjp_max)


@op(arrays=1)
def astype(a, dtype):
    """out = a cast to ``dtype``.   VJP: ā = g cast back to a's dtype (done by the engine).

    A cast to a non-floating dtype (int, bool) is not differentiable, as in PyTorch: its
    result does not require grad (an integer gradient would be silently truncated).
    Derivation: docs/backward.md §2 (broadcasting; the rule itself is the formula above).
    Tests: tests/minigrad/op_cases/elementwise.py.
    """
    dtype = np.dtype(dtype)
    if dtype.kind not in "biuf":
        raise TypeError(f"astype dtype: got {dtype}; expected a real dtype (bool, integer or "
                        "floating)")
    out = a.astype(dtype, copy=False)
    if out is a:  # no cast needed: a view, so that the result shares a's version counter
        out = a.view()
    return out, (_identity if out.dtype.kind == "f" else None,)


def _comparison(ufunc):
    def compare(a, b):
        return ufunc(a, b), (None, None)

    compare.__name__ = compare.__qualname__ = ufunc.__name__
    compare.__doc__ = f"out = np.{ufunc.__name__}(a, b), a bool Tensor.   Not differentiable."
    return op(compare, arrays=2)


# The Tensor comparison operators: through ``op`` like every op, so 0-d operands are weakly
# typed and the result holds a 0-d array, never the NumPy scalar that ``a < b`` gives.
less = _comparison(np.less)
less_equal = _comparison(np.less_equal)
greater = _comparison(np.greater)
greater_equal = _comparison(np.greater_equal)
equal = _comparison(np.equal)
not_equal = _comparison(np.not_equal)
