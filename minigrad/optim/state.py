"""The checkpoint half of ``Optimizer``: ``state_dict`` and ``load_state_dict``, the latter
in named steps (keys, hyperparameters, per-parameter state, then apply).

``state_dict()`` is a flat ``str -> np.ndarray`` dict (scalars as 0-d arrays), so
``np.savez`` stores a checkpoint without pickle, and loading never unpickles.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import checks

__all__ = ["OptimizerState", "GROUP_LR_KEYS", "nonneg", "betas_pair"]

#: the keys a group may carry besides its hyperparameters: its own lr, and the base lr a
#: schedule scales (as PyTorch's ``initial_lr``)
GROUP_LR_KEYS = ("lr", "initial_lr")


def nonneg(name: str, value: Any, **bounds: Any) -> float:
    """A finite real number >= 0 (a rate, a factor), as a Python float: wrong type
    TypeError, out of range ValueError (``minigrad.checks.real``)."""
    return checks.real(name, value, low=0.0, **bounds)


def betas_pair(value: Any) -> tuple[float, float]:
    """Adam's ``(beta1, beta2)``, each in [0, 1)."""
    if not isinstance(value, (tuple, list, np.ndarray)):
        raise TypeError(f"betas: got {value!r}; expected a pair (beta1, beta2)")
    if len(value) != 2:
        raise ValueError(f"betas: got {value!r}; expected a pair (beta1, beta2)")
    return (nonneg("betas[0]", value[0], high=1.0, high_open=True),
            nonneg("betas[1]", value[1], high=1.0, high_open=True))


def _shown(a: np.ndarray) -> str:
    text = repr(a.tolist()) if a.dtype.kind in "biufcUS" and a.size <= 8 else \
        f"an array of shape {a.shape}"
    return f"{text} ({a.dtype})"


def _counter(where: str, value: Any, low: int) -> int:
    """An integer count read from a state dict: a 0-d integer array or an int, >= low."""
    a = np.asarray(value)
    if a.shape != () or a.dtype.kind not in "iu" or int(a) < low:
        expected = "a positive integer" if low == 1 else f"an integer >= {low}"
        raise ValueError(f"{where}: got {_shown(a)}; expected {expected}")
    return int(a)


def _numbers(where: str, value: Any, kind: str, shape: tuple = ()) -> Any:
    """A hyperparameter read from a state dict, exactly as ``state_dict`` writes it: a bool
    (``kind="b"``) or real numbers (``"f"``: an integer or floating array, never a bool or a
    string that merely parses as one) of ``shape``; Python values, or a ValueError naming
    ``where`` (a file's entry: a wrong type is a wrong value of the file)."""
    a = np.asarray(value)
    kinds = "b" if kind == "b" else "iuf"
    if a.shape != shape or a.dtype.kind not in kinds:
        expected = "a 0-d bool (true or false)" if kind == "b" else "a 0-d real number"
        if shape:
            expected = f"a 1-d array of {shape[0]} real numbers"
        raise ValueError(f"{where}: got {_shown(a)}; expected {expected}, as state_dict() "
                         "writes it")
    return a.item() if kind == "b" else a.astype(np.float64).tolist()



