"""Modules that hold other modules: ``ModuleList`` and ``Sequential``."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from .module import Module

__all__ = ["ModuleList", "Sequential"]


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


class Sequential(ModuleList):
    """``Sequential(m0, m1, ...)``: y = m_{n-1}(... m1(m0(x))), the modules registered as
    "0", "1", ... (or under the names of an ``OrderedDict`` passed as the one argument)."""

    def __init__(self, *modules: Module | OrderedDict) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for module in modules:  # (an OrderedDict among several: append refuses it)
                self.append(module)  # type: ignore[arg-type]

    def __getitem__(self, index: int | slice) -> Module | Sequential:
        items = list(self._modules.values())
        if isinstance(index, slice):
            return Sequential(*items[index])
        return items[index]

    def forward(self, x: Any) -> Any:
        """x -> each module in order."""
        for module in self._modules.values():
            x = module(x)
        return x
