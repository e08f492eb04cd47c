"""One config's training step in two or more checkouts, timed in alternating turns.

    python benchmarks/step_ab.py --against /tmp/old                 # minigrad32 on config A
    python benchmarks/step_ab.py --against /tmp/old --impls minigrad32,manual,torch --turns 30

Each checkout (this one, then every ``--against DIR``: a ``git worktree add --detach DIR
<commit>``) and implementation runs in its own worker process, which imports that tree's
``minigrad`` and ``vit`` and builds benchmarks/train_step.py's step from the same weights.
The workers take turns: each runs ``--steps`` timed steps while the others wait, so drift of
this machine's speed over minutes reaches every worker alike. Prints the median over turns of
each worker's per-turn median, and for every worker against the first its **paired ratio**:
the median of the per-turn ratios (turns are adjacent in time, so this is the steadiest
statistic on a machine whose speed drifts). ``minigrad32`` of one tree against ``torch`` of
the same tree is the ratio docs/performance.md quotes for config A; the paired runs are in
benchmarks/results/HISTORY.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

IMPLS = ("minigrad32", "minigrad64", "fused32", "manual", "torch")
HERE = os.path.dirname(os.path.abspath(__file__))
_LIMITS = []  # keeps a worker's threadpoolctl limit alive


def worker(root: str, impl: str, config: str, warmup: int, threads: int | None) -> None:
    """The worker process: build ``impl``'s step from the tree at ``root``, then for every
    line ``N`` on stdin time N steps and answer ``median_ns min_ns``. ``threads``: one setting
    for BLAS, minigrad and torch, as train_step.py's ``--threads``."""
    sys.path[:0] = [root, os.path.join(root, "benchmarks")]
    import train_step  # the tree's own, after its path is set
    if threads:
        from threadpoolctl import threadpool_limits

        try:  # the tree's own
            from minigrad.runtime import parallel
        except ImportError:  # a checkout from before minigrad/runtime/
            from minigrad import parallel
        _LIMITS.append(threadpool_limits(threads))
        parallel.set_num_threads(threads)
        if impl == "torch":
            import torch
            torch.set_num_threads(threads)
    step = train_step.build(train_step.CONFIGS[config], [impl])[impl]
    for _ in range(warmup):
        step()
    for line in sys.stdin:
        times = []
        for _ in range(int(line)):
            start = time.perf_counter_ns()
            step()
            times.append(time.perf_counter_ns() - start)
        print(int(statistics.median(times)), min(times), flush=True)


def tree(path: str, parser: argparse.ArgumentParser) -> str:
    """``path`` as an absolute checkout root, or a usage error naming what it lacks."""
    root = os.path.abspath(path)
    for need in ("minigrad/__init__.py", "vit/__init__.py", "benchmarks/train_step.py"):
        if not os.path.isfile(os.path.join(root, need)):
            parser.error(f"--against: got {path}, which has no {need}; expected a checkout "
                         "of this project")
    return root


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", action="append", default=[], metavar="DIR",
                        help="another checkout (repeatable)")
    parser.add_argument("--config", default="A", choices="ABCD")
    parser.add_argument("--impls", default="minigrad32",
                        help=f"comma-separated subset of {','.join(IMPLS)}")
    parser.add_argument("--their-impl", default=None, metavar="IMPL",
                        help="the implementation the --against trees run (default: each of "
                        "--impls); e.g. fused32 here against minigrad32 of a tree that "
                        "chose the fused path by size")
    parser.add_argument("--turns", type=int, default=16, help="turns per worker")
    parser.add_argument("--steps", type=int, default=150, help="timed steps per turn")
    parser.add_argument("--warmup", type=int, default=50, help="untimed steps at start")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS, torch and minigrad threads (default: the machine's)")
    parser.add_argument("--worker", nargs=2, metavar=("ROOT", "IMPL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker[0], args.worker[1], args.config, args.warmup, args.threads)
        return 0
    impls = args.impls.split(",")
    if args.their_impl is not None and args.their_impl not in IMPLS:
        parser.error(f"--their-impl: got {args.their_impl!r}; expected one of "
                     f"{', '.join(IMPLS)}")
    bad = [i for i in impls if i not in IMPLS]
    if bad or not impls:
        parser.error(f"--impls: got {args.impls!r}; expected a comma-separated subset of "
                     f"{', '.join(IMPLS)}")
    for name, value in (("--turns", args.turns), ("--steps", args.steps)):
        if not 1 <= value <= 100_000:
            parser.error(f"{name}: got {value}; expected an integer in [1, 100000]")
    if not 0 <= args.warmup <= 100_000:
        parser.error(f"--warmup: got {args.warmup}; expected an integer in [0, 100000]")
    if args.threads is not None and not 1 <= args.threads <= 1024:
        parser.error(f"--threads: got {args.threads}; expected an integer in [1, 1024]")
    extra = [] if args.threads is None else ["--threads", str(args.threads)]
    roots = [tree(os.path.dirname(HERE), parser)] + [tree(p, parser) for p in args.against]
    labels, procs = [], []
    for k, root in enumerate(roots):
        for impl in impls if k == 0 or args.their_impl is None else [args.their_impl]:
            labels.append(f"{'this' if k == 0 else os.path.basename(root) or root}:{impl}")
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--config", args.config,
                 "--warmup", str(args.warmup), *extra, "--worker", root, impl],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    medians = [[] for _ in procs]
    minima = [[] for _ in procs]
    try:
        for _ in range(args.turns):
            for k, proc in enumerate(procs):
                proc.stdin.write(f"{args.steps}\n")
                proc.stdin.flush()
                med, low = map(int, proc.stdout.readline().split())
                medians[k].append(med / 1000)
                minima[k].append(low / 1000)
    finally:
        for proc in procs:
            proc.stdin.close()
            proc.wait()
    print(f"config {args.config}: {args.turns} turns of {args.steps} steps per worker; "
          f"load average {os.getloadavg()[0]:.2f} at the end")
    width = max(len(label) for label in labels)
    for label, med, low in zip(labels, medians, minima, strict=True):
        print(f"{label:<{width}}  median {statistics.median(med):8.1f} us  "
              f"min {min(low):8.1f} us")
    for label, med in zip(labels[1:], medians[1:], strict=True):
        ratios = [a / b for a, b in zip(med, medians[0], strict=True)]
        print(f"{label} / {labels[0]}: paired median {statistics.median(ratios):.3f} "
              f"(turns {min(ratios):.3f}-{max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
