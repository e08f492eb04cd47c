"""Attention: multi-head self-attention as one fused op on the packed ``[Q | K | V]``
projections, and scaled dot-product attention on separate Q, K, V with masks, dropout on the
weights and grouped-query heads.

Composed from primitive ops, one attention layer is about twenty recorded ops (three
reshapes and three transposes to split the heads, the scores' product, the softmax, the
weighted sum, the head merge) with a copy at every layout change. Fused, it is one op that
reads the heads as strided views of its input, writes them merged into its output, and runs
batch block by batch block on every core (NumPy's stacked matmul releases the GIL).
docs/backward.md §12 derives the VJP, §31 and §39 those of
``scaled_dot_product_attention``.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from ..checks import boolean, generator, real
from ..defop import op
from ..runtime.blas import one_blas_thread
from ..runtime.parallel import BLAS_THREADED_FLOPS, for_each_block
from ..runtime.rowwise import row_max, row_sum
from ..tensor import Tensor
from .bounds import check_output, elements

__all__ = ["self_attention", "attention_weights", "scaled_dot_product_attention"]


def _heads(a: np.ndarray, lo: int, hi: int, part: int | None, num_heads: int) -> np.ndarray:
    """Rows lo:hi of the ``part``-th D-wide third of ``a`` (B, T, 3·D), or of all of ``a``
    (B, T, D) when ``part`` is None, as a (hi-lo, H, T, d) view: head h is columns
    h·d:(h+1)·d of that third."""
    B, T, width = a.shape
    D = width if part is None else width // 3
    cols = a[lo:hi] if part is None else a[lo:hi, :, part * D:(part + 1) * D]
    return cols.reshape(hi - lo, T, num_heads, D // num_heads).transpose(0, 2, 1, 3)


def _check(qkv: np.ndarray, num_heads, scale, is_causal=False) -> float:
    """Validate the arguments; return the scale of the scores."""
    boolean("is_causal", is_causal, owner="self_attention")
    if isinstance(num_heads, bool) or not isinstance(num_heads, (int, np.integer)) \
            or num_heads <= 0:
        raise ValueError(f"self_attention num_heads: got {num_heads!r}; expected a positive "
                         "integer")
    if qkv.ndim != 3 or qkv.shape[2] % (3 * num_heads) or 0 in qkv.shape:
        raise ValueError(f"self_attention qkv: got shape {qkv.shape}; expected (B, T, 3·D) "
                         f"with B, T > 0 and D a positive multiple of num_heads = {num_heads}")
    B, T, _ = qkv.shape  # the weights (B, H, T, T) grow as T² from a (B, T, 3·D) input
    check_output("self_attention", "qkv", B * int(num_heads) * T * T,
                 f"shape {qkv.shape} with {num_heads} heads (weights of shape "
                 f"{(B, int(num_heads), T, T)})", bound="MAX_SCORES")
    if scale is None:
        return 1.0 / math.sqrt(qkv.shape[2] // (3 * num_heads))
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)) \
            or not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"self_attention scale: got {scale!r}; expected a positive finite "
                         "number or None (1/sqrt(head width))")
    return float(scale)


def _weights(q: np.ndarray, k: np.ndarray, s: float, out: np.ndarray | None = None,
             future: np.ndarray | None = None) -> np.ndarray:
    """A = softmax(s · Q Kᵀ) over key positions, for (b, H, T, d) Q and K, into ``out``
    (b, H, T, T), C-contiguous, or a new array. ``future`` (T, T), True above the diagonal,
    marks the keys a causal query may not read: their scores become −inf, their weights 0
    (position 0 is never masked, so no row is empty)."""
    a = np.matmul(q * s, k.swapaxes(-1, -2), out=out)
    if future is not None:
        np.copyto(a, -np.inf, where=future)
    rows = a.reshape(-1, a.shape[-1])
    rows -= row_max(rows)
    np.exp(rows, out=rows)
    rows /= row_sum(rows)
    return a


def _future(T: int, is_causal: bool) -> np.ndarray | None:
    return np.triu(np.ones((T, T), dtype=bool), 1) if is_causal else None


@op(arrays=1)
def self_attention(qkv, num_heads, scale=None, is_causal=False):
    """(B, T, 3D) -> (B, T, D): scaled dot-product attention of every head, heads concatenated.

    ``qkv = [Q | K | V]`` along the last axis (what one Linear layer of width 3D gives);
    each third is cut into H heads of width d = D/H, head h being columns h·d:(h+1)·d. Per
    head, with s = ``scale`` (default 1/√d) and the softmax over key positions (with
    ``is_causal``, query i reads keys j <= i only: the scores of j > i are −inf):
        A = softmax(s · Q Kᵀ)  (B, H, T, T),     O = A V  (B, H, T, d),
    and the output puts head h's O in columns h·d:(h+1)·d.
    VJP, per head, with Ō the output's gradient in the same layout:
        Ā = Ō Vᵀ,   V̄ = Aᵀ Ō,   S̄ = A ⊙ (Ā − rowsum(Ā ⊙ A)),   Q̄ = s · S̄ K,   K̄ = s · S̄ᵀ Q.
    Saves A and (a reference to) ``qkv``. The masked weights are 0, so the VJP is the same
    with and without ``is_causal``.
    Derivation: docs/backward.md §12. Tests: tests/minigrad/op_cases/attention.py,
    tests/minigrad/ops/test_attention.py.
    """
    s = _check(qkv, num_heads, scale, is_causal)
    if qkv.dtype.kind != "f":
        qkv = qkv.astype(np.float64)
    B, T, width = qkv.shape
    H = num_heads
    weights = np.empty((B, H, T, T), dtype=qkv.dtype)
    out = np.empty((B, T, width // 3), dtype=qkv.dtype)
    future = _future(T, is_causal)

    def forward(lo, hi):
        q, k, v = (_heads(qkv, lo, hi, part, H) for part in range(3))
        a = _weights(q, k, s, out=weights[lo:hi], future=future)
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
            np.multiply(a_rows, row_sum(ga), out=rows)
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


def attention_weights(qkv: np.ndarray, num_heads: int, scale: float | None = None,
                      is_causal: bool = False) -> np.ndarray:
    """The attention weights A (B, H, T, T) that ``self_attention`` computes, as an array (no
    graph): for looking at what each token reads.
    Derivation: docs/backward.md §12. Tests: tests/minigrad/ops/test_attention.py.
    """
    qkv = np.asarray(qkv)
    s = _check(qkv, num_heads, scale, is_causal)
    B, T, _ = qkv.shape
    q, k, _ = (_heads(qkv, 0, B, part, num_heads) for part in range(3))
    return _weights(q, k, s, future=_future(T, is_causal))


# ---- scaled dot-product attention on separate Q, K, V (docs/backward.md §31, §39) ------------

def _sdpa_check(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Any, is_causal: Any,
                scale: Any, gqa: bool = False) -> tuple[tuple, float]:
    """Validate the arguments; return the shape of the scores (..., L, S) and the scale.
    With ``gqa``, axis -3 holds the heads: H_q of q, and of k and v divisors of H_q."""
    name = "scaled_dot_product_attention"
    lead = 3 if gqa else 2  # the trailing axes that do not broadcast
    for label, x in (("q", q), ("k", k), ("v", v)):
        if x.ndim < lead:
            raise ValueError(f"{name} {label}: got shape {x.shape}; expected at least " + (
                "3 dimensions (..., heads, length, features) with enable_gqa" if gqa else
                "2 dimensions (..., length, features)"))
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{name} q, k, v: got shapes {q.shape}, {k.shape}, {v.shape}; "
                         "expected (..., L, E), (..., S, E) and (..., S, Ev)")
    if gqa and (q.shape[-3] % k.shape[-3] or q.shape[-3] % v.shape[-3]):
        raise ValueError(f"{name} q, k, v: got {q.shape[-3]} query heads and {k.shape[-3]} "
                         f"and {v.shape[-3]} key and value heads (axis -3); expected "
                         "numbers of key and value heads that divide the query heads' "
                         "with enable_gqa")
    try:
        batch = np.broadcast_shapes(q.shape[:-lead], k.shape[:-lead], v.shape[:-lead])
    except ValueError:
        raise ValueError(f"{name} q, k, v: got shapes {q.shape}, {k.shape}, {v.shape}; "
                         "expected leading dimensions that broadcast together") from None
    scores = batch + q.shape[-lead:-1] + (k.shape[-2],)
    check_output(name, "q, k", elements(scores), f"shapes {q.shape} and {k.shape} (scores "
                 f"of shape {scores})", bound="MAX_SCORES")  # L·S from (L + S)·E inputs
    if mask is not None:
        if mask.dtype.kind not in "bf":
            raise TypeError(f"{name} mask: got dtype {mask.dtype}; expected bool (True: the "
                            "key takes part) or floating (added to the scores)")
        try:
            fits = np.broadcast_shapes(scores, mask.shape) == scores
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{name} mask: got shape {mask.shape}; expected a shape that "
                             f"broadcasts to the scores' {scores}")
    boolean("is_causal", is_causal, owner=name)
    if scale is None:
        return scores, 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    return scores, real("scale", scale, owner=name)


def _grouped(x: np.ndarray, heads: int) -> np.ndarray:
    """(..., H, R, C) as (..., heads, H·R/heads, C): with H = H_q, R = L, the query rows of
    the H_q/heads query heads that share one key/value head, stacked; with heads = H_q, back
    (a view of a contiguous ``x``)."""
    return x.reshape(x.shape[:-3] + (heads, x.shape[-3] * x.shape[-2] // heads, x.shape[-1]))


def _same(x: np.ndarray) -> np.ndarray:
    return x


@op(name="scaled_dot_product_attention", arrays=4)
def _sdpa(q, k, v, mask=None, is_causal=False, scale=None, dropout_p=0.0, enable_gqa=False,
          rng=None):
    """See ``scaled_dot_product_attention``; ``mask`` is a position here so that a float
    mask that requires grad gets its gradient."""
    name = "scaled_dot_product_attention"
    if mask is not None and not isinstance(mask, np.ndarray):  # a number (a 0-d mask)
        mask = np.asarray(mask)
    gqa = enable_gqa is not False and boolean("enable_gqa", enable_gqa, owner=name)
    shape, s = _sdpa_check(q, k, v, mask, is_causal, scale, gqa)
    p = dropout_p if type(dropout_p) is float and dropout_p == 0.0 else \
        real("dropout_p", dropout_p, low=0.0, high=1.0, high_open=True, owner=name)
    draw = generator(rng, name) if p or rng is not None else None
    dtype = np.result_type(q, k, v)
    if dtype.kind != "f":
        dtype = np.dtype(np.float64)
    q, k, v = (x.astype(dtype, copy=False) for x in (q, k, v))
    L, S = shape[-2:]
    by_k = by_v = whole = _same  # grouped query heads (§39): rows of the shared K, V heads
    if gqa:
        by_k, by_v = partial(_grouped, heads=k.shape[-3]), partial(_grouped, heads=v.shape[-3])
        whole = partial(_grouped, heads=q.shape[-3])
    scores = whole(np.matmul(by_k(q) * s, np.swapaxes(k, -1, -2)))
    if mask is not None and mask.dtype == bool:
        scores = np.where(mask, scores, -np.inf)
    elif mask is not None:
        scores = scores + mask.astype(dtype, copy=False)
    if is_causal:  # upper-left aligned, as torch: query i reads keys 0 ... i
        # after the mask, so that a key it hides stays hidden whatever its mask value (a
        # float mask's +inf there would otherwise meet the -inf as nan)
        scores = np.where(np.tri(L, S, dtype=bool), scores, -np.inf)
    top = np.max(scores, axis=-1, keepdims=True, initial=-np.inf)
    # A row with every key masked (top = −inf) gets weights 0 and output 0, as torch 2.13
    # gives; exp(−inf − 0) = 0 there, and its sum 0 is divided by 1 instead.
    top[top == -np.inf] = 0.0
    e = np.exp(scores - top)
    total = e.sum(axis=-1, keepdims=True)
    total[total == 0] = 1.0
    a = e / total
    drop = ad = None  # inverted dropout on the weights (§39): A_d = A ⊙ D
    if p and draw is not None:  # (p > 0 made a generator)
        with np.errstate(over="ignore"):  # 1/(1 - p) past float16's range is inf
            drop = np.where(draw.random(shape) >= p, dtype.type(1.0 / (1.0 - p)),
                            dtype.type(0.0))
        ad = a * drop
    out = whole(np.matmul(by_v(a if ad is None else ad), v))
    memo: list = [None, None]

    def score_grad(g):
        """S̄ = A ⊙ (Ā − rowsum(Ā ⊙ A)), Ā = Ḡ Vᵀ (⊙ D with dropout): computed once per
        backward pass, shared by the VJPs of q, k and the mask."""
        if memo[0] is not g:
            ga = whole(np.matmul(by_v(g), np.swapaxes(v, -1, -2)))
            if drop is not None:
                ga = ga * drop
            ga = ga * a
            memo[:] = [g, ga - a * ga.sum(axis=-1, keepdims=True)]
        return memo[1]

    def vjp_q(g):
        return whole(np.matmul(by_k(score_grad(g)), k * s))

    def vjp_k(g):
        return np.matmul(np.swapaxes(by_k(score_grad(g)), -1, -2), by_k(q) * s)

    def vjp_v(g):
        return np.matmul(np.swapaxes(by_v(a if ad is None else ad), -1, -2), by_v(g))

    def vjp_mask(g):
        return score_grad(g)

    floating = mask is not None and mask.dtype.kind == "f"
    return out, (vjp_q, vjp_k, vjp_v, vjp_mask if floating else None)


def scaled_dot_product_attention(q: Any, k: Any, v: Any, mask: Any = None,
                                 is_causal: bool = False, scale: float | None = None, *,
                                 attn_mask: Any = None, dropout_p: float = 0.0,
                                 enable_gqa: bool = False,
                                 rng: np.random.Generator | int | None = None) -> Tensor:
    """(..., L, E), (..., S, E), (..., S, Ev) -> (..., L, Ev):  O = drop(softmax(s·Q Kᵀ + M)) V.

    As ``torch.nn.functional.scaled_dot_product_attention``: s = ``scale`` (default 1/√E),
    leading dimensions broadcast, L and S may differ. ``mask`` (torch's
    name ``attn_mask=`` is accepted too) broadcasts to the scores (..., L, S): a bool mask
    keeps the keys where it is True (M = 0 there, −inf elsewhere), a floating mask is M
    itself (cast to the result's dtype) and gets a gradient if it requires grad.
    ``is_causal`` lets query i read keys 0 ... i (upper-left aligned, as torch); with a mask
    both apply (a key is read where the mask keeps it and j <= i). A query with every key
    masked gets zero weights and a zero output row, as torch 2.13 returns (no NaN), and zero
    gradients.
    ``dropout_p`` in [0, 1): inverted dropout on the weights, A_d = A ⊙ D with
    D = (u >= p) / (1 - p), u = ``rng.random(scores' shape)`` (the scores' shape is the
    leading dimensions of q, k, v broadcast, then (L, S)); ``rng`` is a
    ``np.random.Generator`` (it advances) or a seed (every call draws the same D), None a
    fresh generator. No draw when p = 0. ``enable_gqa``: axis -3 holds the heads, q has H_q,
    k and v divisors of H_q; query head h reads key head h // (H_q / H_k) (torch's
    ``repeat_interleave``), without copying K or V.
    VJP, with Ḡ the output's gradient and A the weights:
        V̄ = A_dᵀ Ḡ,   Ā = Ḡ Vᵀ ⊙ D,   S̄ = A ⊙ (Ā − rowsum(Ā ⊙ A)),   Q̄ = s · S̄ K,
        K̄ = s · S̄ᵀ Q,   M̄ = S̄ (summed over M's broadcast axes); with enable_gqa, K̄ and V̄
        sum over the query heads that share each head.
    Derivation: docs/backward.md §31, §39. Tests: tests/minigrad/op_cases/attention.py,
    tests/minigrad/ops/test_attention.py, tests/minigrad/ops/test_attention_dropout_gqa.py.
    """
    if attn_mask is not None:
        if mask is not None:
            raise TypeError("scaled_dot_product_attention: got both mask and attn_mask; "
                            "expected one (attn_mask is torch's name for mask)")
        mask = attn_mask
    if type(dropout_p) is float and dropout_p == 0.0 and enable_gqa is False and rng is None:
        return _sdpa(q, k, v, mask, is_causal, scale)  # the plain call, as it always was
    return _sdpa(q, k, v, mask, is_causal, scale, dropout_p, enable_gqa, rng)
