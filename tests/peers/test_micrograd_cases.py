"""micrograd's engine tests (karpathy/micrograd, test/test_engine.py): test_sanity_check,
test_more_ops and test_unary_tensor_fns, the same scalar expressions built in minigrad and in
PyTorch, value and gradients compared. Our own code; the expressions are theirs.

micrograd's Value is a Python float; here the leaves are 0-d and (1,)-shaped tensors (torch's
``Tensor([-4.0])`` is (1,)), in float64 and float32, compared within a few ulps of the dtype.
The torch comparisons skip without torch; the finite-difference check does not.
``c += c + 1`` rebinds ``c`` to a new node in minigrad (there is no in-place ``+=`` on Tensors),
as micrograd's ``__add__`` does.
"""
from __future__ import annotations

import numpy as np
import pytest
from peer_util import assert_close

import minigrad as mg
from minigrad import F

SHAPES = [(), (1,)]
DTYPES = [np.float64, np.float32]


def relu(t):
    return F.relu(t) if isinstance(t, mg.Tensor) else t.relu()


def sanity(x):
    z = 2 * x + 2 + x
    q = relu(z) + z * x
    h = relu(z * z)
    return h + q + q * x


def more_ops(a, b):
    c = a + b
    d = a * b + b ** 3
    c += c + 1
    c += 1 + c + (-a)
    d += d * 2 + relu(b + a)
    d += 3 * d + relu(b - a)
    e = c - d
    f = e ** 2
    g = f / 2.0
    g += 10.0 / f
    return g


def _leaves(torch, values, shape, np_dtype):
    t_dtype = {np.float64: torch.float64, np.float32: torch.float32}[np_dtype]
    m = [mg.Tensor(np.full(shape, v, np_dtype), requires_grad=True) for v in values]
    t = [torch.full(shape, v, dtype=t_dtype, requires_grad=True) for v in values]
    return m, t


def _compare(fn, values, shape, dtype, ulps):
    """The expression in both frameworks (skipped without torch): value and leaf gradients."""
    torch = pytest.importorskip("torch")
    m, t = _leaves(torch, values, shape, dtype)
    ym, yt = fn(*m), fn(*t)
    ym.backward(np.ones(ym.shape, dtype))
    yt.backward(torch.ones_like(yt))
    assert ym.dtype == dtype
    assert_close(ym.data, yt.detach().numpy(), dtype, ulps, "forward")
    for i, (a, b) in enumerate(zip(m, t, strict=True)):
        assert a.grad.dtype == dtype
        assert_close(a.grad, b.grad.numpy(), dtype, ulps, f"grad of leaf {i}")
    return ym, m


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("shape", SHAPES, ids=["0d", "1"])
def test_sanity_check(shape, dtype):
    """micrograd asserts equality here; we allow 4 ulps (docs/reliability.md promises bit
    equality only for minigrad against itself). At x = -4 the values are exact integers."""
    ym, (x,) = _compare(sanity, [-4.0], shape, dtype, ulps=4)
    assert ym.data.ravel()[0] == -20.0 and x.grad.ravel()[0] == 46.0  # worked by hand


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("shape", SHAPES, ids=["0d", "1"])
def test_more_ops(shape, dtype):
    """micrograd's tolerance is 1e-6 absolute on values near 24.7 and gradients near 645."""
    ym, _ = _compare(more_ops, [-4.0, 2.0], shape, dtype, ulps=16)
    assert abs(ym.data.ravel()[0] - 24.70408163265306) < 1e-5 * 24.7  # micrograd's README value


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("x", [-1.0, 0.123, 2.0])
@pytest.mark.parametrize("name", ["tanh", "exp"])
def test_unary_tensor_fns(name, x, dtype):
    _compare(lambda t: getattr(t, name)(), [x], (), dtype, ulps=4)


def test_sanity_check_by_gradcheck():
    """The same two expressions against finite differences (no torch needed for this one)."""
    for fn, values in [(sanity, [-4.0]), (more_ops, [-4.0, 2.0])]:
        report = mg.gradcheck(fn, [np.array(v) for v in values])
        assert report.ok, str(report)
