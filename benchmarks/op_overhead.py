"""Per-op overhead of minigrad on tiny arrays, against hand-written NumPy and torch autograd.

On 16 floats the arithmetic is nearly free, so what is timed is bookkeeping: wrapping arrays
in Tensors, recording nodes and VJP closures, the topological sort, and gradient
accumulation. Two workloads, each in float32 and float64:

  short   (a * b).sum(), then backward                         2 ops
  chain   10 elementwise ops (mul add mul sub tanh mul add mul exp mul) + sum, then backward
                                                               11 ops

Three implementations of one training-style step (forward, backward, both gradients):

  numpy     the same math by hand: forward, then the VJPs written out (for the short case
            grad_a = b * 1, grad_b = a * 1); no graph, no Tensors: the floor
  minigrad  Tensors with requires_grad, clear .grad, forward, .backward()
  torch     the same with torch autograd (only if torch imports); threads set to torch's
            default, which is printed

The step functions are checked to agree on the gradients before anything is timed. Each
implementation is warmed up, then the implementations are timed in interleaved rounds (the
order rotates every round) so that drift of a shared machine hits them alike. A round times a
batch of steps and divides; the table reports the median and the minimum over rounds, in
microseconds per step, and the ratios of the medians. The garbage collector is off inside a
timed batch (as ``timeit`` does) and runs between rounds.

    python benchmarks/op_overhead.py              # about half a minute
    python benchmarks/op_overhead.py --quick      # a few seconds, for a smoke test
    python benchmarks/op_overhead.py --repeat 51  # more rounds
    python benchmarks/op_overhead.py --against /tmp/old  # this tree's minigrad against the
        # one of the checkout /tmp/old (git worktree add /tmp/old <commit>), in one process

Only the standard library and NumPy are required; torch is optional.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
from pathlib import Path

import numpy as np

# Benchmark the checkout this script lives in, whether or not it is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine
from timing import run_case

import minigrad as mg

try:
    import torch
except ImportError:  # torch is an optional baseline
    torch = None

N = 16
OPS = {"short": 2, "chain": 11}  # recorded ops per step, the final sum included


# ---------------------------------------------------------------------------------------
# The steps. Each factory returns (step, grads): step() runs one forward+backward and
# grads() returns (grad_a, grad_b) as NumPy arrays from the last step, for the agreement check.
# ---------------------------------------------------------------------------------------
def numpy_short(a, b):
    one = np.ones((), a.dtype)
    out = {}

    def step():
        s = (a * b).sum()  # forward
        g = one  # d s / d s
        out["a"] = b * g  # backward of mul (the sum's VJP broadcasts g; a scalar does that)
        out["b"] = a * g
        return s

    return step, lambda: (out["a"], out["b"])


def _chain_forward(a, b, tanh, exp):
    """The 10 elementwise ops; works on arrays and Tensors alike. Returns every intermediate."""
    t1 = a * b
    t2 = t1 + a
    t3 = t2 * b
    t4 = t3 - a
    t5 = tanh(t4)
    t6 = t5 * a
    t7 = t6 + b
    t8 = t7 * t5
    t9 = exp(t8)
    t10 = t9 * b
    return t1, t2, t3, t4, t5, t6, t7, t8, t9, t10


def numpy_chain(a, b):
    one = np.ones((), a.dtype)
    out = {}

    def step():
        t1, t2, t3, t4, t5, t6, t7, t8, t9, t10 = _chain_forward(a, b, np.tanh, np.exp)
        s = t10.sum()
        g10 = one  # d s / d t10: the sum's VJP broadcasts g, a scalar does that
        g9 = g10 * b  # t10 = t9 * b
        gb = g10 * t9
        g8 = g9 * t9  # t9 = exp(t8)
        g7 = g8 * t5  # t8 = t7 * t5
        g5 = g8 * t7
        g6 = g7  # t7 = t6 + b
        gb = gb + g7
        g5 = g5 + g6 * a  # t6 = t5 * a
        ga = g6 * t5
        g4 = g5 * (1 - t5 * t5)  # t5 = tanh(t4)
        g3 = g4  # t4 = t3 - a
        ga = ga - g4
        g2 = g3 * b  # t3 = t2 * b
        gb = gb + g3 * t2
        g1 = g2  # t2 = t1 + a
        ga = ga + g2
        ga = ga + g1 * b  # t1 = a * b
        gb = gb + g1 * a
        out["a"], out["b"] = ga, gb
        return s

    return step, lambda: (out["a"], out["b"])
def minigrad_case(loss):
    """step() of a graph ``loss(a, b, F)`` on two leaves of ``lib`` (this checkout's minigrad,
    or another tree's under ``--against``), and its gradients."""
    def make(a, b, lib=mg):
        ta = lib.Tensor(a, requires_grad=True)
        tb = lib.Tensor(b, requires_grad=True)
        functional = lib.F

        def step():
            ta.grad = None
            tb.grad = None
            loss(ta, tb, functional).backward()

        return step, lambda: (ta.grad, tb.grad)
    return make


def torch_case(loss):
    """The same with torch autograd."""
    def make(a, b):
        ta = torch.from_numpy(a.copy()).requires_grad_(True)
        tb = torch.from_numpy(b.copy()).requires_grad_(True)

        def step():
            ta.grad = None
            tb.grad = None
            loss(ta, tb).backward()

        return step, lambda: (ta.grad.numpy(), tb.grad.numpy())
    return make


minigrad_short = minigrad_case(lambda a, b, F: (a * b).sum())
torch_short = torch_case(lambda a, b: (a * b).sum())
minigrad_chain = minigrad_case(lambda a, b, F: _chain_forward(a, b, F.tanh, F.exp)[-1].sum())
torch_chain = torch_case(lambda a, b: _chain_forward(a, b, torch.tanh, torch.exp)[-1].sum())

FACTORIES = {
    "short": {"numpy": numpy_short, "minigrad": minigrad_short, "torch": torch_short},
    "chain": {"numpy": numpy_chain, "minigrad": minigrad_chain, "torch": torch_chain},
}


def check_agreement(grads: dict, dtype) -> None:
    ref_a, ref_b = grads["numpy"]()
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for name, get in grads.items():
        ga, gb = get()
        for what, got, ref in (("a", ga, ref_a), ("b", gb, ref_b)):
            if got.dtype != ref.dtype or not np.allclose(got, ref, rtol=tol, atol=tol):
                raise SystemExit(
                    f"{name}: grad_{what} disagrees with the hand-written NumPy gradient "
                    f"(dtype {got.dtype} vs {ref.dtype}, max |diff| "
                    f"{np.max(np.abs(got.astype(np.float64) - ref)):.3g})"
                )


# ---------------------------------------------------------------------------------------
# Another tree in the same process (--against): its minigrad under another package name
# ---------------------------------------------------------------------------------------
def load_tree(root: Path, alias: str):
    """The ``minigrad`` package of the checkout at ``root``, imported as ``alias`` (its modules
    import one another relatively), so that two trees are timed in one process."""
    init = root / "minigrad" / "__init__.py"
    spec = importlib.util.spec_from_file_location(alias, init,
                                                  submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module
    spec.loader.exec_module(module)
    return module


def compare_trees(others: list, rounds: int, warmup_s: float, batch_s: float) -> None:
    """This checkout's minigrad against each tree in ``others``, interleaved round by round;
    prints per case the medians, new/old as the ratio of medians and as the median of the
    per-round ratios (a round times every tree back to back: the paired statistic), and the
    marginal cost of one more op per tree."""
    libs = {"this": mg}
    for k, root in enumerate(others):
        libs[Path(root).name or f"tree{k}"] = load_tree(Path(root).resolve(), f"_minigrad_{k}")
    rng = np.random.default_rng(0)
    stats = {}
    print(f"{'case':<14} {'tree':<16} {'med':>8} {'min':>8} | {'new/old med':>11} "
          f"{'paired med':>10} {'min':>6}")
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal(N).astype(dtype)
        b = rng.standard_normal(N).astype(dtype)
        dt = np.dtype(dtype).name
        for case in ("short", "chain"):
            steps, grads = {}, {}
            for label, lib in libs.items():
                steps[label], grads[label] = FACTORIES[case]["minigrad"](a, b, lib)
                steps[label]()
            for label in libs:  # the same arithmetic: the same bits
                if not all(np.array_equal(x, y)
                           for x, y in zip(grads[label](), grads["this"](), strict=True)):
                    print(f"  note: {label}'s gradients differ from this tree's in {case} {dt}")
            samples = run_case(steps, rounds, warmup_s, batch_s)
            for label in libs:
                stats[(case, dt, label)] = samples[label]
                med, lo = statistics.median(samples[label]), min(samples[label])
                row = f"{case + ' ' + dt:<14} {label:<16} {_us(med)} {_us(lo)} |"
                if label != "this":
                    new = samples["this"]
                    paired = statistics.median(
                        x / y for x, y in zip(new, samples[label], strict=True))
                    row += (f" {statistics.median(new) / med:11.3f} {paired:10.3f}"
                            f" {min(new) / lo:6.3f}")
                print(row)
    extra = OPS["chain"] - OPS["short"]
    print(f"\nmarginal cost of one elementwise op, (chain - short) / {extra}, microseconds "
          "(from the minima; new/old)")
    for dt in ("float32", "float64"):
        per = {label: (min(stats[("chain", dt, label)]) - min(stats[("short", dt, label)]))
               / extra for label in libs}
        print(f"{dt:<10}" + "".join(
            f" {label} {_us(per[label]).strip()}" + ("" if label == "this" else
                                                     f" ({per['this'] / per[label]:.3f})")
            for label in libs))


# ---------------------------------------------------------------------------------------
# Machine description
# ---------------------------------------------------------------------------------------
def machine_info(torch_threads) -> list:
    """(name, value) rows: the CPU, the cores, Python, NumPy, the BLAS pools and torch."""
    usable = len(machine.usable_cores())
    pools = [f"{b.get('internal_api')} {b.get('version')} ({b.get('architecture')}, "
             f"{b.get('num_threads')} threads)" for b in machine.blas_info()
             if b.get("user_api") == "blas"]
    rows = [
        ("CPU", machine.cpu_model()),
        ("cores", f"{os.cpu_count()} logical, {usable} usable by this process"),
        ("Python", f"{platform.python_version()} ({platform.system()} {platform.machine()})"),
        ("NumPy", np.__version__),
        ("BLAS", "; ".join(pools) or "unknown"),
    ]
    if torch is not None:
        rows.append(("torch",
                     f"{torch.__version__}, {torch_threads} intra-op threads (its default)"))
    else:
        rows.append(("torch", "not importable: torch column skipped"))
    return rows


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------
def _us(x: float) -> str:
    return f"{x * 1e6:8.2f}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=None,
                        help="timed rounds per case (default 31; 7 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="short run: fewer rounds, shorter batches and warm-up")
    parser.add_argument("--against", action="append", default=[], metavar="DIR",
                        help="time this checkout's minigrad against the one in the checkout "
                             "DIR (repeatable), in one process, instead of the table")
    args = parser.parse_args(argv)
    rounds = args.repeat if args.repeat is not None else (7 if args.quick else 31)
    if rounds < 1:
        parser.error("--repeat must be at least 1")
    warmup_s, batch_s = (0.05, 0.005) if args.quick else (0.3, 0.03)
    for root in args.against:
        if not (Path(root) / "minigrad" / "__init__.py").is_file():
            parser.error(f"--against: got {root}, which has no minigrad/__init__.py; expected "
                         "the root of a minigrad checkout (git worktree add DIR <commit>)")
    if args.against:
        print(f"this tree against {', '.join(args.against)}: {rounds} interleaved rounds, "
              f"~{batch_s * 1e3:g} ms per batch; load average {os.getloadavg()}")
        compare_trees(args.against, rounds, warmup_s, batch_s)
        print(f"load average at the end {os.getloadavg()}")
        return

    torch_threads = None
    if torch is not None:
        torch_threads = torch.get_num_threads()  # the default for this process
        torch.set_num_threads(torch_threads)

    print("Per-op overhead: forward + backward on", N, "elements")
    for key, value in machine_info(torch_threads):
        print(f"  {key:6s} {value}")
    print(f"  rounds {rounds} per case, ~{batch_s * 1e3:g} ms per timed batch, "
          f"{warmup_s:g} s warm-up per implementation")
    print()

    impls = ["numpy", "minigrad"] + (["torch"] if torch is not None else [])
    results = {}
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal(N).astype(dtype)
        b = rng.standard_normal(N).astype(dtype)
        for case in ("short", "chain"):
            steps, grads = {}, {}
            for name in impls:
                steps[name], grads[name] = FACTORIES[case][name](a, b)
                steps[name]()
            check_agreement(grads, dtype)
            results[(case, np.dtype(dtype).name)] = run_case(steps, rounds, warmup_s, batch_s)

    stats = {}  # (case, dtype, impl) -> (median, min) in seconds per step
    for (case, dt), samples in results.items():
        for name in impls:
            stats[(case, dt, name)] = (statistics.median(samples[name]), min(samples[name]))
    baselines = ["numpy"] + (["torch"] if torch is not None else [])

    def ratios(get):
        """'mg/np' and 'mg/torch' columns, each as median ratio and min ratio."""
        cells = ""
        for base in baselines:
            mg_med, mg_min = get("minigrad")
            b_med, b_min = get(base)
            cells += f" {mg_med / b_med:12.2f}{mg_min / b_min:7.2f} |"
        return cells

    ratio_head = "".join(f" {'mg/' + ('np' if b == 'numpy' else b) + ' med':>12}{'min':>7} |"
                         for b in baselines)
    head = f"{'case':<14}{'ops':>4} |"
    for name in impls:
        head += f" {name + ' med':>13}{'min':>9} |"
    head += ratio_head
    print("microseconds per step (median and min over rounds); ratios minigrad / baseline")
    print(head)
    print("-" * len(head))
    for (case, dt) in results:
        row = f"{case + ' ' + dt:<14}{OPS[case]:>4} |"
        for name in impls:
            m, lo = stats[(case, dt, name)]
            row += f" {_us(m):>13}{_us(lo):>9} |"
        row += ratios(lambda name: stats[(case, dt, name)])  # noqa: B023 (called at once)
        print(row)

    print()
    extra = OPS["chain"] - OPS["short"]
    print(f"marginal cost of one elementwise op (forward + backward) = (chain - short) / {extra},"
          " microseconds")
    head = f"{'dtype':<10}" + "".join(f" {name + ' med':>13}{'min':>9} |" for name in impls)
    print(head + ratio_head)
    print("-" * len(head + ratio_head))
    for dt in ("float32", "float64"):
        per = {}
        for name in impls:
            (c_med, c_min), (s_med, s_min) = stats[("chain", dt, name)], stats[("short", dt, name)]
            per[name] = ((c_med - s_med) / extra, (c_min - s_min) / extra)
        row = f"{dt:<10}" + "".join(f" {_us(per[n][0]):>13}{_us(per[n][1]):>9} |" for n in impls)
        print(row + ratios(per.__getitem__))
    print()
    print("Absolute times on a shared machine drift; compare the ratios (min ratios are the")
    print("least disturbed by other load, median ratios show the typical step).")

if __name__ == "__main__":
    main()
