"""How an op is declared: its forward and its hand-written VJPs, side by side.

Every built-in op is written this way, and so can yours::

    import numpy as np
    import minigrad as mg

    @mg.op
    def softplus(x):
        \"\"\"y = log(1 + e^x).   VJP: x̄ = ȳ · sigmoid(x).\"\"\"
        y = np.logaddexp(0.0, x)
        return y, lambda g: g / (1.0 + np.exp(-x))

The forward receives plain NumPy arrays (every positional ``Tensor`` argument is replaced
by its ``.data``, every NumPy scalar by the Python number it holds, and, when an array input
has dimensions, every 0-d array (a 0-d Tensor's too) by the Python number it holds: so none
of them promotes a float32 tensor to float64; everything else is passed through unchanged)
and returns
``(output, vjps)``. ``vjps`` is one function per positional argument, in order, mapping the
output's gradient ``g`` to that argument's gradient (a single function when only the first
argument is differentiable; ``None`` for a position that is not). The engine calls a VJP
only when its argument is a Tensor that requires grad, sums its result back to the
argument's shape if the forward broadcast it, and casts it to the argument's dtype.

An array a VJP returns is handed over: when nothing else references it, the engine keeps it
as the gradient (a leaf's ``.grad``) and adds later contributions into it in place. So a VJP
must not write into an array it returned once (a buffer reused through a weak cache, say).
Returning its cotangent, a saved array or a view is fine: those are copied before any write.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from .graph import Node, _mode
from .tensor import Tensor

__all__ = ["op", "record", "as_array_input", "as_floating", "weakly_typed"]

_REAL_KINDS = "biuf"


def as_array_input(value: Any, op: str, param: str) -> Any:
    """``value`` as an op's array input: arrays and numbers of a real dtype pass, nested
    lists become arrays, and anything else (None, strings, object or complex data) is a
    TypeError naming the op and the parameter."""
    if isinstance(value, (bool, int, float)):
        return value
    if not isinstance(value, np.ndarray):
        if isinstance(value, (list, tuple)):
            try:
                value = np.asarray(value)
            except ValueError as e:
                raise ValueError(f"{op} {param}: got a list that is not an array ({e}); "
                                 "expected a nested list of numbers") from None
        else:
            shown = "None" if value is None else f"{value!r} ({type(value).__name__})"
            raise TypeError(f"{op} {param}: got {shown}; expected a Tensor, an array or a "
                            "number")
    if value.dtype.kind not in _REAL_KINDS:
        raise TypeError(f"{op} {param}: got an array of dtype {value.dtype}; expected real "
                        "numbers (a bool, integer or floating dtype)")
    return value


def as_floating(a: Any) -> np.ndarray:
    """``a`` as a floating array: integer and bool data become float64 (as ``np.mean``
    computes them). For the ops that NumPy has no function of its own to follow."""
    a = np.asarray(a)
    return a if a.dtype.kind == "f" else a.astype(np.float64)


def weakly_typed(args: list, operands: int | None = None) -> None:
    """Replace, in place, each 0-d real array among an op's positional arguments by the Python
    number it holds, when one of its operands ``args[:operands]`` (all of ``args`` for None)
    is an array with dimensions.

    NumPy (NEP 50) treats Python numbers as weakly typed: ``x32 * 0.5`` stays float32, while
    a 0-d float64 array is strongly typed and promotes ``x32 * np.array(0.5)`` to float64.
    Converted, a 0-d operand follows the dimensioned one's dtype within its kind, as PyTorch
    does for 0-d tensors; a 0-d constant (a bound, an axis, an eps) acts as the number it is.
    With only 0-d operands nothing changes (NumPy's ordinary rules): a 0-d array indexed by
    an array, say, stays an array.
    """
    for x in args[:operands]:
        if type(x) is np.ndarray and x.shape:
            break
    else:
        return
    for i, x in enumerate(args):
        if type(x) is np.ndarray and not x.shape and x.dtype.kind in _REAL_KINDS:
            args[i] = x.item()


def record(out: Any, inputs: Sequence[Any], vjps: Any, name: str) -> Tensor:
    """Wrap ``out`` in a Tensor and, if grad mode is on, record how to differentiate it.

    ``inputs[i]`` pairs with ``vjps[i]``; only pairs whose input is a Tensor requiring grad
    become edges of the graph. Ops with a variable number of inputs (``concatenate``,
    ``stack``) call this directly.
    """
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    if not _mode.enabled:
        return Tensor._make(out)
    if callable(vjps):
        vjps = (vjps,)
    edges = []
    for x, vjp in zip(inputs, vjps):
        if vjp is not None and isinstance(x, Tensor) and x.requires_grad:
            # the graph keeps the input's node, not the input tensor (and its array)
            edges.append((x if x._node is None else x._node, vjp))
    if not edges or out.dtype.kind != "f":  # only floating results carry a gradient
        return Tensor._make(out)
    return Tensor._make(out, Node(name, tuple(edges), out.shape, out.dtype))


def op(forward: Callable | None = None, *, name: str | None = None,
       arrays: int = 0) -> Callable:
    """Decorator turning ``forward(*arrays, **consts) -> (out, vjps)`` into a differentiable op.

    Use as ``@op`` or ``@op(name="...", arrays=2)``. The decorated function takes Tensors (or
    arrays and numbers, treated as constants) and returns a Tensor. ``arrays`` declares how
    many leading positional parameters are array inputs: those are checked
    (:func:`as_array_input`; None passes only where the parameter's default is None) before
    the forward runs, and they are the operands whose dimensions make 0-d arguments weakly
    typed (:func:`weakly_typed`; every positional argument is one when ``arrays`` is 0). The
    undecorated forward stays reachable as ``.forward``.
    """
    if forward is None:
        return functools.partial(op, name=name, arrays=arrays)
    opname = name or forward.__name__
    signature = inspect.signature(forward)
    positional = [p.name for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    checked = [(i, positional[i], signature.parameters[positional[i]].default is None)
               for i in range(min(arrays, len(positional)))]
    operands = arrays or None  # for weakly_typed: all positional arguments, if not declared

    def by_position(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """Move keyword arguments that name positional parameters into their positions, so a
        Tensor or array passed by keyword (``layer_norm(x, weight=w)``) is an input like any
        other."""
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        rest = {k: v for k, v in values.items() if k not in positional}
        for k, p in signature.parameters.items():  # a forward's own **kwargs
            if p.kind is p.VAR_KEYWORD:
                rest.update(rest.pop(k, {}))
        return tuple(values[k] for k in positional), rest

    @functools.wraps(forward)
    def apply(*args: Any, **kwargs: Any) -> Tensor:
        for v in kwargs.values():
            if isinstance(v, (Tensor, np.ndarray)):  # an array by keyword: into its position
                args, kwargs = by_position(args, kwargs)
                break
        # NumPy scalars become Python numbers, which NumPy (NEP 50) treats as weakly typed:
        # ``x * np.float64(0.5)`` keeps a float32 ``x`` float32, as ``x * 0.5`` does. 0-d
        # arrays next to an array with dimensions follow (``weakly_typed``); this one loop
        # notes whether there are any, so that other calls pay almost nothing for it.
        raw = []
        zero_d = dims = False
        for a in args:
            if isinstance(a, Tensor):
                a = a.data
            elif isinstance(a, np.generic):
                a = a.item()
            if type(a) is np.ndarray:
                if a.shape:
                    dims = True
                else:
                    zero_d = True
            raw.append(a)
        for i, param, optional in checked:
            if i < len(raw):
                a = raw[i]
                if type(a) is np.ndarray and a.dtype.kind in _REAL_KINDS:
                    continue
                if a is None and optional:
                    continue
                raw[i] = a = as_array_input(a, opname, param)
                if type(a) is np.ndarray and a.shape:  # a nested list, now an array
                    dims = True
        if zero_d and dims:
            weakly_typed(raw, operands)
        out, vjps = forward(*raw, **kwargs)
        return record(out, args, vjps, opname)

    apply.forward = forward
    apply.is_op = True
    return apply
