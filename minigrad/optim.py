"""Optimizers (``SGD``, ``AdamW``); the learning-rate schedules (``minigrad/schedules.py``) are
re-exported here.

The update rules follow PyTorch's ``torch.optim`` exactly (the tests compare them). They
update ``p.data`` in place, in the parameter's dtype, and never modify ``p.grad``; a
parameter whose ``.grad`` is None is skipped. ``state_dict()`` is a flat ``str -> np.ndarray``
dict (scalars as 0-d arrays), so ``np.savez`` stores a checkpoint without pickle.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Iterable, Mapping

import numpy as np

from .tensor import Tensor

__all__ = ["Optimizer", "SGD", "AdamW", "LRScheduler", "WarmupCosine", "OneCycle"]


def _real(name: str, value: Any, *, low: float = 0.0, low_open: bool = False,
          high: float = math.inf, high_open: bool = True) -> float:
    """``value`` as a Python float (so float32 arrays stay float32), checked to lie in range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: got {value!r}; expected a real number")
    value = float(value)
    above = value > low if low_open else value >= low
    below = value < high if high_open else value <= high
    if not (above and below):  # also rejects nan
        expected = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{name}: got {value}; expected a number in {expected}")
    return value


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name}: got {value!r}; expected a positive integer")
    return int(value)


class StateDictKeyError(KeyError, ValueError):
    """A state dict's names do not match: a KeyError (a lookup) and a ValueError (a bad
    argument), whose message prints as written."""

    def __str__(self) -> str:
        return str(self.args[0])


def _check_state(owner: str, state: Any) -> None:
    if not isinstance(state, Mapping) and not hasattr(state, "keys"):
        raise TypeError(f"{owner}.load_state_dict state: got {type(state).__name__}; expected "
                        "a mapping of names to arrays (a state_dict() or np.load of one)")


def _check_keys(owner: str, state: Mapping[str, Any], expected: set) -> None:
    missing = sorted(expected - set(state))
    unexpected = sorted(set(state) - expected)
    if missing or unexpected:
        raise StateDictKeyError(
            f"{owner}.load_state_dict: missing keys {missing}, unexpected keys {unexpected}; "
            "expected exactly the keys of its state_dict()"
        )


