"""Blocked, multi-threaded row kernels: same answer as one pass, every row exactly once."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers import blas_counts

import minigrad as mg
from minigrad import F
from minigrad.runtime import blas, parallel


@pytest.mark.parametrize("rows, cols", [(1, 1), (7, 3), (1000, 257), (3001, 64), (5, 70000)])
@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_every_row_is_visited_exactly_once(threads, rows, cols, n_threads):
    threads(n_threads)
    seen = np.zeros(rows, dtype=np.int64)
    lock = threading.Lock()

    def kernel(lo, hi):
        assert 0 <= lo < hi <= rows
        with lock:
            seen[lo:hi] += 1

    parallel.for_each_block(kernel, rows, cols)
    np.testing.assert_array_equal(seen, np.ones(rows, dtype=np.int64))


def test_large_arrays_really_use_several_threads(threads):
    threads(2)
    # The threads take blocks from a shared counter (test_parallel_scheduling.py), so one of
    # them could run every block before the other wakes (the caller on a loaded machine, a
    # fast worker on an idle one): each thread's first block waits, up to 10 s, until the
    # other thread has taken one too. A sleep per block instead made this depend on the load.
    names = set()
    both = threading.Barrier(2, timeout=10.0)

    def kernel(lo, hi):
        me = threading.current_thread().name
        if me not in names:
            names.add(me)
            try:
                both.wait()
            except threading.BrokenBarrierError:  # one thread only: the assert says so
                pass

    parallel.for_each_block(kernel, rows=4 * parallel.PARALLEL_ELEMENTS // 64, cols=64)
    assert len(names) == 2


def test_an_error_in_a_worker_reaches_the_caller(threads):
    threads(2)
    rows = 4 * parallel.PARALLEL_ELEMENTS // 64

    def kernel(lo, hi):
        if hi == rows:
            raise ZeroDivisionError("last block")

    with pytest.raises(ZeroDivisionError, match="last block"):
        parallel.for_each_block(kernel, rows, 64)


@pytest.mark.parametrize("bad, error", [
    (0, ValueError), (-1, ValueError), (parallel.MAX_THREADS + 1, ValueError),
    # wrong types: TypeError since minigrad.checks (the one rule; ValueError before)
    (1.5, TypeError), (True, TypeError), ("2", TypeError)])
def test_set_num_threads_rejects_non_positive_integers(bad, error):
    with pytest.raises(error, match="set_num_threads"):
        parallel.set_num_threads(bad)


def _composed(name, x, w, b):
    if name == "softmax":
        e = (x - x.max(axis=-1, keepdims=True)).exp()
        return e / e.sum(axis=-1, keepdims=True)
    if name == "layer_norm":
        xc = x - x.mean(axis=-1, keepdims=True)
        return xc / ((xc * xc).mean(axis=-1, keepdims=True) + 1e-5).sqrt() * w + b
    if name == "self_attention":
        B, T, width = x.shape
        q, k, v = (x[:, :, i * width // 3:(i + 1) * width // 3].reshape(B, T, 2, -1)
                   .transpose(0, 2, 1, 3) for i in range(3))
        a = _composed("softmax", q @ k.swapaxes(-1, -2) * (1 / np.sqrt(q.shape[-1])), w, b)
        return (a @ v).transpose(0, 2, 1, 3).reshape(B, T, width // 3)
    c = np.sqrt(2 / np.pi)
    return 0.5 * x * (1 + (c * (x + 0.044715 * x ** 3)).tanh())


def _fused(name, x, w, b):
    if name == "softmax":
        return F.softmax(x, axis=-1)
    if name == "layer_norm":
        return F.layer_norm(x, w, b)
    if name == "self_attention":
        return F.self_attention(x, 2)
    return F.gelu_tanh(x)


FUSED = ["softmax", "layer_norm", "gelu_tanh", "self_attention"]


@pytest.mark.parametrize("name", FUSED)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_ops_on_large_arrays_match_one_thread_bit_for_bit(threads, monkeypatch, name,
                                                                 dtype):
    # Large enough for the threaded path (its threshold lowered to keep the test small);
    # rows not a multiple of the block or thread count.
    monkeypatch.setattr(parallel, "PARALLEL_ELEMENTS", 1 << 17)
    rng = np.random.default_rng(5)
    # self_attention: (B, T, 3D) with 2 heads; its blocks are examples of H·T² = 2·211² scores
    shape = (7, 211, 3 * 130) if name == "self_attention" else (5, 211, 389)
    assert np.prod(shape) > 2 * parallel.PARALLEL_ELEMENTS
    x0 = (3 * rng.standard_normal(shape)).astype(dtype)
    w0 = rng.standard_normal(shape[-1]).astype(dtype)
    b0 = rng.standard_normal(shape[-1]).astype(dtype)
    cot = rng.standard_normal(_fused(name, x0, w0, b0).shape).astype(dtype)
    results = []
    for n in (1, 2, 3):
        threads(n)
        x, w, b = (mg.Tensor(a.copy(), requires_grad=True) for a in (x0, w0, b0))
        y = _fused(name, x, w, b)
        y.backward(cot)
        results.append([y.data, x.grad] + ([w.grad, b.grad] if name == "layer_norm" else []))
    for other in results[1:]:
        for a, c in zip(results[0], other, strict=True):
            assert a.dtype == dtype
            np.testing.assert_array_equal(a, c)
    if dtype == np.float64:  # and they are the right answer
        x, w, b = (mg.Tensor(a.copy(), requires_grad=True) for a in (x0, w0, b0))
        y = _composed(name, x, w, b)
        y.backward(cot)
        expected = [y.data, x.grad] + ([w.grad, b.grad] if name == "layer_norm" else [])
        for got, want in zip(results[0], expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_a_forked_child_can_still_use_the_pool(threads):
    # A child inherits the pool object but not its threads; it must not wait forever.
    import os
    import signal
    threads(2)
    x = np.random.default_rng(0).standard_normal((1024, 256))
    F.softmax(x)  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if the threaded softmax finishes
        signal.alarm(20)
        try:
            y = F.softmax(x).data
            os._exit(0 if np.allclose(y.sum(axis=-1), 1.0) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@pytest.mark.parametrize("row", [0, -1])
def test_workers_follow_the_callers_floating_point_error_state(threads, row):
    threads(2)
    x = np.zeros((1024, 256), dtype=np.float32)
    x[row, 0] = 1e30  # x³ overflows in gelu, in whichever block holds this row
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        F.gelu_tanh(x)


def test_empty_rows_and_empty_batches():
    assert F.softmax(np.zeros((3, 0))).shape == (3, 0)
    assert F.layer_norm(np.zeros((0, 4))).shape == (0, 4)
    assert F.gelu_tanh(np.zeros((0,))).shape == (0,)


@pytest.mark.parametrize("name", FUSED)
def test_fused_ops_read_integer_input_as_float64(name):
    x = np.arange(12).reshape(1, 2, 6) % 5 if name == "self_attention" else \
        np.arange(12).reshape(3, 4)
    got = _fused(name, x, None, None)
    want = _fused(name, x.astype(np.float64), None, None)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.data, want.data)


@pytest.mark.parametrize("n", [1, 2, 7, 1000])
@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("flops", [0.0, 1e12])
def test_for_each_part_covers_every_index_once(threads, n, n_threads, flops):
    threads(n_threads)
    seen = np.zeros(n, dtype=np.int64)
    lock = threading.Lock()

    def kernel(lo, hi):
        with lock:
            seen[lo:hi] += 1

    parallel.for_each_part(kernel, n, flops)
    np.testing.assert_array_equal(seen, np.ones(n, dtype=np.int64))


def test_one_blas_thread_limits_inside_and_restores_after(threads):
    pytest.importorskip("threadpoolctl")
    before = blas_counts()
    with blas.one_blas_thread():
        assert all(n == 1 for n in blas_counts())
        with blas.one_blas_thread():  # re-entrant
            assert all(n == 1 for n in blas_counts())
        assert all(n == 1 for n in blas_counts())
    assert blas_counts() == before
    with pytest.raises(RuntimeError):  # restored on an exception too
        with blas.one_blas_thread():
            raise RuntimeError
    assert blas_counts() == before


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,n", [((9, 131, 96), 200), ((200, 1000), 300), ((9, 1500), 1500)])
def test_split_linear_products_match_one_thread_bit_for_bit(threads, dtype, x_shape, n):
    """Large ``linear`` products are cut along output rows/columns, never along a sum, at
    places that depend on the shape only: BLAS can give a row different last bits depending
    on which rows share its call (the long summed axes here showed it when the cut depended
    on the thread count)."""
    rng = np.random.default_rng(3)
    k = x_shape[-1]
    x0 = rng.standard_normal(x_shape).astype(dtype)
    w0 = rng.standard_normal((k, n)).astype(dtype)
    b0 = rng.standard_normal(n).astype(dtype)
    assert 2 * np.prod(x_shape) * n > parallel.PARALLEL_FLOPS
    cot = rng.standard_normal(x_shape[:-1] + (n,)).astype(dtype)
    results = []
    for t in (1, 2, 3, 4):
        threads(t)
        x, w, b = (mg.Tensor(a.copy(), requires_grad=True) for a in (x0, w0, b0))
        y = F.linear(x, w, b)
        y.backward(cot)
        results.append([y.data, x.grad, w.grad, b.grad])
    for other in results[1:]:
        for a, c in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, c)
    x64, w64, c64 = (a.astype(np.float64) for a in (x0, w0, cot))
    tol = dict(rtol=1e-3, atol=1e-2) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-10)
    np.testing.assert_allclose(results[0][0], x64 @ w64 + b0, **tol)
    np.testing.assert_allclose(results[0][1], c64 @ w64.T, **tol)
    np.testing.assert_allclose(results[0][2], x64.reshape(-1, k).T @ c64.reshape(-1, n), **tol)


def test_linear_does_not_depend_on_the_blas_thread_count():
    """OpenBLAS's own threading can change a product's last bits (here: a long summed axis);
    minigrad's products run on one BLAS thread each, so its results do not change with it."""
    from threadpoolctl import threadpool_limits
    rng = np.random.default_rng(11)
    x0 = rng.standard_normal((64, 3000)).astype(np.float32)
    w0 = rng.standard_normal((3000, 96)).astype(np.float32)
    cot = rng.standard_normal((64, 96)).astype(np.float32)
    raw, ours = [], []
    for n in (1, 2):
        with threadpool_limits(n, user_api="blas"):
            raw.append(x0 @ w0)
            x, w = mg.Tensor(x0, requires_grad=True), mg.Tensor(w0, requires_grad=True)
            y = F.linear(x, w)
            y.backward(cot)
            ours.append([y.data, x.grad, w.grad])
    for a, b in zip(*ours, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(ours[0][0], raw[0], rtol=1e-4, atol=1e-3)


def test_a_child_forked_inside_one_blas_thread_gets_its_blas_threads_back():
    """Another thread holds the BLAS limit when the process forks; no one in the child will
    leave that block, so the child must not stay on one BLAS thread for good."""
    import os
    before = blas_counts()
    if max(before, default=1) < 2:
        pytest.skip("BLAS runs on one thread here: nothing to restore")
    entered, release = threading.Event(), threading.Event()

    def hold():
        with blas.one_blas_thread():
            entered.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    entered.wait()
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if blas_counts() == before else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        holder.join()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert blas_counts() == before
