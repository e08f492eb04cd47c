"""Grad mode: whether ops record the graph (``no_grad``, ``enable_grad``), per thread."""
from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable

__all__ = ["no_grad", "enable_grad", "is_grad_enabled", "grad_mode"]


class _GradMode(threading.local):
    enabled = True


#: This thread's grad mode: ``grad_mode.enabled`` is what ``is_grad_enabled()`` returns
#: (read as an attribute on the op dispatch path, where a call would cost more).
grad_mode = _GradMode()


def is_grad_enabled() -> bool:
    """True when ops record the graph (the default), False inside ``no_grad``."""
    return grad_mode.enabled


class _SetGradMode:
    """Context manager and decorator that sets grad mode and restores the previous one."""

    __slots__ = ("_enabled", "_prev")

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(grad_mode.enabled)
        grad_mode.enabled = self._enabled

    def __exit__(self, *exc: object) -> None:
        grad_mode.enabled = self._prev.pop()

    def __call__(self, fn: Callable) -> Callable:
        enabled = self._enabled
        if inspect.isgeneratorfunction(fn):
            return _generator_in_mode(fn, enabled)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _SetGradMode(enabled):
                return fn(*args, **kwargs)

        return wrapper


def _generator_in_mode(fn: Callable, enabled: bool) -> Callable:
    """A generator function whose body runs in the given grad mode each time it resumes,
    while the caller's code between two ``next`` calls keeps the caller's mode."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        gen = fn(*args, **kwargs)
        resume, value = gen.send, None  # how to resume the inner generator next
        while True:
            try:
                with _SetGradMode(enabled):
                    produced = resume(value)
            except StopIteration as stop:
                return stop.value
            try:
                resume, value = gen.send, (yield produced)
            except GeneratorExit:
                with _SetGradMode(enabled):
                    gen.close()
                raise
            except BaseException as exc:  # thrown in by the caller: pass it on inside
                resume, value = gen.throw, exc

    return wrapper


def no_grad(fn: Callable | None = None):
    """``with no_grad():``, ``@no_grad()`` or ``@no_grad``: ops inside record nothing (in a
    decorated generator function: its body, whenever it runs, not the caller's loop)."""
    return _SetGradMode(False) if fn is None else _SetGradMode(False)(fn)


def enable_grad(fn: Callable | None = None):
    """Re-enable recording inside a ``no_grad`` region (same three forms as ``no_grad``)."""
    return _SetGradMode(True) if fn is None else _SetGradMode(True)(fn)
