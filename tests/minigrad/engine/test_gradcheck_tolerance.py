"""What gradcheck's default tolerances can see (docs/backward.md, "What gradcheck can and
cannot see").

Central differences in float64 with the default eps have error about eps² |L'''| / 6
(truncation) plus about u |L| / eps (rounding; u = 2⁻⁵³ the unit roundoff, |L| the size of
the checked scalar): ~1e-10 for a well-scaled function. The defaults must pass every correct
VJP of the suite and catch a VJP that is off by a relative 1e-4 (they used not to: atol=1e-5,
rtol=1e-4 let a VJP scaled by 1.0001 through).
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import minigrad as mg

U = np.finfo(np.float64).eps / 2  # unit roundoff


def scaled_tanh(factor):
    @mg.op
    def tanh_off(x):
        y = np.tanh(x)
        return y, lambda g: factor * g * (1 - y * y)
    return tanh_off


X = np.random.default_rng(5).uniform(-1.5, 1.5, (4, 5))


@pytest.mark.parametrize("factor", [1 + 1e-4, 1 - 1e-4, 1 + 2e-5])
@pytest.mark.parametrize("fast", [False, True])
def test_defaults_catch_a_small_relative_error(factor, fast):
    report = mg.gradcheck(scaled_tanh(factor), [X.copy()], fast=fast, raise_exception=False)
    assert not report.ok


@pytest.mark.parametrize("fast", [False, True])
def test_defaults_pass_the_exact_vjp(fast):
    assert mg.gradcheck(scaled_tanh(1.0), [X.copy()], fast=fast).ok


def test_the_error_model_bounds_the_measured_error():
    """|numeric - analytic| <= eps² max|L'''| / 6 + a few u |L|-sized roundings / eps, per element,
    for L = <tanh(x), v>: the derivation the defaults rest on."""
    eps = inspect.signature(mg.gradcheck).parameters["eps"].default
    rng = np.random.default_rng(9)
    x, v = rng.uniform(-2, 2, 200), rng.standard_normal(200)
    analytic = v * (1 - np.tanh(x) ** 2)
    numeric = np.empty_like(x)
    for j in range(x.size):
        hi, lo = x.copy(), x.copy()
        hi[j] += eps
        lo[j] -= eps
        numeric[j] = (np.dot(np.tanh(hi), v) - np.dot(np.tanh(lo), v)) / (2 * eps)
    third = 2.0  # |d³ tanh / dx³| <= 2
    L_size = np.sum(np.abs(np.tanh(x) * v))
    bound = eps ** 2 * third * np.abs(v) / 6 + 4 * U * L_size / eps
    assert np.all(np.abs(numeric - analytic) <= bound)
    defaults = inspect.signature(mg.gradcheck).parameters
    atol, rtol = defaults["atol"].default, defaults["rtol"].default
    assert np.max(bound) < atol / 10  # the defaults leave a margin of 10 over this bound
    assert rtol <= 1e-5  # a relative error of 1e-4 on an O(1) gradient is caught
