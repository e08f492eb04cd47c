"""rowwise.column_sum of a matrix with no columns: the sum of every row is the empty vector,
however many rows there are (NumPy's ``sum(axis=0)``), also past the rows of one GEMV, where
column_sum splits the row axis into parts."""
import numpy as np
import pytest

from minigrad.runtime import rowwise


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("rows", [1, rowwise.GEMV_ELEMENTS, rowwise.GEMV_ELEMENTS + 1,
                                  3 * rowwise.GEMV_ELEMENTS + 5])
def test_no_columns_gives_an_empty_sum(rows, dtype):
    a = np.zeros((rows, 0), dtype=dtype)
    got = rowwise.column_sum(a)
    expected = a.sum(axis=0)
    assert got.shape == expected.shape == (0,)
    assert got.dtype == expected.dtype
