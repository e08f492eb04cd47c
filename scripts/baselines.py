"""Classical baselines on the folds of ``python -m vit crossval`` and on the bundled split.

    pip install -e .[baselines]          # scikit-learn, for this script only
    python scripts/baselines.py [--json runs/baselines.json]

Each model sees the raw pixel values (0..16, 64 per image), as in scikit-learn's digits
example; its settings were fixed before any run (no tuning): an RBF SVM ``SVC(gamma=0.001)``
(C = 1), a 1-nearest-neighbour classifier (Euclidean), and multinomial logistic regression
(``LogisticRegression(max_iter=10000)``, C = 1). The folds are
``vit.train.crossval.stratified_folds`` of the 1,797 merged digits with ``FOLD_SEED``, exactly those
of ``python -m vit crossval``; the standard deviation is over folds (ddof 1).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vit.train.crossval import FOLD_SEED, merged, stratified_folds  # noqa: E402
from vit.train.data import load_digits  # noqa: E402


def models() -> dict:
    try:
        from sklearn.linear_model import LogisticRegression
        from sklearn.neighbors import KNeighborsClassifier
        from sklearn.svm import SVC
    except ImportError:
        raise SystemExit("scripts/baselines.py needs scikit-learn: "
                         "pip install -e .[baselines]") from None
    return {"SVM, SVC(gamma=0.001)": lambda: SVC(gamma=0.001),
            "1-NN": lambda: KNeighborsClassifier(n_neighbors=1),
            "logistic regression": lambda: LogisticRegression(max_iter=10000)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="also save the numbers")
    args = parser.parse_args()
    data = load_digits()
    x, y = merged(data)
    flat = x.reshape(len(x), -1)
    fold = stratified_folds(y, args.folds, FOLD_SEED)
    rows = []
    print("| model | CV accuracy (mean +- std over folds) | per fold | bundled split |")
    print("|---|---|---|---|")
    for name, make in models().items():
        accs = []
        for i in range(args.folds):
            train, test = fold != i, fold == i
            accs.append(float(np.mean(make().fit(flat[train], y[train]).predict(flat[test])
                                      == y[test])))
        fixed = make().fit(data.x_train.reshape(len(data.x_train), -1), data.y_train)
        split = float(np.mean(fixed.predict(data.x_test.reshape(len(data.x_test), -1))
                              == data.y_test))
        mean, std = statistics.fmean(accs), statistics.stdev(accs)
        rows.append({"model": name, "fold_acc": accs, "mean": mean, "std": std,
                     "bundled_split": split})
        print(f"| {name} | {100 * mean:.2f} +- {100 * std:.2f} | "
              f"{' / '.join(f'{100 * a:.2f}' for a in accs)} | {100 * split:.2f} |", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
