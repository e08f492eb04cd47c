"""One full TinyViT training step (forward, loss, backward, plain SGD on every parameter).

    python benchmarks/train_step.py                  # configs A-D, a few minutes
    python benchmarks/train_step.py --quick          # seconds: configs A and B, few repetitions
    python benchmarks/train_step.py --configs A,D --profile minigrad32
    python benchmarks/train_step.py --json run.json  # also every number, machine and commit
    python benchmarks/report.py run.json             # docs/performance.md's tables from it

Implementations (each starts from the same initialization, copied from one minigrad model):
  minigrad32 / minigrad64   TinyViT + F.cross_entropy + backward + p.data -= lr * p.grad, the
                            batch in mg.data_parallel's shards as python -m vit train runs it
  fused32                   the same with TinyViT(fused=True): one recorded op per stage
  manual                    vit/model/manual.py: forward and backward by hand (float32)
  torch                     the same model in PyTorch eager on the CPU (float32), if importable
  autograd                  the same model in HIPS autograd's numpy (float32), if importable
Timing: a warm-up, then round-robin turns (order rotating), so drift and other load hit all
alike; each turn settles untimed for 0.2 s (the previous library's idle BLAS/OpenMP threads
spin meanwhile and would slow the next one), then times 5 steps; median and min ms per
step. The matmul FLOPs are counted analytically (forward, plus 2x for backward) and compared
with the machine's float32 matmul peak measured in the same run. Peak memory per step is
tracemalloc's peak over one extra step (NumPy reports its buffers to tracemalloc; PyTorch's
allocator does not, so torch has no number).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
import tracemalloc
from collections import namedtuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minigrad as mg
from minigrad import F, Tensor
from minigrad.runtime import parallel
from minigrad.runtime.heap import keep_heap
from vit.model import manual
from vit.model.tinyvit import TinyViT
from vit.train.loop import step_shards

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine
from baselines import LR, make_autograd, make_torch
from machine import (
    available,
    check_output_path,
    commit_line,
    git_commit,
    load_average,
    machine_info,
    now,
    write_json,
)

HEADER = f"{'config':<16} {'impl':<11} {'median ms':>10} {'min ms':>9} {'GFLOP/s':>8} " \
         f"{'% peak':>7} {'peak MB':>8} {'faults':>7}"
_limits = []  # keeps a threadpoolctl limit alive
SCHEMA = 1  # of the --json file; raised when a key changes meaning
IMPLS = ("minigrad32", "minigrad64", "fused32", "manual", "torch", "autograd")
BASE, RATIO_TO = "minigrad32", ("torch", "manual", "autograd", "minigrad64", "fused32")


class Config(namedtuple("Config", "name batch image channels patch dim heads mlp classes")):
    __slots__ = ()

    def model_kwargs(self):
        return dict(img_size=self.image, patch_size=self.patch, in_chans=self.channels,
                    dim=self.dim, num_heads=self.heads, mlp_dim=self.mlp,
                    num_classes=self.classes, use_pos_emb=True)

    def step_flops(self) -> float:
        """Matmul FLOPs of one step: 3x the forward's (the backward counted as 2x)."""
        B, D, Fh, K = self.batch, self.dim, self.mlp, self.classes
        N = (self.image // self.patch) ** 2
        T = N + 1
        fwd = 2 * B * (N * self.patch ** 2 * self.channels * D  # patch embedding
                       + T * D * 3 * D + T * D * D  # qkv, output projection
                       + 2 * T * T * D  # Q K^T and A V over all heads
                       + 2 * T * D * Fh  # fc1, fc2
                       + D * K)  # head
        return 3.0 * fwd


CONFIGS = {
    "A": Config("A tiny", 64, 8, 1, 4, 16, 2, 32, 10),
    "B": Config("B digits", 128, 8, 1, 2, 64, 4, 128, 10),
    "C": Config("C small", 32, 32, 3, 4, 128, 4, 256, 10),
    "D": Config("D ViT-Ti block", 8, 224, 3, 16, 192, 3, 768, 1000),
}


# ---- implementations: each make_* returns step() -> loss, with its own copy of the state ----
def make_minigrad(cfg, state, x, y, dtype, fused=False):
    model = TinyViT(**cfg.model_kwargs(), dtype=dtype, fused=fused)
    model.load_state_dict({k: v.astype(dtype) for k, v in state.items()})
    params = list(model.parameters())
    xt = Tensor(x.astype(dtype))

    shards = step_shards(model, len(x))

    def step():  # as python -m vit train runs it: the batch in shards chosen by shape
        model.zero_grad()
        loss, _ = mg.data_parallel(lambda xs, ys: F.cross_entropy(model(Tensor(xs)), ys),
                                   xt, y, shards=shards)
        for p in params:
            p.data -= LR * p.grad
        return loss
    return step


def make_manual(cfg, state, x, y):
    params = {k: v.astype(np.float32) for k, v in state.items()}

    def step():
        loss, grads = manual.loss_and_grads(params, x, y, cfg.patch, cfg.heads)
        manual.sgd_step(params, grads, LR)
        return loss
    return step


def build(cfg, impls):
    rng = np.random.default_rng(0)
    state = TinyViT(**cfg.model_kwargs(), dtype=np.float64, seed=0).state_dict()
    x = rng.standard_normal((cfg.batch, cfg.channels, cfg.image, cfg.image)).astype(np.float32)
    y = rng.integers(0, cfg.classes, cfg.batch)
    makers = {"minigrad32": lambda: make_minigrad(cfg, state, x, y, np.float32),
              "minigrad64": lambda: make_minigrad(cfg, state, x, y, np.float64),
              "fused32": lambda: make_minigrad(cfg, state, x, y, np.float32, fused=True),
              "manual": lambda: make_manual(cfg, state, x, y),
              "torch": lambda: make_torch(cfg, state, x, y),
              "autograd": lambda: make_autograd(cfg, state, x, y)}
    return {name: makers[name]() for name in impls}


# ---- measurement ---------------------------------------------------------------------------
def matmul_peak(n: int, reps: int) -> float:
    """Best float32 GFLOP/s of an n x n @ n x n np.matmul."""
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    a @ a
    best = min(_timed(lambda: a @ a) for _ in range(reps))
    return 2.0 * n ** 3 / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_config(cfg, steps, warmup, budget, turn, settle, rounds=None):
    """{impl: (median s, min s, page faults per step)}, and the number of timed steps.

    Round-robin turns, the order rotating each round: in its turn an implementation first
    runs untimed for ``settle`` seconds (at least one step), so the idle threads of the one
    before (OpenBLAS and OpenMP workers spin for a while after each call) stop competing
    for the cores, then ``turn`` timed steps. Rounds: as many as fit ``budget`` (3 to 100).
    """
    names = list(steps)
    losses = {name: steps[name]() for name in names}  # every implementation, same state
    spread = max(losses.values()) - min(losses.values())
    if not spread <= 1e-4 * max(1.0, abs(losses[names[0]])):
        raise AssertionError(f"{cfg.name}: first-step losses disagree: {losses}")
    first = {name: min(_timed(steps[name]) for _ in range(warmup)) for name in names}
    if rounds is None:
        per_round = sum(max(settle, t) + turn * t for t in first.values())
        rounds = int(max(3, min(100, budget / per_round)))
    times = {name: [] for name in names}
    faults = dict.fromkeys(names, 0)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            while True:
                steps[name]()
                if time.perf_counter() - t0 >= settle:
                    break
            f0 = _minor_faults()
            times[name] += [_timed(steps[name]) for _ in range(turn)]
            faults[name] += _minor_faults() - f0
    n = rounds * turn
    return {k: (float(np.median(t)), float(np.min(t)), faults[k] / n)
            for k, t in times.items()}, n


def _minor_faults() -> int:
    """Minor page faults of this process so far (0 where getrusage is missing)."""
    try:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    except ImportError:
        return 0


def peak_memory(step) -> float:
    """tracemalloc's peak (MB) over one step (allocations made during the step)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        step()
        return tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def profile(step, top: int = 15, seconds: float = 3.0) -> None:
    """cProfile of repeated steps: the functions with the most own time, in ms per step."""
    n = max(3, min(200, int(seconds / max(_timed(step), 1e-6))))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        step()
    prof.disable()
    stats = pstats.Stats(prof).stats  # (file, line, fn) -> (cc, ncalls, tottime, cumtime, ...)
    total = sum(v[2] for v in stats.values())
    print(f"{n} steps, {1e3 * total / n:.2f} ms per step under the profiler")
    print(f"{'own ms/step':>11} {'share':>6} {'cum ms/step':>11} {'calls/step':>10}  function")
    ranked = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    for (file, line, fn), (_, nc, tt, ct, _) in ranked:
        where = f"{os.path.relpath(file) if file.startswith('/') else file}:{line}({fn})"
        print(f"{1e3 * tt / n:>11.3f} {100 * tt / total:>5.1f}% {1e3 * ct / n:>11.3f} "
              f"{nc / n:>10.0f}  {where}")


def machine_line() -> str:
    """The run's first line: date, machine, libraries and threads, load average, commit."""
    return (f"{now()}  " + machine.machine_line(machine_info()) + f"; load average "
            f"{(load_average() or ['?'])[0]}; commit {commit_line(git_commit())}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="seconds-long smoke run (A, B)")
    ap.add_argument("--configs", help="comma-separated subset of A,B,C,D")
    ap.add_argument("--impls", help="comma-separated subset of the implementations")
    ap.add_argument("--rounds", type=int, help="round-robin rounds (default: fit --budget)")
    ap.add_argument("--turn", type=int, help="timed steps per turn (default 5; quick 2)")
    ap.add_argument("--settle", type=float, default=0.2,
                    help="untimed seconds at the start of each turn (quick: 0.05)")
    ap.add_argument("--budget", type=float, default=25.0, help="seconds of timing per config")
    ap.add_argument("--profile", metavar="IMPL", help="print a cProfile of IMPL's step instead")
    ap.add_argument("--keep-heap", action="store_true",
                    help="glibc mallopt: keep freed memory (no page faults for temporaries)")
    ap.add_argument("--threads", type=int,
                    help="BLAS, torch and minigrad threads (default: the machine's)")
    ap.add_argument("--json", metavar="PATH",
                    help="also write every number, the machine and the commit to PATH (JSON)")
    args = ap.parse_args(argv)
    for name in ("rounds", "turn"):
        value = getattr(args, name)
        if value is not None and not 1 <= value <= 1000:
            ap.error(f"--{name}: got {value}; expected an integer in [1, 1000]")
    if not 0 <= args.settle <= 10 or not 0 < args.budget <= 3600:
        ap.error(f"--settle/--budget: got {args.settle}/{args.budget}; expected 0 <= settle "
                 "<= 10 and 0 < budget <= 3600 seconds")
    if args.threads is not None and not 1 <= args.threads <= 256:
        ap.error(f"--threads: got {args.threads}; expected an integer in [1, 256]")
    if args.json:
        try:
            check_output_path(args.json)
        except ValueError as e:
            ap.error(str(e))
    if args.threads:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            ap.error("--threads needs threadpoolctl (or set OPENBLAS_NUM_THREADS and "
                     "OMP_NUM_THREADS before starting)")
        _limits.append(threadpool_limits(args.threads))
        parallel.set_num_threads(args.threads)
        if available("torch"):
            import torch
            torch.set_num_threads(args.threads)
    if args.keep_heap and not keep_heap():
        ap.error("--keep-heap: mallopt is not available (not glibc?)")
    keys = (args.configs or ("A,B" if args.quick else "A,B,C,D")).upper().split(",")
    if any(k not in CONFIGS for k in keys):
        ap.error(f"--configs: expected letters from {','.join(CONFIGS)}, got {args.configs}")
    impls = list(IMPLS)
    skipped = [n for n in ("torch", "autograd") if not available(n)]
    impls = [n for n in impls if n not in skipped]
    if args.impls:
        unknown = [n for n in args.impls.split(",") if n not in IMPLS]
        if unknown:
            ap.error(f"--impls: got {','.join(unknown)}; expected names from {','.join(IMPLS)}")
        impls = [n for n in args.impls.split(",") if n in impls]
    rounds, warmup = (args.rounds or 2, 1) if args.quick else (args.rounds, 2)
    turn, settle = (args.turn or 2, 0.05) if args.quick else (args.turn or 5, args.settle)

    if args.profile:
        for k in keys:
            print(f"== cProfile of {args.profile}, config {CONFIGS[k].name} ==")
            profile(build(CONFIGS[k], [args.profile])[args.profile])
        return 0

    print(machine_line())
    if args.keep_heap:
        print("--keep-heap: glibc keeps freed memory (M_TRIM_THRESHOLD 1 GiB, M_MMAP_THRESHOLD "
              "32 MiB)")
    if skipped:
        print(f"skipped (not importable): {', '.join(skipped)}")
    record = {"benchmark": "train_step", "schema": SCHEMA, "started": now(),
              "argv": sys.argv[1:] if argv is None else list(argv),
              "settings": {"quick": args.quick, "threads": args.threads,
                           "keep_heap": args.keep_heap, "rounds": rounds, "turn": turn,
                           "settle_s": settle, "budget_s": args.budget},
              "machine": machine_info(), "commit": git_commit(),
              "load_average_start": load_average(), "skipped": skipped}
    n_peak, peak_reps = (512, 3) if args.quick else (2048, 5)
    peaks = []  # sampled before each config and at the end: other load only lowers it
    configs = []
    for k in keys:
        peaks.append(matmul_peak(n_peak, peak_reps))
        steps = build(CONFIGS[k], impls)
        res, n = run_config(CONFIGS[k], steps, warmup, args.budget, turn, settle, rounds)
        mems = {name: None if name == "torch" else peak_memory(steps[name]) for name in impls}
        configs.append(config_record(k, res, n, mems))
    peaks.append(matmul_peak(n_peak, peak_reps))
    record["matmul_peak_gflops"] = {"best": max(peaks), "samples": peaks, "n": n_peak,
                                    "reps": peak_reps}
    for c in configs:
        for r in c["results"].values():
            r["peak_fraction"] = r["gflops"] / max(peaks)
    record.update(configs=configs, load_average_end=load_average(), finished=now())
    print_record(record)
    if args.json:
        write_json(args.json, record)
        print(f"\nwrote {args.json}")
    return 0


def config_record(key: str, res: dict, n: int, mems: dict) -> dict:
    """One config's entry of the JSON record: times in ms, ratios of minigrad32 to the others."""
    cfg = CONFIGS[key]
    flops = cfg.step_flops()
    results = {name: {"median_ms": 1e3 * med, "min_ms": 1e3 * best,
                      "gflops": flops / med / 1e9, "peak_mb": mems[name],
                      "faults_per_step": faults}
               for name, (med, best, faults) in res.items()}
    ratios = {f"{BASE}/{other}": {"median": res[BASE][0] / res[other][0],
                                  "min": res[BASE][1] / res[other][1]}
              for other in RATIO_TO if BASE in res and other in res}
    return {"key": key, "name": cfg.name, "shape": cfg._asdict(), "timed_steps": n,
            "mflop_per_step": flops / 1e6, "results": results, "ratios": ratios}


def print_record(record: dict) -> None:
    """The plain-text tables, from the same record the JSON file holds."""
    peak = record["matmul_peak_gflops"]
    print(f"float32 matmul peak: {peak['best']:.1f} GFLOP/s ({peak['n']}^2 np.matmul; the best "
          f"of {peak['reps']} before each config and after the last: "
          f"{', '.join(f'{p:.0f}' for p in peak['samples'])})")
    print("one training step: forward + cross-entropy + backward + SGD on every parameter; "
          "float32 unless named 64;\nGFLOP/s = analytic matmul FLOPs (3x forward) / median "
          "time; peak MB = tracemalloc peak over one step\n(torch: n/a, its CPU allocator does "
          "not report to tracemalloc); faults = minor page faults per step\n")
    print(f"load average (1, 5, 15 min) at start {record['load_average_start']}, "
          f"after the steps {record['load_average_end']}\n")
    print(HEADER)
    for c in record["configs"]:
        for name, r in c["results"].items():
            mem = "n/a" if r["peak_mb"] is None else f"{r['peak_mb']:.1f}"
            print(f"{c['name']:<16} {name:<11} {r['median_ms']:>10.2f} {r['min_ms']:>9.2f} "
                  f"{r['gflops']:>8.1f} {100 * r['peak_fraction']:>6.1f}% {mem:>8} "
                  f"{r['faults_per_step']:>7.0f}")
        print(f"{'':<16} ({c['timed_steps']} timed steps each, {c['mflop_per_step']:.1f} MFLOP "
              "per step)")
    names = list(record["configs"][0]["ratios"]) if record["configs"] else []
    for what in ("median", "min") if names else ():
        print(f"\nratios of {what} times (> 1: {BASE} is slower)")
        print(f"{'config':<16} " + " ".join(f"{n:>21}" for n in names))
        for c in record["configs"]:
            print(f"{c['name']:<16} " + " ".join(f"{c['ratios'][n][what]:>21.2f}"
                                                for n in names))


if __name__ == "__main__":
    sys.exit(main())
