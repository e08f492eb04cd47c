"""Why does a ViT need more data or augmentation than a CNN? A measurement on the digits.

A small CNN built from minigrad's layers and the TinyViT of ``python -m vit train`` are
trained by the same loop (same engine, optimizer, schedule, epochs and batch size), on the
same 5 stratified cross-validation folds of all 1,797 digits (``vit.crossval``), with and
without augmentation, on each fold's whole training part and on a stratified quarter of it.
The held-out fold is only used for the final accuracy. ``--model cnn-bn`` is the same CNN
with a BatchNorm2d after each convolution (the convolutions then without bias), trained from
the same initial convolution weights, batches and augmentation draws, and evaluated in eval
mode (the running statistics).

    python examples/cnn_digits.py                      # every run (resumable), then the table
    python examples/cnn_digits.py --model cnn --fraction 0.25 --no-augment --folds 0 1
    python examples/cnn_digits.py --model cnn-bn --fraction 1 --augment

Results go to ``OUT/results.json`` (default ``runs/cnn_study``; the study's own run is
``examples/results/cnn_digits.json``); runs already there are
skipped, so an interrupted study continues where it stopped. ``docs/results.md`` section
"CNN vs ViT" reports the table this prints.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from minigrad import F, Tensor, nn
from vit.io.atomic import write_atomic
from vit.io.files import open_regular
from vit.model.losses import mixup
from vit.model.normalizer import Normalizer
from vit.train.augment import random_affine
from vit.train.crossval import merged, stratified_folds
from vit.train.data import load_digits
from vit.train.loop import build_model, evaluate
from vit.train.optimizer import build_optimizer
from vit.train.options import TrainOptions

FOLDS = 5
FRACTIONS = (1.0, 0.25)
MODELS = ("cnn", "vit", "cnn-bn")


class SmallCNN(nn.Module):
    """conv3x3(C->16) ReLU pool2, conv3x3(16->32) ReLU pool2, flatten, linear -> classes.

    (B, C, 8, 8) -> (B, 16, 4, 4) -> (B, 32, 2, 2) -> (B, 128) -> (B, K). Fewer parameters
    (6,090 for the digits) and fewer multiply-adds per image than the TinyViT (35,466).
    ``batch_norm``: a BatchNorm2d between each convolution and its ReLU, the convolutions
    without bias (the norm's shift takes its place): 6,138 parameters, and the same initial
    convolution and head weights as without it (the norms draw nothing).
    """

    def __init__(self, in_chans: int, img_size: int, num_classes: int, *,
                 dtype=np.float32, seed: int = 0, batch_norm: bool = False) -> None:
        super().__init__()
        rng = np.random.default_rng([seed, 7])
        bias = not batch_norm
        self.conv1 = nn.Conv2d(in_chans, 16, 3, padding=1, bias=bias, dtype=dtype, rng=rng)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=bias, dtype=dtype, rng=rng)
        self.act = nn.ReLU()
        self.flatten = nn.Flatten()
        self.head = nn.Linear(32 * (img_size // 4) ** 2, num_classes, dtype=dtype, rng=rng)
        self.norm1: nn.Module | None = nn.BatchNorm2d(16, dtype=dtype) if batch_norm else None
        self.norm2: nn.Module | None = nn.BatchNorm2d(32, dtype=dtype) if batch_norm else None

    def forward(self, x: Tensor) -> Tensor:
        """x (B, C, H, W) -> logits (B, K)."""
        for conv, norm in ((self.conv1, self.norm1), (self.conv2, self.norm2)):
            x = conv(x)
            x = F.max_pool2d(self.act(x if norm is None else norm(x)), 2)
        return self.head(self.flatten(x))


def quarter(y: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Indices of a stratified ``fraction`` of the examples: per class, a seeded random
    ``ceil(fraction * count)`` of them, in their original order."""
    rng = np.random.default_rng([seed, 11])
    keep = [rng.permutation(np.flatnonzero(y == c))[:math.ceil(fraction * np.sum(y == c))]
            for c in np.unique(y)]
    return np.sort(np.concatenate(keep))


def run(model_name: str, fold: int, fraction: float, augment: bool, seed: int,
        epochs: int) -> dict:
    """Train one model on one fold's training part; its accuracy on the held-out fold."""
    digits = load_digits()
    x, y = merged(digits)
    folds = stratified_folds(y, FOLDS)
    train_i, test_i = np.flatnonzero(folds != fold), np.flatnonzero(folds == fold)
    train_i = train_i[quarter(y[train_i], fraction, seed)]
    options = TrainOptions(epochs=epochs, seed=seed)
    if not augment:
        options = replace(options, mixup=0.0, rotate=0.0, scale=0.0, translate=0.0)
    o = options.resolved()
    normalizer = Normalizer.fit(x[train_i])
    x_train, x_test = normalizer(x[train_i], np.float32), normalizer(x[test_i], np.float32)
    y_train, y_test = y[train_i], y[test_i]
    fill = normalizer(np.zeros((1, x.shape[1], 1, 1)), np.float32)[0, :, 0, 0]
    if model_name in ("cnn", "cnn-bn"):
        model = SmallCNN(x.shape[1], x.shape[2], digits.num_classes, seed=seed,
                         batch_norm=model_name == "cnn-bn")
    else:
        model = build_model(o, digits)
    steps = math.ceil(len(x_train) / o.batch_size)
    optimizer, schedule = build_optimizer(o, model, steps)
    rng = np.random.default_rng([seed, 1])
    t0 = time.perf_counter()
    for _ in range(o.epochs):
        order = rng.permutation(len(x_train))
        for i in range(steps):
            idx = order[i * o.batch_size:(i + 1) * o.batch_size]
            xb, target = x_train[idx], y_train[idx]
            if augment:
                xb = random_affine(xb, rng, rotate=o.rotate, scale=o.scale,
                                   translate=o.translate, fill=fill)
                mixed = mixup(xb, target, digits.num_classes, alpha=o.mixup, rng=rng)
                xb, target = mixed.x, mixed.y
            loss = F.cross_entropy(model(Tensor(xb)), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
    model.eval()  # the BatchNorms' running statistics (the other models have no modes)
    _, acc, _ = evaluate(model, x_test, y_test)
    return dict(model=model_name, fold=fold, fraction=fraction, augment=augment, seed=seed,
                epochs=epochs, train_examples=len(train_i), test_examples=len(test_i),
                parameters=model.num_parameters() if hasattr(model, "num_parameters")
                else sum(p.data.size for p in model.parameters()),
                accuracy=acc, seconds=time.perf_counter() - t0)


def key(r: dict) -> tuple:
    return (r["model"], r["fold"], r["fraction"], r["augment"], r["seed"], r["epochs"])


def table(results: list[dict]) -> str:
    """Mean ± std over folds of the held-out accuracy (%), per model, data share, augmentation."""
    lines = ["| model | training data | augmentation | CV accuracy (%) | per fold | parameters |",
             "|---|---|---|---|---|---|"]
    for fraction in FRACTIONS:
        for augment in (True, False):
            for m in MODELS:
                rs = sorted((r for r in results if (r["model"], r["fraction"], r["augment"])
                             == (m, fraction, augment)), key=lambda r: r["fold"])
                if not rs:
                    continue
                accs = [100 * r["accuracy"] for r in rs]
                spread = f" ± {statistics.stdev(accs):.2f}" if len(accs) > 1 else ""
                share = "all" if fraction == 1 else f"{fraction:g}"
                lines.append(f"| {m} | {share} ({rs[0]['train_examples']} images) | "
                             f"{'affine + mixup' if augment else 'none'} | "
                             f"{statistics.mean(accs):.2f}{spread} | "
                             f"{' / '.join(f'{a:.2f}' for a in accs)} | {rs[0]['parameters']:,} |")
    return "\n".join(lines)


#: The largest results file read back (the whole study's is about 30 KB).
MAX_RESULTS_BYTES = 16 << 20


def read_results(path: Path) -> list[dict]:
    """The runs already in ``path`` (none if it does not exist): a regular file of at most
    ``MAX_RESULTS_BYTES`` holding a JSON list of run objects with the fields ``key`` reads."""
    if not path.exists():
        return []
    with open_regular(path, "results file") as f:
        data = f.read(MAX_RESULTS_BYTES + 1)
    if len(data) > MAX_RESULTS_BYTES:
        raise ValueError(f"results file over {MAX_RESULTS_BYTES} bytes")
    try:
        results = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"results file is not JSON ({e})") from None
    if not isinstance(results, list) or not all(
            isinstance(r, dict) and {"model", "fold", "fraction", "augment", "seed", "epochs",
                                     "accuracy"} <= r.keys() for r in results):
        raise ValueError("results file is not a list of this study's runs")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/cnn_study"))
    parser.add_argument("--model", choices=MODELS, action="append")
    parser.add_argument("--fraction", type=float, choices=FRACTIONS, action="append")
    parser.add_argument("--augment", action=argparse.BooleanOptionalAction, default=None,
                        help="only runs with (--augment) or without (--no-augment)")
    parser.add_argument("--folds", type=int, nargs="+", choices=range(FOLDS),
                        default=list(range(FOLDS)))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=TrainOptions.epochs)
    parser.add_argument("--table", action="store_true", help="print the table and stop")
    args = parser.parse_args(argv)
    if not 1 <= args.epochs <= 10_000:
        parser.error(f"--epochs: got {args.epochs}; expected 1..10000")
    if not 0 <= args.seed < 2**63:
        parser.error(f"--seed: got {args.seed}; expected 0..2**63-1")
    path = args.out / "results.json"
    try:
        results = read_results(path)
        if not args.table:
            args.out.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as e:
        parser.error(f"--out: {args.out}: {e}")
    done = {key(r) for r in results}
    if not args.table:
        for fraction in args.fraction or FRACTIONS:
            for augment in ((True, False) if args.augment is None else (args.augment,)):
                for m in args.model or MODELS:
                    for fold in args.folds:
                        k = (m, fold, fraction, augment, args.seed, args.epochs)
                        if k in done:
                            continue
                        r = run(m, fold, fraction, augment, args.seed, args.epochs)
                        print(f"{m} fold {fold} data {fraction:g} augment {augment}: "
                              f"{100 * r['accuracy']:.2f}% ({r['seconds']:.0f} s)", flush=True)
                        results.append(r)
                        done.add(k)
                        text = json.dumps(results, indent=1)
                        write_atomic(path, lambda f: f.write(text.encode()))  # noqa: B023 (called at once)
    print(table([r for r in results if r["seed"] == args.seed and r["epochs"] == args.epochs]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
