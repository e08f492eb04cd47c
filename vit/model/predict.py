"""Classifying raw images with a trained model: what ``TinyViT.predict`` computes.

``predict(model, images)`` feeds images exactly as ``vit eval`` feeds its test split: float32
pixels (what vit's data loaders make of any file), normalized by the model's ``normalizer``
(the checkpoint's, attached by ``vit.load``) into the model's dtype, then the logits in
batches of at most 512 images, their argmax the class. ``python -m vit predict`` (reading
pictures and arrays) is vit/cli/predict.py.
"""
from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad import Tensor, checks

from .config import activation_bytes, current_limits
from .normalizer import all_finite

__all__ = ["predict", "as_batch", "as_float32", "top_k", "BATCH"]

#: Images per forward pass, as ``vit eval`` (fewer if the activations would exceed
#: ``vit.model.config.limits``), so that the logits are those of ``vit eval`` to the bit.
BATCH = 512


# ---- the Python API --------------------------------------------------------------------------
def as_batch(images, config: dict, where: str = "TinyViT.predict images") -> np.ndarray:
    """Raw images in any layout the model can take -> an (N, C, S, S) view of them: (N, S, S)
    for one channel, (N, C, S, S) (the model's own layout, preferred when both fit) or
    (N, S, S, C). Values must be real and finite."""
    C, S = config["in_chans"], config["img_size"]
    given = type(images).__name__
    x = np.asarray(images.data if isinstance(images, Tensor) else images)
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{where}: got {given} of dtype {x.dtype}; expected real pixel values")
    if x.ndim == 3 and C == 1 and x.shape[1:] == (S, S):
        x = x[:, None]
    elif x.ndim == 4 and x.shape[1:] != (C, S, S) and x.shape[1:] == (S, S, C):
        x = x.transpose(0, 3, 1, 2)
    if x.ndim != 4 or x.shape[1:] != (C, S, S) or x.shape[0] == 0:
        gray = f"(N, {S}, {S}), " if C == 1 else ""
        raise ValueError(f"{where}: got shape {x.shape}; expected {gray}(N, {C}, {S}, {S}) or "
                         f"(N, {S}, {S}, {C}) with N >= 1 for this model's {C}x{S}x{S} inputs")
    if x.dtype.kind == "f" and not all_finite(x):
        raise ValueError(f"{where}: got NaN or infinite pixels; expected finite values")
    return x


def as_float32(x: np.ndarray, where: str) -> np.ndarray:
    """Pixels as float32, what vit's data loaders make of any file (so what ``vit eval``
    normalizes); refused if a value is beyond float32's range."""
    with np.errstate(over="ignore"):  # such a value is refused just below
        out = x.astype(np.float32)
    if x.dtype.kind == "f" and x.dtype.itemsize > 4 and not all_finite(out):
        raise ValueError(f"{where}: got pixels beyond float32's range; expected values within "
                         f"+-{np.finfo(np.float32).max:.3g}")
    return out


def predict(model, images, *, probabilities: bool = False) -> np.ndarray:
    """Classes (N,) int64 of raw ``images`` (any layout of :func:`as_batch`), the argmax of the
    logits; ``probabilities=True``: softmax(logits) (N, K) in float64 instead,
    p_k = exp(z_k - max z) / sum_j exp(z_j - max z).

    With a ``model.normalizer`` (a checkpoint's, from ``vit.load``) the images are taken as
    ``vit eval`` takes its test split: float32 pixels, normalized into the model's dtype,
    batches of ``BATCH``. Without one they are the model's inputs, cast to its dtype."""
    if not isinstance(probabilities, bool):
        raise TypeError(f"TinyViT.predict probabilities: got {probabilities!r}; expected True "
                        "or False")
    x = as_batch(images, model.config)
    if model.normalizer is not None:
        x = model.normalizer(as_float32(x, "TinyViT.predict images"), model.dtype)
    else:
        x = x.astype(model.dtype)  # a copy: the caller's array is never touched
    per_image = activation_bytes(model.config, model.dtype.itemsize)
    step = max(1, min(BATCH, current_limits()[1] // per_image))
    with mg.no_grad():
        logits = np.concatenate([model(Tensor(x[i:i + step])).data
                                 for i in range(0, len(x), step)])
    if not probabilities:
        return np.argmax(logits, axis=1).astype(np.int64)
    z = logits.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def top_k(probabilities: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, K) probabilities -> the k most probable classes (N, k) and their probabilities,
    most probable first; equal probabilities in class order. 1 <= k <= K."""
    checks.integer("k", k, low=1, high=np.shape(probabilities)[-1], owner="top_k")
    order = np.argsort(-probabilities, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(probabilities, order, axis=1)
