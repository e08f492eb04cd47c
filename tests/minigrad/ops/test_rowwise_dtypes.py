"""minigrad.runtime.rowwise.row_sum / column_sum on bool, integer and float16 arrays.

A product with a vector of ones is a sum of floats, but not of bools (a logical OR) or
small integers (it wraps at int8's width): those must give NumPy's own sum
(``np.add.reduce``: counts for bool, int64/uint64 for small integers), value and dtype.
float16 keeps the product, which NumPy accumulates in float32 (more accurate than
float16's pairwise sum): checked against the exact sum."""
import numpy as np
import pytest

from minigrad.runtime import rowwise

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64]


def _data(shape, dtype, seed):
    a = np.random.default_rng(seed).standard_normal(shape) * 60
    return (a > 0) if dtype is np.bool_ else a.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(300, 5), (3000, 3), (7, 40)])
def test_column_sum_is_numpys_sum_for_other_dtypes(dtype, shape):
    a = _data(shape, dtype, 0)
    want = np.add.reduce(a, axis=0)
    got = rowwise.column_sum(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 300), (3, 9000), (40, 7)])
def test_row_sum_is_numpys_sum_for_other_dtypes(dtype, shape):
    a = _data(shape, dtype, 1)
    want = np.add.reduce(a, axis=1, keepdims=True)
    got = rowwise.row_sum(a)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(3000, 5), (40, 7)])
def test_float16_sums_are_the_exact_sum_rounded_once(shape):
    """column_sum of narrow rows (a product) and row_sum of either matrix: the float32
    accumulation (error <= n·eps32·Σ|a|) rounded once to float16 (half an ulp)."""
    a = _data(shape, np.float16, 2)
    for got, axis in ((rowwise.column_sum(a), 0), (rowwise.row_sum(a.T.copy())[:, 0], 0)):
        wide = a.astype(np.float64)
        exact = wide.sum(axis=axis)
        assert got.dtype == np.float16
        tol = (np.abs(exact) * np.finfo(np.float16).eps / 2
               + a.shape[axis] * np.finfo(np.float32).eps * np.abs(wide).sum(axis=axis))
        assert np.all(np.abs(got.astype(np.float64) - exact) <= tol)
