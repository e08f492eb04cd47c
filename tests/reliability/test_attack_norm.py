"""Attack review: norm where Σ|x|^p leaves the dtype's range but the norm does not.

np.linalg.norm squares first: ‖(1e30, 1e30)‖ in float32 came out inf (the squares overflow)
and ‖(1e-30, 1e-30)‖ came out 0 (they underflow), with gradients NaN and 0 to match, though
both norms (1.414e30, 1.414e-30) are ordinary float32 numbers (torch overflows the same way);
for p = 1.5 at 1e200 the rounded exponent 1/p cost 2.6e-14 relative.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F


@pytest.mark.parametrize("dtype, v", [(np.float32, 1e30), (np.float32, 1e-30),
                                      (np.float64, 1e200), (np.float64, 1e-200),
                                      (np.float64, 1e-310)])
@pytest.mark.parametrize("ord", [None, 2, 3, 1.5])
def test_norm_of_values_whose_powers_leave_the_range(dtype, v, ord):
    x = np.array([[v, -v, 0.0], [v, 0.0, 0.0]], dtype)
    p = 2 if ord is None else ord
    t = mg.Tensor(x.copy(), requires_grad=True)
    out = F.norm(t, ord=ord, axis=1)
    out.backward(np.ones(2, dtype))
    # by hand: row 0 has two entries of |v|, row 1 one: ‖·‖ = |v| 2^(1/p) and |v|
    want = np.array([v * 2 ** (1 / p), v])
    eps = np.finfo(dtype).eps
    tiny = np.finfo(dtype).smallest_subnormal
    np.testing.assert_allclose(out.data, want.astype(dtype), rtol=8 * eps, atol=4 * tiny)
    # ∂‖x‖/∂x_i = sign(x_i) (|x_i| / ‖x‖)^(p-1): ±2^(-(p-1)/p) in row 0, 1 in row 1
    c = 2 ** (-(p - 1) / p)
    grad = np.array([[c, -c, 0.0], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(t.grad, grad, rtol=64 * eps if v > 1e-300 else 1e-3)


def test_norm_keeps_its_bits_for_ordinary_values():
    x = np.random.default_rng(5).standard_normal((4, 7))
    np.testing.assert_array_equal(F.norm(x, axis=1).data, np.linalg.norm(x, axis=1))
    np.testing.assert_array_equal(F.norm(x, ord=1, axis=0).data,
                                  np.linalg.norm(x, ord=1, axis=0))
    # other orders are scaled to ~1 first: as np.linalg.norm to a few ulps there
    np.testing.assert_allclose(F.norm(x, ord=3, axis=0).data, np.linalg.norm(x, ord=3, axis=0),
                               rtol=8 * np.finfo(np.float64).eps)
