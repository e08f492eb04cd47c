"""How a TinyViT training step's time and memory grow with the work, one axis at a time.

    python benchmarks/scaling.py                 # full study, about 10 minutes on 2 cores
    python benchmarks/scaling.py --quick         # seconds per axis: tiny sizes, few rounds
    python benchmarks/scaling.py --json scaling.json --figure docs/figures/scaling.png \\
        --doc docs/scaling.md                    # also the record, the figure, the doc table

Axes, each grown alone from a base (batch 16, 32x32x3 images, patch 4, D 64, 4 heads, MLP 2D):
  tokens28  28x28x1 images, patch 14, 7, 4, 2, 1 (T = N + 1 = 5 ... 785 tokens), batch 8
  tokens32  32x32x3 images, patch 16, 8, 4, 2, 1 (T = 5 ... 1025), batch 8
  batch     B = 2 ... 128
  width     D = 16 ... 512 (4 heads, MLP 2D)
  depth     encoder blocks L = 1 ... 8 (``TinyViT(depth=L)``; minigrad and the hand-derived
            step, which loops its block backward over the blocks: the PyTorch baseline has
            one block, so it is timed at L = 1 only)
  image     16 ... 224 pixels at patch 8, batch 8 (tokens grow as the image's area)
Implementations: minigrad32 (TinyViT + F.cross_entropy + backward + SGD), manual
(vit/model/manual.py) and torch (benchmarks/baselines.py, if importable), built from the same
weights and timed interleaved at each point (train_step.run_config: round-robin turns with a
settle period); the machine's default threads. Per point, minigrad's attention core
(F.self_attention forward + backward) and its four projections (F.linear qkv, proj, fc1,
fc2, forward + backward) are timed alone on the step's shapes, in turn with minigrad's whole
step: their shares of the step.
Peak memory: each implementation runs in a fresh child process (glibc's default malloc): a
warm-up step, then the peak resident memory during one more step above the resident memory
just before it (Linux's VmHWM, reset through /proc/self/clear_refs: what the OS had to
provide, for all three alike) and, for the NumPy ones, tracemalloc's peak over a third step.
Exponents: least squares of log(time) on log(size) over the larger half of each axis.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import inspect
import io
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from minigrad import F, Tensor
from minigrad.runtime.heap import keep_heap
from vit.model.tinyvit import TinyViT

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_step as ts
from machine import (
    available,
    check_output_path,
    git_commit,
    load_average,
    machine_info,
    machine_line,
    now,
    write_json,
)

HAS_DEPTH = "depth" in inspect.signature(TinyViT).parameters
BEGIN, END = "<!-- scaling:begin -->", "<!-- scaling:end -->"
IMPLS = ("minigrad32", "manual", "torch")
LABELS = {"tokens28": "tokens T (28x28x1, patch 14..1)",
          "tokens32": "tokens T (32x32x3, patch 16..1)", "batch": "batch B", "width": "width D",
          "depth": "depth (blocks)", "image": "image side (patch 8)"}


def cfg(batch=16, image=32, channels=3, patch=4, dim=64, heads=4, depth=1):
    name = f"B{batch} {image}px/{patch} D{dim}" + (f" L{depth}" if depth > 1 else "")
    return ts.Config(name, batch, image, channels, patch, dim, heads, 2 * dim, 10), depth


def axes(quick: bool) -> dict:
    """{axis: [(x, (Config, depth)), ...]}, x being what the axis grows."""
    def pick(full, short):
        return short if quick else full
    out = {
        "tokens28": [((28 // p) ** 2 + 1, cfg(8, 28, 1, p))
                     for p in pick((14, 7, 4, 2, 1), (14, 7))],
        "tokens32": [((32 // p) ** 2 + 1, cfg(8, 32, 3, p))
                     for p in pick((16, 8, 4, 2, 1), (16, 8))],
        "batch": [(b, cfg(batch=b)) for b in pick((2, 4, 8, 16, 32, 64, 128), (2, 4))],
        "width": [(d, cfg(dim=d)) for d in pick((16, 32, 64, 128, 256, 512), (16, 32))],
        "image": [(s, cfg(8, s, 3, 8)) for s in pick((16, 32, 64, 128, 224), (16, 32))],
    }
    if HAS_DEPTH:
        out["depth"] = [(L, cfg(depth=L)) for L in pick((1, 2, 4, 8), (1, 2))]
    return out


def build(config, depth: int, impls) -> dict:
    """{impl: step()} from one set of weights (depth > 1: minigrad and the hand-derived step;
    the PyTorch baseline has one block)."""
    if depth == 1:
        return ts.build(config, impls)
    state = TinyViT(**config.model_kwargs(), depth=depth, dtype=np.float64, seed=0).state_dict()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((config.batch, config.channels, config.image,
                             config.image)).astype(np.float32)
    y = rng.integers(0, config.classes, config.batch)

    def make_minigrad():
        model = TinyViT(**config.model_kwargs(), depth=depth, dtype=np.float32)
        model.load_state_dict({k: v.astype(np.float32) for k, v in state.items()})
        params, xt = list(model.parameters()), Tensor(x)

        def step():
            model.zero_grad()
            loss = F.cross_entropy(model(xt), y)
            loss.backward()
            for p in params:
                p.data -= ts.LR * p.grad
            return loss.item()
        return step
    makers = {"minigrad32": make_minigrad, "manual": lambda: ts.make_manual(config, state, x, y)}
    return {name: makers[name]() for name in impls if name in makers}


# ---- the parts of minigrad's step: attention core against the projections -------------------
def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def part_times(config, step, reps: int) -> dict:
    """Median seconds of minigrad's whole ``step``, of F.self_attention and of the four
    F.linear products (forward + backward each, on the step's shapes, float32), timed in
    turn, so that the shares compare times taken at the same moments."""
    B, T, D, Fh = config.batch, (config.image // config.patch) ** 2 + 1, config.dim, config.mlp
    rng = np.random.default_rng(1)

    def leaf(*shape):
        return Tensor(rng.standard_normal(shape).astype(np.float32) / np.sqrt(shape[0]),
                      requires_grad=True)
    qkv = leaf(B, T, 3 * D)
    g_att = rng.standard_normal((B, T, D)).astype(np.float32)
    lins = [(leaf(B, T, k), leaf(k, n), leaf(n) if bias else None,
             rng.standard_normal((B, T, n)).astype(np.float32))
            for k, n, bias in ((D, 3 * D, False), (D, D, False), (D, Fh, True), (Fh, D, True))]

    def attention():
        F.self_attention(qkv, config.heads).backward(g_att)

    def linears():
        for x, w, b, g in lins:
            F.linear(x, w, b).backward(g)
    parts = {"step": step, "attention": attention, "projections": linears}
    times = {k: [] for k in parts}
    for fn in parts.values():  # warm-up
        fn()
    for _ in range(reps):
        for k, fn in parts.items():
            times[k].append(_timed(fn))
    return {k: float(np.median(v)) for k, v in times.items()}


# ---- peak memory in a fresh process -------------------------------------------------------
def _status_kib(key: str) -> int | None:
    """A ``VmRSS``/``VmHWM`` line of /proc/self/status in KiB (None off Linux)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))
    except (OSError, StopIteration, ValueError):
        return None


