"""How much slower each implementation's training step gets while another process keeps one
core busy, on configs B, C and D of train_step.py.

    python benchmarks/busy.py                    # B, C, D: a few minutes
    python benchmarks/busy.py --quick            # config A-sized smoke run (a test)
    python benchmarks/busy.py --json busy.json --doc docs/performance.md
    python benchmarks/busy.py --baseline ceafb8e --variants "minigrad32,minigrad32 1 thread"

Variants, interleaved in one process (round-robin turns, as train_step.run_config):
  minigrad32            the machine's default threads (BLAS, minigrad's block pool)
  minigrad32 1 thread   minigrad's pool off and BLAS held to one thread for the step
  manual                vit/model/manual.py, default BLAS threads
  torch                 PyTorch eager, its default intra-op threads
  torch 1 thread        torch.set_num_threads(1) for the step
  minigrad32 REF        with --baseline REF: minigrad's default threads, its parallel regions
                        scheduled by minigrad/runtime/parallel.py's _fan_out as of commit REF
                        (loaded from git into this process, put in place around each step), so
                        that two scheduling policies meet the same load in one process
The thread settings are applied on every call and undone after it, so the variants can share
a process. Phases alternate idle, busy, idle, busy; in a busy phase a child process spins in
pure Python (one core's worth of work) for at most a bounded time, and is killed when the
phase ends (or the run fails). Slowdown = busy median / idle median, each the lower of its two
phases' medians (a burst of outside load can hit one phase), and the same of minima.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from minigrad.runtime import blas, parallel
from minigrad.runtime.heap import keep_heap

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

BEGIN, END = "<!-- busy:begin -->", "<!-- busy:end -->"
VARIANTS = ("minigrad32", "minigrad32 1 thread", "manual", "torch", "torch 1 thread")
SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def baseline_scheduler(ref: str):
    """``_fan_out`` from ``minigrad/runtime/parallel.py`` at commit ``ref`` of this repository,
    loaded as a module of this process's minigrad package (its relative imports, ``.blas``
    and ``.checks``, are today's). Raises ValueError naming --baseline if there is none."""
    if not re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z._/-]{0,99}", ref):
        raise ValueError(f"--baseline: got {ref!r}; expected a commit hash, tag or branch")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(["git", "show", f"{ref}:minigrad/runtime/parallel.py"], cwd=root,
                          capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise ValueError(f"--baseline: got {ref!r}; expected a commit of this repository "
                         f"with minigrad/runtime/parallel.py ({proc.stderr.strip()[:200]})")
    name = "minigrad._busy_baseline_parallel"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "minigrad"
    exec(compile(proc.stdout, f"{ref}:minigrad/runtime/parallel.py", "exec"), module.__dict__)
    if not callable(getattr(module, "_fan_out", None)):
        raise ValueError(f"--baseline: {ref}:minigrad/runtime/parallel.py has no _fan_out")
    return module


def with_scheduler(step, old):
    """``step`` with ``old._fan_out`` in place of minigrad's for its parallel regions (at
    today's thread count), put back after each call."""
    def run():
        today = parallel._fan_out
        old.set_num_threads(parallel.get_num_threads())
        parallel._fan_out = old._fan_out  # for_each_block and for_each_part look it up
        try:
            return step()
        finally:
            parallel._fan_out = today
    return run


def variants(config, chosen=VARIANTS, baseline=None) -> dict:
    """{variant: step()} for the ``chosen`` variants that can run here, and the baseline's
    given a (ref, module) pair, each with its own copy of the same weights; the one-thread
    variants set their threads around each call."""
    have_torch = available("torch")
    impl = {"minigrad32": "minigrad32", "minigrad32 1 thread": "minigrad32",
            "manual": "manual", "torch": "torch", "torch 1 thread": "torch"}
    out = {}
    if baseline:
        ref, module = baseline
        step = ts.build(config, ["minigrad32"])["minigrad32"]
        out[f"minigrad32 {ref}"] = with_scheduler(step, module)
    for v in VARIANTS:
        if v not in chosen or (impl[v] == "torch" and not have_torch):
            continue
        step = ts.build(config, [impl[v]])[impl[v]]  # the same weights and data every time
        out[v] = one_thread(step, impl[v]) if v.endswith(" 1 thread") else step
    return out


def one_thread(step, impl: str):
    """``step`` on one thread: minigrad's pool off and BLAS held to one thread, or
    ``torch.set_num_threads(1)``; the defaults are put back after each call."""
    if impl == "torch":
        import torch
        default_torch = torch.get_num_threads()

        def torch_one():
            torch.set_num_threads(1)
            try:
                return step()
            finally:
                torch.set_num_threads(default_torch)
        return torch_one

    def mg_one():
        default = parallel.get_num_threads()
        parallel.set_num_threads(1)
        try:
            with blas.one_blas_thread():
                return step()
        finally:
            parallel.set_num_threads(default)
    return mg_one


class Spinner:
    """A child process spinning on one core for at most ``seconds``; ``stop()`` kills it."""

    def __init__(self, seconds: float) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=float(seconds))])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


