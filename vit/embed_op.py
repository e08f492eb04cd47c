"""TinyViT's embedding, patches -> tokens, as ONE recorded minigrad op for small models.

The composed path is four ops (``patch_embed``'s linear, ``broadcast_to`` of the CLS token,
``concatenate`` and the position add); ``patch_tokens`` is vit/manual.py's ``embed_forward``
and ``embed_backward`` behind one node. When and why: vit/fusion.py.

Shapes: B images of C channels, H = W pixels, patch side P, N = (H/P)² patches, T = N + 1
tokens, D features.
"""
from __future__ import annotations

import minigrad as mg

from .fusion import floating_dtype_of, small_enough
from .manual import embed_backward, embed_forward

__all__ = ["patch_tokens", "fusable"]


@mg.op(name="patch_tokens", arrays=5)
def patch_tokens(images, weight, bias, cls_token, pos_embed=None, *, patch_size: int):
    """images (B, C, H, W) -> t (B, T, D):  t[:, 0] = cls;  t[:, 1:] = patchify(images) W + b;
    t += pos (when ``pos_embed`` is not None).

    weight (P·P·C, D) with rows in patchify's (p1, p2, c) order, bias (D,), cls_token
    (1, 1, D), pos_embed (1, T, D) or None.
    VJP (vit/manual.py's ``embed_backward``; docs/backward.md §2, §3):
    W̄ = Σ patchesᵀ t̄[:, 1:],  b̄ = Σ_{batch, patches} t̄[:, 1:],  cls̄ = Σ_batch t̄[:, 0],
    pos̄ = Σ_batch t̄;  images̄ = unpatchify(t̄[:, 1:] Wᵀ), computed only when asked for.
    Arguments are the caller's to check (``fusable``).
    """
    B, C, H, W_ = images.shape
    t, cache = embed_forward(images, weight, bias, cls_token, pos_embed, patch_size)
    D = t.shape[1]
    has_pos = pos_embed is not None

    def gradients(g, needed):
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


def fusable(model, x) -> bool:
    """True when ``model`` (a TinyViT) may embed the images ``x`` (a Tensor) as
    ``patch_tokens``: x is a batch of B >= 1 images whose channels and patch grid fit the
    model's weights (and position embeddings), shares the parameters' one dtype (float32 or
    float64), and the patch product and the tokens are small (vit/fusion.py). Whether x
    requires grad does not matter: the op differentiates the images too, so a model's values
    do not depend on it. Anything else takes the composed path, whose ops name what is wrong."""
    data = x.data
    if data.ndim != 4:
        return False
    B, C, H, W = data.shape
    P, (K, D), pos = model.patch_size, model.patch_embed.weight.data.shape, model.pos_embed
    T = (H // P) * (W // P) + 1
    if (B == 0 or H % P or W % P or P * P * C != K
            or pos is not None and pos.data.shape[1] != T):
        return False
    # the patch product runs over all B·T token rows: the CLS slots are zero patches in it
    if not small_enough(2.0 * B * T * P * P * C * D, B * T * D):
        return False
    return floating_dtype_of(data, embedding_parameters(model)) is not None


def embedding_parameters(model) -> list:
    """The embedding's parameters that exist: weight, bias, CLS token and position embeddings."""
    params = [model.patch_embed.weight, model.patch_embed.bias, model.cls_token]
    return params if model.pos_embed is None else params + [model.pos_embed]
