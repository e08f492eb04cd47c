"""The ordered dicts a ``Module`` registers its parameters and sub-modules in.

Each change to any of them, in any module, gives a new :func:`structure` token; so a walk
over a module tree (``Module.parameters()``, called by every ``zero_grad``) may keep what it
found, under the token it found it, until the next change anywhere.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["Registry", "structure", "changed"]

_token = [object()]  # a new object at every change: never equal to an earlier one


def structure() -> object:
    """The current token: the same object until a registry of any module changes."""
    return _token[0]


def changed() -> None:
    """Make a new token: for a change that is not a registry mutation (a module given new
    registries by ``Module.__init__``); call it once the change is done."""
    _token[0] = object()


class Registry(OrderedDict):
    """An ``OrderedDict`` whose every mutation (item assignment or deletion, ``pop``,
    ``popitem``, ``clear``, ``update``, ``setdefault``, ``move_to_end``, ``|=``) makes a new
    :func:`structure` token once it is done. Reads cost what an ``OrderedDict``'s do."""

    # The token changes AFTER the mutation (in ``finally``: also after one that raised part
    # way): a walk that reads the token while a change is under way (in another thread, say)
    # then keeps its list under a token that is already stale, never one that outlives it.
    __slots__ = ()

    def __setitem__(self, key, value):
        try:
            super().__setitem__(key, value)
        finally:
            changed()

    def __delitem__(self, key):
        try:
            super().__delitem__(key)
        finally:
            changed()

    def pop(self, *args):
        try:
            return super().pop(*args)
        finally:
            changed()

    def popitem(self, last=True):
        try:
            return super().popitem(last)
        finally:
            changed()

    def clear(self):
        try:
            super().clear()
        finally:
            changed()

    def update(self, *args, **kwargs):
        try:
            super().update(*args, **kwargs)
        finally:
            changed()

    def setdefault(self, key, default=None):
        try:
            return super().setdefault(key, default)
        finally:
            changed()

    def move_to_end(self, key, last=True):
        try:
            super().move_to_end(key, last)
        finally:
            changed()

    # (|= returns the Registry itself, as dict's does; typeshed's OrderedDict.__or__ has an
    # overload returning a plain OrderedDict, which mypy takes for a conflict)
    def __ior__(self, other: Any) -> Registry:  # type: ignore[misc]
        try:
            return super().__ior__(other)
        finally:
            changed()
