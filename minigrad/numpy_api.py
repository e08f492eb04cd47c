"""NumPy's own functions on Tensors: NEP 13 (``__array_ufunc__``), NEP 18 (``__array_function__``).

``np.exp(np.sum(t * 2, axis=0))`` records ``sum`` and ``exp`` exactly as ``F.sum`` and
``F.exp`` would: the tables below map each NumPy callable to the op it means, with NumPy's
signature. Every other NumPy callable raises a TypeError naming it, since its result would be
an array cut from the graph. A Tensor that requires grad never becomes an ndarray
(``np.asarray(t)`` raises, as PyTorch does); ``t.data`` is its array, as a constant.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from . import ops
from .numpy_options import (
    cast,
    is_default,
    no_out,
    not_differentiable,
    numpy_name,
    options,
    shape_of,
    unsupported,
)
from .tensor import Tensor, as_tensor

__all__ = ["UFUNCS", "COMPARISONS", "REDUCTIONS", "FUNCTIONS", "METADATA", "RequiresGradError",
           "array_ufunc", "array_function", "to_array"]


class RequiresGradError(TypeError, RuntimeError):
    """``np.asarray(t)`` of a Tensor that requires grad: an ndarray cannot carry the gradient.
    A TypeError (NumPy cannot convert the object) and a RuntimeError (what PyTorch raises)."""


def _positive(a):
    return a  # +t is t itself (Tensor.__pos__)


def _square(a):
    return ops.pow(a, 2)


#: ufunc -> op, for ``ufunc(*inputs)``; ``ufunc.outer`` too, for the binary ones but matmul.
UFUNCS: dict[np.ufunc, Callable] = {
    np.add: ops.add, np.subtract: ops.sub, np.multiply: ops.mul, np.divide: ops.div,
    np.power: ops.pow, np.maximum: ops.maximum, np.minimum: ops.minimum, np.matmul: ops.matmul,
    np.negative: ops.neg, np.positive: _positive, np.square: _square, np.exp: ops.exp,
    np.log: ops.log, np.sqrt: ops.sqrt, np.tanh: ops.tanh, np.absolute: ops.abs,
    # the elementwise math functions (ops/unary.py); np.mod is np.remainder, so one entry
    np.sin: ops.sin, np.cos: ops.cos, np.tan: ops.tan, np.arcsin: ops.arcsin,
    np.arccos: ops.arccos, np.arctan: ops.arctan, np.sinh: ops.sinh, np.cosh: ops.cosh,
    np.arcsinh: ops.arcsinh, np.arctanh: ops.arctanh, np.log1p: ops.log1p, np.expm1: ops.expm1,
    np.log2: ops.log2, np.log10: ops.log10, np.exp2: ops.exp2, np.reciprocal: ops.reciprocal,
    np.arctan2: ops.arctan2, np.hypot: ops.hypot, np.logaddexp: ops.logaddexp,
    np.sign: ops.sign, np.floor: ops.floor, np.ceil: ops.ceil, np.trunc: ops.trunc,
    np.remainder: ops.mod,
}
#: Comparisons give bool Tensors (no gradient) through Tensor's own operators, so that
#: ``ndarray < Tensor`` means what ``Tensor > ndarray`` does.
COMPARISONS: dict[np.ufunc, Callable] = {
    np.less: operator.lt, np.less_equal: operator.le, np.greater: operator.gt,
    np.greater_equal: operator.ge, np.equal: operator.eq, np.not_equal: operator.ne,
}
#: ``ufunc.reduce`` -> the reduction op.
REDUCTIONS: dict[np.ufunc, Callable] = {np.add: ops.sum, np.maximum: ops.max, np.minimum: ops.min}

_PLAIN = {Tensor, np.ndarray, float, int, bool, np.float64, np.float32, np.int64}
_UFUNC_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "subok": True,
                   "dtype": None, "signature": None}
# ---- ufuncs (NEP 13) ------------------------------------------------------------------
def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_ufunc__``: the op for ``ufunc`` (or ``ufunc.reduce``/``.outer``)."""
    if method == "__call__" and not kwargs and ufunc in UFUNCS \
            and all(type(x) in _PLAIN for x in inputs):  # ``ndarray <op> Tensor``: no checks
        return UFUNCS[ufunc](*inputs)
    if any(not isinstance(x, (Tensor, np.ndarray, np.generic))
           and hasattr(type(x), "__array_ufunc__") for x in inputs + kwargs.get("out", ())):
        return NotImplemented  # another array type: let it (or NumPy's TypeError) answer
    name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    if method == "reduce" and ufunc in REDUCTIONS:
        return _reduce(name, REDUCTIONS[ufunc], *inputs, **kwargs)
    binary = ufunc in UFUNCS and ufunc.nin == 2 and ufunc is not np.matmul
    if not ((method == "__call__" and (ufunc in UFUNCS or ufunc in COMPARISONS))
            or (method == "outer" and binary)):
        raise not_differentiable(name, len(inputs) == 1 and not kwargs)
    no_out(name, kwargs.get("out"))
    for arg, value in kwargs.items():
        if arg != "out" and (arg not in _UFUNC_DEFAULTS
                             or not is_default(value, _UFUNC_DEFAULTS[arg])):
            raise unsupported(name, arg, value)  # axes=, keepdims= of matmul too
    if ufunc in COMPARISONS:  # the first operand as a Tensor, so Tensor's operator runs
        return COMPARISONS[ufunc](as_tensor(inputs[0]), inputs[1])
    if method == "outer":
        a, b = inputs
        return UFUNCS[ufunc](ops.reshape(a, shape_of(a) + (1,) * len(shape_of(b))), b)
    return UFUNCS[ufunc](*inputs)


