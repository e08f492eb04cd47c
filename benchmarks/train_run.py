"""The job users run: the default ``python -m vit train`` recipe end to end, against the same
model, recipe, augmentation and data in PyTorch, in one process, run alternately.

    python benchmarks/train_run.py                    # 150 epochs each, idle and busy, twice
    python benchmarks/train_run.py --epochs 20 --repeats 1 --no-busy
    python benchmarks/train_run.py --quick            # seconds: 2 epochs, one of each

minigrad: ``vit.cli.main.main(["train", ...])``, what ``python -m vit train --out DIR`` runs
(the bundled digits, every default option; one BLAS thread outside minigrad's kernels and
``keep_heap``, as the command sets them), checkpoint and metrics line each epoch included.
torch: the same TinyViT in PyTorch eager (float32, the default threads) from the same
initial weights; the same normalized images, random affine augmentation and mixup drawn from
a generator seeded as the run's, the same AdamW settings and one-cycle learning rate per step
(read from the run's own schedule), the test set evaluated and ``torch.save`` of the
parameters and optimizer state after each epoch; NumPy's BLAS at one thread in both. Each job
is timed from start to end (wall seconds, epochs per second); the order is minigrad, torch,
then the same again with one core kept busy by a spinning child process
(``benchmarks/busy.py``'s), for ``--repeats`` rounds.
Prints each run, the median wall per job and phase, torch/minigrad, and the 1-minute load
average at each run's start.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from minigrad.runtime.blas import blas_threads
from vit.cli.main import main as vit_main
from vit.model.losses import mixup
from vit.model.normalizer import Normalizer
from vit.train.augment import random_affine
from vit.train.loop import build_model, load_task
from vit.train.optimizer import build_optimizer
from vit.train.options import TrainOptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from baselines import torch_logits
from busy import Spinner
from machine import available, load_average


def minigrad_job(epochs: int, out: str) -> float:
    """``python -m vit train --epochs E --out OUT``, in this process; its final test accuracy."""
    with contextlib.redirect_stdout(io.StringIO()):  # its epoch lines
        code = vit_main(["train", "--epochs", str(epochs), "--out", out, "--overwrite",
                         "--quiet"])
    if code != 0:
        raise RuntimeError(f"vit train exited with {code}")
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return json.loads(f.read().splitlines()[-1])["test_acc"]


def torch_job(epochs: int, out: str) -> float:
    """The same run in PyTorch; its final test accuracy. NumPy's BLAS (the augmentation's
    products) at one thread, as ``python -m vit`` sets it: its idle threads would spin
    against torch's own after every call."""
    with blas_threads(1):
        return _torch_run(epochs, out)


def _torch_run(epochs: int, out: str) -> float:
    import torch
    import torch.nn.functional as tF
    o = TrainOptions(epochs=epochs).resolved()
    data = load_task(o)
    normalizer = Normalizer.fit(data.x_train)
    model = build_model(o, data)
    x_train, x_test = normalizer(data.x_train, np.float32), normalizer(data.x_test, np.float32)
    fill = normalizer(np.zeros((1, data.image_shape[0], 1, 1)), np.float32)[0, :, 0, 0]
    P = {k: torch.tensor(v, requires_grad=True) for k, v in model.state_dict().items()}
    steps = math.ceil(len(x_train) / o.batch_size)
    schedule_of, schedule = build_optimizer(o, model, steps)  # the run's lr, step by step
    opt = torch.optim.AdamW(list(P.values()), lr=o.lr, weight_decay=o.weight_decay)
    rng = np.random.default_rng([o.seed, 1])
    y_test = torch.from_numpy(data.y_test.astype(np.int64))
    acc = 0.0
    for _ in range(epochs):
        order = rng.permutation(len(x_train))
        for i in range(steps):
            idx = order[i * o.batch_size:(i + 1) * o.batch_size]
            x = random_affine(x_train[idx], rng, rotate=o.rotate, scale=o.scale,
                              translate=o.translate, fill=fill)
            mixed = mixup(x, data.y_train[idx], data.num_classes, alpha=o.mixup, rng=rng)
            for group in opt.param_groups:
                group["lr"] = schedule_of.lr
            logits = torch_logits(torch, P, torch.from_numpy(mixed.x), o.patch_size, o.heads)
            loss = tF.cross_entropy(logits, torch.from_numpy(mixed.y.astype(np.float32)))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            schedule.step()
        with torch.no_grad():
            logits = torch.cat([torch_logits(torch, P, torch.from_numpy(x_test[j:j + 512]),
                                             o.patch_size, o.heads)
                                for j in range(0, len(x_test), 512)])
            acc = float((logits.argmax(1) == y_test).float().mean())
        torch.save({"params": P, "optimizer": opt.state_dict()}, os.path.join(out, "ckpt.pt"))
    return acc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=TrainOptions().epochs)
    ap.add_argument("--repeats", type=int, default=2, help="rounds of every job and phase")
    ap.add_argument("--no-busy", action="store_true", help="idle runs only")
    ap.add_argument("--quick", action="store_true", help="2 epochs, one round: a smoke test")
    args = ap.parse_args(argv)
    if args.quick:
        args.epochs, args.repeats = 2, 1
    if not 1 <= args.epochs <= 10000 or not 1 <= args.repeats <= 100:
        ap.error(f"--epochs/--repeats: got {args.epochs}/{args.repeats}; expected 1-10000 "
                 "and 1-100")
    jobs = {"minigrad": minigrad_job}
    if available("torch"):
        import torch  # noqa: F401  (imported before the clock starts, as minigrad is)
        jobs["torch"] = torch_job
    else:
        print("skipped (not importable): torch")
    phases = ["idle"] if args.no_busy else ["idle", "busy"]
    walls: dict = {(j, p): [] for j in jobs for p in phases}
    print(f"python -m vit train, default recipe, {args.epochs} epochs; jobs alternate")
    print(f"{'round':>5} {'phase':<5} {'job':<9} {'wall s':>8} {'epochs/s':>9} "
          f"{'test acc':>9} {'load':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for phase in phases:
                spinner = Spinner(1200.0) if phase == "busy" else None  # bounded if we die
                try:
                    for job, run in jobs.items():
                        load = (load_average() or ["?"])[0]
                        out = os.path.join(tmp, f"{job}-{r}-{phase}")
                        os.makedirs(out, exist_ok=True)
                        t0 = time.perf_counter()
                        acc = run(args.epochs, out)
                        wall = time.perf_counter() - t0
                        walls[job, phase].append(wall)
                        print(f"{r + 1:>5} {phase:<5} {job:<9} {wall:>8.2f} "
                              f"{args.epochs / wall:>9.2f} {acc:>9.4f} {load:>5}", flush=True)
                finally:
                    if spinner:
                        spinner.stop()
    print("\nmedian wall seconds (epochs/s)")
    for phase in phases:
        cells = {j: statistics.median(walls[j, phase]) for j in jobs}
        line = "  ".join(f"{j} {w:.2f} s ({args.epochs / w:.2f})" for j, w in cells.items())
        ratio = (f"; torch / minigrad {cells['torch'] / cells['minigrad']:.2f}"
                 if "torch" in cells else "")
        print(f"{phase:<5} {line}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
