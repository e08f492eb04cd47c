"""Cases for minigrad/ops/attention.py: self_attention (against a loop over heads and
examples), and scaled_dot_product_attention: L != S, broadcast leading
dimensions, bool and additive masks (the additive one differentiated too), causal, a mask
with causal, and fully masked rows. The reference loops over the leading dimensions and query rows in NumPy.
Inputs from this module's own generator."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import add_case, torch_table
from .base import rn as shared_rn

_rng = np.random.default_rng(3232)
rn = partial(helpers.rn, _rng)


def np_sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    """Row by row: the keys a query may read, their softmax, the weighted sum of values;
    a row with no key to read is 0."""
    L, E = q.shape[-2:]
    S, Ev = v.shape[-2:]
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    s = 1 / np.sqrt(E) if scale is None else scale
    q, k, v = (np.broadcast_to(x, batch + x.shape[-2:]) for x in (q, k, v))
    m = None if mask is None else np.broadcast_to(mask, batch + (L, S))
    out = np.zeros(batch + (L, Ev))
    for b in np.ndindex(batch):
        for i in range(L):
            scores = s * (k[b] @ q[b][i])
            allowed = np.ones(S, bool)
            if m is not None and m.dtype == bool:
                allowed = m[b][i].copy()
            elif m is not None:
                scores = scores + m[b][i]
                allowed = np.isfinite(scores)
            if is_causal:  # with a mask too: both apply
                allowed &= np.arange(S) <= i
            if not allowed.any():
                continue
            z = np.exp(scores[allowed] - scores[allowed].max())
            out[b][i] = (z / z.sum()) @ v[b][allowed]
    return out


_bool_mask = _rng.random((3, 5)) > 0.4
_bool_mask[:, 0] = True  # every row keeps a key here
_dead = _bool_mask.copy()
_dead[1] = False  # row 1 reads nothing
_neg_inf = np.where(_dead, 0.0, -np.inf)

add_case("scaled_dot_product_attention", "no-mask-L3-S5",
         F.scaled_dot_product_attention, np_sdpa, rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2))
add_case("scaled_dot_product_attention", "heads-bcast-kv",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3),
         lambda q, k, v: np_sdpa(q, k, v, scale=0.3),
         rn(2, 2, 4, 3), rn(1, 2, 3, 3), rn(2, 1, 3, 5))
add_case("scaled_dot_product_attention", "bool-mask",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, _bool_mask),
         lambda q, k, v: np_sdpa(q, k, v, _bool_mask), rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2))
add_case("scaled_dot_product_attention", "bool-mask-dead-row",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=_dead),
         lambda q, k, v: np_sdpa(q, k, v, _dead), rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2))
add_case("scaled_dot_product_attention", "float-mask-differentiated",
         F.scaled_dot_product_attention, np_sdpa,
         rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2), rn(3, 5))
add_case("scaled_dot_product_attention", "float-mask-per-batch",
         F.scaled_dot_product_attention, np_sdpa,
         rn(2, 4, 3), rn(2, 2, 3), rn(2, 2, 3), rn(2, 1, 2))
add_case("scaled_dot_product_attention", "float-mask-neg-inf-dead-row",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, _neg_inf),
         lambda q, k, v: np_sdpa(q, k, v, _neg_inf), rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2))
for L, S in [(4, 4), (3, 5), (5, 2)]:
    add_case("scaled_dot_product_attention", f"causal-L{L}-S{S}",
             lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
             lambda q, k, v: np_sdpa(q, k, v, is_causal=True),
             rn(2, L, 3), rn(2, S, 3), rn(2, S, 4))

# a mask with is_causal: a key is read where the mask keeps it and j <= i
_keep_lower = _rng.random((2, 4, 4)) > 0.4
_keep_lower[:, :, 0] = True
add_case("scaled_dot_product_attention", "bool-mask-and-causal",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, _keep_lower, is_causal=True),
         lambda q, k, v: np_sdpa(q, k, v, _keep_lower, is_causal=True),
         rn(2, 4, 3), rn(2, 4, 3), rn(2, 4, 2))
add_case("scaled_dot_product_attention", "float-mask-and-causal-differentiated",
         lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m, is_causal=True),
         lambda q, k, v, m: np_sdpa(q, k, v, m, is_causal=True),
         rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2), rn(3, 5))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: no mask, a bool mask, causal; every mask kind, fully masked
    rows and float32 are in ops/test_attention.py."""
    TF = torch.nn.functional
    rng = np.random.default_rng(3235)

    rn = partial(helpers.rn, rng)

    keep = rng.random((3, 5)) > 0.4
    keep[:, 0] = True  # every query reads a key
    sdpa, t_sdpa = F.scaled_dot_product_attention, TF.scaled_dot_product_attention
    add("scaled_dot_product_attention", "plain-L3-S5", sdpa, t_sdpa,
        rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2))
    add("scaled_dot_product_attention", "bool-mask", lambda q, k, v: sdpa(q, k, v, keep),
        lambda q, k, v: t_sdpa(q, k, v, attn_mask=torch.as_tensor(keep)),
        rn(2, 2, 3, 4), rn(2, 2, 5, 4), rn(2, 2, 5, 3))
    add("scaled_dot_product_attention", "causal-scale",
        lambda q, k, v: sdpa(q, k, v, is_causal=True, scale=0.4),
        lambda q, k, v: t_sdpa(q, k, v, is_causal=True, scale=0.4),
        rn(2, 4, 3), rn(2, 4, 3), rn(2, 4, 2))
    # torch 2.13 applies a mask and is_causal together in its CPU flash kernel (4-d inputs,
    # E = Ev, a mask without gradient); its math kernel refuses the pair
    add("scaled_dot_product_attention", "bool-mask-and-causal",
        lambda q, k, v: sdpa(q, k, v, keep, is_causal=True),
        lambda q, k, v: t_sdpa(q, k, v, attn_mask=torch.as_tensor(keep), is_causal=True),
        rn(2, 2, 3, 4), rn(2, 2, 5, 4), rn(2, 2, 5, 4))


