"""Multi-head self-attention as one fused op, on the packed ``[Q | K | V]`` projections.

Composed from primitive ops, one attention layer is about twenty recorded ops (three
reshapes and three transposes to split the heads, the scores' product, the softmax, the
weighted sum, the head merge) with a copy at every layout change. Fused, it is one op that
reads the heads as strided views of its input, writes them merged into its output, and runs
batch block by batch block on every core (NumPy's stacked matmul releases the GIL).
docs/backward.md derives the VJP.
"""
from __future__ import annotations

import math

import numpy as np

from ..parallel import BLAS_THREADED_FLOPS, for_each_block, one_blas_thread
from ..defop import op
from .fused import _row_max, _row_sum

__all__ = ["self_attention", "attention_weights"]


def _heads(a: np.ndarray, lo: int, hi: int, part: int | None, num_heads: int) -> np.ndarray:
    """Rows lo:hi of the ``part``-th D-wide third of ``a`` (B, T, 3·D), or of all of ``a``
    (B, T, D) when ``part`` is None, as a (hi-lo, H, T, d) view: head h is columns
    h·d:(h+1)·d of that third."""
    B, T, width = a.shape
    D = width if part is None else width // 3
    cols = a[lo:hi] if part is None else a[lo:hi, :, part * D:(part + 1) * D]
    return cols.reshape(hi - lo, T, num_heads, D // num_heads).transpose(0, 2, 1, 3)


def _check(qkv: np.ndarray, num_heads, scale) -> float:
    """Validate the arguments; return the scale of the scores."""
    if isinstance(num_heads, bool) or not isinstance(num_heads, (int, np.integer)) \
            or num_heads <= 0:
        raise ValueError(f"self_attention num_heads: got {num_heads!r}; expected a positive "
                         "integer")
    if qkv.ndim != 3 or qkv.shape[2] % (3 * num_heads) or 0 in qkv.shape:
        raise ValueError(f"self_attention qkv: got shape {qkv.shape}; expected (B, T, 3·D) "
                         f"with B, T > 0 and D a positive multiple of num_heads = {num_heads}")
    if scale is None:
        return 1.0 / math.sqrt(qkv.shape[2] // (3 * num_heads))
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)) \
            or not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"self_attention scale: got {scale!r}; expected a positive finite "
                         "number or None (1/sqrt(head width))")
    return float(scale)


def _weights(q: np.ndarray, k: np.ndarray, s: float, out: np.ndarray | None = None) -> np.ndarray:
    """A = softmax(s · Q Kᵀ) over key positions, for (b, H, T, d) Q and K, into ``out``
    (b, H, T, T), C-contiguous, or a new array."""
    a = np.matmul(q * s, k.swapaxes(-1, -2), out=out)
    rows = a.reshape(-1, a.shape[-1])
    rows -= _row_max(rows)
    np.exp(rows, out=rows)
    rows /= _row_sum(rows)
    return a


@op(arrays=1)
def self_attention(qkv, num_heads, scale=None):
    """(B, T, 3D) -> (B, T, D): scaled dot-product attention of every head, heads concatenated.

    ``qkv = [Q | K | V]`` along the last axis (what one Linear layer of width 3D gives);
    each third is cut into H heads of width d = D/H, head h being columns h·d:(h+1)·d. Per
    head, with s = ``scale`` (default 1/√d) and the softmax over key positions (no mask):
        A = softmax(s · Q Kᵀ)  (B, H, T, T),     O = A V  (B, H, T, d),
    and the output puts head h's O in columns h·d:(h+1)·d.
    VJP, per head, with Ō the output's gradient in the same layout:
        Ā = Ō Vᵀ,   V̄ = Aᵀ Ō,   S̄ = A ⊙ (Ā − rowsum(Ā ⊙ A)),   Q̄ = s · S̄ K,   K̄ = s · S̄ᵀ Q.
    Saves A and (a reference to) ``qkv``.
    """
    s = _check(qkv, num_heads, scale)
    if qkv.dtype.kind != "f":
        qkv = qkv.astype(np.float64)
    B, T, width = qkv.shape
    H = num_heads
    weights = np.empty((B, H, T, T), dtype=qkv.dtype)
    out = np.empty((B, T, width // 3), dtype=qkv.dtype)

    def forward(lo, hi):
        q, k, v = (_heads(qkv, lo, hi, part, H) for part in range(3))
        a = _weights(q, k, s, out=weights[lo:hi])
        np.matmul(a, v, out=_heads(out, lo, hi, None, H))

    _run(forward, B, H, T, width // 3 // H)

    def vjp(g):
        gqkv = np.empty(qkv.shape, dtype=np.result_type(g, qkv))

        def backward(lo, hi):
            q, k, v = (_heads(qkv, lo, hi, part, H) for part in range(3))
            gq, gk, gv = (_heads(gqkv, lo, hi, part, H) for part in range(3))
            go = _heads(g, lo, hi, None, H)
            a = weights[lo:hi]
            np.matmul(a.swapaxes(-1, -2), go, out=gv)
            gs = go @ v.swapaxes(-1, -2)  # Ā, turned into S̄ in place
            rows, a_rows = gs.reshape(-1, T), a.reshape(-1, T)  # views of gs and a
            ga = rows * a_rows  # Ā ⊙ A, taken before the next line overwrites Ā
            np.multiply(a_rows, _row_sum(ga), out=rows)
            np.subtract(ga, rows, out=rows)
            np.matmul(gs, k * s, out=gq)
            np.matmul(gs.swapaxes(-1, -2), q * s, out=gk)

        _run(backward, B, H, T, width // 3 // H)
        return gqkv

    return out, vjp


def _run(kernel, B: int, H: int, T: int, d: int) -> None:
    """``kernel`` over blocks of examples, on every core. Each product multiplies a (T, d)
    and a (d, T) matrix or a (T, T) and a (T, d) one: from a size where BLAS would start its
    own threads it is held to one, so the cores split the batch, not each small product
    (and the results do not depend on the thread count)."""
    if 2 * T * T * d < BLAS_THREADED_FLOPS:
        for_each_block(kernel, B, H * T * T)
    else:
        with one_blas_thread():
            for_each_block(kernel, B, H * T * T)


def attention_weights(qkv: np.ndarray, num_heads: int, scale: float | None = None) -> np.ndarray:
    """The attention weights A (B, H, T, T) that ``self_attention`` computes, as an array (no
    graph): for looking at what each token reads."""
    qkv = np.asarray(qkv)
    s = _check(qkv, num_heads, scale)
    B, T, _ = qkv.shape
    q, k, _ = (_heads(qkv, 0, B, part, num_heads) for part in range(3))
    return _weights(q, k, s)
