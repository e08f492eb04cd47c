"""The methods that make a Tensor behave as an array: its operators (``t + u``, ``t @ w``,
``t < u``), indexing (``t[i]``, ``t[i] = v``), in-place operators (``t += u``) and NumPy-named
methods (``t.sum(axis)``, ``t.cumsum()``, ``t.sin()``, ...).

Each is one line that calls the op of the same meaning in ``minigrad.ops``, with NumPy's
signature (``ndarray.sum(axis=None, ...)``, ``ndarray.repeat(repeats, axis=None)``); where
ndarray has no such method, PyTorch's name (``flip``, ``roll``, ``tril``, ``logcumsumexp``).
NumPy's second positional parameter of a reduction is dtype/out, which these do not take:
``keepdims`` and ``ddof`` are keyword-only, so ``t.sum(0, True)`` fails loudly rather than
meaning another thing. ``argmax``, ``argmin``, ``any`` and ``all`` return plain arrays.

They are defined on :class:`TensorMethods` and copied onto :class:`minigrad.Tensor` when this
module is imported (``minigrad/__init__.py`` does it first): the ops need ``Tensor``, so
``Tensor``'s own module, in the core, cannot import them.
"""
from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from . import inplace
from . import ops as _ops
from .checks import numpy_keywords
from .tensor import Tensor

__all__ = ["TensorMethods"]

_ARRAY_LIKE = (Tensor, np.ndarray, np.generic, int, float, list, tuple)  # bool is an int


def _array_like(x: Any) -> bool:
    return isinstance(x, _ARRAY_LIKE)


