"""Training TinyViT end to end: the training loop, evaluation, metrics and resuming.

``python -m vit train`` (vit/cli/main.py) calls :func:`train`. A run lives in one folder::

    OUT/checkpoint.npz   the whole state after the last completed epoch (checkpoint.py)
    OUT/metrics.jsonl    one JSON object per epoch (flushed and fsynced line by line)
    OUT/.run.lock        while the run lives: its pid, host and start (the flock is on OUT
                         itself: runfolder.py)

Every file is written through vit/io/atomic.py (never through a symlink at its name, with the
umask's permissions), and only the run that holds the lock writes in the folder.

All randomness after the model's initialization (shuffling, mixup) comes from one
``np.random.Generator`` saved in the checkpoint, and the learning-rate schedule is defined by
the total number of epochs, so a run stopped after any epoch and resumed ends with exactly the
weights of an uninterrupted run.
"""
from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import NamedTuple

import numpy as np
from tqdm import tqdm

import minigrad as mg
from minigrad import F, Tensor
from minigrad.shards import shards_for

from ..io.atomic import append_line, open_append_nofollow, write_atomic
from ..io.files import check_built
from ..model.config import activation_bytes, current_limits
from ..model.input_bound import check_inputs
from ..model.losses import mixup, one_hot
from ..model.modelfile import input_range_of
from ..model.normalizer import Normalizer
from ..model.tinyvit import TinyViT
from .augment import random_affine, random_affine_params, random_shift
from .checkpoint import check_progress, load_checkpoint, save_checkpoint
from .data import Dataset, load_data, position_task
from .optimizer import build_optimizer
from .options import TrainOptions
from .runfolder import CHECKPOINT, METRICS, keep_metrics_until, open_run_folder

__all__ = ["TrainingDiverged", "load_task", "build_model", "check_first_step", "evaluate",
           "step_shards", "train"]

