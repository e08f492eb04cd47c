"""``RMSprop``, as ``torch.optim.RMSprop``."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import checks
from ..tensor import Tensor
from .optimizer import Optimizer, times
from .state import nonneg

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop, as ``torch.optim.RMSprop``. Per step with gradient g, smoothing α, weight
    decay λ, momentum μ::

        g ← -g  (maximize)
        g ← g + λ p
        v ← α v + (1 - α) g²
        centered:  ḡ ← α ḡ + (1 - α) g,    d = √(v - ḡ²) + eps;    otherwise d = √v + eps
        μ > 0:     b ← μ b + g / d,        p ← p - lr b;            otherwise p ← p - lr g / d

    State per parameter: ``square_avg`` (v), ``grad_avg`` (ḡ, zeros unless centered),
    ``momentum_buffer`` (b, zeros unless μ > 0) and the update count ``step``; all three
    buffers are kept whatever the settings, so a group may change ``centered`` or
    ``momentum`` between steps and a checkpoint always has the same keys. A float16
    parameter is updated in float32 (state kept in float32), as in ``AdamW``.
    """

    _hyperparameters = ("lr", "alpha", "eps", "weight_decay", "momentum", "centered",
                        "maximize")
    _buffer_names = ("square_avg", "grad_avg", "momentum_buffer")
    _counter_names = ("step",)
    _flags = ("maximize",)

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, *, maximize: bool = False) -> None:
        super().__init__(params, lr)
        self.alpha = self._checked("alpha", alpha)
        self.eps = self._checked("eps", eps)
        self.weight_decay = self._checked("weight_decay", weight_decay)
        self.momentum = self._checked("momentum", momentum)
        self.centered = self._checked("centered", centered)
        self.maximize = self._checked("maximize", maximize)
        self._set_groups()

    def _checked(self, name: str, value: Any) -> Any:
        if name in ("centered", "maximize"):
            return checks.boolean(name, value)
        if name == "alpha":
            return nonneg(name, value, high=1.0)
        if name == "eps":
            return nonneg(name, value, low_open=True)
        return nonneg(name, value)

    float16_in_float32 = True

    def _check_buffer(self, where: str, name: str, value: np.ndarray) -> None:
        if name == "square_avg" and np.any(value < 0):
            raise ValueError(f"{where}: holds a negative value; expected the running mean of "
                             "g², which is >= 0 (its square root would be NaN)")

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float,
                group: dict) -> tuple[np.ndarray, dict[str, Any]]:
        alpha, eps, mu = group["alpha"], group["eps"], group["momentum"]
        if state:
            v, avg, buf = state["square_avg"], state["grad_avg"], state["momentum_buffer"]
        else:
            v = avg = buf = np.zeros(param.shape, grad.dtype)
        base = param if param.dtype == grad.dtype else param.astype(grad.dtype)  # float16
        if group["weight_decay"] != 0:
            decayed = times(base, group["weight_decay"])
            decayed += grad  # a new array: p.grad is never written
            grad = decayed
        v = times(v, alpha)
        v += (1.0 - alpha) * (grad * grad)
        if group["centered"]:
            avg = times(avg, alpha)
            avg += (1.0 - alpha) * grad
            denom = np.sqrt(v - avg * avg)
        else:
            denom = np.sqrt(v)
        denom += eps
        step = np.divide(grad, denom, out=denom)
        if mu > 0:
            buf = times(buf, mu)
            buf += step
            step = buf
        update = times(step, lr)
        new = np.subtract(base, update, out=update)
        if new.dtype != param.dtype:  # float16: computed in float32, rounded once
            new = new.astype(param.dtype)
        return new, {"step": state.get("step", 0) + 1, "square_avg": v, "grad_avg": avg,
                     "momentum_buffer": buf}
