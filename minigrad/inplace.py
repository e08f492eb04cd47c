"""In-place writes into a Tensor (``t[idx] = v``, ``t += v``, ...): when each is allowed, and the
version bump that lets ``backward`` refuse a graph whose saved arrays changed.

The rules (the table in ``Tensor``'s docstring): with nothing requiring grad, or inside
``no_grad()``, the write goes into ``t.data`` and bumps t's version; a leaf that requires
grad refuses (as in PyTorch); on a non-leaf, or with a value that requires grad, ``t[idx] = v``
refuses and ``t += v`` is recorded out of place, as ``t = t + v``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import graph
from .gradmode import is_grad_enabled
from .tensor import Tensor

__all__ = ["setitem", "update"]


def setitem(t: Tensor, index: Any, value: Any) -> None:
    """``t[index] = value``: NumPy's assignment into ``t.data`` (values cast to t's dtype);
    bumps the version."""
    what = f"t[index] = value on a tensor of shape {t.shape}"
    if is_grad_enabled():
        _check_unrecorded_write(t, what)
        if isinstance(value, Tensor) and value.requires_grad:
            raise RuntimeError(
                f"{what}: value requires grad but t does not, and writing value's numbers "
                "would drop its gradient; build t out of place (F.stack, F.concatenate, "
                "F.where), or write value.detach() to mean no gradient"
            )
    raw = _real_operand(value, "t[index] = value", "value")
    _check_writeable(t, what)
    if isinstance(index, Tensor):
        index = index.data
    elif type(index) is tuple:
        index = tuple(i.data if isinstance(i, Tensor) else i for i in index)
    t.data[index] = raw
    graph.note_write(t._version)


def update(t: Tensor, other: Any, ufunc: np.ufunc, symbol: str, op: Callable) -> Tensor:
    """``t <symbol> other`` in place (NumPy's same-kind casting into t's dtype), or, where
    the result must be recorded, ``op(t, other)`` out of place (the caller rebinds its name)."""
    what = f"t {symbol} value on a tensor of shape {t.shape}"
    if is_grad_enabled() and (t.requires_grad or (
            isinstance(other, Tensor) and other.requires_grad)):
        if t._node is None and t.requires_grad:
            _check_unrecorded_write(t, what)  # a leaf: refused, as in PyTorch
        return op(t, other)  # like t = t + other: recorded, nothing written
    raw = _real_operand(other, f"t {symbol} value", "value")
    _check_writeable(t, what)
    try:
        ufunc(t.data, raw, out=t.data)
    except TypeError:  # NumPy's UFuncTypeError: the result does not fit t's dtype
        kind = np.result_type(t.data, raw)
        raise TypeError(f"{what}: the result is {kind}, which cannot be stored in t's "
                        f"{t.dtype} in place; write t = t {symbol[:-1]} value for a "
                        "new tensor") from None
    except ValueError as e:
        raise ValueError(f"{what}: {e}; expected a value that broadcasts to t's shape "
                         f"{t.shape}") from None
    graph.note_write(t._version)
    return t


def _check_unrecorded_write(t: Tensor, what: str) -> None:
    """In grad mode, refuse an in-place write into a tensor that requires grad: minigrad
    records no in-place op, so its gradient would silently ignore the write."""
    if not t.requires_grad:
        return
    if t._node is None:
        raise RuntimeError(
            f"{what}: t is a leaf that requires grad, and an in-place write into it would not "
            "be recorded; to change a parameter's values, write under `with mg.no_grad():`"
        )
    raise RuntimeError(
        f"{what}: t is the result of op '{t._node.op}', and minigrad does not record in-place "
        "writes into the graph; build the new tensor out of place (F.where(mask, value, t), "
        "F.concatenate), or write under `with mg.no_grad():` to change the numbers without "
        "a gradient (backward through that op then refuses)"
    )


def _real_operand(value: Any, what: str, name: str) -> Any:
    """The array or number to write: real numbers only (not strings, None or objects)."""
    raw = value.data if isinstance(value, Tensor) else value
    try:
        kind = np.asarray(raw).dtype.kind
    except (TypeError, ValueError):  # ragged lists
        kind = "O"
    if kind not in "biuf":
        raise TypeError(f"{what}: {name} got {value!r} ({type(value).__name__}); expected a "
                        "number, an array or a Tensor of real numbers")
    return raw


def _check_writeable(t: Tensor, what: str) -> None:
    if not t.data.flags.writeable:
        raise ValueError(f"{what}: t's array is read-only (a broadcast view, or made "
                         "read-only by its owner); expected a writeable array")
