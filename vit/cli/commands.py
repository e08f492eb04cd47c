"""The work of each ``python -m vit`` command, given its parsed arguments: ``cmd_<name>(args)
-> exit status`` (the parser and the error handling are vit/cli/main.py)."""
from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

import minigrad as mg
from minigrad import F, Tensor

from ..io.files import check_built
from ..model.config import current_limits
from ..model.losses import mixup
from ..model.predict import model_inputs, tta_probabilities
from ..model.tinyvit import TinyViT
from ..train.checkpoint import load_checkpoint
from ..train.crossval import crossval
from ..train.data import load_data
from ..train.loading import Loaded, open_model
from ..train.loop import evaluate, load_task, train
from ..train.options import TrainOptions
from ..train.runfolder import CHECKPOINT, METRICS, read_metrics
from .args import (
    explicit_of,
)
from .attention_maps import cls_attention, cls_self_attention
from .plots import (
    confusion_matrix,
    plot_attention,
    plot_confusion,
    plot_curves,
    require_matplotlib,  # (matplotlib itself is imported only to draw)
)
from .timm_folder import CONFIG, WEIGHTS, export_timm, import_timm

__all__ = ["cmd_train", "cmd_crossval", "cmd_eval", "cmd_plot", "cmd_gradcheck", "cmd_export",
           "cmd_import", "open_model_arg", "DEFAULTS"]

#: The training options' defaults, as the help text shows them.
DEFAULTS = TrainOptions()


def _given(args: argparse.Namespace) -> dict:
    """The training options given on the command line."""
    return {f.name: getattr(args, f.name) for f in fields(TrainOptions)
            if getattr(args, f.name, None) is not None}


def cmd_train(args: argparse.Namespace) -> int:

    given = _given(args)
    out = args.out or Path("runs") / given.get("task", DEFAULTS.task)
    if args.resume:
        if not (out / CHECKPOINT).exists():
            raise ValueError(f"--resume: {out / CHECKPOINT} does not exist; nothing to resume")
        options = TrainOptions.from_dict(load_checkpoint(out / CHECKPOINT).options)
        resolved = options.resolved()
        for name, value in given.items():
            saved = getattr(resolved, name)
            if value != saved:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"--resume continues the saved run exactly, but {flag} {value} "
                                 f"differs from its {saved}; drop {flag} or start a new --out")
    else:
        options = TrainOptions(**given)
    history = train(options, out, resume=args.resume, overwrite=args.overwrite,
                    stop_after=args.stop_after, quiet=args.quiet)
    if history:
        last = history[-1]
        seconds = sum(r["seconds"] for r in history)
        print(f"done: epoch {last['epoch']}/{options.epochs}, test accuracy "
              f"{100 * last['test_acc']:.2f}% (loss {last['test_loss']:.4f}), {seconds:.1f}s "
              f"for {len(history)} epochs; run folder {out}")
    return 0


def cmd_crossval(args: argparse.Namespace) -> int:

    crossval(TrainOptions(**_given(args)), args.out, folds=args.folds, seeds=args.seeds,
             resume=args.resume, overwrite=args.overwrite, quiet=args.quiet, tta=args.tta)
    return 0


def open_model_arg(args: argparse.Namespace, path: Path, what: str) -> Loaded:
    """The model of a command's MODEL argument, through the one loader, with the command
    line's explicit preprocessing (for a model file that does not state its own)."""
    return open_model(path, explicit=explicit_of(args), what=what)


def _model_data(loaded: Loaded, data_path: str | None) -> Any:
    """The data a model is evaluated on: ``data_path``, else a checkpoint's run's data, else
    (a model file) the bundled digits; refused unless its images and classes fit the model."""
    cfg = loaded.model.config
    shape = (cfg["in_chans"], cfg["img_size"], cfg["img_size"])
    o = TrainOptions.from_dict(loaded.checkpoint.options) if loaded.checkpoint else TrainOptions()
    data = load_data(data_path, shape) if data_path is not None else load_task(o, shape)
    if data.image_shape != shape or max(data.y_test.max(), data.y_train.max()) >= \
            cfg["num_classes"]:
        hint = "" if data_path is not None or loaded.checkpoint else " (give --data)"
        raise ValueError(f"{data.describe()} does not fit the model of {loaded.path} "
                         f"({cfg['in_chans']}x{cfg['img_size']}x{cfg['img_size']} images, "
                         f"{cfg['num_classes']} classes){hint}")
    return data


def _eval_data(loaded: Loaded, data_path: str | None) -> tuple[Any, np.ndarray, np.ndarray]:
    """The model's test inputs (normalized as predict does) and labels."""
    data = _model_data(loaded, data_path)
    return data, model_inputs(loaded.model, data.x_test, f"{data.name} x_test"), data.y_test


