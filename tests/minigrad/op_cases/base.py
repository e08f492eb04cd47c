"""What an op case is, and the seeded inputs every family's cases draw from.

An :class:`OpCase` holds an op's inputs (float64 arrays, and non-differentiable arrays such
as labels or masks), a function of Tensors built from ``minigrad.F`` and a reference written
directly in NumPy/SciPy, so values are checked against an independent implementation, never
against minigrad itself.
"""
from __future__ import annotations

import numpy as np


class OpCase:
    def __init__(self, op, label, fn, ref, inputs, gc=None, keeps_dtype=True):
        self.op, self.id, self.fn, self.ref = op, f"{op}-{label}", fn, ref
        self.inputs = tuple(np.asarray(x) for x in inputs)  # 0-d stays an array
        self.gc = gc or {}  # extra gradcheck keywords (eps, tolerances)
        self.keeps_dtype = keeps_dtype  # False: casts, or mixes in float64 constants

    def __repr__(self):
        return self.id


#: One generator for every family, drawn from in the families' import order (see __init__).
_rng = np.random.default_rng(20240611)
OP_CASES: dict[str, list[OpCase]] = {}
def rn(shape):
    return np.asarray(_rng.standard_normal(shape))  # 0-d stays an array (a checked input)


def pos(shape):
    return np.asarray(_rng.uniform(0.5, 2.0, shape))


def away(shape, gap=0.2):
    """Normals pushed at least ``gap`` away from 0 (no kinks of abs/relu within eps)."""
    x = rn(shape)
    return np.where(x >= 0, 1.0, -1.0) * (np.abs(x) + gap)


def separated(shape_a, shape_b, gap=0.05):
    """Two arrays whose broadcast elements differ by more than ``gap`` (no ties)."""
    while True:
        a, b = rn(shape_a), rn(shape_b)
        if np.min(np.abs(np.subtract(a, b)), initial=np.inf) > gap:
            return a, b


def add_case(op, label, fn, ref, *inputs, **kw):
    OP_CASES.setdefault(op, []).append(OpCase(op, label, fn, ref, inputs, **kw))


def _sid(*shapes):
    return "@".join("x".join(map(str, s)) or "0d" for s in shapes)

