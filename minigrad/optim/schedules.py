"""Learning-rate schedules: ``WarmupCosine`` and ``OneCycle`` (PyTorch's ``OneCycleLR``).

A schedule sets the learning rates when it is built and at every ``step()``: ``optimizer.lr``
(which every group without its own ``"lr"`` follows) from the schedule's base lr, and each
group with its own ``"lr"`` from that group's ``"initial_lr"``, as PyTorch's schedulers scale
each group's base lr::

    opt = AdamW(model.parameters(), lr=1e-3)
    sched = WarmupCosine(opt, warmup_steps=100, total_steps=1000)
    for batch in data:
        model.zero_grad(); loss(batch).backward(); opt.step(); sched.step()
"""
from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import checks
from .optimizer import Optimizer
from .state import nonneg

__all__ = ["LRScheduler", "WarmupCosine", "OneCycle"]


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizer: got {type(optimizer).__name__}; expected an Optimizer")


class LRScheduler:
    """Base class of the schedules: ``lr_at(s)`` is the learning rate of step s (from 0).

    Building a schedule sets ``optimizer.lr = lr_at(0)``; each ``step()`` (call it after
    ``optimizer.step()``) advances ``last_step`` by one and sets ``optimizer.lr`` again.
    Subclasses list their settings in ``_config`` (saved in ``state_dict``) and check them in
    ``_configure``, which the constructor and ``load_state_dict`` both call.
    """

    _config: tuple[str, ...] = ()

    def __init__(self, optimizer: Optimizer) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.last_step = 0
        for g, group in enumerate(optimizer.param_groups):
            group["initial_lr"] = self._initial_lr(optimizer.group_lr(g))
        self._apply()

    def _initial_lr(self, lr: float) -> float:
        """A group's base lr, from its lr when the schedule is built (PyTorch's
        ``initial_lr``)."""
        return lr

    def lr_at(self, step: int, base: float | None = None) -> float:
        """The learning rate of step ``step`` (from 0) for a group of base lr ``base``
        (None: the schedule's own base, the one ``optimizer.lr`` follows)."""
        raise NotImplementedError

    def get_lr(self) -> float:
        """The learning rate of the current step (``lr_at(last_step)``)."""
        return self.lr_at(self.last_step)

    @property
    def lr(self) -> float:
        return self.get_lr()

    def step(self) -> None:
        """Advance to the next step and set its lrs; if that raises, nothing moved."""
        self.last_step += 1
        try:
            self._apply()
        except BaseException:
            self.last_step -= 1
            raise

    def get_last_lr(self) -> list[float]:
        """The learning rate of every group, in order, as set by the last ``step()`` (or the
        constructor): torch's ``get_last_lr()``."""
        return [self.optimizer.group_lr(g) for g in range(len(self.optimizer.param_groups))]

    def _group_lr(self, g: int, step: int, base: float | None) -> float:
        """Group ``g``'s learning rate at ``step`` from its base (None: the schedule's own,
        for a group that follows ``optimizer.lr``); ``LambdaLR`` has one function a group."""
        return self.lr_at(step, base)

    def _apply(self) -> None:
        """Set every group's lr for ``last_step``: all computed first, so a schedule that
        raises (a user's function, a step past the end) changes none."""
        opt = self.optimizer
        lrs = []
        for g, group in enumerate(opt.param_groups):
            own = opt.has_own_lr(g)  # a group with its own lr scales its own base
            base = group.setdefault("initial_lr", group["lr"]) if own else None
            lrs.append(self._group_lr(g, self.last_step, base))
        opt.lr = self.get_lr()  # the groups that follow optimizer.lr, too
        for group, lr in zip(opt.param_groups, lrs, strict=True):
            group["lr"] = lr

    def state_dict(self) -> dict[str, np.ndarray]:
        """``last_step`` and the settings, as 0-d arrays."""
        out = {"last_step": np.array(self.last_step)}
        out.update((name, np.array(getattr(self, name))) for name in self._config)
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore ``last_step`` and the settings, and set the optimizer's lrs to match
        (a group with its own lr from its ``initial_lr``, which the optimizer's state holds:
        load the optimizer's state first)."""
        checks.state_mapping(type(self).__name__, state)
        checks.state_keys(type(self).__name__, state, {"last_step", *self._config})
        owner = f"{type(self).__name__}.load_state_dict"
        values = {}
        for name in self._config:
            a = np.asarray(state[name])
            if a.shape != () or a.dtype.kind not in "biuf":
                raise ValueError(f"{owner}: {name} got {state[name]!r}; expected one number")
            values[name] = a.item()
        last = np.asarray(state["last_step"])
        if last.shape != () or last.dtype.kind not in "iu" or int(last) < 0:
            raise ValueError(f"{owner}: last_step got {state['last_step']!r}; expected an "
                             "integer >= 0")
        trial = copy.copy(self)  # the constructor's checks, before self changes
        try:
            trial._configure(**values)
            trial._check_step(int(last))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{owner}: {e}" if "last_step" not in str(e) and
                             "stepped to" not in str(e) else
                             f"{owner}: last_step got {int(last)}: {e}") from None
        self._configure(**values)
        self.last_step = int(last)
        self._apply()

    #: ``_configure(**settings)`` checks and sets the settings named in ``_config`` (the
    #: constructor's checks); each subclass names its own arguments
    _configure: Callable[..., None]

    def _check_step(self, step: int) -> None:
        """Raise if the schedule cannot be at ``step`` (``load_state_dict``'s check)."""
        self.lr_at(step)


