"""Activations, as ``torch.nn.functional`` defines them (values, arguments and the gradient at
every kink): the elementwise ones, and the softmax family (softmax, log_softmax, softmin),
which normalizes along an axis from the row's maximum, so that nothing overflows.

Each is written in a form that neither overflows nor loses digits for large |x|: softplus
and log_sigmoid through ``logaddexp`` / ``log_expit``, sigmoids through ``expit``, the
exact GELU through the normal CDF ``ndtr`` (accurate in its tails, where ``1 + erf`` is 0).
float32 stays float32; integer and bool input is computed in float64. docs/backward.md §25
derives every VJP and states each kink convention; §40 those of mish, hardswish,
hardsigmoid, celu and softsign.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sp

from ..checks import choice, real
from ..defop import as_floating, op
from ..runtime.rowwise import as_rows, map_rows, row_max, row_sum

__all__ = ["softplus", "silu", "gelu", "gelu_tanh", "GELU_C", "GELU_K", "leaky_relu", "elu",
           "selu", "log_sigmoid", "hardtanh", "softmax", "log_softmax", "softmin", "mish",
           "hardswish", "hardsigmoid", "celu", "softsign"]

# torch.nn.SELU's constants (Klambauer et al., 2017), to the digits torch uses
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@op(arrays=1)
def softplus(x, beta=1.0, threshold=20.0):
    """y = log(1 + e^(βx)) / β, and y = x where βx > threshold.   VJP: x̄ = g · σ(βx) (g where
    βx > threshold).
    Derivation: docs/backward.md §25. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations.py.
    """
    beta = real("beta", beta, owner="softplus")
    threshold = real("threshold", threshold, owner="softplus")
    if beta == 0:
        raise ValueError("softplus beta: got 0.0; expected a non-zero number")
    x = as_floating(x)
    bx = x * beta
    linear = bx > threshold  # torch's switch: the exact value there is x + O(e^-threshold)
    y = np.where(linear, x, np.logaddexp(0.0, bx) / beta)
    return y, lambda g: g * np.where(linear, 1.0, sp.expit(bx)).astype(y.dtype, copy=False)


@op(arrays=1)
def silu(x):
    """y = x · σ(x).   VJP: x̄ = g · σ(x) (1 + x (1 - σ(x))).

    Derivation: docs/backward.md §25. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations.py.
    """
    x = as_floating(x)
    s = sp.expit(x)
    return x * s, lambda g: g * (s * (1.0 + x * (1.0 - s)))


@op(arrays=1)
def gelu(x, approximate="none"):
    """y = x Φ(x) = ½ x (1 + erf(x/√2)) (``approximate="tanh"``: gelu_tanh).   VJP: x̄ = g · (Φ(x)
    + x φ(x)), φ the normal density.
    Derivation: docs/backward.md §25 (tanh form: §10). Tests:
    tests/minigrad/op_cases/activations.py, tests/minigrad/ops/test_activations.py.
    """
    approximate = choice("approximate", approximate, ("none", "tanh"), owner="gelu")
    if approximate == "tanh":
        return gelu_tanh.forward(x)
    x = as_floating(x)
    cdf = sp.ndtr(x)  # Φ(x), accurate for x << 0 where 1 + erf(x/√2) rounds to 0

    def vjp(g):
        return g * (cdf + x * (_INV_SQRT_2PI * np.exp(-0.5 * x * x)))

    return x * cdf, vjp


#: The tanh GELU's constants: sqrt(2/pi) and the cubic coefficient (Hendrycks & Gimpel, 2016).
GELU_C = math.sqrt(2.0 / math.pi)
GELU_K = 0.044715


@op(arrays=1)
def gelu_tanh(x):
    """y = ½ x (1 + t),  t = tanh u,  u = √(2/π) (x + 0.044715 x³) = √(2/π) x (1 + 0.044715 x²).

    VJP: x̄ = g ⊙ [½ (1 + t) + ½ √(2/π) x (1 - t²) (1 + 3 · 0.044715 x²)].
    Runs block by block on every core; saves x and t for the VJP.
    Derivation: docs/backward.md §10. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations.py.
    """
    shape = x.shape
    x2 = as_rows(x)
    t2 = np.empty_like(x2)

    def forward(ys, xs, ts):
        np.multiply(xs, xs, out=ts)
        ts *= GELU_K
        ts += 1.0
        ts *= xs
        ts *= GELU_C
        np.tanh(ts, out=ts)
        np.add(ts, 1.0, out=ys)
        ys *= xs
        ys *= 0.5

    y = map_rows(forward, shape, x2.dtype, x2, t2)

    def backward(out, gs, xs, ts):
        slope = xs * xs  # becomes ½ √(2/π) x (1 + 3k x²) (1 - t²)
        slope *= 3 * GELU_K
        slope += 1.0
        slope *= xs
        slope *= 0.5 * GELU_C
        sq = ts * ts
        np.subtract(1.0, sq, out=sq)
        slope *= sq
        np.multiply(ts, 0.5, out=sq)
        slope += sq
        slope += 0.5
        np.multiply(gs, slope, out=out)

    return y, lambda g: map_rows(backward, shape, g.dtype, as_rows(g), x2, t2)


@op(arrays=1)
def leaky_relu(x, negative_slope=0.01):
    """y = x where x > 0, else negative_slope · x.   VJP: x̄ = g where x > 0, else
    negative_slope · g (so at 0: the slope, as torch).
    Derivation: docs/backward.md §25. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations.py.
    """
    slope = real("negative_slope", negative_slope, owner="leaky_relu")
    x = as_floating(x)
    pos = x > 0
    return np.where(pos, x, slope * x), lambda g: g * np.where(pos, 1.0, slope).astype(x.dtype)


def _elu(x, alpha, scale):
    """scale · (x where x > 0, else α (e^x - 1)) and its VJP; at 0 the slope is scale · α
    (torch's)."""
    x = as_floating(x)
    pos = x > 0
    e = np.exp(np.minimum(x, 0.0))  # e^x on the negative side only: no overflow for x >> 0
    y = np.where(pos, scale * x, (scale * alpha) * (np.expm1(np.minimum(x, 0.0))))
    slope = np.where(pos, scale, (scale * alpha) * e).astype(x.dtype, copy=False)
    return y, lambda g: g * slope


@op(arrays=1)
def elu(x, alpha=1.0):
    """y = x where x > 0, else α (e^x - 1).   VJP: x̄ = g where x > 0, else α e^x g (at 0: α, as
    torch).
    Derivation: docs/backward.md §25. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations.py.
    """
    return _elu(x, real("alpha", alpha, owner="elu"), 1.0)


@op(arrays=1)
def selu(x):
    """y = λ · elu(x, α) with torch's λ ≈ 1.0507 and α ≈ 1.6733.   VJP: x̄ = λ g where x > 0, else
    λ α e^x g (at 0: λ α).
    Derivation: docs/backward.md §25. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations.py.
    """
    return _elu(x, SELU_ALPHA, SELU_SCALE)


@op(arrays=1)
def log_sigmoid(x):
    """y = log σ(x) = -log(1 + e^-x).   VJP: x̄ = g · σ(-x).

    Derivation: docs/backward.md §25. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations.py.
    """
    x = as_floating(x)
    return sp.log_expit(x), lambda g: g * sp.expit(-x)


@op(arrays=1)
def hardtanh(x, min_val=-1.0, max_val=1.0):
    """y = min(max(x, min_val), max_val).   VJP: x̄ = g where min_val < x < max_val, else 0 (0 AT
    the bounds, as torch; F.clip passes it there).
    Derivation: docs/backward.md §25. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations.py.
    """
    lo = real("min_val", min_val, owner="hardtanh")
    hi = real("max_val", max_val, owner="hardtanh")
    if lo > hi:
        raise ValueError(f"hardtanh max_val: got {hi}; expected max_val >= min_val ({lo})")
    x = as_floating(x)
    inside = (x > lo) & (x < hi)
    return np.clip(x, lo, hi), lambda g: g * inside


# ---- the softmax family: exp(x - max) normalized along an axis ------------------------
def log_softmax_array(x: np.ndarray, axis: int) -> np.ndarray:
    """x - logsumexp(x) along ``axis`` on plain arrays (no graph): the forward shared by
    ``log_softmax`` and ``cross_entropy``."""
    if x.size and x.ndim and axis in (-1, x.ndim - 1):  # rows: the classes of a loss
        # row_max is exact, so this is np.max's value, without its per-row cost on short rows
        shifted = x - row_max(x.reshape(-1, x.shape[-1])).reshape(x.shape[:-1] + (1,))
    else:  # initial=-inf: over an empty axis the result is empty, not NumPy's reduction error
        shifted = x - np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    if not shifted.size:  # nothing to normalise (and no log of an empty sum)
        return shifted
    # np.add.reduce is np.sum without its Python wrapper: the same bits
    return shifted - np.log(np.add.reduce(np.exp(shifted), axis=axis, keepdims=True))


@op(arrays=1)
def softmax(x, axis=-1):
    """y = e^(x - max x) / Σ e^(x - max x) along ``axis``.

    VJP: x̄ = y ⊙ (g - Σ_axis g ⊙ y).
    Along the last axis (attention's case) it runs block by block on every core.
    Derivation: docs/backward.md §6. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations.py.
    """
    if x.ndim and axis in (-1, x.ndim - 1):
        return _softmax_last(x)
    x = as_floating(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True, initial=-np.inf))  # see log_softmax_array
    y = e / np.sum(e, axis=axis, keepdims=True)

    def vjp(g):
        gx = g * y
        gx -= y * np.sum(gx, axis=axis, keepdims=True)
        return gx

    return y, vjp


