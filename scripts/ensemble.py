"""How far from 99% the test split is, beyond seed noise: trained runs alone and averaged.

    python scripts/results.py                       # trains runs/results/default-s{0,1,2}
    python scripts/ensemble.py runs/results/default-s0 runs/results/default-s1 \
        runs/results/default-s2

Prints each run's test accuracy, the accuracy of the average of their softmax outputs
(an ensemble: one way to remove the seed-to-seed spread), and which test images they miss.
Uses only the runs' checkpoints and the data they were trained on (the bundled digits, or
``--data``), never trains.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vit.train.checkpoint import load_checkpoint
from vit.train.data import load_data
from vit.train.runfolder import CHECKPOINT


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run folders (each with a checkpoint)")
    ap.add_argument("--data", default=None, help="the --data the runs were trained with")
    args = ap.parse_args(argv)
    data = load_data(args.data)
    y = data.y_test
    probs, wrong = [], []
    for run in args.runs:
        ck = load_checkpoint(run / CHECKPOINT)
        p = softmax(ck.model(ck.normalizer(data.x_test, ck.model.dtype)))
        probs.append(p)
        wrong.append(set(np.flatnonzero(p.argmax(axis=1) != y).tolist()))
        print(f"{run}: epoch {ck.epoch}, test accuracy {100 * np.mean(p.argmax(1) == y):.2f}% "
              f"({len(wrong[-1])} of {len(y)} wrong)")
    pred = np.mean(probs, axis=0).argmax(axis=1)
    missed = np.flatnonzero(pred != y)
    print(f"average of the {len(probs)} runs' softmax outputs: "
          f"{100 * np.mean(pred == y):.2f}% ({len(missed)} wrong: test images "
          f"{', '.join(map(str, missed))})")
    always = set.intersection(*wrong)
    print(f"missed by every run: {len(always)} images ({', '.join(map(str, sorted(always)))}); "
          f"99.0% allows at most {int(len(y) * 0.01)} errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
