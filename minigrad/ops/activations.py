"""Elementwise activations, as ``torch.nn.functional`` defines them (values, arguments and the
gradient at every kink).

Each is written in a form that neither overflows nor loses digits for large |x|: softplus
and log_sigmoid through ``logaddexp`` / ``log_expit``, sigmoids through ``expit``, the
exact GELU through the normal CDF ``ndtr`` (accurate in its tails, where ``1 + erf`` is 0).
float32 stays float32; integer and bool input is computed in float64. docs/backward.md §25
derives every VJP and states each kink convention.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sp

from ..checks import choice, real
from ..defop import as_floating, op
from .fused import gelu_tanh, softmax

__all__ = ["softplus", "silu", "gelu", "leaky_relu", "elu", "selu", "log_sigmoid", "hardtanh",
           "softmin"]

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


@op(arrays=1)
def softmin(x, axis=-1):
    """y = softmax(-x) along ``axis``.   VJP: x̄ = -y ⊙ (g - Σ_axis g ⊙ y).

    Derivation: docs/backward.md §25. Tests: tests/minigrad/op_cases/activations.py.
    """
    y, vjp = softmax.forward(-as_floating(x), axis)
    return y, lambda g: -vjp(g)
