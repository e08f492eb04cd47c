"""One small-CNN training step (forward, loss, backward, plain SGD), minigrad vs PyTorch.

    python benchmarks/cnn_step.py                # configs A-C, about a minute and a half
    python benchmarks/cnn_step.py --quick        # seconds: few repetitions
    python benchmarks/cnn_step.py --threads 2    # default 1 thread everywhere

The model (float32, batch 64, one input channel, 10 classes):
  conv 3x3 (1 -> 16, padding 1) -> relu -> max_pool 2 -> conv 3x3 (16 -> 32, padding 1)
  -> relu -> avg_pool over the whole map -> linear (32 -> 10) -> cross-entropy
Configs: A on 8 x 8 images (the digits), B on 28 x 28 (MNIST-sized), C the second
convolution of B alone (64 x 16 x 14 x 14 -> 32 channels), forward + backward of
sum(conv * cotangent). Both implementations start from the same weights and the harness
checks their first losses agree. Timing follows train_step.py: warm-up, then interleaved
round-robin turns (order rotating), a settle period before each turn, median and min ms
per step, and their minigrad/torch ratios. Threads are pinned (BLAS, torch and minigrad's
block pool; one each by default), so each step's CPU time (``time.process_time``) is
also its work: on a shared machine, where the wall time of a step includes waiting for a
core, the CPU-time ratio is the steadier one, and both are printed.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections import namedtuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from minigrad import F, Tensor
from minigrad.runtime import parallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import machine_line

LR = 0.01
Config = namedtuple("Config", "name image conv_only")
CONFIGS = {"A": Config("A cnn 8x8", 8, False), "B": Config("B cnn 28x28", 28, False),
           "C": Config("C conv2 of B", 28, True)}
BATCH, C1, C2, CLASSES = 64, 16, 32, 10
_limits = []  # keeps the threadpoolctl limit alive


def init_state(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)

    def he(*shape):
        fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    return {"w1": he(C1, 1, 3, 3), "b1": np.zeros(C1, np.float32),
            "w2": he(C2, C1, 3, 3), "b2": np.zeros(C2, np.float32),
            "w3": he(C2, CLASSES), "b3": np.zeros(CLASSES, np.float32)}


def make_minigrad(cfg, state, x, y, cot):
    P = {k: Tensor(v.copy(), requires_grad=True) for k, v in state.items()}
    xt = Tensor(x)

    def step():
        for p in P.values():
            p.grad = None
        if cfg.conv_only:
            out = F.conv2d(xt, P["w2"], P["b2"], padding=1)
            loss = F.sum(out * cot)
        else:
            h = F.relu(F.conv2d(xt, P["w1"], P["b1"], padding=1))
            h = F.max_pool2d(h, 2)
            h = F.relu(F.conv2d(h, P["w2"], P["b2"], padding=1))
            h = F.avg_pool2d(h, h.shape[-1]).reshape(BATCH, C2)
            loss = F.cross_entropy(F.linear(h, P["w3"], P["b3"]), y)
        loss.backward()
        for p in P.values():
            if p.grad is not None:
                p.data -= LR * p.grad
        return loss.item()
    return step


def make_torch(cfg, state, x, y, cot):
    import torch
    import torch.nn.functional as tF
    P = {k: torch.tensor(v, requires_grad=True) for k, v in state.items()}
    xt, yt, ct = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64)), torch.from_numpy(cot)

    def step():
        for p in P.values():
            p.grad = None
        if cfg.conv_only:
            loss = (tF.conv2d(xt, P["w2"], P["b2"], padding=1) * ct).sum()
        else:
            h = torch.relu(tF.conv2d(xt, P["w1"], P["b1"], padding=1))
            h = tF.max_pool2d(h, 2)
            h = torch.relu(tF.conv2d(h, P["w2"], P["b2"], padding=1))
            h = tF.avg_pool2d(h, h.shape[-1]).reshape(BATCH, C2)
            loss = tF.cross_entropy(h @ P["w3"] + P["b3"], yt)
        loss.backward()
        with torch.no_grad():
            for p in P.values():
                if p.grad is not None:
                    p -= LR * p.grad
        return loss.item()
    return step


def build(cfg, impls):
    rng = np.random.default_rng(1)
    state = init_state()
    chans, size = (C1, cfg.image // 2) if cfg.conv_only else (1, cfg.image)
    x = rng.standard_normal((BATCH, chans, size, size)).astype(np.float32)
    y = rng.integers(0, CLASSES, BATCH)
    cot = rng.standard_normal((BATCH, C2, size, size)).astype(np.float32) / 100
    makers = {"minigrad32": make_minigrad, "torch": make_torch}
    return {name: makers[name](cfg, state, x, y, cot) for name in impls}


def pin_threads(n: int) -> None:
    """n threads for BLAS (threadpoolctl), torch and minigrad's block pool."""
    from threadpoolctl import threadpool_limits
    _limits.append(threadpool_limits(n))
    parallel.set_num_threads(n)
    if importlib.util.find_spec("torch"):
        import torch
        torch.set_num_threads(n)


