"""Helpers the test folders share, one copy of each (tests/conftest.py puts tests/ on sys.path,
so a test anywhere imports this module as ``helpers``; the dtype tolerances are in ulps.py).

Inputs are drawn from the generator the caller passes. Every test module, and every op family
in tests/minigrad/op_cases/, keeps its own seeded generator, so what a test sees does not
depend on which other modules ran before it (``-k``, ``-n 2``). A module that draws often
binds its generator once, ``rn = partial(helpers.rn, RNG)``, and then writes ``rn(3, 4)``.
"""
from __future__ import annotations

import numpy as np

import minigrad as mg

__all__ = ["generator", "rn", "uniform", "leaf", "grad_of"]


def generator(rng) -> np.random.Generator:
    """``rng`` itself if it is a Generator, else a fresh one seeded with it."""
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def rn(rng, *shape, dtype=np.float64, scale=1.0) -> np.ndarray:
    """Standard normals of ``shape`` (times ``scale``) from ``rng`` (a Generator or a seed),
    as an ndarray of ``dtype``: ``rn(rng)`` is a 0-d array, not a NumPy scalar."""
    x = generator(rng).standard_normal(shape)
    if scale != 1.0:
        x = x * scale
    return np.asarray(x).astype(dtype, copy=False)


def uniform(rng, lo, hi, *shape, dtype=np.float64) -> np.ndarray:
    """Uniform numbers in [lo, hi) of ``shape`` from ``rng``, as an ndarray of ``dtype``."""
    return np.asarray(generator(rng).uniform(lo, hi, shape)).astype(dtype, copy=False)


def leaf(rng, *shape, dtype=np.float64, within=None) -> mg.Tensor:
    """A Tensor of ``shape`` and ``dtype`` that requires grad: standard normals from ``rng``,
    or uniform numbers in ``within`` = (lo, hi) (away from 0, for logs and quotients)."""
    data = rn(rng, *shape) if within is None else uniform(rng, *within, *shape)
    return mg.Tensor(data.astype(dtype), requires_grad=True)


def grad_of(fn, x, dtype=np.float64, cot=None):
    """``(value, gradient)`` of ``fn`` at ``x`` (cast to ``dtype``) for the cotangent ``cot``
    (ones by default)."""
    t = mg.Tensor(np.asarray(x, dtype=dtype), requires_grad=True)
    out = fn(t)
    out.backward(np.ones(out.shape, dtype) if cot is None else np.asarray(cot, dtype))
    return out.data, t.grad
