"""A picture of one handwritten digit -> the 8x8 format of the bundled UCI digits (values 0..16).

The UCI "Optical Recognition of Handwritten Digits" data (Alpaydin and Kaynak, 1998) were made
from normalized 32x32 bitmaps: "32x32 bitmaps are divided into nonoverlapping blocks of 4x4
and the number of on pixels are counted in each block. This generates an input matrix of 8x8
where each element is an integer in the range 0..16." (the data set's description). A picture
of any size is brought to that bitmap first (docs/predict.md):

1. grayscale in [0, 1] (the caller decodes the file);
2. ink and paper told apart by Otsu's threshold; the side that holds most of the picture's
   border is the paper, so light ink on a dark ground is handled like dark ink on paper;
3. cropped to the ink's bounding box, scaled (area average, keeping the aspect ratio) so that
   its longer side spans the 32-pixel frame, centred in it;
4. thresholded at half coverage to a 32x32 bitmap;
5. on-pixels counted in 4x4 blocks -> (8, 8) integers 0..16.

Pure NumPy; ``vit.predict`` decodes PNG and JPEG files with Pillow before calling
:func:`digit_features`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["digit_features", "ink_mask", "fit_to_frame", "block_counts", "area_resize",
           "otsu_threshold", "FRAME", "BLOCK"]

#: The side of the normalized bitmap and of its counting blocks (UCI optdigits: 32 and 4).
FRAME, BLOCK = 32, 4


def _gray(gray, where: str) -> np.ndarray:
    g = np.asarray(gray)
    if g.dtype.kind not in "biuf":
        raise TypeError(f"{where}: got dtype {g.dtype}; expected real gray levels")
    if g.ndim != 2 or 0 in g.shape:
        raise ValueError(f"{where}: got shape {g.shape}; expected a (H, W) grayscale picture")
    g = g.astype(np.float64)
    if not np.isfinite(g).all() or g.min() < 0 or g.max() > 1:
        raise ValueError(f"{where}: got gray levels outside [0, 1] (or NaN); expected 0 = "
                         "black .. 1 = white")
    return g


def otsu_threshold(gray: np.ndarray, bins: int = 256) -> float:
    """The level t in [0, 1] that best splits the gray levels into two classes (Otsu 1979):
    t maximizes the between-class variance w0 w1 (mu0 - mu1)^2 over a ``bins``-bin histogram.
    Pixels < t are one class, >= t the other; nan if all levels fall in one bin."""
    hist = np.bincount(np.minimum((gray * bins).astype(np.int64), bins - 1).ravel(),
                       minlength=bins).astype(np.float64)
    levels = (np.arange(bins) + 0.5) / bins
    w0 = np.cumsum(hist)[:-1]  # split after bin i: bins 0..i are the dark class
    w1 = hist.sum() - w0
    s0 = np.cumsum(hist * levels)[:-1]  # the dark class's sum of levels
    s1 = (hist * levels).sum() - s0
    with np.errstate(invalid="ignore", divide="ignore"):
        between = w0 * w1 * (s0 / w0 - s1 / w1) ** 2
    between[(w0 == 0) | (w1 == 0)] = -1
    best = int(np.argmax(between))
    return float("nan") if between[best] < 0 else (best + 1) / bins


def ink_mask(gray, where: str = "digit picture") -> np.ndarray:
    """(H, W) gray levels in [0, 1] -> (H, W) bool, True on the ink.

    Otsu's threshold splits dark from light; the class holding most of the border pixels is
    the paper (a digit rarely fills the border), so light-on-dark pictures come out the same
    as dark-on-light ones. ValueError if the picture has a single level (no digit)."""
    g = _gray(gray, where)
    t = otsu_threshold(g)
    if not np.isfinite(t):
        raise ValueError(f"{where}: every pixel has the same gray level; expected a dark digit "
                         "on a light ground (or light on dark)")
    dark = g < t
    border = np.concatenate([dark[0], dark[-1], dark[1:-1, 0], dark[1:-1, -1]])
    return ~dark if border.mean() > 0.5 else dark


def area_resize(a: np.ndarray, height: int, width: int) -> np.ndarray:
    """(H, W) -> (height, width) by area averaging: each output pixel is the mean of the input
    over its footprint, fractional pixels weighted by their overlap (up- and down-scaling).
    Along each axis out_i = (A(hi_i) - A(lo_i)) / s, s = n_in / n_out, [lo_i, hi_i) =
    [i s, (i+1) s), with A(x) the integral of the pixels up to x (a prefix sum, linear inside
    a pixel): memory linear in the picture, whatever its aspect ratio."""
    out = np.asarray(a, np.float64)
    for axis, n_out in ((0, height), (1, width)):
        out = _area_axis(out, axis, n_out)
    return out


def _area_axis(a: np.ndarray, axis: int, n_out: int) -> np.ndarray:
    """``area_resize`` along one axis (see there)."""
    a = np.moveaxis(a, axis, 0)
    n_in = a.shape[0]
    prefix = np.concatenate([np.zeros((1,) + a.shape[1:]), np.cumsum(a, axis=0)])
    padded = np.concatenate([a, np.zeros((1,) + a.shape[1:])])  # A(n_in) needs a[n_in] * 0

    def integral(x: np.ndarray) -> np.ndarray:  # A(x) = prefix[k] + (x - k) a[k], k = floor x
        k = np.minimum(np.floor(x).astype(np.int64), n_in)
        return prefix[k] + (x - k)[:, None] * padded[k]

    s = n_in / n_out
    edges = np.arange(n_out + 1) * s
    edges[-1] = n_in  # the last edge exactly, not n_out * s rounded
    area = integral(edges[1:]) - integral(edges[:-1])
    return np.moveaxis(area / s, 0, axis)


def fit_to_frame(mask: np.ndarray, frame: int = FRAME) -> np.ndarray:
    """(H, W) bool ink -> (frame, frame) bool bitmap: the ink's bounding box scaled so that its
    longer side is ``frame`` pixels (aspect ratio kept), centred, on where >= half covered."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if rows.size == 0:
        raise ValueError("digit picture: no ink found; expected a digit")
    box = mask[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    scale = frame / max(box.shape)
    h, w = (max(1, min(frame, round(n * scale))) for n in box.shape)
    out = np.zeros((frame, frame), bool)
    top, left = (frame - h) // 2, (frame - w) // 2
    out[top:top + h, left:left + w] = area_resize(box, h, w) >= 0.5
    return out


def block_counts(bitmap: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """(S, S) bool bitmap -> (S/block, S/block) int64: on-pixels in each block x block tile."""
    b = np.asarray(bitmap, bool)
    S = b.shape[0]
    if b.ndim != 2 or b.shape[1] != S or S % block:
        raise ValueError(f"block_counts bitmap: got shape {b.shape}; expected a square bitmap "
                         f"whose side is a multiple of {block}")
    return b.reshape(S // block, block, S // block, block).sum(axis=(1, 3), dtype=np.int64)


def digit_features(gray, where: str = "digit picture") -> np.ndarray:
    """(H, W) gray levels in [0, 1] of one digit -> (8, 8) int64 counts 0..16, as UCI optdigits."""
    return block_counts(fit_to_frame(ink_mask(gray, where)))