def _softmax_last(x):
    shape = x.shape  # the VJP keeps y, not x

    def forward(ys, xs):
        np.subtract(xs, row_max(xs), out=ys)
        np.exp(ys, out=ys)
        ys /= row_sum(ys)

    x2 = as_rows(x)
    y = map_rows(forward, shape, x2.dtype, x2)
    y2 = as_rows(y)

    def vjp(g):
        def backward(out, gs, ys):
            np.multiply(gs, ys, out=out)
            np.subtract(gs, row_sum(out), out=out)
            out *= ys

        return map_rows(backward, shape, g.dtype, as_rows(g), y2)

    return y, vjp


@op(arrays=1)
def log_softmax(x, axis=-1):
    """y = x - logsumexp(x) along ``axis``.   VJP: x̄ = g - e^y ⊙ Σ_axis g.

    Derivation: docs/backward.md §7. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations.py.
    """
    y = log_softmax_array(as_floating(x), axis)
    return y, lambda g: g - np.exp(y) * np.sum(g, axis=axis, keepdims=True)


@op(arrays=1)
def softmin(x, axis=-1):
    """y = softmax(-x) along ``axis``.   VJP: x̄ = -y ⊙ (g - Σ_axis g ⊙ y).

    Derivation: docs/backward.md §25. Tests: tests/minigrad/op_cases/activations.py.
    """
    y, vjp = softmax.forward(-as_floating(x), axis)
    return y, lambda g: -vjp(g)


