"""``AdamW``: Adam with decoupled weight decay, as ``torch.optim.AdamW``."""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .. import checks
from ..tensor import Tensor
from .optimizer import Optimizer, times
from .state import betas_pair, nonneg

__all__ = ["AdamW"]


class AdamW(Optimizer):
    """Adam with decoupled weight decay, as ``torch.optim.AdamW``. At update t of a parameter::

        g ← -g  (maximize)
        p ← p (1 - lr λ)
        m ← β1 m + (1 - β1) g,        v ← β2 v + (1 - β2) g²
        amsgrad:  v_max ← max(v_max, v),  v̂ = v_max / (1 - β2^t);   otherwise v̂ = v / (1 - β2^t)
        m̂ = m / (1 - β1^t)
        p ← p - lr m̂ / (√v̂ + eps)

    t counts the updates of that parameter (a step where its grad is None does not count).
    ``amsgrad=True`` keeps the running maximum ``max_exp_avg_sq`` (v_max, from 0) in the
    parameter's state as torch does; a group that turns amsgrad off drops it at its next step
    (and one that turns it on starts it from 0, so its first v_max is v).

    A float16 parameter is updated in float32, with its state ``m``, ``v`` kept in float32,
    and the result rounded to float16 once per step (as mixed-precision training keeps
    optimizer state in float32): in float16, eps = 1e-8 rounds to 0 (so a zero gradient
    gives 0/0 = NaN), and (1 - β2) g² underflows to 0 for |g| < 0.008, which turns the step
    into lr m / eps. eps must be > 0, and at least the smallest normal number of the dtype
    the update is computed in (float32: 1.2e-38).
    """

    _hyperparameters = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")
    _buffer_names = ("exp_avg", "exp_avg_sq")
    _counter_names = ("step",)
    _flags = ("amsgrad", "maximize")

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr)
        self.betas = self._checked("betas", betas)
        self.eps = self._checked("eps", eps)
        self.weight_decay = self._checked("weight_decay", weight_decay)
        self.amsgrad = self._checked("amsgrad", amsgrad)
        self.maximize = self._checked("maximize", maximize)
        self._set_groups()
        self._check_numbers_of_every_param()

    def _checked(self, name: str, value: Any) -> Any:
        if name == "betas":
            return betas_pair(value)
        if name in ("amsgrad", "maximize"):
            return checks.boolean(name, value)
        if name == "eps":
            return nonneg(name, value, low_open=True)
        return nonneg(name, value)

    float16_in_float32 = True

    def _buffers_for(self, group: Mapping[str, Any]) -> tuple[str, ...]:
        return self._buffer_names + (("max_exp_avg_sq",) if group.get("amsgrad") else ())

    def _check_buffer(self, where: str, name: str, value: np.ndarray) -> None:
        if name in ("exp_avg_sq", "max_exp_avg_sq") and np.any(value < 0):
            raise ValueError(f"{where}: holds a negative value; expected the running mean of "
                             "g², which is >= 0 (its square root would be NaN)")

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float,
                group: dict) -> tuple[np.ndarray, dict[str, Any]]:
        beta1, beta2 = group["betas"]
        weight_decay, eps = group["weight_decay"], group["eps"]
        t = state.get("step", 0) + 1
        zeros = None if state else np.zeros(param.shape, grad.dtype)
        m = state["exp_avg"] if state else zeros
        v = state["exp_avg_sq"] if state else zeros
        base = param if param.dtype == grad.dtype else param.astype(grad.dtype)  # float16
        if weight_decay != 0:
            base = times(base, 1.0 - lr * weight_decay)
        # One scratch array serves every temporary of this update.
        scratch = times(grad, 1.0 - beta1)
        m = times(m, beta1)
        m += scratch
        np.multiply(grad, grad, out=scratch)
        scratch *= 1.0 - beta2
        v = times(v, beta2)
        v += scratch
        v_max = None  # amsgrad off: a v_max left from before is dropped
        if group["amsgrad"]:
            v_max = np.maximum(state.get("max_exp_avg_sq", 0.0), v, out=np.empty_like(v))
        np.sqrt(v if v_max is None else v_max, out=scratch)
        scratch /= math.sqrt(1.0 - beta2 ** t)
        scratch += eps
        np.divide(m, scratch, out=scratch)
        scratch *= lr / (1.0 - beta1 ** t)
        new = np.subtract(base, scratch, out=base if base is not param else scratch)
        if new.dtype != param.dtype:  # float16: computed in float32, rounded once
            new = new.astype(param.dtype)
        return new, {"step": t, "exp_avg": m, "exp_avg_sq": v, "max_exp_avg_sq": v_max}
