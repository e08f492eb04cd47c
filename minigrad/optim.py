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


def _times(a: np.ndarray, c: float) -> np.ndarray:
    """``a * c`` as a new array, also for a 0-d ``a`` (where NumPy would give a scalar)."""
    return np.multiply(a, c, out=np.empty_like(a))


def _where(i: int, data: np.ndarray) -> str:
    return f"step: parameter {i} (shape {data.shape}, {data.dtype})"


def _all_finite(a: Any) -> bool:
    """True if ``a`` is not an array or every element of it is finite."""
    return not isinstance(a, np.ndarray) or bool(np.isfinite(a).all())


def _counter(where: str, value: Any, low: int) -> int:
    """An integer count read from a state dict: a 0-d integer array or an int, >= low."""
    a = np.asarray(value)
    if a.shape != () or a.dtype.kind not in "iu" or int(a) < low:
        expected = "a positive integer" if low == 1 else f"an integer >= {low}"
        raise ValueError(f"{where}: got {a.tolist()!r}; expected {expected}")
    return int(a)


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

    ``params`` is an iterable of Tensors, or of parameter groups as in PyTorch: dicts with a
    ``"params"`` list and any hyperparameters that differ from the constructor's, e.g.
    ``AdamW([{"params": weights}, {"params": norms_and_biases, "weight_decay": 0.0}], lr=...)``.
    Every group follows the one learning rate ``optimizer.lr`` (the one a schedule sets), so
    a group cannot set its own ``lr``. ``param_groups`` lists the groups with their values;
    a value changed there (``opt.param_groups[0]["weight_decay"] = 0.1``) takes effect at the
    next ``step()``, which checks it as the constructor does.

    Subclasses name their hyperparameters (saved in ``state_dict``) and per-parameter
    state, check a hyperparameter's value in ``_checked(name, value)`` (and a group's
    combination of values in ``_checked_group``), and implement
    ``_update(param, grad, state, lr, group) -> (new_param, new_state)`` on plain arrays,
    writing into neither.
    """

    _hyperparameters: tuple[str, ...] = ("lr",)
    #: per-parameter arrays shaped like the parameter
    _buffer_names: tuple[str, ...] = ()
    #: per-parameter integer counters
    _counter_names: tuple[str, ...] = ()

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float) -> None:
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
        groups = params if all(isinstance(g, dict) for g in params) else [{"params": params}]
        self._group_specs = groups  # checked in _set_groups, once the defaults exist
        self.params: list[Tensor] = []
        self.lr = _real("lr", lr)
        self.step_count = 0

    def _set_groups(self) -> None:
        """Check the parameters and each group's overrides (subclass __init__ calls this
        after setting the defaults)."""
        names = [n for n in self._hyperparameters if n != "lr"]
        self.param_groups: list[dict[str, Any]] = []
        seen: set[int] = set()
        for g, spec in enumerate(self._group_specs):
            if not isinstance(spec, dict) or "params" not in spec:
                raise TypeError(f"params[{g}]: got {type(spec).__name__}; expected a Tensor or a "
                                "group dict with a 'params' list")
            defaults = {name: getattr(self, name) for name in names}
            group: dict[str, Any] = {"params": None, **self._checked_group(g, {**defaults,
                                                                             **spec})}
            members = spec["params"]
            if isinstance(members, Tensor):
                members = [members]
            try:
                members = list(members)
            except TypeError:
                raise TypeError(f"params[{g}]['params']: got {type(members).__name__}; expected "
                                "an iterable of Tensors") from None
            group["params"] = members
            self.param_groups.append(group)
            for p in members:
                i = len(self.params)
                if not isinstance(p, Tensor):
                    raise TypeError(f"params[{i}]: got {type(p).__name__}; expected a Tensor")
                if not p.requires_grad:
                    raise ValueError(f"params[{i}]: got a tensor of shape {p.shape} that does "
                                     "not require grad; expected requires_grad=True (a Parameter)")
                if not p.is_leaf:
                    raise ValueError(f"params[{i}]: got the result of op '{p.op}'; expected a "
                                     "leaf tensor (a Parameter), the only kind backward() fills "
                                     ".grad of")
                if id(p) in seen:
                    raise ValueError(f"params[{i}]: the same tensor appears twice; each parameter "
                                     "must be listed once (it would be updated twice per step)")
                seen.add(id(p))
                self.params.append(p)
        if not self.params:
            raise ValueError("params: got no parameter in any group; expected at least one")
        self.state: list[dict[str, Any]] = [{} for _ in self.params]
        self._group_of = [group for group in self.param_groups for _ in group["params"]]
        # each group's parameters as built (a group's "params" list may be edited later)
        self._members = [tuple(group["params"]) for group in self.param_groups]
        del self._group_specs

    def _checked(self, name: str, value: Any) -> Any:
        """``value`` checked as hyperparameter ``name`` (a group's override)."""
        return _real(name, value)

    def _checked_group(self, g: int, group: Mapping[str, Any]) -> dict[str, Any]:
        """Group ``g``'s hyperparameters, each checked as the constructor checks it: the one
        check for the constructor and for every ``step()`` (a value changed in
        ``param_groups`` after construction is checked there)."""
        names = self._group_names()
        if "lr" in group:
            raise ValueError(f"params[{g}] lr: every group follows optimizer.lr (which a "
                             "schedule sets); set weight_decay and the like per group")
        unknown = sorted(set(group) - {"params", *names})
        if unknown:
            raise ValueError(f"params[{g}]: unknown keys {unknown}; expected 'params' and "
                             f"any of {names}")
        missing = sorted(set(names) - set(group))
        if missing:
            raise ValueError(f"params[{g}]: missing keys {missing}; expected all of {names}")
        return {name: self._checked(name, group[name]) for name in names}

    def zero_grad(self) -> None:
        """Set every parameter's ``.grad`` to None."""
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        """Update every parameter that has a gradient, once, in place, and bump its version
        (so a graph recorded before the step refuses to backward). All or nothing: every
        parameter, gradient, state buffer and hyperparameter (each group's, as the
        constructor checks them) is checked first, and every new value is computed before
        any is applied; a step that turns a finite parameter or state value into inf or NaN
        (an lr too large for the dtype) raises a ValueError naming the parameter and the lr,
        and nothing moves. A NaN or inf already in a gradient or parameter goes through,
        as in ``torch.optim``."""
        lr = _real("lr", self.lr)
        checked, first = {}, 0
        for g, group in enumerate(self.param_groups):
            members = self._members[g]
            given = group.get("params")
            if not isinstance(given, (list, tuple)) or len(given) != len(members) or \
                    any(a is not b for a, b in zip(given, members)):
                raise ValueError(f"step: optimizer.param_groups[{g}]['params'] was changed after "
                                 "construction; expected the parameters it was built with "
                                 "(build a new optimizer for other parameters)")
            try:
                checked[id(group)] = self._checked_group(g, group)
            except (TypeError, ValueError) as e:
                dtypes = ", ".join(sorted({str(p.data.dtype) for p in members}))
                raise type(e)(f"{e} (step: optimizer.param_groups[{g}] was changed after "
                              f"construction; it holds {len(members)} {dtypes} parameter(s), "
                              f"from parameter {first}; nothing was updated)") from None
            first += len(members)
        work = []
        for i, (p, state, group) in enumerate(zip(self.params, self.state, self._group_of)):
            group = checked[id(group)]
            grad = p.grad
            if grad is None:
                continue
            data = p.data
            if not isinstance(data, np.ndarray) or data.dtype.kind != "f":
                raise TypeError(f"step: parameter {i} holds {type(data).__name__} of dtype "
                                f"{getattr(data, 'dtype', None)}; expected a floating array "
                                "(was its .data replaced?)")
            if grad.shape != data.shape:
                raise ValueError(f"{_where(i, data)}: a gradient of shape {grad.shape}; "
                                 "expected the parameter's shape")
            if grad.dtype.kind not in "biuf":
                raise TypeError(f"{_where(i, data)}: a gradient of dtype {grad.dtype}; "
                                "expected real numbers")
            if not data.flags.writeable:
                raise ValueError(f"{_where(i, data)}: its array is read-only; expected a "
                                 "writeable array (nothing was updated)")
            compute = self._compute_dtype(data.dtype)
            for name, buf in state.items():
                if isinstance(buf, np.ndarray) and (buf.shape != data.shape
                                                    or buf.dtype != compute):
                    raise ValueError(
                        f"step: parameter {i} has state {name} of shape {buf.shape} dtype "
                        f"{buf.dtype}, but the parameter now has shape {data.shape} dtype "
                        f"{data.dtype} (was its .data replaced?); expected shape {data.shape} "
                        f"dtype {compute}: load a matching state_dict or build a new optimizer"
                    )
            self._check_numbers(i, compute, lr, group)
            work.append((i, p, grad.astype(compute, copy=False), state, group))
        results = []
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked just below
            for i, p, grad, state, group in work:
                new, new_state = self._update(p.data, grad, state, lr, group)
                if not all(_all_finite(a) for a in (new, *new_state.values())):
                    self._check_finite(i, p.data, grad, state, new, new_state, lr)
                results.append((p, new, state, new_state))
        self.step_count += 1
        for p, new, state, new_state in results:
            p.data[...] = new
            state.update(new_state)
            p.bump_version()

    def _check_finite(self, i: int, old: np.ndarray, grad: np.ndarray, state: dict,
                      new: np.ndarray, new_state: dict, lr: float) -> None:
        """Raise if the step turned a finite number into inf or NaN: where the parameter,
        its gradient and its state were all finite, the new parameter and state must be.
        (A NaN or inf already there goes through, as in torch.optim.)"""
        finite = np.isfinite(old) & np.isfinite(grad)
        for buf in state.values():
            if isinstance(buf, np.ndarray):
                finite &= np.isfinite(buf)
        for what, value in (("the parameter", new), *((f"its state {name}", v)
                                                      for name, v in new_state.items())):
            bad = finite & ~np.isfinite(value)
            if bad.any():
                at = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
                raise ValueError(
                    f"step: the update of parameter {i} (shape {old.shape}, {old.dtype}) "
                    f"overflows {what} at {int(bad.sum())} of its {bad.size} elements (first at "
                    f"index {tuple(int(k) for k in at)}: {old[at]} with gradient {grad[at]} "
                    f"gives {value[at]}) with lr {lr}; nothing was changed (no parameter or "
                    "state moved); expected a smaller lr (or smaller gradients)"
                )

    def _compute_dtype(self, dtype: np.dtype) -> np.dtype:
        """The dtype a parameter of ``dtype`` is updated in (and its state buffers are kept in)."""
        return dtype

    def _check_numbers(self, i: int, compute: np.dtype, lr: float, group: dict) -> None:
        """The step's numbers must fit the dtype they are used in: a learning rate (or a
        factor) that overflows it makes every update inf without an error."""
        top = float(np.finfo(compute).max)
        for name, value in (("lr", lr), *((n, group[n]) for n in self._group_names())):
            if isinstance(value, float) and abs(value) > top:
                raise ValueError(
                    f"{name}: got {value}; it overflows {compute}, the dtype parameter {i} is "
                    f"updated in; expected at most {top}"
                )

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float,
                group: dict) -> tuple[np.ndarray, dict[str, Any]]:
        """The new values of ``param`` (in its dtype) and of its state, from ``grad`` (in
        ``_compute_dtype(param.dtype)``), as new arrays: ``param`` and ``state`` are not
        written, so ``step()`` can check every result before it applies any."""
        raise NotImplementedError

    # ---- checkpoints ------------------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        """Flat copy of the state: ``num_params``, ``step_count``, each hyperparameter, and
        ``state.<i>.<name>`` for parameter i's buffers and counters (absent until its first
        update); ``num_groups``, ``group.<g>.size`` and each group's hyperparameters
        ``group.<g>.<name>`` (all but lr)."""
        out = {"num_params": np.array(len(self.params)), "step_count": np.array(self.step_count)}
        for name in self._hyperparameters:
            out[name] = np.array(getattr(self, name))
        out["num_groups"] = np.array(len(self.param_groups))
        for g, group in enumerate(self.param_groups):
            out[f"group.{g}.size"] = np.array(len(group["params"]))
            for name in self._group_names():
                out[f"group.{g}.{name}"] = np.array(group[name])
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
        grouped = "num_groups" in state  # states written before groups existed have none
        if grouped:
            if int(np.asarray(state["num_groups"])) != len(self.param_groups):
                raise ValueError(f"{owner}.load_state_dict: num_groups got "
                                 f"{int(np.asarray(state['num_groups']))}; expected "
                                 f"{len(self.param_groups)}")
            expected.add("num_groups")
            expected.update(f"group.{g}.{name}" for g in range(len(self.param_groups))
                            for name in ("size", *self._group_names()))
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
            compute = self._compute_dtype(p.data.dtype)
            for name in self._buffer_names:
                if name not in entries:
                    continue
                value = np.asarray(entries[name])
                # a float16 parameter's state written before it was kept in float32 converts
                if value.shape != p.data.shape or value.dtype not in (compute, p.data.dtype):
                    raise ValueError(
                        f"{owner}.load_state_dict: state.{i}.{name} got shape {value.shape} "
                        f"dtype {value.dtype}; expected shape {p.data.shape} dtype {compute}"
                    )
                if not np.all(np.isfinite(value)):
                    raise ValueError(f"{owner}.load_state_dict: state.{i}.{name} holds a NaN "
                                     "or inf; expected finite numbers")
                self._check_buffer(f"{owner}.load_state_dict: state.{i}.{name}", name, value)
                entries[name] = value.astype(compute, copy=True)
            for name in self._counter_names:
                if name in entries:
                    entries[name] = _counter(f"{owner}.load_state_dict: state.{i}.{name}",
                                             entries[name], low=1)
        hyper = {name: self._checked(
                     name, self._hyperparameter_from_array(name, np.asarray(state[name])))
                 for name in self._hyperparameters}
        step_count = _counter(f"{owner}.load_state_dict: step_count", state["step_count"], low=0)
        groups = [{name: hyper[name] for name in self._group_names()}
                  for _ in self.param_groups]
        if grouped:
            for g, (group, values) in enumerate(zip(self.param_groups, groups)):
                size = int(state[f"group.{g}.size"])
                if size != len(group["params"]):
                    raise ValueError(f"{owner}.load_state_dict: group.{g}.size got {size}; "
                                     f"expected {len(group['params'])}")
                for name in values:
                    raw = np.asarray(state[f"group.{g}.{name}"])
                    values[name] = self._checked(name, self._hyperparameter_from_array(name, raw))
        position = {id(group): g for g, group in enumerate(self.param_groups)}
        for i, (p, group) in enumerate(zip(self.params, self._group_of)):
            values = groups[position[id(group)]]
            self._check_numbers(i, self._compute_dtype(p.data.dtype), hyper["lr"], values)
        for name, value in hyper.items():
            setattr(self, name, value)
        for group, values in zip(self.param_groups, groups):
            group.update(values)
        self.step_count = step_count
        self.state = states

    def _check_buffer(self, where: str, name: str, value: np.ndarray) -> None:
        """A loaded state buffer's values must make sense (e.g. a variance is >= 0)."""

    def _group_names(self) -> list[str]:
        return [name for name in self._hyperparameters if name != "lr"]

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
        self.momentum = self._checked("momentum", momentum)
        self.dampening = self._checked("dampening", dampening)
        self.weight_decay = self._checked("weight_decay", weight_decay)
        self.nesterov = self._checked("nesterov", nesterov)
        self._set_groups()

    def _checked_group(self, g: int, group: Mapping[str, Any]) -> dict[str, Any]:
        values = super()._checked_group(g, group)
        if values["nesterov"] and (values["momentum"] == 0 or values["dampening"] != 0):
            raise ValueError(f"param group {g} nesterov=True: got momentum={values['momentum']}"
                             f", dampening={values['dampening']}; expected momentum > 0 and "
                             "dampening = 0")
        return values

    def _checked(self, name: str, value: Any) -> Any:
        if name == "nesterov":
            return bool(value)
        if name == "dampening":
            return _real(name, value, high=1.0, high_open=False)
        return _real(name, value)

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float,
                group: dict) -> tuple[np.ndarray, dict[str, Any]]:
        direction = grad  # an alias of p.grad: only ever replaced, never written into
        if group["weight_decay"] != 0:
            direction = _times(param, group["weight_decay"])
            direction += grad
        new_state = {}
        mu = group["momentum"]
        if mu != 0:
            dampening = group["dampening"]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = direction.copy()
            else:
                buf = _times(buf, mu)
                buf += direction if dampening == 0 else (1.0 - dampening) * direction
            new_state["momentum_buffer"] = buf
            direction = direction + mu * buf if group["nesterov"] else buf
        update = _times(direction, lr)
        return np.subtract(param, update, out=update), new_state


