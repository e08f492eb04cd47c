"""The fast path for small models: TinyViT's stages as ONE recorded op each.

``TinyViT(..., fused=True)`` (and ``Block(..., fused=True)``) runs

- ``patch_tokens``: patches @ W + b, the CLS token and the position embeddings;
- ``encoder_block``: a whole pre-norm encoder block;
- ``cls_head``: the CLS row, the final LayerNorm and the classifier head;

each as one op whose forward and backward are vit/model/manual.py's hand-derived functions,
instead of the 4, 10 and 3 ops the composed path records. On a tiny model a training step is
interpreter overhead (each recorded op costs its dispatch, its node and its VJP calls), so this
is where fusion pays; docs/performance.md, "The fused path", has the measurements. The
composed path (``fused=False``, the default) is the readable reference, and the tests pin the
two together for every op.

Which path runs is the constructor's ``fused`` argument and nothing else. A fused op refuses
inputs the composed ops would cast (another dtype) and names what does not fit. Its matrix
products run with BLAS on one thread wherever BLAS could otherwise split them, so its results
do not depend on the thread count at any size (docs/reliability.md, G2).

Shapes: B images of C channels, H = W pixels, patch side P, N = (H/P)² patches, T = N + 1
tokens, D features, F hidden MLP features, K classes, M = B·T token rows.
"""
from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np

import minigrad as mg
from minigrad import Tensor, record
from minigrad.defop import Op
from minigrad.opcalls import op_calls_observed
from minigrad.runtime.blas import one_blas_thread
from minigrad.runtime.parallel import BLAS_THREADED_FLOPS

from .config import LN_EPS
from .manual import (
    block_backward,
    block_forward,
    embed_backward,
    embed_forward,
    head_backward,
    head_forward,
    layer_norm_backward,
    layer_norm_forward,
)

__all__ = ["FUSED_DTYPES", "check_fused_dtype", "patch_tokens", "encoder_block", "cls_head",
           "embed", "run_block", "head", "apply_unchecked"]

#: The dtypes the hand-derived stages compute in (the composed path also takes float16).
FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def check_fused_dtype(dtype: np.dtype, owner: str) -> None:
    """Refuse ``fused=True`` for a model dtype the fused stages do not compute in."""
    if np.dtype(dtype) not in FUSED_DTYPES:
        raise ValueError(f"{owner} fused: the fused stages compute in float32 or float64; got "
                         f"dtype {np.dtype(dtype).name} (expected fused=False for it)")


def _one_blas_thread_above(flops: float):
    """BLAS held to one thread when a product of ``flops`` could be split by BLAS itself
    (below ``BLAS_THREADED_FLOPS`` it runs on one thread anyway, and entering costs ~µs)."""
    return one_blas_thread() if flops >= BLAS_THREADED_FLOPS else contextlib.nullcontext()


def apply_unchecked(op: Op, inputs: Sequence, **consts):
    """``op(*inputs, **consts)`` without the op wrapper's per-argument conversions (numbers,
    NumPy scalars, 0-d arrays): the forward on the Tensors' arrays, recorded as the wrapper
    records it. Only for inputs the caller has checked (Tensors of one floating dtype, with
    their dimensions), as :func:`embed`, :func:`run_block` and :func:`head` do. In checking
    mode (``minigrad.opcalls``) it calls the op itself, so that the per-op gradient check
    sees the call and can check the stage's JointVJP."""
    if op_calls_observed():
        return op(*inputs, **consts)
    out, vjps = op.forward(*[x.data for x in inputs], **consts)
    return record(out, inputs, vjps, op.op_name)


def _check_input(owner: str, data: np.ndarray, dtype: np.dtype, ndim: int, layout: str) -> None:
    if data.ndim != ndim:
        raise ValueError(f"{owner} x: got shape {data.shape}; expected {layout}")
    if data.dtype != dtype:
        raise TypeError(f"{owner} x: got dtype {data.dtype}; expected the model's {dtype} (a "
                        "fused model computes in its own dtype: cast the input, or build the "
                        "model with fused=False)")


