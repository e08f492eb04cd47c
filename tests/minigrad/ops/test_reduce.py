"""prod and cumprod with 0, 1 and 2 zeros: exact gradients, derived by hand
(docs/backward.md §21), and no division by zero on the way (errors raised, not warned)."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F


def _grad(fn, x, g, dtype=np.float64):
    t = mg.Tensor(np.asarray(x, dtype), requires_grad=True)
    with np.errstate(all="raise"):  # a division by zero (or 0/0) would raise here
        out = fn(t)
        out.backward(np.asarray(g, dtype))
    return out, t.grad


# ā_k = ḡ Π_{j != k} x_j
PROD = [
    ([2.0, 3.0, 4.0], [12.0, 8.0, 6.0]),  # no zero: the product of the others
    ([2.0, 0.0, 4.0], [0.0, 8.0, 0.0]),  # one zero: the others' product at it, 0 elsewhere
    ([0.0, 3.0, 0.0], [0.0, 0.0, 0.0]),  # two zeros: every product of others holds one
    ([0.0], [1.0]),  # one element: the empty product
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("x, expected", PROD, ids=["no-zero", "one-zero", "two-zeros", "single"])
def test_prod_gradient_with_zeros(x, expected, dtype):
    out, g = _grad(F.prod, x, 1.5, dtype)
    assert out.dtype == dtype and g.dtype == dtype
    np.testing.assert_array_equal(g, 1.5 * np.array(expected, dtype))


def test_prod_gradient_with_zeros_along_an_axis():
    x = [[2.0, 0.0, 4.0], [1.0, 2.0, 3.0], [0.0, 5.0, 0.0]]
    _, g = _grad(lambda t: F.prod(t, axis=1), x, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(g, [[0, 8, 0], [12, 6, 4], [0, 0, 0]])
    _, g = _grad(lambda t: F.prod(t, axis=0, keepdims=True), np.transpose(x), [[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(g, np.transpose([[0, 8, 0], [12, 6, 4], [0, 0, 0]]))
    _, g = _grad(F.prod, [[1.0, 2.0], [0.0, 3.0]], 1.0)  # all axes, one zero
    np.testing.assert_array_equal(g, [[0, 0], [6, 0]])


# ā_k = Σ_{i >= k} ḡ_i Π_{j <= i, j != k} x_j
CUMPROD = [
    ([2.0, 3.0, 4.0], [1.0, 1.0, 1.0], [1 + 3 + 12, 2 + 8, 6]),
    ([2.0, 0.0, 4.0], [1.0, 1.0, 1.0], [1, 2 + 8, 0]),
    ([2.0, 0.0, 4.0, 5.0], [1.0, 2.0, 3.0, 4.0], [1, 2 * 2 + 3 * 8 + 4 * 40, 0, 0]),
    ([0.0, 2.0, 3.0], [1.0, 1.0, 1.0], [1 + 2 + 6, 0, 0]),  # the zero first
    ([0.0, 3.0, 0.0, 5.0], [1.0, 1.0, 1.0, 1.0], [1 + 3, 0, 0, 0]),  # two zeros
    ([1.0, 2.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [1 + 2, 1, 2, 0]),  # two at the end
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("x, g, expected", CUMPROD,
                         ids=["no-zero", "one-zero", "one-zero-weighted", "zero-first",
                              "two-zeros", "two-zeros-last"])
def test_cumprod_gradient_with_zeros(x, g, expected, dtype):
    out, grad = _grad(lambda t: F.cumprod(t, axis=0), x, g, dtype)
    np.testing.assert_array_equal(out.data, np.cumprod(np.asarray(x, dtype)))
    assert grad.dtype == dtype
    np.testing.assert_array_equal(grad, np.array(expected, dtype))


def test_cumprod_lanes_with_different_zeros_along_axis_1_and_flattened():
    rows = [r for r, _, _ in CUMPROD[:2]]  # two lanes of length 3, one with a zero
    gs = [g for _, g, _ in CUMPROD[:2]]
    _, grad = _grad(lambda t: F.cumprod(t, axis=1), rows, gs)
    np.testing.assert_array_equal(grad, [e for _, _, e in CUMPROD[:2]])
    _, grad = _grad(lambda t: F.cumprod(t, axis=0), np.transpose(rows), np.transpose(gs))
    np.testing.assert_array_equal(grad, np.transpose([e for _, _, e in CUMPROD[:2]]))
    # axis=None scans the flattened array: one lane [2, 0, 4, 5], shaped (2, 2)
    x, g, expected = CUMPROD[2]
    _, grad = _grad(F.cumprod, np.reshape(x, (2, 2)), g)
    np.testing.assert_array_equal(grad, np.reshape(expected, (2, 2)))


def test_prod_of_integers_is_not_differentiable_and_keeps_numpys_dtype():
    out = F.prod(np.array([[1, 2], [3, 4]]), axis=0)
    assert out.dtype == np.prod(np.array([[1, 2], [3, 4]]), axis=0).dtype
    assert not out.requires_grad