class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint was kept."""


def load_task(options: TrainOptions, image_shape: tuple | None = None) -> Dataset:
    """The run's data: the bundled digits, ``options.data``, or the synthetic position task.
    With ``image_shape`` (C, H, W: a checkpoint's model), other images are refused before
    they are converted."""
    if options.task == "position":
        if options.data is not None:
            raise ValueError("--data does not apply to --task position (it is generated)")
        return position_task(patch_size=options.patch_size)
    return load_data(options.data, image_shape)


def build_model(options: TrainOptions, data: Dataset) -> TinyViT:
    """TinyViT shaped for ``data``, initialized from ``options.seed``."""
    channels, size, _ = data.image_shape
    if size % options.patch_size:
        raise ValueError(f"--patch-size {options.patch_size} does not divide the image size "
                         f"{size}")
    if options.dim % options.heads:
        raise ValueError(f"--heads {options.heads} does not divide --dim {options.dim}")
    return TinyViT(img_size=size, patch_size=options.patch_size, in_chans=channels,
                   dim=options.dim, num_heads=options.heads, mlp_dim=options.mlp_dim,
                   num_classes=data.num_classes, use_pos_emb=not options.no_pos_emb,
                   depth=options.depth, dtype=np.dtype(options.dtype), seed=options.seed,
                   fused=options.fused)


def check_first_step(o: TrainOptions, data: Dataset) -> None:
    """Build what the first step builds from ``o`` (the model, the optimizer, one draw of the
    augmentation's sampler), so that whatever they refuse is refused before any file is
    written (with ``--overwrite``, before the previous run is gone)."""
    model = build_model(o, data)
    build_optimizer(o, model, 1)
    # a step's batch is bounded before the augmentation builds it, not by the forward after
    batch = min(o.batch_size, len(data.x_train))
    check_built(f"--batch-size {o.batch_size}", f"the activations of a batch of {batch:,} "
                "images", batch, activation_bytes(model.config, model.dtype.itemsize),
                current_limits()[1], "lower --batch-size")
    if o.rotate or o.scale or o.translate:
        random_affine_params(1, data.image_shape[1:], np.random.default_rng(0), rotate=o.rotate,
                             scale=o.scale, translate=o.translate)


def evaluate(model: TinyViT, x: np.ndarray, y: np.ndarray,
             batch_size: int = 512) -> tuple[float, float, np.ndarray]:
    """(mean cross-entropy, accuracy, predictions) on normalized images, in batches, no graph.
    A TinyViT's batches also stay within its activation bound (``model.config``); any other
    model (``examples/cnn_digits.py``'s CNN) takes ``batch_size`` as given."""
    total, preds = 0.0, []
    if isinstance(model, TinyViT):
        per_image = activation_bytes(model.config, model.dtype.itemsize)
        batch_size = max(1, min(batch_size, current_limits()[1] // per_image))
    with mg.no_grad():
        for i in range(0, len(x), batch_size):
            logits = model(Tensor(x[i:i + batch_size]))
            total += float(F.cross_entropy(logits, y[i:i + batch_size], reduction="sum").item())
            preds.append(np.argmax(logits.data, axis=1))
    pred = np.concatenate(preds)
    return total / len(x), float(np.mean(pred == y)), pred


def step_shards(model, examples: int) -> int:
    """How many shards a training step on ``examples`` images runs in
    (``minigrad.data_parallel``): by the activations the step keeps, so by shape only, and the
    same on every machine and for any thread count. Any model but a TinyViT: one."""
    if not isinstance(model, TinyViT):
        return 1
    return shards_for(examples, examples * activation_bytes(model.config, 1))


def _train_step(model: TinyViT, optimizer, o: TrainOptions, x: np.ndarray, y: np.ndarray,
                num_classes: int, rng: np.random.Generator,
                fill: np.ndarray | float = 0.0) -> tuple[float, int]:
    """One step on a batch; returns (loss, correct predictions against the dominant label).
    ``fill``: what the affine augmentation reads outside the image (per channel)."""
    target = y
    if o.shift:
        x = random_shift(x, o.shift, rng)
    if o.rotate or o.scale or o.translate:
        x = random_affine(x, rng, rotate=o.rotate, scale=o.scale, translate=o.translate,
                          fill=fill)
    if o.mixup > 0:
        mixed = mixup(x, y, num_classes, alpha=o.mixup, rng=rng)
        x, target = mixed.x, mixed.y
        y = np.argmax(target, axis=1)
    if o.probe:  # the spec's closed-form head update; smoothing folded into soft targets
        soft = target if target.ndim == 2 else one_hot(target, num_classes, x.dtype)
        if o.label_smoothing:
            soft = ((1 - o.label_smoothing) * soft + o.label_smoothing / num_classes)
        # TinyViT.train_step's probe, keeping the logits it computed for the accuracy
        loss, logits = model.probe_step(x, soft.astype(x.dtype), optimizer.lr)
    else:
        def shard(xs, ts):
            out = model(Tensor(xs))
            return F.cross_entropy(out, ts, label_smoothing=o.label_smoothing), out.data

        optimizer.zero_grad()
        loss, parts = mg.data_parallel(shard, x, target, shards=step_shards(model, len(x)))
        optimizer.step()
        logits = parts[0][1] if len(parts) == 1 else np.concatenate([p[1] for p in parts])
    return loss, int(np.sum(np.argmax(logits, axis=1) == y))


def train(options: TrainOptions, out: str | os.PathLike, *, resume: bool = False,
          overwrite: bool = False, stop_after: int | None = None, quiet: bool = False,
          log: Callable[[str], None] = print) -> list[dict]:
    """Train (or, with ``resume``, continue) the run in ``out``; returns this call's metrics.

    ``stop_after`` ends the call once that many epochs are complete (as an interruption
    would); the schedule still spans ``options.epochs``. Raises :class:`TrainingDiverged` on
    a non-finite loss (the checkpoint of the last finished epoch stays) and ValueError for
    bad data, options or files.
    """
    o = options.resolved()
    data = load_task(o)  # bad data fails before any folder is made
    check_first_step(o, data)
    out = Path(out)
    # the folder is held until the run ends, however it ends
    with open_run_folder(out, CHECKPOINT, resume, overwrite):
        return _run(options, o, data, out, resume, stop_after, quiet, log)


class _Arrays(NamedTuple):
    """The run's data as the model sees it: normalized images in the model's dtype, labels,
    and ``fill``, what the affine augmentation reads outside an image (per channel)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    fill: np.ndarray


def _saved_run(ckpt_path: Path, o: TrainOptions, data: Dataset):
    """The checkpoint to resume, refused unless its options are ``o`` and its model fits
    ``data``."""
    ck = load_checkpoint(ckpt_path)
    if TrainOptions.from_dict(ck.options).resolved() != o:
        raise ValueError(f"--resume: the options differ from those saved in {ckpt_path}; "
                         "a resumed run continues the saved one exactly")
    _check_fits(ck.model, data)
    return ck


def _check_fits(model: TinyViT, data: Dataset) -> None:
    if model.config["num_classes"] != data.num_classes or \
            (model.config["in_chans"], model.config["img_size"]) != data.image_shape[:2]:
        raise ValueError(f"the data ({data.describe()}) does not fit the checkpoint's model "
                         f"{model.config}")


def _normalized(normalizer: Normalizer, data: Dataset, dtype: np.dtype) -> _Arrays:
    # bilinear interpolation commutes with the per-channel normalization, so augmenting the
    # normalized images with this fill is augmenting the raw ones with zero fill
    fill = normalizer(np.zeros((1, *data.image_shape[:1], 1, 1)), dtype)[0, :, 0, 0]
    return _Arrays(normalizer(data.x_train, dtype), data.y_train,
                   normalizer(data.x_test, dtype), data.y_test, fill)


def _training_state(ck, o: TrainOptions, model: TinyViT, steps: int, out: Path,
                    log: Callable[[str], None]):
    """(optimizer, schedule, rng, epochs done): the checkpoint's, or a fresh start (which
    empties the metrics log)."""
    ckpt_path, metrics_path = out / CHECKPOINT, out / METRICS
    if ck:  # the counters against this data, before any state is loaded
        check_progress(ck, steps, str(ckpt_path))
    optimizer, schedule = build_optimizer(o, model, steps)
    if not ck:
        write_atomic(metrics_path, lambda f: None)  # replaces whatever is there, links too
        return optimizer, schedule, np.random.default_rng([o.seed, 1]), 0
    optimizer.load_state_dict(ck.optim)
    schedule.load_state_dict(ck.sched)
    keep_metrics_until(metrics_path, ck.epoch, log)
    return optimizer, schedule, ck.rng, ck.epoch


def _train_epoch(model: TinyViT, optimizer, schedule, o: TrainOptions, arrays: _Arrays,
                 num_classes: int, rng: np.random.Generator, epoch: int, steps: int, bar,
                 ckpt_path: Path) -> dict:
    """One pass over the shuffled training set, then the test set; the epoch's metrics row.
    Raises TrainingDiverged on a non-finite training or test loss."""
    t0 = time.perf_counter()
    order = rng.permutation(len(arrays.x_train))
    loss_sum, correct, seen = 0.0, 0, 0
    for i in range(steps):
        idx = order[i * o.batch_size:(i + 1) * o.batch_size]
        lr = optimizer.lr
        with np.errstate(over="ignore", invalid="ignore"):  # checked below
            loss, hits = _train_step(model, optimizer, o, arrays.x_train[idx],
                                     arrays.y_train[idx], num_classes, rng, arrays.fill)
        if not math.isfinite(loss):
            raise TrainingDiverged(
                f"the training loss became {loss} at epoch {epoch}, step {i + 1} (lr "
                f"{lr:.3g}); stopped. The last good checkpoint (epoch {epoch - 1}) is kept in "
                f"{ckpt_path}; try a lower --lr")
        schedule.step()
        loss_sum, correct, seen = loss_sum + loss * len(idx), correct + hits, seen + len(idx)
        bar.update()
        bar.set_postfix(loss=f"{loss_sum / seen:.4f}", acc=f"{correct / seen:.3f}",
                        refresh=False)
    with np.errstate(over="ignore", invalid="ignore"):
        test_loss, test_acc, _ = evaluate(model, arrays.x_test, arrays.y_test)
    if not math.isfinite(test_loss):
        raise TrainingDiverged(
            f"the test loss became {test_loss} after epoch {epoch}; stopped. The last good "
            f"checkpoint (epoch {epoch - 1}) is kept in {ckpt_path}")
    return dict(epoch=epoch, train_loss=loss_sum / seen, train_acc=correct / seen,
                test_loss=test_loss, test_acc=test_acc, lr=lr,
                seconds=time.perf_counter() - t0)


def _epoch_line(row: dict, epochs: int) -> str:
    return (f"epoch {row['epoch']:>3}/{epochs}  train loss {row['train_loss']:.4f} acc "
            f"{row['train_acc']:.4f}  test loss {row['test_loss']:.4f} acc "
            f"{row['test_acc']:.4f}  lr {row['lr']:.2e}  {row['seconds']:.2f}s")


def _run(options: TrainOptions, o: TrainOptions, data: Dataset, out: Path, resume: bool,
         stop_after: int | None, quiet: bool, log: Callable[[str], None]) -> list[dict]:
    """The body of :func:`train`, in a folder whose lock is held: restore or start, then
    train, log and checkpoint epoch by epoch."""
    ckpt_path, metrics_path = out / CHECKPOINT, out / METRICS
    ck = _saved_run(ckpt_path, o, data) if resume else None
    normalizer = ck.normalizer if ck else Normalizer.fit(data.x_train)
    # the raw range of the training pixels, kept in the model file for predict's scale check
    # (a checkpoint written before it kept one gets it from the same data)
    input_range = (ck.input_range if ck else None) or input_range_of(data.x_train)
    model = ck.model if ck else build_model(o, data)
    arrays = _normalized(normalizer, data, model.dtype)
    # before any file of the run is written: beyond the bound the losses are NaN
    check_inputs(model, arrays.x_train, "--data training images")
    check_inputs(model, arrays.x_test, "--data test images")
    steps = math.ceil(len(arrays.x_train) / o.batch_size)
    optimizer, schedule, rng, start = _training_state(ck, o, model, steps, out, log)

    def checkpoint(epoch: int) -> None:
        save_checkpoint(ckpt_path, model=model, options=asdict(options), epoch=epoch,
                        normalizer=normalizer, rng=rng, optimizer=optimizer, scheduler=schedule,
                        input_range=input_range)

    if not ck:
        checkpoint(0)
    end = o.epochs if stop_after is None else min(o.epochs, stop_after)
    if end <= start:
        log(f"nothing to do: {ckpt_path} has {start} of {o.epochs} epochs done"
            + ("" if stop_after is None else f" (--stop-after {stop_after})"))
        return []
    log(f"{data.describe()}; {model.num_parameters():,} parameters "
        f"({'linear probe' if o.probe else 'full model'}, {model.dtype.name}); "
        f"epochs {start + 1}..{end} of {o.epochs}, {steps} steps each; run folder {out}")
    history = []
    bar = tqdm(total=(end - start) * steps, disable=quiet, unit="step", dynamic_ncols=True,
               leave=False)
    try:
        with open_append_nofollow(metrics_path) as metrics:
            for epoch in range(start + 1, end + 1):
                bar.set_description(f"epoch {epoch}/{o.epochs}")
                row = _train_epoch(model, optimizer, schedule, o, arrays, data.num_classes,
                                   rng, epoch, steps, bar, ckpt_path)
                append_line(metrics, json.dumps(row), metrics_path)
                checkpoint(epoch)
                history.append(row)
                if epoch == end or epoch % max(1, o.epochs // 10) == 0:
                    (tqdm.write if not quiet else log)(_epoch_line(row, o.epochs))
    finally:
        bar.close()
    return history