# ---- mish, the hard pair, celu, softsign (docs/backward.md §40) -------------------------
@op(arrays=1)
def mish(x):
    """y = x · tanh(softplus(x)).   VJP: x̄ = g · (t + x σ(x) (1 - t²)), t = tanh(softplus(x)).

    Derivation: docs/backward.md §40. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations_more.py.
    """
    x = as_floating(x)
    t = np.tanh(np.logaddexp(0.0, x))  # softplus without overflow for x >> 0
    return x * t, lambda g: g * (t + x * sp.expit(x) * (1.0 - t * t))


@op(arrays=1)
def hardswish(x):
    """y = x · min(max(x + 3, 0), 6) / 6.   VJP: x̄ = 0 where x ≤ -3, g (x/3 + ½) where
    -3 < x < 3, g where x ≥ 3 (torch's values at ±3: 0 and 1).
    Derivation: docs/backward.md §40. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations_more.py.
    """
    x = as_floating(x)
    y = x * np.clip(x + 3.0, 0.0, 6.0) / 6.0
    slope = np.where(x <= -3.0, 0.0, np.where(x < 3.0, x / 3.0 + 0.5, 1.0)).astype(x.dtype)
    return y, lambda g: g * slope


@op(arrays=1)
def hardsigmoid(x):
    """y = min(max(x/6 + ½, 0), 1).   VJP: x̄ = g/6 where -3 < x < 3, else 0 (0 at ±3, torch's).

    Derivation: docs/backward.md §40. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations_more.py.
    """
    x = as_floating(x)
    inside = (x > -3.0) & (x < 3.0)
    return np.clip(x / 6.0 + 0.5, 0.0, 1.0), lambda g: g * inside / 6.0


@op(arrays=1)
def celu(x, alpha=1.0):
    """y = x where x > 0, else α (e^(x/α) - 1).   VJP: x̄ = g where x > 0, else g e^(x/α) (at 0:
    g, torch's).
    Derivation: docs/backward.md §40. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations_more.py.
    """
    alpha = real("alpha", alpha, owner="celu")
    if alpha == 0:
        raise ValueError("celu alpha: got 0.0; expected a non-zero number (x/α)")
    x = as_floating(x)
    pos = x > 0
    u = np.minimum(x, 0.0) / alpha  # the negative side only: no overflow for x >> 0 (α > 0)
    y = np.where(pos, x, alpha * np.expm1(u))
    slope = np.where(pos, 1.0, np.exp(u)).astype(x.dtype, copy=False)
    return y, lambda g: g * slope


@op(arrays=1)
def softsign(x):
    """y = x / (1 + |x|).   VJP: x̄ = g / (1 + |x|)².

    Derivation: docs/backward.md §40. Tests: tests/minigrad/op_cases/activations.py,
    tests/minigrad/ops/test_activations_more.py.
    """
    x = as_floating(x)
    d = 1.0 + np.abs(x)
    return x / d, lambda g: g / d / d  # two divisions: d² overflows for |x| > 1e154
