"""cumsum and logcumsumexp beyond the case table: logcumsumexp at magnitudes where
exp overflows (values and gradients derived by hand, docs/backward.md §22), float32 kept,
and the axis forms."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F


def _run(fn, x, g, dtype=np.float64):
    t = mg.Tensor(np.asarray(x, dtype), requires_grad=True)
    with np.errstate(over="raise", invalid="raise"):  # no overflow and no inf - inf inside
        out = fn(t)
        out.backward(np.asarray(g, dtype))
    return out, t.grad


@pytest.mark.parametrize("dtype, big", [(np.float64, 1000.0), (np.float64, -1000.0),
                                        (np.float32, 100.0), (np.float32, -100.0)])
def test_logcumsumexp_of_large_equal_values(dtype, big):
    """x = (c, c, c): out_i = c + ln(i + 1); with ḡ = 1, ā_k = Σ_{i >= k} e^{c - out_i}
    = Σ_{i >= k} 1/(i + 1). e^1000 (e^100 in float32) would overflow."""
    out, grad = _run(lambda t: F.logcumsumexp(t, axis=0), [big] * 3, [1.0, 1.0, 1.0], dtype)
    eps = np.finfo(dtype).eps
    assert out.dtype == dtype and grad.dtype == dtype
    np.testing.assert_allclose(out.data, big + np.log([1.0, 2.0, 3.0]), rtol=4 * eps)
    # out_i is rounded to a few ulps of |c|, so e^{c - out_i} is off by a few |c| eps
    # relative: any method that uses the rounded out has this error (§22)
    tol = 8 * eps * abs(big)
    np.testing.assert_allclose(grad, [1 + 1 / 2 + 1 / 3, 1 / 2 + 1 / 3, 1 / 3], rtol=tol)
    # a cotangent of both signs: ā = (1 - 2/2 + 3/3, -2/2 + 3/3, 3/3) = (1, 0, 1)
    _, grad = _run(lambda t: F.logcumsumexp(t, axis=0), [big] * 3, [1.0, -2.0, 3.0], dtype)
    np.testing.assert_allclose(grad, [1.0, 0.0, 1.0], rtol=tol, atol=tol)


def test_logcumsumexp_with_a_dominant_value():
    """x = (0, 1000): out = (0, 1000 + ln(1 + e^-1000)) = (0, 1000); ā = (ḡ_0 + ḡ_1 e^-1000,
    ḡ_1) = (ḡ_0, ḡ_1) in float64."""
    out, grad = _run(lambda t: F.logcumsumexp(t, axis=-1), [0.0, 1000.0], [2.0, 3.0])
    np.testing.assert_array_equal(out.data, [0.0, 1000.0])
    np.testing.assert_allclose(grad, [2.0, 3.0], rtol=8 * np.finfo(float).eps * 1000)


def test_logcumsumexp_axis_none_scans_the_flattened_array():
    x = np.array([[0.5, -1.0], [2.0, 0.0]])
    out, _ = _run(F.logcumsumexp, x, np.ones(4))
    flat = x.reshape(-1)
    expected = [np.log(np.sum(np.exp(flat[:i + 1]))) for i in range(4)]
    np.testing.assert_allclose(out.data, expected, rtol=1e-15)


def test_logcumsumexp_of_integers_is_float64_like_np_logaddexp():
    out = F.logcumsumexp(np.array([0, 1, 2]))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.data, np.log(np.cumsum(np.exp([0.0, 1.0, 2.0]))),
                               rtol=1e-15)


def test_cumsum_gradient_is_the_reversed_cumsum():
    _, grad = _run(lambda t: F.cumsum(t, axis=1), np.ones((2, 3)), [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(grad, [[6, 5, 3], [15, 11, 6]])
    _, grad = _run(F.cumsum, np.ones((2, 2)), [1, 2, 3, 4])  # flattened: (10, 9, 7, 4)
    np.testing.assert_array_equal(grad, [[10, 9], [7, 4]])


def test_cumsum_keeps_float32_and_integer_dtypes_as_numpy():
    out, grad = _run(lambda t: F.cumsum(t, axis=0), [1.0, 2.0], [1.0, 1.0], np.float32)
    assert out.dtype == np.float32 and grad.dtype == np.float32
    ints = F.cumsum(np.array([1, 2, 3], np.int32))
    assert ints.dtype == np.cumsum(np.array([1, 2, 3], np.int32)).dtype
    assert not ints.requires_grad
