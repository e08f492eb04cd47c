"""Choose the training recipe on validation data, never on the test data.

Cross-validated (``--cv``, the protocol behind the current defaults; docs/results.md)::

    python scripts/recipe_search.py --cv --json runs/recipe_search/cv.json   # search
    python scripts/recipe_search.py --cv --final NAME     # test folds: NAME vs the old default

``--cv`` protocol: the 1,797 digits (bundled train and test parts merged) are cut into the 5
stratified folds of ``python -m vit crossval`` (``vit.train.crossval.stratified_folds``, seed
``FOLD_SEED``). For every fold i, its *training part* (the other 4 folds) is split again with
``stratified_split(y_part, 0.2, seed=123)`` into search-train and validation
(``runs/recipe_search/cv/inner{i}.npz``; fold i's images are not in it). Every candidate of
``CV_CANDIDATES`` is trained on each search-train part (seed 0; ``--seeds`` for more) and
ranked by its accuracy over all 5 validation parts pooled (ties: fewer flags, then faster).
Then, once, ``python -m vit crossval`` runs the selected candidate and the old default on
the 5 test folds, seeds 0 1 2, and the seed ensembles and test-time augmentation of those
runs are scored (``--final``).

Fixed split (the earlier search, section "Choosing the default recipe, on the fixed split")::

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
   ``vit.train.data.stratified_split(y_train, 0.2, seed=123)``: 80% "search-train", 20% validation.
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
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vit.io.npz import load_npz  # noqa: E402
from vit.train.crossval import FOLD_SEED, merged, stratified_folds  # noqa: E402
from vit.train.data import DIGITS_PATH, load_digits, stratified_split  # noqa: E402

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
#: The defaults before this search, spelled out so that they stay the same when the defaults
#: change; every CV candidate starts from them.
OLD_DEFAULT = ["--epochs", "100", "--mixup", "0.2", "--rotate", "0", "--scale", "0",
               "--translate", "0", "--shift", "0"]
AFFINE = ["--rotate", "10", "--scale", "0.1", "--translate", "0.5"]
#: name -> the changes from OLD_DEFAULT; all planned before any CV run
CV_CANDIDATES: dict[str, list[str]] = {
    "old default": [],
    "epochs 200": ["--epochs", "200"],
    "affine r10 s0.1 t0.5": AFFINE,
    "affine r10 s0.1 t0.5, epochs 150": [*AFFINE, "--epochs", "150"],
    "affine r10 s0.1 t0.5, epochs 200": [*AFFINE, "--epochs", "200"],
    "affine r5 s0.05 t0.5, epochs 200": ["--rotate", "5", "--scale", "0.05", "--translate",
                                         "0.5", "--epochs", "200"],
    "affine r15 s0.15 t1, epochs 200": ["--rotate", "15", "--scale", "0.15", "--translate",
                                        "1", "--epochs", "200"],
    "rotate 10, epochs 200": ["--rotate", "10", "--epochs", "200"],
    "scale 0.1, epochs 200": ["--scale", "0.1", "--epochs", "200"],
    "translate 0.5, epochs 200": ["--translate", "0.5", "--epochs", "200"],
    "affine r10 s0.1 t0.5, epochs 200, mixup 0": [*AFFINE, "--epochs", "200", "--mixup", "0"],
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


def run_one(options: list[str], seed: int, out: Path, data: Path | None,
            reuse: bool = False) -> dict:
    """One ``python -m vit train`` in a subprocess; its final accuracy and times. With
    ``reuse``, a finished run of the same command in ``out`` is read instead of redone."""
    cmd = [sys.executable, "-m", "vit", "train", *options, "--seed", str(seed), "--out",
           str(out), "--overwrite", "--quiet"]
    if data is not None:
        cmd += ["--data", str(data)]
    done_file = out / "command.json"
    if reuse and done_file.exists() and json.loads(done_file.read_text())["cmd"] == cmd[1:]:
        return json.loads(done_file.read_text())["result"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    with open(out / "metrics.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    result = {"acc": rows[-1]["test_acc"], "wall_s": wall}
    done_file.write_text(json.dumps({"cmd": cmd[1:], "result": result}), encoding="utf-8")
    return result


def run_candidate(name: str, options: list[str], seeds: list[int], root: Path,
                  data: Path | None) -> dict:
    slug = "".join(c if c.isalnum() else "-" for c in name).strip("-")
    runs = [run_one(OLD_DEFAULT + options, s, root / f"{slug}-s{s}", data) for s in seeds]
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


def write_inner_splits(root: Path, k: int = 5) -> list[tuple[Path, int, int]]:
    """For every outer fold i: its training part split into search-train and validation,
    saved as ``root/inner{i}.npz`` (x, y, x_test = validation, y_test)."""
    x, y = merged(load_digits())
    fold = stratified_folds(y, k, FOLD_SEED)
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(k):
        part = np.flatnonzero(fold != i)  # fold i (the test fold) is left out entirely
        fit, val = stratified_split(y[part], VAL_FRACTION, seed=VAL_SEED)
        path = root / f"inner{i}.npz"
        np.savez(path, x=x[part[fit]], y=y[part[fit]], x_test=x[part[val]], y_test=y[part[val]])
        out.append((path, len(fit), len(val)))
    return out


def cv_search(names: list[str], seeds: list[int], root: Path, json_path: Path | None) -> str:
    """Train every candidate on every inner split; rank by pooled validation accuracy."""
    splits = write_inner_splits(root / "cv")
    n_val = sum(n for _, _, n in splits)
    print(f"cv validation protocol: {len(splits)} folds; search-train / validation "
          f"{' '.join(f'{a}/{b}' for _, a, b in splits)} images; {n_val * len(seeds)} "
          f"validation predictions per candidate", flush=True)
    rows = []
    for name in names:
        flags = CV_CANDIDATES[name]
        slug = "".join(c if c.isalnum() else "-" for c in name).strip("-")
        runs = [run_one(OLD_DEFAULT + flags, s, root / "cv" / f"{slug}-f{i}-s{s}", path,
                        reuse=True) for i, (path, _, _) in enumerate(splits) for s in seeds]
        sizes = [n for _, _, n in splits for _ in seeds]
        correct = sum(round(r["acc"] * n) for r, n in zip(runs, sizes, strict=True))
        rows.append({"name": name, "flags": " ".join(flags), "accs": [r["acc"] for r in runs],
                     "val_acc": correct / sum(sizes), "correct": correct, "n": sum(sizes),
                     "wall_s": statistics.median(r["wall_s"] for r in runs)})
        print(f"  {name:<44} val {100 * rows[-1]['val_acc']:.2f} ({correct}/{sum(sizes)})  "
              f"{rows[-1]['wall_s']:.1f}s", flush=True)
        _save(json_path, {"validation": rows, "seeds": seeds})
    return cv_rank(rows, seeds, json_path)


def cv_rank(rows: list[dict], seeds: list[int], json_path: Path | None) -> str:
    """Best first: most validation images right over all folds, then fewer flags, then faster;
    print the table and return the winner's name."""
    rows.sort(key=lambda r: (-r["correct"], len(r["flags"].split()), r["wall_s"]))
    print("\n| rank | candidate | flags (changes from the old default) | val. acc. | per fold |"
          " wall s |\n|---|---|---|---|---|---|")
    for i, r in enumerate(rows, 1):
        per = " / ".join(f"{100 * a:.2f}" for a in r["accs"])
        flags = f"`{r['flags']}`" if r["flags"] else ""
        print(f"| {i} | {r['name']} | {flags} | {100 * r['val_acc']:.2f} ({r['correct']}/"
              f"{r['n']}) | {per} | {r['wall_s']:.1f} |")
    print(f"\nselected: {rows[0]['name']}")
    _save(json_path, {"validation": rows, "seeds": seeds, "selected": rows[0]["name"]})
    return rows[0]["name"]


