"""Resampled views of image batches: bilinear :func:`affine` transforms (the training
augmentation's, ``vit.train.augment``) and the fixed views of test-time augmentation.

The transforms map output pixels to input coordinates, ``src = matrix @ (row, col) + offset``
(the convention of ``scipy.ndimage.affine_transform``); a source pixel outside the image
reads as ``fill`` (``mode="grid-constant"`` in SciPy's terms), so a pixel straddling the
border blends into it.

Test-time augmentation (``predict(..., tta=True)``, ``vit eval --tta``): the softmax averaged
over the image and its four half-pixel translations, :data:`TTA_SHIFTS`, the views
docs/results.md measured (``scripts/recipe_search.py``, fixed before any run).
"""
from __future__ import annotations

import numpy as np

__all__ = ["affine", "TTA_SHIFTS", "shifted"]

#: (dy, dx) of the test-time views: the image and its four half-pixel translations.
TTA_SHIFTS = ((0.0, 0.0), (0.5, 0.0), (-0.5, 0.0), (0.0, 0.5), (0.0, -0.5))


def _batch(x) -> np.ndarray:
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f":
        kind = type(x).__name__ if not isinstance(x, np.ndarray) else f"array of {x.dtype}"
        raise TypeError(f"x: got {kind}; expected a floating-point ndarray (B, C, H, W)")
    if x.ndim != 4 or 0 in x.shape:
        raise ValueError(f"x: got shape {x.shape}; expected (B, C, H, W) with every size >= 1")
    return x


def _fill(fill, channels: int) -> np.ndarray:
    """``fill`` as a (C,) float64 array: a number, or one value per channel."""
    if isinstance(fill, bool):
        raise TypeError("fill: got bool; expected a number or one number per channel")
    try:
        f = np.asarray(fill, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"fill: got {type(fill).__name__}; expected a number or one number "
                        "per channel") from None
    if f.ndim == 0:
        f = np.full(channels, float(f))
    if f.shape != (channels,) or not np.isfinite(f).all():
        raise ValueError(f"fill: got {fill!r}; expected a finite number or {channels} finite "
                         "numbers (one per channel)")
    return f


def affine(x: np.ndarray, matrix: np.ndarray, offset: np.ndarray, fill=0.0) -> np.ndarray:
    """Bilinear resampling per image: ``out[b, c, p] = x[b, c, matrix[b] @ p + offset[b]]``.

    x: (B, C, H, W) floating; matrix: (B, 2, 2); offset: (B, 2), both in (row, col) pixel
    coordinates; fill: the value of pixels outside the image (a number or one per channel).
    Returns a new (B, C, H, W) array of x's dtype; ``x`` is not modified. The identity
    (``matrix = I``, ``offset = 0``) returns ``x`` exactly.
    """
    x = _batch(x)
    B, C, H, W = x.shape
    matrix = np.asarray(matrix, dtype=np.float64)
    offset = np.asarray(offset, dtype=np.float64)
    if matrix.shape != (B, 2, 2) or not np.isfinite(matrix).all():
        raise ValueError(f"matrix: got shape {matrix.shape}; expected finite ({B}, 2, 2), one "
                         "2x2 matrix per image")
    if offset.shape != (B, 2) or not np.isfinite(offset).all():
        raise ValueError(f"offset: got shape {offset.shape}; expected finite ({B}, 2), one "
                         "(row, col) offset per image")
    fill = _fill(fill, C)
    rows, cols = np.meshgrid(np.arange(H, dtype=np.float64), np.arange(W, dtype=np.float64),
                             indexing="ij")
    src = matrix @ np.stack([rows.ravel(), cols.ravel()]) + offset[:, :, None]  # (B, 2, HW)
    # Points beyond one pixel outside read only fill; clipping them there keeps the integer
    # corner indices small without changing any output.
    r = np.clip(src[:, 0], -1.0, H)
    c = np.clip(src[:, 1], -1.0, W)
    r0, c0 = np.floor(r), np.floor(c)
    fr, fc = r - r0, c - c0
    r0, c0 = r0.astype(np.intp), c0.astype(np.intp)
    flat = x.reshape(B, C, H * W)
    out = np.zeros((B, C, H * W), dtype=np.float64)
    for dr, wr in ((0, 1.0 - fr), (1, fr)):
        for dc, wc in ((0, 1.0 - fc), (1, fc)):
            rr, cc = r0 + dr, c0 + dc
            inside = (rr >= 0) & (rr < H) & (cc >= 0) & (cc < W)  # (B, HW)
            index = np.where(inside, rr * W + cc, 0)[:, None, :]
            values = np.take_along_axis(flat, index, axis=2)  # (B, C, HW)
            values = np.where(inside[:, None, :], values, fill[None, :, None])
            out += (wr * wc)[:, None, :] * values
    return out.reshape(B, C, H, W).astype(x.dtype, copy=False)


def shifted(x: np.ndarray, dy: float, dx: float, fill) -> np.ndarray:
    """Every image of ``x`` (B, C, H, W) moved by (dy, dx) pixels, bilinear, ``fill`` (per
    channel) where the moved image uncovers the frame: ``out[r, c] = x[r - dy, c - dx]``."""
    B = len(x)
    return affine(x, np.broadcast_to(np.eye(2), (B, 2, 2)), np.tile([-dy, -dx], (B, 1)),
                  fill=fill)