# ---- the embedding -----------------------------------------------------------------------------
@mg.op(name="patch_tokens", arrays=5)
def patch_tokens(images, weight, bias, cls_token, pos_embed=None, *, patch_size: int):
    """images (B, C, H, W) -> t (B, T, D):  t[:, 0] = cls;  t[:, 1:] = patchify(images) W + b;
    t += pos (when ``pos_embed`` is not None).

    weight (P·P·C, D) with rows in patchify's (p1, p2, c) order, bias (D,), cls_token
    (1, 1, D), pos_embed (1, T, D) or None.
    VJP (manual.py's ``embed_backward``; docs/backward.md §2, §3):
    W̄ = Σ patchesᵀ t̄[:, 1:],  b̄ = Σ_{batch, patches} t̄[:, 1:],  cls̄ = Σ_batch t̄[:, 0],
    pos̄ = Σ_batch t̄;  images̄ = unpatchify(t̄[:, 1:] Wᵀ), computed only when asked for.
    Arguments are the caller's to check (:func:`embed`).
    """
    B, C, H, W_ = images.shape
    D = weight.shape[1]
    # the patch product runs over all B·T token rows: the CLS slots are zero patches in it
    flops = 2.0 * B * ((H // patch_size) * (W_ // patch_size) + 1) * weight.shape[0] * D
    with _one_blas_thread_above(flops):
        t, cache = embed_forward(images, weight, bias, cls_token, pos_embed, patch_size)
    has_pos = pos_embed is not None

    def gradients(g, needed):
        with _one_blas_thread_above(flops):
            return [images_gradient(g) if needed[0] else None,
                    *embed_backward(g.reshape(-1, D), cache, B, has_pos)]

    def images_gradient(g):
        # the forward's layout backwards: its patch rows are in (c, p1, p2) order, against
        # the weight's rows permuted to match (embed_forward)
        P = patch_size
        w_cpp = weight.reshape(P, P, C, D).transpose(2, 0, 1, 3).reshape(C * P * P, D)
        rows = (g.reshape(B, -1, D)[:, 1:] @ w_cpp.T)  # (B, N, C·P·P); the CLS row has no patch
        grid = rows.reshape(B, H // P, W_ // P, C, P, P).transpose(0, 3, 1, 4, 2, 5)
        return grid.reshape(B, C, H, W_)

    return t.reshape(B, -1, D), mg.JointVJP(gradients)


def embed(model, x: Tensor) -> Tensor:
    """``model.tokens(x)`` of a fused TinyViT: x (B, C, H, W) in the model's dtype, sides
    multiples of the patch size, as many patches as the position embeddings have."""
    data = x.data
    _check_input("TinyViT", data, model.dtype, 4, "(B, C, H, W) images")
    B, C, H, W = data.shape
    P, K, pos = model.patch_size, model.patch_embed.weight.data.shape[0], model.pos_embed
    T = (H // P) * (W // P) + 1
    if B == 0 or H % P or W % P or P * P * C != K or (pos is not None and pos.data.shape[1] != T):
        raise ValueError(f"TinyViT x: got shape {data.shape}; expected B >= 1 images of "
                         f"{K // (P * P)} channels with sides multiples of {P}"
                         + ("" if pos is None else f" making {pos.data.shape[1] - 1} patches"))
    params = [model.patch_embed.weight, model.patch_embed.bias, model.cls_token]
    if pos is not None:
        params.append(pos)
    return apply_unchecked(patch_tokens, [x, *params], patch_size=P)


# ---- one encoder block ------------------------------------------------------------------------
@mg.op(name="encoder_block", arrays=11)
def encoder_block(t, norm1_w, norm1_b, qkv_w, proj_w, norm2_w, norm2_b, fc1_w, fc1_b, fc2_w,
                  fc2_b, *, num_heads: int):
    """(B, T, D) -> (B, T, D):  t1 = t + attn(LN1(t));  out = t1 + mlp(LN2(t1)).

    LN(x) = x̂ ⊙ w + b (population variance, eps 1e-5); attn(h) = MHA(h W_qkv) W_o with
    ``num_heads`` heads, no mask; mlp(h) = GELU_tanh(h W1 + b1) W2 + b2. Weights (in, out):
    qkv (D, 3D), proj (D, D), fc1 (D, F), fc2 (F, D); norms and biases (D,) or (F,).
    VJP: manual.py's ``block_backward`` (docs/backward.md §6, §9, §10, §12), run once per
    backward pass for all eleven inputs. Arguments are the caller's to check (:func:`run_block`).
    """
    B, T, D = t.shape
    flops = largest_product(B, T, D, fc1_w.shape[1], num_heads)
    with _one_blas_thread_above(flops):
        out, cache = block_forward(t.reshape(B * T, D), (norm1_w, norm1_b, qkv_w, proj_w,
                                                          norm2_w, norm2_b, fc1_w, fc1_b, fc2_w,
                                                          fc2_b), B, num_heads)

    def gradients(g, needed):
        # (block_backward leaves the cache as it was: it serves any number of passes)
        with _one_blas_thread_above(flops):
            dt, grads = block_backward(g.reshape(B * T, D), cache, B, num_heads)
        return [dt.reshape(B, T, D)] + grads

    return out.reshape(B, T, D), mg.JointVJP(gradients)


def largest_product(B: int, T: int, D: int, hidden: int, num_heads: int) -> float:
    """FLOPs (2·m·n·k) of the block's largest single matrix product: the token products
    (M, D) @ (D, max(3D, F)), or, on long sequences, one head's attention products
    (T, d) @ (d, T) and (T, T) @ (T, d), each its own BLAS call, M = B·T, d = D / heads."""
    return max(2.0 * B * T * D * max(3 * D, hidden), 2.0 * T * T * (D // num_heads))


def run_block(block, t) -> Tensor:
    """``block(t)`` of a fused ``Block``: t (B, T, D) in the block's dtype, a Tensor or an
    array (a constant, as every op takes one)."""
    if not isinstance(t, Tensor):
        t = Tensor(np.asarray(t))
    dtype = block.norm1.weight.data.dtype
    _check_input("Block", t.data, dtype, 3, "(B, T, D) tokens")
    D = block.mlp.fc1.weight.data.shape[0]
    B, T, width = t.data.shape
    if width != D or B == 0 or T == 0:
        raise ValueError(f"Block x: got shape {t.data.shape}; expected (B, T, {D}) tokens with "
                         "B, T >= 1")
    for norm in (block.norm1, block.norm2):
        if norm.eps != LN_EPS:
            raise ValueError(f"Block fused: a norm's eps is {norm.eps!r}; the fused block "
                             f"computes with {LN_EPS} (build it with fused=False)")
    attn, mlp = block.attn, block.mlp
    params = (block.norm1.weight, block.norm1.bias, attn.qkv.weight, attn.proj.weight,
              block.norm2.weight, block.norm2.bias, mlp.fc1.weight, mlp.fc1.bias,
              mlp.fc2.weight, mlp.fc2.bias)  # manual.BLOCK_PARAMS' order
    return apply_unchecked(encoder_block, [t, *params], num_heads=attn.num_heads)


# ---- the head ---------------------------------------------------------------------------------
@mg.op(name="cls_head", arrays=5)
def cls_head(t, norm_weight, norm_bias, head_weight, head_bias):
    """t (B, T, D) -> logits (B, K) = LN(t[:, 0]) W + b.

    LN(x) = x̂ ⊙ w + b with x̂ = (x - μ)/√(σ² + eps) over the D features (population
    variance, eps 1e-5); head_weight (D, K), head_bias (K,).
    VJP (docs/backward.md §9, §3): c̄ = logits̄ Wᵀ, W̄ = cᵀ logits̄, b̄ = Σ_batch logits̄;
    the LayerNorm's x̄, w̄, b̄ from c̄; t̄ is x̄ in the CLS rows and 0 elsewhere.
    Arguments are the caller's to check (:func:`head`).
    """
    B, T, D = t.shape
    flops = 2.0 * B * D * head_weight.shape[1]
    cls = t[:, 0]  # a strided view of the op's input: layer_norm_forward only reads it
    c, ln = layer_norm_forward(cls, norm_weight, norm_bias)
    with _one_blas_thread_above(flops):
        logits = head_forward(c, head_weight, head_bias)

    def gradients(g, needed):
        with _one_blas_thread_above(flops):
            dc, dw, db = head_backward(g, c, head_weight)
        # layer_norm_backward overwrites no cached buffer of its own: one pass serves
        # any number of backward passes
        dcls, dnw, dnb = layer_norm_backward(dc, ln)
        dt = np.zeros((B, T, D), dtype=t.dtype)
        dt[:, 0] = dcls
        return [dt, dnw, dnb, dw, db]

    return logits, mg.JointVJP(gradients)


def head(model, t: Tensor) -> Tensor:
    """``model.head(model.norm(t[:, 0]))`` of a fused TinyViT: t (B, T, D) from its encoder."""
    if model.norm.eps != LN_EPS:
        raise ValueError(f"TinyViT fused: the final norm's eps is {model.norm.eps!r}; the fused "
                         f"head computes with {LN_EPS} (build the model with fused=False)")
    params = (model.norm.weight, model.norm.bias, model.head.weight, model.head.bias)
    return apply_unchecked(cls_head, [t, *params])
