"""The largest input a TinyViT's arithmetic keeps finite, derived from what it computes.

A model's inputs (normalized pixels, ``z``) enter one place where their size matters: the
residual stream. The patch embedding makes each token ``h = W z + b`` (``W`` of shape
(P·P·C, D)), the class token and the position embeddings are added, and every block adds its
attention's and its MLP's outputs, which are computed from LayerNormed (unit-scale) values
and so do not grow with ``z``. Each LayerNorm then computes the variance of a token, the mean
over D of ``(h - mean(h))**2``, in the model's dtype: it is finite only while every
``(h - mean(h))**2 <= fmax / D``, i.e. ``|h - mean(h)| <= sqrt(fmax / D)``, and
``|h - mean(h)| <= 2 max|h|``. So with

    max|h| <= max_j sum_i |W[i, j]| * max|z| + max|b| + max|cls| + max|pos|

the stream is safe while ``max|z| <= (sqrt(fmax / D) / 4 - offsets) / max_j sum_i |W[i, j]|``,
the 4 being the 2 above times 2 for what the blocks add to the stream. For float32 and
D = 64 that is about 5.8e17 / the column sum: far beyond any image's normalized pixels
(|z| is at most sqrt(N) for the training pixels the statistics were fitted on), and below
uint64 pixels near 2**64 or a pixel over a std of 1e-38, which made NaN answers before.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["input_limit", "check_inputs"]

_CHUNK = 1 << 22  # elements scanned at a time (no whole-array temporary)


def input_limit(model) -> float:
    """The largest ``max|z|`` of ``model``'s inputs for which its residual stream, and so
    every LayerNorm's variance, stays finite in its dtype (the derivation above)."""
    fmax = float(np.finfo(model.dtype).max)
    dim = model.config["dim"]
    weight = np.abs(model.patch_embed.weight.data.astype(np.float64))
    spread = float(weight.sum(axis=0).max())
    offsets = sum(float(np.max(np.abs(p.data))) for p in
                  (model.patch_embed.bias, model.cls_token, model.pos_embed) if p is not None)
    room = math.sqrt(fmax / dim) / 4 - offsets
    if room <= 0:
        return 0.0
    return math.inf if spread == 0 else room / spread


def largest_magnitude(x: np.ndarray) -> float:
    """max|x| in float64, a chunk at a time; inf if any value is NaN or infinite."""
    flat, top = x.reshape(-1), 0.0
    for i in range(0, flat.size, _CHUNK):
        part = flat[i:i + _CHUNK]
        if part.dtype.kind == "f" and not np.isfinite(part).all():
            return math.inf
        top = max(top, abs(float(part.max())), abs(float(part.min())))
    return top


def check_inputs(model, x: np.ndarray, where: str) -> None:
    """ValueError naming ``where`` unless every input in ``x`` (the model's inputs: normalized
    pixels in its dtype) is within :func:`input_limit` of ``model``."""
    top, limit = largest_magnitude(x), input_limit(model)
    if top > limit:
        raise ValueError(
            f"{where}: the normalized pixels reach {top:.3g}; expected at most {limit:.3g}, the "
            f"largest this model's {np.dtype(model.dtype).name} arithmetic keeps finite (its "
            "LayerNorms square them: see vit.model.input_bound); pixels on another scale, or "
            "a normalization std far too small for them")