def child_memory(axis: str, index: int, impl: str, quick: bool) -> dict:
    """Run in the child: after a warm-up step, the peak resident memory during one step above
    the resident memory before it (Linux: VmHWM reset through /proc/self/clear_refs; else the
    growth of ru_maxrss); for the NumPy implementations, tracemalloc's peak over one more."""
    config, depth = axes(quick)[axis][index][1]
    step = build(config, depth, [impl])[impl]
    step()
    gc.collect()
    rss = _status_kib("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        how = "VmHWM"
    except OSError:
        rss, how = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "ru_maxrss"
    step()
    peak = _status_kib("VmHWM") if how == "VmHWM" else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    traced = None if impl == "torch" else ts.peak_memory(step)
    return {"rss_mb": (peak - rss) / 1024, "how": how, "tracemalloc_mb": traced}


def memory(axis: str, index: int, impl: str, quick: bool) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", f"{axis}:{index}:{impl}"]
    proc = subprocess.run(cmd + (["--quick"] if quick else []), capture_output=True, text=True,
                          timeout=300)
    if proc.returncode:
        raise RuntimeError(f"memory child {axis}:{index}:{impl} failed: {proc.stderr[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---- the study ----------------------------------------------------------------------------
def exponent(xs, ys) -> float | None:
    """Slope of log y on log x over the larger half of the points (at least 2)."""
    pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y and y > 0]
    pts = pts[(len(pts) - 1) // 2:]  # 5 points -> the last 3, 7 -> 4, 2 -> both
    if len(pts) < 2:
        return None
    lx, ly = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(lx, ly, 1)[0])


def study(args) -> dict:
    impls = [i for i in IMPLS if i != "torch" or available("torch")]
    warmup, turn, settle, budget = (1, 2, 0.02, 1.0) if args.quick else (2, 3, 0.1, args.budget)
    plan = axes(args.quick)
    chosen = args.axes.split(",") if args.axes else list(plan)
    out = {}
    for axis in chosen:
        points = []
        for index, (x, (config, depth)) in enumerate(plan[axis]):
            names = impls if depth == 1 else [i for i in impls if i != "torch"]
            steps = build(config, depth, names)
            res, n = ts.run_config(config, steps, warmup, budget, turn, settle,
                                   2 if args.quick else None)
            parts = part_times(config, steps["minigrad32"], 3 if args.quick else 7)
            del steps
            mems = {i: memory(axis, index, i, args.quick) for i in names} if args.memory \
                else {}
            med = {i: 1e3 * res[i][0] for i in names}
            points.append({
                "x": x, "config": config._asdict(), "depth": depth, "timed_steps": n,
                "median_ms": med, "min_ms": {i: 1e3 * res[i][1] for i in names},
                "memory": mems,
                "attention_ms": 1e3 * parts["attention"],
                "projections_ms": 1e3 * parts["projections"],
                "attention_share": parts["attention"] / parts["step"],
                "projections_share": parts["projections"] / parts["step"],
                "ratios": {f"minigrad32/{i}": med["minigrad32"] / med[i]
                           for i in names if i != "minigrad32"},
                "load_average": load_average()})
            print(f"{axis:<9} {x:>5}  " + "  ".join(f"{i} {med[i]:8.2f} ms" for i in names)
                  + f"  attention {1e3 * parts['attention']:.2f} / projections "
                  f"{1e3 * parts['projections']:.2f} ms", flush=True)
        xs = [p["x"] for p in points]
        fits = {i: exponent(xs, [p["median_ms"].get(i) for p in points]) for i in impls}
        fits.update({f"{i} min": exponent(xs, [p["min_ms"].get(i) for p in points])
                     for i in impls})
        fits.update({f"{i} memory": exponent(xs, [p["memory"].get(i, {}).get("rss_mb")
                                                 for p in points]) for i in impls})
        fits["attention"] = exponent(xs, [p["attention_ms"] for p in points])
        fits["projections"] = exponent(xs, [p["projections_ms"] for p in points])
        over = next((p["x"] for p in points if p["attention_ms"] > p["projections_ms"]), None)
        out[axis] = {"label": LABELS[axis], "points": points, "exponents": fits,
                     "attention_overtakes_at": over}
    return out


def profile_worst(result: dict, quick: bool) -> dict | None:
    """cProfile of minigrad's step at the point where minigrad32/torch is largest."""
    worst = max(((p["ratios"]["minigrad32/torch"], axis, i) for axis, r in result.items()
                 for i, p in enumerate(r["points"]) if "minigrad32/torch" in p["ratios"]),
                default=None)
    if worst is None:
        return None
    ratio, axis, index = worst
    config, depth = axes(quick)[axis][index][1]
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        ts.profile(build(config, depth, ["minigrad32"])["minigrad32"], top=12,
                   seconds=0.5 if quick else 4.0)
    return {"axis": axis, "x": result[axis]["points"][index]["x"], "config": config.name,
            "ratio": ratio, "profile": text.getvalue()}


def depth_ratios(seconds: float, depths=(1, 2, 4, 8)) -> dict:
    """Each depth's step against depth 1's, for minigrad32 and manual, every step of every
    depth timed in one round-robin for ``seconds`` (a load that changes over the run then
    slows all of them alike): {impl: {L: (ratio of medians, median ms)}} and, per depth, the
    median of the paired minigrad32/manual ratios."""
    steps = {}
    for L in depths:
        config, _ = cfg(depth=L)
        for impl, step in build(config, L, ["minigrad32", "manual"]).items():
            steps[impl, L] = step
    for step in steps.values():
        step()
    times: dict = {key: [] for key in steps}
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times[next(iter(times))]) < 3:
        for key, step in steps.items():
            times[key].append(_timed(step))
    out: dict = {"rounds": len(times[next(iter(times))])}
    for impl in ("minigrad32", "manual"):
        base = np.median(times[impl, 1])
        out[impl] = {L: (float(np.median(times[impl, L]) / base),
                         1e3 * float(np.median(times[impl, L]))) for L in depths}
    out["minigrad32/manual"] = {L: float(np.median(np.array(times["minigrad32", L])
                                                   / np.array(times["manual", L])))
                                for L in depths}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, two rounds (a test)")
    ap.add_argument("--axes", help=f"comma-separated subset of {','.join(LABELS)}")
    ap.add_argument("--budget", type=float, default=6.0, help="seconds of timing per point")
    ap.add_argument("--no-memory", dest="memory", action="store_false",
                    help="skip the child processes that measure peak memory")
    ap.add_argument("--json", metavar="PATH", help="write the record as JSON")
    ap.add_argument("--figure", metavar="PNG", help="draw the log-log figure")
    ap.add_argument("--doc", metavar="MD", help=f"replace the {BEGIN} region of MD")
    ap.add_argument("--depth-ratios", type=float, metavar="SECONDS",
                    help="only time depth 1, 2, 4, 8 round-robin for SECONDS and print each "
                    "depth's step against depth 1's")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # axis:index:impl, a memory child
    args = ap.parse_args(argv)
    if args.depth_ratios is not None:
        if not 1 <= args.depth_ratios <= 3600:
            ap.error(f"--depth-ratios: got {args.depth_ratios}; expected 1 to 3600 seconds")
        keep_heap()
        print(f"{now()}  {machine_line(machine_info())}; load average {load_average()}")
        result = depth_ratios(args.depth_ratios)
        print(json.dumps(result, indent=1) + f"\nload average {load_average()}")
        return 0
    if args.child:
        axis, index, impl = (args.child.split(":") + ["", "", ""])[:3]
        plan = axes(args.quick)
        if axis not in plan or not index.isdigit() or int(index) >= len(plan[axis]) \
                or impl not in IMPLS:
            ap.error(f"--child: got {args.child!r}; expected axis:index:impl")
        print(json.dumps(child_memory(axis, int(index), impl, args.quick)))
        return 0
    plan = axes(args.quick)
    if args.axes:
        bad = [a for a in args.axes.split(",") if a not in plan]
        if bad:
            skip = " (TinyViT has no depth= yet)" if "depth" in bad and not HAS_DEPTH else ""
            ap.error(f"--axes: got {','.join(bad)}; expected names from {','.join(plan)}{skip}")
    if not 0.1 <= args.budget <= 120:
        ap.error(f"--budget: got {args.budget}; expected 0.1 to 120 seconds per point")
    for option in ("json", "figure", "doc"):
        if getattr(args, option):
            try:
                check_output_path(getattr(args, option), "--" + option)
            except ValueError as e:
                ap.error(str(e))
    keep_heap()  # as `python -m vit train` does: a warm heap for all three alike
    info = machine_info()
    print(f"{now()}  {machine_line(info)}; load average {load_average()}")
    if not HAS_DEPTH:
        print("depth axis skipped: TinyViT takes no depth= argument (one encoder block)")
    record = {"benchmark": "scaling", "schema": 1, "started": now(), "quick": args.quick,
              "machine": info, "commit": git_commit(), "load_average_start": load_average(),
              "depth_axis": HAS_DEPTH}
    t0 = time.perf_counter()
    record["axes"] = study(args)
    record["worst"] = profile_worst(record["axes"], args.quick)
    record.update(load_average_end=load_average(), finished=now(),
                  seconds=time.perf_counter() - t0)
    from report import update_doc
    from report_scaling import scaling_figure, scaling_markdown
    text = scaling_markdown(record)
    print("\n" + text)
    if record["worst"]:
        print(record["worst"]["profile"])
    if args.json:
        write_json(args.json, record)
    if args.figure:
        scaling_figure(record, args.figure)
    if args.doc:
        update_doc(args.doc, text, BEGIN, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
