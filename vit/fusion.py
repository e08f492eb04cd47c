"""When vit runs a whole stage of a small model as ONE recorded minigrad op, and how.

On a tiny model (config A of benchmarks/train_step.py) a training step is interpreter
overhead: each recorded op costs its dispatch, its node and its VJP calls, and each NumPy call
about a microsecond whatever the array. So below the sizes here the stages of TinyViT run as
single ops whose forward and backward are vit/manual.py's hand-derived functions:

- ``embed_op.patch_tokens``: patches @ W + b, the CLS token and the position embeddings;
- ``block_op.encoder_block``: a whole pre-norm encoder block;
- ``head_op.cls_head``: the CLS row, the final LayerNorm and the classifier head.

Every matrix product of a fused stage is below ``parallel.BLAS_THREADED_FLOPS`` and its row
sums (GEMVs) cover at most ``rowwise.GEMV_ELEMENTS`` numbers: there one plain NumPy product is
what ``F.linear`` and ``row_sum`` do too, BLAS runs it on one thread, and the result does not
depend on the thread count (docs/reliability.md, G2). Larger stages keep the composed ops,
whose products and kernels are split across the block pool. docs/performance.md, "A fused
encoder block" and "The embedding and the head as single ops", has the measurements.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from minigrad import Tensor, record
from minigrad.ops.rowwise import GEMV_ELEMENTS
from minigrad.parallel import BLAS_THREADED_FLOPS

__all__ = ["FUSE_BELOW_FLOPS", "FUSE_MAX_ELEMENTS", "small_enough", "floating_dtype_of",
           "run_checked"]

#: A stage runs as one op while its largest matrix product (2·m·n·k FLOPs) is below this;
#: 0 turns every fused op off (the model composed from minigrad's ops, as before).
FUSE_BELOW_FLOPS = BLAS_THREADED_FLOPS
#: ... and while its token rows (B, T, D) hold at most this many numbers (row sums are GEMVs).
FUSE_MAX_ELEMENTS = GEMV_ELEMENTS


def small_enough(largest_product_flops: float, elements: int) -> bool:
    """True when a stage whose largest product costs ``largest_product_flops`` and whose
    activations hold ``elements`` numbers may run as one op (the bounds above)."""
    return largest_product_flops < FUSE_BELOW_FLOPS and elements <= FUSE_MAX_ELEMENTS


def floating_dtype_of(data, params: Sequence) -> np.dtype | None:
    """The one dtype, float32 or float64, that the array ``data`` and every parameter (Tensor)
    share, or None (float16, mixed dtypes: the composed ops cast them or name the error)."""
    dtype = data.dtype
    if dtype != np.float32 and dtype != np.float64:
        return None
    for p in params:  # (builtin dtypes are singletons: a byte-swapped one is another dtype)
        if p.data.dtype is not dtype:
            return None
    return dtype


def run_checked(op: Callable, inputs: Sequence, **consts):
    """``op(*inputs, **consts)`` for Tensors (or plain arrays, constants) that a ``fusable``
    rule has checked (arrays of one floating dtype, with dimensions): the forward on their
    arrays, recorded as the op's own wrapper records it, without the wrapper's per-argument
    conversions (numbers, NumPy scalars, 0-d arrays), none of which applies to such inputs."""
    # (an ndarray's own .data is a memoryview: only a Tensor is unwrapped)
    out, vjps = op.forward(*[x.data if isinstance(x, Tensor) else x for x in inputs],
                           **consts)
    return record(out, inputs, vjps, op.op_name)
