"""Fused neural-network ops: faster and numerically safer than their compositions.

Each equals the same function composed from primitive ops (the tests check values and
gradients both ways); docs/backward.md derives every VJP below.
"""
from __future__ import annotations

import math

import numpy as np

from ..op import op

__all__ = ["softmax", "log_softmax", "logsumexp", "layer_norm", "gelu_tanh", "cross_entropy"]


def _log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@op
def softmax(x, axis=-1):
    """y = e^(x - max x) / Σ e^(x - max x) along ``axis``.

    VJP: x̄ = y ⊙ (g - Σ_axis g ⊙ y).
    """
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    y = e / np.sum(e, axis=axis, keepdims=True)

    def vjp(g):
        gy = g * y
        gy -= y * np.sum(gy, axis=axis, keepdims=True)
        return gy

    return y, vjp


@op
def log_softmax(x, axis=-1):
    """y = x - logsumexp(x) along ``axis``.   VJP: x̄ = g - e^y ⊙ Σ_axis g."""
    y = _log_softmax(x, axis)
    return y, lambda g: g - np.exp(y) * np.sum(g, axis=axis, keepdims=True)


@op
def logsumexp(x, axis=None, keepdims=False):
    """y = m + log Σ_axis e^(x - m), m = max_axis x (so no overflow).

    VJP: x̄ = g ⊙ softmax(x) = g ⊙ e^(x - y), g broadcast over the reduced axes.
    """
    m = np.max(x, axis=axis, keepdims=True)
    if not np.all(np.isfinite(m)):  # an all -inf slice: keep it -inf, not nan
        m = np.where(np.isfinite(m), m, 0)
    y_kept = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    y = y_kept if keepdims or axis is None and x.ndim == 0 else np.squeeze(y_kept, axis=axis)

    def vjp(g):
        if not keepdims:
            g = np.reshape(g, y_kept.shape)
        return g * np.exp(x - y_kept)

    return y, vjp


@op
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """Normalize over the last axis: x̂ = (x - μ) / √(σ² + eps), y = x̂ ⊙ w + b.

    μ and σ² are the mean and the *population* variance over the last axis (D features);
    ``weight`` and ``bias`` (shape (D,)) are optional.
    VJP, with ĝ = g ⊙ w (or g without weight) and r = 1/√(σ² + eps):
        x̄ = r · (ĝ - mean(ĝ) - x̂ ⊙ mean(ĝ ⊙ x̂)),   w̄ = Σ_rows g ⊙ x̂,   b̄ = Σ_rows g.
    """
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = np.mean(xc * xc, axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = xc * rstd
    y = xhat
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias

    def vjp_x(g):
        gh = g if weight is None else g * weight
        gx = gh - np.mean(gh, axis=-1, keepdims=True)
        gx -= xhat * np.mean(gh * xhat, axis=-1, keepdims=True)
        gx *= rstd
        return gx

    def vjp_w(g):
        return np.sum((g * xhat).reshape(-1, x.shape[-1]), axis=0)

    def vjp_b(g):
        return np.sum(g.reshape(-1, x.shape[-1]), axis=0)

    return y, (vjp_x, vjp_w, vjp_b)


_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_K = 0.044715


@op
def gelu_tanh(x):
    """y = ½ x (1 + tanh u),  u = √(2/π) (x + 0.044715 x³).

    VJP: x̄ = g ⊙ [½ (1 + t) + ½ x (1 - t²) √(2/π) (1 + 3 · 0.044715 x²)],  t = tanh u.
    """
    x2 = x * x
    t = np.tanh(_GELU_C * (x + _GELU_K * x2 * x))
    y = 0.5 * x * (1.0 + t)

    def vjp(g):
        dy = 0.5 * (1.0 + t) + (0.5 * _GELU_C) * x * (1.0 - t * t) * (1.0 + 3 * _GELU_K * x2)
        return g * dy

    return y, vjp


def _check_cross_entropy(logits, target, reduction, label_smoothing):
    if logits.ndim < 1 or logits.dtype.kind != "f":
        raise ValueError(
            f"cross_entropy logits: got shape {logits.shape} dtype {logits.dtype}; expected a "
            "floating array of shape (..., C) with the classes on the last axis"
        )
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy reduction: got {reduction!r}; expected 'mean', 'sum' or 'none'")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy label_smoothing: got {label_smoothing}; expected 0 <= it <= 1")
    C = logits.shape[-1]
    if target.dtype.kind in "iu":
        if target.shape != logits.shape[:-1]:
            raise ValueError(
                f"cross_entropy target: got integer labels of shape {target.shape}; expected "
                f"shape {logits.shape[:-1]} (logits are {logits.shape})"
            )
        if target.size and (target.min() < 0 or target.max() >= C):
            raise ValueError(
                f"cross_entropy target: got labels in [{target.min()}, {target.max()}]; "
                f"expected class indices in [0, {C - 1}]"
            )
        return True
    if target.dtype.kind == "f":
        if target.shape != logits.shape:
            raise ValueError(
                f"cross_entropy target: got soft targets of shape {target.shape}; expected the "
                f"logits' shape {logits.shape} (or integer labels of shape {logits.shape[:-1]})"
            )
        return False
    raise TypeError(
        f"cross_entropy target: got dtype {target.dtype}; expected integer class labels or "
        "floating soft targets"
    )


@op
def cross_entropy(logits, target, reduction="mean", label_smoothing=0.0):
    """Cross-entropy of softmax(logits) against class labels or soft targets (classes last).

    logits (..., C); target: integer labels (...) or probabilities (..., C). With smoothing ε
    the target distribution is q = (1 - ε) · target + ε / C (target one-hot for labels).
        loss_i = -Σ_c q_ic log softmax(logits_i)_c,  then mean (over rows), sum or none.
    VJP: logits̄_i = s_i · (softmax(logits_i) Σ_c q_ic - q_i),  target̄_i = -s_i (1 - ε) log softmax_i,
    where s_i is g / rows for 'mean', g for 'sum', g_i for 'none'.
    """
    target = np.asarray(target)
    hard = _check_cross_entropy(logits, target, reduction, label_smoothing)
    C = logits.shape[-1]
    eps = float(label_smoothing)
    lsm = _log_softmax(logits, -1)
    if hard:
        picked = np.take_along_axis(lsm, target[..., None], axis=-1)[..., 0]
        loss = -picked if eps == 0 else -(1.0 - eps) * picked - (eps / C) * np.sum(lsm, axis=-1)
    else:
        q = target if eps == 0 else (1.0 - eps) * target + eps / C
        loss = -np.sum(q * lsm, axis=-1)
    rows = loss.size
    if reduction == "mean":
        out = np.sum(loss) / rows if rows else np.sum(loss) * np.nan
    elif reduction == "sum":
        out = np.sum(loss)
    else:
        out = loss

    def scale(g):
        if reduction == "none":
            return g[..., None]
        return g / rows if reduction == "mean" else g

    def vjp_logits(g):
        p = np.exp(lsm, order="C")  # C order: the reshape below must be a view
        if hard:
            if eps:
                p -= eps / C
            # one label per row, so plain fancy-index assignment cannot collide
            p.reshape(-1, C)[np.arange(rows), target.reshape(-1)] -= 1.0 - eps
        else:
            p *= np.sum(q, axis=-1, keepdims=True)
            p -= q
        p *= scale(g)
        return p

    def vjp_target(g):
        return -(1.0 - eps) * lsm * scale(g)

    return out.astype(logits.dtype, copy=False), (vjp_logits, None if hard else vjp_target)