class AdamW(Optimizer):
    """Adam with decoupled weight decay, as ``torch.optim.AdamW``. At update t of a parameter::

        p ← p (1 - lr λ)
        m ← β1 m + (1 - β1) g,        v ← β2 v + (1 - β2) g²
        m̂ = m / (1 - β1^t),           v̂ = v / (1 - β2^t)
        p ← p - lr m̂ / (√v̂ + eps)

    t counts the updates of that parameter (a step where its grad is None does not count).

    A float16 parameter is updated in float32, with its state ``m``, ``v`` kept in float32,
    and the result rounded to float16 once per step (as mixed-precision training keeps
    optimizer state in float32): in float16, eps = 1e-8 rounds to 0 (so a zero gradient
    gives 0/0 = NaN), and (1 - β2) g² underflows to 0 for |g| < 0.008, which turns the step
    into lr m / eps. eps must be > 0, and at least the smallest normal number of the dtype
    the update is computed in (float32: 1.2e-38).
    """

    _hyperparameters = ("lr", "betas", "eps", "weight_decay")
    _buffer_names = ("exp_avg", "exp_avg_sq")
    _counter_names = ("step",)

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2) -> None:
        super().__init__(params, lr)
        self.betas = self._checked("betas", betas)
        self.eps = self._checked("eps", eps)
        self.weight_decay = self._checked("weight_decay", weight_decay)
        self._set_groups()
        for i, (p, group) in enumerate(zip(self.params, self._group_of)):
            self._check_numbers(i, self._compute_dtype(p.data.dtype), self.lr, group)

    def _checked(self, name: str, value: Any) -> Any:
        if name == "betas":
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise ValueError(f"betas: got {value!r}; expected a pair (beta1, beta2)")
            return (_real("betas[0]", value[0], high=1.0), _real("betas[1]", value[1], high=1.0))
        if name == "eps":
            return _real(name, value, low_open=True)
        return _real(name, value)

    def _compute_dtype(self, dtype: np.dtype) -> np.dtype:
        return np.dtype(np.float32) if dtype == np.float16 else dtype

    def _check_numbers(self, i: int, compute: np.dtype, lr: float, group: dict) -> None:
        super()._check_numbers(i, compute, lr, group)
        tiny = np.finfo(compute).tiny
        if group["eps"] < tiny:
            raise ValueError(
                f"eps: got {group['eps']}; it rounds to 0 or loses its digits in {compute}, the "
                f"dtype parameter {i} is updated in; expected at least {tiny!s} (the smallest "
                f"normal {compute})"
            )

    def _check_buffer(self, where: str, name: str, value: np.ndarray) -> None:
        if name == "exp_avg_sq" and np.any(value < 0):
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
            base = _times(base, 1.0 - lr * weight_decay)
        # One scratch array serves every temporary of this update.
        scratch = _times(grad, 1.0 - beta1)
        m = _times(m, beta1)
        m += scratch
        np.multiply(grad, grad, out=scratch)
        scratch *= 1.0 - beta2
        v = _times(v, beta2)
        v += scratch
        np.sqrt(v, out=scratch)
        scratch /= math.sqrt(1.0 - beta2 ** t)
        scratch += eps
        np.divide(m, scratch, out=scratch)
        scratch *= lr / (1.0 - beta1 ** t)
        new = np.subtract(base, scratch, out=base if base is not param else scratch)
        if new.dtype != param.dtype:  # float16: computed in float32, rounded once
            new = new.astype(param.dtype)
        return new, {"step": t, "exp_avg": m, "exp_avg_sq": v}


# The schedules live in their own module; optim re-exports them (the public API).
from .schedules import LRScheduler, OneCycle, WarmupCosine  # noqa: E402