def run_config(cfg, steps, warmup, budget, turn, settle, rounds=None):
    """{impl: (median wall s, min wall s, median CPU s)} over interleaved turns, and the
    number of timed steps per implementation."""
    names = list(steps)
    losses = {name: steps[name]() for name in names}
    if max(losses.values()) - min(losses.values()) > 1e-4 * max(1.0, abs(losses[names[0]])):
        raise AssertionError(f"{cfg.name}: first-step losses disagree: {losses}")
    first = {}
    for name in names:
        t0 = time.perf_counter()
        for _ in range(warmup):
            steps[name]()
        first[name] = (time.perf_counter() - t0) / warmup
    if rounds is None:
        per_round = sum(max(settle, t) + turn * t for t in first.values())
        rounds = int(max(3, min(100, budget / per_round)))
    wall = {name: [] for name in names}
    cpu = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            while True:  # settle: the other library's idle threads stop spinning
                steps[name]()
                if time.perf_counter() - t0 >= settle:
                    break
            for _ in range(turn):
                w0, c0 = time.perf_counter(), time.process_time()
                steps[name]()
                wall[name].append(time.perf_counter() - w0)
                cpu[name].append(time.process_time() - c0)
    return {k: (float(np.median(wall[k])), float(np.min(wall[k])), float(np.median(cpu[k])))
            for k in names}, rounds * turn


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="seconds-long smoke run")
    ap.add_argument("--configs", default="A,B,C", help="comma-separated subset of A,B,C")
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS, torch and minigrad threads (default 1)")
    ap.add_argument("--budget", type=float, default=25.0, help="seconds of timing per config")
    args = ap.parse_args(argv)
    keys = [k.strip().upper() for k in args.configs.split(",") if k.strip()]
    if not keys or any(k not in CONFIGS for k in keys):
        ap.error(f"--configs: got {args.configs!r}; expected letters from {','.join(CONFIGS)}")
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
    print(f"one step: forward + loss + backward + SGD, float32, batch {BATCH}, "
          f"{args.threads} thread(s) everywhere\n")
    print(f"{'config':<16} {'impl':<11} {'median ms':>10} {'min ms':>9} {'median CPU ms':>14}")
    results = []
    for k in keys:
        res, n = run_config(CONFIGS[k], build(CONFIGS[k], impls), warmup, args.budget, turn,
                            settle, rounds)
        results.append((CONFIGS[k], res))
        for name, (med, best, cpu) in res.items():
            print(f"{CONFIGS[k].name:<16} {name:<11} {med * 1e3:>10.2f} {best * 1e3:>9.2f} "
                  f"{cpu * 1e3:>14.2f}")
        print(f"{'':<16} ({n} timed steps each)")
    if "torch" in impls:
        print(f"\nminigrad32 / torch (> 1: minigrad is slower)\n"
              f"{'config':<16} {'median':>7} {'min':>6} {'median CPU':>11}")
        for cfg, res in results:
            mg, th = res["minigrad32"], res["torch"]
            print(f"{cfg.name:<16} {mg[0] / th[0]:>7.2f} {mg[1] / th[1]:>6.2f} "
                  f"{mg[2] / th[2]:>11.2f}")
    print(f"load average after the steps: {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg")
          else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