def measure(config, budget: float, quick: bool, chosen=VARIANTS, baseline=None,
            turn: int | None = None, settle: float | None = None) -> dict:
    """{variant: {"idle": [s...], "busy": [s...]}} over alternating phases."""
    warmup, quick_turn, quick_settle = (1, 2, 0.02) if quick else (2, 4, 0.2)
    turn = quick_turn if turn is None else turn
    settle = quick_settle if settle is None else settle
    times, loads = {}, {"idle": [], "busy": []}
    for phase in ("idle", "busy", "idle", "busy"):
        # fresh weights: run_config checks the first losses agree
        steps = variants(config, chosen, baseline)
        spinner = Spinner(min(600.0, 4 * budget + 60)) if phase == "busy" else None
        try:
            res, n = ts.run_config(config, steps, warmup, budget / 2, turn, settle,
                                   2 if quick else None)
            loads[phase].append(load_average())
        finally:
            if spinner:
                spinner.stop()
        for v, (med, best, _) in res.items():
            times.setdefault(v, {"idle": [], "busy": [], "idle_min": [], "busy_min": []})
            times[v][phase].append(med)
            times[v][phase + "_min"].append(best)
    out = {}
    for v, t in times.items():
        if not t["idle"]:
            continue
        # The less disturbed of the two phases of each kind: on a shared machine a burst of
        # outside load can hit one phase; idle and busy are treated alike.
        idle, busy = min(t["idle"]), min(t["busy"])
        idle_min, busy_min = min(t["idle_min"]), min(t["busy_min"])
        out[v] = {"idle_ms": 1e3 * idle, "busy_ms": 1e3 * busy, "idle_min_ms": 1e3 * idle_min,
                  "busy_min_ms": 1e3 * busy_min, "slowdown": busy / idle,
                  "slowdown_min": busy_min / idle_min,
                  "phase_medians_ms": {k: [1e3 * x for x in t[k]] for k in ("idle", "busy")}}
    return {"results": out, "load_average": loads}


