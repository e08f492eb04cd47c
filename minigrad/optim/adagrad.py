"""``Adagrad``, as ``torch.optim.Adagrad``."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import checks
from ..tensor import Tensor
from .optimizer import Optimizer, times
from .state import nonneg

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad, as ``torch.optim.Adagrad``. At update t of a parameter, with weight decay λ,
    learning-rate decay η and accumulator start s0 (``initial_accumulator_value``)::

        g ← -g  (maximize)
        g ← g + λ p
        lr_t = lr / (1 + (t - 1) η)
        s ← s + g²                     (s starts at s0)
        p ← p - lr_t g / (√s + eps)

    State per parameter: ``sum`` (s) and the update count ``step``, as torch names them
    (absent until the parameter's first update, where torch fills them at construction: the
    same values). As torch, s starts at the constructor's ``initial_accumulator_value``
    whatever a group's own value (torch fills every parameter's state from it). eps (default
    1e-10) must be > 0: with s0 = 0 a zero gradient would divide 0 by 0. A float16 parameter
    is updated in float32 (state too), as in ``AdamW``.
    """

    _hyperparameters = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps",
                        "maximize")
    _buffer_names = ("sum",)
    _counter_names = ("step",)

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, *, maximize: bool = False) -> None:
        super().__init__(params, lr)
        self.lr_decay = self._checked("lr_decay", lr_decay)
        self.weight_decay = self._checked("weight_decay", weight_decay)
        self.initial_accumulator_value = self._checked("initial_accumulator_value",
                                                       initial_accumulator_value)
        self.eps = self._checked("eps", eps)
        self.maximize = self._checked("maximize", maximize)
        self._set_groups()
        self._check_numbers_of_every_param()

    def _checked(self, name: str, value: Any) -> Any:
        if name == "maximize":
            return checks.boolean(name, value)
        if name == "eps":
            return nonneg(name, value, low_open=True)
        return nonneg(name, value)

    float16_in_float32 = True

    def _check_buffer(self, where: str, name: str, value: np.ndarray) -> None:
        if name == "sum" and np.any(value < 0):
            raise ValueError(f"{where}: holds a negative value; expected a sum of squares "
                             "(from initial_accumulator_value >= 0), which is >= 0")

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float,
                group: dict) -> tuple[np.ndarray, dict[str, Any]]:
        t = state.get("step", 0) + 1
        base = param if param.dtype == grad.dtype else param.astype(grad.dtype)  # float16
        if group["weight_decay"] != 0:
            decayed = times(base, group["weight_decay"])
            decayed += grad  # a new array: p.grad is never written
            grad = decayed
        clr = lr / (1 + (t - 1) * group["lr_decay"])
        total = times(grad, 1.0)
        total *= grad
        if state:
            total += state["sum"]
        else:
            total += self.initial_accumulator_value
        std = np.sqrt(total, out=np.empty_like(total))
        std += group["eps"]
        step = np.divide(grad, std, out=std)
        step *= clr
        new = np.subtract(base, step, out=step)
        if new.dtype != param.dtype:  # float16: computed in float32, rounded once
            new = new.astype(param.dtype)
        return new, {"step": t, "sum": total}
