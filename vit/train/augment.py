"""Random affine augmentation of image batches: rotation, zoom and sub-pixel translation.

Every image of a ``(B, C, H, W)`` batch gets its own transform, applied with bilinear
interpolation in one vectorised gather (no loop over images). The transforms map output
pixels to input coordinates, ``src = matrix @ (row, col) + offset`` (the convention of
``scipy.ndimage.affine_transform``); a source pixel outside the image reads as ``fill``
(``mode="grid-constant"`` in SciPy's terms), so a pixel straddling the border blends into it.

:func:`affine` applies given transforms; :func:`random_affine_params` draws them;
:func:`random_affine` does both (the training option ``--rotate/--scale/--translate``);
:func:`random_shift` is the whole-pixel translation of ``--shift`` (edges replicated).
"""
from __future__ import annotations

import math

import numpy as np

from minigrad import checks

__all__ = ["affine", "random_affine_params", "random_affine", "random_shift"]


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
    translate = _range("translate", translate, 0.0, math.inf)
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
