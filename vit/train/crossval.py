"""Stratified k-fold cross-validation: the folds, one training run per fold and seed, a summary.

``python -m vit crossval`` (see ``vit/cli/main.py``) calls :func:`crossval`. The data set (the
bundled digits with their train and test parts merged, 1,797 images, or any ``--data``) is
cut into ``k`` stratified folds by :func:`stratified_folds`, a pure function of the labels
and a seed. For every fold and seed, :func:`vit.train.train` trains on the other folds
(normalization statistics included) and is evaluated, at its last epoch, on the held-out
fold, which nothing else sees. Layout of ``OUT`` (default ``runs/crossval``)::

    OUT/fold{i}.npz           fold i as a training data file: x, y (the other folds), x_test,
                              y_test (fold i), train_index, test_index (into the merged set)
    OUT/fold{i}-seed{s}/      the run: python -m vit train --data OUT/fold{i}.npz --seed s ...
    OUT/crossval.json         per fold and seed accuracy, mean and std over folds, the options
                              (with ``tta``: the same for test-time augmentation, ``tta``)
"""
from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from minigrad import checks

from ..io.atomic import write_atomic
from ..io.npz import load_npz, save_npz_atomic
from ..model.predict import predict
from .checkpoint import load_checkpoint
from .data import Dataset
from .loop import check_first_step, load_task, train
from .options import TrainOptions
from .runfolder import CHECKPOINT, METRICS, RunLock, read_metrics

__all__ = ["FOLD_SEED", "stratified_folds", "merged", "fold_dataset", "crossval", "summarize"]

#: The seed of the fold assignment (fixed before any run, like ``vit.train.data.SPLIT_SEED``).
FOLD_SEED = 0
RESULT = "crossval.json"


def stratified_folds(y: np.ndarray, k: int, seed: int = FOLD_SEED) -> np.ndarray:
    """The fold (0..k-1) of every example, (N,) int64: each class is shuffled and dealt out
    round-robin, continuing where the previous class stopped, so every class's count differs
    by at most 1 between folds, and so does every fold's size."""
    y = np.asarray(y)
    if y.ndim != 1 or y.dtype.kind not in "iu":
        raise ValueError(f"stratified_folds y: got dtype {y.dtype} shape {y.shape}; expected "
                         "integer labels of shape (N,)")
    k = checks.integer("--folds", k, low=2)
    if len(y) < k:
        raise ValueError(f"--folds {k}: only {len(y)} examples; expected at least one per fold")
    rng = np.random.default_rng(seed)
    fold = np.empty(len(y), np.int64)
    start = 0
    for c in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == c))
        fold[members] = (start + np.arange(len(members))) % k
        start = (start + len(members)) % k
    return fold


