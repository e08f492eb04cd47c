"""What the backward sweep's buffer adoption buys: training steps with and without it, one process.

The sweep adopts a VJP result that nothing else references as the gradient buffer (a leaf's
``.grad``, or the running sum of a node's gradient) instead of copying it
(``minigrad.gradients.unshared``, as the sweep in ``minigrad.graph`` calls it). This script
times the minigrad float32 step of ``train_step.py``'s configs with adoption on and off,
interleaved round by round, and measures the peak memory of one step each way
(tracemalloc). Usage::

    python benchmarks/adoption.py [--configs A B C D] [--rounds 15]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import CONFIGS, build, peak_memory

from minigrad import gradients, graph
from minigrad.runtime.heap import keep_heap


def adopted_per_step(step) -> tuple[int, int, int]:
    """(arrays adopted, their bytes, edges asked) in one step: ``graph.unshared`` swapped for
    a counting copy of itself (same test, same call depth, so the same reference count)."""
    seen = [0, 0, 0]
    original = graph.unshared

    def counting(a):
        ok = (type(a) is np.ndarray and a.base is None
              and sys.getrefcount(a) <= gradients._UNIQUE and a.flags.writeable)
        seen[2] += 1
        if ok:
            seen[0] += 1
            seen[1] += a.nbytes
        return ok

    graph.unshared = counting
    try:
        step()
    finally:
        graph.unshared = original
    return tuple(seen)


def copy_cost(step, repeats: int = 30) -> float:
    """Seconds that copying every adopted array of one step takes (min over ``repeats``):
    what the sweep would spend without adoption, allocation included."""
    arrays = []
    original = graph.unshared

    def keeping(a):
        ok = (type(a) is np.ndarray and a.base is None
              and sys.getrefcount(a) <= gradients._UNIQUE and a.flags.writeable)
        if ok:
            arrays.append(np.empty_like(a))  # same shape and dtype, not the array itself
        return ok

    graph.unshared = keeping
    try:
        step()
    finally:
        graph.unshared = original
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for a in arrays:
            a.copy()
        best = min(best, time.perf_counter() - t0)
    return best


def timed(step, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t0) / n


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", nargs="+", default=["A", "B", "C", "D"], choices=CONFIGS)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    keep_heap()
    print(f"{'config':<16} {'adopt med':>9} {'copy med':>9} {'ratio':>6} {'adopt min':>9} "
          f"{'copy min':>9} {'ratio':>6}   {'adopt MB':>8} {'copy MB':>8}   {'adopted':>11} "
          f"{'MB':>6} {'copy ms':>7}   (ms per step)")
    for key in args.configs:
        cfg = CONFIGS[key]
        step = build(cfg, ["minigrad32"])["minigrad32"]
        per_round = max(1, int(0.3 / max(timed(step, 2), 1e-6)))
        times = {True: [], False: []}
        for r in range(args.rounds):
            for flag in ((True, False) if r % 2 == 0 else (False, True)):
                gradients._ADOPT = flag
                step()  # settle the heap for this mode
                times[flag].append(timed(step, per_round))
        mems = {}
        for flag in (True, False):
            gradients._ADOPT = flag
            step()
            mems[flag] = peak_memory(step)
        gradients._ADOPT = True
        n_adopted, n_bytes, n_edges = adopted_per_step(step)
        cost = copy_cost(step)
        on, off = (1e3 * float(np.median(times[f])) for f in (True, False))
        lo_on, lo_off = (1e3 * min(times[f]) for f in (True, False))
        print(f"{cfg.name:<16} {on:>9.2f} {off:>9.2f} {off / on:>6.3f} {lo_on:>9.2f} "
              f"{lo_off:>9.2f} {lo_off / lo_on:>6.3f}   {mems[True]:>8.1f} {mems[False]:>8.1f}   "
              f"{n_adopted:>4}/{n_edges:<6} {n_bytes / 2 ** 20:>6.2f} {1e3 * cost:>7.3f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
