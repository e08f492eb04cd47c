"""The pre-norm Transformer encoder block: ``vit_block`` and the modules TinyViT is built from.

The modules ``Attention``, ``Mlp`` and ``Block`` hold parameters and compute their stage in
``forward`` with minigrad's ops (``F.layer_norm``, ``F.self_attention``, ``F.gelu_tanh``):
the composed path TinyViT trains with by default. ``Block(..., fused=True)`` runs the whole
block as one recorded op instead (vit/model/fused.py, for tiny models). ``vit_block`` follows
docs/contract.md (section 1), which asks for normalization, attention and GELU built from basic
tensor operations rather than packaged helpers; so it is written rule by rule from the contract
with elementary minigrad ops (matmul, mean, exp, tanh, reshape, ...). A test checks that the
two paths agree, in value and gradient, to 1e-12.

Shapes: B sequences (batch), T tokens, D features, H heads of width D/H, F hidden MLP features.
"""
from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad import F, Tensor, checks
from minigrad.nn import LayerNorm, Linear, Module
from minigrad.ops.activations import GELU_C, GELU_K
from minigrad.ops.attention import attention_weights

from . import fused as fused_stages
from .config import LN_EPS

__all__ = ["vit_block", "Attention", "Mlp", "Block", "check_heads"]


def check_heads(dim: int, num_heads, name: str = "num_heads") -> int:
    """``num_heads`` as an int: TypeError unless an integer, ValueError unless it is positive
    and divides ``dim`` (each head takes D/H consecutive features)."""
    heads = checks.integer(name, num_heads)
    if heads <= 0 or dim % heads:
        raise ValueError(f"{name}: got {heads}; expected a positive integer dividing D = {dim}")
    return heads


class Attention(Module):
    """Multi-head self-attention: a bias-free ``qkv`` weight (D, 3D) = [W_q | W_k | W_v]
    (one parameter, as timm names it: one product makes Q, K and V) and ``proj`` (D, D)."""

    def __init__(self, dim: int, num_heads: int, *, dtype=np.float64,
                 rng: np.random.Generator | None = None) -> None:
        super().__init__()
        self.num_heads = check_heads(dim, num_heads)
        self.qkv = Linear(dim, 3 * dim, bias=False, dtype=dtype, rng=rng)
        self.proj = Linear(dim, dim, bias=False, dtype=dtype, rng=rng)

    def forward(self, h: Tensor, return_weights: bool = False):
        """Bidirectional multi-head self-attention, (B, T, D) -> (B, T, D).

        [Q | K | V] = h W_qkv, each cut into H consecutive chunks of width d = D/H, one per
        head; per head A = softmax(Q K^T / sqrt(d)) (over the keys, no mask), O = A V; the
        heads are concatenated in order and projected: out = [O_1 ... O_H] W_o. One GEMM
        makes [Q | K | V]; ``F.self_attention`` is the rest up to the projection, fused.
        ``return_weights=True`` also returns A, (B, H, T, T), as an array (for looking at
        what tokens read; it carries no gradient).
        """
        # F.linear on the weights: the block's input is already checked (Linear's own check
        # of shape and dtype would run on every call)
        qkv = F.linear(h, self.qkv.weight)  # (B, T, 3D)
        out = F.linear(F.self_attention(qkv, self.num_heads), self.proj.weight)
        if return_weights:
            return out, attention_weights(qkv.data, self.num_heads)
        return out


class Mlp(Module):
    """``fc1`` (D, F) -> GELU (tanh) -> ``fc2`` (F, D), with biases."""

    def __init__(self, dim: int, hidden: int, *, dtype=np.float64,
                 rng: np.random.Generator | None = None) -> None:
        super().__init__()
        self.fc1 = Linear(dim, hidden, dtype=dtype, rng=rng)
        self.fc2 = Linear(hidden, dim, dtype=dtype, rng=rng)

    def forward(self, h: Tensor) -> Tensor:
        """(B, T, D) -> (B, T, D):  GELU_tanh(h W1 + b1) W2 + b2."""
        fc1, fc2 = self.fc1, self.fc2
        return F.linear(F.gelu_tanh(F.linear(h, fc1.weight, fc1.bias)), fc2.weight, fc2.bias)


class Block(Module):
    """Pre-norm encoder block:  t = t + attn(norm1(t));  t = t + mlp(norm2(t)).

    ``fused=True`` computes it as ONE recorded op (``fused.encoder_block``: the same function
    with its backward written out by hand, for tiny models where each op's overhead
    dominates); ``fused=False`` (the default) composes minigrad's ops. The attribute
    ``fused`` says which path runs.
    """

    def __init__(self, dim: int, num_heads: int, mlp_dim: int, *, dtype=np.float64,
                 rng: np.random.Generator | None = None, fused: bool = False) -> None:
        super().__init__()
        self.fused = checks.boolean("fused", fused, owner="Block")
        if self.fused:
            fused_stages.check_fused_dtype(dtype, "Block")
        self.norm1 = LayerNorm(dim, dtype=dtype)
        self.attn = Attention(dim, num_heads, dtype=dtype, rng=rng)
        self.norm2 = LayerNorm(dim, dtype=dtype)
        self.mlp = Mlp(dim, mlp_dim, dtype=dtype, rng=rng)

    def forward(self, t: Tensor) -> Tensor:
        """(B, T, D) -> (B, T, D): one op if ``self.fused``, else the ops below."""
        if self.fused:
            return fused_stages.run_block(self, t)
        t = t + self.attn(self.norm1(t))
        return t + self.mlp(self.norm2(t))


