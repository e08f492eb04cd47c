"""The fused path (``TinyViT(fused=True)``: one recorded op per stage) against the composed ops,
in one process.

    python benchmarks/fused_block.py                    # configs A-D, default threads
    python benchmarks/fused_block.py --threads 1 --configs A,B
    python benchmarks/fused_block.py --pairs 400 --configs A,B
    python benchmarks/fused_block.py --train 2           # `vit train`'s default run, both ways

Implementations, each a full float32 TinyViT step of benchmarks/train_step.py from the same
weights: ``composed`` (``fused=False``: the embedding as four ops, each block as ten, the head
as three), ``fused`` (``fused=True``: one op each, vit/model/fused.py), ``manual`` and
``torch``, interleaved in train_step's round-robin turns. Prints the median and min ms per step
and the ratios of medians. ``--pairs N`` instead alternates composed and fused steps one by
one, N pairs (the steadiest ratio on a busy machine). docs/performance.md, "The fused path",
records runs. ``--train N`` times the default ``python -m vit train`` run (the whole training,
150 epochs) N times with ``--fused`` and N times without, alternating, in this process.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import CONFIGS, build, machine_line, run_config

from minigrad.runtime import parallel

VARIANTS = {"composed": "minigrad32", "fused": "fused32"}


def paired(cfg, pairs: int) -> str:
    """Composed and fused steps alternating one by one (which goes first alternates too):
    the median of the per-pair ratios fused / composed, and the ratio of the medians."""
    built = build(cfg, list(VARIANTS.values()))
    steps = [built[VARIANTS[v]] for v in ("composed", "fused")]
    for step in steps * 20:  # warm up
        step()
    times = np.empty((pairs, 2))
    for i in range(pairs):
        for j in ((0, 1) if i % 2 else (1, 0)):
            t0 = time.perf_counter()
            steps[j]()
            times[i, j] = time.perf_counter() - t0
    med = np.median(times, axis=0)
    return (f"{cfg.name:<16} {pairs} pairs  median ms composed {1e3 * med[0]:.3f}, fused "
            f"{1e3 * med[1]:.3f}; fused/composed: ratio of medians {med[1] / med[0]:.3f}, "
            f"median of pair ratios {np.median(times[:, 1] / times[:, 0]):.3f}")


def train_runs(runs: int) -> str:
    """Wall seconds of the default training run with and without ``fused``, alternating."""
    from vit.train.loop import train
    from vit.train.options import TrainOptions
    times: dict[bool, list[float]] = {False: [], True: []}
    accuracy = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            for fused in ((False, True) if i % 2 == 0 else (True, False)):
                t0 = time.perf_counter()
                rows = train(TrainOptions(fused=fused), os.path.join(tmp, f"{fused}{i}"),
                             quiet=True, log=lambda line: None)
                times[fused].append(time.perf_counter() - t0)
                accuracy[fused] = rows[-1]["test_acc"]
    med = {k: float(np.median(v)) for k, v in times.items()}
    return (f"vit train (default run) {runs} x 2 runs  median s composed {med[False]:.1f}, "
            f"fused {med[True]:.1f}; fused/composed {med[True] / med[False]:.3f}; "
            f"test accuracy composed {accuracy[False]:.4f}, fused {accuracy[True]:.4f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default="A,B,C,D")
    ap.add_argument("--threads", type=int)
    ap.add_argument("--budget", type=float, default=20.0)
    ap.add_argument("--pairs", type=int, help="only the paired composed/fused comparison, "
                    "this many pairs per config")
    ap.add_argument("--train", type=int, metavar="N", help="only the default training run, N "
                    "times each way")
    args = ap.parse_args(argv)
    keys = args.configs.split(",")
    if any(k not in CONFIGS for k in keys):
        ap.error(f"--configs: expected letters from {','.join(CONFIGS)}, got {args.configs}")
    for name, value, high in (("--pairs", args.pairs, 100_000), ("--train", args.train, 100),
                              ("--threads", args.threads, 1024)):
        if value is not None and not 1 <= value <= high:
            ap.error(f"{name}: got {value}; expected an integer in [1, {high}]")
    if not 0 < args.budget <= 3600:
        ap.error(f"--budget: got {args.budget}; expected seconds in (0, 3600]")
    if args.threads:
        from threadpoolctl import threadpool_limits
        limit = threadpool_limits(args.threads)  # noqa: F841 (kept alive for the run)
        parallel.set_num_threads(args.threads)
        import torch
        torch.set_num_threads(args.threads)
    print(machine_line())
    if args.train:
        print(train_runs(args.train), flush=True)
        return 0
    if args.pairs:
        for key in keys:
            print(paired(CONFIGS[key], args.pairs), flush=True)
        return 0
    for key in keys:
        cfg = CONFIGS[key]
        built = build(cfg, [*VARIANTS.values(), "manual", "torch"])
        steps = {v: built[impl] for v, impl in VARIANTS.items()}
        steps.update(manual=built["manual"], torch=built["torch"])
        result, n = run_config(cfg, steps, warmup=2, budget=args.budget, turn=5, settle=0.2)
        med = {k: v[0] for k, v in result.items()}
        line = "  ".join(f"{k} {1e3 * m:.3f}/{1e3 * result[k][1]:.3f}" for k, m in med.items())
        ratios = (f"fused/composed {med['fused'] / med['composed']:.3f}  "
                  + "  ".join(f"{v}/torch {med[v] / med['torch']:.3f}" for v in VARIANTS))
        print(f"{cfg.name:<16} {n} steps  median/min ms: {line}\n{'':<16} {ratios}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
