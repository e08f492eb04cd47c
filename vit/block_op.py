"""The whole pre-norm encoder block as ONE recorded minigrad op, for small blocks.

``encoder_block`` runs the block's forward and backward as vit/manual.py derives them
(``block_forward`` / ``block_backward``: a quarter of the NumPy calls of the composed ops, no
graph inside), and the engine records one op instead of ten. ``vit.Block`` uses it while the
block is small enough (vit/fusion.py says when, and why results stay independent of the
thread count); larger blocks keep the composed ops, whose products and kernels are split
across the block pool. docs/performance.md, "A fused encoder block", has the measurements.

Shapes: B sequences, T tokens, D features, F hidden MLP features, M = B*T token rows.
"""
from __future__ import annotations

import numpy as np

import minigrad as mg

from . import fusion
from .fusion import floating_dtype_of
from .manual import LN_EPS, block_backward, block_forward

__all__ = ["encoder_block", "fusable", "block_parameters", "largest_product"]


@mg.op(name="encoder_block", arrays=11)
def encoder_block(t, norm1_w, norm1_b, qkv_w, proj_w, norm2_w, norm2_b, fc1_w, fc1_b, fc2_w,
                  fc2_b, *, num_heads: int):
    """(B, T, D) -> (B, T, D):  t1 = t + attn(LN1(t));  out = t1 + mlp(LN2(t1)).

    LN(x) = x̂ ⊙ w + b (population variance, eps 1e-5); attn(h) = MHA(h W_qkv) W_o with
    ``num_heads`` heads, no mask; mlp(h) = GELU_tanh(h W1 + b1) W2 + b2. Weights (in, out):
    qkv (D, 3D), proj (D, D), fc1 (D, F), fc2 (F, D); norms and biases (D,) or (F,).
    VJP: vit/manual.py's ``block_backward`` (docs/backward.md §6, §9, §10, §12), run once per
    backward pass for all eleven inputs. Arguments are the caller's to check (``fusable``).
    """
    B, T, D = t.shape
    out, cache = block_forward(t.reshape(B * T, D), (norm1_w, norm1_b, qkv_w, proj_w, norm2_w,
                                                      norm2_b, fc1_w, fc1_b, fc2_w, fc2_b),
                               B, num_heads)

    def gradients(g, needed):
        # (block_backward leaves the cache as it was: it serves any number of passes)
        dt, grads = block_backward(g.reshape(B * T, D), cache, B, num_heads)
        return [dt.reshape(B, T, D)] + grads

    return out.reshape(B, T, D), mg.JointVJP(gradients)


def fusable(block, t) -> bool:
    """True when ``block`` (a ``vit.Block``) may run on ``t`` as ``encoder_block``: t is a
    (B, T, D) floating array of the parameters' one dtype (float32 or float64), the norms
    have weights and eps 1e-5, and the block is small (vit/fusion.py). Anything else
    (float16, mixed dtypes, a bad shape: the composed ops cast it or name the error) takes
    the composed path."""
    data = t.data if isinstance(t, mg.Tensor) else t
    if type(data) is not np.ndarray or data.ndim != 3:
        return False
    B, T, D = data.shape
    fc1 = block.mlp.fc1.weight.data
    n1, n2 = block.norm1, block.norm2
    if (fc1.shape[0] != D or n1.weight is None or n2.weight is None
            or n1.eps != LN_EPS or n2.eps != LN_EPS
            or not fusion.small_enough(largest_product(B, T, D, fc1.shape[1],
                                                       block.attn.num_heads), B * T * D)):
        return False
    return floating_dtype_of(data, block_parameters(block)) is not None


def largest_product(B: int, T: int, D: int, hidden: int, num_heads: int) -> float:
    """FLOPs (2·m·n·k) of the block's largest single matrix product: the token products
    (M, D) @ (D, max(3D, F)), or, on long sequences, one head's attention products
    (T, d) @ (d, T) and (T, T) @ (T, d), each its own BLAS call, M = B·T, d = D / heads."""
    return max(2.0 * B * T * D * max(3 * D, hidden), 2.0 * T * T * (D // num_heads))


def block_parameters(block) -> tuple:
    """The block's ten parameters in ``encoder_block``'s order (manual.BLOCK_PARAMS)."""
    attn, mlp = block.attn, block.mlp
    return (block.norm1.weight, block.norm1.bias, attn.qkv.weight, attn.proj.weight,
            block.norm2.weight, block.norm2.bias, mlp.fc1.weight, mlp.fc1.bias,
            mlp.fc2.weight, mlp.fc2.bias)
