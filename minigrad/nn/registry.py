"""The ordered dicts a ``Module`` registers its parameters and sub-modules in.

Each change to any of them, in any module, gives a new :func:`structure` token; so a walk
over a module tree (``Module.parameters()``, called by every ``zero_grad``) may keep what it
found, under the token it found it, until the next change anywhere.
"""
from __future__ import annotations

from collections import OrderedDict

__all__ = ["Registry", "structure"]

_token = [object()]  # a new object at every change: never equal to an earlier one


def structure() -> object:
    """The current token: the same object until a registry of any module changes."""
    return _token[0]


def _changed() -> None:
    _token[0] = object()


class Registry(OrderedDict):
    """An ``OrderedDict`` whose every mutation (item assignment or deletion, ``pop``,
    ``popitem``, ``clear``, ``update``, ``setdefault``, ``move_to_end``, ``|=``) first makes a
    new :func:`structure` token. Reads cost what an ``OrderedDict``'s do."""

    __slots__ = ()

    def __setitem__(self, key, value):
        _changed()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        _changed()
        super().__delitem__(key)

    def pop(self, *args):
        _changed()
        return super().pop(*args)

    def popitem(self, last=True):
        _changed()
        return super().popitem(last)

    def clear(self):
        _changed()
        super().clear()

    def update(self, *args, **kwargs):
        _changed()
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        _changed()
        return super().setdefault(key, default)

    def move_to_end(self, key, last=True):
        _changed()
        super().move_to_end(key, last)

    def __ior__(self, other):
        _changed()
        return super().__ior__(other)
