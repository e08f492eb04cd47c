"""How minigrad's NumPy protocols (minigrad/numpy_api.py) read NumPy's arguments.

NumPy's functions take options minigrad's ops do not have (``out=``, ``where=``, ``dtype=`` of
a reduction, ``initial=``): each is accepted at its default and refused otherwise with a
TypeError that names the function, the option and a differentiable way to write it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import ops
from .tensor import Tensor

__all__ = ["WHY", "HINTS", "numpy_name", "not_differentiable", "unsupported", "no_out",
           "options", "is_default", "cast", "shape_of"]

#: Why an option is refused, and what to write instead.
WHY = {
    "where": "minigrad has no masked op; select first with np.where(mask, t, fill), which is "
             "differentiable",
    "dtype": "cast first with t.astype(dtype), which is differentiable",
    "initial": "combine it with the result instead (np.sum(t) + initial, "
               "np.maximum(np.max(t), initial))",
}
HINTS = {  # a differentiable spelling, where there is one
    "np.dot": "; for a matrix product use t @ u (np.matmul), or np.einsum / np.tensordot",
    "np.vstack": "; np.concatenate and np.stack are differentiable",
    "np.hstack": "; np.concatenate and np.stack are differentiable",
    "np.average": "; np.mean, or np.sum(w * t) / np.sum(w), is differentiable",
    "np.fmax": "; np.maximum is differentiable", "np.fmin": "; np.minimum is differentiable",
    "np.copy": "; ops never write into their inputs, so t itself serves",
    "np.diag": "; np.diagonal (of a 2-d Tensor) is differentiable",
    "np.put_along_axis": "; F.put_along_axis(a, indices, values, axis) is differentiable and "
                         "returns a new Tensor (NumPy's writes into its input)",
    "np.rot90": "; np.flip, np.swapaxes and np.transpose are differentiable",
    "np.linalg.vector_norm": "; np.linalg.norm is differentiable",
    "np.linalg.matrix_norm": "; np.linalg.norm is differentiable",
}


def numpy_name(func: Any) -> str:
    """``np.linalg.inv`` for ``numpy.linalg.inv``, as a user would have typed it."""
    module = getattr(func, "__module__", None) or "numpy"
    if isinstance(func, np.ufunc) or module == "numpy" or module.startswith("numpy._"):
        return f"np.{func.__name__}"
    return f"{module.replace('numpy', 'np', 1)}.{func.__name__}"


def not_differentiable(name: str, one_argument: bool = True, hint: str = "") -> TypeError:
    use = f"{name}(t.data)" if one_argument else f"{name} on t.data in place of t"
    return TypeError(f"{name} is not differentiable in minigrad: it has no op for it; use "
                     f"{use} for a constant array, or write an op with mg.op"
                     f"{hint or HINTS.get(name, '')}")


def unsupported(name: str, arg: str, value: Any) -> TypeError:
    why = WHY.get(arg, f"minigrad's op has no {arg}= option; call {name}(t.data, ...) for a "
                        "constant array")
    shown = type(value).__name__ if isinstance(value, (np.ndarray, Tensor)) else repr(value)
    if arg == "dtype" and isinstance(value, type) and issubclass(value, np.generic):
        shown = f"np.{value.__name__}"
    return TypeError(f"{name}: {arg}={shown} is not supported on Tensors; {why}")


def no_out(name: str, out: Any) -> None:
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        shown = ", ".join(type(o).__name__ for o in (out if isinstance(out, tuple) else (out,)))
        raise TypeError(
            f"{name}(..., out={shown}): minigrad does not write results into an existing array "
            "or Tensor (each op makes a new Tensor, so the graph can differentiate it); use the "
            "returned Tensor (for `a += t` with an ndarray a, write `a = a + t`)")


def options(name: str, out: Any = None, where: Any = True, **given: Any) -> None:
    """Refuse ``out=`` into an array, ``where=`` masks and every option given as not None."""
    no_out(name, out)
    if not is_default(where, True):
        raise unsupported(name, "where", where)
    for arg, value in given.items():
        if value is not None:
            raise unsupported(name, arg, value)


def is_default(value: Any, default: Any) -> bool:
    """``value`` is the option's default (NumPy's own True and equal strings included)."""
    if default is True:
        return value is True or value is np.True_
    return value is default or (isinstance(value, str) and value == default)


def cast(a: Any, dtype: Any) -> Any:
    """``dtype=`` of a reduction (the accumulator's dtype, and so the result's): cast first."""
    return a if dtype is None else ops.astype(a, dtype)


def shape_of(x: Any) -> tuple:
    return x.shape if isinstance(x, Tensor) else np.shape(x)
