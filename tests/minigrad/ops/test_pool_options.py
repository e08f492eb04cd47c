"""Pooling options beyond ops/test_pool.py: ceil_mode, dilation, return_indices (ties, NaN,
windows of -inf, against PyTorch bit for bit), max_unpool2d, divisor_override, the 1-D
pools, and their bad arguments. Values against loop references and gradchecks are in the
op table (op_cases/pool.py). docs/backward.md §38."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(3840)
X = np.arange(50.0).reshape(1, 2, 5, 5)

# (input shape, kernel, stride, padding, dilation, ceil_mode): partial last windows,
# windows reaching into the padding, dilated windows that skip elements
GEOMETRIES = [((2, 2, 7, 7), 2, 2, 0, 1, True), ((1, 3, 8, 7), 3, 2, 1, 1, True),
              ((2, 2, 9, 8), 2, 3, 1, 2, True), ((1, 2, 9, 9), 3, 2, 1, 2, False),
              ((2, 1, 6, 5), (3, 2), (2, 3), (1, 1), (1, 2), True)]


def _torch_pair(x, ours, theirs):
    """(value, indices, gradient) of ours and of torch's for one integer cotangent (sums of
    integers are exact in any order: every gradient compares bit for bit)."""
    torch = pytest.importorskip("torch")
    m, t = mg.tensor(x.copy(), requires_grad=True), torch.tensor(x, requires_grad=True)
    (y, i), (ty, ti) = ours(m), theirs(t)
    cot = RNG.integers(1, 1001, y.shape).astype(x.dtype)
    y.backward(cot)
    ty.backward(torch.from_numpy(cot))
    return (y.data, i.data, m.grad), (ty.detach().numpy(), ti.numpy(), t.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape, k, s, p, d, ceil", GEOMETRIES)
def test_max_pool_indices_and_gradients_are_pytorchs_with_ties_nan_and_minus_inf(
        shape, k, s, p, d, ceil, dtype):
    """Small integers make ties everywhere; a NaN and a plane of -inf test the other rules."""
    torch = pytest.importorskip("torch")
    x = RNG.integers(0, 3, shape).astype(dtype)
    x[0, 0, 1, 2] = np.nan
    x[-1, -1] = -np.inf
    mine, theirs = _torch_pair(
        x, lambda a: F.max_pool2d(a, k, s, p, d, ceil, True),
        lambda a: torch.nn.functional.max_pool2d(a, k, s, p, d, ceil, True))
    for a, b in zip(mine, theirs, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    row = x[:, :, 0]  # the 1-D pool over one row of the same data
    k1, s1, p1, d1 = (v[1] if isinstance(v, tuple) else v for v in (k, s, p, d))
    mine, theirs = _torch_pair(
        row, lambda a: F.max_pool1d(a, k1, s1, p1, d1, ceil, True),
        lambda a: torch.nn.functional.max_pool1d(a, k1, s1, p1, d1, ceil, True))
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_indices_unpool_to_the_maxima_in_place():
    """max_unpool2d(max_pool2d(x)) keeps each window's maximum where it was, zeros
    elsewhere; its gradient reads g back at those places."""
    x = RNG.standard_normal((2, 3, 6, 7))
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    t = mg.tensor(y.data, requires_grad=True)
    back = F.max_unpool2d(t, idx, 2, output_size=(6, 7))
    kept = back.data != 0
    np.testing.assert_array_equal(back.data[kept], x[kept])
    assert kept.sum() == y.size
    g = RNG.standard_normal(back.shape)
    back.backward(g)
    np.testing.assert_array_equal(t.grad, np.take_along_axis(
        g.reshape(2, 3, -1), idx.data.reshape(2, 3, -1), axis=2).reshape(y.shape))


def test_avg_pool_ceil_mode_counts_the_padding_but_not_past_it():
    """7 with kernel 3, stride 2, padding 1, ceil: windows start at -1, 1, 3, 5; the last
    covers 5, 6 and the right padding 7 (counted) and nothing past it; and with
    count_include_pad=False only 5 and 6."""
    x = np.arange(1.0, 8.0).reshape(1, 1, 7)
    got = F.avg_pool1d(x, 3, 2, 1, ceil_mode=True).data[0, 0]
    np.testing.assert_allclose(got, [3 / 3, 9 / 3, 15 / 3, 13 / 3])
    real = F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False).data[0, 0]
    np.testing.assert_allclose(real, [3 / 2, 9 / 3, 15 / 3, 13 / 2])
    stub = F.avg_pool1d(x, 2, 2, ceil_mode=True).data[0, 0]  # the last window holds 7 alone
    np.testing.assert_allclose(stub, [1.5, 3.5, 5.5, 7.0])


def test_divisor_override_replaces_the_count():
    x = RNG.standard_normal((1, 2, 4, 4))
    np.testing.assert_allclose(F.avg_pool2d(x, 2, divisor_override=3).data,
                               F.avg_pool2d(x, 2).data * 4 / 3, rtol=1e-15)


@pytest.mark.parametrize("call, error, words", [
    (lambda: F.max_pool2d(X, 2, dilation=0), ValueError, ["dilation", "got 0"]),
    (lambda: F.max_pool2d(X, 3, dilation=3), ValueError, ["kernel", "dilation"]),
    (lambda: F.max_pool2d(X, 2, ceil_mode=1), TypeError, ["ceil_mode", "True or False"]),
    (lambda: F.max_pool2d(X, 2, return_indices="yes"), TypeError, ["return_indices"]),
    (lambda: F.avg_pool2d(X, 2, divisor_override=0), ValueError, ["divisor_override", "0"]),
    (lambda: F.avg_pool2d(X, 2, divisor_override=2.0), TypeError, ["divisor_override"]),
    (lambda: F.max_pool1d(X, 2), ValueError, ["max_pool1d", "x", "(B, C, L)"]),
    (lambda: F.avg_pool1d(X[0, 0], 3, padding=2), ValueError, ["avg_pool1d", "padding"]),
    (lambda: F.max_pool1d(X[0], (2, 2)), ValueError, ["max_pool1d", "kernel_size"]),
    (lambda: F.max_unpool2d(X, np.zeros((1, 2, 5, 5), int), 2, output_size=(5, 5)),
     ValueError, ["output_size", "(10, 10)"]),
    (lambda: F.max_unpool2d(X, np.zeros((1, 2, 5, 5)), 2), TypeError, ["indices", "float64"]),
    (lambda: F.max_unpool2d(X, np.zeros((1, 2, 5), int), 2), TypeError, ["indices", "shape"]),
    (lambda: F.max_unpool2d(X, np.full((1, 2, 5, 5), 100), 2), ValueError,
     ["indices", "[0, 100)"]),
    (lambda: F.max_unpool2d(X, np.zeros((1, 2, 5, 5), int), 2, padding=5), ValueError,
     ["padding", ">= 1"]),
    (lambda: F.max_unpool2d(X, np.zeros((1, 2, 5, 5), int), 2, output_size="10"), ValueError,
     ["output_size"]),
])
def test_bad_arguments_name_the_op_and_the_argument(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert all(w in str(info.value) for w in words), str(info.value)


def test_unpool_output_is_bounded_before_allocation():
    with pytest.raises(ValueError, match="MAX_OUTPUT_ELEMENTS"):
        F.max_unpool2d(X, np.zeros((1, 2, 5, 5), int), 2, stride=10**6)
