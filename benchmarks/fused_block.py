"""A small model's stages as single ops (vit/fusion.py) against the composed ops, in one process.

    python benchmarks/fused_block.py                    # configs A-D, default threads
    python benchmarks/fused_block.py --threads 1 --configs A,B

Implementations, each a full minigrad float32 TinyViT step of benchmarks/train_step.py from
the same weights: ``composed`` (``fusion.FUSE_BELOW_FLOPS = 0``: the embedding as four ops,
each block as ten, the head as three), ``fused`` (the default threshold: one op per stage
where the model is small), ``forced`` (the fused ops at every size, to see what the threshold
keeps out), ``manual`` and ``torch``. The threshold
is set around each step, so all run interleaved in train_step's round-robin turns. Prints the
median and min ms per step and the ratios of medians. ``--pairs N`` instead alternates
composed and fused steps one by one, N pairs (the steadiest ratio on a busy machine).
docs/performance.md, "A fused encoder block" and "The embedding and the head as single ops",
records runs.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from minigrad import parallel  # noqa: E402
from train_step import CONFIGS, build, machine_line, run_config  # noqa: E402
from vit import fusion  # noqa: E402

THRESHOLDS = {"composed": 0, "fused": fusion.FUSE_BELOW_FLOPS, "forced": float("inf")}


def with_threshold(step, flops):
    default = fusion.FUSE_MAX_ELEMENTS

    def run():
        fusion.FUSE_BELOW_FLOPS = flops
        if flops == float("inf"):
            fusion.FUSE_MAX_ELEMENTS = flops
        try:
            return step()
        finally:
            fusion.FUSE_BELOW_FLOPS = THRESHOLDS["fused"]
            fusion.FUSE_MAX_ELEMENTS = default
    return run


def paired(cfg, pairs: int) -> str:
    """Composed and fused steps alternating one by one (which goes first alternates too):
    the median of the per-pair ratios fused / composed, and the ratio of the medians."""
    steps = [with_threshold(build(cfg, ["minigrad32"])["minigrad32"], THRESHOLDS[v])
             for v in ("composed", "fused")]
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default="A,B,C,D")
    ap.add_argument("--threads", type=int)
    ap.add_argument("--budget", type=float, default=20.0)
    ap.add_argument("--no-forced", action="store_true", help="leave out the forced variant")
    ap.add_argument("--pairs", type=int, help="only the paired composed/fused comparison, "
                    "this many pairs per config")
    args = ap.parse_args(argv)
    if args.threads:
        from threadpoolctl import threadpool_limits
        limit = threadpool_limits(args.threads)  # noqa: F841 (kept alive for the run)
        parallel.set_num_threads(args.threads)
        import torch
        torch.set_num_threads(args.threads)
    print(machine_line())
    if args.pairs:
        for key in args.configs.split(","):
            print(paired(CONFIGS[key], args.pairs), flush=True)
        return 0
    variants = [v for v in THRESHOLDS if not (args.no_forced and v == "forced")]
    for key in args.configs.split(","):
        cfg = CONFIGS[key]
        built = build(cfg, ["minigrad32", "manual", "torch"])
        steps = {v: with_threshold(build(cfg, ["minigrad32"])["minigrad32"], THRESHOLDS[v])
                 for v in variants}
        steps.update(manual=built["manual"], torch=built["torch"])
        result, n = run_config(cfg, steps, warmup=2, budget=args.budget, turn=5, settle=0.2)
        med = {k: v[0] for k, v in result.items()}
        line = "  ".join(f"{k} {1e3 * m:.3f}/{1e3 * result[k][1]:.3f}" for k, m in med.items())
        ratios = "  ".join(f"{v}/composed {med[v] / med['composed']:.3f}" for v in variants[1:])
        ratios += "  " + "  ".join(f"{v}/torch {med[v] / med['torch']:.3f}" for v in variants)
        print(f"{cfg.name:<16} {n} steps  median/min ms: {line}\n{'':<16} {ratios}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
