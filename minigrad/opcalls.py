"""What tools can see of the ops: checking mode, a hook that shows every op call to an
observer (for the per-op gradient check, ``minigrad.tools.opcheck``), and the ops declared
with ``mg.op`` by name (``ops_named``, for ``graph_summary``'s formulas).

Outside checking mode the op wrapper (``defop.op``) pays one ``ContextVar.get`` per call and
nothing else. Inside ``observing_op_calls(observer)`` it calls ``observer(call)`` once per op,
after the op has run and been recorded, with an :class:`OpCall`: the op, its undecorated
forward, the positional parameters' names, the arguments as the op was called with them and
as the forward received them, the keyword arguments, and the result. The observer runs in
the op's own frame stack (so it may look up who called the op) and must copy whatever it
keeps: later in-place writes change the arrays it was shown.

A context variable (not a thread-local flag, not a global) so that the mode belongs to the
code that entered it: other threads, and tasks started elsewhere, are not observed. The core
holds the hook and nothing about checking, so the core never imports a tool.

A graph node keeps only its op's name (a node per op call: nothing more is stored on it), so
the op itself is found by that name: ``op`` declares each op here, weakly (an op declared in
a function is not kept alive by it). Two ops may share a name; ``ops_named`` returns all.
"""
from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, NamedTuple

__all__ = ["OpCall", "observing_op_calls", "op_calls_observed", "observer_of_op_calls",
           "declare", "ops_named"]

_DECLARED: dict[str, weakref.WeakSet] = {}


def declare(op: Callable, name: str) -> None:
    """Note ``op`` (a function made by ``mg.op``) under ``name``, its nodes' name."""
    _DECLARED.setdefault(name, weakref.WeakSet()).add(op)


def ops_named(name: str) -> list:
    """The live ops declared with ``mg.op`` whose graph nodes are named ``name`` (several
    when ops share a name), in no particular order."""
    return list(_DECLARED.get(name, ()))


class OpCall(NamedTuple):
    """One call of an op, as the op wrapper saw it (arrays not copied)."""

    op: Callable  # the decorated op (what the user called)
    name: str  # the name its graph nodes carry
    forward: Callable  # the undecorated forward: (out, vjps) = forward(*raw, **kwargs)
    params: tuple  # the forward's positional parameters' names
    args: tuple  # the positional arguments as called (Tensors, arrays, numbers)
    raw: tuple  # the positional arguments as the forward received them
    kwargs: dict  # the keyword arguments the forward received
    result: Any  # what the op returned: a Tensor, or a tuple of Tensors


#: The current observer, or None outside checking mode. ``observer_of_op_calls()`` is the
#: one read on the op dispatch path (a bound method: no attribute lookup per call).
_observer: ContextVar[Callable[[OpCall], None] | None] = ContextVar("minigrad_op_observer",
                                                                      default=None)
observer_of_op_calls = _observer.get


def op_calls_observed() -> bool:
    """True inside ``observing_op_calls``: code that records an op without the op wrapper
    (for speed) should then call the op itself, so that the call is seen."""
    return _observer.get() is not None


@contextlib.contextmanager
def observing_op_calls(observer: Callable[[OpCall], None]) -> Iterator[None]:
    """Within the block, every op call made through the op wrapper in this context is shown
    to ``observer`` (see the module docstring); the previous observer, if any, is restored
    on exit. An exception the observer raises propagates out of the op call."""
    if not callable(observer):
        raise TypeError(f"observing_op_calls observer: got {type(observer).__name__}; "
                        "expected a function observer(call)")
    token = _observer.set(observer)
    try:
        yield
    finally:
        _observer.reset(token)
