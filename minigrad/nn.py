"""PyTorch-like modules: ``Parameter``, ``Module``, ``ModuleList``, ``Linear``, ``LayerNorm``.

A ``Module`` registers the ``Parameter``s and sub-``Module``s assigned to its attributes, in
assignment order, so ``named_parameters()`` yields dotted names (``blocks.0.attn.qkv.weight``)
and ``state_dict()`` / ``load_state_dict()`` checkpoint them as plain NumPy arrays.

Unlike PyTorch, ``Linear.weight`` has shape (in_features, out_features) and the layer
computes ``x @ W + b``: no transpose in the forward pass.
"""
from __future__ import annotations

import math
import numbers
from collections import OrderedDict
from typing import Any, Iterable, Iterator, Mapping, NamedTuple

import numpy as np

from . import functional as F
from .tensor import Tensor

__all__ = ["Parameter", "Module", "ModuleList", "Linear", "LayerNorm", "IncompatibleKeys"]


class Parameter(Tensor):
    """A leaf Tensor that a ``Module`` registers: always a floating, grad-requiring *copy*.

    ``Parameter(data)`` copies ``data`` (an array, list or Tensor), so the caller's array is
    never updated by an optimizer. ``dtype`` (optional) converts while copying.
    """

    __slots__ = ()

    def __init__(self, data: Any, dtype: Any = None) -> None:
        if isinstance(data, Tensor):
            data = data.data
        array = np.array(data, dtype=dtype, copy=True)
        if array.dtype.kind != "f":
            raise TypeError(
                f"Parameter data: got dtype {array.dtype}; expected a floating dtype "
                "(float16, float32, float64)"
            )
        super().__init__(array, requires_grad=True)

    def __repr__(self) -> str:
        return "Parameter" + super().__repr__()[len("Tensor"):]


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` found: names it expected but did not get, and names it did
    not expect."""

    missing_keys: list
    unexpected_keys: list


class _KeyMismatchError(KeyError, ValueError):
    """A KeyError (as a mapping lookup) that is also a ValueError (a bad argument), whose
    message prints as written (KeyError's own ``str`` shows its repr)."""

    def __str__(self) -> str:
        return str(self.args[0])


class Module:
    """Base class of every layer and model; subclasses define ``forward``.

    Assigning a ``Parameter`` or a ``Module`` to an attribute registers it (in order);
    any other value is an ordinary attribute. Subclasses must call ``super().__init__()``
    before assigning parameters or sub-modules.
    """

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())

    # ---- registration -----------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        registries = self.__dict__.get("_parameters"), self.__dict__.get("_modules")
        if registries[0] is None:
            if isinstance(value, (Parameter, Module)):
                raise AttributeError(
                    f"cannot assign {type(value).__name__} '{name}' before "
                    f"Module.__init__(): call super().__init__() first in "
                    f"{type(self).__name__}.__init__"
                )
            object.__setattr__(self, name, value)
            return
        params, modules = registries
        # A name holds one kind of thing: re-assigning it drops any earlier registration.
        params.pop(name, None)
        modules.pop(name, None)
        if isinstance(value, Parameter):
            params[name] = value
        elif isinstance(value, Module):
            modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def add_module(self, name: str, module: Module) -> None:
        """Register ``module`` under ``name`` (for names that are not identifiers, like "0")."""
        if not isinstance(module, Module):
            raise TypeError(f"add_module('{name}'): got {type(module).__name__}; expected a Module")
        setattr(self, name, module)

    # ---- calling ----------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

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

        The same walk as ``named_parameters`` without building names: ``zero_grad`` and
        training loops call it every step.
        """
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
        return iter(found)

    def num_parameters(self) -> int:
        """Total number of scalar parameters (shared parameters counted once)."""
        return sum(p.data.size for p in self.parameters())

    def zero_grad(self) -> None:
        """Set every parameter's ``.grad`` to None (gradients accumulate until cleared)."""
        for param in self.parameters():
            param.grad = None

    # ---- checkpoints ------------------------------------------------------------------
    def state_dict(self) -> OrderedDict[str, np.ndarray]:
        """``name -> copy of the parameter's array``, in ``named_parameters`` order.

        The arrays are copies: training afterwards does not change a saved state. A shared
        parameter appears once, under its first name. ``np.savez(path, **state)`` saves it.
        """
        return OrderedDict((name, param.data.copy()) for name, param in self.named_parameters())

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy ``state[name]`` into each parameter's existing array (``p.data[...] = value``)
        and bump its version, as ``optimizer.step()`` does.

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
        params = OrderedDict(self.named_parameters())
        keys = list(state.keys())
        missing = [name for name in params if name not in state]
        unexpected = [name for name in keys if name not in params]
        if strict and (missing or unexpected):
            lines = [f"load_state_dict into {type(self).__name__}: the names do not match"]
            if missing:
                lines.append(f"  missing (expected, not given): {', '.join(missing)}")
            if unexpected:
                lines.append(f"  unexpected (given, not expected): {', '.join(unexpected)}")
            lines.append("  pass strict=False to load the names that do match")
            raise _KeyMismatchError("\n".join(lines))
        updates = []
        for name, param in params.items():
            if name not in state:
                continue
            value = state[name]
            value = value.data if isinstance(value, Tensor) else np.asarray(value)
            if value.shape != param.data.shape:
                raise ValueError(
                    f"load_state_dict: parameter '{name}' got shape {value.shape}; expected "
                    f"{param.data.shape}"
                )
            if value.dtype != param.data.dtype:
                raise ValueError(
                    f"load_state_dict: parameter '{name}' got dtype {value.dtype}; expected "
                    f"{param.data.dtype} (convert the checkpoint or build the model with "
                    "that dtype)"
                )
            updates.append((param, value))
        for param, value in updates:
            param.data[...] = value
            param.bump_version()  # a graph recorded before the load refuses to backward
        return IncompatibleKeys(missing, unexpected)

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


class ModuleList(Module):
    """A list of modules registered under the names "0", "1", ... (``blocks.0.attn...``)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        for module in modules or ():
            self.append(module)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index: int | slice) -> Module | ModuleList:
        items = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(items[index])
        return items[index]


# ---- argument checks shared by the layers ------------------------------------------------
def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name}: got {value!r}; expected a positive integer")
    return int(value)


def _floating_dtype(value: Any) -> np.dtype:
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind != "f":
        raise TypeError(f"dtype: got {value!r}; expected a floating dtype (np.float32, np.float64)")
    return dtype


def _rng(value: Any) -> np.random.Generator:
    """``np.random.default_rng(value)``, with an error that names the argument."""
    try:
        return np.random.default_rng(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"rng: got {value!r}; expected a np.random.Generator, a non-negative "
                        f"integer seed or None ({e})") from None


def _check_features(layer: str, x: Any, expected: int) -> Any:
    """``x`` (a Tensor, or anything array-like, which becomes an ndarray) after checking it
    holds real numbers with ``expected`` features on its last axis."""
    if not isinstance(x, Tensor):
        given = type(x).__name__
        x = np.asarray(x)
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{layer}: got {given} of dtype {x.dtype}; expected real numbers "
                            f"of shape (..., {expected})")
    elif x.dtype.kind not in "biuf":  # an op may have made one from a complex constant
        raise TypeError(f"{layer}: got a Tensor of dtype {x.dtype}; expected real numbers")
    shape = x.shape
    if not shape or shape[-1] != expected:
        raise ValueError(
            f"{layer}: got input of shape {shape}; expected shape (..., {expected})"
        )
    return x


def _in_dtype(x: Any, dtype: np.dtype) -> Any:
    """``x`` cast to a module's dtype: a module computes in its own dtype whatever it is fed
    (integers, bool, another float width), and a Tensor's gradient is cast back to its dtype."""
    if x.dtype == dtype:
        return x
    return F.astype(x, dtype) if isinstance(x, Tensor) else x.astype(dtype)


class Linear(Module):
    """y = x @ W + b, with W of shape (in_features, out_features) and b of shape (out_features,).

    Initialization: W ~ N(0, 1/in_features) (``rng.standard_normal / sqrt(in_features)``),
    b = 0. It computes in its ``dtype``: any other input (integers, another float width) is
    cast to it first. ``rng`` is a ``np.random.Generator`` or a seed (a fresh generator if None).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 dtype: Any = np.float64, rng: np.random.Generator | int | None = None) -> None:
        super().__init__()
        self.in_features = _positive_int("in_features", in_features)
        self.out_features = _positive_int("out_features", out_features)
        dtype = _floating_dtype(dtype)
        rng = _rng(rng)
        weight = rng.standard_normal((self.in_features, self.out_features))
        weight /= math.sqrt(self.in_features)
        self.weight = Parameter(weight, dtype=dtype)
        self.bias = Parameter(np.zeros(self.out_features, dtype=dtype)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        """x (..., in_features) -> (..., out_features)."""
        x = _in_dtype(_check_features("Linear", x, self.in_features), self.weight.dtype)
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, dtype={self.weight.dtype}")


class LayerNorm(Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last axis (D features).

    ``var`` is the population variance (divide by D). weight = 1 and bias = 0 initially, both
    of shape (D,); without ``elementwise_affine`` there are neither. It computes in its
    ``dtype`` (with or without weights): any other input is cast to it first.
    """

    def __init__(self, normalized_dim: int, eps: float = 1e-5, elementwise_affine: bool = True,
                 *, dtype: Any = np.float64) -> None:
        super().__init__()
        self.normalized_dim = _positive_int("normalized_dim", normalized_dim)
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps > 0:
            raise ValueError(f"eps: got {eps!r}; expected a positive number")
        self.eps = float(eps)
        self.dtype = dtype = _floating_dtype(dtype)  # the dtype it computes in, weights or not
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_dim, dtype=dtype))
            self.bias = Parameter(np.zeros(self.normalized_dim, dtype=dtype))
        else:
            self.weight = None
            self.bias = None

    def forward(self, x: Tensor) -> Tensor:
        """x (..., D) -> (..., D), normalized per row of D features."""
        x = _in_dtype(_check_features("LayerNorm", x, self.normalized_dim), self.dtype)
        return F.layer_norm(x, self.weight, self.bias, eps=self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_dim}, eps={self.eps}, "
                f"elementwise_affine={self.weight is not None}")
