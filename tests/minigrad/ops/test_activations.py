"""The activations of ops/activations.py where finite differences cannot look: exactly at
the kinks (the gradient there is a convention: torch's, derived by hand below), at torch's
softplus threshold, at large inputs in float32, and in the far tail of the exact gelu;
softmax, log_softmax and gelu_tanh against the same functions composed from primitive ops
(values and gradients for a random cotangent, float64, to ~1e-12), and softmax and
log_softmax against SciPy, finite and right for logits of magnitude 1e4.
Against PyTorch for every argument: op_cases/activations.py (ops/test_all_ops_torch.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp
from helpers import (
    assert_same_function,
    c_gelu_tanh,
    c_log_softmax,
    c_softmax,
    grad_of,
    value_and_grads,
)

from minigrad import F

F32, F64 = np.float32, np.float64
RNG = np.random.default_rng(7)


# ---- kinks: the gradient exactly there ------------------------------------------------------

def test_activation_kinks_follow_torch():
    x = np.array([-1.0, 0.0, 1.0])
    assert grad_of(lambda t: F.leaky_relu(t, 0.2), x)[1].tolist() == [0.2, 0.2, 1.0]
    assert grad_of(lambda t: F.elu(t, 0.5), x)[1].tolist() == [0.5 * math.exp(-1), 0.5, 1.0]
    lam, alpha = 1.0507009873554805, 1.6732632423543772
    np.testing.assert_allclose(grad_of(F.selu, x)[1], [lam * alpha / math.e, lam * alpha, lam],
                               rtol=4 * np.finfo(F64).eps)
    # hardtanh: 0 AT its bounds (torch), where clip passes the gradient
    b = np.array([-1.0, -0.999, 0.999, 1.0, 1.5])
    assert grad_of(F.hardtanh, b)[1].tolist() == [0, 1, 1, 0, 0]
    assert grad_of(lambda t: F.hardtanh(t, 0.0, 0.0), [0.0, 1.0])[1].tolist() == [0, 0]


def test_softplus_switches_to_x_strictly_above_the_threshold():
    # beta x = threshold exactly: still log(1 + e^(beta x)) / beta, slope sigma(threshold)
    y, g = grad_of(lambda t: F.softplus(t, beta=2.0, threshold=3.0), [1.5, np.nextafter(1.5, 2)])
    assert y[0] == math.log1p(math.exp(3.0)) / 2 and y[1] == np.nextafter(1.5, 2)
    assert g[0] == 1 / (1 + math.exp(-3.0)) and g[1] == 1.0


# ---- large inputs, float32 ------------------------------------------------------------------

def test_softplus_and_log_sigmoid_at_large_inputs_in_float32():
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        y, g = grad_of(F.softplus, [30.0, -30.0, 0.0], F32)
        assert y.dtype == F32 and g.dtype == F32
        assert y[0] == 30.0 and g[0] == 1.0  # linear above the threshold
        np.testing.assert_allclose(y[1:], [math.exp(-30.0), math.log(2.0)], rtol=2 * 2 ** -23)
        np.testing.assert_allclose(g[1], math.exp(-30.0), rtol=4 * 2 ** -23)
        y, g = grad_of(F.log_sigmoid, [-100.0, 100.0], F32)
        assert y[0] == -100.0 and g[0] == 1.0
        assert -1e-40 < y[1] <= 0 and 0 <= g[1] < 1e-40  # -e^-100 and e^-100: below float32's tiny
        y, g = grad_of(F.silu, [-100.0, 100.0], F32)
        assert np.all(np.isfinite(y)) and g.tolist() == [0.0, 1.0]


def test_gelu_exact_in_the_far_tail_is_not_zero():
    """x Φ(x) for x = -10 is -7.6e-23; 1 + erf(x/√2) would round to 0 there."""
    y, g = grad_of(F.gelu, [-10.0])
    expected = -10 * 0.5 * math.erfc(10 / math.sqrt(2))
    np.testing.assert_allclose(y, [expected], rtol=1e-13)
    assert g[0] != 0 and np.isfinite(g[0])


# ---- softmax, log_softmax and gelu_tanh against their compositions --------------------------
@pytest.mark.parametrize("shape,axis", [((2, 3, 4), -1), ((2, 3, 4), 0), ((2, 3, 4), 1), ((5,), 0)])
def test_softmax_family_equals_composition(shape, axis):
    x = RNG.standard_normal(shape) * 3
    assert_same_function(lambda t: F.softmax(t, axis=axis), lambda t: c_softmax(t, axis), [x])
    assert_same_function(lambda t: F.log_softmax(t, axis=axis), lambda t: c_log_softmax(t, axis),
                         [x])


def test_gelu_tanh_equals_composition():
    x = np.concatenate([RNG.standard_normal(20) * 3, [0.0, -8.0, 8.0, 1e-3]])
    assert_same_function(F.gelu_tanh, c_gelu_tanh, [x.reshape(4, 6)])


# ---- softmax and log_softmax against SciPy, large logits ------------------------------------
def _softmax_vjp(y, g, axis):
    return y * (g - np.sum(g * y, axis=axis, keepdims=True))


@pytest.mark.parametrize("scale", [1.0, 1e4, -1e4])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_family_matches_scipy(scale, axis):
    x = RNG.standard_normal((3, 4, 5)) * scale
    x[0, 0] = scale  # a row of equal (huge) values
    y = sp.softmax(x, axis=axis)
    v, (g,), cot = value_and_grads(lambda t: F.softmax(t, axis=axis), [x])
    np.testing.assert_allclose(v, y, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(g, _softmax_vjp(y, cot, axis), rtol=1e-9, atol=1e-12)
    v, (g,), cot = value_and_grads(lambda t: F.log_softmax(t, axis=axis), [x])
    np.testing.assert_allclose(v, sp.log_softmax(x, axis=axis), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, cot - y * cot.sum(axis=axis, keepdims=True), rtol=1e-9,
                               atol=1e-12)
    for t in (v, g):
        assert np.all(np.isfinite(t))