def _reduce(name, op, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
            where=True):
    options(name, out, where, initial=initial)
    return op(cast(a, dtype), axis=axis, keepdims=bool(keepdims))


# ---- functions (NEP 18), each with NumPy's signature ---------------------------------
def _sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    options("np.sum", out, where, initial=initial)
    return ops.sum(cast(a, dtype), axis=axis, keepdims=bool(keepdims))


def _mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    options("np.mean", out, where)
    return ops.mean(cast(a, dtype), axis=axis, keepdims=bool(keepdims))


def _extremum(name, op):
    def extremum(a, axis=None, out=None, keepdims=False, initial=None, where=True):
        options(name, out, where, initial=initial)
        return op(a, axis=axis, keepdims=bool(keepdims))
    return extremum


def _spread(name, op):
    def spread(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
               mean=None, correction=None):
        options(name, out, where, mean=mean)
        if correction is not None:
            if ddof != 0:
                raise ValueError(f"{name}: got ddof={ddof!r} and correction={correction!r}; "
                                 "expected one of them (correction is the Array API's ddof)")
            ddof = correction
        return op(cast(a, dtype), axis=axis, ddof=ddof, keepdims=bool(keepdims))
    return spread


def _prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    options("np.prod", out, where, initial=initial)
    return ops.prod(cast(a, dtype), axis=axis, keepdims=bool(keepdims))


def _scan(name, op):
    def scan(a, axis=None, dtype=None, out=None):
        options(name, out)
        return op(cast(a, dtype), axis=axis)
    return scan


def _arg(name, op):
    def arg(a, axis=None, out=None, *, keepdims=False):
        options(name, out)
        return op(a, axis=axis, keepdims=bool(keepdims))
    return arg


def _truth(name, op):
    def truth(a, axis=None, out=None, keepdims=False, *, where=True):
        options(name, out, where)
        return op(a, axis=axis, keepdims=bool(keepdims))
    return truth


def _einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    options("np.einsum", out, dtype=dtype, order=None if order == "K" else order,
             casting=None if casting == "safe" else casting)
    return ops.einsum(*operands, optimize=optimize)


def _outer(a, b, out=None):
    options("np.outer", out)
    return ops.outer(a, b)


def _rounding(name):
    def round_(a, decimals=0, out=None):
        options(name, out)
        return ops.round(a, decimals)
    return round_


def _norm(x, ord=None, axis=None, keepdims=False):
    return ops.norm(x, ord=ord, axis=axis, keepdims=bool(keepdims))


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    options("np.reshape", order=None if order == "C" else order, copy=copy)
    return ops.reshape(a, newshape if shape is None else shape)  # newshape: NumPy < 2.1


def _ravel(a, order="C"):
    options("np.ravel", order=None if order == "C" else order)
    return ops.reshape(a, (-1,))


def _transpose(a, axes=None):
    return ops.transpose(a, None if axes is None else tuple(axes))


def _broadcast_to(array, shape, subok=False):
    return ops.broadcast_to(array, shape)


