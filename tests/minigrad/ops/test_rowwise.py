"""minigrad.runtime.rowwise: the row helpers and map_rows, the scaffold of the fused kernels;
column_sum of a matrix with no columns is the empty vector, however many rows there are
(NumPy's ``sum(axis=0)``), also past the rows of one GEMV, where column_sum splits the row
axis into parts."""
import numpy as np
import pytest

from minigrad.ops import activations, normalization
from minigrad.runtime import parallel, rowwise


@pytest.mark.parametrize("shape", [(), (5,), (0, 3), (3, 0), (2, 3, 4),
                                   (4 * parallel.PARALLEL_ELEMENTS // 96, 96)])
def test_map_rows_fills_every_row_with_the_kernel_of_its_block(shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    x2 = rowwise.as_rows(x)
    stat = np.empty((x2.shape[0], 1))

    def kernel(out, xs, st):  # out = 2x + 1; st = the row's count of positive entries
        np.multiply(xs, 2.0, out=out)
        out += 1.0
        st[:] = (xs > 0).sum(axis=1, keepdims=True)

    y = rowwise.map_rows(kernel, np.shape(x), np.float64, x2, stat)
    assert y.shape == np.shape(x) and y.base is None  # owned: a VJP may hand it over
    np.testing.assert_array_equal(y, 2.0 * x + 1.0)
    if y.size:  # an empty result runs no kernel at all (nothing to compute)
        np.testing.assert_array_equal(stat, (x2 > 0).sum(axis=1, keepdims=True))


def test_as_rows_makes_float_c_contiguous_matrices():
    a = np.arange(24).reshape(2, 3, 4)[:, ::-1]  # int, strided
    m = rowwise.as_rows(a)
    assert m.shape == (6, 4) and m.dtype == np.float64 and m.flags.c_contiguous
    np.testing.assert_array_equal(m, a.reshape(6, 4))
    assert rowwise.as_rows(np.float32(2.0)).shape == (1, 1)


@pytest.mark.parametrize("n", [1, 7, 32, 33, 300, 9000])
def test_row_sum_and_row_max_agree_with_numpy(n):
    a = np.random.default_rng(n).standard_normal((50, n)).astype(np.float32)
    tol = 8 * n * np.finfo(np.float32).eps * np.abs(a).sum(axis=1, keepdims=True)
    assert np.all(np.abs(rowwise.row_sum(a) - a.sum(axis=1, keepdims=True)) <= tol)
    np.testing.assert_array_equal(rowwise.row_max(a), a.max(axis=1, keepdims=True))


def test_no_module_reaches_for_the_row_helpers_privately():
    """The row helpers have one public home: no op module keeps private aliases of them, and
    attention imports rowwise's names."""
    import inspect

    from minigrad.ops import attention
    for module in (activations, normalization):
        assert not hasattr(module, "_row_max") and not hasattr(module, "_row_sum")
    assert not hasattr(activations, "_log_softmax")
    assert attention.row_max is rowwise.row_max and attention.row_sum is rowwise.row_sum
    assert "_row_" not in inspect.getsource(attention)


@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (320, 16), (320, 32), (5000, 10),
                                   (2176, 64), (300, 65), (4, 1000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_sum_agrees_with_an_exact_sum(shape, dtype):
    """Narrow rows take the GEMV path (chunked when the matrix is large), wide rows NumPy's
    reduction: both within the summation bound rows * eps * Σ|a| of the exact (float64 of
    exact products) column sums."""
    a = np.random.default_rng(shape[0] + shape[1]).standard_normal(shape).astype(dtype)
    got = rowwise.column_sum(a)
    assert got.shape == (shape[1],) and got.dtype == dtype
    exact = a.astype(np.float64).sum(axis=0)
    tol = (shape[0] + 1) * np.finfo(dtype).eps * np.abs(a).astype(np.float64).sum(axis=0)
    assert np.all(np.abs(got - exact) <= tol)


def test_column_sum_of_strided_views_and_input_untouched():
    a = np.random.default_rng(3).standard_normal((40, 5, 8))
    before = a.copy()
    view = a[:, 0]  # rows 5 * 8 numbers apart, as the CLS rows of (B, T, D) tokens
    np.testing.assert_allclose(rowwise.column_sum(view), view.sum(axis=0), rtol=1e-13,
                               atol=1e-13)
    np.testing.assert_array_equal(a, before)


def test_column_sum_does_not_depend_on_the_blas_thread_count():
    """docs/reliability.md G2: each GEMV holds at most GEMV_ELEMENTS numbers, below the size
    where OpenBLAS starts threads of its own."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    a = np.random.default_rng(4).standard_normal((20000, 16))  # 40 GEMVs
    results = []
    for threads in (1, 2):
        with threadpoolctl.threadpool_limits(threads):
            results.append(rowwise.column_sum(a))
    np.testing.assert_array_equal(*results)


# ---- column_sum of a matrix with no columns -------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("rows", [1, rowwise.GEMV_ELEMENTS, rowwise.GEMV_ELEMENTS + 1,
                                  3 * rowwise.GEMV_ELEMENTS + 5])
def test_no_columns_gives_an_empty_sum(rows, dtype):
    a = np.zeros((rows, 0), dtype=dtype)
    got = rowwise.column_sum(a)
    expected = a.sum(axis=0)
    assert got.shape == expected.shape == (0,)
    assert got.dtype == expected.dtype
