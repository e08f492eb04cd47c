"""Data parallelism: a training step's batch cut into shards, each shard's forward and
backward run whole in a thread, the gradients summed in shard order.

A hand-off of NumPy work to another Python thread costs tens of microseconds, so splitting
each op across the cores (``minigrad.runtime.parallel``) pays only for large arrays and
products, and most of a step stays on one core. A shard hands the whole forward and backward
of its examples to a thread at once: one hand-off per shard and step, every op of the shard
in its thread (NumPy releases the GIL inside its loops and products).

The shards are cut by the batch and the number the caller gives (chosen by shape, e.g.
:func:`shards_for`), never by the thread count; each shard computes the same bits whichever
thread runs it, with BLAS at one thread; the leaves' gradients are summed in shard order. So
the step gives the same bits for any ``set_num_threads`` and any BLAS thread count
(docs/reliability.md, G2).
"""
from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .checks import integer
from .gradmode import grad_mode
from .graph import backward
from .runtime import parallel
from .tensor import Tensor

__all__ = ["data_parallel", "shards_for", "SHARD_STEPS", "MAX_SHARDS"]

#: The step's activation elements (all it keeps for its backward) from which it is cut into
#: 2, 4 and 8 shards. Each shard beyond the first repeats the interpreter's work per op
#: (which holds the GIL), multiplies smaller matrices and adds one more copy of every
#: gradient: at one thread 2 shards cost B-D 2-4%, 4 shards 10-12%, 8 shards 25-37%
#: (docs/performance.md, "The second core"), so more than 2 only for steps far larger.
SHARD_STEPS = ((2, 1 << 20), (4, 1 << 24), (8, 1 << 26))
#: At most this many shards (``data_parallel``'s bound).
MAX_SHARDS = 8


def shards_for(examples: int, elements: int) -> int:
    """The number of shards for a batch of ``examples`` whose step keeps about ``elements``
    activation elements in all: 1, 2, 4 or 8 by ``SHARD_STEPS`` (powers of two, so 2, 4 or 8
    threads share them evenly), at most ``examples``. A function of the shape only, so the
    same on every machine and for any thread count."""
    integer("examples", examples, low=0, owner="shards_for")
    integer("elements", elements, low=0, owner="shards_for")
    shards = 1
    for count, least in SHARD_STEPS:
        if elements >= least and count <= examples:
            shards = count
    return shards


def data_parallel(fn: Callable[..., Any], *batch: Any, shards: int) -> tuple[float, list]:
    """Run ``fn`` on ``shards`` consecutive slices of the ``batch`` arrays (along their first
    axis), each shard's forward and backward in a thread, and accumulate into every leaf's
    ``.grad`` the gradient of the whole batch's mean loss.

    ``fn(*slices)`` returns the loss of its examples, a 0-d Tensor that is their *mean*, or
    a tuple whose first item is that loss (the rest is handed back). A shard of ``n_s`` of
    the ``N`` examples is weighted ``n_s / N``: its backward starts from that cotangent, so
    the sum over the shards is the gradient of the batch's mean. Each leaf's gradients are
    summed in shard order and then added to ``.grad``; if any of several shards raises, no
    ``.grad`` changes. Returns ``(loss, results)``: the weighted sum of the shards' losses
    (a float) and what each shard's ``fn`` returned, in shard order.

    With ``shards=1`` this is ``fn(*batch)`` and its ``backward()`` in the caller's thread,
    with the same bits. More shards run on ``minigrad.runtime.parallel``'s threads (the
    caller's included) with BLAS at one thread, under the caller's grad mode and context
    variables; the ops inside a shard get the threads the shards leave over (none on 2 cores).
    """
    shards = integer("shards", shards, low=1, high=MAX_SHARDS, owner="data_parallel")
    arrays = [b.data if isinstance(b, Tensor) else np.asarray(b) for b in batch]
    n = len(arrays[0]) if arrays and arrays[0].ndim else 0
    for a in arrays:
        if a.ndim == 0 or len(a) != n:
            raise ValueError("data_parallel: got batch arrays of shapes "
                             f"{[a.shape for a in arrays]}; expected one or more with a first "
                             "axis of the same length (the examples)")
    if not arrays:
        raise ValueError("data_parallel: expected one or more batch arrays with a first axis")
    if shards > max(n, 1):
        raise ValueError(f"data_parallel shards: got {shards}; expected at most the "
                         f"{n} examples of the batch")
    if shards == 1:  # the caller's thread as it is: no hand-off, no BLAS limit to set (45 µs)
        out = fn(*arrays)
        loss = _loss_of(out)
        if loss.requires_grad:
            backward(loss, np.ones((), dtype=loss.dtype))
        return float(loss.data), [out]
    bounds = [(n * i // shards, n * (i + 1) // shards) for i in range(shards)]
    index = {lo: i for i, (lo, _) in enumerate(bounds)}
    results: list = [None] * shards
    losses = [0.0] * shards
    totals = _InOrder(shards)
    enabled = grad_mode.enabled  # per thread: each shard takes the caller's

    def shard(lo: int, hi: int) -> None:
        i = index[lo]
        before, grad_mode.enabled = grad_mode.enabled, enabled
        try:
            out = fn(*(a[lo:hi] for a in arrays))
            loss = _loss_of(out)
            weight = (hi - lo) / n
            losses[i] = weight * float(loss.data)
            sink: dict = {}
            if loss.requires_grad:
                backward(loss, np.asarray(weight, dtype=loss.dtype), leaf_grads=sink)
            results[i] = out
        finally:
            grad_mode.enabled = before
        totals.add(i, sink)

    contexts = [contextvars.copy_context() for _ in bounds]  # (one thread per context)
    parallel.for_each_range(lambda lo, hi: contexts[index[lo]].run(shard, lo, hi), bounds)
    for leaf, g in totals.sums.items():
        if leaf.grad is None:
            leaf.grad = g
        else:
            leaf.grad += g
    return sum(losses), results


def _loss_of(out: Any) -> Tensor:
    """The loss in what a shard's ``fn`` returned: it, or its first item."""
    loss = out[0] if isinstance(out, tuple) else out
    if not isinstance(loss, Tensor) or loss.ndim != 0:
        raise TypeError(f"data_parallel fn: returned {type(loss).__name__}"
                        f"{f' of shape {loss.shape}' if isinstance(loss, Tensor) else ''}; "
                        "expected a 0-d Tensor (the shard's mean loss) or a tuple starting "
                        "with one")
    return loss


class _InOrder:
    """The leaves' gradients summed in shard order as the shards finish: shard i's arrays are
    added once shards 0..i-1 have been, so at most the shards still running and those
    waiting for an earlier one hold gradients of their own (memory), and the sums do not
    depend on which shard finished first (bits)."""

    def __init__(self, shards: int) -> None:
        self.sums: dict = {}
        self.waiting: list[dict | None] = [None] * shards
        self.next = 0
        self.lock = threading.Lock()

    def add(self, i: int, sink: dict) -> None:
        with self.lock:
            self.waiting[i] = sink
            while self.next < len(self.waiting):
                ready = self.waiting[self.next]
                if ready is None:  # an earlier shard is still running
                    return
                self.waiting[self.next] = None
                self.next += 1
                for leaf, g in ready.items():  # (the first shard's arrays are its own)
                    if leaf in self.sums:
                        self.sums[leaf] += g
                    else:
                        self.sums[leaf] = g
