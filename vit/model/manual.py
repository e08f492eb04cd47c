"""TinyViT's forward and backward pass written out by hand: no engine, only NumPy.

This is the whole model's backward pass, to be read next to docs/backward.md (the attention
stage in vit/model/manual_attention.py), and the speed-of-light baseline the engine is measured
against (benchmarks/train_step.py).
Each stage is a pair of functions: ``*_forward`` returns its output and a small cache of
what the backward needs; ``*_backward`` maps the output's gradient to the input's gradient
and the stage's parameter gradients. A backward writes only into buffers of its own: its
cache stays as it was, so it may run again on the same cache (a second backward pass).

Shapes: B images of C channels and H x W pixels, patch side P, N = (H/P)(W/P) patches,
T = N + 1 tokens, D features, h heads of width d = D/h, F hidden MLP features, K classes,
M = B*T token rows. Tokens are kept as 2-D (M, D) arrays, so every token @ weight product
is one GEMM, and the weight gradients Xᵀ G sum over the batch inside that same GEMM.

The only other code used is minigrad's row-wise reductions (``row_max``, ``row_sum``,
``column_sum``: NumPy calls that avoid NumPy's per-row cost on short rows), no graph and no op.

dtype: the computation runs in the parameters' dtype (images are cast to it); every constant
is a Python float, so float32 stays float32 (a NumPy float64 scalar would promote).
Buffers are reused in place wherever the value they hold is no longer needed.

    loss, grads = loss_and_grads(params, images, targets, patch_size=4, num_heads=2)
    sgd_step(params, grads, lr=0.1)

Depth: the encoder blocks are found from the parameter names, ``block.*`` for one block (the
contract's model) or ``blocks.0.*`` ... ``blocks.{L-1}.*`` for L > 1 (as ``TinyViT(depth=L)``
names them); the forward runs them in order and the backward in reverse, each block's
backward the same function.
"""
from __future__ import annotations

import numpy as np

from minigrad.ops.activations import GELU_C, GELU_K
from minigrad.runtime.rowwise import column_sum, row_sum

from .config import BLOCK_PARAMS, LN_EPS, MAX_DEPTH, block_prefixes
from .manual_attention import attention_backward, attention_forward

__all__ = ["loss_and_grads", "sgd_step", "forward", "param_names", "PARAM_NAMES"]

def param_names(depth: int = 1) -> tuple[str, ...]:
    """Every parameter name of a TinyViT of ``depth`` blocks (``pos_embed`` may be absent)."""
    blocks = [prefix + name for prefix in block_prefixes(depth) for name in BLOCK_PARAMS]
    return ("patch_embed.weight", "patch_embed.bias", "cls_token", "pos_embed", *blocks,
            "norm.weight", "norm.bias", "head.weight", "head.bias")


PARAM_NAMES = param_names(1)


# ---- patch embedding, CLS token, position embedding ------------------------------------------
def embed_forward(images, w, b, cls_token, pos_embed, patch_size):
    """images (B, C, H, W) -> tokens t (M, D), M = B*T, T = N + 1.

    patches = patchify(images)                 (B, N, P·P·C), flattened as (p1, p2, c)
    t[:, 0]  = cls_token                       (the same (D,) vector for every image)
    t[:, 1:] = patches @ W + b                 W (P·P·C, D), b (D,)
    t       += pos_embed                       (1, T, D), if present

    Two layout choices, the same products:
    - the patches are gathered in (c, p1, p2) order, i.e. whole runs of P contiguous pixels
      (the spec's (p1, p2, c) order gathers single pixels, several times slower on RGB
      images), and W's rows are permuted to that order to match (a (P·P·C, D) copy; none
      for C = 1);
    - they are written into a (B, T, P·P·C) buffer whose row 0 (the CLS slot) is a zero
      patch, so one (M, P·P·C) @ (P·P·C, D) GEMM lands directly in t's rows, and the
      backward's ``padded.T @ t̄`` ignores the CLS rows without slicing them out.
    Cache: (padded patches, C, P); the images need no gradient.
    """
    B, C, H, W_ = images.shape
    P, D = patch_size, w.shape[1]
    gh, gw = H // P, W_ // P
    T = gh * gw + 1
    padded = np.empty((B, T, C * P * P), dtype=w.dtype)
    padded[:, 0] = 0.0
    grid = padded[:, 1:].reshape(B, gh, gw, C, P, P)  # a view: it only splits axes
    grid[...] = images.reshape(B, C, gh, P, gw, P).transpose(0, 2, 4, 1, 3, 5)  # casts too
    padded = padded.reshape(B * T, C * P * P)
    w_cpp = w.reshape(P, P, C, D).transpose(2, 0, 1, 3).reshape(C * P * P, D)
    t = padded @ w_cpp  # (M, D); CLS rows are 0
    t3 = t.reshape(B, T, D)
    t3[:, 1:] += b
    t3[:, 0] = cls_token.reshape(D)
    if pos_embed is not None:
        t3 += pos_embed
    return t, (padded, C, P)


