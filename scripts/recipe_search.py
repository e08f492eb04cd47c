"""Choose the training recipe on a validation split, never on the test split.

    python scripts/recipe_search.py                    # search, then the final test runs
    python scripts/recipe_search.py --search-only      # the validation table only
    python scripts/recipe_search.py --final NAME       # test runs of NAME vs the default

How it was run for docs/results.md (two rounds, then one merged ranking and the test runs)::

    python scripts/recipe_search.py --round 1 --search-only --json runs/recipe_search/round1.json
    python scripts/recipe_search.py --round 2 --search-only --json runs/recipe_search/round2.json
    python scripts/recipe_search.py --merge runs/recipe_search/round1.json \
        runs/recipe_search/round2.json             # ranks both rounds, then the test runs

Protocol:

1. The bundled training images (the test split is not loaded) are split again with
   ``vit.data.stratified_split(y_train, 0.2, seed=123)``: 80% "search-train", 20% validation.
   Both go to ``runs/recipe_search/val_split.npz`` as ``x, y, x_test, y_test``, so every
   candidate is trained with ``python -m vit train --data runs/recipe_search/val_split.npz``:
   the normalization statistics come from the search-train images and the accuracy the run
   logs as "test" is the validation accuracy.
2. Every candidate in ``CANDIDATES`` is trained with seeds 0 1 2 and ranked by the median of
   the final-epoch validation accuracy (ties: the mean, then the recipe with fewer flags, then
   the faster).
3. Only the top candidate and the default are then trained on the full training split and
   evaluated on the test split (seeds 0 1 2).

One training process at a time, ``--threads 1`` (the CLI default).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vit.data import DIGITS_PATH, stratified_split  # noqa: E402
from vit.model import load_npz  # noqa: E402

VAL_FRACTION = 0.2
VAL_SEED = 123

#: name -> the train options beyond --seed/--out/--data (one change from the default each,
#: plus a few combinations of changes that are cheap)
CANDIDATES: dict[str, list[str]] = {
    "default": [],
    "epochs 150": ["--epochs", "150"],
    "epochs 200": ["--epochs", "200"],
    "lr 2e-3": ["--lr", "2e-3"],
    "lr 1e-3": ["--lr", "1e-3"],
    "wd 0.1": ["--weight-decay", "0.1"],
    "no decay on norm/bias/cls/pos": ["--no-decay-norm-bias"],
    "label smoothing 0.1": ["--label-smoothing", "0.1"],
    "shift 1": ["--shift", "1"],
    "mixup 0.4": ["--mixup", "0.4"],
    "mixup 0": ["--mixup", "0"],
    "dim 96 (mlp 192)": ["--dim", "96", "--mlp-dim", "192"],
    "dim 128 (mlp 256)": ["--dim", "128", "--mlp-dim", "256"],
    "patch 2, dim 32 (mlp 64)": ["--patch-size", "2", "--dim", "32", "--mlp-dim", "64"],
    "shift 1, epochs 200": ["--shift", "1", "--epochs", "200"],
    "no decay, ls 0.1, epochs 150": ["--no-decay-norm-bias", "--label-smoothing", "0.1",
                                     "--epochs", "150"],
    # round 2, added after round 1 (the above) ranked "shift 1, epochs 200" first: its
    # neighbours, still ranked on validation only
    "shift 1, epochs 150": ["--shift", "1", "--epochs", "150"],
    "shift 2, epochs 200": ["--shift", "2", "--epochs", "200"],
    "shift 1, epochs 200, no decay": ["--shift", "1", "--epochs", "200", "--no-decay-norm-bias"],
    "shift 1, epochs 200, ls 0.1": ["--shift", "1", "--epochs", "200", "--label-smoothing",
                                    "0.1"],
}
ROUND_2 = ["shift 1, epochs 150", "shift 2, epochs 200", "shift 1, epochs 200, no decay",
           "shift 1, epochs 200, ls 0.1"]


def write_val_split(path: Path) -> tuple[int, int]:
    """The training split of the bundled digits, split again 80/20 into (train, validation)."""
    arrays = load_npz(DIGITS_PATH)  # the bundled split: x, y (train), x_test, y_test
    x_train, y_train = arrays["x"], arrays["y"]  # x_test / y_test are never read here
    fit, val = stratified_split(y_train, VAL_FRACTION, seed=VAL_SEED)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, x=x_train[fit], y=y_train[fit], x_test=x_train[val], y_test=y_train[val])
    return len(fit), len(val)


def run_one(options: list[str], seed: int, out: Path, data: Path | None) -> dict:
    """One ``python -m vit train`` in a subprocess; its final accuracy and times."""
    cmd = [sys.executable, "-m", "vit", "train", *options, "--seed", str(seed), "--out",
           str(out), "--overwrite", "--quiet"]
    if data is not None:
        cmd += ["--data", str(data)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    with open(out / "metrics.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return {"acc": rows[-1]["test_acc"], "wall_s": wall}


def run_candidate(name: str, options: list[str], seeds: list[int], root: Path,
                  data: Path | None) -> dict:
    slug = "".join(c if c.isalnum() else "-" for c in name).strip("-")
    runs = [run_one(options, s, root / f"{slug}-s{s}", data) for s in seeds]
    accs = [r["acc"] for r in runs]
    return {"name": name, "flags": " ".join(options), "accs": accs,
            "median": statistics.median(accs), "mean": statistics.fmean(accs),
            "wall_s": statistics.median(r["wall_s"] for r in runs)}


def rank_key(row: dict) -> tuple:
    """Best first: higher median, then higher mean (equal numbers of correct images tie); on a
    full tie the simpler recipe (fewer flags: the default first, so a change is adopted only
    if it beats the default), then the faster one."""
    return (-round(row["median"], 9), -round(row["mean"], 9), len(row["flags"].split()),
            row["wall_s"])


def table(rows: list[dict], what: str, first: str = "rank") -> str:
    lines = [f"| {first} | candidate | flags | {what} (median) | per seed | mean | wall s |",
             "|---|---|---|---|---|---|---|"]
    for i, r in enumerate(rows, 1):
        per = " / ".join(f"{100 * a:.2f}" for a in r["accs"])
        flags = f"`{r['flags']}`" if r["flags"] else ""
        lines.append(f"| {i} | {r['name']} | {flags} | {100 * r['median']:.2f} | {per} | "
                     f"{100 * r['mean']:.2f} | {r['wall_s']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--only", nargs="+", choices=list(CANDIDATES), default=None)
    parser.add_argument("--round", type=int, choices=[1, 2], default=None,
                        help="only the candidates of round 1 or round 2")
    parser.add_argument("--merge", type=Path, nargs="+", default=None, metavar="JSON",
                        help="rank the validation rows saved by earlier --json runs instead of "
                        "training candidates")
    parser.add_argument("--search-only", action="store_true", help="skip the test runs")
    parser.add_argument("--final", choices=list(CANDIDATES), default=None,
                        help="skip the search; run the test comparison of this candidate")
    parser.add_argument("--root", type=Path, default=ROOT / "runs" / "recipe_search")
    parser.add_argument("--json", type=Path, default=None, help="also save the raw numbers")
    args = parser.parse_args()
    results: dict = {}
    if args.round is not None:
        args.only = [n for n in CANDIDATES if (n in ROUND_2) == (args.round == 2)]
    if args.final is None and args.merge:
        rows = [row for path in args.merge
                for row in json.loads(path.read_text(encoding="utf-8"))["validation"]]
        selected = _rank(rows, results)
        if args.search_only:
            return _save(args.json, results)
    elif args.final is None:
        data = args.root / "val_split.npz"
        n_fit, n_val = write_val_split(data)
        print(f"validation protocol: {n_fit} search-train / {n_val} validation images "
              f"(stratified_split(y_train, {VAL_FRACTION}, seed={VAL_SEED})); one validation "
              f"image is {100 / n_val:.2f} points", flush=True)
        rows = []
        for name in args.only or CANDIDATES:
            row = run_candidate(name, CANDIDATES[name], args.seeds, args.root / "val", data)
            rows.append(row)
            print(f"  {name:<32} val {100 * row['median']:.2f} "
                  f"({' / '.join(f'{100 * a:.2f}' for a in row['accs'])})  "
                  f"{row['wall_s']:.1f}s", flush=True)
        selected = _rank(rows, results)
        if args.search_only:
            return _save(args.json, results)
    else:
        selected = args.final
    finals = [run_candidate(name, CANDIDATES[name], args.seeds, args.root / "test", None)
              for name in dict.fromkeys(["default", selected])]
    results["test"] = finals
    print("\nTest accuracy (full training split -> test split):\n")
    print(table(finals, "test acc.", first="#"))
    _save(args.json, results)


def _rank(rows: list[dict], results: dict) -> str:
    """Sort ``rows`` best first, print the table, store it in ``results``; the winner's name."""
    rows.sort(key=rank_key)
    results["validation"] = rows
    print("\nValidation accuracy (search-train -> validation), ranked:\n")
    print(table(rows, "val. acc."))
    print(f"\nselected: {rows[0]['name']}")
    return rows[0]["name"]


def _save(path: Path | None, results: dict) -> None:
    if path is not None:
        path.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
