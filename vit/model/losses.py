"""The model's losses and mixup.

The loss is the engine's fused ``cross_entropy`` (integer labels, soft targets, label
smoothing): it is re-exported here, not written again.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from minigrad import checks
from minigrad.functional import cross_entropy
from minigrad.ops.indexing import check_one_hot_size

__all__ = ["cross_entropy", "one_hot", "mixup", "Mixed"]


def one_hot(y, num_classes: int, dtype=np.float64) -> np.ndarray:
    """Integer labels (B,) -> (B, num_classes) rows with a single 1."""
    num_classes = _num_classes("one_hot", num_classes)
    y = np.asarray(y)
    if y.dtype.kind not in "iu" or y.ndim != 1:
        raise ValueError(f"one_hot y: got dtype {y.dtype} shape {y.shape}; expected integer "
                         "labels of shape (B,)")
    check_one_hot_size(len(y), num_classes)  # F.one_hot's bound, before the labels are read
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"one_hot y: got labels in [{y.min()}, {y.max()}]; expected integers "
                         f"in [0, {num_classes - 1}]")
    out = np.zeros((len(y), num_classes), dtype=dtype)
    out[np.arange(len(y)), y] = 1
    return out


def _num_classes(owner: str, value) -> int:
    return checks.positive_int("num_classes", value, owner=owner)


class Mixed(NamedTuple):
    """A mixed batch: images ``x`` and soft targets ``y``, the coefficient ``lam``, and
    ``index``, the partner of each example (x = lam x + (1 - lam) x[index])."""

    x: np.ndarray
    y: np.ndarray
    lam: float
    # The partner's index is the field's name in the API; it hides tuple.index(), which no
    # caller of a Mixed uses.
    index: np.ndarray  # type: ignore[assignment]


def mixup(x, y, num_classes: int, *, alpha: float = 0.2, lam: float | None = None,
          rng: np.random.Generator | None = None, flip: bool = False) -> Mixed:
    """Mixup (Zhang et al., 2018): x̃ = λ x + (1 - λ) x[π],  ỹ = λ y + (1 - λ) y[π].

    λ ~ Beta(alpha, alpha) unless ``lam`` is given; π is a random permutation of the batch
    (the paper's choice) or, with ``flip=True``, the reversed batch (timm's choice). Images
    and one-hot targets (integer labels are one-hot encoded; soft targets are mixed as they
    are) use the same λ. The inputs are not modified. Cross-entropy against ỹ equals
    λ·CE(y) + (1 - λ)·CE(y[π]) for the same prediction.
    """
    num_classes = _num_classes("mixup", num_classes)
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"mixup rng: got {type(rng).__name__}; expected a np.random.Generator "
                        "(np.random.default_rng(seed)) or None")
    if lam is not None:
        lam = checks.real("lam", lam, low=0, high=1, owner="mixup")
    x = np.asarray(x)
    y = np.asarray(y)
    if x.ndim < 1 or x.shape[0] == 0 or x.dtype.kind != "f":
        raise ValueError(f"mixup x: got dtype {x.dtype} shape {x.shape}; expected a floating "
                         "batch (B, ...) with B >= 1")
    B = x.shape[0]
    if y.dtype.kind in "iu":
        if y.shape != (B,):
            raise ValueError(f"mixup y: got labels of shape {y.shape}; expected ({B},)")
        target = one_hot(y, num_classes, x.dtype)
    elif y.dtype.kind == "f" and y.shape == (B, num_classes):
        target = y
    else:
        raise ValueError(f"mixup y: got dtype {y.dtype} shape {y.shape}; expected integer labels "
                         f"({B},) or soft targets ({B}, {num_classes})")
    alpha = checks.real("alpha", alpha, low=0, low_open=True, owner="mixup")
    if rng is None:
        rng = np.random.default_rng()
    if lam is None:
        lam = float(rng.beta(alpha, alpha))
    index = np.arange(B)[::-1].copy() if flip else rng.permutation(B)
    lam_x = x.dtype.type(lam)
    x_mixed = lam_x * x + (1 - lam_x) * x[index]
    y_mixed = lam * target + (1 - lam) * target[index]
    return Mixed(x_mixed, y_mixed.astype(x.dtype, copy=False), float(lam), index)