def embed_backward(dt, cache, batch, has_pos):
    """t̄ (M, D) -> (W̄, b̄, cls̄, pos̄): the patch-embedding weights and the two embeddings.

    W̄ = patchesᵀ t̄[:, 1:]  (summed over batch and patches: one GEMM, whose zero CLS rows
          add nothing; computed in (c, p1, p2) row order and permuted back to (p1, p2, c))
    b̄ = Σ_{batch, patches} t̄[:, 1:]
    cls̄ = Σ_batch t̄[:, 0]  (1, 1, D): the token is shared by every image, so its
          gradients accumulate over the batch
    pos̄ = Σ_batch t̄       (1, T, D), likewise (docs/backward.md §2, undoing broadcasting)
    """
    padded, C, P = cache
    D = dt.shape[1]
    dt3 = dt.reshape(batch, -1, D)
    dw = (padded.T @ dt).reshape(C, P, P, D).transpose(1, 2, 0, 3).reshape(P * P * C, D)
    db = column_sum(dt3[:, 1:].reshape(-1, D))
    dcls = column_sum(dt3[:, 0]).reshape(1, 1, D)
    dpos = np.add.reduce(dt3, axis=0, keepdims=True) if has_pos else None  # (np.sum's bits)
    return dw, db, dcls, dpos


# ---- LayerNorm ---------------------------------------------------------------------------------
def layer_norm_forward(x, w, b):
    """x (M, D) -> y = x̂ ⊙ w + b, x̂ = (x - μ) r, r = 1/√(σ² + eps) per row.

    μ, σ² are the mean and the population variance over the D features; eps = 1e-5.
    Row sums are ``row_sum``'s matrix-vector products (faster than ``mean(axis=-1)`` over a
    short last axis), divided by D afterwards: a constant row then has x - μ = 0 exactly
    (1/D rounded first would leave residues). Cache: (x̂ (M, D), r (M, 1), w).
    """
    D = x.shape[1]
    mean = row_sum(x)
    mean /= D
    xhat = x - mean
    r = row_sum(np.square(xhat))
    r /= D  # σ²
    r += LN_EPS
    np.sqrt(r, out=r)
    np.divide(1.0, r, out=r)
    xhat *= r
    y = xhat * w
    y += b
    return y, (xhat, r, w)


def layer_norm_backward(g, cache):
    """ȳ (M, D) -> (x̄, w̄, b̄):

    x̄ = r · (ĝ - mean(ĝ) - x̂ ⊙ mean(ĝ ⊙ x̂)),  ĝ = ȳ ⊙ w  (means over the D features)
    w̄ = Σ_rows ȳ ⊙ x̂,   b̄ = Σ_rows ȳ

    (docs/backward.md §9). The two row means are matrix-vector products,
    mean(ĝ) = (ȳ @ w) / D and mean(ĝ ⊙ x̂) = ((ȳ ⊙ x̂) @ w) / D, reusing ȳ ⊙ x̂ from w̄.
    """
    xhat, r, w = cache
    D = g.shape[-1]
    gx = g * xhat
    dw = column_sum(gx)
    db = column_sum(g)
    m2 = (gx @ w)[:, None]
    m2 /= D
    m1 = (g @ w)[:, None]
    m1 /= D
    dx = np.multiply(g, w, out=gx)  # ĝ, reusing the buffer
    dx -= m1
    dx -= xhat * m2
    dx *= r
    return dx, dw, db


# ---- MLP with tanh GELU ------------------------------------------------------------------------
def mlp_forward(h, w1, b1, w2, b2):
    """h (M, D) -> out = GELU(z) @ W2 + b2,  z = h @ W1 + b1  (M, F).

    GELU(z) = ½ z (1 + τ),  τ = tanh(√(2/π) (z + 0.044715 z³)).
    Cache: (h, z, τ, GELU(z), w1, w2).
    """
    z = h @ w1
    z += b1
    tau = z * z
    tau *= GELU_K
    tau += 1.0
    tau *= z
    tau *= GELU_C
    np.tanh(tau, out=tau)
    a = tau + 1.0
    a *= z
    a *= 0.5
    out = a @ w2
    out += b2
    return out, (h, z, tau, a, w1, w2)