#: Test-time augmentation, fixed before any run: the image and its 4 half-pixel translations
TTA_SHIFTS = [(0.0, 0.0), (0.5, 0.0), (-0.5, 0.0), (0.0, 0.5), (0.0, -0.5)]


def _probs(ck, x_raw: np.ndarray, tta: bool) -> np.ndarray:
    """Softmax outputs (N, K) of a checkpoint on raw images, averaged over TTA_SHIFTS."""
    import minigrad as mg
    from minigrad import Tensor
    from vit.train.augment import affine

    x = ck.normalizer(x_raw, ck.model.dtype)
    fill = ck.normalizer(np.zeros((1, x.shape[1], 1, 1)), ck.model.dtype)[0, :, 0, 0]
    total = 0.0
    for dy, dx in TTA_SHIFTS if tta else TTA_SHIFTS[:1]:
        moved = affine(x, np.broadcast_to(np.eye(2), (len(x), 2, 2)),
                       np.tile([-dy, -dx], (len(x), 1)), fill=fill)
        with mg.no_grad():
            logits = np.asarray(ck.model(Tensor(moved)).data, np.float64)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        total = total + e / e.sum(axis=1, keepdims=True)
    return total / (len(TTA_SHIFTS) if tta else 1)


def cv_extras(out: Path, folds: int, seeds: list[int]) -> dict:
    """Single models, seed ensembles (mean softmax) and TTA, from the runs of one crossval."""
    from vit.train.checkpoint import load_checkpoint

    acc: dict[str, list[float]] = {}
    for i in range(folds):
        fold = load_npz(out / f"fold{i}.npz")
        probs = {}
        for s in seeds:
            ck = load_checkpoint(out / f"fold{i}-seed{s}" / "checkpoint.npz")
            for tta in (False, True):
                probs[s, tta] = _probs(ck, fold["x_test"], tta)
        for tta in (False, True):
            tag = " + TTA" if tta else ""
            for s in seeds:
                acc.setdefault(f"seed {s}{tag}", []).append(
                    float(np.mean(probs[s, tta].argmax(1) == fold["y_test"])))
            mean = sum(probs[s, tta] for s in seeds) / len(seeds)
            acc.setdefault(f"ensemble of seeds {','.join(map(str, seeds))}{tag}", []).append(
                float(np.mean(mean.argmax(1) == fold["y_test"])))
    return {name: {"fold_acc": a, "mean": statistics.fmean(a), "std": statistics.stdev(a)}
            for name, a in acc.items()}