class TensorMethods:  # noqa: PLW1641 (unhashed itself; Tensor keeps object.__hash__)
    """The array methods of :class:`minigrad.Tensor` (copied onto it below); every one
    forwards to ``minigrad.ops``."""

    # ``self`` is always a Tensor, these methods being copied onto it; mypy sees a
    # TensorMethods (Tensor's base class to a type checker), hence the ignores on the calls
    # that take a Tensor.

    # ---- operators
    def __add__(self, other): return _ops.add(self, other)
    def __radd__(self, other): return _ops.add(other, self)
    def __sub__(self, other): return _ops.sub(self, other)
    def __rsub__(self, other): return _ops.sub(other, self)
    def __mul__(self, other): return _ops.mul(self, other)
    def __rmul__(self, other): return _ops.mul(other, self)
    def __truediv__(self, other): return _ops.div(self, other)
    def __rtruediv__(self, other): return _ops.div(other, self)
    def __pow__(self, other): return _ops.pow(self, other)
    def __rpow__(self, other): return _ops.pow(other, self)
    def __mod__(self, other): return _ops.mod(self, other)
    def __rmod__(self, other): return _ops.mod(other, self)
    def __matmul__(self, other): return _ops.matmul(self, other)
    def __rmatmul__(self, other): return _ops.matmul(other, self)
    def __neg__(self): return _ops.neg(self)
    def __pos__(self): return self
    def __abs__(self): return _ops.abs(self)
    def __getitem__(self, index): return _ops.getitem(self, index)  # type: ignore[arg-type]

    # ---- in-place writes (Tensor's docstring says when each is allowed; minigrad/inplace.py)
    def __setitem__(self, index: Any, value: Any) -> None:
        """``t[index] = value``: NumPy's assignment into ``data`` (values cast to t's dtype);
        bumps the version."""
        inplace.setitem(self, index, value)  # type: ignore[arg-type]

    # ``t += v``: NumPy's same-kind casting into t's dtype, or, where the result must be
    # recorded, the op out of place (the name is rebound to its result)
    def __iadd__(self, other):
        return inplace.update(self, other, np.add, "+=", _ops.add)  # type: ignore[arg-type]

    def __isub__(self, other):
        return inplace.update(self, other, np.subtract, "-=", _ops.sub)  # type: ignore[arg-type]

    def __imul__(self, other):
        return inplace.update(self, other, np.multiply, "*=", _ops.mul)  # type: ignore[arg-type]

    def __itruediv__(self, other):
        return inplace.update(self, other, np.true_divide, "/=", _ops.div)  # type: ignore[arg-type]

    def __ipow__(self, other):
        return inplace.update(self, other, np.power, "**=", _ops.pow)  # type: ignore[arg-type]

    def __imod__(self, other):
        return inplace.update(self, other, np.remainder, "%=", _ops.mod)  # type: ignore[arg-type]

    def __imatmul__(self, other):
        return inplace.update(self, other, np.matmul, "@=", _ops.matmul)  # type: ignore[arg-type]

    # Comparisons give bool tensors and are not differentiable.
    def __lt__(self, other): return _ops.less(self, other)
    def __le__(self, other): return _ops.less_equal(self, other)
    def __gt__(self, other): return _ops.greater(self, other)
    def __ge__(self, other): return _ops.greater_equal(self, other)
    # Equality with something that is not array-like (None, a string, any object) is Python's
    # identity, as in PyTorch: ``t == None`` is False and ``t in [None, t]`` works.
    def __eq__(self, other):
        return _ops.equal(self, other) if _array_like(other) else NotImplemented

    def __ne__(self, other):
        return _ops.not_equal(self, other) if _array_like(other) else NotImplemented

    @property
    def T(self) -> Tensor:
        """Axes reversed, as ``ndarray.T``."""
        return _ops.transpose(self, None)

    # ---- reductions and scans
    def sum(self, axis=None, *, keepdims=False): return _ops.sum(self, axis=axis, keepdims=keepdims)
    def mean(self, axis=None, *, keepdims=False):
        return _ops.mean(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, *, keepdims=False): return _ops.max(self, axis=axis, keepdims=keepdims)
    def min(self, axis=None, *, keepdims=False): return _ops.min(self, axis=axis, keepdims=keepdims)
    def prod(self, axis=None, *, keepdims=False): return _ops.prod(self, axis, keepdims)

    def var(self, axis=None, *, ddof=0, keepdims=False):
        return _ops.var(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, *, ddof=0, keepdims=False): return _ops.std(self, axis, ddof, keepdims)
    def norm(self, ord=None, axis=None, keepdims=False): return _ops.norm(self, ord, axis, keepdims)
    def cumsum(self, axis=None): return _ops.cumsum(self, axis)
    def cumprod(self, axis=None): return _ops.cumprod(self, axis)
    def logcumsumexp(self, axis=None): return _ops.logcumsumexp(self, axis)
    def argmax(self, axis=None, *, keepdims=False): return _ops.argmax(self, axis, keepdims)
    def argmin(self, axis=None, *, keepdims=False): return _ops.argmin(self, axis, keepdims)
    def any(self, axis=None, *, keepdims=False): return _ops.any(self, axis, keepdims)
    def all(self, axis=None, *, keepdims=False): return _ops.all(self, axis, keepdims)

    # ---- elementwise
    def exp(self): return _ops.exp(self)
    def log(self): return _ops.log(self)
    def sqrt(self): return _ops.sqrt(self)
    def tanh(self): return _ops.tanh(self)
    def abs(self): return _ops.abs(self)
    def relu(self): return _ops.relu(self)
    def sigmoid(self): return _ops.sigmoid(self)
    def sin(self): return _ops.sin(self)
    def cos(self): return _ops.cos(self)
    def tan(self): return _ops.tan(self)
    def arcsin(self): return _ops.arcsin(self)
    def arccos(self): return _ops.arccos(self)
    def arctan(self): return _ops.arctan(self)
    def sinh(self): return _ops.sinh(self)
    def cosh(self): return _ops.cosh(self)
    def arcsinh(self): return _ops.arcsinh(self)
    def arctanh(self): return _ops.arctanh(self)
    def log1p(self): return _ops.log1p(self)
    def expm1(self): return _ops.expm1(self)
    def log2(self): return _ops.log2(self)
    def log10(self): return _ops.log10(self)
    def exp2(self): return _ops.exp2(self)
    def square(self): return _ops.square(self)
    def reciprocal(self): return _ops.reciprocal(self)
    def rsqrt(self): return _ops.rsqrt(self)
    def sign(self): return _ops.sign(self)
    def floor(self): return _ops.floor(self)
    def ceil(self): return _ops.ceil(self)
    def trunc(self): return _ops.trunc(self)
    def round(self, decimals=0): return _ops.round(self, decimals)

    def clip(self, min=None, max=None, *, a_min=None, a_max=None):
        """``ndarray.clip(min, max)``; ``np.clip``'s ``a_min=``/``a_max=`` also accepted."""
        return _ops.clip(self, min if a_min is None else a_min, max if a_max is None else a_max)

    def astype(self, dtype): return _ops.astype(self, dtype)

    # ---- shape and indexing
    def reshape(self, *shape):
        return _ops.reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes):
        order: Any = axes
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            order = axes[0]
        return _ops.transpose(self, order or None)

    permute = transpose

    def swapaxes(self, axis1, axis2): return _ops.swapaxes(self, axis1, axis2)
    def moveaxis(self, source, destination): return _ops.moveaxis(self, source, destination)
    def squeeze(self, axis=None): return _ops.squeeze(self, axis)
    def flatten(self): return _ops.reshape(self, (-1,))
    def repeat(self, repeats, axis=None): return _ops.repeat(self, repeats, axis)
    def tile(self, reps): return _ops.tile(self, reps)
    def flip(self, axis=None): return _ops.flip(self, axis)
    def roll(self, shift, axis=None): return _ops.roll(self, shift, axis)
    def tril(self, k=0): return _ops.tril(self, k)
    def triu(self, k=0): return _ops.triu(self, k)
    def diagonal(self, offset=0, axis1=0, axis2=1): return _ops.diagonal(self, offset, axis1, axis2)
    def trace(self, offset=0, axis1=0, axis2=1): return _ops.trace(self, offset, axis1, axis2)
    def take_along_axis(self, indices, axis): return _ops.take_along_axis(self, indices, axis)


def _refuse_torch_keywords(cls: type) -> None:
    """Every method that takes ``axis`` says "use axis=" to a PyTorch ``dim=`` (and
    "use keepdims=" to ``keepdim=``), rather than Python's bare unexpected-keyword error."""
    for name, method in list(vars(cls).items()):
        if callable(method) and "axis" in inspect.signature(method).parameters:
            setattr(cls, name, numpy_keywords(method, f"Tensor.{name}"))


_refuse_torch_keywords(TensorMethods)

# (defining __eq__ gave TensorMethods __hash__ = None: Tensor keeps hashing by identity)
_CLASS_ATTRIBUTES = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                     "__hash__"}
for _name, _method in vars(TensorMethods).items():
    if _name not in _CLASS_ATTRIBUTES:
        setattr(Tensor, _name, _method)
