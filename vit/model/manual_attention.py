"""Multi-head self-attention written out by hand for vit/model/manual.py: forward and backward on
(M, D) token rows, no engine (docs/backward.md §6 derives the softmax's VJP).

Shapes: B sequences of T tokens, M = B*T rows, D features, h heads of width d = D/h. Q, K
and V are (B, heads, T, d) views of one (M, 3D) product; A is (B, heads, T, T).
"""
from __future__ import annotations

import math

import numpy as np

from minigrad.runtime.rowwise import row_max, row_sum

__all__ = ["attention_forward", "attention_backward"]


def attention_forward(h, w_qkv, w_o, batch, num_heads):
    """h (M, D) -> out (M, D).

    [Q | K | V] = h @ W_qkv           (M, 3D), each cut into heads: (B, heads, T, d)
    S = (Q / √d) Kᵀ                   (B, heads, T, T); the scale is applied to Q
    A = softmax(S) over the keys      (rows sum to 1; the row max is subtracted first)
    O = A V                           (B, heads, T, d), heads merged back to (M, D)
    out = O @ W_o

    Q is scaled in place inside the qkv buffer (the backward needs only Q/√d), and O is
    written by the batched product straight into its merged (M, D) layout.
    Cache: (h, qkv, A, O, w_qkv, w_o, scale).
    """
    M, D = h.shape
    T = M // batch
    d = D // num_heads
    scale = 1.0 / math.sqrt(d)
    qkv = h @ w_qkv
    q, k, v = _split_heads(qkv, batch, T, num_heads, d)
    q *= scale
    s = q @ k.swapaxes(-1, -2)
    # NumPy's reductions pay per row, and these rows are short: row_max and row_sum do not
    # (docs/performance.md, "What dominates, and what was done")
    rows, per_row = s.reshape(-1, T), s.shape[:-1] + (1,)
    s -= row_max(rows).reshape(per_row)
    np.exp(s, out=s)
    s /= row_sum(rows).reshape(per_row)
    o = np.empty((M, D), dtype=h.dtype)
    np.matmul(s, v, out=_heads(o, batch, T, num_heads, d))
    return o @ w_o, (h, qkv, s, o, w_qkv, w_o, scale)


def attention_backward(g, cache, batch, num_heads):
    """out̄ (M, D) -> (h̄, W̄_qkv, W̄_o):

    W̄_o = Oᵀ out̄,   Ō = out̄ W_oᵀ (split into heads)
    Ā = Ō Vᵀ,  V̄ = Aᵀ Ō
    S̄ = A ⊙ (Ā - rowsum(Ā ⊙ A))   (softmax, docs/backward.md §6), and since Ā_ij = Ō_i·V_j
         and Σ_j A_ij V_j = O_i, rowsum(Ā ⊙ A) = rowsum(Ō ⊙ O): a (T, d) product, not (T, T)
    Q̄ = S̄ K / √d,  K̄ = S̄ᵀ (Q / √d)
    W̄_qkv = hᵀ [Q̄ | K̄ | V̄],   h̄ = [Q̄ | K̄ | V̄] W_qkvᵀ
    Q̄, K̄, V̄ are written by the batched products straight into one (M, 3D) buffer.
    """
    h, qkv, a, o, w_qkv, w_o, scale = cache
    M, D = g.shape
    T = M // batch
    d = D // num_heads
    dw_o = o.T @ g
    do = g @ w_o.T
    do_h = _heads(do, batch, T, num_heads, d)
    q, k, v = _split_heads(qkv, batch, T, num_heads, d)
    dqkv = np.empty_like(qkv)
    dq, dk, dv = _split_heads(dqkv, batch, T, num_heads, d)
    np.matmul(a.swapaxes(-1, -2), do_h, out=dv)
    ds = do_h @ v.swapaxes(-1, -2)  # Ā
    # rowsum(Ō ⊙ O) per head: the (M, D) product summed over each head's d columns
    rowsum = row_sum((do * o).reshape(-1, d))
    ds -= rowsum.reshape(batch, T, num_heads).transpose(0, 2, 1)[..., None]
    ds *= a  # S̄
    np.matmul(ds, k, out=dq)
    dq *= scale
    np.matmul(ds.swapaxes(-1, -2), q, out=dk)
    dw_qkv = h.T @ dqkv
    dh = dqkv @ w_qkv.T
    return dh, dw_qkv, dw_o


def _heads(x, batch, T, num_heads, d):
    """(M, D) -> a (B, heads, T, d) view of the same memory (no copy)."""
    return x.reshape(batch, T, num_heads, d).transpose(0, 2, 1, 3)


def _split_heads(qkv, batch, T, num_heads, d):
    """(M, 3D) -> Q, K, V, each a (B, heads, T, d) view."""
    x = qkv.reshape(batch, T, 3, num_heads, d).transpose(2, 0, 3, 1, 4)
    return x[0], x[1], x[2]
