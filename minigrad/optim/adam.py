"""``Adam``: Adam with L2 weight decay added to the gradient, as ``torch.optim.Adam``."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..tensor import Tensor
from .adamw import AdamW
from .optimizer import times

__all__ = ["Adam"]


class Adam(AdamW):
    """Adam, as ``torch.optim.Adam``. At update t of a parameter, with weight decay λ
    coupled into the gradient (L2 regularisation, unlike ``AdamW``)::

        g ← -g  (maximize)
        g ← g + λ p
        m ← β1 m + (1 - β1) g,        v ← β2 v + (1 - β2) g²
        amsgrad:  v_max ← max(v_max, v),  v̂ = v_max / (1 - β2^t);   otherwise v̂ = v / (1 - β2^t)
        m̂ = m / (1 - β1^t)
        p ← p - lr m̂ / (√v̂ + eps)

    Same state (``exp_avg``, ``exp_avg_sq``, ``step``, and ``max_exp_avg_sq`` with amsgrad),
    dtype rules and checks as ``AdamW``; ``weight_decay`` defaults to 0 as in torch.
    """

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize)

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float,
                group: dict) -> tuple[np.ndarray, dict[str, Any]]:
        if group["weight_decay"] != 0:
            base = param if param.dtype == grad.dtype else param.astype(grad.dtype)
            decayed = times(base, group["weight_decay"])
            decayed += grad  # a new array: p.grad is never written
            grad = decayed
        return super()._update(param, grad, state, lr, {**group, "weight_decay": 0.0})
