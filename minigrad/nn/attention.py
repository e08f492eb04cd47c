"""``MultiheadAttention``: PyTorch's ``nn.MultiheadAttention``, with its parameter names and
layouts, so that a torch ``state_dict`` loads as it is.

Unlike minigrad's ``Linear`` (weight (in, out)), every projection weight here has torch's
(out, in) layout: ``in_proj_weight`` (3E, E) holds W_q, W_k, W_v stacked by rows (or
``q_proj_weight`` (E, E), ``k_proj_weight`` (E, kdim), ``v_proj_weight`` (E, vdim) when the
key or value width differs from E), ``in_proj_bias`` (3E,), ``out_proj.weight`` (E, E) and
``out_proj.bias`` (E,); each projection computes x Wᵀ + b.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import checks
from .. import functional as F
from ..checks import generator
from ..tensor import Tensor
from .args import in_dtype, real_input
from .module import Module
from .parameter import Parameter

__all__ = ["MultiheadAttention"]

_OWNER = "MultiheadAttention"
#: The most weights a MultiheadAttention may hold (16 GiB in float64): a size beyond is refused
#: by name before anything is allocated.
MAX_PARAMETERS = 2**31


def _normal(rng: np.random.Generator, shape: tuple[int, int], dtype: np.dtype) -> Parameter:
    """A (out, in) weight ~ N(0, 1/in): the project's rule for Linear, in torch's layout."""
    return Parameter(rng.standard_normal(shape) / math.sqrt(shape[1]), dtype=dtype)


class OutProjection(Module):
    """y = x Wᵀ + b with W of torch's (out_features, in_features) layout: the output
    projection of ``MultiheadAttention`` (torch's ``out_proj``, a ``Linear`` there)."""

    def __init__(self, features: int, bias: bool, dtype: np.dtype,
                 rng: np.random.Generator) -> None:
        super().__init__()
        self.weight = _normal(rng, (features, features), dtype)
        self.bias = Parameter(np.zeros(features, dtype=dtype)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight.T, self.bias)

    def extra_repr(self) -> str:
        n = self.weight.shape[0]
        return f"in_features={n}, out_features={n}, bias={self.bias is not None}"


class MultiheadAttention(Module):
    """Multi-head attention as ``torch.nn.MultiheadAttention`` (same constructor, parameter
    names and shapes, forward and results):

        head_i = softmax(Q_i K_iᵀ / √d + M) V_i,   Q = q W_qᵀ + b_q, K = k W_kᵀ + b_k,
        V = v W_vᵀ + b_v,   out = concat(head_1 ... head_H) W_oᵀ + b_o,

    with d = E / ``num_heads`` and Q_i the i-th block of d columns. Inputs (L, N, E) query,
    (S, N, kdim) key, (S, N, vdim) value ((N, L, E) ... with ``batch_first``; (L, E) ... for
    one unbatched sequence) -> ``(output, weights)``: output as the query, weights (N, L, S)
    averaged over the heads (``average_attn_weights``) or (N, H, L, S), or None with
    ``need_weights=False``.

    Masks, as torch's: ``key_padding_mask`` (N, S), ``attn_mask`` (L, S) or (N·H, L, S); a
    bool mask is True where a key is *not* read, a float mask is added to the scores;
    ``is_causal`` lets query i read keys 0 ... i (torch needs ``attn_mask`` with it as a hint
    of a causal mask; here it is the causal mask itself, and with ``attn_mask`` both apply,
    which is the same when the hint is true). In training, ``dropout`` zeroes attention
    weights (inverted dropout, masks drawn from ``rng``, a generator or a seed); in eval
    none. The returned weights are those after dropout, as torch's. ``need_weights=False``
    runs ``F.scaled_dot_product_attention`` (a query with no key to read gets 0); with the
    weights it composes the same math from ops (such a query gets NaN, as in torch).
    ``add_bias_kv`` and ``add_zero_attn`` are refused. Initialization (the project's rule):
    weights N(0, 1/fan_in), biases 0.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 *, dtype: Any = np.float64,
                 rng: np.random.Generator | int | None = None) -> None:
        super().__init__()
        self.embed_dim = E = checks.positive_int("embed_dim", embed_dim, owner=_OWNER)
        self.num_heads = checks.positive_int("num_heads", num_heads, owner=_OWNER)
        if E % self.num_heads:
            raise ValueError(f"{_OWNER} num_heads: got {num_heads} for embed_dim {E}; "
                             "expected a divisor of embed_dim")
        self.head_dim = E // self.num_heads
        self.dropout = checks.real("dropout", dropout, low=0.0, high=1.0, high_open=True,
                                   owner=_OWNER)
        checks.boolean("bias", bias, owner=_OWNER)
        for name, flag in (("add_bias_kv", add_bias_kv), ("add_zero_attn", add_zero_attn)):
            if checks.boolean(name, flag, owner=_OWNER):
                raise ValueError(f"{_OWNER} {name}: got True; expected False (not supported)")
        self.kdim = E if kdim is None else checks.positive_int("kdim", kdim, owner=_OWNER)
        self.vdim = E if vdim is None else checks.positive_int("vdim", vdim, owner=_OWNER)
        self.batch_first = checks.boolean("batch_first", batch_first, owner=_OWNER)
        count = E * (2 * E + self.kdim + self.vdim)  # the four weights' elements
        if count > MAX_PARAMETERS:
            raise ValueError(f"{_OWNER} embed_dim, kdim, vdim: got {E}, {self.kdim}, "
                             f"{self.vdim} ({count} weights); expected at most "
                             f"{MAX_PARAMETERS} weights (2**31), checked before allocating")
        self.dtype = dtype = checks.floating_dtype("dtype", dtype, owner=_OWNER)
        self.rng = generator(rng, _OWNER)
        self._qkv_same_embed_dim = self.kdim == E and self.vdim == E
        if self._qkv_same_embed_dim:  # registered in torch's order (its state_dict's)
            self.in_proj_weight = _normal(self.rng, (3 * E, E), dtype)
        else:
            self.q_proj_weight = _normal(self.rng, (E, E), dtype)
            self.k_proj_weight = _normal(self.rng, (E, self.kdim), dtype)
            self.v_proj_weight = _normal(self.rng, (E, self.vdim), dtype)
        self.in_proj_bias = Parameter(np.zeros(3 * E, dtype=dtype)) if bias else None
        self.out_proj = OutProjection(E, bias, dtype, self.rng)

    def forward(self, query: Any, key: Any, value: Any, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None,
                average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """(output, weights or None); see the class docstring for the shapes."""
        for name, flag in (("need_weights", need_weights), ("is_causal", is_causal),
                           ("average_attn_weights", average_attn_weights)):
            checks.boolean(name, flag, owner=_OWNER)
        q, k, v, batched = self._inputs(query, key, value)
        N, L, S, H = q.shape[0], q.shape[1], k.shape[1], self.num_heads
        mask = self._mask(key_padding_mask, attn_mask, batched, N, L, S)
        q, k, v = (F.transpose(F.reshape(x, (N, x.shape[1], H, self.head_dim)), (0, 2, 1, 3))
                   for x in self._project(q, k, v))  # (N, H, length, d)
        p = self.dropout if self.training else 0.0
        weights = None
        if not need_weights:
            heads = F.scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal,
                                                   dropout_p=p, rng=self.rng if p else None)
        else:
            scores = F.matmul(q * (1.0 / math.sqrt(self.head_dim)), F.swapaxes(k, -1, -2))
            if isinstance(mask, np.ndarray) and mask.dtype == bool:
                scores = F.where(mask, scores, -np.inf)
            elif mask is not None:
                scores = scores + mask
            if is_causal:
                scores = F.where(np.tri(L, S, dtype=bool), scores, -np.inf)
            weights = F.softmax(scores, axis=-1)
            if p:  # the mask drawn as nn.Dropout draws it
                kept = self.rng.random(weights.shape) >= p
                weights = weights * np.where(kept, self.dtype.type(1.0 / (1.0 - p)),
                                             self.dtype.type(0.0))
            heads = F.matmul(weights, v)
            if average_attn_weights:
                weights = F.mean(weights, axis=1)
            if not batched:
                weights = F.squeeze(weights, axis=0)
        out = self.out_proj(F.reshape(F.transpose(heads, (0, 2, 1, 3)), (N, L, self.embed_dim)))
        if not batched:
            return F.squeeze(out, axis=0), weights
        return (out if self.batch_first else F.swapaxes(out, 0, 1)), weights

    def _inputs(self, query: Any, key: Any, value: Any) -> tuple[Any, Any, Any, bool]:
        """query, key, value checked, cast to the module's dtype and laid out as (N, length,
        features); and whether the input was batched."""
        widths = {"query": self.embed_dim, "key": self.kdim, "value": self.vdim}
        xs = [real_input(_OWNER, x, f"(..., {widths[n]})")
              for n, x in (("query", query), ("key", key), ("value", value))]
        ndim = xs[0].ndim
        layout = "(N, length, features)" if self.batch_first else "(length, N, features)"
        for (name, width), x in zip(widths.items(), xs, strict=True):
            if x.ndim not in (2, 3) or x.ndim != ndim or x.shape[-1] != width:
                raise ValueError(f"{_OWNER} {name}: got shape {x.shape} (query {xs[0].shape})"
                                 f"; expected {layout} or (length, features), as query, with "
                                 f"{width} features")
        q, k, v = (in_dtype(x, self.dtype) for x in xs)
        if ndim == 2:
            q, k, v = (F.expand_dims(x, 0) for x in (q, k, v))
        elif not self.batch_first:
            q, k, v = (F.swapaxes(x, 0, 1) for x in (q, k, v))
        if k.shape[:2] != v.shape[:2] or k.shape[0] != q.shape[0]:
            raise ValueError(f"{_OWNER} key, value: got shapes {xs[1].shape} and "
                             f"{xs[2].shape} for query {xs[0].shape}; expected the same batch "
                             "as query and the same length for key and value")
        return q, k, v, ndim == 3

    def _project(self, q: Any, k: Any, v: Any) -> list:
        E, b = self.embed_dim, self.in_proj_bias
        if self._qkv_same_embed_dim:
            ws = [self.in_proj_weight[i * E:(i + 1) * E] for i in range(3)]
        else:
            ws = [self.q_proj_weight, self.k_proj_weight, self.v_proj_weight]
        return [F.linear(x, w.T, None if b is None else b[i * E:(i + 1) * E])
                for i, (x, w) in enumerate(zip((q, k, v), ws, strict=True))]

    def _mask(self, key_padding_mask: Any, attn_mask: Any, batched: bool, N: int, L: int,
              S: int) -> Any:
        """The two masks as one for (N, H, L, S) scores: a bool array (True: the key is read)
        when both are bool, else a float one (-inf where a bool mask hides a key), None if
        neither is given. A float mask may be a Tensor (its gradient is kept)."""
        H, masks = self.num_heads, []
        for name, m, shapes in (
                ("key_padding_mask", key_padding_mask, [(N, S)] if batched else [(S,)]),
                ("attn_mask", attn_mask, [(L, S), (N * H, L, S)] if batched else
                 [(L, S), (H, L, S)])):
            if m is None:
                continue
            if not isinstance(m, Tensor) or m.dtype == bool:  # a bool mask has no gradient
                m = np.asarray(m.data if isinstance(m, Tensor) else m)
            if m.dtype.kind not in "bf":
                raise TypeError(f"{_OWNER} {name}: got dtype {m.dtype}; expected a bool array "
                                "(True: not read) or a floating one (added to the scores)")
            if tuple(m.shape) not in shapes:
                raise ValueError(f"{_OWNER} {name}: got shape {tuple(m.shape)}; expected "
                                 f"{' or '.join(map(str, shapes))}")
            if name == "key_padding_mask":
                m = F.reshape(m, (N, 1, 1, S)) if isinstance(m, Tensor) else \
                    m.reshape(N, 1, 1, S)
            elif m.ndim == 3:
                m = F.reshape(m, (N, H, L, S)) if isinstance(m, Tensor) else \
                    m.reshape(N, H, L, S)
            masks.append(m)
        if not masks:
            return None
        if all(isinstance(m, np.ndarray) and m.dtype == bool for m in masks):
            keep = ~masks[0]
            return keep & ~masks[1] if len(masks) > 1 else keep
        floats = [np.where(m, -np.inf, 0.0).astype(self.dtype)
                  if isinstance(m, np.ndarray) and m.dtype == bool
                  else in_dtype(m, self.dtype) for m in masks]
        return floats[0] if len(floats) == 1 else F.add(floats[0], floats[1])

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, kdim={self.kdim}, vdim={self.vdim}, "
                f"batch_first={self.batch_first}")
