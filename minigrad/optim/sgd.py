"""``SGD``: stochastic gradient descent with momentum, as ``torch.optim.SGD``."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .. import checks
from ..tensor import Tensor
from .optimizer import Optimizer, times
from .state import nonneg

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and L2 weight decay.

    As ``torch.optim.SGD``, per step with gradient g, weight decay λ, momentum μ, dampening τ::

        g ← -g  (maximize)
        g ← g + λ p
        if μ ≠ 0:  b ← g on the first update, else b ← μ b + (1 - τ) g
                   g ← g + μ b  (nesterov)   or   g ← b
        p ← p - lr g

    ``maximize=True`` ascends the objective (torch's ``maximize``).
    """

    _hyperparameters = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize")
    _buffer_names = ("momentum_buffer",)
    _flags = ("maximize",)

    def __init__(self, params: Iterable[Tensor], lr: float, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False, *, maximize: bool = False) -> None:
        super().__init__(params, lr)
        self.momentum = self._checked("momentum", momentum)
        self.dampening = self._checked("dampening", dampening)
        self.weight_decay = self._checked("weight_decay", weight_decay)
        self.nesterov = self._checked("nesterov", nesterov)
        self.maximize = self._checked("maximize", maximize)
        self._set_groups()

    def _checked_group(self, g: int, group: Mapping[str, Any]) -> dict[str, Any]:
        values = super()._checked_group(g, group)
        if values["nesterov"] and (values["momentum"] == 0 or values["dampening"] != 0):
            raise ValueError(f"param group {g} nesterov=True: got momentum={values['momentum']}"
                             f", dampening={values['dampening']}; expected momentum > 0 and "
                             "dampening = 0")
        return values

    def _checked(self, name: str, value: Any) -> Any:
        if name in ("nesterov", "maximize"):
            return checks.boolean(name, value)
        if name == "dampening":
            return nonneg(name, value, high=1.0, high_open=False)
        return nonneg(name, value)

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float,
                group: dict) -> tuple[np.ndarray, dict[str, Any]]:
        direction = grad  # an alias of p.grad: only ever replaced, never written into
        if group["weight_decay"] != 0:
            direction = times(param, group["weight_decay"])
            direction += grad
        new_state = {}
        mu = group["momentum"]
        if mu != 0:
            dampening = group["dampening"]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = direction.copy()
            else:
                buf = times(buf, mu)
                buf += direction if dampening == 0 else (1.0 - dampening) * direction
            new_state["momentum_buffer"] = buf
            direction = direction + mu * buf if group["nesterov"] else buf
        update = times(direction, lr)
        return np.subtract(param, update, out=update), new_state
