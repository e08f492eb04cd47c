"""Every public op against PyTorch autograd: values and gradients for a random cotangent.

The references live beside each op's other cases, in ``op_cases/<family>.py`` (a builder
registered with ``@torch_table``); this runner builds them all and runs each in the dtypes
its case names (float64, and float32 where the case says so), with tolerances from the
dtype (``op_cases.base.near``: a few hundred ulps of the largest magnitude compared).
Skipped when torch is not installed.

Conventions mapped there: cross_entropy has the classes on the last axis in minigrad and on
axis 1 in torch (so 2-D logits); reductions with ties use torch.amax/amin; var's and std's
ddof is torch's correction. Some cases sit exactly on ties and kinks on purpose: the
subgradient conventions must agree with torch's too, except at clip's bounds, where torch's
convention changed between versions (see the clip cases), and hypot at the origin (0 here,
nan in torch; docs/backward.md §24).
"""
from __future__ import annotations

import numpy as np
import pytest
from op_cases import torch_cases

import minigrad as mg
from minigrad.ops import PUBLIC_OPS

torch = pytest.importorskip("torch")

CASES = torch_cases(torch)
PARAMS = [pytest.param(c, np.dtype(d), id=f"{c.id}-{np.dtype(d).name}")
          for c in CASES for d in c.dtypes]


def test_every_public_op_has_a_torch_case():
    assert {c.op for c in CASES} == set(PUBLIC_OPS)


def test_case_ids_are_unique():
    ids = [p.id for p in PARAMS]
    assert len(ids) == len(set(ids))


def _leaves(case, dtype):
    """The case's inputs as minigrad and torch leaves (floating ones cast and requiring grad)."""
    mts, tts = [], []
    for a in case.inputs:
        if a.dtype.kind == "f":
            a = a.astype(dtype)
            mts.append(mg.Tensor(a.copy(), requires_grad=True))
            tts.append(torch.tensor(a, requires_grad=True))
        else:  # labels, indices, masks: passed as they are
            mts.append(a)
            tts.append(torch.as_tensor(a))
    return mts, tts


@pytest.mark.parametrize("case,dtype", PARAMS)
def test_matches_torch_autograd(case, dtype):
    mts, tts = _leaves(case, dtype)
    if case.fp_strict:  # no overflow, no 0/0 in the forward (underflow to 0 is expected)
        with np.errstate(over="raise", divide="raise", invalid="raise"):
            try:
                out = case.fn(*mts)
            except FloatingPointError as e:
                pytest.fail(f"a NumPy floating-point warning in the forward: {e}")
    else:
        out = case.fn(*mts)
    tout = case.torch_fn(*tts)
    assert out.shape == tuple(tout.shape)
    assert out.dtype == dtype and tout.dtype == getattr(torch, dtype.name)
    case.close(out.data, tout.detach().numpy(), dtype)
    cot = np.random.default_rng(5).standard_normal(out.shape).astype(dtype)
    out.backward(cot)
    tout.backward(torch.from_numpy(cot))
    for m, t in zip(mts, tts, strict=True):
        if isinstance(m, mg.Tensor):
            assert m.grad is not None and t.grad is not None
            assert m.grad.dtype == dtype and m.grad.shape == tuple(t.grad.shape)
            case.close(m.grad, t.grad.numpy(), dtype)