class OptimizerState:
    """Mixin of ``Optimizer``: its checkpoints. Relies on the optimizer's ``params``,
    ``param_groups``, ``state``, ``step_count`` and its ``_hyperparameters``,
    ``_buffer_names``, ``_counter_names``, ``_flags``, ``_buffers_for``, ``_checked``,
    ``_check_buffer``, ``_check_numbers``, ``_compute_dtype``."""

    if TYPE_CHECKING:  # what the mixin uses of Optimizer, declared for the type checker only
        params: list[Any]
        param_groups: list[dict[str, Any]]
        state: list[dict[str, Any]]
        step_count: int
        _group_of: list[dict[str, Any]]
        _hyperparameters: tuple[str, ...]
        _buffer_names: tuple[str, ...]
        _counter_names: tuple[str, ...]
        _flags: tuple[str, ...]

        def has_own_lr(self, g: int) -> bool: ...
        def _group_names(self) -> list[str]: ...
        def _buffers_for(self, group: Mapping[str, Any]) -> tuple[str, ...]: ...
        def _checked(self, name: str, value: Any) -> Any: ...
        def _check_buffer(self, where: str, name: str, value: np.ndarray) -> None: ...
        def _compute_dtype(self, dtype: np.dtype) -> np.dtype: ...
        def _check_numbers(self, i: int, compute: np.dtype, lr: float,
                           group: dict) -> None: ...

    def state_dict(self) -> dict[str, np.ndarray]:
        """Flat copy of the state: ``num_params``, ``step_count``, each hyperparameter, and
        ``state.<i>.<name>`` for parameter i's buffers and counters (absent until its first
        update); ``num_groups``, ``group.<g>.size`` and each group's hyperparameters
        ``group.<g>.<name>`` (all but lr). A group with its own lr adds ``group.<g>.lr`` (and
        ``group.<g>.initial_lr`` once a schedule set it): an optimizer whose groups all follow
        ``optimizer.lr`` writes exactly the keys it wrote before groups could have lrs. A
        flag (``_flags``: ``maximize``, ``amsgrad``) is written, at the top and in every
        group, only if it is True somewhere, so the defaults keep the older layout too."""
        out = {"num_params": np.array(len(self.params)), "step_count": np.array(self.step_count)}
        for name in self._written(self._hyperparameters):
            out[name] = np.array(getattr(self, name))
        out["num_groups"] = np.array(len(self.param_groups))
        for g, group in enumerate(self.param_groups):
            out[f"group.{g}.size"] = np.array(len(group["params"]))
            for name in self._group_keys(g, group):
                out[f"group.{g}.{name}"] = np.array(group[name])
        for i, state in enumerate(self.state):
            for name, value in state.items():
                out[f"state.{i}.{name}"] = np.array(value, copy=True)
        return out

    def _group_keys(self, g: int, group: Mapping[str, Any]) -> list[str]:
        """The names a group saves: its hyperparameters, and its lr if it was given its own
        (a group that follows ``optimizer.lr`` is restored from the top-level ``lr``)."""
        own = [key for key in GROUP_LR_KEYS if self.has_own_lr(g) and key in group]
        return self._written(self._group_names()) + own

    def _written(self, names: Any) -> list[str]:
        """``names`` less the flags that are False at the top and in every group."""
        unset = {flag for flag in self._flags if not getattr(self, flag) and
                 not any(group.get(flag) for group in self.param_groups)}
        return [name for name in names if name not in unset]

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a ``state_dict()`` (or its ``np.load`` of an .npz) into this optimizer.

        The parameters and groups must be the same, in the same order: ``num_params``, the
        group sizes, every buffer's shape and dtype are checked, and nothing is changed
        unless every check passes. Arrays are copied, so ``state`` is never modified. A
        state written before groups existed (no ``num_groups``) loads into every group.
        """
        owner = type(self).__name__
        checks.state_mapping(owner, state)
        grouped = "num_groups" in state
        states = self._load_keys(owner, state, grouped)
        hyper, groups = self._load_hyperparameters(state, grouped)
        position = {id(group): g for g, group in enumerate(self.param_groups)}
        for i, entries in enumerate(states):  # a parameter's buffers follow its group's values
            values = groups[position[id(self._group_of[i])]]
            self._load_param_state(f"{owner}.load_state_dict", i, entries, values)
        step_count = _counter(f"{owner}.load_state_dict: step_count", state["step_count"], low=0)
        for i, (p, group) in enumerate(zip(self.params, self._group_of, strict=True)):
            values = groups[position[id(group)]]
            self._check_numbers(i, self._compute_dtype(p.data.dtype),
                                values.get("lr", hyper["lr"]), values)
        for name, value in hyper.items():  # every check passed: apply
            setattr(self, name, value)
        for group, values in zip(self.param_groups, groups, strict=True):
            group.update(values)
        self.step_count = step_count
        self.state = states

    def _load_keys(self, owner: str, state: Mapping[str, Any],
                   grouped: bool) -> list[dict[str, Any]]:
        """Step 1: the keys must be exactly those this optimizer writes (a group's
        ``initial_lr`` is optional) and the counts must match; returns each parameter's
        raw entries."""
        # a flag absent at the top is False everywhere (a state written before it existed)
        absent = {flag for flag in self._flags if flag not in state}
        names = [name for name in self._group_names() if name not in absent]
        expected = {"num_params", "step_count", *self._hyperparameters} - absent
        optional = set()
        if grouped:
            given = _counter(f"{owner}.load_state_dict: num_groups", state["num_groups"], low=0)
            if given != len(self.param_groups):
                raise ValueError(f"{owner}.load_state_dict: num_groups got {given}; expected "
                                 f"{len(self.param_groups)}")
            expected.add("num_groups")
            for g in range(len(self.param_groups)):
                own = self.has_own_lr(g)
                keys = ["size", *names] + (["lr"] if own else [])
                expected.update(f"group.{g}.{name}" for name in keys)
                if own:
                    optional.add(f"group.{g}.initial_lr")
        per_param = self._state_names()
        states: list[dict[str, Any]] = [{} for _ in self.params]
        for key in state:
            index, dot, name = key.removeprefix("state.").partition(".")
            if key.startswith("state.") and dot and name in per_param and index.isdigit() \
                    and int(index) < len(self.params):
                states[int(index)][name] = state[key]
                expected.add(key)
        checks.state_keys(owner, {k: None for k in state if k not in optional}, expected)
        given = _counter(f"{owner}.load_state_dict: num_params", state["num_params"], low=0)
        if given != len(self.params):
            raise ValueError(f"{owner}.load_state_dict: num_params got {given}; expected "
                             f"{len(self.params)}")
        return states

    def _state_names(self) -> set[str]:
        """Every per-parameter entry this optimizer may write, whatever its settings."""
        every = set(self._buffer_names) | set(self._counter_names)
        for flag in self._flags:  # the buffers a flag adds (amsgrad: max_exp_avg_sq)
            every |= set(self._buffers_for({flag: True}))
        return every

    def _load_param_state(self, where: str, i: int, entries: dict[str, Any],
                          group: Mapping[str, Any]) -> None:
        """Step 3: parameter i's buffers (finite, its shape, its compute dtype: copied) and
        counters (integers >= 1), all or none of those its (loaded) group's settings keep,
        checked and converted in place."""
        p = self.params[i]
        buffers = self._buffers_for(group)
        per_param = set(buffers) | set(self._counter_names)
        if entries and set(entries) != per_param:
            raise checks.StateDictKeyError(
                f"{where}: parameter {i} has state {sorted(entries)}; expected all of "
                f"{sorted(per_param)} or none")
        compute = self._compute_dtype(p.data.dtype)
        for name in buffers:
            if name not in entries:
                continue
            value = np.asarray(entries[name])
            # a float16 parameter's state written before it was kept in float32 converts
            if value.shape != p.data.shape or value.dtype not in (compute, p.data.dtype):
                raise ValueError(f"{where}: state.{i}.{name} got shape {value.shape} dtype "
                                 f"{value.dtype}; expected shape {p.data.shape} dtype {compute}")
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{where}: state.{i}.{name} holds a NaN or inf; expected "
                                 "finite numbers")
            self._check_buffer(f"{where}: state.{i}.{name}", name, value)
            entries[name] = value.astype(compute, copy=True)
        for name in self._counter_names:
            if name in entries:
                entries[name] = _counter(f"{where}: state.{i}.{name}", entries[name], low=1)

    def _load_hyperparameters(self, state: Mapping[str, Any],
                              grouped: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Step 2: the top-level hyperparameters and each group's values, checked as the
        constructor checks them (a state without groups gives every group the top values; a
        flag the state does not hold is False)."""
        owner = f"{type(self).__name__}.load_state_dict"
        def read(name: str, key: str) -> Any:
            raw = self._hyperparameter_from_array(name, state[key], f"{owner}: {key}")
            if name in GROUP_LR_KEYS:
                return nonneg(f"{key}", raw)
            try:
                return self._checked(name, raw)
            except (TypeError, ValueError) as e:  # the check names the hyperparameter only
                text = str(e).removeprefix(name)
                raise ValueError(f"{owner}: {key}{text}") from None
        hyper = {name: read(name, name) if name in state else False
                 for name in self._hyperparameters}  # only a flag may be absent (step 1)
        groups = [{name: hyper[name] for name in self._group_names()}
                  for _ in self.param_groups]
        if not grouped:
            return hyper, groups
        for g, (group, values) in enumerate(zip(self.param_groups, groups, strict=True)):
            size = _counter(f"{owner}: group.{g}.size", state[f"group.{g}.size"], low=0)
            if size != len(group["params"]):
                raise ValueError(f"{owner}: group.{g}.size got {size}; "
                                 f"expected {len(group['params'])}")
            keys = [name for name in self._group_names() if name in state]
            keys += [k for k in GROUP_LR_KEYS if self.has_own_lr(g) and f"group.{g}.{k}" in state]
            for name in keys:
                values[name] = read(name, f"group.{g}.{name}")
        return hyper, groups

    def _hyperparameter_from_array(self, name: str, value: Any, where: str) -> Any:
        """Entry ``where`` as hyperparameter ``name``: of the type the constructor gave it
        (a bool, a tuple of reals such as betas, else a real number)."""
        current = getattr(self, name, None)
        if isinstance(current, bool):
            return _numbers(where, value, "b")
        if isinstance(current, tuple):
            return tuple(_numbers(where, value, "f", (len(current),)))
        return _numbers(where, value, "f")