# ---- self_attention (inputs from the shared generator) ----------------------------------
def np_self_attention(qkv, num_heads, scale=None):
    """Head by head and example by example, with loops: the reference for the fused op."""
    B, T, width = qkv.shape
    D = width // 3
    d = D // num_heads
    s = 1 / np.sqrt(d) if scale is None else scale
    out = np.zeros((B, T, D))
    for b in range(B):
        for h in range(num_heads):
            cols = slice(h * d, (h + 1) * d)
            q, k, v = (qkv[b, :, i * D:(i + 1) * D][:, cols] for i in range(3))
            scores = s * q @ k.T
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            out[b, :, cols] = (e / e.sum(axis=1, keepdims=True)) @ v
    return out


for (B, T, D, H, scale) in [(2, 3, 2, 1, None), (2, 4, 6, 2, None), (1, 5, 6, 3, 0.7),
                            (3, 1, 4, 2, None)]:
    add_case("self_attention", f"B{B}-T{T}-D{D}-H{H}-s{scale}",
             lambda x, H=H, scale=scale: F.self_attention(x, H, scale=scale),
             lambda x, H=H, scale=scale: np_self_attention(x, H, scale), shared_rn(B, T, 3 * D))


@torch_table
def _torch_references_self_attention(torch, add):
    """Against PyTorch autograd: self_attention."""
    TF = torch.nn.functional
    rng = np.random.default_rng(9909)
    case = add  # float64

    rn = partial(helpers.rn, rng)

    def _torch_self_attention(qkv, num_heads, scale=None):
        B, T, width = qkv.shape
        D = width // 3
        q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, T, num_heads, -1).transpose(1, 2)
                   for i in range(3))
        o = TF.scaled_dot_product_attention(q, k, v, scale=scale)  # (B, H, T, d)
        return o.transpose(1, 2).reshape(B, T, D)


    for (B, T, D, H, scale) in [(2, 4, 6, 2, None), (3, 5, 6, 3, 0.3)]:
        case("self_attention", f"B{B}-T{T}-D{D}-H{H}-s{scale}",
             lambda x, H=H, scale=scale: F.self_attention(x, H, scale=scale),
             lambda x, H=H, scale=scale: _torch_self_attention(x, H, scale), rn(B, T, 3 * D))


