"""``Module``: registration, traversal, modes, buffers, checkpoints.

A ``Module`` registers the ``Parameter``s and sub-``Module``s assigned to its attributes, in
assignment order, so ``named_parameters()`` yields dotted names (``blocks.0.attn.qkv.weight``)
and ``state_dict()`` / ``load_state_dict()`` checkpoint them, with the persistent buffers, as
plain NumPy arrays.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

from .. import checks
from ..tensor import Tensor
from .parameter import Parameter
from .registry import Registry, changed, structure

__all__ = ["Module", "IncompatibleKeys"]


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` found: names it expected but did not get, and names it did
    not expect."""

    missing_keys: list
    unexpected_keys: list


class Module:
    """Base class of every layer and model; subclasses define ``forward``.

    Assigning a ``Parameter`` or a ``Module`` to an attribute registers it (in order);
    ``register_buffer`` registers an array that is state but not a parameter (saved in
    ``state_dict`` unless ``persistent=False``, never given to an optimizer); any other
    value is an ordinary attribute. ``training`` (True after construction) is set on the
    module and every descendant by ``train()`` / ``eval()``; layers such as ``Dropout``
    follow it, and ``state_dict`` ignores it. Subclasses must call ``super().__init__()``
    before assigning parameters or sub-modules.
    """

    # Set by __init__ through object.__setattr__ (this class's own registers what it is given).
    _parameters: Registry
    _modules: Registry
    _buffers: OrderedDict[str, np.ndarray | None]
    _non_persistent: set[str]
    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", Registry())
        object.__setattr__(self, "_modules", Registry())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "training", True)
        # a module initialised again in place drops what its old registries held: a parent's
        # kept parameters() list is stale from here
        changed()

    # ---- registration -----------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_parameters" or name == "_modules":  # a registry replaced: keep it one
            object.__setattr__(self, name, value if isinstance(value, Registry)
                               else Registry(value))
            changed()
            return
        registries: tuple[Any, Any] = (self.__dict__.get("_parameters"),
                                       self.__dict__.get("_modules"))
        if registries[0] is None:
            if isinstance(value, (Parameter, Module)):
                raise AttributeError(
                    f"cannot assign {type(value).__name__} '{name}' before "
                    f"Module.__init__(): call super().__init__() first in "
                    f"{type(self).__name__}.__init__"
                )
            object.__setattr__(self, name, value)
            return
        buffers = self.__dict__.get("_buffers", {})
        if name in buffers and not isinstance(value, (Parameter, Module)):
            buffers[name] = self._buffer_value(name, value)  # a buffer stays a buffer
            object.__setattr__(self, name, buffers[name])
            return
        params, modules = registries
        # A name holds one kind of thing: re-assigning it drops any earlier registration.
        params.pop(name, None)
        modules.pop(name, None)
        buffers.pop(name, None)
        if isinstance(value, Parameter):
            params[name] = value
        elif isinstance(value, Module):
            modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        self._buffers.pop(name, None)
        self._non_persistent.discard(name)
        object.__delattr__(self, name)

    def add_module(self, name: str, module: Module) -> None:
        """Register ``module`` under ``name`` (for names that are not identifiers, like "0")."""
        if not isinstance(name, str):
            raise TypeError(f"add_module name: got {name!r}; expected a string")
        if not isinstance(module, Module):
            raise TypeError(f"add_module('{name}'): got {type(module).__name__}; expected a Module")
        # As torch: a dot would split the state_dict names ("a.b.weight" reads back as module
        # a, child b), and an existing attribute ("forward", "training", a parameter) would be
        # shadowed: Sequential(OrderedDict(forward=...)) ran that one layer alone
        if not name or "." in name:
            raise ValueError(f"add_module name: got {name!r}; expected a non-empty name "
                             "without '.' (dots join the names of nested modules)")
        if name not in self._modules and hasattr(self, name):
            raise ValueError(f"add_module name: got {name!r}; it is already an attribute of "
                             f"{type(self).__name__}; expected a new name")
        setattr(self, name, module)

    def register_buffer(self, name: str, array: Any, persistent: bool = True) -> None:
        """Register ``array`` (copied to an ndarray; or None) as buffer ``name``: module state
        that is not a parameter (a running mean, a fixed mask). A persistent buffer is saved
        in ``state_dict`` and restored by ``load_state_dict`` (in place, as parameters are);
        ``buffers()`` lists it, ``parameters()`` does not. Assigning ``self.name = array``
        later replaces the buffer's array."""
        if "_buffers" not in self.__dict__:
            raise AttributeError(f"cannot register buffer '{name}' before Module.__init__(): "
                                 f"call super().__init__() first in {type(self).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"register_buffer name: got {name!r}; expected a string")
        if not name or "." in name:
            raise ValueError(f"register_buffer name: got {name!r}; expected a non-empty name "
                             "without '.' (dots join the names of nested modules)")
        if name in self._parameters or name in self._modules or \
                (hasattr(self, name) and name not in self._buffers):
            raise ValueError(f"register_buffer name: got {name!r}; it is already an attribute "
                             f"of {type(self).__name__}; expected a new name")
        checks.boolean("register_buffer persistent", persistent)
        self._buffers[name] = self._buffer_value(name, array)
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)
        object.__setattr__(self, name, self._buffers[name])

    @staticmethod
    def _buffer_value(name: str, array: Any) -> np.ndarray | None:
        if array is None:
            return None
        if isinstance(array, Parameter):
            raise TypeError(f"buffer '{name}': got a Parameter; expected an array (a "
                            "parameter is assigned as an attribute, not registered as a buffer)")
        value = np.array(array.data if isinstance(array, Tensor) else array, copy=True)
        if value.dtype.kind not in "biuf":
            raise TypeError(f"buffer '{name}': got dtype {value.dtype}; expected numbers")
        return value

    # ---- calling and modes ------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def train(self, mode: bool = True) -> Module:
        """Set ``training = mode`` on this module and every descendant; returns self."""
        mode = checks.boolean("train mode", mode)
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        """``train(False)``: evaluation mode (Dropout becomes the identity); returns self."""
        return self.train(False)

    # ---- traversal --------------------------------------------------------------------
    def children(self) -> Iterator[Module]:
        """The directly registered sub-modules, in registration order."""
        return iter(self._modules.values())

    def named_children(self) -> Iterator[tuple[str, Module]]:
        return iter(self._modules.items())

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """``(dotted_name, module)`` for this module (name ``prefix``) and every descendant,
        depth first, each module once even if it is registered under several names."""
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{key}" if name else key, child)
                        for key, child in module._modules.items()]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        return (module for _, module in self.named_modules())

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """``(dotted_name, parameter)`` for every parameter, each once (its first name if it
        is shared), in registration order: ``"blocks.0.attn.qkv.weight"``."""
        seen: set[int] = set()
        for module_name, module in self.named_modules(prefix):
            for key, param in module._parameters.items():
                if id(param) in seen:
                    continue
                seen.add(id(param))
                yield (f"{module_name}.{key}" if module_name else key), param

    def parameters(self) -> Iterator[Parameter]:
        """Every parameter once, in ``named_parameters`` order (what an optimizer takes).

        The same walk as ``named_parameters`` without building names. ``zero_grad`` and
        training loops call it every step, so the list found is kept until a parameter or a
        module is registered or removed anywhere (minigrad/nn/registry.py).
        """
        token = structure()
        kept = self.__dict__.get("_parameters_found")
        if kept is not None and kept[0] is token:
            return iter(kept[1])
        seen_modules: set[int] = set()
        seen: set[int] = set()
        found = []
        stack = [self]
        while stack:
            module = stack.pop()
            if id(module) in seen_modules:
                continue
            seen_modules.add(id(module))
            for param in module._parameters.values():
                if id(param) not in seen:
                    seen.add(id(param))
                    found.append(param)
            stack.extend(reversed(module._modules.values()))
        object.__setattr__(self, "_parameters_found", (token, found))
        return iter(found)

    def named_buffers(self, prefix: str = "", persistent_only: bool = False
                      ) -> Iterator[tuple[str, np.ndarray]]:
        """``(dotted_name, array)`` for every buffer that is not None (only the persistent
        ones with ``persistent_only``), in registration order."""
        for module_name, module in self.named_modules(prefix):
            for key, buf in module._buffers.items():
                if buf is None or (persistent_only and key in module._non_persistent):
                    continue
                yield (f"{module_name}.{key}" if module_name else key), buf

    def buffers(self) -> Iterator[np.ndarray]:
        return (buf for _, buf in self.named_buffers())

    def num_parameters(self) -> int:
        """Total number of scalar parameters (shared parameters counted once)."""
        return sum(p.data.size for p in self.parameters())

    def zero_grad(self) -> None:
        """Set every parameter's ``.grad`` to None (gradients accumulate until cleared)."""
        for param in self.parameters():
            param.grad = None

    # ---- checkpoints ------------------------------------------------------------------
    def _state_entries(self) -> OrderedDict[str, np.ndarray]:
        """The arrays ``state_dict`` copies: the parameters' (``named_parameters`` order),
        then the persistent buffers'."""
        entries = OrderedDict((name, p.data) for name, p in self.named_parameters())
        entries.update(self.named_buffers(persistent_only=True))
        return entries

    def state_dict(self) -> OrderedDict[str, np.ndarray]:
        """``name -> copy of the array``: every parameter in ``named_parameters`` order, then
        every persistent buffer. ``training`` is not state and is not saved.

        The arrays are copies: training afterwards does not change a saved state. A shared
        parameter appears once, under its first name. ``np.savez(path, **state)`` saves it.
        """
        return OrderedDict((name, a.copy()) for name, a in self._state_entries().items())

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy ``state[name]`` into each parameter's (and persistent buffer's) existing array
        (``p.data[...] = value``) and bump each parameter's version, as ``optimizer.step()``.

        Writing in place keeps the arrays an optimizer holds. Every present value must have
        exactly the parameter's shape and dtype (ValueError naming it otherwise). With
        ``strict``, missing or unexpected names raise a KeyError listing them; without it they
        are skipped and returned. Nothing is written unless every check passes, and the
        arrays in ``state`` are never modified. ``state`` may be an ``np.load`` result.
        Returns ``IncompatibleKeys(missing_keys, unexpected_keys)``.
        """
        if not isinstance(state, Mapping) and not hasattr(state, "keys"):
            raise TypeError(f"load_state_dict state: got {type(state).__name__}; expected a "
                            "mapping of parameter names to arrays (a state_dict() or np.load)")
        targets = self._state_entries()
        keys = list(state.keys())
        missing = [name for name in targets if name not in state]
        unexpected = [name for name in keys if name not in targets]
        if strict and (missing or unexpected):
            lines = [f"load_state_dict into {type(self).__name__}: the names do not match"]
            if missing:
                lines.append(f"  missing (expected, not given): {', '.join(missing)}")
            if unexpected:
                lines.append(f"  unexpected (given, not expected): {', '.join(unexpected)}")
            lines.append("  pass strict=False to load the names that do match")
            raise checks.StateDictKeyError("\n".join(lines))
        params = dict(self.named_parameters())
        updates = [(name, target, self._checked_entry(
                        f"parameter '{name}'" if name in params else f"buffer '{name}'",
                        state[name], target))
                   for name, target in targets.items() if name in state]
        for name, target, value in updates:
            target[...] = value
            if name in params:
                params[name].bump_version()  # a graph recorded before the load refuses backward
        return IncompatibleKeys(missing, unexpected)

    @staticmethod
    def _checked_entry(what: str, value: Any, target: np.ndarray) -> np.ndarray:
        value = value.data if isinstance(value, Tensor) else np.asarray(value)
        if value.shape != target.shape:
            raise ValueError(f"load_state_dict: {what} got shape {value.shape}; "
                             f"expected {target.shape}")
        if value.dtype != target.dtype:
            raise ValueError(
                f"load_state_dict: {what} got dtype {value.dtype}; expected "
                f"{target.dtype} (convert the checkpoint or build the model with that dtype)"
            )
        return value

    # ---- display ----------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The constructor arguments shown in ``repr`` (override in subclasses)."""
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): " + repr(child).replace("\n", "\n  ")
                 for name, child in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"