def mlp_backward(g, cache):
    """out̄ (M, D) -> (h̄, W̄1, b̄1, W̄2, b̄2):

    W̄2 = GELU(z)ᵀ out̄,  b̄2 = Σ_rows out̄,  ā = out̄ W2ᵀ
    z̄ = ā ⊙ GELU'(z),  GELU'(z) = ½ (1 + τ) + ½ √(2/π) z (1 - τ²) (1 + 3 · 0.044715 z²)
         (docs/backward.md §10, where τ is called t)
    W̄1 = hᵀ z̄,  b̄1 = Σ_rows z̄,  h̄ = z̄ W1ᵀ
    """
    h, z, tau, a, w1, w2 = cache
    dw2 = a.T @ g
    db2 = column_sum(g)
    dz = g @ w2.T
    # GELU'(z) in new buffers: the cache stays as it was (vit/model/fused.py's backward may
    # run again on it)
    slope = np.multiply(tau, tau)
    np.subtract(1.0, slope, out=slope)  # 1 - τ²
    slope *= z
    slope *= 0.5 * GELU_C
    cubic = np.multiply(z, z)
    cubic *= 3.0 * GELU_K
    cubic += 1.0
    slope *= cubic
    half = np.add(tau, 1.0, out=cubic)  # (cubic's buffer: one (M, F) array fewer at a time)
    half *= 0.5
    slope += half
    dz *= slope
    dw1 = h.T @ dz
    db1 = column_sum(dz)
    return dz @ w1.T, dw1, db1, dw2, db2


# ---- classifier head and cross-entropy ---------------------------------------------------------
def head_forward(c, w, b):
    """CLS features c (B, D) -> logits = c @ W + b (B, K)."""
    return c @ w + b


def head_backward(g, c, w):
    """logits̄ (B, K) -> (c̄ = logits̄ Wᵀ, W̄ = cᵀ logits̄, b̄ = Σ_batch logits̄)."""
    return g @ w.T, c.T @ g, np.add.reduce(g, axis=0)  # (np.sum without its wrapper)


def cross_entropy_forward(logits, targets):
    """Mean over the batch of -Σ_k q_k log softmax(logits)_k  ->  (loss, cache).

    q is one-hot(targets) for integer labels (B,), or the soft targets (B, K) themselves.
    log softmax is computed as (logits - max) - log Σ exp(logits - max).
    """
    B = logits.shape[0]
    lsm = logits - logits.max(axis=1, keepdims=True)
    lsm -= np.log(np.exp(lsm).sum(axis=1, keepdims=True))
    if targets.dtype.kind in "iu":
        loss = -float(lsm[np.arange(B), targets].sum()) / B
    else:
        loss = -float(np.sum(targets * lsm)) / B
    return loss, (lsm, targets)


def cross_entropy_backward(cache):
    """logits̄ = (softmax(logits) Σ_k q_k - q) / B  (= (softmax - onehot) / B for labels;
    docs/backward.md §11: Σ_k q_k is kept for soft targets that do not sum to 1)."""
    lsm, targets = cache
    B = lsm.shape[0]
    p = np.exp(lsm)
    if targets.dtype.kind in "iu":
        p[np.arange(B), targets] -= 1.0
    else:
        p *= targets.sum(axis=1, keepdims=True)
        p -= targets
    p /= B
    return p


# ---- the whole model ---------------------------------------------------------------------------
def _depth(params) -> int:
    """The number of encoder blocks ``params`` names: 1 for ``block.*``, L for ``blocks.0.*``
    ... ``blocks.{L-1}.*``; a KeyError naming what is missing or mixed up otherwise."""
    if not hasattr(params, "keys"):
        raise TypeError(f"params: got {type(params).__name__}; expected a dict of name -> array")
    if any(k.startswith("block.") for k in params):
        if any(k.startswith("blocks.") for k in params):
            raise KeyError("params: both 'block.*' (one block) and 'blocks.<i>.*' names; "
                           "expected one scheme")
        return 1
    depth = 0
    while depth < MAX_DEPTH and f"blocks.{depth}.norm1.weight" in params:
        depth += 1
    return max(depth, 1)  # no blocks at all: the check of block. names reports them missing


def block_forward(t, weights, batch, num_heads):
    """One pre-norm block on the tokens t (M, D): t1 = t + attn(LN1(t)); t1 + mlp(LN2(t1)).
    ``weights``: the block's ten arrays in ``BLOCK_PARAMS`` order. Returns the block's output
    and its caches (ln1, attn, ln2, mlp)."""
    n1w, n1b, qkv, proj, n2w, n2b, fc1w, fc1b, fc2w, fc2b = weights
    h1, ln1 = layer_norm_forward(t, n1w, n1b)
    t1, attn = attention_forward(h1, qkv, proj, batch, num_heads)
    t1 += t  # residual
    h2, ln2 = layer_norm_forward(t1, n2w, n2b)
    t2, mlp = mlp_forward(h2, fc1w, fc1b, fc2w, fc2b)
    t2 += t1  # residual
    return t2, (ln1, attn, ln2, mlp)