def merged(data: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """(x, y): the training and test parts of ``data`` as one set, training part first."""
    return (np.concatenate([data.x_train, data.x_test]),
            np.concatenate([data.y_train, data.y_test]))


def fold_dataset(x: np.ndarray, y: np.ndarray, fold: np.ndarray, i: int,
                 name: str = "fold") -> tuple[Dataset, dict]:
    """(Dataset, arrays for its .npz): fold ``i`` as the test part, the others as training."""
    test = np.flatnonzero(fold == i)
    train_index = np.flatnonzero(fold != i)
    num_classes = int(y.max()) + 1
    data = Dataset(x[train_index], y[train_index], x[test], y[test], num_classes, name)
    arrays = dict(x=data.x_train, y=data.y_train, x_test=data.x_test, y_test=data.y_test,
                  train_index=train_index, test_index=test)
    return data, arrays


def _seeds(seeds) -> list[int]:
    seeds = [checks.integer("--seeds", s, low=0) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds: got {seeds!r}; expected distinct integers >= 0")
    return seeds


def summarize(acc: dict[int, list[float]]) -> dict:
    """Mean and standard deviation over folds (sample std, ddof 1), per seed and overall.

    acc: seed -> the accuracy of every fold. Overall, each fold's accuracy is first averaged
    over the seeds; ``median_over_seeds`` is the median of the per-seed means."""
    per_seed = {s: {"fold_acc": a, "mean": statistics.fmean(a),
                    "std": statistics.stdev(a) if len(a) > 1 else 0.0} for s, a in acc.items()}
    by_fold = [statistics.fmean(col) for col in zip(*acc.values(), strict=True)]
    return {"per_seed": per_seed, "mean": statistics.fmean(by_fold),
            "std": statistics.stdev(by_fold) if len(by_fold) > 1 else 0.0,
            "median_over_seeds": statistics.median(p["mean"] for p in per_seed.values())}


def _write_json(path: Path, value: dict) -> None:
    write_atomic(path, lambda f: f.write(json.dumps(value, indent=1).encode("utf-8")))


def crossval(options: TrainOptions, out: str | os.PathLike, *, folds: int = 5,
             seeds=(0, 1, 2), resume: bool = False, overwrite: bool = False,
             quiet: bool = False, log: Callable[[str], None] = print,
             tta: bool = False) -> dict:
    """Stratified k-fold CV of ``options`` (its data; ``options.seed`` is replaced by each of
    ``seeds``): one :func:`vit.train.train` run per fold and seed in ``out``, each scored at
    its last epoch on its held-out fold. Returns (and writes to ``out/crossval.json``) the
    accuracies, :func:`summarize` of them, the options and a one-line ``summary``. ``tta``:
    each run is also scored with test-time augmentation (``predict(..., tta=True)``: the
    softmax averaged over the image and its four half-pixel shifts), reported beside."""
    seeds = _seeds(seeds)
    source = load_task(options)  # bad data fails before any file is written
    x, y = merged(source)
    name = source.name
    del source  # the merged copy is all that is needed (each run loads its own fold file)
    fold = stratified_folds(y, folds, FOLD_SEED)
    base = replace(options, task="digits", data=None, seed=seeds[0]).resolved()
    for s in seeds[1:]:  # every seed as the runs will take it, before any fold trains
        replace(base, seed=s)
    check_first_step(base, fold_dataset(x, y, fold, 0)[0])  # bad options fail here, first
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"--out {out}: not a writable folder ({e.strerror or e})") from None
    # the folder's own lock, held to the end: a second crossval is refused before it checks
    # or rewrites anything here (each run below also locks its own run folder)
    held = [x]  # handed over, not shared: _crossval lets go of the images once written
    del x
    with RunLock(out):
        return _crossval(base, name, held, y, fold, out, folds, seeds, resume, overwrite,
                         quiet, log, tta)


def _crossval(base, name: str, held: list, y, fold, out: Path, folds: int,
              seeds: list[int], resume: bool, overwrite: bool, quiet: bool, log,
              tta: bool) -> dict:
    """:func:`crossval` once ``out`` is held. ``held``: [the merged images], emptied once the
    fold files hold them, so that no copy of the data set stays beside each run's own."""
    x = held.pop()
    runs = [(i, s, out / f"fold{i}-seed{s}") for i in range(folds) for s in seeds]
    used = [r for _, _, r in runs if (r / CHECKPOINT).exists()] + \
        [out / RESULT] * (out / RESULT).exists()
    if used and not (resume or overwrite):
        raise ValueError(f"--out {out} already holds a cross-validation ({used[0]}); pass "
                         "--resume to continue it or --overwrite to start again")
    # crossval.json is the folder's commit record: it goes first and is written last, so it
    # never stands beside runs it does not describe (an interrupted --overwrite or --resume
    # leaves none, and the next --resume writes it again)
    try:
        os.unlink(out / RESULT)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise ValueError(f"--out {out}: cannot remove {RESULT} ({e.strerror or e})") from None
    for i in range(folds):
        path = out / f"fold{i}.npz"
        _, arrays = fold_dataset(x, y, fold, i)
        if resume and path.exists():
            saved = load_npz(path)
            if not all(k in saved and np.array_equal(saved[k], v) for k, v in arrays.items()):
                raise ValueError(f"--resume: {path} holds other folds than this data and "
                                 f"--folds {folds} give; start a new --out")
        else:
            save_npz_atomic(path, arrays)
        del arrays
    del x  # every fold file holds its images now; a run (and TTA) reads them from there
    acc: dict[int, list[float]] = {s: [0.0] * folds for s in seeds}
    acc_tta: dict[int, list[float]] = {s: [0.0] * folds for s in seeds}
    records = []
    bar = tqdm(runs, disable=quiet, unit="run", dynamic_ncols=True, leave=False)
    try:
        for i, s, run in bar:
            bar.set_description(f"fold {i + 1}/{folds} seed {s}")
            o = replace(base, data=str(out / f"fold{i}.npz"), seed=s)
            train(o, run, resume=resume and (run / CHECKPOINT).exists(), overwrite=overwrite,
                  quiet=True, log=lambda _: None)
            last = read_metrics(run / METRICS)[-1]
            if last["epoch"] != o.epochs:
                raise ValueError(f"{run / METRICS}: ends at epoch {last['epoch']}; expected "
                                 f"{o.epochs} (a run stopped early; continue it with --resume)")
            acc[s][i] = last["test_acc"]
            records.append({"fold": i, "seed": s, "test_acc": last["test_acc"],
                            "test_n": int(np.sum(fold == i)), "run": run.name})
            if tta:  # the run's model on its held-out fold's raw images, as vit eval --tta
                held_out = load_npz(out / f"fold{i}.npz")
                model = load_checkpoint(run / CHECKPOINT).model
                hits = predict(model, held_out["x_test"], tta=True) == held_out["y_test"]
                acc_tta[s][i] = records[-1]["test_acc_tta"] = float(np.mean(hits))
            bar.set_postfix(acc=f"{statistics.fmean(r['test_acc'] for r in records):.4f}",
                            refresh=False)
    finally:
        bar.close()
    stats = summarize(acc)
    per_seed = " / ".join(f"{100 * stats['per_seed'][s]['mean']:.2f}" for s in seeds)
    summary = (f"crossval: {folds} folds x {len(seeds)} seed{'s' * (len(seeds) > 1)} on "
               f"{name} ({len(y)} images): accuracy {100 * stats['mean']:.2f}% +- "
               f"{100 * stats['std']:.2f} (mean +- std over folds); per seed {per_seed}; median "
               f"over seeds {100 * stats['median_over_seeds']:.2f}%; {out / RESULT}")
    result = {"data": name, "images": len(y), "folds": folds,
              "fold_seed": FOLD_SEED, "seeds": seeds,
              "options": {k: v for k, v in asdict(base).items() if k not in ("data", "seed")},
              "runs": records, **stats, "summary": summary}
    result["per_seed"] = {str(s): v for s, v in result["per_seed"].items()}
    if tta:
        with_tta = summarize(acc_tta)
        with_tta["per_seed"] = {str(s): v for s, v in with_tta["per_seed"].items()}
        result["tta"] = with_tta
        summary += (f"\ncrossval with test-time augmentation (5 views): accuracy "
                    f"{100 * with_tta['mean']:.2f}% +- {100 * with_tta['std']:.2f} beside "
                    f"{100 * stats['mean']:.2f}% single-view")
        result["summary"] = summary
    _write_json(out / RESULT, result)
    log(summary)
    return result
