"""Ways to use the second core for benchmarks/train_step.py's step, timed in one process.

    python benchmarks/parallel_ab.py --configs B,C,D --rounds 12
    python benchmarks/parallel_ab.py --configs C --shards 1,2,4,8

Variants (every one from the same weights, minigrad32 unless named):
  shards      the default: mg.data_parallel with the shards vit.train.loop.step_shards picks
  shards N    mg.data_parallel with N shards
  ops         one graph for the whole batch, plain backward(): the large ops' blocks and the
              large products' parts on the block pool (the mechanism before data_parallel)
  blas        one graph, the block pool off and BLAS free to run its own threads inside every
              product (its threaded GEMMs may change last bits: not a candidate for G2, timed
              to see what it would give)
  1 thread    one graph, the pool off and BLAS at one thread
  manual, torch   the hand-derived step and PyTorch, at the machine's threads
Round-robin turns (order rotating), each settling 0.2 s untimed, then --turn timed steps;
prints medians and each variant's paired ratio to ``shards`` (the median over rounds of the
per-round ratio of medians), with the 1-minute load average at the start and end.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from minigrad import F, Tensor
from minigrad.runtime import blas, parallel
from minigrad.runtime.heap import keep_heap
from vit.model.tinyvit import TinyViT
from vit.train.loop import step_shards

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_step as ts
from baselines import LR, make_torch
from machine import available, load_average


def _plain(cfg, state, x, y):
    """The step on one graph: model, mean cross-entropy, backward, SGD."""
    model = TinyViT(**cfg.model_kwargs(), dtype=np.float32)
    model.load_state_dict({k: v.astype(np.float32) for k, v in state.items()})
    params, xt = list(model.parameters()), Tensor(x)

    def step():
        model.zero_grad()
        loss = F.cross_entropy(model(xt), y)
        loss.backward()
        for p in params:
            p.data -= LR * p.grad
        return loss.item()
    return step


class _Setting:
    """A variant's threads for the length of its turn: the block pool's count, and whether
    minigrad holds BLAS to one thread inside its kernels (``blas``: no, BLAS's own count)."""

    def __init__(self, pool: int, blas_count: int | None = None, free_blas: bool = False):
        self.pool, self.blas_count, self.free_blas = pool, blas_count, free_blas

    def __enter__(self):
        self.before = parallel.get_num_threads()
        parallel.set_num_threads(self.pool)
        self.limit = blas.blas_threads(self.blas_count) if self.blas_count else None
        if self.limit:
            self.limit.__enter__()
        if self.free_blas:
            self.saved = blas.one_blas_thread.__enter__, blas.one_blas_thread.__exit__
            blas.one_blas_thread.__enter__ = lambda self: None
            blas.one_blas_thread.__exit__ = lambda self, *exc: None

    def __exit__(self, *exc):
        if self.free_blas:
            blas.one_blas_thread.__enter__, blas.one_blas_thread.__exit__ = self.saved
        if self.limit:
            self.limit.__exit__()
        parallel.set_num_threads(self.before)


def variants(cfg, shard_counts):
    rng = np.random.default_rng(0)
    state = TinyViT(**cfg.model_kwargs(), dtype=np.float64, seed=0).state_dict()
    x = rng.standard_normal((cfg.batch, cfg.channels, cfg.image, cfg.image)).astype(np.float32)
    y = rng.integers(0, cfg.classes, cfg.batch)
    cores = parallel.get_num_threads()
    out = {"shards": (ts.make_minigrad(cfg, state, x, y, np.float32), _Setting(cores))}
    for n in shard_counts:
        out[f"shards {n}"] = (_sharded(cfg, state, x, y, n), _Setting(cores))
    out["ops"] = (_plain(cfg, state, x, y), _Setting(cores))
    out["blas"] = (_plain(cfg, state, x, y), _Setting(1, free_blas=True))
    out["1 thread"] = (_plain(cfg, state, x, y), _Setting(1, blas_count=1))
    out["manual"] = (ts.make_manual(cfg, state, x, y), _Setting(cores))
    if available("torch"):
        out["torch"] = (make_torch(cfg, state, x, y), _Setting(cores))
    return out


def _sharded(cfg, state, x, y, shards):
    import minigrad as mg
    model = TinyViT(**cfg.model_kwargs(), dtype=np.float32)
    model.load_state_dict({k: v.astype(np.float32) for k, v in state.items()})
    params = list(model.parameters())

    def step():
        model.zero_grad()
        loss, _ = mg.data_parallel(lambda xs, ys: F.cross_entropy(model(Tensor(xs)), ys),
                                   x, y, shards=shards)
        for p in params:
            p.data -= LR * p.grad
        return loss
    return step


def run(cfg, shard_counts, rounds, turn, settle=0.2):
    steps = variants(cfg, shard_counts)
    names = list(steps)
    for step, setting in steps.values():
        with setting:
            step()
            step()
    times = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            step, setting = steps[name]
            with setting:
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < settle:
                    step()
                turn_times = []
                for _ in range(turn):
                    t = time.perf_counter()
                    step()
                    turn_times.append(time.perf_counter() - t)
            times[name].append(statistics.median(turn_times))
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default="B,C,D")
    ap.add_argument("--shards", default="", help="comma-separated extra shard counts")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--turn", type=int, default=3, help="timed steps per turn")
    args = ap.parse_args(argv)
    keys = args.configs.upper().split(",")
    if any(k not in ts.CONFIGS for k in keys) or not 1 <= args.rounds <= 1000 \
            or not 1 <= args.turn <= 100:
        ap.error("--configs: letters of A,B,C,D; --rounds 1-1000; --turn 1-100")
    try:
        counts = [int(s) for s in args.shards.split(",") if s]
    except ValueError:
        ap.error(f"--shards: got {args.shards!r}; expected comma-separated integers")
    keep_heap()  # as python -m vit train does
    for k in keys:
        cfg = ts.CONFIGS[k]
        start = load_average()
        times = run(cfg, counts, args.rounds, args.turn)
        print(f"\n{cfg.name}: {args.rounds} rounds of {args.turn} steps; load average "
              f"{start and start[0]} at start, {(load_average() or ['?'])[0]} at end; "
              f"shards = {step_shards(TinyViT(**cfg.model_kwargs()), cfg.batch)}")
        print(f"{'variant':<10} {'median ms':>10} {'/ shards':>9} {'/ torch':>8}")
        for name, t in times.items():
            rel = [a / b for a, b in zip(t, times["shards"], strict=True)]
            vs_torch = ([a / b for a, b in zip(t, times["torch"], strict=True)]
                        if "torch" in times else [float("nan")])
            print(f"{name:<10} {1e3 * statistics.median(t):>10.2f} "
                  f"{statistics.median(rel):>9.2f} {statistics.median(vs_torch):>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
