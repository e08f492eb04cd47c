"""minigrad.data_parallel: a batch's forward and backward in shards on threads, gradients
summed in shard order; the same bits for any thread count, the math of the whole batch."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from ulps import assert_close_ulps

import minigrad as mg
from minigrad import F
from minigrad.runtime import parallel
from minigrad.shards import MAX_SHARDS, SHARD_STEPS, shards_for

# Large enough that, inside a shard of two, layer_norm's and gelu_tanh's blocks and the
# products' parts would go to the block pool (PARALLEL_ELEMENTS, PARALLEL_FLOPS): the test
# of the thread count then covers the kernels nested in a shard too.
B, T, D, H = 16, 128, 128, 512


def _model(dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    shapes = {"w1": (D, H), "b1": (H,), "w2": (H, D), "g": (D,), "head": (D, 10)}
    return {k: mg.Tensor((rng.standard_normal(s) / np.sqrt(s[0])).astype(dtype),
                         requires_grad=True) for k, s in shapes.items()}


def _loss(p, x, y):
    h = F.gelu_tanh(F.linear(mg.Tensor(x), p["w1"], p["b1"]))
    z = F.layer_norm(F.linear(h, p["w2"]), weight=p["g"])
    logits = F.linear(z.mean(axis=1), p["head"])
    return F.cross_entropy(logits, y), logits


def _batch(dtype=np.float32, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((B, T, D)).astype(dtype), rng.integers(0, 10, B)


def _step(p, x, y, shards):
    for t in p.values():
        t.grad = None
    loss, results = mg.data_parallel(lambda xb, yb: _loss(p, xb, yb), x, y, shards=shards)
    return loss, {k: t.grad for k, t in p.items()}, results


def test_one_shard_is_the_plain_backward_bit_for_bit():
    p, (x, y) = _model(), _batch()
    loss, grads, results = _step(p, x, y, 1)
    q = _model()
    plain, _ = _loss(q, x, y)
    plain.backward()
    assert loss == float(plain.data)
    for k in p:
        np.testing.assert_array_equal(grads[k], q[k].grad)
    assert len(results) == 1 and results[0][1].shape == (B, 10)


@pytest.mark.parametrize("shards", [2, 3, 4])
def test_shards_give_the_whole_batch_gradient(shards):
    p, (x, y) = _model(np.float64), _batch(np.float64)
    loss, grads, results = _step(p, x, y, shards)
    q = _model(np.float64)
    plain, logits = _loss(q, x, y)
    plain.backward()
    assert loss == pytest.approx(float(plain.data), rel=1e-13)
    for k in p:
        assert_close_ulps(grads[k], q[k].grad)
    assert_close_ulps(np.concatenate([r[1].data for r in results]), logits.data)


def test_the_same_bits_for_any_thread_count(threads):
    """The shards are the caller's; neither the threads that run them nor the BLAS thread
    count change a bit (the kernels inside each shard run their blocks in its thread)."""
    from threadpoolctl import threadpool_limits
    (x, y) = _batch()
    runs = []
    for n, blas in ((1, 1), (2, 2), (3, 1), (8, 2)):
        threads(n)
        with threadpool_limits(blas, user_api="blas"):
            runs.append(_step(_model(), x, y, 4))
    for loss, grads, results in runs[1:]:
        assert loss == runs[0][0]
        for k in grads:
            np.testing.assert_array_equal(grads[k], runs[0][1][k])
        for r, r0 in zip(results, runs[0][2], strict=True):
            np.testing.assert_array_equal(r[1].data, r0[1].data)


def test_shards_really_run_on_several_threads(threads):
    threads(2)
    names, both = set(), threading.Barrier(2, timeout=10.0)
    p, (x, y) = _model(), _batch()

    def fn(xb, yb):
        me = threading.current_thread().name
        if me not in names:
            names.add(me)
            try:  # each thread's first shard waits until the other thread has one too
                both.wait()
            except threading.BrokenBarrierError:  # one thread only: the assert says so
                pass
        return _loss(p, xb, yb)

    mg.data_parallel(fn, x, y, shards=2)
    assert len(names) == 2


def test_gradients_add_to_existing_grad_and_a_failing_shard_changes_none(threads):
    threads(2)
    p, (x, y) = _model(), _batch()
    _, first, _ = _step(p, x, y, 2)
    first = {k: g.copy() for k, g in first.items()}
    mg.data_parallel(lambda xb, yb: _loss(p, xb, yb), x, y, shards=2)
    for k, t in p.items():
        np.testing.assert_array_equal(t.grad, first[k] + first[k])
    before = {k: t.grad.copy() for k, t in p.items()}

    def fails_in_the_last_shard(xb, yb):
        if xb is not None and len(xb) and np.shares_memory(xb, x[-1]):
            raise ZeroDivisionError("last shard")
        return _loss(p, xb, yb)

    with pytest.raises(ZeroDivisionError, match="last shard"):
        mg.data_parallel(fails_in_the_last_shard, x, y, shards=4)
    for k, t in p.items():
        np.testing.assert_array_equal(t.grad, before[k])


def test_shards_take_the_callers_grad_mode(threads):
    threads(2)
    p, (x, y) = _model(), _batch()
    with mg.no_grad():
        loss, results = mg.data_parallel(lambda xb, yb: _loss(p, xb, yb), x, y, shards=2)
    assert all(t.grad is None for t in p.values())
    assert not any(r[0].requires_grad for r in results)
    assert np.isfinite(loss)


def test_shards_for_is_a_power_of_two_by_shape_only():
    (two, least2), (four, least4), (eight, least8) = SHARD_STEPS
    assert (two, four, eight) == (2, 4, MAX_SHARDS)
    assert shards_for(64, least2 - 1) == 1
    assert shards_for(64, least2) == 2
    assert shards_for(64, least4) == 4
    assert shards_for(64, least8 * 10) == 8
    assert shards_for(3, least8) == 2  # never more shards than examples
    assert shards_for(1, least8) == 1
    assert shards_for(0, least8) == 1


@pytest.mark.parametrize("kwargs, batch, error, match", [
    ({"shards": 0}, "xy", ValueError, "shards"),
    ({"shards": 17}, "xy", ValueError, "shards"),
    ({"shards": 2}, "x1", ValueError, "same length"),
    ({"shards": 2}, "", ValueError, "one or more"),
])
def test_bad_arguments_name_what_is_wrong(kwargs, batch, error, match):
    p, (x, y) = _model(), _batch()
    arrays = {"xy": (x, y), "x1": (x, y[:1]), "": ()}[batch]
    with pytest.raises(error, match=match):
        mg.data_parallel(lambda *a: _loss(p, *a), *arrays, **kwargs)
    assert all(t.grad is None for t in p.values())


def test_a_loss_that_is_not_a_scalar_tensor_is_refused():
    p, (x, y) = _model(), _batch()
    with pytest.raises(TypeError, match="0-d Tensor"):
        mg.data_parallel(lambda xb, yb: _loss(p, xb, yb)[1], x, y, shards=2)
    assert all(t.grad is None for t in p.values())
    assert parallel.get_num_threads() >= 1


@pytest.mark.parametrize("n_threads, nested", [(2, 1), (4, 2)])
def test_kernels_in_a_shard_use_only_the_threads_the_shards_leave(threads, n_threads, nested):
    """Two shards on 2 threads keep both cores busy: a kernel inside a shard runs its blocks
    in the shard's thread (a hand-off would only queue behind the other shard); on 4 threads
    each shard's kernels get 2."""
    threads(n_threads)
    seen: dict = {}
    lock = threading.Lock()
    rows = 8 * parallel.PARALLEL_ELEMENTS // 64

    def fn(xb):
        me = threading.current_thread().name
        barrier = threading.Barrier(nested, timeout=10.0) if nested > 1 else None

        def kernel(lo, hi):
            with lock:
                seen.setdefault(me, set()).add(threading.current_thread().name)
            if barrier is not None:
                try:  # each thread's block waits until another thread has one too
                    barrier.wait()
                except threading.BrokenBarrierError:
                    pass

        parallel.for_each_block(kernel, rows, 64)
        return mg.Tensor(np.float32(len(xb)))

    mg.data_parallel(fn, np.zeros((4, 1)), shards=2)
    assert sorted(len(names) for names in seen.values()) == [nested] * len(seen)
