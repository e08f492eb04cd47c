"""Per-channel normalization with statistics of the training pixels, computed in float64 a
chunk at a time (memory: the data plus one float64 chunk, never a float64 copy of the set)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.files import shorten

__all__ = ["Normalizer", "check_statistics", "all_finite", "STD_FLOOR", "MAX_MEAN",
           "CHUNK_ELEMENTS"]

#: Images normalized (and statistics summed) this many elements at a time.
CHUNK_ELEMENTS = 1 << 22

#: The smallest std a Normalizer divides by (float32's smallest normal number: a subnormal
#: std has lost its precision) and the largest |mean| it subtracts (float32's largest: the
#: mean of any float32 pixels), for ``check_statistics`` (a checkpoint's norm/ entries too).
#: The floor does not make the normalized inputs finite, let alone usable: 16 / STD_FLOOR is
#: 1.4e39, beyond float32. How large a normalized input may be depends on the model's weights
#: and dtype (its LayerNorms square the residual stream); that bound is derived and checked
#: where the inputs meet the model, by vit.model.input_bound.
STD_FLOOR = float(np.finfo(np.float32).tiny)
MAX_MEAN = float(np.finfo(np.float32).max)


def check_statistics(mean: np.ndarray, std: np.ndarray, mean_name: str, std_name: str) -> None:
    """ValueError unless every mean is finite with |mean| <= MAX_MEAN and every std finite
    and >= STD_FLOOR (float64 arrays of shape (C,)); the names say where they came from."""
    for values, name, ok, want in (
            (mean, mean_name, np.isfinite(mean) & (np.abs(mean) <= MAX_MEAN),
             f"finite numbers with |mean| <= {MAX_MEAN:.4g} (float32's largest)"),
            (std, std_name, np.isfinite(std) & (std >= STD_FLOOR),
             f"finite numbers >= {STD_FLOOR:.3g} (float32's smallest normal number; every "
             "channel's std > 0)")):
        if not ok.all():
            bad = values[~ok][:4].tolist()
            raise ValueError(f"{name}: holds {shorten(bad)}; expected {want}")


@dataclass
class Normalizer:
    """Per-channel ``(x - mean) / std`` with statistics from the training pixels."""

    mean: np.ndarray  # (C,) float64
    std: np.ndarray  # (C,) float64

    def __post_init__(self) -> None:
        for name in ("mean", "std"):
            value = np.asarray(getattr(self, name))
            if value.dtype.kind not in "biuf" or value.ndim != 1 or value.size == 0:
                raise ValueError(f"Normalizer {name}: got {value.dtype} of shape {value.shape}; "
                                 "expected real numbers of shape (C,), one per channel")
            value = value.astype(np.float64)
            if not np.isfinite(value).all():
                raise ValueError(f"Normalizer {name}: got {value.tolist()}; expected finite "
                                 "numbers")
            setattr(self, name, value)
        if self.mean.shape != self.std.shape:
            raise ValueError(f"Normalizer: mean of shape {self.mean.shape} and std of shape "
                             f"{self.std.shape}; expected the same (C,)")
        check_statistics(self.mean, self.std, "Normalizer mean", "Normalizer std")

    @classmethod
    def fit(cls, x_train: np.ndarray) -> Normalizer:
        """Mean and standard deviation of every training pixel, per channel (std 0 -> 1),
        computed in float64: float32 sums of large pixels overflow (std = inf) and lose
        the small differences of large ones."""
        x = _real_images(x_train, "Normalizer.fit x_train")
        if x.dtype.kind == "f" and not all_finite(x):
            raise ValueError("Normalizer.fit x_train: got NaN or infinite pixels; expected "
                             "finite values")
        n = x.shape[0] * x.shape[2] * x.shape[3]
        mean = sum(c.sum(axis=(0, 2, 3)) for c in _chunks64(x)) / n
        # two passes (not E[x^2] - E[x]^2, which cancels): the spread about the mean
        var = sum(np.square(c - mean[:, None, None]).sum(axis=(0, 2, 3))
                  for c in _chunks64(x)) / n
        std = np.sqrt(var)
        return cls(mean, np.where(std >= STD_FLOOR, std, 1.0))  # constant channels: 1

    def __call__(self, x: np.ndarray, dtype=np.float32) -> np.ndarray:
        """Normalized images in ``dtype``, computed in float64 a chunk of images at a time
        (memory: the output plus one float64 chunk)."""
        x = _real_images(x, "Normalizer x")
        if x.shape[1] != len(self.mean):
            raise ValueError(f"Normalizer x: got {x.shape[1]}-channel images of shape {x.shape};"
                             f" expected {len(self.mean)} channels, as fitted")
        out = np.empty(x.shape, dtype)
        mean, std = self.mean[:, None, None], self.std[:, None, None]
        for start, chunk in _chunks64(x, with_start=True):
            out[start:start + len(chunk)] = (chunk - mean) / std
        return out


def _chunks64(x: np.ndarray, with_start: bool = False):
    """``x`` (N, ...) in float64, a few images at a time (about ``CHUNK_ELEMENTS`` each)."""
    step = max(1, CHUNK_ELEMENTS // max(1, x[0].size))
    for start in range(0, len(x), step):
        chunk = np.asarray(x[start:start + step], np.float64)
        yield (start, chunk) if with_start else chunk


def all_finite(x: np.ndarray) -> bool:
    """Whether every value is finite, checked a chunk at a time (no whole-array mask)."""
    flat = x.reshape(-1)
    return all(np.isfinite(flat[i:i + CHUNK_ELEMENTS]).all()
               for i in range(0, flat.size, CHUNK_ELEMENTS))


def _real_images(x, where: str) -> np.ndarray:
    """``x`` as a (N, C, H, W) array of real numbers with N >= 1, else a clear error."""
    given = type(x).__name__
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{where}: got {given} of dtype {x.dtype}; expected real-valued images")
    if x.ndim != 4 or x.shape[0] == 0:
        raise ValueError(f"{where}: got shape {x.shape}; expected (N, C, H, W) images, N >= 1")
    return x
