"""``Parameter``: the leaf Tensor a ``Module`` registers."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A leaf Tensor that a ``Module`` registers: always a floating, grad-requiring *copy*.

    ``Parameter(data)`` copies ``data`` (an array, list or Tensor), so the caller's array is
    never updated by an optimizer. ``dtype`` (optional) converts while copying.
    """

    __slots__ = ()

    def __init__(self, data: Any, dtype: Any = None) -> None:
        if isinstance(data, Tensor):
            data = data.data
        array = np.array(data, dtype=dtype, copy=True)
        if array.dtype.kind != "f":
            raise TypeError(
                f"Parameter data: got dtype {array.dtype}; expected a floating dtype "
                "(float16, float32, float64)"
            )
        super().__init__(array, requires_grad=True)

    def __repr__(self) -> str:
        return "Parameter" + super().__repr__()[len("Tensor"):]
