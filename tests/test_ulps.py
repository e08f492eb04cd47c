"""The shared tolerance helper (tests/ulps.py) accepts rounding and rejects anything larger."""
from __future__ import annotations

import numpy as np
import pytest
from ulps import DEFAULT_ULPS, assert_close_ulps, ulp_tolerance


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_tolerance_is_ulps_of_the_dtype_times_the_largest_magnitude(dtype):
    desired = np.array([0.5, -4.0, 1e-3], dtype)
    eps = float(np.finfo(dtype).eps)
    assert ulp_tolerance(desired, 8) == 8 * eps * 4.0
    assert ulp_tolerance(desired, 8, scale=1.0) == 8 * eps
    assert ulp_tolerance(np.zeros(3, dtype), 8) == 8 * eps * float(np.finfo(dtype).tiny)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_passes_within_k_ulps_and_fails_beyond(dtype):
    desired = np.linspace(-2.0, 2.0, 9).astype(dtype)  # largest magnitude 2
    step = 2.0 * float(np.finfo(dtype).eps)  # one ulp at scale 2 (in the test's float64)
    near = (desired.astype(np.float64) + 3 * step).astype(dtype)
    assert_close_ulps(near, desired, ulps=4)
    with pytest.raises(AssertionError, match="ulps"):
        assert_close_ulps(near, desired, ulps=2)


def test_a_real_difference_fails_and_the_default_is_far_below_it():
    desired = np.array([1.0, 2.0, 3.0])
    with pytest.raises(AssertionError, match="max .actual - desired. = 1e-10"):
        assert_close_ulps(desired + np.array([0.0, 1e-10, 0.0]), desired)
    assert ulp_tolerance(desired) == DEFAULT_ULPS * np.finfo(np.float64).eps * 3.0 < 1e-12


def test_nan_and_inf_must_sit_in_the_same_places():
    desired = np.array([1.0, np.nan, np.inf])
    assert_close_ulps(desired.copy(), desired)
    for wrong in ([1.0, 2.0, np.inf], [1.0, np.nan, -np.inf], [np.nan, np.nan, np.inf]):
        with pytest.raises(AssertionError):
            assert_close_ulps(np.array(wrong), desired)


def test_shapes_and_dtypes_are_checked():
    with pytest.raises(AssertionError, match="shapes"):
        assert_close_ulps(np.zeros(3), np.zeros((3, 1)))
    with pytest.raises(TypeError, match="floating"):
        assert_close_ulps(np.arange(3), np.arange(3))
    # float32 results compared in float32 ulps, not float64's
    x = np.float32(1.0)
    assert_close_ulps(np.nextafter(x, np.float32(2)), x, ulps=1)
    with pytest.raises(AssertionError):
        assert_close_ulps(np.float64(np.nextafter(x, np.float32(2))), np.float64(x), ulps=1)
