"""The block pool on a busy machine: a worker that starts late (or never, while its core is
taken) must not hold up the caller, and whoever runs which part, the bits stay the same."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.runtime import parallel


@pytest.fixture
def taken_pool(monkeypatch):
    """The pool's only thread is held by another task, as a worker is when the scheduler
    gives its core to another process: whatever is submitted stays pending until released."""
    pool = ThreadPoolExecutor(max_workers=1)
    release = threading.Event()
    pool.submit(release.wait)
    monkeypatch.setattr(parallel, "_get_pool", lambda: pool)
    yield release
    release.set()
    pool.shutdown(wait=True)


def _in_thread(fn, timeout=30.0):
    """fn() in a thread; True if it finished within ``timeout`` (else it is left waiting)."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # reported by the caller's assertions
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    return not t.is_alive(), out


@pytest.mark.parametrize("parts", [2, 3, 12])
def test_the_caller_runs_the_parts_a_worker_never_started(threads, taken_pool, parts):
    threads(2)
    bounds = parallel._even_parts(parts * 10, parts)
    ran = []

    def kernel(lo, hi):
        ran.append((lo, hi, threading.current_thread().name))

    finished, out = _in_thread(lambda: parallel._fan_out(kernel, bounds))
    assert finished, "the caller waited for a worker that never started"
    assert "error" not in out, out
    assert sorted((lo, hi) for lo, hi, _ in ran) == bounds  # every part, once
    assert len({name for _, _, name in ran}) == 1  # all of them on the caller's thread


def test_every_part_runs_once_whichever_thread_takes_it(threads):
    threads(2)
    bounds = parallel._even_parts(40, 4)
    seen = np.zeros(40, dtype=np.int64)
    lock = threading.Lock()

    def kernel(lo, hi):
        with lock:
            seen[lo:hi] += 1

    for _ in range(200):  # whichever thread gets which part, each runs once
        parallel._fan_out(kernel, bounds)
    np.testing.assert_array_equal(seen, np.full(40, 200))


def test_an_error_in_a_part_stops_the_others_and_reaches_the_caller(threads):
    threads(2)
    bounds = parallel._even_parts(64, 16)
    ran = []

    def kernel(lo, hi):
        ran.append(lo)
        if lo == bounds[1][0]:
            raise ZeroDivisionError("part 1")

    with pytest.raises(ZeroDivisionError, match="part 1"):
        parallel._fan_out(kernel, bounds)
    assert len(ran) < len(bounds)  # no part is taken after the error is seen


def _linear_and_softmax(x0, w0, cot):
    x, w = mg.Tensor(x0.copy(), requires_grad=True), mg.Tensor(w0.copy(), requires_grad=True)
    y = F.softmax(F.linear(x, w), axis=-1)
    y.backward(cot)
    return [y.data, x.grad, w.grad]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_same_bits_when_the_caller_runs_every_part(threads, taken_pool, monkeypatch,
                                                       dtype):
    monkeypatch.setattr(parallel, "PARALLEL_ELEMENTS", 1 << 17)
    rng = np.random.default_rng(7)
    x0 = rng.standard_normal((9, 131, 300)).astype(dtype)
    w0 = rng.standard_normal((300, 389)).astype(dtype)
    cot = rng.standard_normal((9, 131, 389)).astype(dtype)
    assert 2 * x0.size * 389 > parallel.PARALLEL_FLOPS and cot.size > parallel.PARALLEL_ELEMENTS
    threads(2)
    finished, late = _in_thread(lambda: _linear_and_softmax(x0, w0, cot))
    assert finished and "error" not in late, late
    taken_pool.set()  # the pool is free again: its thread takes the parts it gets to
    shared = _linear_and_softmax(x0, w0, cot)
    threads(1)
    alone = _linear_and_softmax(x0, w0, cot)
    for a, b, c in zip(late["value"], shared, alone, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, c)
