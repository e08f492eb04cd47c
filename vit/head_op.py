"""TinyViT's head, encoder output -> logits, as ONE recorded minigrad op for small models.

The composed path is three ops (the CLS row ``t[:, 0]``, the final ``LayerNorm`` and the
``head`` linear); ``cls_head`` is vit/manual.py's ``layer_norm_*`` and ``head_*`` functions
behind one node. When and why: vit/fusion.py.

Shapes: B sequences of T tokens, D features, K classes.
"""
from __future__ import annotations

import numpy as np

import minigrad as mg

from .fusion import floating_dtype_of, small_enough
from .manual import LN_EPS, head_backward, head_forward, layer_norm_backward, layer_norm_forward

__all__ = ["cls_head", "fusable", "head_parameters"]


@mg.op(name="cls_head", arrays=5)
def cls_head(t, norm_weight, norm_bias, head_weight, head_bias):
    """t (B, T, D) -> logits (B, K) = LN(t[:, 0]) W + b.

    LN(x) = x̂ ⊙ w + b with x̂ = (x - μ)/√(σ² + eps) over the D features (population
    variance, eps 1e-5); head_weight (D, K), head_bias (K,).
    VJP (docs/backward.md §9, §3): c̄ = logits̄ Wᵀ, W̄ = cᵀ logits̄, b̄ = Σ_batch logits̄;
    the LayerNorm's x̄, w̄, b̄ from c̄; t̄ is x̄ in the CLS rows and 0 elsewhere.
    Arguments are the caller's to check (``fusable``).
    """
    B, T, D = t.shape
    cls = t[:, 0]  # a strided view of the op's input: layer_norm_forward only reads it
    c, ln = layer_norm_forward(cls, norm_weight, norm_bias)
    logits = head_forward(c, head_weight, head_bias)

    def gradients(g, needed):
        dc, dw, db = head_backward(g, c, head_weight)
        # layer_norm_backward overwrites no cached buffer of its own: one pass serves
        # any number of backward passes
        dcls, dnw, dnb = layer_norm_backward(dc, ln)
        dt = np.zeros((B, T, D), dtype=t.dtype)
        dt[:, 0] = dcls
        return [dt, dnw, dnb, dw, db]

    return logits, mg.JointVJP(gradients)


def fusable(model, t) -> bool:
    """True when ``model`` (a TinyViT) may map the encoder's output ``t`` (a (B, T, D)
    Tensor) to logits as ``cls_head``: a CLS row of the norm's and the head's width D, one
    dtype (float32 or float64) for t and the parameters, a final LayerNorm with weights and
    eps 1e-5, and a small head (vit/fusion.py). Anything else takes the composed path."""
    data = t.data
    if data.ndim != 3:
        return False
    B, T, D = data.shape
    norm, head = model.norm, model.head
    if norm.weight is None or head.bias is None:
        return False
    w = head.weight.data
    if T == 0 or norm.weight.data.shape[0] != D or norm.eps != LN_EPS or w.shape[0] != D:
        return False
    if not small_enough(2.0 * B * D * w.shape[1], B * T * D):
        return False
    return floating_dtype_of(data, head_parameters(model)) is not None


def head_parameters(model) -> tuple:
    """The final norm's and the head's parameters, in ``cls_head``'s order."""
    return model.norm.weight, model.norm.bias, model.head.weight, model.head.bias
