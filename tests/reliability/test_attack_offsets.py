"""Attack review: an offset past the array is an empty diagonal (or a full / empty triangle),
as NumPy gives for any offset it can hold; 10**30 leaked NumPy's OverflowError "Python int
too large to convert to C long" instead."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.functional as F

A = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("k", [10**30, -10**30, 2**63, -(2**63) - 1, 4, -3, 5, -4])
def test_a_huge_offset_acts_as_one_just_past_the_array(k):
    near = 5 if k > 0 else -4  # any offset past the 3 x 4 array behaves the same
    np.testing.assert_array_equal(F.diagonal(A, k).data, np.diagonal(A, near))
    np.testing.assert_array_equal(F.trace(A, k).data, np.trace(A, near))
    np.testing.assert_array_equal(F.tril(A, k).data, np.tril(A, near))
    np.testing.assert_array_equal(F.triu(A, k).data, np.triu(A, near))
    t = mg.Tensor(A.copy(), requires_grad=True)
    F.sum(F.tril(t, k)).backward()
    np.testing.assert_array_equal(t.grad, np.tril(np.ones_like(A), near))
