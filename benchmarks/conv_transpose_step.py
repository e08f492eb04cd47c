"""conv_transpose2d forward + backward (x, weight and bias gradients), minigrad vs PyTorch.

    python benchmarks/conv_transpose_step.py             # both shapes, about a minute
    python benchmarks/conv_transpose_step.py --quick     # seconds: few repetitions
    python benchmarks/conv_transpose_step.py --threads 2 # default 1 thread everywhere

float32, loss = sum(conv_transpose2d(x, w, b) * cotangent), then backward. Shapes, as a
decoder's upsampling steps use them:
  S small   x (64, 16, 4, 4),   w (16, 8, 3, 3),  stride 2, padding 1, output_padding 1 -> 8x8
  M medium  x (32, 32, 14, 14), w (32, 16, 4, 4), stride 2, padding 1 -> 28x28
The timing harness is cnn_step.py's (same weights on both sides, first losses compared,
warm-up, interleaved turns, median and min wall ms and median CPU ms, their ratios).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections import namedtuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from minigrad import F, Tensor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnn_step import pin_threads, run_config
from train_step import machine_line

Shape = namedtuple("Shape", "name x w kw")
SHAPES = {"S": Shape("S small", (64, 16, 4, 4), (16, 8, 3, 3),
                     dict(stride=2, padding=1, output_padding=1)),
          "M": Shape("M medium", (32, 32, 14, 14), (32, 16, 4, 4), dict(stride=2, padding=1))}


def build(shape, impls):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape.x).astype(np.float32)
    w = (rng.standard_normal(shape.w) / np.sqrt(np.prod(shape.w[1:]))).astype(np.float32)
    b = np.zeros(shape.w[1], np.float32)
    out = F.conv_transpose2d(x, w, b, **shape.kw).shape
    cot = (rng.standard_normal(out) / 100).astype(np.float32)
    steps = {}
    if "minigrad32" in impls:
        P = [Tensor(a.copy(), requires_grad=True) for a in (x, w, b)]

        def ours():
            for p in P:
                p.grad = None
            loss = F.sum(F.conv_transpose2d(*P, **shape.kw) * cot)
            loss.backward()
            return loss.item()
        steps["minigrad32"] = ours
    if "torch" in impls:
        import torch
        T = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
        tc = torch.from_numpy(cot)

        def theirs():
            for p in T:
                p.grad = None
            loss = (torch.nn.functional.conv_transpose2d(*T, **shape.kw) * tc).sum()
            loss.backward()
            return loss.item()
        steps["torch"] = theirs
    return steps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="seconds-long smoke run")
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS, torch and minigrad threads (default 1)")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds of timing per shape")
    args = ap.parse_args(argv)
    if not 1 <= args.threads <= 64:
        ap.error(f"--threads: got {args.threads}; expected 1 to 64")
    if importlib.util.find_spec("threadpoolctl") is None:
        ap.error("needs threadpoolctl to pin the BLAS threads")
    pin_threads(args.threads)
    impls = ["minigrad32"] + (["torch"] if importlib.util.find_spec("torch") else [])
    rounds, warmup, turn, settle = (2, 1, 2, 0.05) if args.quick else (None, 2, 5, 0.2)
    print(machine_line())
    if "torch" not in impls:
        print("skipped (not importable): torch")
    print(f"conv_transpose2d forward + backward, float32, {args.threads} thread(s)\n")
    print(f"{'shape':<10} {'impl':<11} {'median ms':>10} {'min ms':>9} {'median CPU ms':>14}")
    results = []
    for shape in SHAPES.values():
        res, n = run_config(shape, build(shape, impls), warmup, args.budget, turn, settle,
                            rounds)
        results.append((shape, res))
        for name, (med, best, cpu) in res.items():
            print(f"{shape.name:<10} {name:<11} {med * 1e3:>10.3f} {best * 1e3:>9.3f} "
                  f"{cpu * 1e3:>14.3f}")
        print(f"{'':<10} ({n} timed steps each)")
    if "torch" in impls:
        print(f"\nminigrad32 / torch (> 1: minigrad is slower)\n"
              f"{'shape':<10} {'median':>7} {'min':>6} {'median CPU':>11}")
        for shape, res in results:
            mg, th = res["minigrad32"], res["torch"]
            print(f"{shape.name:<10} {mg[0] / th[0]:>7.2f} {mg[1] / th[1]:>6.2f} "
                  f"{mg[2] / th[2]:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
