"""Loss modules, as ``torch.nn``'s: ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``,
``L1Loss``, ``SmoothL1Loss``, ``BCEWithLogitsLoss``. Each maps torch's constructor
arguments to its ``F`` function (``F.cross_entropy``, ...), called in ``forward(input,
target)``. Class weights (``weight``, ``pos_weight``) are buffers, as torch registers them:
saved in ``state_dict`` when given. Torch's long-deprecated ``size_average`` and ``reduce``
are not taken, so every argument after ``weight`` is keyword-only (given by position, torch's
order would put a value in ``size_average``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import checks
from .. import functional as F
from ..tensor import Tensor
from .module import Module

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss",
           "BCEWithLogitsLoss"]

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    """A loss: its ``reduction`` ('mean', 'sum' or 'none')."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = checks.choice("reduction", reduction, _REDUCTIONS,
                                       owner=type(self).__name__)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


def _class_axis(axis: int | None, x: Any) -> int:
    """Torch's class axis when ``axis`` is None: 1 of (N, C, d1, ...), 0 of (C,)."""
    if axis is not None:
        return axis
    return 1 if len(getattr(x, "shape", ())) >= 2 else 0


class CrossEntropyLoss(_Loss):
    """``F.cross_entropy(input, target, ...)``, as ``torch.nn.CrossEntropyLoss``: target
    class indices or class probabilities; ``weight`` (C,) per class; ``ignore_index``;
    ``label_smoothing`` in [0, 1]. The classes are on torch's axis unless ``axis`` is given:
    axis 1 of (N, C) or (N, C, d1, ...), axis 0 of (C,) (``F.cross_entropy``'s own default
    is the last axis).
    """

    weight: np.ndarray | None  # a buffer

    def __init__(self, weight: Any = None, *, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0,
                 axis: int | None = None) -> None:
        super().__init__(reduction)
        owner = "CrossEntropyLoss"
        self.register_buffer("weight", weight)
        self.ignore_index = checks.integer("ignore_index", ignore_index, owner=owner)
        self.label_smoothing = checks.real("label_smoothing", label_smoothing, low=0.0,
                                           high=1.0, owner=owner)
        self.axis = None if axis is None else checks.integer("axis", axis, owner=owner)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.cross_entropy(input, target, reduction=self.reduction,
                               label_smoothing=self.label_smoothing, weight=self.weight,
                               ignore_index=self.ignore_index,
                               axis=_class_axis(self.axis, input))

    def extra_repr(self) -> str:
        return (f"ignore_index={self.ignore_index}, reduction={self.reduction!r}, "
                f"label_smoothing={self.label_smoothing}")


class NLLLoss(_Loss):
    """``F.nll_loss(input, target, ...)``, as ``torch.nn.NLLLoss``: input log-probabilities
    with the classes on torch's axis (1 of (N, C, ...), 0 of (C,)) unless ``axis`` is
    given; ``weight`` (C,) per class; ``ignore_index``."""

    weight: np.ndarray | None  # a buffer

    def __init__(self, weight: Any = None, *, ignore_index: int = -100,
                 reduction: str = "mean", axis: int | None = None) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = checks.integer("ignore_index", ignore_index, owner="NLLLoss")
        self.axis = None if axis is None else checks.integer("axis", axis, owner="NLLLoss")

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction, axis=self.axis)

    def extra_repr(self) -> str:
        return f"ignore_index={self.ignore_index}, reduction={self.reduction!r}"


class MSELoss(_Loss):
    """(input - target)², then mean, sum or none (``F.mse_loss``), as ``torch.nn.MSELoss``."""

    def __init__(self, *, reduction: str = "mean") -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """|input - target|, then mean, sum or none (``F.l1_loss``), as ``torch.nn.L1Loss``."""

    def __init__(self, *, reduction: str = "mean") -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above (``F.smooth_l1_loss``), as
    ``torch.nn.SmoothL1Loss``; beta >= 0 (0: L1)."""

    def __init__(self, *, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction)
        self.beta = checks.real("beta", beta, low=0.0, owner="SmoothL1Loss")

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, beta={self.beta}"


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of sigmoid(input) (``F.binary_cross_entropy_with_logits``), as
    ``torch.nn.BCEWithLogitsLoss``: ``weight`` broadcast to the input, ``pos_weight`` (C,)
    weighing the positives of each class on the last axis; both buffers."""

    weight: np.ndarray | None
    pos_weight: np.ndarray | None

    def __init__(self, weight: Any = None, *, reduction: str = "mean",
                 pos_weight: Any = None) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (``F.binary_cross_entropy``), as
    ``torch.nn.BCELoss``: each log floored at -100; ``weight`` (a buffer) broadcast to the
    input."""

    weight: np.ndarray | None

    def __init__(self, weight: Any = None, *, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)
