"""Run the experiments behind docs/results.md and print its tables (median of 3 seeds).

    python scripts/results.py                 # every experiment, seeds 0 1 2 (~10 min on 2 cores)
    python scripts/results.py --only default  # one experiment
    python scripts/results.py --seeds 0       # one seed each (quicker, noisier)

Each run is ``python -m vit train ... --seed S --out runs/results/NAME-sS`` in a subprocess (so
its wall time includes starting Python and loading the data); the table shows the median over
the seeds of the final test accuracy, the per-seed values, the median time per epoch (from
metrics.jsonl) and the median wall time of the whole command.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's vit
from vit.train.runfolder import read_metrics

#: name -> (what it shows, the train options beyond --seed/--out)
EXPERIMENTS: dict[str, tuple[str, list[str]]] = {
    "default": ("(a) full model, digits (the defaults)", []),
    "probe": ("(a) linear probe (head only), digits", ["--probe"]),
    "no-pos-emb": ("(b) digits without position embeddings", ["--no-pos-emb"]),
    "position": ("(b) position task, with position embeddings", ["--task", "position"]),
    "position-no-pos-emb": ("(b) position task, without position embeddings",
                            ["--task", "position", "--no-pos-emb"]),
    "no-mixup": ("(c) digits, mixup off", ["--mixup", "0"]),
}


def run_one(name: str, options: list[str], seed: int, root: Path) -> dict:
    """One training run; returns its final metrics, epoch time and wall time."""
    out = root / f"{name}-s{seed}"
    cmd = [sys.executable, "-m", "vit", "train", *options, "--seed", str(seed), "--out",
           str(out), "--overwrite", "--quiet"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    try:
        metrics = final_metrics(out, note=lambda m: print(f"results: note: {m}", file=sys.stderr))
    except ValueError as e:
        raise SystemExit(f"results: {e}") from None
    return {**metrics, "wall_s": wall, "log": done.stdout}


def final_metrics(out: Path, note: Callable[[str], None] | None = None) -> dict:
    """The last epoch's test accuracy, the median seconds per epoch and the epoch count of
    the run in ``out``, read with the check every reader of metrics.jsonl shares."""
    rows = read_metrics(out / "metrics.jsonl", note=note)
    if not rows:
        raise ValueError(f"{out / 'metrics.jsonl'}: no completed epoch")
    return {"acc": rows[-1]["test_acc"], "epoch_s": statistics.median(r["seconds"] for r in rows),
            "epochs": len(rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--only", nargs="+", choices=list(EXPERIMENTS), default=list(EXPERIMENTS))
    parser.add_argument("--root", type=Path, default=Path("runs/results"))
    parser.add_argument("--json", type=Path, default=None, help="also save the raw numbers here")
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start",
          file=sys.stderr)
    results = {}
    for name in args.only:
        what, options = EXPERIMENTS[name]
        runs = []
        for seed in args.seeds:
            runs.append(run_one(name, options, seed, args.root))
            print(f"{name} seed {seed}: {100 * runs[-1]['acc']:.2f}% in {runs[-1]['wall_s']:.1f}s",
                  file=sys.stderr)
        results[name] = {"what": what, "options": options, "runs": runs}
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    seeds = " ".join(str(s) for s in args.seeds)
    print(f"| experiment | command (`--seed S`, S in {seeds}) | test acc. (median) | per seed | "
          "s / epoch | wall s |")
    print("|---|---|---|---|---|---|")
    for r in results.values():
        accs = [x["acc"] for x in r["runs"]]
        cmd = " ".join(["python -m vit train", *r["options"]])
        print(f"| {r['what']} | `{cmd}` | {100 * statistics.median(accs):.2f}% | "
              f"{' / '.join(f'{100 * a:.2f}' for a in accs)} | "
              f"{statistics.median(x['epoch_s'] for x in r['runs']):.3f} | "
              f"{statistics.median(x['wall_s'] for x in r['runs']):.1f} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
