"""``Optimizer``: the base class of every optimizer (parameters, groups, ``step``, checkpoints).

The update rules follow PyTorch's ``torch.optim`` exactly (the tests compare them). They
update ``p.data`` in place, in the parameter's dtype, and never modify ``p.grad``; a
parameter whose ``.grad`` is None is skipped. ``state_dict()`` is a flat ``str -> np.ndarray``
dict (scalars as 0-d arrays), so ``np.savez`` stores a checkpoint without pickle.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from ..gradmode import enable_grad
from ..tensor import Tensor
from .state import GROUP_LR_KEYS, OptimizerState, nonneg

__all__ = ["Optimizer", "times"]

def times(a: np.ndarray, c: float) -> np.ndarray:
    """``a * c`` as a new array, also for a 0-d ``a`` (where NumPy would give a scalar)."""
    return np.multiply(a, c, out=np.empty_like(a))


def _where(i: int, data: np.ndarray) -> str:
    return f"step: parameter {i} (shape {data.shape}, {data.dtype})"


def _all_finite(a: Any) -> bool:
    """True if ``a`` is not an array or every element of it is finite."""
    return not isinstance(a, np.ndarray) or bool(np.isfinite(a).all())


def _check_param(i: int, p: Any, seen: set) -> None:
    if not isinstance(p, Tensor):
        raise TypeError(f"params[{i}]: got {type(p).__name__}; expected a Tensor")
    if not p.requires_grad:
        raise ValueError(f"params[{i}]: got a tensor of shape {p.shape} that does "
                         "not require grad; expected requires_grad=True (a Parameter)")
    if not p.is_leaf:
        raise ValueError(f"params[{i}]: got the result of op '{p.op}'; expected a "
                         "leaf tensor (a Parameter), the only kind backward() fills .grad of")
    if id(p) in seen:
        raise ValueError(f"params[{i}]: the same tensor appears twice; each parameter "
                         "must be listed once (it would be updated twice per step)")


class Optimizer(OptimizerState):
    """Base class: holds the parameters, ``lr``, the step count and per-parameter state.

    ``params`` is an iterable of Tensors, or of parameter groups as in PyTorch: dicts with a
    ``"params"`` list and any hyperparameters that differ from the constructor's, e.g.
    ``AdamW([{"params": weights}, {"params": norms_and_biases, "weight_decay": 0.0}], lr=...)``.
    As in torch, every group holds every hyperparameter, ``"lr"`` included: the constructor
    fills in what a group leaves out. A group given without an ``"lr"`` follows
    ``optimizer.lr`` (setting ``optimizer.lr``, as the schedules do, sets its ``"lr"``); a
    group given one (layer-wise rates, ``{"params": head, "lr": 1e-2}``) keeps its own, and a
    schedule scales each group's base lr (its ``"initial_lr"``) as PyTorch's schedulers do.
    ``param_groups`` lists the groups with their values; a value changed there (``"lr"`` too,
    torch's way of setting a rate by hand) takes effect at the next ``step()``, which checks
    it as the constructor does. ``print(optimizer)`` shows the groups as torch does.

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
    #: boolean hyperparameters (default False) that ``state_dict`` writes only when one group
    #: sets them: a state written without them (before they existed) loads as all False, and
    #: an optimizer at its defaults keeps the layout checkpoints already hold
    _flags: tuple[str, ...] = ()

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
        self._own_lr: list[bool] = []  # per group: given its own "lr" (else follows self.lr)
        self.lr = nonneg("lr", lr)
        self.step_count = 0

    @property
    def lr(self) -> float:
        """The learning rate of every group given without its own ``"lr"``; setting it sets
        theirs (a schedule sets it at every step)."""
        return self._lr

    @lr.setter
    def lr(self, value: float) -> None:
        self._lr = value  # checked where it is used (step), as before groups held it
        for group, own in zip(getattr(self, "param_groups", ()), self._own_lr, strict=False):
            if not own:
                group["lr"] = value

    def has_own_lr(self, g: int) -> bool:
        """Whether group ``g`` was given its own ``"lr"`` (a schedule scales its
        ``"initial_lr"``) rather than following ``optimizer.lr``."""
        return self._own_lr[g]

    def __repr__(self) -> str:
        """As torch.optim: the class, then every group's hyperparameters in name order."""
        text = type(self).__name__ + " ("
        for g, group in enumerate(self.param_groups):
            text += f"\nParameter Group {g}\n"
            text += "".join(f"    {key}: {group[key]}\n" for key in sorted(group)
                            if key != "params")
        return text + ")"

    def _set_groups(self) -> None:
        """Check the parameters and each group's overrides (subclass __init__ calls this
        after setting the defaults)."""
        self.param_groups: list[dict[str, Any]] = []
        seen: set[int] = set()
        for g, spec in enumerate(self._group_specs):
            if not isinstance(spec, dict) or "params" not in spec:
                raise TypeError(f"params[{g}]: got {type(spec).__name__}; expected a Tensor or a "
                                "group dict with a 'params' list")
            defaults = {name: getattr(self, name) for name in self._group_names()}
            group: dict[str, Any] = {"params": None,
                                     **self._checked_group(g, {**defaults, **spec})}
            members = spec["params"]
            if isinstance(members, Tensor):
                members = [members]
            try:
                members = list(members)
            except TypeError:
                raise TypeError(f"params[{g}]['params']: got {type(members).__name__}; expected "
                                "an iterable of Tensors") from None
            group["params"] = members
            self._own_lr.append("lr" in spec)
            group.setdefault("lr", self.lr)  # every group holds its lr, as in torch
            self.param_groups.append(group)
            for p in members:
                _check_param(len(self.params), p, seen)
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
        return nonneg(name, value)

    def _checked_group(self, g: int, group: Mapping[str, Any]) -> dict[str, Any]:
        """Group ``g``'s hyperparameters (and its own ``lr`` / ``initial_lr`` if it carries
        them), each checked as the constructor checks it: the one check for the constructor
        and for every ``step()`` (a value changed in ``param_groups`` is checked there)."""
        names = self._group_names()
        unknown = sorted(set(group) - {"params", *names, *GROUP_LR_KEYS})
        if unknown:
            raise ValueError(f"params[{g}]: unknown keys {unknown}; expected 'params' and "
                             f"any of {names + list(GROUP_LR_KEYS)}")
        missing = sorted(set(names) - set(group))
        if missing:
            raise ValueError(f"params[{g}]: missing keys {missing}; expected all of {names}")
        values = {name: self._checked(name, group[name]) for name in names}
        values.update((key, nonneg(f"params[{g}] {key}", group[key]))
                      for key in GROUP_LR_KEYS if key in group)
        return values

    def group_lr(self, g: int) -> float:
        """The learning rate group ``g`` is updated with: its ``"lr"``."""
        return self.param_groups[g].get("lr", self.lr)  # (self.lr if a user deleted it)

    def zero_grad(self) -> None:
        """Set every parameter's ``.grad`` to None."""
        for p in self.params:
            p.grad = None

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient, once, in place, and bump its version
        (so a graph recorded before the step refuses to backward). All or nothing: every
        parameter, gradient, state buffer and hyperparameter (each group's, as the
        constructor checks them) is checked first, and every new value is computed before
        any is applied; a step that turns a finite parameter or state value into inf or NaN
        (an lr too large for the dtype) raises a ValueError naming the parameter and the lr,
        and nothing moves. A NaN or inf already in a gradient or parameter goes through,
        as in ``torch.optim``.

        ``closure`` (optional, as in torch): a function that zeroes the gradients, recomputes
        the loss, calls ``backward()`` and returns the loss; it is called first, with grad
        mode on, and its loss is returned (None without a closure)."""
        loss = None
        if closure is not None:
            if not callable(closure):
                raise TypeError(f"step closure: got {type(closure).__name__}; expected a "
                                "function that recomputes the loss and its gradients, or None")
            with enable_grad():
                loss = closure()
        lr = nonneg("lr", self.lr)
        checked = self._checked_groups()
        work = []
        rows = zip(self.params, self.state, self._group_of, strict=True)
        for i, (p, state, group) in enumerate(rows):
            if p.grad is None:
                continue
            values = checked[id(group)]
            group_lr = values.get("lr", lr)
            compute = self._check_param_state(i, p, state)
            self._check_numbers(i, compute, group_lr, values)
            grad = p.grad.astype(compute, copy=False)
            if values.get("maximize"):  # as torch: ascend, by negating g before anything else
                grad = np.negative(grad)  # a new array: p.grad is never written
            work.append((i, p, grad, state, group_lr, values))
        results = []
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked just below
            for i, p, grad, state, group_lr, values in work:
                new, new_state = self._update(p.data, grad, state, group_lr, values)
                if not all(_all_finite(a) for a in (new, *new_state.values())):
                    self._check_finite(i, p.data, grad, state, new, new_state, group_lr)
                results.append((p, new, state, new_state))
        self.step_count += 1
        for p, new, state, new_state in results:
            p.data[...] = new
            state.update(new_state)
            for name in [name for name, value in new_state.items() if value is None]:
                del state[name]  # a buffer the group's settings no longer keep
            p.bump_version()
        return loss

    def _checked_groups(self) -> dict[int, dict[str, Any]]:
        """Every group's values checked (by the group's id), or an error naming the group."""
        checked, first = {}, 0
        for g, group in enumerate(self.param_groups):
            members = self._members[g]
            given = group.get("params")
            if not isinstance(given, (list, tuple)) or len(given) != len(members) or \
                    any(a is not b for a, b in zip(given, members, strict=True)):
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
        return checked

    def _check_param_state(self, i: int, p: Tensor, state: dict) -> np.dtype:
        """Check parameter i, its gradient and its state; return the dtype it updates in."""
        data, grad = p.data, p.grad
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
            if isinstance(buf, np.ndarray) and (buf.shape != data.shape or buf.dtype != compute):
                raise ValueError(
                    f"step: parameter {i} has state {name} of shape {buf.shape} dtype "
                    f"{buf.dtype}, but the parameter now has shape {data.shape} dtype "
                    f"{data.dtype} (was its .data replaced?); expected shape {data.shape} "
                    f"dtype {compute}: load a matching state_dict or build a new optimizer"
                )
        return compute

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
                                                      for name, v in new_state.items()
                                                      if v is not None)):
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

    #: True for the optimizers that divide by √(running mean of g²) + eps: in float16 that
    #: denominator loses its digits, so float16 parameters update in float32, state too.
    float16_in_float32 = False

    def _compute_dtype(self, dtype: np.dtype) -> np.dtype:
        """The dtype a parameter of ``dtype`` is updated in (and its state buffers are kept in)."""
        if self.float16_in_float32 and dtype == np.float16:
            return np.dtype(np.float32)
        return dtype

    @staticmethod
    def _check_eps(i: int, compute: np.dtype, eps: float) -> None:
        """``eps`` must stay a normal number of the dtype parameter ``i`` is updated in."""
        tiny = np.finfo(compute).tiny
        if eps < tiny:
            raise ValueError(
                f"eps: got {eps}; it rounds to 0 or loses its digits in {compute}, the dtype "
                f"parameter {i} is updated in; expected at least {tiny!s} (the smallest normal "
                f"{compute})"
            )

    def _check_numbers_of_every_param(self) -> None:
        """``_check_numbers`` for each parameter with its group's values, at construction (the
        optimizers whose eps or factors can fail a dtype refuse them before any step)."""
        for i, (p, group) in enumerate(zip(self.params, self._group_of, strict=True)):
            self._check_numbers(i, self._compute_dtype(p.data.dtype), group.get("lr", self.lr),
                                group)

    def _check_numbers(self, i: int, compute: np.dtype, lr: float, group: dict) -> None:
        """The step's numbers must fit the dtype they are used in: a learning rate (or a
        factor) that overflows it makes every update inf without an error, and an ``eps``
        (of the optimizers that have one) must stay a normal number of it."""
        top = float(np.finfo(compute).max)
        for name, value in (("lr", lr), *((n, group[n]) for n in self._group_names())):
            if isinstance(value, float) and abs(value) > top:
                raise ValueError(
                    f"{name}: got {value}; it overflows {compute}, the dtype parameter {i} is "
                    f"updated in; expected at most {top}"
                )
        if "eps" in group:
            self._check_eps(i, compute, group["eps"])

    def _update(self, param: np.ndarray, grad: np.ndarray, state: dict, lr: float,
                group: dict) -> tuple[np.ndarray, dict[str, Any]]:
        """The new values of ``param`` (in its dtype) and of its state, from ``grad`` (in
        ``_compute_dtype(param.dtype)``), as new arrays: ``param`` and ``state`` are not
        written, so ``step()`` can check every result before it applies any."""
        raise NotImplementedError

    def _check_buffer(self, where: str, name: str, value: np.ndarray) -> None:
        """A loaded state buffer's values must make sense (e.g. a variance is >= 0)."""

    def _buffers_for(self, group: Mapping[str, Any]) -> tuple[str, ...]:
        """The buffers a parameter of ``group`` keeps (``_update`` returns None for one that
        its group's settings no longer keep, and ``step`` drops it)."""
        return self._buffer_names

    def _group_names(self) -> list[str]:
        return [name for name in self._hyperparameters if name != "lr"]