def block_backward(dt2, cache, batch, num_heads):
    """The block's output gradient (M, D) -> (its input gradient, its ten parameters'
    gradients in ``BLOCK_PARAMS`` order). Each residual adds the gradient that skips the
    stage."""
    ln1, attn, ln2, mlp = cache
    dh2, dfc1w, dfc1b, dfc2w, dfc2b = mlp_backward(dt2, mlp)
    dt1, dn2w, dn2b = layer_norm_backward(dh2, ln2)
    dt1 += dt2  # residual
    dh1, dqkv, dproj = attention_backward(dt1, attn, batch, num_heads)
    dt, dn1w, dn1b = layer_norm_backward(dh1, ln1)
    dt += dt1  # residual
    return dt, [dn1w, dn1b, dqkv, dproj, dn2w, dn2b, dfc1w, dfc1b, dfc2w, dfc2b]


def forward(params, images, patch_size, num_heads):
    """Logits (B, K) and every stage's cache: (embedding, [each block's], final norm, CLS)."""
    p = params
    B = images.shape[0]
    t, emb = embed_forward(images, p["patch_embed.weight"], p["patch_embed.bias"],
                           p["cls_token"], p.get("pos_embed"), patch_size)
    blocks = []
    for prefix in block_prefixes(_depth(p)):
        t, cache = block_forward(t, [p[prefix + n] for n in BLOCK_PARAMS], B, num_heads)
        blocks.append(cache)
    cls = t.reshape(B, -1, t.shape[1])[:, 0]  # (B, D)
    c, lnf = layer_norm_forward(cls, p["norm.weight"], p["norm.bias"])
    logits = head_forward(c, p["head.weight"], p["head.bias"])
    return logits, (emb, blocks, lnf, c)


def loss_and_grads(params, images, targets, patch_size, num_heads):
    """Mean cross-entropy of TinyViT on (images, targets) and its gradient w.r.t. every parameter.

    params: NumPy arrays named as ``TinyViT.state_dict()`` (``pos_embed`` optional; any
    depth, see the module docstring), all of one floating dtype; images (B, C, H, W), cast to
    that dtype; targets: integer labels (B,) or soft targets (B, K). Returns (loss as a
    float, grads with the same keys, shapes and dtype as params). Nothing passed in is
    modified.
    """
    depth = _depth(params)
    missing = [n for n in param_names(depth) if n not in params and n != "pos_embed"]
    if missing:
        raise KeyError(f"loss_and_grads params: missing {', '.join(missing)}")
    dtype = params["patch_embed.weight"].dtype
    images = np.asarray(images)
    targets = np.asarray(targets)
    if targets.dtype.kind == "f":
        targets = targets.astype(dtype, copy=False)
    B = images.shape[0]
    logits, (emb, blocks, lnf, c) = forward(params, images, patch_size, num_heads)
    loss, ce = cross_entropy_forward(logits, targets)

    g = {}
    dlogits = cross_entropy_backward(ce)
    dc, g["head.weight"], g["head.bias"] = head_backward(dlogits, c, params["head.weight"])
    dcls, g["norm.weight"], g["norm.bias"] = layer_norm_backward(dc, lnf)
    M, D = emb[0].shape[0], dcls.shape[1]
    # Only the CLS rows reach the loss; the other rows' gradient is 0 here, and the last
    # block's backward still runs on all M rows (as the engine does), so both do the same work.
    dt = np.zeros((M, D), dtype=dtype)
    dt.reshape(B, -1, D)[:, 0] = dcls
    for prefix, cache in zip(reversed(block_prefixes(depth)), reversed(blocks), strict=True):
        dt, grads = block_backward(dt, cache, B, num_heads)
        g.update(zip([prefix + n for n in BLOCK_PARAMS], grads, strict=True))
    has_pos = params.get("pos_embed") is not None
    g["patch_embed.weight"], g["patch_embed.bias"], g["cls_token"], dpos = embed_backward(
        dt, emb, B, has_pos)
    if has_pos:
        g["pos_embed"] = dpos
    return loss, {k: g[k] for k in params if k in g}


def sgd_step(params, grads, lr):
    """Plain SGD in place: p -= lr · ∇p for every parameter (lr as a Python float keeps
    float32 parameters float32)."""
    lr = float(lr)
    for name, p in params.items():
        if name in grads:
            p -= lr * grads[name]
