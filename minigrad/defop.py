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
of them promotes a float32 tensor to float64; when no declared array input (``arrays=``)
is an array, a number there becomes a 0-d array instead, so ``F.sum(3.5)`` can read
``.ndim``; everything else is passed through unchanged) and returns
``(output, vjps)``. ``vjps`` is one function per positional argument, in order, mapping the
output's gradient ``g`` to that argument's gradient (a single function when only the first
argument is differentiable; ``None`` for a position that is not). The engine calls a VJP
only when its argument is a Tensor that requires grad, sums its result back to the
argument's shape if the forward broadcast it, and casts it to the argument's dtype. A
Tensor that requires grad at a position with no VJP is a TypeError naming the op and the
parameter (when the result is floating): its gradient is never dropped without a word.

When one computation gives every input's gradient (a hand-derived backward of a whole
stage), ``vjps`` may be ``JointVJP(gradients)`` instead: ``gradients(g, needed) -> [x̄_0,
x̄_1, ...]``, one entry per positional parameter, called once per backward pass. ``needed``
holds one bool per positional parameter, True where its argument is a Tensor that requires
grad (as ``ctx.needs_input_grad`` in torch); the other entries are ignored (None is fine).
Each entry used is treated as a VJP's result.

A forward may return several outputs as a tuple ``((out_0, out_1, ...), vjps)``: the op
then returns a tuple of Tensors, and each VJP receives the tuple of cotangents
``(g_0, g_1, ...)``, one per output, and is called once per backward pass however many of
the outputs were used. An output that did not reach the loss gets zeros of its shape and
dtype (as ``torch.autograd.Function`` materializes them by default), so a VJP is written
as plain arithmetic with no None case; non-floating outputs (indices) carry no gradient.
A list is refused, not stacked into one array: return an array or a tuple.

The engine also notes the version of every Tensor input and output of a recorded op, and
``backward`` refuses if one was written in place since (see ``Tensor``): it cannot tell
which arrays a VJP saved, so it checks them all.