#: The most classes whose confusion matrix ``vit eval`` prints.
MAX_PRINTED_CLASSES = 30


def cmd_eval(args: argparse.Namespace) -> int:

    loaded = open_model_arg(args, args.checkpoint, "vit eval MODEL")
    model = loaded.model
    data, x, y = _eval_data(loaded, args.data)
    k = model.config["num_classes"]
    # what is built grows with the model file's class count: the scores (N, K) and the
    # (K, K) confusion matrix are bounded before either exists
    limit = current_limits()[1]
    check_built(str(loaded.path), f"the scores of {len(y):,} images x {k:,} classes",
                len(y) * k, 5 * 8, limit)
    check_built(str(loaded.path), f"the confusion matrix of {k:,} classes", k * k, 8, limit)
    if args.tta:
        probs = tta_probabilities(model, x)
        pred = np.argmax(probs, axis=1)
        acc = float(np.mean(pred == y))
        loss = float(-np.mean(np.log(np.maximum(probs[np.arange(len(y)), y], 1e-300))))
    else:
        loss, acc, pred = evaluate(model, x, y)
    matrix = confusion_matrix(y, pred, k)
    what = f"epoch {loaded.checkpoint.epoch}" if loaded.checkpoint else "model file"
    print(f"{loaded.path} ({what}) on the test split of {data.describe()}"
          + (" with test-time augmentation (5 views)" if args.tta else ""))
    print(f"accuracy {100 * acc:.2f}% ({int(np.trace(matrix))}/{len(y)}), loss {loss:.4f}")
    if k > MAX_PRINTED_CLASSES:  # a screen of numbers nobody reads, and unbounded output
        print(f"confusion matrix of {k:,} classes: not printed (more than "
              f"{MAX_PRINTED_CLASSES})")
        return 0
    print("confusion matrix (rows: true class, columns: predicted class)")
    width = max(3, len(str(matrix.max())) + 1)
    print("true\\pred" + "".join(f"{j:>{width}}" for j in range(k)))
    for i in range(k):
        print(f"{i:>9}" + "".join(f"{v:>{width}}" for v in matrix[i]))
    return 0


def cmd_plot(args: argparse.Namespace) -> int:

    require_matplotlib()
    run = args.run_dir
    if run.is_file():  # its checkpoint: the run is the folder holding it
        loaded = open_model_arg(args, run, "vit plot RUN")
        if loaded.checkpoint is None:
            raise ValueError(f"{run}: a model file; vit plot wants a run folder or its "
                             f"{CHECKPOINT} (the curves come from the run's {METRICS})")
        run = run.parent
    if not (run / METRICS).exists():
        raise ValueError(f"{run}: no {METRICS}; expected a run folder written by `vit train` "
                         f"(or its {CHECKPOINT})")
    rows = read_metrics(run / METRICS,  # a torn last line: one line on stderr, not a warning
                        note=lambda message: print(f"vit plot: note: {message}", file=sys.stderr))
    if not rows:
        raise ValueError(f"{run / METRICS}: no completed epoch to plot")
    loaded = open_model_arg(args, run, "vit plot RUN")
    ck = loaded.checkpoint
    if ck is None:  # (a run folder's model is its checkpoint: not reached)
        raise ValueError(f"vit plot RUN: {loaded.describe()} is not a training checkpoint")
    data, x, y = _eval_data(loaded, None)
    _, acc, pred = evaluate(ck.model, x, y)
    out = args.out or run
    out.mkdir(parents=True, exist_ok=True)
    pick = np.linspace(0, len(x) - 1, min(args.images, len(x))).astype(int)
    fmt = args.format
    written = [
        plot_curves(rows, out / f"curves.{fmt}"),
        plot_confusion(confusion_matrix(y, pred, data.num_classes), out / f"confusion.{fmt}",
                       f"test confusion, epoch {ck.epoch} ({100 * acc:.1f}%)"),
        plot_attention(data.x_test[pick], cls_attention(ck.model, x[pick]), y[pick], pred[pick],
                       out / f"attention.{fmt}", cls_self_attention(ck.model, x[pick])),
    ]
    for path in written:
        print(f"wrote {path}")
    return 0


def _float64_copy(model: TinyViT) -> TinyViT:
    """``model`` rebuilt in float64, its parameters cast (exactly: float64 holds every float32
    and float16), with its preprocessing."""
    copy = TinyViT(**model.config, dtype=np.float64)
    copy.load_state_dict({k: v.astype(np.float64) for k, v in model.state_dict().items()})
    copy.normalizer, copy.input_range = model.normalizer, model.input_range
    return copy


