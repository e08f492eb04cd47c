"""Time of gradient-checking the whole TinyViT w.r.t. every parameter: element-wise vs fast.

    python benchmarks/gradcheck.py            # the spec's default TinyViT, float64, 3 repetitions
    python benchmarks/gradcheck.py --quick    # one repetition, a smaller batch

The checked function is the mean cross-entropy of TinyViT() (img 8, patch 4, 1 channel,
dim 16, 2 heads, mlp 32, 2 classes, position embeddings) on a fixed batch; its inputs are
all the model's parameters. Element-wise mode perturbs every scalar (two forwards each);
fast mode (``minigrad.gradcheck(..., fast=True)``) checks random directional derivatives
(two forwards per direction and parameter tensor). Both also run the whole-graph checks
(three backward passes).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minigrad as mg
from minigrad import F, Tensor
from vit.model.tinyvit import TinyViT

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import machine_line

HEADER = f"{'mode':<12} {'median s':>9} {'min s':>8} {'fn calls':>9} {'backwards':>9} " \
         f"{'ms/call':>8} {'speedup':>8}  result"


def setup(batch: int):
    model = TinyViT(seed=0)  # the spec's defaults, float64
    rng = np.random.default_rng(0)
    c = model.config
    x = Tensor(rng.standard_normal((batch, c["in_chans"], c["img_size"], c["img_size"])))
    y = rng.integers(0, c["num_classes"], batch)
    return model, x, y


def run(model, x, y, fast: bool):
    """One full gradcheck; returns (seconds, calls of fn, backward passes, report)."""
    counts = {"forward": 0}

    def fn(*params):  # the parameters are the checked inputs; the model reads them itself
        counts["forward"] += 1
        return F.cross_entropy(model(x), y)

    params = list(model.parameters())
    t0 = time.perf_counter()
    report = mg.gradcheck(fn, params, fast=fast, raise_exception=False)
    seconds = time.perf_counter() - t0
    return seconds, counts["forward"], 3, report  # 3 backwards: gradient, repeat, zero cotangent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one repetition, batch 2")
    ap.add_argument("--reps", type=int, help="repetitions per mode (default 3, quick 1)")
    ap.add_argument("--batch", type=int, help="batch size (default 8, quick 2)")
    args = ap.parse_args(argv)
    reps = args.reps or (1 if args.quick else 3)
    batch = args.batch or (2 if args.quick else 8)
    model, x, y = setup(batch)
    n = model.num_parameters()
    print(machine_line())
    print(f"gradcheck of TinyViT() (spec defaults, float64), batch {batch}, mean cross-entropy, "
          f"w.r.t. all {len(list(model.parameters()))} parameter tensors ({n} scalars); "
          f"{reps} repetition(s) per mode, interleaved\n")
    times = {"elementwise": [], "fast": []}
    info = {}
    for _ in range(reps):
        for mode in times:
            seconds, fwd, bwd, report = run(model, x, y, fast=mode == "fast")
            times[mode].append(seconds)
            info[mode] = (fwd, bwd, report)
    print(HEADER)
    base = float(np.median(times["elementwise"]))
    for mode, ts in times.items():
        fwd, bwd, report = info[mode]
        med = float(np.median(ts))
        print(f"{mode:<12} {med:>9.3f} {min(ts):>8.3f} {fwd:>9d} {bwd:>9d} "
              f"{1e3 * med / max(fwd, 1):>8.3f} {base / med:>7.1f}x  "
              f"{'passed' if report.ok else 'FAILED'}")
    for mode in times:
        if not info[mode][2].ok:
            print(f"\n{mode} report:\n{info[mode][2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