def _joiner(name, op):
    def join(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
        options(name, out, dtype=dtype, casting=None if casting == "same_kind" else casting)
        if axis is None:  # NumPy flattens every input first
            return op([ops.reshape(x, (-1,)) for x in arrays], axis=0)
        return op(arrays, axis=axis)
    return join


def _where(condition, x=None, y=None):
    if x is None and y is None:
        raise not_differentiable("np.where", hint=" (the one-argument form is np.nonzero; "
                                 "np.where(condition, x, y) is differentiable)")
    if x is None or y is None:
        raise ValueError("np.where: got one of x and y; expected both or neither")
    return ops.where(condition, x, y)


_GIVEN_NOT = object()  # np.clip's bounds have a_min/min and a_max/max spellings


def _clip(a, a_min=_GIVEN_NOT, a_max=_GIVEN_NOT, out=None, *, min=_GIVEN_NOT, max=_GIVEN_NOT,
          **kwargs):
    options("np.clip", out, kwargs.pop("where", True), **kwargs)  # kwargs: ufunc options
    bounds = []
    for arg, old, new in (("a_min", a_min, min), ("a_max", a_max, max)):
        if old is not _GIVEN_NOT and new is not _GIVEN_NOT:
            raise ValueError(f"np.clip: got both {arg}= and {arg[2:]}=; expected one of them")
        bound = None if old is _GIVEN_NOT and new is _GIVEN_NOT else new if old is _GIVEN_NOT \
            else old
        bounds.append(bound)
    return ops.clip(a, *bounds)


# ---- shape and indexing ops (ops/shape.py, ops/indexing.py), under NumPy's names -----------
def _triangle(op):
    def triangle(m, k=0):
        if len(shape_of(m)) == 1:  # NumPy's 1-d case: the vector as every row, then the triangle
            m = ops.broadcast_to(m, shape_of(m) * 2)
        return op(m, k)
    return triangle


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    options("np.trace", out)
    return ops.trace(cast(a, dtype), offset, axis1, axis2)


def _pad(array, pad_width, mode="constant", **kwargs):
    """np.pad's 'constant' (a scalar constant_values), 'reflect' (reflect_type 'even') and
    'edge': F.pad's modes, with its rules (reflect at most n - 1 wide, where np.pad would
    reflect the padding again)."""
    value = kwargs.pop("constant_values", 0) if is_default(mode, "constant") else 0
    if is_default(mode, "reflect") and is_default(kwargs.get("reflect_type", "even"), "even"):
        kwargs.pop("reflect_type", None)
    if not any(is_default(mode, m) for m in ("constant", "reflect", "edge")):
        raise unsupported("np.pad", "mode", mode)
    if kwargs:  # stat_length=, end_values=, reflect_type='odd', another mode's options
        raise unsupported("np.pad", *next(iter(kwargs.items())))
    if isinstance(value, Tensor) or np.ndim(value) != 0:
        raise unsupported("np.pad", "constant_values", value)  # F.pad takes one constant
    return ops.pad(array, pad_width, mode, float(value))


def _astype(x, dtype, /, *, copy=True, device=None):
    options("np.astype", device=None if device in (None, "cpu") else device)
    return ops.astype(x, dtype)  # a new Tensor either way: copy=False has nothing to save


def _cumulative(name, op):
    def cumulative(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        options(name, out, include_initial=True if include_initial else None)
        if axis is None and len(shape_of(x)) != 1:
            raise ValueError(f"{name}: got axis=None for a {len(shape_of(x))}-d input; expected "
                             "an axis (None only for 1-d inputs, as in NumPy)")
        return op(cast(x, dtype), axis=0 if axis is None else axis)
    return cumulative


def _matrix_transpose(x, /):
    if len(shape_of(x)) < 2:
        raise ValueError(f"np.matrix_transpose: got shape {shape_of(x)}; expected >= 2-d")
    return ops.swapaxes(x, -1, -2)


def _linalg_outer(x1, x2, /):
    if len(shape_of(x1)) != 1 or len(shape_of(x2)) != 1:  # np.outer flattens, this does not
        raise ValueError(f"np.linalg.outer: got shapes {shape_of(x1)} and {shape_of(x2)}; "
                         "expected 1-d inputs")
    return ops.outer(x1, x2)


#: NumPy function -> handler with NumPy's signature, recording the op(s) it names.
FUNCTIONS: dict[Callable, Callable] = {
    np.sum: _sum, np.mean: _mean, np.var: _spread("np.var", ops.var),
    np.max: _extremum("np.max", ops.max), np.amax: _extremum("np.amax", ops.max),
    np.min: _extremum("np.min", ops.min), np.amin: _extremum("np.amin", ops.min),
    np.reshape: _reshape, np.ravel: _ravel, np.transpose: _transpose,
    np.swapaxes: ops.swapaxes, np.expand_dims: ops.expand_dims, np.squeeze: ops.squeeze,
    np.broadcast_to: _broadcast_to, np.split: ops.split, np.where: _where, np.clip: _clip,
    np.concatenate: _joiner("np.concatenate", ops.concatenate),
    np.stack: _joiner("np.stack", ops.stack),
    # contractions, reductions, scans (ops/contract.py, reduce.py, scan.py)
    np.einsum: _einsum, np.tensordot: ops.tensordot, np.outer: _outer, np.inner: ops.inner,
    np.std: _spread("np.std", ops.std), np.prod: _prod, np.linalg.norm: _norm,
    np.round: _rounding("np.round"), np.around: _rounding("np.around"),
    np.cumsum: _scan("np.cumsum", ops.cumsum), np.cumprod: _scan("np.cumprod", ops.cumprod),
    np.argmax: _arg("np.argmax", ops.argmax), np.argmin: _arg("np.argmin", ops.argmin),
    np.any: _truth("np.any", ops.any), np.all: _truth("np.all", ops.all),
    # shape and indexing ops (ops/shape.py, indexing.py), with NumPy's argument names and
    # defaults (the ops of the same name have NumPy's own where no lambda stands)
    np.flip: lambda m, axis=None: ops.flip(m, axis), np.fliplr: lambda m: ops.flip(m, 1),
    np.flipud: lambda m: ops.flip(m, 0), np.roll: ops.roll, np.repeat: ops.repeat,
    np.tile: lambda A, reps: ops.tile(A, reps), np.moveaxis: ops.moveaxis,
    np.tril: _triangle(ops.tril), np.triu: _triangle(ops.triu), np.trace: _trace,
    np.diagonal: ops.diagonal, np.pad: _pad,
    np.take_along_axis: lambda arr, indices, axis=-1: ops.take_along_axis(arr, indices, axis),
}
# The Array API spellings of NumPy 2.0 (cumulative_sum/prod: 2.1), where this NumPy has them
for _module, _function, _handler in (
        (np, "astype", _astype), (np, "matrix_transpose", _matrix_transpose),
        (np, "cumulative_sum", _cumulative("np.cumulative_sum", ops.cumsum)),
        (np, "cumulative_prod", _cumulative("np.cumulative_prod", ops.cumprod)),
        (np.linalg, "matrix_transpose", _matrix_transpose), (np.linalg, "outer", _linalg_outer),
        (np.linalg, "matmul", lambda x1, x2, /: ops.matmul(x1, x2)),
        (np.linalg, "tensordot", lambda x1, x2, /, *, axes=2: ops.tensordot(x1, x2, axes)),
        (np.linalg, "trace", lambda x, /, *, offset=0, dtype=None: ops.trace(
            cast(x, dtype), offset, -2, -1)),
        (np.linalg, "diagonal", lambda x, /, *, offset=0: ops.diagonal(x, offset, -2, -1))):
    if hasattr(_module, _function):
        FUNCTIONS[getattr(_module, _function)] = _handler
del _module, _function, _handler
#: Functions that only read the shape: they answer as for ``t.data``.
METADATA: dict[Callable, Callable] = {
    np.shape: lambda a: shape_of(a), np.ndim: lambda a: len(shape_of(a)),
    np.size: lambda a, axis=None: int(np.prod(shape_of(a))) if axis is None else shape_of(a)[axis],
}


def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_function__``: the handler for ``func``, or a TypeError naming it."""
    if not all(issubclass(t, (Tensor, np.ndarray)) for t in types):
        return NotImplemented
    handler = FUNCTIONS.get(func) or METADATA.get(func)
    if handler is None:
        raise not_differentiable(numpy_name(func), len(args) == 1 and not kwargs)
    return handler(*args, **kwargs)


# ---- conversion ------------------------------------------------------------------------
def to_array(t: Tensor, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """``Tensor.__array__``: ``t.data`` for a Tensor without grad; a RequiresGradError for one
    with grad (an ndarray of it would silently drop the gradient, as PyTorch refuses too)."""
    if t.requires_grad:
        raise RequiresGradError(
            "np.asarray(t) or np.array(t) (also of a list holding t, or a[...] = t): the Tensor "
            "requires grad, and an ndarray cannot carry its gradient; use t.data (or "
            "t.detach()) for its values as a constant, or a NumPy function minigrad "
            "differentiates (np.stack([t, u]) rather than np.array([t, u]))")
    data = t.data
    if dtype is not None and np.dtype(dtype) != data.dtype:
        if copy is False:
            raise ValueError(f"np.asarray(t, dtype={np.dtype(dtype)}, copy=False): the Tensor "
                             f"holds {data.dtype}, and a cast needs a copy")
        return data.astype(dtype)
    return data.copy() if copy else data


# NumPy's protocols on Tensor, attached here (the bridge sits above the ops it dispatches to):
# np.exp(t), np.sum(t), ndarray <op> Tensor record the op; other NumPy functions refuse by
# name; a Tensor that requires grad never becomes an ndarray.
def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return array_ufunc(ufunc, method, inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    return array_function(func, types, args, kwargs)


def _array(self, dtype=None, copy=None):
    return to_array(self, dtype, copy)


Tensor.__array_ufunc__ = _array_ufunc
Tensor.__array_function__ = _array_function
Tensor.__array__ = _array
