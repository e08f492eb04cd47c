"""Training in threads: results do not depend on which thread trains.

minigrad holds BLAS to one thread inside its kernels (``minigrad.runtime.blas.one_blas_thread``),
and that must hold in every thread, not only in the first one that asked: NumPy's OpenBLAS
(pthreads) has one thread count for the whole process, and threadpoolctl silently ignores
``set_num_threads`` from any thread but the first to call it. Two trainers in two threads must
end with exactly the weights each gives alone.

``python tests/reliability/test_threads.py`` prints the step times of docs/performance.md,
"Training in threads" (measured, never asserted).
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from helpers import blas_counts

from minigrad import F, Tensor
from minigrad.optim import AdamW
from minigrad.runtime import blas, parallel
from vit.model.tinyvit import TinyViT

threadpoolctl = pytest.importorskip("threadpoolctl")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def blas_two_threads():
    """BLAS at 2 threads (the test runner may have set OPENBLAS_NUM_THREADS=1), set by this,
    the main, thread: threadpoolctl then treats it as the one thread that controls BLAS."""
    if not blas_counts():
        pytest.skip("no BLAS library that threadpoolctl can control")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        with blas.one_blas_thread():  # the main thread limits first, as a training run would
            pass
        yield


def in_thread(fn, *args):
    out = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # pragma: no cover - reported below
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_blas_is_held_to_one_thread_in_any_thread(blas_two_threads):
    def inside():
        with blas.one_blas_thread():
            return blas_counts()

    assert inside() == [1] * len(blas_counts())  # in the main thread
    assert in_thread(inside) == [1] * len(blas_counts())  # and in another one
    assert blas_counts() == [2] * len(blas_counts())  # restored after


def test_two_threads_inside_at_once_then_restored(blas_two_threads):
    inside, leave, seen = threading.Barrier(2), threading.Event(), []

    def hold(first):
        with blas.one_blas_thread():
            inside.wait()
            if first:
                leave.wait()  # the other thread leaves first: still one thread for this one
            else:
                leave.set()
            time.sleep(0.05)
            seen.append(blas_counts())

    threads = [threading.Thread(target=hold, args=(first,)) for first in (True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(counts == [1] * len(counts) for counts in seen) and len(seen) == 2
    assert blas_counts() == [2] * len(blas_counts())


def linear_product(x0, w0, cot):
    x, w = Tensor(x0, requires_grad=True), Tensor(w0, requires_grad=True)
    y = F.linear(x, w)
    y.backward(cot)
    return [y.data, x.grad, w.grad]


def test_a_product_in_another_thread_has_the_main_threads_bits(blas_two_threads):
    """A long summed axis: OpenBLAS with 2 threads gives other last bits than with 1 (the
    same shape as tests/minigrad/engine/test_parallel.py shows it with)."""
    rng = np.random.default_rng(11)
    x0 = rng.standard_normal((64, 3000)).astype(np.float32)
    w0 = rng.standard_normal((3000, 96)).astype(np.float32)
    cot = rng.standard_normal((64, 96)).astype(np.float32)
    main = linear_product(x0, w0, cot)
    other = in_thread(linear_product, x0, w0, cot)
    for a, b in zip(main, other, strict=True):
        np.testing.assert_array_equal(a, b)


def train_steps(seed: int, steps: int = 3, batch: int = 256, dim: int = 64):
    """A few AdamW steps of a TinyViT large enough for BLAS to start threads; returns
    (seconds, parameters, optimizer state)."""
    rng = np.random.default_rng([seed, 5])
    x = rng.standard_normal((batch, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, batch)
    model = TinyViT(img_size=8, patch_size=4, dim=dim, num_heads=4, mlp_dim=2 * dim,
                    num_classes=10, seed=seed)
    optimizer = AdamW(list(model.parameters()), lr=3e-3)
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = F.cross_entropy(model(Tensor(x)), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    seconds = time.perf_counter() - t0
    return seconds, model.state_dict(), optimizer.state_dict()


def concurrently(seeds, **kw):
    """``train_steps`` for each seed, each in its own thread, all at once."""
    out, go = {}, threading.Barrier(len(seeds))

    def run(seed):
        go.wait()
        out[seed] = train_steps(seed, **kw)

    threads = [threading.Thread(target=run, args=(s,)) for s in seeds]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, out


def same_state(a, b) -> bool:
    return a.keys() == b.keys() and all(
        np.asarray(a[k]).dtype == np.asarray(b[k]).dtype and np.array_equal(a[k], b[k])
        for k in a)


def test_two_trainers_in_two_threads_end_with_the_weights_each_gives_alone(blas_two_threads):
    alone = {seed: train_steps(seed) for seed in (0, 1)}
    _, both = concurrently([0, 1])
    for seed in (0, 1):
        assert same_state(both[seed][1], alone[seed][1]), f"parameters of seed {seed}"
        assert same_state(both[seed][2], alone[seed][2]), f"optimizer state of seed {seed}"
    assert not same_state(alone[0][1], alone[1][1])  # the comparison can tell runs apart
    assert blas_counts() == [2] * len(blas_counts())


def test_vit_train_in_two_threads_writes_the_runs_it_writes_alone(blas_two_threads, tmp_path):
    """The whole of ``vit.train.train`` (data, model, AdamW, checkpoints, metrics) for one
    epoch of the digits at dim 64, in two threads at once, into two run folders."""
    from vit.train.checkpoint import load_checkpoint
    from vit.train.loop import train
    from vit.train.options import TrainOptions
    options = {seed: TrainOptions(dim=64, heads=4, mlp_dim=128, batch_size=256, epochs=1,
                                  seed=seed) for seed in (0, 1)}
    for seed in (0, 1):
        train(options[seed], tmp_path / f"alone{seed}", quiet=True, log=lambda s: None)
    go = threading.Barrier(2)

    def run(seed):
        go.wait()
        train(options[seed], tmp_path / f"both{seed}", quiet=True, log=lambda s: None)

    threads = [threading.Thread(target=run, args=(s,)) for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed in (0, 1):
        a = load_checkpoint(tmp_path / f"alone{seed}" / "checkpoint.npz")
        b = load_checkpoint(tmp_path / f"both{seed}" / "checkpoint.npz")
        assert a.epoch == b.epoch == 1
        assert same_state(a.model.state_dict(), b.model.state_dict()), f"seed {seed}"
        assert same_state(a.optim, b.optim), f"seed {seed}"


def test_blas_threads_sets_the_count_outside_and_one_blas_thread_still_wins():
    if not blas_counts():
        pytest.skip("no BLAS library that threadpoolctl can control")
    before = blas_counts()
    with blas.blas_threads(2):
        assert in_thread(blas_counts) == [2] * len(before)
        with blas.one_blas_thread():
            assert in_thread(blas_counts) == [1] * len(before)
            with blas.blas_threads(2):  # asked for inside: applies once the block is left
                assert blas_counts() == [1] * len(before)
            assert blas_counts() == [1] * len(before)
        assert blas_counts() == [2] * len(before)
    assert blas_counts() == before
    for bad in (0, -1):
        with pytest.raises(ValueError, match="blas_threads n"):
            blas.blas_threads(bad)
    for bad in (1.5, True, "2"):  # wrong types: TypeError since minigrad.checks (ValueError before)
        with pytest.raises(TypeError, match="blas_threads n"):
            blas.blas_threads(bad)


# ---- MINIGRAD_NUM_THREADS ------------------------------------------------------------------
def import_with(value: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT, "MINIGRAD_NUM_THREADS": value}
    code = "import minigrad.runtime.parallel as b; print(b.get_num_threads(), b.MAX_THREADS, b._cores())"
    return subprocess.run([sys.executable, "-W", "default", "-c", code], env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("value", [  # a child process each: the first in the fast lane
    "abc", *(pytest.param(v, marks=pytest.mark.slow) for v in ["0", "-3", "1.5", "2x"])])
def test_a_bad_minigrad_num_threads_warns_in_one_line_and_uses_the_default(value):
    """As OpenMP does with a bad OMP_NUM_THREADS: the import works, one warning names the
    variable, what it held and what is expected, and the default is used."""
    done = import_with(value)
    assert done.returncode == 0, done.stderr
    n, top, cores = map(int, done.stdout.split())
    assert n == min(cores, top)
    lines = [line for line in done.stderr.splitlines() if "MINIGRAD_NUM_THREADS" in line]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert repr(value) in lines[0] and "expected" in lines[0], lines[0]


@pytest.mark.parametrize("value, expected", [  # a child process each: the first in the fast lane
    ("1", 1), *(pytest.param(*case, marks=pytest.mark.slow) for case in [
        (" 2 ", 2), ("8", 8), ("100", 8), ("99999999999999999999999", 8), ("", None)])])
def test_a_good_minigrad_num_threads_is_used_without_a_word(value, expected):
    done = import_with(value)
    assert done.returncode == 0 and "MINIGRAD_NUM_THREADS" not in done.stderr, done.stderr
    n, top, cores = map(int, done.stdout.split())
    assert n == (min(cores, top) if expected is None else expected)


# ---- measurements (python tests/reliability/test_threads.py) -------------------------------
def measure(steps: int = 20, rounds: int = 5, **kw) -> None:
    train_steps(9, steps=2, **kw)  # warm-up, in the main thread (which takes BLAS control)
    rows = {"main thread": [], "one other thread": [], "two threads at once": [],
            "the same two one after the other": []}
    for _ in range(rounds):
        a = train_steps(0, steps=steps, **kw)[0]
        b = train_steps(1, steps=steps, **kw)[0]
        rows["main thread"].append(a / steps)
        rows["one other thread"].append(concurrently([0], steps=steps, **kw)[0] / steps)
        rows["two threads at once"].append(concurrently([0, 1], steps=steps, **kw)[0] / steps)
        rows["the same two one after the other"].append((a + b) / steps)
    base = np.median(rows["main thread"])
    print(f"TinyViT dim {kw.get('dim', 64)}, batch {kw.get('batch', 256)}, {steps} AdamW steps, "
          f"median of {rounds} rounds; parallel threads {parallel.get_num_threads()}, BLAS "
          f"{blas_counts()}")
    print("| case | wall ms / steps | vs main thread |\n|---|---:|---:|")
    for name, times in rows.items():
        med = np.median(times)
        print(f"| {name} | {1000 * med:.1f} | {med / base:.2f}x |")


if __name__ == "__main__":
    measure(steps=10, rounds=5)
    measure(steps=5, rounds=3, dim=32, batch=1024)
