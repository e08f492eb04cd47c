"""The attention weights of a trained TinyViT, for looking at what the [CLS] token reads.

``vit.block.attention`` returns only the attended values, so the weights are recomputed here
from the model's parameters with the same math: tokens as in ``TinyViT.features``, then
``LN1``, ``[Q | K | V] = h @ W_qkv`` cut into heads of width d = D / H, and
``softmax(Q K^T / sqrt(d))`` over the keys.
"""
from __future__ import annotations

import math

import numpy as np

import minigrad as mg
from minigrad import F, Tensor

from .model import TinyViT, patchify

__all__ = ["attention_weights", "cls_attention"]


def _tokens(model: TinyViT, x: Tensor) -> Tensor:
    """The block's input: embedded patches after the CLS token, plus position embeddings."""
    tokens = model.patch_embed(patchify(x, model.patch_size))
    B, _, D = tokens.shape
    t = F.concatenate([F.broadcast_to(model.cls_token, (B, 1, D)), tokens], axis=1)
    return t + model.pos_embed if model.pos_embed is not None else t


def attention_weights(model: TinyViT, x: np.ndarray) -> np.ndarray:
    """All attention weights of the encoder block, (B, heads, T, T) with T = N + 1 tokens
    (token 0 is CLS, then the patches in row-major order); each row sums to 1.

    ``x`` is a batch of images (B, C, H, W) normalized as for training.
    """
    x = model._images(x)
    with mg.no_grad():
        h = model.block.norm1(_tokens(model, Tensor(x)))
        B, T, D = h.shape
        H = model.num_heads
        d = D // H
        qkv = (h @ model.block.attn.qkv.weight).reshape(B, T, 3, H, d).transpose(2, 0, 3, 1, 4)
        scores = (qkv[0] * (1.0 / math.sqrt(d))) @ qkv[1].swapaxes(-1, -2)
        return F.softmax(scores, axis=-1).data


def cls_attention(model: TinyViT, x: np.ndarray) -> np.ndarray:
    """How much the CLS query attends to each patch, (B, heads, H/P, W/P) on the patch grid
    (the CLS token's weight on itself is left out, so a row sums to 1 minus that)."""
    weights = attention_weights(model, x)[:, :, 0, 1:]
    grid = model.config["img_size"] // model.patch_size
    return weights.reshape(weights.shape[0], weights.shape[1], grid, grid)
