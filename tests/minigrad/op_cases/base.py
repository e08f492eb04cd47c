"""What an op case is, and the seeded inputs every family's cases draw from.

An :class:`OpCase` holds an op's inputs (float64 arrays, and non-differentiable arrays such
as labels or masks), a function of Tensors built from ``minigrad.F`` and a reference written
directly in NumPy/SciPy, so values are checked against an independent implementation, never
against minigrad itself.
"""
from __future__ import annotations

import sys
from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
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
rn = partial(helpers.rn, _rng)  # rn(2, 3); rn() is a 0-d array (a checked input)
pos = partial(helpers.uniform, _rng, 0.5, 2.0)


def away(shape, gap=0.2):
    """Normals pushed at least ``gap`` away from 0 (no kinks of abs/relu within eps)."""
    x = rn(*shape)
    return np.where(x >= 0, 1.0, -1.0) * (np.abs(x) + gap)


def separated(shape_a, shape_b, gap=0.05):
    """Two arrays whose broadcast elements differ by more than ``gap`` (no ties)."""
    while True:
        a, b = rn(*shape_a), rn(*shape_b)
        if np.min(np.abs(np.subtract(a, b)), initial=np.inf) > gap:
            return a, b


#: op -> the family modules (``op_cases/<family>.py``) whose add_case calls hold its cases, in
#: the order they registered them: an op's docstring points there first (test_op_docstrings).
CASE_MODULES: dict[str, list[str]] = {}


def add_case(op, label, fn, ref, *inputs, **kw):
    OP_CASES.setdefault(op, []).append(OpCase(op, label, fn, ref, inputs, **kw))
    module = sys._getframe(1).f_globals["__name__"].rpartition(".")[2]  # the caller's family
    if module not in CASE_MODULES.setdefault(op, []):
        CASE_MODULES[op].append(module)


def _sid(*shapes):
    return "@".join("x".join(map(str, s)) or "0d" for s in shapes)



# ---- torch references ------------------------------------------------------------------------
class TorchCase:
    """One op against PyTorch autograd: ``fn`` on minigrad Tensors and ``torch_fn`` on torch
    tensors, applied to the same inputs (floating arrays become differentiable leaves of each
    dtype in ``dtypes``; integer and bool arrays are passed as they are). ``close(got, want,
    dtype)`` asserts closeness (default: :func:`near`); ``fp_strict``: the forward must raise
    no NumPy floating-point warning (overflow, division by zero, invalid)."""

    def __init__(self, op, label, fn, torch_fn, inputs, dtypes=(np.float64,), close=None,
                 fp_strict=False):
        self.op, self.id, self.fn, self.torch_fn = op, f"{op}-{label}", fn, torch_fn
        self.inputs = tuple(np.asarray(x) for x in inputs)
        self.dtypes, self.close, self.fp_strict = tuple(dtypes), close or near, fp_strict

    def __repr__(self):
        return self.id


def near(got, want, dtype, ulps=256):
    """Within ``ulps`` of the dtype times the largest magnitude compared (at least 1),
    relative and absolute alike."""
    tol = ulps * np.finfo(dtype).eps * max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


#: Each family's builder ``build(torch, case)`` of its torch references, called only by the
#: torch runner: op_cases imports without torch. A builder seeds its own generator, so the
#: inputs do not depend on which builders ran before it.
TORCH_BUILDERS = []


def torch_table(build):
    """Registers a family's torch references (a decorator; see TORCH_BUILDERS)."""
    TORCH_BUILDERS.append(build)
    return build


def torch_cases(torch) -> list[TorchCase]:
    """Every family's torch references, built now (``torch`` is the imported module)."""
    cases: list[TorchCase] = []

    def case(op, label, fn, torch_fn, *inputs, **kw):
        cases.append(TorchCase(op, label, fn, torch_fn, inputs, **kw))

    for build in TORCH_BUILDERS:
        build(torch, case)
    return cases
