"""Shared checks for the peer-suite reproductions in tests/peers/.

``check_vs_torch`` runs one function in minigrad and in PyTorch on the same inputs and compares
the forward values and, with a random non-uniform cotangent, the gradient of every floating
input. ``assert_close`` is the comparison: NaN and inf must sit at the same places, every
finite value must agree within ``ulps`` machine epsilons of the dtype, relative to the value
and (for values near zero) to the largest magnitude in the expected array.
``index_grad`` is an independent reference for the gradient of any NumPy index.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import minigrad as mg

#: Agreement between two correct implementations of an elementwise op: a few ulps each way,
#: with headroom for a short chain of ops (pow's VJP, the softmax family, ...).
ULPS = 64


def assert_close(actual: Any, expected: Any, dtype: Any, ulps: float = ULPS, what: str = "") -> None:
    """``actual`` equals ``expected`` within ``ulps`` epsilons of ``dtype``; same shape, and
    NaN and ±inf at the same positions."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    a = actual.astype(np.float64) if actual.dtype.kind in "biuf" else actual
    e = expected.astype(np.float64) if expected.dtype.kind in "biuf" else expected
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    assert np.array_equal(nan_a, nan_e), f"{what}: NaN at {np.argwhere(nan_a != nan_e)[:5].tolist()}"
    inf_e = np.isinf(e)
    assert np.array_equal(a[inf_e], e[inf_e]) and not np.isinf(a[~inf_e]).any(), \
        f"{what}: infinities differ: {a[inf_e | np.isinf(a)]} vs {e[inf_e | np.isinf(a)]}"
    finite = np.isfinite(e)
    if not finite.any():
        return
    tol = ulps * float(np.finfo(dtype).eps)
    scale = max(1.0, float(np.max(np.abs(e[finite]))))
    np.testing.assert_allclose(a[finite], e[finite], rtol=tol, atol=tol * scale, err_msg=what)


def uniform(shapes: Sequence[tuple], dtype: Any, low: float = -2.0, high: float = 2.0,
            seed: int = 0) -> list[np.ndarray]:
    """tinygrad's ``helper_test_op`` inputs: uniform in [low, high), one array per shape."""
    rng = np.random.default_rng(seed)
    return [np.asarray(rng.uniform(low, high, s), dtype=dtype) for s in shapes]


def as_inputs(vals: Sequence[Any], dtype: Any) -> list[np.ndarray]:
    """Explicit values as arrays: floats in ``dtype``, ints and bools kept as they are."""
    out = []
    for v in vals:
        a = np.asarray(v)
        out.append(a.astype(dtype) if a.dtype.kind == "f" else a)
    return out


def check_vs_torch(torch: Any, mg_fn: Callable, t_fn: Callable, arrays: Sequence[np.ndarray],
                   dtype: Any, ulps: float = ULPS, grad_ulps: float | None = None,
                   backward: bool = True, check_dtype: bool = True, seed: int = 1) -> None:
    """Forward and backward of ``mg_fn`` and ``t_fn`` on the same ``arrays``.

    Floating arrays become leaves that require grad in both frameworks. The cotangent is a
    random normal array in the output's dtype; gradients PyTorch does not produce (an input
    the output does not depend on) must be absent or zero in minigrad.
    """
    floating = [a.dtype.kind == "f" for a in arrays]
    m_in = [mg.Tensor(a.copy(), requires_grad=f) for a, f in zip(arrays, floating, strict=True)]
    t_in = [torch.tensor(a.copy(), requires_grad=f) for a, f in zip(arrays, floating, strict=True)]
    m_out, t_out = mg_fn(*m_in), t_fn(*t_in)
    expected = t_out.detach().numpy()
    assert_close(m_out.data, expected, dtype, ulps, "forward")
    if check_dtype and expected.dtype.kind == "f":
        assert m_out.dtype == expected.dtype, f"forward dtype {m_out.dtype} != torch {expected.dtype}"
    elif expected.dtype.kind != m_out.dtype.kind:
        assert {expected.dtype.kind, m_out.dtype.kind} <= set("iu"), \
            f"forward dtype kind {m_out.dtype} vs torch {expected.dtype}"
    if not backward or not t_out.requires_grad:
        return
    v = np.random.default_rng(seed).standard_normal(expected.shape).astype(expected.dtype)
    wrt = [t for t, f in zip(t_in, floating, strict=True) if f]
    t_grads = torch.autograd.grad(t_out, wrt, torch.tensor(v), allow_unused=True)
    m_out.backward(v)
    for i, (m, t) in enumerate(zip([m for m, f in zip(m_in, floating, strict=True) if f], t_grads, strict=True)):
        want = np.zeros(m.shape, dtype=m.dtype) if t is None else t.numpy()
        got = np.zeros(m.shape, dtype=m.dtype) if m.grad is None else m.grad
        assert got.dtype == m.dtype, f"grad {i} dtype {got.dtype} != input dtype {m.dtype}"
        assert_close(got, want, dtype, grad_ulps or ulps, f"gradient of input {i}")


def index_grad(shape: tuple, index: Any, cotangent: np.ndarray) -> np.ndarray:
    """d<x[index], v>/dx, computed without scattering: each output element names the input
    element it was read from (an index into ``arange(x.size)``), and ``bincount`` adds up the
    cotangents of every read, so repeated indices accumulate."""
    source = np.arange(int(np.prod(shape))).reshape(shape)[index]
    return np.bincount(np.ravel(source), weights=np.ravel(cotangent),
                       minlength=int(np.prod(shape))).reshape(shape)


#: Central differences with step h = 1e-6 in float64 on these O(1)-to-O(100) functions: the
#: truncation error is ~h² |f'''| ~ 1e-12 and the rounding error ~eps |L| / h ~ 2e-10 |L|, so
#: 1e-6 (absolute and relative) leaves a wide margin and still catches a VJP off by 1e-5
#: relative (gradcheck's own defaults, 1e-5 and 1e-4, would let that through).
GRADCHECK_TOL = dict(atol=1e-7, rtol=1e-7)


def gradcheck_ok(fn: Callable, *arrays: np.ndarray, **kw: Any) -> None:
    """``mg.gradcheck`` in float64 (finite differences, random cotangent); raises on failure."""
    kw = {**GRADCHECK_TOL, **kw}
    report = mg.gradcheck(fn, [np.asarray(a, dtype=np.float64) for a in arrays], **kw)
    assert report.ok, str(report)