class WarmupCosine(LRScheduler):
    """Linear warmup to the optimizer's lr (``base_lr``), then cosine decay to ``min_lr``.

    With W = warmup_steps, T = total_steps and step s counted from 0::

        lr(s) = base_lr (s + 1) / W                                 for s < W
        lr(s) = min_lr + (base_lr - min_lr) (1 + cos(π p)) / 2,     p = (min(s, T) - W) / (T - W)

    so the warmup never uses lr 0, lr(W - 1) = lr(W) = base_lr, and lr reaches min_lr at
    s = T and stays there. A group with its own lr follows the same curve with its
    ``initial_lr`` for base_lr (and the one min_lr, as torch's ``eta_min``).
    """

    _config = ("base_lr", "warmup_steps", "total_steps", "min_lr")

    def __init__(self, optimizer: Optimizer, warmup_steps: int, total_steps: int,
                 min_lr: float = 0.0) -> None:
        _check_optimizer(optimizer)
        self._configure(base_lr=optimizer.lr, warmup_steps=warmup_steps,
                        total_steps=total_steps, min_lr=min_lr)
        super().__init__(optimizer)

    def _configure(self, base_lr: float, warmup_steps: int, total_steps: int,
                   min_lr: float) -> None:
        total_steps = checks.positive_int("total_steps", total_steps)
        warmup_steps = checks.integer("warmup_steps", warmup_steps, low=0)
        if warmup_steps >= total_steps:
            raise ValueError(f"warmup_steps: got {warmup_steps!r}; expected an integer in "
                             f"[0, total_steps={total_steps})")
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps
        self.min_lr = nonneg("min_lr", min_lr)
        self.base_lr = nonneg("base_lr (the optimizer's lr)", base_lr)

    def lr_at(self, step: int, base: float | None = None) -> float:
        base = self.base_lr if base is None else base
        if step < self.warmup_steps:
            return base * (step + 1) / self.warmup_steps
        p = ((min(step, self.total_steps) - self.warmup_steps)
             / (self.total_steps - self.warmup_steps))
        return self.min_lr + (base - self.min_lr) * (1.0 + math.cos(math.pi * p)) / 2.0


class OneCycle(LRScheduler):
    """``torch.optim.lr_scheduler.OneCycleLR`` with ``anneal_strategy='cos'``,
    ``three_phase=False`` (the lr only; momentum is not cycled).

    With initial = max_lr / div_factor, final = initial / final_div_factor, T = total_steps,
    E = pct_start T - 1 and cos_anneal(a, b, x) = b + (a - b) (1 + cos(π x)) / 2::

        lr(s) = cos_anneal(initial, max_lr, s / E)              for s <= E
        lr(s) = cos_anneal(max_lr, final, (s - E) / (T - 1 - E))  otherwise

    so lr(0) = initial and lr(T - 1) = final. Stepping past s = T raises, as in torch.
    Where torch divides by zero (a phase of zero length) this takes x = 1. As torch with
    one ``max_lr``, every group (also one with its own lr) peaks at ``max_lr``: its
    ``initial_lr`` is ``max_lr / div_factor``.
    """

    _config = ("max_lr", "total_steps", "pct_start", "div_factor", "final_div_factor")

    def __init__(self, optimizer: Optimizer, max_lr: float, total_steps: int,
                 pct_start: float = 0.3, div_factor: float = 25.0,
                 final_div_factor: float = 1e4) -> None:
        self._configure(max_lr=max_lr, total_steps=total_steps, pct_start=pct_start,
                        div_factor=div_factor, final_div_factor=final_div_factor)
        super().__init__(optimizer)

    def _configure(self, max_lr: float, total_steps: int, pct_start: float,
                   div_factor: float, final_div_factor: float) -> None:
        self.max_lr = nonneg("max_lr", max_lr)
        self.total_steps = checks.positive_int("total_steps", total_steps)
        self.pct_start = nonneg("pct_start", pct_start, high=1.0)
        self.div_factor = nonneg("div_factor", div_factor, low_open=True)
        self.final_div_factor = nonneg("final_div_factor", final_div_factor, low_open=True)

    def _initial_lr(self, lr: float) -> float:
        return self.max_lr / self.div_factor  # as torch: every group peaks at max_lr

    def lr_at(self, step: int, base: float | None = None) -> float:
        if step > self.total_steps:
            raise ValueError(f"OneCycle: stepped to step {step}; the schedule has "
                             f"total_steps={self.total_steps}")
        max_lr = self.max_lr if base is None else base * self.div_factor
        initial = max_lr / self.div_factor
        final = initial / self.final_div_factor
        warm_end = float(self.pct_start * self.total_steps) - 1
        if step <= warm_end:
            start, end, first, last = initial, max_lr, 0.0, warm_end
        else:
            start, end, first, last = max_lr, final, warm_end, self.total_steps - 1
        pct = (step - first) / (last - first) if last != first else 1.0
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