def cmd_gradcheck(args: argparse.Namespace) -> int:

    rng = np.random.default_rng(args.seed)
    if args.model is not None:  # the trained model, at its own parameters, on its data
        loaded = open_model_arg(args, args.model, "vit gradcheck MODEL")
        model = _float64_copy(loaded.model)
        data = _model_data(loaded, args.data)
        n = min(args.batch, len(data.x_train))
        x = model_inputs(model, data.x_train[:n], f"{data.name} x")
        K = model.config["num_classes"]
        soft = mixup(x, data.y_train[:n], K, rng=rng).y
        names, params = zip(*model.named_parameters(), strict=True)
        what = f"{loaded.path}, {n} images of {data.name}"
    else:
        model = TinyViT(img_size=args.img_size, patch_size=args.patch_size, dim=args.dim,
                        num_heads=args.heads, mlp_dim=args.mlp_dim, num_classes=args.classes,
                        use_pos_emb=not args.no_pos_emb, depth=args.depth, dtype=np.float64,
                        seed=args.seed)
        x = rng.standard_normal((args.batch, 1, args.img_size, args.img_size))
        soft = mixup(x, rng.integers(0, args.classes, args.batch), args.classes, rng=rng).y
        names, params = zip(*model.named_parameters(), strict=True)
        for p in params:  # move LayerNorm gains and zero biases off their initial values
            p.data += 0.1 * rng.standard_normal(p.shape)
        what = "a random model"

    def loss(*_: Tensor) -> Tensor:  # mixup's soft targets with label smoothing, as in training
        return F.cross_entropy(model(Tensor(x)), soft, label_smoothing=0.1)

    if args.per_op:
        return _gradcheck_per_op(loss, model, what, args.fast)
    report = mg.gradcheck(loss, list(params), fast=args.fast, raise_exception=False)
    print(f"gradcheck of TinyViT ({what}; {model.num_parameters()} parameters, float64, "
          f"{'random directions' if args.fast else 'every element'}): d loss / d parameter")
    print(f"{'parameter':<24} {'shape':<12} {'max abs err':>11} {'max rel err':>11}  result")
    for r in report.inputs:
        print(f"{names[r.index]:<24} {r.shape!s:<12} {r.max_abs_err:>11.2e} "
              f"{r.max_rel_err:>11.2e}  {'ok' if r.ok else 'FAIL'}")
    for problem in report.problems:
        print(f"problem: {problem}")
    print("gradcheck " + ("passed" if report.ok else "FAILED"))
    return 0 if report.ok else 1


def _gradcheck_per_op(loss: Any, model: TinyViT, what: str, fast: bool) -> int:
    """``vit gradcheck --per-op``: every op of one forward and loss, each checked at its own
    inputs (``mg.gradcheck_ops``); one line per op kind, then the failing and the unchecked
    calls in detail. Exit status 1 when an op failed."""
    report = mg.gradcheck_ops(loss, fast=fast, raise_exception=False)
    print(f"gradcheck op by op of TinyViT ({what}; {model.num_parameters()} parameters, "
          f"float64, {'random directions' if fast else 'every element'}): each op's VJPs "
          "against finite differences of its own forward at its own inputs")
    print(f"{'op':<24} {'ran':>5} {'passed':>7} {'failed':>7} {'unchecked':>10}")
    for name, ran, passed, failed, unchecked in report.kinds():
        print(f"{name:<24} {ran:>5} {passed:>7} {failed:>7} {unchecked:>10}")
    for op in report.failed + report.unchecked:
        print(op.describe())
    checked = len(report.ops) - len(report.unchecked)
    print(f"gradcheck {'passed' if report.ok else 'FAILED'} ({checked} of {len(report.ops)} op "
          f"calls checked, {len(report.failed)} failed, {len(report.unchecked)} unchecked)")
    return 0 if report.ok else 1


def cmd_export(args: argparse.Namespace) -> int:

    model, folder = export_timm(args.checkpoint, args.out, explicit_of(args))
    c = model.config
    print(f"wrote {folder / WEIGHTS} and {folder / CONFIG}: timm VisionTransformer, depth "
          f"{c.get('depth', 1)}, embed_dim {c['dim']}, {c['num_heads']} heads, "
          f"{model.num_parameters()} parameters in {model.dtype}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:

    model = import_timm(args.folder, args.out, explicit_of(args))
    pre = "inputs used as given" if model.normalizer is None else \
        f"normalized by mean {model.normalizer.mean.tolist()} std {model.normalizer.std.tolist()}"
    print(f"wrote {args.out}: TinyViT {model.config}, {model.dtype}, {pre} (load it with "
          "vit.load; every command takes it)")
    return 0