def cv_final(selected: str, seeds: list[int], root: Path, json_path: Path | None) -> None:
    """The test folds, once: ``python -m vit crossval`` of the old default and the selection."""
    results = {}
    for name in dict.fromkeys(["old default", selected]):
        slug = "".join(c if c.isalnum() else "-" for c in name).strip("-")
        out = root / "cv-test" / slug
        cmd = [sys.executable, "-m", "vit", "crossval", *OLD_DEFAULT, *CV_CANDIDATES[name],
               "--seeds", ",".join(map(str, seeds)), "--out", str(out), "--quiet", "--resume"]
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
        print(done.stdout.strip(), f"({time.perf_counter() - start:.0f}s)", flush=True)
        cv = json.loads((out / "crossval.json").read_text(encoding="utf-8"))
        results[name] = {"flags": " ".join(CV_CANDIDATES[name]), "crossval": cv,
                         "extras": cv_extras(out, cv["folds"], seeds)}
        _save(json_path, results)
    print("\n| recipe | variant | CV accuracy (mean +- std over folds) | per fold |\n"
          "|---|---|---|---|")
    for name, r in results.items():
        for variant, v in r["extras"].items():
            print(f"| {name} | {variant} | {100 * v['mean']:.2f} +- {100 * v['std']:.2f} | "
                  f"{' / '.join(f'{100 * a:.2f}' for a in v['fold_acc'])} |")


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
    parser.add_argument("--final", default=None, metavar="NAME",
                        help="skip the search; run the test comparison of this candidate")
    parser.add_argument("--root", type=Path, default=ROOT / "runs" / "recipe_search")
    parser.add_argument("--json", type=Path, default=None, help="also save the raw numbers")
    parser.add_argument("--cv", action="store_true",
                        help="the cross-validated protocol (CV_CANDIDATES; see above)")
    parser.add_argument("--cv-only", nargs="+", choices=list(CV_CANDIDATES), default=None,
                        help="--cv: only these candidates")
    args = parser.parse_args()
    if args.final is not None and args.final not in (CV_CANDIDATES if args.cv else CANDIDATES):
        parser.error(f"--final: unknown candidate {args.final!r}")
    if args.cv:  # the search: seed 0 unless --seeds; the test folds: seeds 0 1 2
        if args.final is not None:
            return cv_final(args.final, args.seeds, args.root, args.json)
        seeds = [0] if "--seeds" not in sys.argv else args.seeds
        if args.merge:
            rows = [row for path in args.merge
                    for row in json.loads(path.read_text(encoding="utf-8"))["validation"]]
            cv_rank(rows, seeds, args.json)
        else:
            cv_search(args.cv_only or list(CV_CANDIDATES), seeds, args.root, args.json)
        return
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
