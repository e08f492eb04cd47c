"""Classifying raw images with a trained model: what ``TinyViT.predict`` computes.

``predict(model, images)`` feeds images exactly as ``vit eval`` feeds its test split: float32
pixels (what vit's data loaders make of any file), normalized by the model's ``normalizer``
(its model file's, attached by ``vit.load``) into the model's dtype, then the logits in
batches of at most 512 images, their argmax the class. ``tta=True`` averages the softmax
over the test-time views of vit/model/views.py. Images clearly on another scale than the
model's training pixels (``model.input_range``) get one :class:`InputRangeWarning` per call.
``python -m vit predict`` (reading pictures and arrays) is vit/cli/predict.py.
"""
from __future__ import annotations

import warnings

import numpy as np

import minigrad as mg
from minigrad import Tensor, checks

from ..io.files import check_built
from .config import activation_bytes, current_limits
from .input_bound import check_inputs
from .normalizer import all_finite
from .views import TTA_SHIFTS, shifted

__all__ = ["predict", "as_batch", "as_float32", "top_k", "BATCH", "InputRangeWarning",
           "range_problem", "model_inputs", "softmax", "logits_of", "tta_probabilities"]


class InputRangeWarning(UserWarning):
    """Images whose values are clearly on another scale than the model's training pixels."""


def range_problem(low: float, high: float, trained: tuple[float, float] | None,
                  where: str = "TinyViT.predict images") -> str | None:
    """What is wrong with images of values in [low, high] for a model trained on pixels in
    ``trained`` = [a, b] (span s = b - a), or None: the images' largest value is below
    a + s/4 (pixels scaled to 0..1 for a model of 0..16 pixels), or a value lies more than
    s/2 beyond [a, b] (0..255 pixels for 0..16). Unknown range or s = 0: None."""
    if trained is None:
        return None
    a, b = trained
    span = b - a
    if not span > 0 or (a + span / 4 <= high <= b + span / 2 and low >= a - span / 2):
        return None
    return (f"{where}: pixel values in [{low:.4g}, {high:.4g}], but the model was trained on "
            f"pixels in [{a:.4g}, {b:.4g}]; expected images on the training scale (its "
            "answers on another scale are unreliable)")

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


def model_inputs(model, images, where: str = "TinyViT.predict images") -> np.ndarray:
    """Raw ``images`` (any layout of :func:`as_batch`) as the model's inputs (N, C, S, S) in
    its dtype, as ``vit eval`` makes them: float32 pixels normalized by ``model.normalizer``
    (none: cast as given; a copy, the caller's array is never touched). Warns once
    (:class:`InputRangeWarning`) when :func:`range_problem` finds the values on another scale
    than ``model.input_range``."""
    x = as_batch(images, model.config, where)
    low, high = float(np.min(x)), float(np.max(x))
    if model.normalizer is not None:
        out = model.normalizer(as_float32(x, where), model.dtype)
    else:
        out = x.astype(model.dtype)
    check_inputs(model, out, where)  # beyond it the LayerNorms overflow: NaN answers
    problem = range_problem(low, high, getattr(model, "input_range", None), where)
    if problem:
        warnings.warn(problem, InputRangeWarning, stacklevel=3)
    return out


def logits_of(model, x: np.ndarray) -> np.ndarray:
    """The model's logits (N, K) of inputs ``x`` in batches of at most ``BATCH``, no graph."""
    per_image = activation_bytes(model.config, model.dtype.itemsize)
    step = max(1, min(BATCH, current_limits()[1] // per_image))
    with mg.no_grad():
        return np.concatenate([model(Tensor(x[i:i + step])).data
                               for i in range(0, len(x), step)])


def softmax(logits: np.ndarray) -> np.ndarray:
    """p_k = exp(z_k - max z) / sum_j exp(z_j - max z), row-wise, in float64."""
    z = logits.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def tta_probabilities(model, x: np.ndarray) -> np.ndarray:
    """The softmax (N, K) float64 averaged over the views of ``TTA_SHIFTS`` of the model's
    inputs ``x``; outside the image each view reads a raw pixel of 0 (its normalized value),
    as the training augmentation does."""
    C = x.shape[1]
    fill = np.zeros(C) if model.normalizer is None else \
        model.normalizer(np.zeros((1, C, 1, 1)), np.float64)[0, :, 0, 0]
    views = (x if (dy, dx) == (0.0, 0.0) else shifted(x, dy, dx, fill) for dy, dx in TTA_SHIFTS)
    # summed in the views' order, as a running total would be
    return np.sum([softmax(logits_of(model, view)) for view in views], axis=0) / len(TTA_SHIFTS)


def predict(model, images, *, probabilities: bool = False, tta: bool = False) -> np.ndarray:
    """Classes (N,) int64 of raw ``images`` (any layout of :func:`as_batch`), the argmax of the
    logits; ``probabilities=True``: :func:`softmax` of the logits (N, K) in float64 instead.
    ``tta=True``: the softmax averaged over the image and its four half-pixel shifts
    (:func:`tta_probabilities`), and its argmax.

    The images become the model's inputs as ``vit eval`` makes them (:func:`model_inputs`:
    float32 pixels, normalized into the model's dtype), batches of ``BATCH``."""
    for name, value in (("probabilities", probabilities), ("tta", tta)):
        if not isinstance(value, bool):
            raise TypeError(f"TinyViT.predict {name}: got {value!r}; expected True or False")
    x = model_inputs(model, images)
    # the (N, K) logits, their float64 softmax, its exponentials and TTA's running sum (at most
    # 5 x 8 bytes a score) grow with the model file's class count, not with the images' bytes:
    # bounded first
    check_built("TinyViT.predict images", f"the scores of {len(x):,} images x "
                f"{model.config['num_classes']:,} classes", len(x) * model.config["num_classes"],
                5 * 8, current_limits()[1], "predict fewer images per call")
    if tta:
        probs = tta_probabilities(model, x)
        return probs if probabilities else np.argmax(probs, axis=1).astype(np.int64)
    logits = logits_of(model, x)
    if not probabilities:
        return np.argmax(logits, axis=1).astype(np.int64)
    return softmax(logits)


def top_k(probabilities: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, K) probabilities -> the k most probable classes (N, k) and their probabilities,
    most probable first; equal probabilities in class order. 1 <= k <= K."""
    checks.integer("k", k, low=1, high=np.shape(probabilities)[-1], owner="top_k")
    order = np.argsort(-probabilities, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(probabilities, order, axis=1)
