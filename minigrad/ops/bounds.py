"""Size bounds of the ops whose output can be far larger than their inputs (``tile``,
``repeat``, ``einsum``, broadcast indices, attention scores), checked from the shapes before
NumPy allocates or loops: a 10-element array with reps of 10**12, or a broadcast view of a
terabyte, is refused with a ValueError naming the argument instead of asking the machine
for the memory (or the hours). The bounds are module attributes, read at each call: raise
them to go beyond.
"""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MAX_OUTPUT_ELEMENTS", "MAX_SCORES", "MAX_EINSUM_STEPS", "MAX_OPTIMAL_OPERANDS",
           "elements", "check_output"]

#: The most elements one output built from sizes rather than data may have: 2 GiB of
#: float64, as ``one_hot``'s bound.
MAX_OUTPUT_ELEMENTS = 2 ** 28
#: The most attention scores (B·H·L·S) one call may build: 16 GiB of float64. Larger than
#: ``MAX_OUTPUT_ELEMENTS`` because a ViT's own batches pass that (64 images of 1,025 tokens
#: and 4 heads are just over 2**28), and ``vit.model.config.limits`` bounds those already.
MAX_SCORES = 2 ** 31
#: The most multiply-adds an unoptimized einsum may loop through (NumPy's ``optimize=False``
#: visits every combination of every label): about 10**12, minutes to hours of work.
MAX_EINSUM_STEPS = 2 ** 40
#: The most operands of an einsum with ``optimize='optimal'``: NumPy's search for that path
#: is factorial in them (8 take half a second, 10 more than a minute).
MAX_OPTIMAL_OPERANDS = 8


def elements(shape: Iterable[int]) -> int:
    """The number of elements of ``shape``, in exact integers (no int64 overflow)."""
    n = 1
    for size in shape:
        n *= int(size)
    return n


def check_output(op: str, param: str, n: int, what: str, bound: str = "MAX_OUTPUT_ELEMENTS"
                 ) -> None:
    """ValueError unless an array of ``n`` elements is within the bound named ``bound``."""
    limit = globals()[bound]
    if n > limit:
        raise ValueError(f"{op} {param}: got {what}, {n:,} elements to allocate; expected "
                         f"at most {limit:,} (minigrad.ops.bounds.{bound})")