An array a VJP returns is handed over: when nothing else references it, the engine keeps it
as the gradient (a leaf's ``.grad``) and adds later contributions into it in place. So a VJP
must not write into an array it returned once (a buffer reused through a weak cache, say).
Returning its cotangent, a saved array or a view is fine: those are copied before any write.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast, overload

import numpy as np

from .checks import int_beyond_c_long, refuse_torch_keywords, shown
from .gradmode import grad_mode
from .graph import ConstantInput, Joint, Node
from .opcalls import OpCall, declare, observer_of_op_calls
from .tensor import Tensor

__all__ = ["op", "Op", "record", "JointVJP", "as_array_input", "as_floating", "weakly_typed"]

_REAL_KINDS = "biuf"
_ARRAYS = (Tensor, np.ndarray)


class JointVJP:
    """The VJPs of every input of an op as one function, ``gradients(g, needed) -> [x̄_0, ...]``
    (see the module docstring): the engine calls it once per backward pass, with the tuple
    ``needed`` (one bool per positional parameter: does its argument's gradient reach a
    leaf?)."""

    __slots__ = ("gradients",)

    def __init__(self, gradients: Callable[[Any, tuple], Sequence]) -> None:
        if not callable(gradients):
            raise TypeError(f"JointVJP gradients: got {type(gradients).__name__}; expected a "
                            "function gradients(g, needed) -> one gradient per input")
        self.gradients = gradients


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


def _numbers_as_arrays(args: Sequence[Any], raw: list, checked: list) -> None:
    """Replace, in place, the numbers at an op's array positions by 0-d arrays, when none of
    those positions holds an array: ``F.sum(3.5)`` is ``np.sum(3.5)``, for a forward that
    reads ``.ndim``. A NumPy scalar keeps its dtype (``F.sum(np.float32(1))`` is float32);
    next to one, a Python number stays a weakly typed number, as in NumPy."""
    scalars = any(i < len(args) and isinstance(args[i], np.generic) for i, _, _ in checked)
    for i, _, _ in checked:
        if i < len(raw) and isinstance(raw[i], (bool, int, float)):
            if isinstance(args[i], np.generic):
                raw[i] = np.asarray(args[i])
            elif not scalars:
                raw[i] = np.asarray(raw[i])


@overload
def record(out: tuple, inputs: Sequence[Any], vjps: Any, name: str,
           params: Sequence[str] = ()) -> tuple: ...
@overload
def record(out: np.ndarray | np.generic | float, inputs: Sequence[Any], vjps: Any, name: str,
           params: Sequence[str] = ()) -> Tensor: ...
def record(out: Any, inputs: Sequence[Any], vjps: Any, name: str,
           params: Sequence[str] = ()) -> Tensor | tuple:
    """Wrap ``out`` in a Tensor and, if grad mode is on, record how to differentiate it.

    ``inputs[i]`` pairs with ``vjps[i]`` (one VJP or None per input, a single function, or a
    ``JointVJP``); only pairs whose input is a Tensor requiring grad become edges of the
    graph. A Tensor that requires grad at a position with no VJP (None, or past the end of
    ``vjps``) is a TypeError naming the op and ``params[i]`` (else "input i") when the result
    is floating: its gradient would be lost without a word. The node also notes the version
    of every Tensor input and of the output, which ``backward`` checks. A tuple ``out`` is
    several outputs: the result is a tuple of Tensors, and each VJP gets a tuple of
    cotangents. Ops with a variable number of inputs (``concatenate``, ``stack``) call this
    directly.
    """
    outs = None  # several outputs, when ``out`` is a tuple
    if type(out) is not np.ndarray:
        if type(out) is tuple:
            outs = _as_outputs(out, name)
        else:
            out = _as_output(out, name)
    if not grad_mode.enabled:
        if outs is not None:
            return tuple(_output(o, inputs, None) for o in outs)
        return Tensor._make(out) if out.base is None else _output(out, inputs, None)
    # only floating results carry a gradient
    floating = out.dtype.kind == "f" if outs is None else any(o.dtype.kind == "f" for o in outs)
    gradients = None  # a JointVJP's one function for every input
    if type(vjps) is not tuple:
        if type(vjps) is JointVJP:
            gradients, vjps = vjps.gradients, range(len(inputs))
        elif callable(vjps):  # a single VJP (a function, or an object with __call__)
            vjps = (vjps,)
        elif isinstance(vjps, JointVJP):  # a subclass (asked only here: it is no function)
            gradients, vjps = vjps.gradients, range(len(inputs))
    edges = []
    plain = True  # input k is edge k for every Tensor input (edges first, no constant Tensor)
    gap = False
    # (strict=False: the inputs past the last VJP are checked below, and VJPs past the
    # last input given belong to parameters left at their defaults)
    for x, vjp in zip(inputs, vjps, strict=False):
        if vjp is not None and isinstance(x, Tensor) and x.requires_grad:
            # the graph keeps the input's node, not the input tensor (and its array)
            edges.append((x if x._node is None else x._node, vjp))
            if gap:
                plain = False
        else:
            gap = True
            if isinstance(x, Tensor):
                plain = False
                if floating and x.requires_grad:
                    _refuse(name, params, inputs, vjps, x)
    if len(inputs) > len(vjps):  # inputs with no VJP at all (axis, keepdims, a mask, ...)
        for x in inputs[len(vjps):]:
            if isinstance(x, Tensor):
                plain = False
                if floating and x.requires_grad:
                    _refuse(name, params, inputs, vjps, x)
    if not edges or not floating:
        if outs is not None:
            return tuple(_output(o, inputs, None) for o in outs)
        return _output(out, inputs, None)
    # In the plain case backward reaches each input's version cell through its edge's
    # parent and the edge's position is the input's; otherwise the node lists both.
    positions, constants = (None, ()) if plain else _positions_and_constants(inputs, vjps)
    joint = None
    if gradients is not None:
        needed = [False] * max(len(inputs), len(params))
        for k in range(len(edges)):
            needed[k if positions is None else positions[k]] = True
        edges = [(parent, None) for parent, _ in edges]
        joint = Joint(gradients, tuple(needed))
    if outs is not None:
        node = Node(name, tuple(edges), (), None, None, positions, constants, joint=joint)
        return _output_nodes(node, outs, inputs, name)
    cell = [0, 0] if out.base is None else _version_cell(out, inputs)
    node = Node(name, tuple(edges), out.shape, out.dtype, cell, positions, constants, None, None,
                joint)
    return Tensor._make(out, node, cell)


def _as_outputs(outs: tuple, name: str) -> tuple:
    if not outs:
        raise ValueError(f"op '{name}': its forward returned an empty tuple; expected an array "
                         "or a tuple of at least one array")
    return tuple(o if type(o) is np.ndarray else _as_output(o, name) for o in outs)


def _output_nodes(node: Node, outs: tuple, inputs: Sequence[Any], name: str) -> tuple:
    """Several outputs: ``node`` holds the VJPs (each gets a tuple of cotangents, zeros for
    the outputs that did not reach the loss); each floating output gets a Node of its own
    whose one edge leads there, marked by its ``index``."""
    node.specs = tuple((o.shape, o.dtype) for o in outs)
    node.shape, node.dtype = tuple(o.shape for o in outs), tuple(o.dtype for o in outs)
    results = []
    for k, o in enumerate(outs):
        if o.dtype.kind != "f":
            results.append(_output(o, inputs, None))
            continue
        cell = [0, 0] if o.base is None else _version_cell(o, inputs)
        results.append(Tensor._make(o, Node(name, ((node, None),), o.shape, o.dtype, cell,
                                            index=k), cell))
    node.cell = tuple(t._version for t in results)
    return tuple(results)


def _positions_and_constants(inputs: Sequence[Any], vjps: Sequence) -> tuple[tuple, tuple]:
    """Where the inputs with an edge stand among ``inputs``, and the Tensor inputs without
    one (:class:`ConstantInput`), for an op whose edges are not simply its first inputs."""
    positions = []
    constants = []
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor):
            continue
        if i < len(vjps) and vjps[i] is not None and x.requires_grad:
            positions.append(i)
        else:
            constants.append(ConstantInput(i, x._version, x.data.shape, x.data.dtype))
    return tuple(positions), tuple(constants)

