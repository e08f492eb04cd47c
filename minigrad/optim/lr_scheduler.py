"""PyTorch's schedulers by their names: ``StepLR``, ``CosineAnnealingLR``, ``LinearLR``,
``LambdaLR``, on the ``LRScheduler`` machinery of ``schedules.py`` (built, they set the
lrs of step 0; ``step()`` after ``optimizer.step()``; ``get_last_lr()``; a flat
``state_dict``). Each group with its own lr follows the schedule from its ``"initial_lr"``,
the groups that follow ``optimizer.lr`` from the optimizer's lr when the schedule was built
(``base_lr``), as torch scales each group's ``base_lrs``. No ``last_epoch`` argument: a run
resumes through ``load_state_dict`` (the optimizer's first).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .. import checks
from .optimizer import Optimizer
from .schedules import LRScheduler, _check_optimizer
from .state import nonneg

__all__ = ["StepLR", "CosineAnnealingLR", "LinearLR", "LambdaLR"]

_BASE = "base_lr (the optimizer's lr)"


class StepLR(LRScheduler):
    """``torch.optim.lr_scheduler.StepLR``: the lr times ``gamma`` every ``step_size`` steps::

        lr(s) = base_lr gamma^⌊s / step_size⌋

    (torch multiplies the previous lr by gamma instead; the two differ by a few rounding
    errors, the tests bound them). A gamma above 1 whose power overflows raises at that step.
    """

    _config = ("base_lr", "step_size", "gamma")

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1) -> None:
        _check_optimizer(optimizer)
        self._configure(base_lr=optimizer.lr, step_size=step_size, gamma=gamma)
        super().__init__(optimizer)

    def _configure(self, base_lr: float, step_size: int, gamma: float) -> None:
        self.step_size = checks.positive_int("step_size", step_size, owner="StepLR")
        self.gamma = nonneg("gamma", gamma)
        self.base_lr = nonneg(_BASE, base_lr)

    def lr_at(self, step: int, base: float | None = None) -> float:
        base = self.base_lr if base is None else base
        k = step // self.step_size
        try:
            lr = base * self.gamma ** k
        except OverflowError:
            lr = math.inf
        if not math.isfinite(lr):
            raise ValueError(f"StepLR: at step {step} the lr {base} * {self.gamma}**{k} "
                             "overflows; expected a gamma <= 1 or fewer steps")
        return lr


class CosineAnnealingLR(LRScheduler):
    """``torch.optim.lr_scheduler.CosineAnnealingLR``, by torch's recursive rule: lr(0) =
    base_lr and, with T = T_max and η = eta_min::

        lr(s) = η + (lr(s-1) - η) (1 + cos(π s / T)) / (1 + cos(π (s-1) / T))
        lr(s) = lr(s-1) + (base_lr - η) (1 - cos(π / T)) / 2     where (s - 1 - T) % 2T = 0

    which follows the closed form η + (base_lr - η) (1 + cos(π s / T)) / 2, periodic in
    2T, only up to rounding (relative 6e-14 after 600 steps with T = 50: its errors add up).
    Computed as torch computes it, the values are torch's to the bit. The recursion restarts
    exactly at s = T, 3T, 5T, ... (lr = η there whatever came before), so a jump (a loaded
    ``last_step``) costs at most 2T steps of it, and a steady ``step()`` one.
    """

    _config = ("base_lr", "T_max", "eta_min")

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0) -> None:
        _check_optimizer(optimizer)
        self._configure(base_lr=optimizer.lr, T_max=T_max, eta_min=eta_min)
        super().__init__(optimizer)

    def _configure(self, base_lr: float, T_max: int, eta_min: float) -> None:
        self.T_max = checks.positive_int("T_max", T_max, owner="CosineAnnealingLR")
        self.eta_min = nonneg("eta_min", eta_min)
        self.base_lr = nonneg(_BASE, base_lr)
        self._memo: dict[float, tuple[int, float]] = {}  # base -> (step, lr) last computed

    def _check_step(self, step: int) -> None:
        """Every step is valid (and its value may take 2T steps of the recursion)."""

    def _next(self, s: int, lr: float, base: float) -> float:
        """lr(s) from lr(s - 1): torch's get_lr, term by term in its order."""
        T, eta = self.T_max, self.eta_min
        if (s - 1 - T) % (2 * T) == 0:
            return lr + (base - eta) * (1 - math.cos(math.pi / T)) / 2
        return ((1 + math.cos(math.pi * s / T)) / (1 + math.cos(math.pi * (s - 1) / T))
                * (lr - eta) + eta)

    def lr_at(self, step: int, base: float | None = None) -> float:
        base = self.base_lr if base is None else base
        T, start, lr = self.T_max, 0, base
        restart = T + (step - T) // (2 * T) * 2 * T  # the last odd multiple of T <= step
        if step >= T and 1 + math.cos(math.pi * restart / T) == 0:
            start, lr = restart, self.eta_min  # 0 (lr(s-1) - η) + η: η exactly
        memo = self._memo.get(base)
        if memo is not None and start <= memo[0] <= step:
            start, lr = memo
        for s in range(start + 1, step + 1):
            lr = self._next(s, lr, base)
        self._memo[base] = (step, lr)
        return lr


