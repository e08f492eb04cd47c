"""The TinyViT training step written for the baselines of benchmarks/train_step.py.

The same model as ``vit.TinyViT`` (pre-norm block, tanh GELU, 1/sqrt(d) on Q, LayerNorm eps
1e-5, mean cross-entropy), written as its users would write it in PyTorch eager and in HIPS
autograd's NumPy. Each ``make_*(cfg, state, x, y)`` copies the float64 ``state`` (a
``TinyViT.state_dict()``) to float32 and returns ``step() -> loss``: forward, loss, backward
and a plain SGD update of every parameter. The libraries are imported only when called.
"""
from __future__ import annotations

import math

import numpy as np

LR = 0.01


def torch_logits(torch, P, x, patch, heads):
    """TinyViT's forward in PyTorch eager for a batch ``x`` (B, C, S, S) and the parameters
    ``P`` (a ``TinyViT.state_dict()`` as tensors): the logits (B, K)."""
    import torch.nn.functional as tF
    B, C, p = x.shape[0], x.shape[1], patch
    D = P["pos_embed"].shape[-1]
    Hs, H, d = x.shape[-1] // p, heads, D // heads
    patches = x.reshape(B, C, Hs, p, Hs, p).permute(0, 2, 4, 3, 5, 1).reshape(B, Hs * Hs, -1)
    tok = patches @ P["patch_embed.weight"] + P["patch_embed.bias"]
    t = torch.cat([P["cls_token"].expand(B, 1, D), tok], 1) + P["pos_embed"]
    T = t.shape[1]
    h = tF.layer_norm(t, (D,), P["block.norm1.weight"], P["block.norm1.bias"], 1e-5)
    qkv = (h @ P["block.attn.qkv.weight"]).reshape(B, T, 3, H, d).permute(2, 0, 3, 1, 4)
    a = ((qkv[0] * (1.0 / math.sqrt(d))) @ qkv[1].transpose(-1, -2)).softmax(-1)
    o = (a @ qkv[2]).transpose(1, 2).reshape(B, T, D)
    t = t + o @ P["block.attn.proj.weight"]
    h = tF.layer_norm(t, (D,), P["block.norm2.weight"], P["block.norm2.bias"], 1e-5)
    z = tF.gelu(h @ P["block.mlp.fc1.weight"] + P["block.mlp.fc1.bias"], approximate="tanh")
    t = t + z @ P["block.mlp.fc2.weight"] + P["block.mlp.fc2.bias"]
    c = tF.layer_norm(t[:, 0], (D,), P["norm.weight"], P["norm.bias"], 1e-5)
    return c @ P["head.weight"] + P["head.bias"]


def make_torch(cfg, state, x, y):
    import torch
    import torch.nn.functional as tF
    P = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True) for k, v in state.items()}
    xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))

    def loss_fn():
        return tF.cross_entropy(torch_logits(torch, P, xt, cfg.patch, cfg.heads), yt)

    def step():
        for q in P.values():
            q.grad = None  # as minigrad's zero_grad
        loss = loss_fn()
        loss.backward()
        with torch.no_grad():
            for q in P.values():
                q -= LR * q.grad
        return loss.item()
    return step


def make_autograd(cfg, state, x, y):
    import autograd
    import autograd.numpy as anp
    params = {k: v.astype(np.float32) for k, v in state.items()}
    B, C, p, D, H = cfg.batch, cfg.channels, cfg.patch, cfg.dim, cfg.heads
    Hs = cfg.image // p
    d = D // H
    rows = np.arange(B)

    def ln(t, w, b):
        xc = t - anp.mean(t, axis=-1, keepdims=True)
        return xc / anp.sqrt(anp.mean(xc * xc, axis=-1, keepdims=True) + 1e-5) * w + b

    def loss_fn(P):
        patches = anp.reshape(anp.transpose(anp.reshape(x, (B, C, Hs, p, Hs, p)),
                                            (0, 2, 4, 3, 5, 1)), (B, Hs * Hs, -1))
        tok = anp.matmul(patches, P["patch_embed.weight"]) + P["patch_embed.bias"]
        t = anp.concatenate([anp.broadcast_to(P["cls_token"], (B, 1, D)), tok], 1)
        t = t + P["pos_embed"]
        T = t.shape[1]
        h = ln(t, P["block.norm1.weight"], P["block.norm1.bias"])
        qkv = anp.transpose(anp.reshape(anp.matmul(h, P["block.attn.qkv.weight"]),
                                        (B, T, 3, H, d)), (2, 0, 3, 1, 4))
        s = anp.matmul(qkv[0] * (1.0 / math.sqrt(d)), anp.swapaxes(qkv[1], -1, -2))
        e = anp.exp(s - anp.max(s, axis=-1, keepdims=True))
        o = anp.matmul(e / anp.sum(e, axis=-1, keepdims=True), qkv[2])
        o = anp.reshape(anp.transpose(o, (0, 2, 1, 3)), (B, T, D))
        t = t + anp.matmul(o, P["block.attn.proj.weight"])
        h = ln(t, P["block.norm2.weight"], P["block.norm2.bias"])
        z = anp.matmul(h, P["block.mlp.fc1.weight"]) + P["block.mlp.fc1.bias"]
        z = 0.5 * z * (1.0 + anp.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z * z * z)))
        t = t + anp.matmul(z, P["block.mlp.fc2.weight"]) + P["block.mlp.fc2.bias"]
        c = ln(t[:, 0], P["norm.weight"], P["norm.bias"])
        logits = anp.matmul(c, P["head.weight"]) + P["head.bias"]
        m = anp.max(logits, axis=1, keepdims=True)
        lsm = logits - m - anp.log(anp.sum(anp.exp(logits - m), axis=1, keepdims=True))
        return -anp.sum(lsm[rows, y]) / B

    value_and_grad = autograd.value_and_grad(loss_fn)

    def step():
        loss, grads = value_and_grad(params)
        for k, g in grads.items():
            params[k] -= LR * g
        return float(loss)
    return step
