"""Independent NumPy references for the vit tests, written from the specs, not from vit/.

Deliberately naive: explicit Python loops over heads (and, for patchify, over every pixel),
formulas spelled out as the specs state them. Keyword switches produce the *wrong* variants
(other scale, interleaved heads, causal mask, LN of x before the MLP, erf GELU, sample
variance, another eps) so the tests can show each contract sentence is able to fail.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import erf

EPS = 1e-5


def layer_norm(x, gain=None, bias=None, *, eps=EPS, ddof=0):
    """(x - mean) / sqrt(var + eps) over the last axis; var divides by D - ddof."""
    D = x.shape[-1]
    mean = x.sum(axis=-1, keepdims=True) / D
    var = ((x - mean) ** 2).sum(axis=-1, keepdims=True) / (D - ddof)
    out = (x - mean) / np.sqrt(var + eps)
    if gain is not None:
        out = out * gain
    if bias is not None:
        out = out + bias
    return out


def gelu_tanh(z):
    return 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))


def gelu_erf(z):
    return 0.5 * z * (1 + erf(z / math.sqrt(2)))


def softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(h, w_q, w_k, w_v, w_o, num_heads, *, scale=None, split="chunks", causal=False,
              head_order="forward"):
    """Multi-head self-attention with an explicit loop over heads."""
    N, T, D = h.shape
    d = D // num_heads
    scale = 1 / math.sqrt(d) if scale is None else scale
    Q, K, V = h @ w_q, h @ w_k, h @ w_v
    outs = []
    for i in range(num_heads):
        cols = slice(i * d, (i + 1) * d) if split == "chunks" else slice(i, D, num_heads)
        scores = Q[..., cols] @ np.swapaxes(K[..., cols], -1, -2) * scale  # (N, T, T)
        if causal:
            scores = np.where(np.tril(np.ones((T, T), bool)), scores, -np.inf)
        outs.append(softmax(scores) @ V[..., cols])
    if head_order == "reversed":
        outs = outs[::-1]
    return np.concatenate(outs, axis=-1) @ w_o


def vit_block(x, w_q, w_k, w_v, w_o, w_mlp1, w_mlp2, num_heads, *, mlp_input="y",
              gelu=gelu_tanh, eps=EPS, ddof=0, **attn_kw):
    """spec/vit_block.md, line by line (float64)."""
    y = x + attention(layer_norm(x, eps=eps, ddof=ddof), w_q, w_k, w_v, w_o, num_heads,
                      **attn_kw)
    z = layer_norm(y if mlp_input == "y" else x, eps=eps, ddof=ddof)
    return y + gelu(z @ w_mlp1) @ w_mlp2


def block_weights(rng, D, F, scale=1.0):
    """Six random weights (w_q, w_k, w_v, w_o, w_mlp1, w_mlp2) of a vit_block."""
    shapes = [(D, D)] * 4 + [(D, F), (F, D)]
    return [scale * rng.standard_normal(s) / math.sqrt(s[0]) for s in shapes]


def patchify_loop(x, P):
    """Pixel by pixel: patch n = i * (W/P) + j (row-major grid), feature (p1 * P + p2) * C + c."""
    B, C, H, W = x.shape
    gh, gw = H // P, W // P
    out = np.empty((B, gh * gw, P * P * C), dtype=x.dtype)
    for b in range(B):
        for i in range(gh):
            for j in range(gw):
                for p1 in range(P):
                    for p2 in range(P):
                        for c in range(C):
                            out[b, i * gw + j, (p1 * P + p2) * C + c] = x[b, c, i * P + p1,
                                                                          j * P + p2]
    return out


def params(model):
    """name -> float64 copy of every parameter of a TinyViT."""
    return {name: p.data.astype(np.float64) for name, p in model.named_parameters()}


def tinyvit(model, x, *, permute=None):
    """spec/tinyvit.md's architecture from the model's parameters: (cls_features, logits).

    ``permute``: an optional order of the patch tokens applied after patchify (to compare
    against a model fed images whose patches were shuffled).
    """
    p = params(model)
    c = model.config
    D, H = c["dim"], c["num_heads"]
    patches = patchify_loop(np.asarray(x, np.float64), c["patch_size"])
    if permute is not None:
        patches = patches[:, permute]
    tokens = patches @ p["patch_embed.weight"] + p["patch_embed.bias"]
    B = tokens.shape[0]
    t = np.concatenate([np.broadcast_to(p["cls_token"].reshape(1, 1, D), (B, 1, D)), tokens], 1)
    if c["use_pos_emb"]:
        t = t + p["pos_embed"].reshape(1, -1, D)
    depth = c.get("depth", 1)  # one block is named block., more blocks.0. ... (timm's names)
    for b in ["block."] if depth == 1 else [f"blocks.{i}." for i in range(depth)]:
        h = layer_norm(t, p[b + "norm1.weight"], p[b + "norm1.bias"])
        w_qkv = p[b + "attn.qkv.weight"]  # (D, 3D) = [W_q | W_k | W_v]
        t = t + attention(h, w_qkv[:, :D], w_qkv[:, D:2 * D], w_qkv[:, 2 * D:],
                          p[b + "attn.proj.weight"], H)
        h = layer_norm(t, p[b + "norm2.weight"], p[b + "norm2.bias"])
        hidden = gelu_tanh(h @ p[b + "mlp.fc1.weight"] + p[b + "mlp.fc1.bias"])
        t = t + hidden @ p[b + "mlp.fc2.weight"] + p[b + "mlp.fc2.bias"]
    cls = layer_norm(t[:, 0], p["norm.weight"], p["norm.bias"])
    return cls, cls @ p["head.weight"] + p["head.bias"]


def cross_entropy(logits, y):
    """Mean cross-entropy; y integer labels (B,) or soft targets (B, K)."""
    log_p = logits - logits.max(1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(1, keepdims=True))
    if y.ndim == 1:
        return -log_p[np.arange(len(y)), y].mean()
    return -(y * log_p).sum() / len(y)
