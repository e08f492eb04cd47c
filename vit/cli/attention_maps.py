"""The attention weights of a trained TinyViT, for looking at what the [CLS] token reads:
the model's own ``tokens``, ``norm1`` and ``attention`` (asked for its weights), so the
pictures show exactly what the model computes.

(``minigrad.ops.attention.attention_weights(qkv, H)`` is the op-level function these build
on; the names here say which weights of the model they return.)"""
from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad import Tensor

from ..model.tinyvit import TinyViT

__all__ = ["token_attention_weights", "cls_attention", "cls_self_attention"]


def token_attention_weights(model: TinyViT, x: np.ndarray) -> np.ndarray:
    """Every token's attention weights over every token in the last encoder block,
    (B, heads, T, T) with T = N + 1 tokens (token 0 is CLS, then the patches in row-major
    order); each row sums to 1.

    ``x`` is a batch of images (B, C, H, W) normalized as for training.
    """
    x = model.images_array(x)
    with mg.no_grad():
        *earlier, last = model.encoder_blocks()
        t = model.tokens(Tensor(x))
        for block in earlier:
            t = block(t)
        _, weights = last.attn(last.norm1(t), return_weights=True)
        return weights


def cls_attention(model: TinyViT, x: np.ndarray) -> np.ndarray:
    """How much the CLS query attends to each patch, (B, heads, H/P, W/P) on the patch grid
    (the CLS token's weight on itself is left out, so a map sums to 1 minus
    :func:`cls_self_attention`)."""
    weights = token_attention_weights(model, x)[:, :, 0, 1:]
    grid = model.config["img_size"] // model.patch_size
    return weights.reshape(weights.shape[0], weights.shape[1], grid, grid)


def cls_self_attention(model: TinyViT, x: np.ndarray) -> np.ndarray:
    """The CLS query's weight on the CLS token itself, (B, heads): what :func:`cls_attention`'s
    patch maps leave out of 1."""
    return token_attention_weights(model, x)[:, :, 0, 0]
