"""The checks of a layer's input (a Tensor or array of the layer's features and dtype), shared
by the layers of ``minigrad.nn``; argument checks come from ``minigrad.checks``."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import functional as F
from ..tensor import Tensor

__all__ = ["real_input", "features_input", "in_dtype"]


def real_input(layer: str, x: Any, expected: str) -> Any:
    """``x`` (a Tensor, or anything array-like, which becomes an ndarray) after checking it
    holds real numbers; ``expected`` names the shape for the message."""
    if not isinstance(x, Tensor):
        given = type(x).__name__
        x = np.asarray(x)
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{layer}: got {given} of dtype {x.dtype}; expected real numbers "
                            f"of shape {expected}")
    elif x.dtype.kind not in "biuf":  # an op may have made one from a complex constant
        raise TypeError(f"{layer}: got a Tensor of dtype {x.dtype}; expected real numbers")
    return x


def features_input(layer: str, x: Any, expected: int) -> Any:
    """``real_input`` with ``expected`` features on the last axis."""
    x = real_input(layer, x, f"(..., {expected})")
    if not x.shape or x.shape[-1] != expected:
        raise ValueError(f"{layer}: got input of shape {x.shape}; expected shape (..., {expected})")
    return x


def in_dtype(x: Any, dtype: np.dtype) -> Any:
    """``x`` cast to a module's dtype: a module computes in its own dtype whatever it is fed
    (integers, bool, another float width), and a Tensor's gradient is cast back to its dtype."""
    if x.dtype == dtype:
        return x
    return F.astype(x, dtype) if isinstance(x, Tensor) else x.astype(dtype)