def _refuse(name: str, params: Sequence[str], inputs: Sequence[Any], vjps: Sequence,
            x: Tensor) -> None:
    """The error for a Tensor that requires grad at a position with no VJP (cold path)."""
    i = next(k for k, v in enumerate(inputs)
             if v is x and (k >= len(vjps) or vjps[k] is None))
    param = params[i] if i < len(params) else f"input {i}"
    raise TypeError(f"{name} {param}: a Tensor that requires grad, but {name} has no "
                    f"gradient for {param}; pass {param}.detach() or a constant")


def _output(out: np.ndarray, inputs: Sequence[Any], node: Node | None) -> Tensor:
    return Tensor._make(out, node, [0, 0] if out.base is None else _version_cell(out, inputs))


def _version_cell(out: np.ndarray, inputs: Sequence[Any]) -> list:
    """The version cell for a result ``out`` that is a view: that of the input whose array
    it views, if any, so that a write through either one is seen by the ops that recorded
    the other; else a new one."""
    base = out.base
    for x in inputs:
        if isinstance(x, Tensor) and (base is x.data or base is x.data.base):
            return x._version
    return [0, 0]


def _as_output(out: Any, name: str) -> np.ndarray:
    if isinstance(out, list):
        raise TypeError(f"op '{name}': its forward returned a list; expected an array, or a "
                        "tuple of arrays for an op with several outputs")
    return np.asarray(out)


class Op(Protocol):
    """What :func:`op` makes of a forward: the differentiable function, which returns a Tensor
    (a tuple of them for an op with several outputs), with the forward itself and the name
    the graph records."""

    forward: Callable[..., Any]
    op_name: str
    is_op: bool

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


@overload
def op(forward: Callable[..., Any], *, name: str | None = None, arrays: int = 0) -> Op: ...
@overload
def op(forward: None = None, *, name: str | None = None,
       arrays: int = 0) -> Callable[[Callable[..., Any]], Op]: ...
