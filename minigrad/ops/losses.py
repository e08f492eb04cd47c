"""Losses that compare an input with a target element by element, as ``torch.nn.functional``
defines them: ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``binary_cross_entropy_with_logits``,
``binary_cross_entropy`` (on probabilities), with ``reduction`` ("mean", "sum", "none"), and
the reduction they share with the losses over classes (``class_losses.py``).

Each is a NumPy forward with its VJP beside it; docs/backward.md §26-§27 and §42 derive them. Two
inputs of one loss are never broadcast against each other (torch only warns, and it is nearly
always a bug): ``input`` and ``target`` must have the same shape. float32 stays float32.
"""
from __future__ import annotations

import numpy as np
import scipy.special as sp

from ..checks import choice, real
from ..defop import as_array_input, as_floating, op

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits",
           "binary_cross_entropy"]

_REDUCTIONS = ("mean", "sum", "none")


def reduction_mode(owner: str, value) -> str:
    if value is None:  # "no reduction" is the string 'none' (torch refuses None the same way)
        raise ValueError(f"{owner} reduction: got None; expected one of 'mean', 'sum', 'none'")
    return choice("reduction", value, _REDUCTIONS, owner=owner)


def reduce_loss(loss, reduction, count=None):
    """The reduced loss and ``scale``: g -> the cotangent of each element of ``loss``.

    'mean' divides by ``count`` (default: the number of elements). A zero count (an empty
    loss, every target ignored, zero total weight) gives 0/0 = nan, as torch; the callers
    zero the gradient of ignored targets themselves, so that 0 · inf does not make it nan.
    """
    if reduction == "none":
        return loss, lambda g: g
    total = np.add.reduce(loss, axis=None)  # np.sum's value, without its Python wrapper
    if reduction == "sum":
        return total, lambda g: g
    n = loss.size if count is None else count
    if n:
        return total / n, lambda g: g / n

    def scale(g):
        with np.errstate(invalid="ignore", divide="ignore"):
            return g / n

    return scale(total), scale


def _same_shape(owner: str, x, y, xname: str = "input", yname: str = "target"):
    if np.shape(x) != np.shape(y):
        raise ValueError(f"{owner} {yname}: got shape {np.shape(y)}; expected the shape of "
                         f"{xname}, {np.shape(x)} (losses do not broadcast their inputs)")


def _pair(owner, x, y):
    _same_shape(owner, x, y)
    x, y = as_floating(x), as_floating(y)
    return x, y, np.result_type(x, y)


@op(arrays=2)
def mse_loss(input, target, reduction="mean"):
    """ℓ = (x - y)², then mean, sum or none.   VJP: x̄ = 2 (x - y) s, ȳ = -x̄, s the cotangent of
    each ℓ (g/n, g, g_i).
    Derivation: docs/backward.md §26. Tests: tests/minigrad/op_cases/losses.py,
    tests/minigrad/ops/test_losses.py.
    """
    reduction = reduction_mode("mse_loss", reduction)
    x, y, _ = _pair("mse_loss", input, target)
    d = x - y
    out, scale = reduce_loss(d * d, reduction)

    def vjp_input(g):
        return 2 * d * scale(g)

    return out, (vjp_input, lambda g: -vjp_input(g))


@op(arrays=2)
def l1_loss(input, target, reduction="mean"):
    """ℓ = |x - y|, then mean, sum or none.   VJP: x̄ = sign(x - y) s (0 where x = y, torch's),
    ȳ = -x̄.
    Derivation: docs/backward.md §26. Tests: tests/minigrad/op_cases/losses.py,
    tests/minigrad/ops/test_losses.py.
    """
    reduction = reduction_mode("l1_loss", reduction)
    x, y, _ = _pair("l1_loss", input, target)
    d = x - y
    out, scale = reduce_loss(np.abs(d), reduction)

    def vjp_input(g):
        return np.sign(d) * scale(g)

    return out, (vjp_input, lambda g: -vjp_input(g))


@op(arrays=2)
def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """ℓ = ½ d²/β where |d| < β, else |d| - ½β (d = x - y; β = 0: |d|).   VJP: x̄ = s · d/β where
    |d| < β, else s · sign(d); ȳ = -x̄.
    Derivation: docs/backward.md §26. Tests: tests/minigrad/op_cases/losses.py,
    tests/minigrad/ops/test_losses.py.
    """
    reduction = reduction_mode("smooth_l1_loss", reduction)
    beta = real("beta", beta, low=0.0, owner="smooth_l1_loss")
    x, y, _ = _pair("smooth_l1_loss", input, target)
    d = x - y
    ad = np.abs(d)
    if beta == 0:  # torch: exactly l1_loss (no division by β)
        loss, slope = ad, np.sign(d)
    else:
        small = ad < beta
        loss = np.where(small, (0.5 / beta) * d * d, ad - 0.5 * beta)
        slope = np.where(small, d / beta, np.sign(d))
    out, scale = reduce_loss(loss, reduction)

    def vjp_input(g):
        return slope * scale(g)

    return out, (vjp_input, lambda g: -vjp_input(g))