# ---- scaled_dot_product_attention: dropout_p and enable_gqa (docs/backward.md §39) ------------
def np_sdpa_heads(q, k, v, mask=None, is_causal=False, scale=None, p=0.0, seed=None):
    """Head by head and row by row: query head h reads key head h // (H_q/H_k) and value
    head h // (H_q/H_v) (axis -3 holds the heads); with p > 0 each weight is kept where
    ``np.random.default_rng(seed).random(scores' shape) >= p`` and scaled by 1/(1 - p)."""
    (Hq, L, E), Hk, Hv, (S, Ev) = q.shape[-3:], k.shape[-3], v.shape[-3], v.shape[-2:]
    batch = np.broadcast_shapes(q.shape[:-3], k.shape[:-3], v.shape[:-3])
    shape = batch + (Hq, L, S)
    kept = np.ones(shape) if not p else \
        (np.random.default_rng(seed).random(shape) >= p) / (1 - p)
    s = 1 / np.sqrt(E) if scale is None else scale
    q, k, v = (np.broadcast_to(x, batch + x.shape[-3:]) for x in (q, k, v))
    m = None if mask is None else np.broadcast_to(mask, shape)
    out = np.zeros(batch + (Hq, L, Ev))
    for b in np.ndindex(batch):
        for h in range(Hq):
            keys, values = k[b][h // (Hq // Hk)], v[b][h // (Hq // Hv)]
            for i in range(L):
                scores = s * (keys @ q[b][h][i])
                allowed = np.ones(S, bool)
                if m is not None and m.dtype == bool:
                    allowed = m[b][h][i].copy()
                elif m is not None:
                    scores = scores + m[b][h][i]
                    allowed = np.isfinite(scores)
                if is_causal:
                    allowed &= np.arange(S) <= i
                if not allowed.any():
                    continue
                w = np.zeros(S)
                w[allowed] = np.exp(scores[allowed] - scores[allowed].max())
                out[b][h][i] = (w / w.sum() * kept[b][h][i]) @ values
    return out


_some_keys = _rng.random((3, 5)) > 0.5
_some_keys[:, 1] = True
for label, kw, shapes in [
    ("dropout-p0.3", dict(dropout_p=0.3, rng=7), [(2, 3, 4), (2, 5, 4), (2, 5, 3)]),
    ("dropout-p0.6-L5-S2", dict(dropout_p=0.6, rng=8, scale=0.5),
     [(1, 2, 5, 3), (1, 2, 2, 3), (1, 2, 2, 4)]),
    ("dropout-causal-float-mask", dict(dropout_p=0.5, rng=11, is_causal=True),
     [(2, 2, 4, 3), (2, 2, 4, 3), (2, 2, 4, 2), (4, 4)]),
    ("gqa-Hq4-Hk2", dict(enable_gqa=True), [(2, 4, 3, 5), (2, 2, 6, 5), (2, 2, 6, 3)]),
    ("gqa-Hk1-Hv2-bcast", dict(enable_gqa=True), [(3, 4, 2, 5), (1, 1, 6, 5), (2, 6, 3)]),
    ("gqa-Hk3-Hv2-causal", dict(enable_gqa=True, is_causal=True),
     [(1, 6, 4, 3), (1, 3, 3, 3), (1, 2, 3, 2)]),
    ("gqa-head-mask-differentiated", dict(enable_gqa=True), [(2, 4, 3, 5), (2, 2, 6, 5),
                                                             (2, 1, 6, 3), (4, 1, 6)]),
    ("gqa-dropout-bool-mask", dict(enable_gqa=True, dropout_p=0.25, rng=3, mask=_some_keys),
     [(2, 6, 3, 4), (2, 3, 5, 4), (2, 2, 5, 3)]),
]:
    ref_kw = {"p" if key == "dropout_p" else "seed" if key == "rng" else key: val
              for key, val in kw.items() if key != "enable_gqa"}
    add_case("scaled_dot_product_attention", label,
             lambda *t, kw=kw: F.scaled_dot_product_attention(*t, **kw),
             lambda *a, ref_kw=ref_kw: np_sdpa_heads(*a, **ref_kw), *(rn(*s) for s in shapes))


@torch_table
def _torch_references_dropout_gqa(torch, add):
    """Against PyTorch autograd: enable_gqa with torch's own; dropout through a composed torch
    reference that multiplies the softmax by the mask D drawn here from the same seed (torch's
    generator cannot be matched)."""
    TF = torch.nn.functional
    rng = np.random.default_rng(3239)
    rn = partial(helpers.rn, rng)
    sdpa, t_sdpa = F.scaled_dot_product_attention, TF.scaled_dot_product_attention
    dtypes = (np.float64, np.float32)
    for label, kw, shapes in [
        ("gqa-Hq4-Hk2", {}, [(2, 4, 3, 5), (2, 2, 6, 5), (2, 2, 6, 3)]),
        ("gqa-Hq6-Hk3-Hv2-causal", {"is_causal": True},
         [(1, 6, 4, 3), (1, 3, 4, 3), (1, 2, 4, 2)]),
        ("gqa-Hk1-scale", {"scale": 0.3}, [(2, 4, 3, 5), (2, 1, 6, 5), (2, 1, 6, 3)]),
    ]:
        add("scaled_dot_product_attention", label,
            lambda *t, kw=kw: sdpa(*t, enable_gqa=True, **kw),
            lambda *t, kw=kw: t_sdpa(*t, enable_gqa=True, **kw),
            *(rn(*s) for s in shapes), dtypes=dtypes)

    def composed(q, k, v, mask, p, kept, is_causal=False):
        """torch's documented reference of SDPA, with a given dropout mask."""
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], -3)
        v = v.repeat_interleave(q.shape[-3] // v.shape[-3], -3)
        scores = q @ k.transpose(-1, -2) / np.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores + mask
        if is_causal:
            scores = scores.masked_fill(~torch.ones(scores.shape[-2:]).tril().bool(),
                                        float("-inf"))
        w = torch.softmax(scores, -1) * torch.as_tensor(kept, dtype=q.dtype) / (1 - p)
        return w @ v

    for label, p, seed, shapes, causal in [
        ("dropout-p0.4", 0.4, 21, [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)], False),
        ("dropout-gqa-float-mask-causal", 0.3, 22,
         [(2, 4, 4, 3), (2, 2, 4, 3), (2, 2, 4, 2), (4, 4)], True),
    ]:
        q_shape, k_shape = shapes[0], shapes[1]
        kept = np.random.default_rng(seed).random(q_shape[:-1] + k_shape[-2:-1]) >= p
        add("scaled_dot_product_attention", label,
            lambda *t, p=p, seed=seed, causal=causal: sdpa(
                *t[:3], *t[3:], is_causal=causal, enable_gqa=True, dropout_p=p, rng=seed),
            lambda *t, p=p, kept=kept, causal=causal: composed(
                *t[:3], t[3] if len(t) > 3 else None, p, kept, causal),
            *(rn(*s) for s in shapes), dtypes=dtypes)
