"""Random affine augmentation of image batches: rotation, zoom and sub-pixel translation.

Every image of a ``(B, C, H, W)`` batch gets its own transform, applied with bilinear
interpolation in one vectorised gather (no loop over images). The transforms map output
pixels to input coordinates, ``src = matrix @ (row, col) + offset`` (the convention of
``scipy.ndimage.affine_transform``); a source pixel outside the image reads as ``fill``
(``mode="grid-constant"`` in SciPy's terms), so a pixel straddling the border blends into it.

:func:`affine` (vit/model/views.py, shared with test-time augmentation) applies given
transforms; :func:`random_affine_params` draws them;
:func:`random_affine` does both (the training option ``--rotate/--scale/--translate``);
:func:`random_shift` is the whole-pixel translation of ``--shift`` (edges replicated).
"""
from __future__ import annotations

import numpy as np

from minigrad import checks

from ..model.views import _batch, affine

__all__ = ["affine", "random_affine_params", "random_affine", "random_shift", "MAX_TRANSLATE"]

#: The largest random translation, in pixels. The sampler draws it in float64 and the
#: sampling positions are pixel coordinates that the model's dtype must still tell apart:
#: float32 holds every integer up to 2**24 exactly and no more, and no image side the
#: activation bound admits comes near 2**24, so a shift of 2**24 already moves every pixel
#: out of the image (only fill is left). A larger one would only lose precision, or overflow
#: (``uniform(-t, t)`` needs ``2 t`` finite).
MAX_TRANSLATE = float(2**24)


def _range(name: str, value, low: float, high: float, closed: bool = True) -> float:
    try:
        return checks.real(name, value, low=low, high=high, high_open=not closed)
    except TypeError:  # the same rule, naming the type that was passed (a str, a bool)
        raise TypeError(f"{name}: got {type(value).__name__} {value!r}; expected a number") \
            from None


def random_affine_params(n: int, size: tuple[int, int], rng: np.random.Generator,
                         rotate: float = 0.0, scale: float = 0.0,
                         translate: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(matrix (n, 2, 2), offset (n, 2)) of n random transforms about the image centre.

    Each image is rotated by an angle uniform in [-rotate, rotate] degrees, zoomed by a
    factor uniform in [1 - scale, 1 + scale] and moved by (dy, dx), each uniform in
    [-translate, translate] pixels: ``out(p) = in(centre + R(-angle) (p - centre - t) / zoom)``.
    """
    n = checks.positive_int("n", n)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: got {type(rng).__name__}; expected a numpy.random.Generator")
    rotate = _range("rotate", rotate, 0.0, 180.0)
    scale = _range("scale", scale, 0.0, 1.0, closed=False)
    translate = _range("translate", translate, 0.0, MAX_TRANSLATE)
    angle = np.deg2rad(rng.uniform(-rotate, rotate, n))
    zoom = rng.uniform(1.0 - scale, 1.0 + scale, n)
    shift = rng.uniform(-translate, translate, (n, 2))
    cos, sin = np.cos(angle) / zoom, np.sin(angle) / zoom
    matrix = np.stack([np.stack([cos, sin], -1), np.stack([-sin, cos], -1)], -2)  # R(-angle)/zoom
    centre = (np.asarray(size, dtype=np.float64) - 1.0) / 2.0
    offset = centre - np.einsum("bij,bj->bi", matrix, centre + shift)
    return matrix, offset


def random_affine(x: np.ndarray, rng: np.random.Generator, rotate: float = 0.0,
                  scale: float = 0.0, translate: float = 0.0, fill=0.0) -> np.ndarray:
    """Each image of x (B, C, H, W) under its own random rotation, zoom and translation (see
    :func:`random_affine_params`), bilinear, ``fill`` outside. Labels are not involved: the
    transforms keep a digit's class. Returns a new array; ``x`` is not modified."""
    x = _batch(x)
    matrix, offset = random_affine_params(len(x), x.shape[2:], rng, rotate=rotate, scale=scale,
                                          translate=translate)
    return affine(x, matrix, offset, fill=fill)


def random_shift(x: np.ndarray, pixels: int, rng: np.random.Generator) -> np.ndarray:
    """Translate each image by (dy, dx), each uniform in [-pixels, pixels], replicating the
    edge rows and columns into the space uncovered."""
    B, _, H, W = x.shape
    dy, dx = rng.integers(-pixels, pixels + 1, size=(2, B))
    rows = np.clip(np.arange(H) - dy[:, None], 0, H - 1)  # (B, H)
    cols = np.clip(np.arange(W) - dx[:, None], 0, W - 1)  # (B, W)
    out = x[np.arange(B)[:, None, None], :, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))