def _broadcast_weight(owner: str, name: str, w, shape, dtype):
    """``w`` (None, or an array broadcasting to ``shape`` without growing it) in ``dtype``."""
    if w is None:
        return None
    w = np.asarray(as_array_input(w, owner, name))  # by keyword it skipped op's own check
    try:
        fits = np.broadcast_shapes(w.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{owner} {name}: got shape {w.shape}; expected a shape that "
                         f"broadcasts to the logits' shape {tuple(shape)}, such as (C,) for "
                         "one value per class on the last axis")
    return w.astype(dtype, copy=False)


@op(arrays=4)
def binary_cross_entropy_with_logits(logits, targets, weight=None, pos_weight=None,
                                     reduction="mean"):
    """ℓ = w [p y softplus(-x) + (1 - y) softplus(x)] = -w [p y log σ(x) + (1 - y) log σ(-x)].

    logits x and targets y of one shape; ``weight`` w and ``pos_weight`` p broadcast to it
    (p of shape (C,) weighs the positives of each class on the last axis, as torch).
    VJP: x̄ = s w [(1 - y) σ(x) - p y σ(-x)],  ȳ = s w [p softplus(-x) - softplus(x)],
    w̄ = s [p y softplus(-x) + (1 - y) softplus(x)],  p̄ = s w y softplus(-x) (w̄, p̄ summed to
    their shapes; torch does not differentiate w and p).
    Derivation: docs/backward.md §27, §42. Tests: tests/minigrad/op_cases/losses.py,
    tests/minigrad/ops/test_losses.py.
    """
    owner = "binary_cross_entropy_with_logits"
    reduction = reduction_mode(owner, reduction)
    _same_shape(owner, logits, targets, "logits", "targets")
    x, y = as_floating(logits), as_floating(targets)
    dtype = np.result_type(x, y)
    w = _broadcast_weight(owner, "weight", weight, x.shape, dtype)
    p = _broadcast_weight(owner, "pos_weight", pos_weight, x.shape, dtype)
    sp_x = np.logaddexp(0.0, x)  # softplus(x) = -log σ(-x), no overflow for |x| large
    sp_nx = np.logaddexp(0.0, -x)  # softplus(-x) = -log σ(x)
    py = y if p is None else p * y
    unweighted = (1 - y) * sp_x + py * sp_nx
    loss = unweighted if w is None else unweighted * w
    out, scale = reduce_loss(loss, reduction)

    def weighted(v, g):
        v *= scale(g)
        return v if w is None else v * w

    def vjp_logits(g):
        return weighted((1 - y) * sp.expit(x) - py * sp.expit(-x), g)

    def vjp_targets(g):
        return weighted((sp_nx if p is None else p * sp_nx) - sp_x, g)

    def vjp_weight(g):  # the engine sums it back to weight's own (broadcast) shape
        return unweighted * scale(g)

    def vjp_pos_weight(g):
        return weighted(y * sp_nx, g)

    return out, (vjp_logits, vjp_targets, vjp_weight, vjp_pos_weight)


#: torch's floor of each log in binary_cross_entropy: a probability of exactly 0 or 1 on the
#: wrong side costs 100, not inf
LOG_FLOOR = -100.0
#: torch's floor of p (1 - p) in binary_cross_entropy's input gradient: 1e-12 as torch holds it,
#: a float32 number (9.99999996e-13), in every dtype
GRAD_EPS = float(np.float32(1e-12))


@op(arrays=3)
def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """ℓ = -w [y max(log p, -100) + (1 - y) max(log(1 - p), -100)], p the probabilities.

    input p in [0, 1] and target y of one shape; ``weight`` w broadcasts to it.
    VJP: p̄ = s w (p - y) / max(p (1 - p), 1e-12) (torch's rule, also at p = 0 and 1),
    ȳ = s w [max(log(1 - p), -100) - max(log p, -100)], w̄ = s ℓ/w (summed to w's shape).
    Derivation: docs/backward.md §42. Tests: tests/minigrad/op_cases/losses.py,
    tests/minigrad/ops/test_losses_bce.py.
    """
    owner = "binary_cross_entropy"
    reduction = reduction_mode(owner, reduction)
    _same_shape(owner, input, target)
    p, y = as_floating(input), as_floating(target)
    dtype = np.result_type(p, y)
    if not np.all((p >= 0) & (p <= 1)):  # NaN too, as torch
        bad = p[~((p >= 0) & (p <= 1))].flat[0]
        raise ValueError(f"{owner} input: got {float(bad)!r} among the probabilities; expected "
                         "every element in [0, 1] (logits go to "
                         "binary_cross_entropy_with_logits)")
    w = _broadcast_weight(owner, "weight", weight, p.shape, dtype)
    with np.errstate(divide="ignore"):  # log 0 = -inf, floored just below
        log_p = np.maximum(np.log(p), LOG_FLOOR)
        log_q = np.maximum(np.log1p(-p), LOG_FLOOR)
    unweighted = -(y * log_p + (1 - y) * log_q)
    loss = unweighted if w is None else unweighted * w
    out, scale = reduce_loss(loss, reduction)

    def weighted(v, g):
        v *= scale(g)
        return v if w is None else v * w

    def vjp_input(g):
        return weighted((p - y) / np.maximum(p * (1 - p), GRAD_EPS), g)

    def vjp_target(g):
        return weighted(log_q - log_p, g)

    return out, (vjp_input, vjp_target, lambda g: unweighted * scale(g))