class Optimizer:
    """Base class: holds the parameters, ``lr``, the step count and per-parameter state.

    Subclasses name their hyperparameters (saved in ``state_dict``) and per-parameter
    state, and implement ``_update(param, grad, state, lr)`` on plain arrays.
    """

    _hyperparameters: tuple[str, ...] = ("lr",)
    #: per-parameter arrays shaped like the parameter
    _buffer_names: tuple[str, ...] = ()
    #: per-parameter integer counters
    _counter_names: tuple[str, ...] = ()

    def __init__(self, params: Iterable[Tensor], lr: float) -> None:
        if isinstance(params, Tensor):
            raise TypeError("params: got a single Tensor; expected an iterable of Tensors "
                            "(e.g. [t] or model.parameters())")
        try:
            params = list(params)
        except TypeError:
            raise TypeError(f"params: got {type(params).__name__}; expected an iterable of "
                            "Tensors (e.g. model.parameters())") from None
        if not params:
            raise ValueError("params: got an empty list; expected at least one parameter")
        seen: set[int] = set()
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"params[{i}]: got {type(p).__name__}; expected a Tensor")
            if not p.requires_grad:
                raise ValueError(f"params[{i}]: got a tensor of shape {p.shape} that does not "
                                 "require grad; expected requires_grad=True (a Parameter)")
            if not p.is_leaf:
                raise ValueError(f"params[{i}]: got the result of op '{p.op}'; expected a leaf "
                                 "tensor (a Parameter), the only kind backward() fills .grad of")
            if id(p) in seen:
                raise ValueError(f"params[{i}]: the same tensor appears twice; each parameter "
                                 "must be listed once (it would be updated twice per step)")
            seen.add(id(p))
        self.params: list[Tensor] = params
        self.lr = _real("lr", lr)
        self.step_count = 0
        self.state: list[dict[str, Any]] = [{} for _ in params]

    def zero_grad(self) -> None:
        """Set every parameter's ``.grad`` to None."""
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        """Update every parameter that has a gradient, once, in place. Every gradient is
        checked first: a bad one raises before any parameter moves."""
        lr = _real("lr", self.lr)
        work = []
        for p, state in zip(self.params, self.state):
            grad = p.grad
            if grad is None:
                continue
            if grad.shape != p.data.shape:
                raise ValueError(f"step: a gradient of shape {grad.shape} for a parameter of "
                                 f"shape {p.data.shape}; expected equal shapes")
            if grad.dtype.kind not in "biuf":
                raise TypeError(f"step: a gradient of dtype {grad.dtype} for a parameter of "
                                f"dtype {p.data.dtype}; expected real numbers")
            work.append((p, grad, state))
        self.step_count += 1
        for p, grad, state in work:
            self._update(p.data, grad.astype(p.data.dtype, copy=False), state, lr)

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float) -> None:
        raise NotImplementedError

    # ---- checkpoints ------------------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        """Flat copy of the state: ``num_params``, ``step_count``, each hyperparameter, and
        ``state.<i>.<name>`` for parameter i's buffers and counters (absent until its first
        update)."""
        out = {"num_params": np.array(len(self.params)), "step_count": np.array(self.step_count)}
        for name in self._hyperparameters:
            out[name] = np.array(getattr(self, name))
        for i, state in enumerate(self.state):
            for name, value in state.items():
                out[f"state.{i}.{name}"] = np.array(value, copy=True)
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a ``state_dict()`` (or its ``np.load`` of an .npz) into this optimizer.

        The parameters must be the same, in the same order: ``num_params``, every buffer's
        shape and dtype are checked, and nothing is changed unless every check passes.
        Arrays are copied, so ``state`` is never modified.
        """
        owner = type(self).__name__
        _check_state(owner, state)
        per_param = set(self._buffer_names) | set(self._counter_names)
        states: list[dict[str, Any]] = [{} for _ in self.params]
        expected = {"num_params", "step_count", *self._hyperparameters}
        for key in state:
            index, dot, name = key.removeprefix("state.").partition(".")
            if key.startswith("state.") and dot and name in per_param and index.isdigit() \
                    and int(index) < len(self.params):
                states[int(index)][name] = state[key]
                expected.add(key)
        _check_keys(owner, state, expected)
        if int(state["num_params"]) != len(self.params):
            raise ValueError(f"{owner}.load_state_dict: num_params got {int(state['num_params'])};"
                             f" expected {len(self.params)}")
        for i, (p, entries) in enumerate(zip(self.params, states)):
            if entries and set(entries) != per_param:
                raise KeyError(f"{owner}.load_state_dict: parameter {i} has state "
                               f"{sorted(entries)}; expected all of {sorted(per_param)} or none")
            for name in self._buffer_names:
                if name not in entries:
                    continue
                value = np.asarray(entries[name])
                if value.shape != p.data.shape or value.dtype != p.data.dtype:
                    raise ValueError(
                        f"{owner}.load_state_dict: state.{i}.{name} got shape {value.shape} "
                        f"dtype {value.dtype}; expected shape {p.data.shape} dtype {p.data.dtype}"
                    )
                entries[name] = value.copy()
            for name in self._counter_names:
                if name in entries:
                    entries[name] = int(entries[name])
        hyper = {name: self._hyperparameter_from_array(name, np.asarray(state[name]))
                 for name in self._hyperparameters}
        for name, value in hyper.items():
            setattr(self, name, value)
        self.step_count = int(state["step_count"])
        self.state = states

    def _hyperparameter_from_array(self, name: str, value: np.ndarray) -> Any:
        current = getattr(self, name)
        if isinstance(current, bool):
            return bool(value)
        if isinstance(current, tuple):
            if value.shape != (len(current),):
                raise ValueError(f"{type(self).__name__}.load_state_dict: {name} got shape "
                                 f"{value.shape}; expected ({len(current)},)")
            return tuple(float(v) for v in value)
        return float(value)


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and L2 weight decay.

    As ``torch.optim.SGD``, per step with gradient g, weight decay λ, momentum μ, dampening τ::

        g ← g + λ p
        if μ ≠ 0:  b ← g on the first update, else b ← μ b + (1 - τ) g
                   g ← g + μ b  (nesterov)   or   g ← b
        p ← p - lr g
    """

    _hyperparameters = ("lr", "momentum", "dampening", "weight_decay", "nesterov")
    _buffer_names = ("momentum_buffer",)

    def __init__(self, params: Iterable[Tensor], lr: float, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        super().__init__(params, lr)
        self.momentum = _real("momentum", momentum)
        self.dampening = _real("dampening", dampening, high=1.0, high_open=False)
        self.weight_decay = _real("weight_decay", weight_decay)
        self.nesterov = bool(nesterov)
        if self.nesterov and (self.momentum == 0 or self.dampening != 0):
            raise ValueError(f"nesterov=True: got momentum={self.momentum}, dampening="
                             f"{self.dampening}; expected momentum > 0 and dampening = 0")

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float) -> None:
        direction = grad  # an alias of p.grad: only ever replaced, never written into
        if self.weight_decay != 0:
            direction = param * self.weight_decay
            direction += grad
        mu = self.momentum
        if mu != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = direction.copy()
            else:
                buf *= mu
                buf += direction if self.dampening == 0 else (1.0 - self.dampening) * direction
            direction = direction + mu * buf if self.nesterov else buf
        param -= lr * direction


class AdamW(Optimizer):
    """Adam with decoupled weight decay, as ``torch.optim.AdamW``. At update t of a parameter::

        p ← p (1 - lr λ)
        m ← β1 m + (1 - β1) g,        v ← β2 v + (1 - β2) g²
        m̂ = m / (1 - β1^t),           v̂ = v / (1 - β2^t)
        p ← p - lr m̂ / (√v̂ + eps)

    t counts the updates of that parameter (a step where its grad is None does not count).
    """

    _hyperparameters = ("lr", "betas", "eps", "weight_decay")
    _buffer_names = ("exp_avg", "exp_avg_sq")
    _counter_names = ("step",)

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2) -> None:
        super().__init__(params, lr)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"betas: got {betas!r}; expected a pair (beta1, beta2)")
        self.betas = (_real("betas[0]", betas[0], high=1.0), _real("betas[1]", betas[1], high=1.0))
        self.eps = _real("eps", eps)
        self.weight_decay = _real("weight_decay", weight_decay)

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float) -> None:
        beta1, beta2 = self.betas
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(param)
            state["exp_avg_sq"] = np.zeros_like(param)
        state["step"] += 1
        t = state["step"]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        if self.weight_decay != 0:
            param *= 1.0 - lr * self.weight_decay
        # One scratch array serves every temporary of this update.
        scratch = np.multiply(grad, 1.0 - beta1)
        m *= beta1
        m += scratch
        np.multiply(grad, grad, out=scratch)
        scratch *= 1.0 - beta2
        v *= beta2
        v += scratch
        np.sqrt(v, out=scratch)
        scratch /= math.sqrt(1.0 - beta2 ** t)
        scratch += self.eps
        np.divide(m, scratch, out=scratch)
        scratch *= lr / (1.0 - beta1 ** t)
        param -= scratch


# The schedules live in their own module; optim re-exports them (the public API).
from .schedules import LRScheduler, OneCycle, WarmupCosine  # noqa: E402