class LinearLR(LRScheduler):
    """``torch.optim.lr_scheduler.LinearLR``: the factor of base_lr goes linearly from
    ``start_factor`` to ``end_factor`` over ``total_iters`` steps, then stays::

        lr(s) = base_lr (start + (end - start) min(s, total_iters) / total_iters)

    (torch's recursive form gives this within a few rounding errors; the tests bound them).
    As torch: start_factor in (0, 1], end_factor in [0, 1].
    """

    _config = ("base_lr", "start_factor", "end_factor", "total_iters")

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5) -> None:
        _check_optimizer(optimizer)
        self._configure(base_lr=optimizer.lr, start_factor=start_factor,
                        end_factor=end_factor, total_iters=total_iters)
        super().__init__(optimizer)

    def _configure(self, base_lr: float, start_factor: float, end_factor: float,
                   total_iters: int) -> None:
        self.start_factor = nonneg("start_factor", start_factor, low_open=True, high=1.0)
        self.end_factor = nonneg("end_factor", end_factor, high=1.0)
        self.total_iters = checks.positive_int("total_iters", total_iters, owner="LinearLR")
        self.base_lr = nonneg(_BASE, base_lr)

    def lr_at(self, step: int, base: float | None = None) -> float:
        base = self.base_lr if base is None else base
        done = min(step, self.total_iters) / self.total_iters
        return base * (self.start_factor + (self.end_factor - self.start_factor) * done)


class LambdaLR(LRScheduler):
    """``torch.optim.lr_scheduler.LambdaLR``: lr(s) = base_lr · f(s), with ``lr_lambda`` one
    function f for every group or a list of one per group. f(s) must return a finite number
    >= 0 (else the step raises, and no group's lr changes). ``state_dict`` saves
    ``last_step`` and ``base_lr`` but no function (as torch saves no lambda): build the
    schedule with the same functions, then load. ``optimizer.lr`` follows the function of
    the first group that follows it; each group's ``"lr"`` follows its own.
    """

    _config = ("base_lr",)

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]]) -> None:
        _check_optimizer(optimizer)
        count = len(optimizer.param_groups)
        if callable(lr_lambda):
            lambdas = [lr_lambda] * count
        elif isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != count:
                raise ValueError(f"LambdaLR lr_lambda: got a list of {len(lr_lambda)}; "
                                 f"expected one function per parameter group ({count})")
            lambdas = list(lr_lambda)
            for g, f in enumerate(lambdas):
                if not callable(f):
                    raise TypeError(f"LambdaLR lr_lambda[{g}]: got {type(f).__name__}; "
                                    "expected a function of the step")
        else:
            raise TypeError(f"LambdaLR lr_lambda: got {type(lr_lambda).__name__}; expected a "
                            "function of the step, or a list of one per parameter group")
        self.lr_lambdas = lambdas
        self._configure(base_lr=optimizer.lr)
        super().__init__(optimizer)

    def _configure(self, base_lr: float) -> None:
        self.base_lr = nonneg(_BASE, base_lr)

    def _group_lr(self, g: int, step: int, base: float | None) -> float:
        factor = self.lr_lambdas[g](step)
        name = f"LambdaLR lr_lambda[{g}]({step})"
        lr = (self.base_lr if base is None else base) * nonneg(name, factor)
        return nonneg(f"{name} times the base lr", lr)

    def lr_at(self, step: int, base: float | None = None) -> float:
        following = [g for g in range(len(self.optimizer.param_groups))
                     if not self.optimizer.has_own_lr(g)]
        return self._group_lr(following[0] if following else 0, step, base)