def markdown(record: dict) -> str:
    """The ``<!-- busy:begin -->`` region: slowdown factors side by side."""
    cols = list(dict.fromkeys(v for c in record["configs"] for v in c["results"]))
    head = (record["commit"].get("head") or "?")[:7]
    lines = [BEGIN, "<!-- generated by benchmarks/busy.py --doc; rerun it, do not edit -->",
             f"Run of {record['started'][:16].replace('T', ' ')} UTC, commit `{head}`, "
             f"{record['machine']['cpu']}, {record['machine']['logical_cpus']} CPUs; load "
             f"average {(record['load_average_start'] or ['?'])[0]} at start, "
             f"{(record['load_average_end'] or ['?'])[0]} at end"
             + (" (`--quick`)" if record.get("quick") else "") + ".", "",
             "Slowdown with one core kept busy (busy median / idle median, each the lower of "
             "its two phases'; in brackets the same of minima):", "",
             "| config | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for c in record["configs"]:
        r = c["results"]
        lines.append(f"| {c['name']} | " + " | ".join(
            f"**{r[v]['slowdown']:.2f}x** ({r[v]['slowdown_min']:.2f})" if v in r else ""
            for v in cols) + " |")
    lines += ["", "Median ms per step, idle / busy:", "",
              "| config | " + " | ".join(cols) + " | load idle / busy |",
              "|---|" + "---:|" * len(cols) + "---:|"]
    for c in record["configs"]:
        r, la = c["results"], c["load_average"]
        load = " / ".join(f"{np.mean([x[0] for x in la[p]]):.1f}" if la[p] else "?"
                          for p in ("idle", "busy"))
        lines.append(f"| {c['name']} | " + " | ".join(
            f"{r[v]['idle_ms']:.2f} / {r[v]['busy_ms']:.2f}" if v in r else "" for v in cols)
            + f" | {load} |")
    return "\n".join(lines + [END])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="config A, two rounds (a test)")
    ap.add_argument("--configs", help="comma-separated subset of A,B,C,D (default B,C,D)")
    ap.add_argument("--budget", type=float, default=16.0,
                    help="seconds of timing per config and state (idle, busy)")
    ap.add_argument("--variants", help="comma-separated subset of: " + ", ".join(VARIANTS)
                    + " (default all)")
    ap.add_argument("--baseline", metavar="REF",
                    help="also time minigrad32 with the parallel regions scheduled as at "
                         "commit REF (its minigrad/runtime/parallel.py's _fan_out)")
    ap.add_argument("--turn", type=int, help="timed steps per variant's turn (default 4); "
                    "1 with --settle 0 alternates the variants step by step, which pairs them "
                    "best when outside load changes fast (no torch or manual variant: their "
                    "BLAS or OpenMP threads keep spinning into the next one's step)")
    ap.add_argument("--settle", type=float,
                    help="untimed seconds before each turn (default 0.2)")
    ap.add_argument("--json", metavar="PATH", help="write the record as JSON")
    ap.add_argument("--doc", metavar="MD", help=f"replace the {BEGIN} region of MD")
    args = ap.parse_args(argv)
    keys = (args.configs or ("A" if args.quick else "B,C,D")).upper().split(",")
    if any(k not in ts.CONFIGS for k in keys):
        ap.error(f"--configs: got {args.configs}; expected letters from {','.join(ts.CONFIGS)}")
    if not 0.1 <= args.budget <= 300:
        ap.error(f"--budget: got {args.budget}; expected 0.1 to 300 seconds")
    if args.turn is not None and not 1 <= args.turn <= 100:
        ap.error(f"--turn: got {args.turn}; expected 1 to 100 steps")
    if args.settle is not None and not 0 <= args.settle <= 10:
        ap.error(f"--settle: got {args.settle}; expected 0 to 10 seconds")
    chosen = VARIANTS if args.variants is None else \
        tuple(v.strip() for v in args.variants.split(","))
    if not chosen or any(v not in VARIANTS for v in chosen):
        ap.error(f"--variants: got {args.variants!r}; expected names from {', '.join(VARIANTS)}")
    baseline = None
    if args.baseline is not None:
        try:
            baseline = (args.baseline, baseline_scheduler(args.baseline))
        except ValueError as e:
            ap.error(str(e))
    for option in ("json", "doc"):
        if getattr(args, option):
            try:
                check_output_path(getattr(args, option), "--" + option)
            except ValueError as e:
                ap.error(str(e))
    keep_heap()  # as `python -m vit train` does
    info = machine_info()
    print(f"{now()}  {machine_line(info)}; load average {load_average()}")
    record = {"benchmark": "busy", "schema": 1, "started": now(), "quick": args.quick,
              "variants": list(chosen), "baseline": args.baseline, "turn": args.turn,
              "settle_s": args.settle,
              "machine": info, "commit": git_commit(), "load_average_start": load_average(),
              "configs": []}
    for k in keys:
        got = measure(ts.CONFIGS[k], 1.0 if args.quick else args.budget, args.quick, chosen,
                      baseline, args.turn, args.settle)
        record["configs"].append({"key": k, "name": ts.CONFIGS[k].name, **got})
        print(f"{ts.CONFIGS[k].name}: " + ", ".join(
            f"{v} {r['slowdown']:.2f}x" for v, r in got["results"].items()), flush=True)
        old, r = f"minigrad32 {args.baseline}", got["results"]
        if baseline and "minigrad32" in r:  # paired: the same phases, turns interleaved
            ours, theirs = r["minigrad32"]["phase_medians_ms"], r[old]["phase_medians_ms"]
            print(f"  minigrad32 / {old}, ratio of medians: idle " + " ".join(
                f"{a / b:.3f}" for a, b in zip(ours["idle"], theirs["idle"], strict=True))
                  + ", busy " + " ".join(
                f"{a / b:.3f}" for a, b in zip(ours["busy"], theirs["busy"], strict=True)),
                  flush=True)
    record.update(load_average_end=load_average(), finished=now())
    text = markdown(record)
    print("\n" + text)
    if args.json:
        write_json(args.json, record)
    if args.doc:
        from report import update_doc
        update_doc(args.doc, text, BEGIN, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