_WEIGHT_NAMES = ("w_q", "w_k", "w_v", "w_o", "w_mlp1", "w_mlp2")


def _check_block_args(x, weights, num_heads) -> np.dtype:
    """Validate vit_block's arguments; return their common dtype."""
    named = {"x": x, **dict(zip(_WEIGHT_NAMES, weights, strict=True))}
    for name, a in named.items():
        if not isinstance(a, (np.ndarray, Tensor)):
            raise TypeError(f"vit_block {name}: got {type(a).__name__}; expected a NumPy array "
                            "or a minigrad Tensor")
        if a.dtype.kind != "f":
            raise TypeError(f"vit_block {name}: got dtype {a.dtype}; expected a floating dtype "
                            "(float16, float32 or float64)")
    dtypes = {a.dtype for a in named.values()}
    if len(dtypes) > 1:
        got = ", ".join(f"{n}={a.dtype}" for n, a in named.items())
        raise TypeError(f"vit_block: got mixed dtypes ({got}); expected one floating dtype")
    if x.ndim != 3 or 0 in x.shape:
        raise ValueError(f"vit_block x: got shape {x.shape}; expected (N, T, D) with all "
                         "dimensions positive")
    D = x.shape[2]
    hidden = weights[4].shape[1] if weights[4].ndim == 2 else None
    expected = {"w_q": (D, D), "w_k": (D, D), "w_v": (D, D), "w_o": (D, D),
                "w_mlp1": (D, hidden), "w_mlp2": (hidden, D)}
    for name, w in zip(_WEIGHT_NAMES, weights, strict=True):
        want = expected[name]
        if w.shape != want or (name == "w_mlp1" and not hidden):
            shown = "(D, F) with F > 0" if name == "w_mlp1" else str(want)
            raise ValueError(f"vit_block {name}: got shape {w.shape}; expected {shown} "
                             f"(D = {D} from x of shape {x.shape})")
    check_heads(D, num_heads, "vit_block num_heads")
    return dtypes.pop()


def vit_block(x, w_q, w_k, w_v, w_o, w_mlp1, w_mlp2, num_heads: int):
    """One pre-LN ViT encoder block, as docs/contract.md (section 1) defines it.

        y   = x + MHA(LN(x))                  LN without scale or bias, eps 1e-5, population var
        out = y + GELU_tanh(LN(y) @ W_mlp1) @ W_mlp2

    x (N, T, D); w_q, w_k, w_v, w_o (D, D); w_mlp1 (D, F); w_mlp2 (F, D); num_heads divides D.
    NumPy arrays in: a new array out, same dtype, inputs untouched (float16 is computed in
    float32 and rounded back). minigrad Tensors in (any argument): a differentiable Tensor out.
    """
    weights = (w_q, w_k, w_v, w_o, w_mlp1, w_mlp2)
    dtype = _check_block_args(x, weights, num_heads)
    compute = np.float32 if dtype == np.float16 else dtype
    args = (x,) + weights
    if not any(isinstance(a, Tensor) for a in args):
        with mg.no_grad():
            out = _block(*(Tensor(a.astype(compute, copy=False)) for a in args),
                         num_heads=num_heads)
        return out.data.astype(dtype, copy=False)
    tensors = tuple(a if isinstance(a, Tensor) else Tensor(a) for a in args)
    if compute != dtype:
        tensors = tuple(a.astype(compute) for a in tensors)
    out = _block(*tensors, num_heads=num_heads)
    return out.astype(dtype) if compute != dtype else out


def _block(x, w_q, w_k, w_v, w_o, w_mlp1, w_mlp2, *, num_heads):
    """docs/contract.md section 1 from elementary ops: y = x + MHA(LN(x)); y + GELU(LN(y) W1) W2."""
    N, T, D = x.shape
    d = D // num_heads

    def layer_norm(t):  # population variance, eps 1e-5, no scale or bias
        centred = t - t.mean(axis=-1, keepdims=True)
        return centred / ((centred * centred).mean(axis=-1, keepdims=True) + LN_EPS).sqrt()

    def heads(t):  # (N, T, D) -> (N, H, T, d): H consecutive chunks of each vector
        return t.reshape(N, T, num_heads, d).transpose(0, 2, 1, 3)

    h = layer_norm(x)
    q, k, v = heads(h @ w_q), heads(h @ w_k), heads(h @ w_v)
    scores = (q @ k.swapaxes(-1, -2)) / np.sqrt(d)  # (N, H, T, T)
    # stable softmax over keys: the shift is a constant (softmax does not depend on it)
    e = (scores - scores.max(axis=-1, keepdims=True).detach()).exp()
    weights = e / e.sum(axis=-1, keepdims=True)
    concatenated = (weights @ v).transpose(0, 2, 1, 3).reshape(N, T, D)
    y = x + concatenated @ w_o
    z = layer_norm(y) @ w_mlp1
    gelu = 0.5 * z * (1.0 + (GELU_C * (z + GELU_K * z ** 3)).tanh())
    return y + gelu @ w_mlp2