def op(forward: Callable[..., Any] | None = None, *, name: str | None = None,
       arrays: int = 0) -> Op | Callable[[Callable[..., Any]], Op]:
    """Decorator turning ``forward(*arrays, **consts) -> (out, vjps)`` into a differentiable op.

    Use as ``@op`` or ``@op(name="...", arrays=2)``. The decorated function takes Tensors (or
    arrays and numbers, treated as constants) and returns a Tensor. ``arrays`` declares how
    many leading positional parameters are array inputs: those are checked
    (:func:`as_array_input`; None passes only where the parameter's default is None) before
    the forward runs, and they are the operands whose dimensions make 0-d arguments weakly
    typed (:func:`weakly_typed`; every positional argument is one when ``arrays`` is 0). The
    undecorated forward stays reachable as ``.forward``, the name the graph records as
    ``.op_name``.
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
    n_checked, n_positional = len(checked), len(positional)
    optional = [opt for _, _, opt in checked]

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

    takes = tuple(signature.parameters)

    @functools.wraps(forward)
    def apply(*args: Any, **kwargs: Any) -> Tensor | tuple:
        if kwargs:
            if "dim" in kwargs or "keepdim" in kwargs:  # PyTorch's names: say NumPy's
                refuse_torch_keywords(kwargs, opname, takes)
            for v in kwargs.values():
                if isinstance(v, _ARRAYS):  # an array by keyword: into its position
                    args, kwargs = by_position(args, kwargs)
                    break
        # NumPy scalars become Python numbers, which NumPy (NEP 50) treats as weakly typed:
        # ``x * np.float64(0.5)`` keeps a float32 ``x`` float32, as ``x * 0.5`` does. 0-d
        # arrays next to an array with dimensions follow (``weakly_typed``); this one loop
        # notes whether there are any, so that other calls pay almost nothing for it.
        # The declared array inputs (the first ``n_checked``) are checked in the same loop.
        raw = list(args)  # (replacing items is cheaper than appending each one)
        zero_d = numbers = False
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                a = raw[i] = a.data
            elif isinstance(a, np.generic):
                a = raw[i] = a.item()
            if type(a) is np.ndarray:
                if not a.ndim:
                    zero_d = True
                if i < n_checked and a.dtype.kind not in _REAL_KINDS:
                    as_array_input(a, opname, positional[i])  # raises, naming the parameter
            elif i < n_checked and not (a is None and optional[i]):
                a = raw[i] = as_array_input(a, opname, positional[i])
                if type(a) is not np.ndarray:
                    numbers = True
        if numbers:  # a number stands for a 0-d array when no array input is an array
            for i, _, _ in checked:
                if i < len(raw) and type(raw[i]) is np.ndarray:
                    break
            else:
                _numbers_as_arrays(args, raw, checked)
        if zero_d:  # (weakly_typed returns at once when no operand has dimensions)
            weakly_typed(raw, operands)
        try:  # (free unless it raises)
            out, vjps = forward(*raw, **kwargs) if kwargs else forward(*raw)  # (no empty dict)
        except (OverflowError, ValueError) as e:  # "Python int too large to convert to C
            # long", or NumPy's "Maximum allowed dimension exceeded" for a size past intp
            if isinstance(e, ValueError) and "Maximum allowed dimension" not in str(e):
                raise
            too_large = int_beyond_c_long(signature, args, kwargs)
            if too_large is None:
                raise
            name, value = too_large
            raise ValueError(f"{opname} {name}: got {shown(value)}; expected integers between "
                             f"-2**63 and 2**63 - 1 (what NumPy takes as an axis, a size or a "
                             "count)") from None
        if type(vjps) is tuple and len(vjps) > n_positional:
            raise TypeError(f"op '{opname}': its forward returned {len(vjps)} VJPs; expected "
                            f"at most one per positional parameter ({n_positional} "
                            "positional)")
        result = record(out, args, vjps, opname, positional)
        observer = observer_of_op_calls()  # checking mode (opcalls.py): None outside it
        if observer is not None:
            observer(OpCall(apply, opname, forward, params, tuple(args), tuple(raw),
                            kwargs, result))
        return result

    params = tuple(positional)
    made = cast(Op, apply)  # (what the three attributes below make it)
    made.forward = forward
    made.op_name = opname
    made.is_op = True
    declare(made, opname)  # findable by its name from a graph node (opcalls.ops_named)
    return made
