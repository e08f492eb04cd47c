"""How user data becomes a Tensor's array: the accepted dtypes, and errors that name the
argument (``Tensor(data, requires_grad, dtype)`` and ``tensor(...)``)."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_data", "check_dtype"]

_NOT_GIVEN = object()


def check_dtype(data: np.ndarray, requires_grad: bool, given: Any = _NOT_GIVEN) -> None:
    """Refuse data that is not real numbers, and ``requires_grad`` on non-floating data."""
    kind = data.dtype.kind
    if kind not in "biuf":
        what = f"an array of dtype {data.dtype}"
        if given is not _NOT_GIVEN and not isinstance(given, np.ndarray):
            what = f"{type(given).__name__} ({what})"
        raise TypeError(
            f"Tensor data: got {what}; expected a bool, integer or floating dtype"
        )
    if requires_grad and kind != "f":
        raise TypeError(
            f"requires_grad=True: got dtype {data.dtype}; expected a floating dtype "
            "(float16, float32, float64): only floating tensors can require grad"
        )


def as_data(data: Any, dtype: Any, copy: bool) -> np.ndarray:
    """``np.asarray``/``np.array`` with errors that name the argument."""
    if dtype is not None:
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"Tensor dtype: got {dtype!r}; expected a NumPy dtype such as "
                            "np.float32 or 'float64'") from None
    try:
        return np.array(data, dtype=dtype, copy=True) if copy else np.asarray(data, dtype=dtype)
    except ValueError as e:
        if "inhomogeneous" in str(e) or "sequence" in str(e):
            raise ValueError(f"Tensor data: got a ragged nested sequence ({e}); expected an "
                             "array or equally long nested lists of numbers") from None
        raise ValueError(f"Tensor data: cannot be read as an array of dtype {dtype} ({e}); "
                         "expected numbers") from None
