"""The command line: ``python -m vit {train,crossval,eval,predict,plot,gradcheck,export,import}``
(also ``vit``).

Every command that takes a model reads it with one loader (``vit.train.loading.open_model``):
a training checkpoint, a model file or a run folder. Usage errors (unknown options, bad
values, unreadable files, a file of the wrong kind) exit with status 2 and one line on
stderr; a run that diverges, or cannot write (a full disk), exits with status 1. Warnings
(images on another scale, what an older file lacks) are one line each on stderr.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

import minigrad as mg
from minigrad import F, Tensor
from minigrad.runtime.blas import blas_threads
from minigrad.runtime.heap import keep_heap

from ..model.config import MAX_DEPTH, MAX_PARAMETERS, limits
from ..model.losses import mixup
from ..model.modelfile import MissingEntryWarning
from ..model.predict import InputRangeWarning, model_inputs, tta_probabilities
from ..model.tinyvit import TinyViT
from ..train.checkpoint import load_checkpoint
from ..train.crossval import crossval
from ..train.data import load_data
from ..train.loading import Loaded, open_model
from ..train.loop import TrainingDiverged, evaluate, load_task, train
from ..train.options import TrainOptions
from ..train.runfolder import CHECKPOINT, METRICS, read_metrics
from .args import (add_preprocessing_options, degrees, explicit_of, fraction, natural,
                   nonnegative, positive, positive_int, seed_list)
from .attention_maps import cls_attention, cls_self_attention
from .plots import (DPI, FORMATS, confusion_matrix, plot_attention, plot_confusion, plot_curves,
                    require_matplotlib)  # (matplotlib itself is imported only to draw)
from .predict import add_predict_command
from .timm_folder import CONFIG, WEIGHTS, export_timm, import_timm

__all__ = ["main", "build_parser"]

DEFAULTS = TrainOptions()


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line (exit status 2) instead of the usage block."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _model_options(p: argparse.ArgumentParser, small: bool = False) -> None:
    d = TrainOptions(dim=16, heads=2, mlp_dim=32) if small else DEFAULTS
    default = (lambda v: v) if small else (lambda v: None)
    p.add_argument("--patch-size", type=positive_int, default=default(d.patch_size),
                   help=f"patch side P (default {d.patch_size})")
    p.add_argument("--dim", type=positive_int, default=default(d.dim),
                   help=f"token width D (default {d.dim})")
    p.add_argument("--heads", type=positive_int, default=default(d.heads),
                   help=f"attention heads, dividing D (default {d.heads})")
    p.add_argument("--mlp-dim", type=positive_int, default=default(d.mlp_dim),
                   help=f"hidden width of the MLP (default {d.mlp_dim})")
    p.add_argument("--no-pos-emb", action="store_true", default=False if small else None,
                   help="leave out the position embeddings")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand. ``train`` options default to None so that ``--resume``
    can tell which were given."""
    parser = _Parser(prog="vit", description="Train and inspect TinyViT.")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="BLAS threads (default 1: fastest for these small matrices)")
    parser.add_argument("--max-parameters", type=positive_int, default=None, metavar="N",
                        help="refuse models (built, loaded or resumed) of more than N "
                        f"parameters (default {MAX_PARAMETERS:,})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    t = sub.add_parser("train", help="train a model (defaults: full model on the bundled digits)",
                       description="Train TinyViT; every epoch is evaluated, logged to "
                       f"OUT/{METRICS} and checkpointed to OUT/{CHECKPOINT}.")
    t.add_argument("--depth", type=positive_int, default=None,
                   help=f"encoder blocks (default {DEFAULTS.depth}; at most {MAX_DEPTH})")
    t.add_argument("--task", choices=["digits", "position"], default=None,
                   help="digits: the bundled digits or --data; position: the synthetic "
                   "where-is-the-blob task (default digits)")
    t.add_argument("--data", default=None, metavar="PATH",
                   help="a .npz (x, y[, x_test, y_test]) or a folder of MNIST IDX files")
    _model_options(t)
    d = DEFAULTS
    t.add_argument("--epochs", type=positive_int, default=None, help=f"(default {d.epochs})")
    t.add_argument("--batch-size", type=positive_int, default=None,
                   help=f"(default {d.batch_size})")
    t.add_argument("--optimizer", choices=["adamw", "sgd"], default=None,
                   help=f"sgd has momentum --momentum (default {d.optimizer})")
    t.add_argument("--lr", type=positive, default=None,
                   help="peak learning rate (default 3e-3 adamw, 0.02 sgd, 0.5 --probe)")
    t.add_argument("--momentum", type=nonnegative, default=None,
                   help=f"SGD momentum (default {d.momentum})")
    t.add_argument("--weight-decay", type=nonnegative, default=None,
                   help=f"(default {d.weight_decay}; decoupled for adamw)")
    t.add_argument("--no-decay-norm-bias", action="store_true", default=None,
                   help="adamw: no weight decay on biases, LayerNorm parameters, cls_token and "
                   "pos_embed (the timm convention)")
    t.add_argument("--schedule", choices=["onecycle", "cosine", "constant"], default=None,
                   help=f"learning-rate schedule over all epochs (default {d.schedule})")
    t.add_argument("--warmup", type=fraction, default=None, metavar="FRACTION",
                   help="share of the steps warming up (default 0.3 onecycle, 0.05 cosine, "
                   "0 constant)")
    t.add_argument("--mixup", type=nonnegative, default=None, metavar="ALPHA",
                   help=f"mixup Beta(alpha, alpha); 0 disables (default {d.mixup})")
    t.add_argument("--shift", type=natural, default=None, metavar="PIXELS",
                   help=f"random translation by up to PIXELS (default {d.shift})")
    t.add_argument("--rotate", type=degrees, default=None, metavar="DEG",
                   help=f"random rotation in [-DEG, DEG] degrees per image, bilinear, raw "
                   f"pixels 0 outside (default {d.rotate:g})")
    t.add_argument("--scale", type=fraction, default=None, metavar="FRACTION",
                   help=f"random zoom by a factor in [1 - FRACTION, 1 + FRACTION] per image "
                   f"(default {d.scale:g})")
    t.add_argument("--translate", type=nonnegative, default=None, metavar="PIXELS",
                   help=f"random sub-pixel translation in [-PIXELS, PIXELS] per axis and image "
                   f"(default {d.translate:g})")
    t.add_argument("--label-smoothing", type=fraction, default=None, metavar="EPS",
                   help=f"(default {d.label_smoothing})")
    t.add_argument("--probe", action="store_true", default=None,
                   help="train the head only (TinyViT.train_step's linear probe, plain SGD)")
    t.add_argument("--seed", type=natural, default=None, help=f"(default {d.seed})")
    t.add_argument("--dtype", choices=["float32", "float64"], default=None,
                   help=f"(default {d.dtype})")
    t.add_argument("--fused", action="store_true", default=None,
                   help="compute each stage of the model as one op with its hand-derived "
                   "backward (faster for tiny models only; docs/performance.md)")
    t.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="run folder (default runs/TASK)")
    t.add_argument("--resume", action="store_true", help=f"continue the run in OUT/{CHECKPOINT}")
    t.add_argument("--overwrite", action="store_true", help="start over in a used OUT")
    t.add_argument("--stop-after", type=positive_int, default=None, metavar="EPOCH",
                   help="stop once EPOCH epochs are done, resumable (the schedule still "
                   "spans --epochs)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train)

    c = sub.add_parser("crossval", help="stratified k-fold cross-validation of a recipe",
                       description="Cross-validate the training options: stratified k-fold "
                       "over the data (the bundled digits: train and test parts merged), one "
                       "run per fold and seed, scored on its held-out fold at the last epoch; "
                       "writes OUT/crossval.json.")
    names = {f.name for f in fields(TrainOptions)} - {"seed"}
    for action in t._actions:  # the training options of `train`, shared (--seed -> --seeds)
        if action.dest in names:
            c._add_action(action)
    c.add_argument("--folds", type=positive_int, default=5, help="k (default 5; at least 2)")
    c.add_argument("--seeds", type=seed_list, default=[0, 1, 2], metavar="S,S,...",
                   help="a run per fold and seed (default 0,1,2)")
    c.add_argument("--out", type=Path, default=Path("runs") / "crossval", metavar="DIR",
                   help="folder of the folds, runs and crossval.json (default runs/crossval)")
    c.add_argument("--resume", action="store_true", help="continue the runs in OUT")
    c.add_argument("--overwrite", action="store_true", help="start over in a used OUT")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.add_argument("--tta", action="store_true",
                   help="also score each run with test-time augmentation (the softmax "
                   "averaged over the image and its four half-pixel shifts)")
    c.set_defaults(func=cmd_crossval)

    e = sub.add_parser("eval", help="accuracy and confusion matrix of a model",
                       description="Accuracy, loss and confusion matrix on a test split.")
    e.add_argument("checkpoint", type=Path, metavar="MODEL",
                   help="a training checkpoint, its run folder or a model file")
    e.add_argument("--data", default=None, metavar="PATH",
                   help="evaluate on this data's test split (default: the run's data; the "
                   "bundled digits for a model file)")
    e.add_argument("--tta", action="store_true",
                   help="average the softmax over the image and its four half-pixel shifts")
    add_preprocessing_options(e)
    e.set_defaults(func=cmd_eval)

    p = sub.add_parser("plot", help="figures of a run: curves, confusion, CLS attention")
    p.add_argument("run_dir", type=Path, metavar="RUN",
                   help="a run folder (or its checkpoint.npz)")
    p.add_argument("--images", type=positive_int, default=6, help="attention maps to draw")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="where to write the figures (default RUN_DIR)")
    p.add_argument("--format", choices=FORMATS, default="png",
                   help=f"png ({DPI} dpi, the default) or a vector format")
    p.set_defaults(func=cmd_plot)

    g = sub.add_parser("gradcheck", help="check every parameter's gradient in float64",
                       description="Check d loss / d parameter against finite differences in "
                       "float64: of a trained model (MODEL: a checkpoint, run folder or model "
                       "file) at its own parameters on a batch of its data, or of a small "
                       "random model (no MODEL; the options below shape it).")
    g.add_argument("model", type=Path, nargs="?", default=None, metavar="MODEL")
    g.add_argument("--data", default=None, metavar="PATH",
                   help="with MODEL: take the batch from this data (default: the run's data; "
                   "the bundled digits for a model file)")
    add_preprocessing_options(g)
    _model_options(g, small=True)
    g.add_argument("--batch", type=positive_int, default=3, help="images (default 3)")
    g.add_argument("--classes", type=positive_int, default=3, help="classes (default 3)")
    g.add_argument("--img-size", type=positive_int, default=8, help="image side (default 8)")
    g.add_argument("--depth", type=positive_int, default=1,
                   help=f"encoder blocks (default 1; at most {MAX_DEPTH})")
    g.add_argument("--fast", action="store_true", help="random directions, not every element")
    g.add_argument("--seed", type=natural, default=0)
    g.set_defaults(func=cmd_gradcheck)

    x = sub.add_parser("export", help="write a model as timm files (safetensors + config.json)",
                       description="Write DIR/model.safetensors and DIR/config.json: the "
                       "weights and keyword arguments of timm's VisionTransformer that computes "
                       "the same logits (docs/export.md).")
    x.add_argument("checkpoint", type=Path, metavar="MODEL",
                   help="a training checkpoint, its run folder or a model file")
    x.add_argument("--to", required=True, choices=["timm"], help="the target library")
    x.add_argument("--out", required=True, type=Path, metavar="DIR", help="the folder to write")
    add_preprocessing_options(x)
    x.set_defaults(func=cmd_export)

    i = sub.add_parser("import", help="build a model from timm files, saved as one .npz",
                       description="Read DIR/model.safetensors and DIR/config.json (timm's "
                       "VisionTransformer) and save the same network with TinyViT.save.")
    i.add_argument("folder", type=Path, metavar="DIR")
    i.add_argument("--out", required=True, type=Path, metavar="MODEL.npz")
    add_preprocessing_options(i)
    i.set_defaults(func=cmd_import)

    add_predict_command(sub)
    return parser


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


def cmd_eval(args: argparse.Namespace) -> int:

    loaded = open_model_arg(args, args.checkpoint, "vit eval MODEL")
    model = loaded.model
    data, x, y = _eval_data(loaded, args.data)
    if args.tta:
        probs = tta_probabilities(model, x)
        pred = np.argmax(probs, axis=1)
        acc = float(np.mean(pred == y))
        loss = float(-np.mean(np.log(np.maximum(probs[np.arange(len(y)), y], 1e-300))))
    else:
        loss, acc, pred = evaluate(model, x, y)
    k = model.config["num_classes"]
    matrix = confusion_matrix(y, pred, k)
    what = f"epoch {loaded.checkpoint.epoch}" if loaded.checkpoint else "model file"
    print(f"{loaded.path} ({what}) on the test split of {data.describe()}"
          + (" with test-time augmentation (5 views)" if args.tta else ""))
    print(f"accuracy {100 * acc:.2f}% ({int(np.trace(matrix))}/{len(y)}), loss {loss:.4f}")
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
        names, params = zip(*model.named_parameters())
        what = f"{loaded.path}, {n} images of {data.name}"
    else:
        model = TinyViT(img_size=args.img_size, patch_size=args.patch_size, dim=args.dim,
                        num_heads=args.heads, mlp_dim=args.mlp_dim, num_classes=args.classes,
                        use_pos_emb=not args.no_pos_emb, depth=args.depth, dtype=np.float64,
                        seed=args.seed)
        x = rng.standard_normal((args.batch, 1, args.img_size, args.img_size))
        soft = mixup(x, rng.integers(0, args.classes, args.batch), args.classes, rng=rng).y
        names, params = zip(*model.named_parameters())
        for p in params:  # move LayerNorm gains and zero biases off their initial values
            p.data += 0.1 * rng.standard_normal(p.shape)
        what = "a random model"

    def loss(*_: Tensor) -> Tensor:  # mixup's soft targets with label smoothing, as in training
        return F.cross_entropy(model(Tensor(x)), soft, label_smoothing=0.1)

    report = mg.gradcheck(loss, list(params), fast=args.fast, raise_exception=False)
    print(f"gradcheck of TinyViT ({what}; {model.num_parameters()} parameters, float64, "
          f"{'random directions' if args.fast else 'every element'}): d loss / d parameter")
    print(f"{'parameter':<24} {'shape':<12} {'max abs err':>11} {'max rel err':>11}  result")
    for r in report.inputs:
        print(f"{names[r.index]:<24} {str(r.shape):<12} {r.max_abs_err:>11.2e} "
              f"{r.max_rel_err:>11.2e}  {'ok' if r.ok else 'FAIL'}")
    for problem in report.problems:
        print(f"problem: {problem}")
    print("gradcheck " + ("passed" if report.ok else "FAILED"))
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


def _out_of_memory(e: MemoryError) -> str:
    """One line for a MemoryError: what could not be allocated, when NumPy says."""
    shape, dtype = getattr(e, "shape", None), getattr(e, "dtype", None)
    if shape is None or dtype is None:
        return ("not enough memory (MemoryError); expected a smaller model, batch or data set "
                "(or more memory)")
    nbytes = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
    return (f"not enough memory for a {np.dtype(dtype)} array of shape {tuple(shape)} "
            f"({nbytes:,} bytes); expected a smaller model, batch or data set (or more memory)")


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    prefix = f"vit {args.command}: error: "
    keep_heap()  # a step's arrays reuse the process's pages instead of faulting in new ones
    try:
        with blas_threads(args.threads), limits(max_parameters=args.max_parameters), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", InputRangeWarning)
            warnings.simplefilter("always", MissingEntryWarning)
            try:
                return args.func(args)
            finally:
                for w in caught:  # one line each, as everything this command says
                    kind = "warning" if issubclass(w.category, InputRangeWarning) else "note"
                    print(f"vit {args.command}: {kind}: " + " ".join(str(w.message).split()),
                          file=sys.stderr)
    except (ValueError, FileNotFoundError, ImportError) as e:
        print(prefix + " ".join(str(e).split()), file=sys.stderr)
        return 1 if isinstance(e, ImportError) else 2
    except TrainingDiverged as e:
        print(prefix + str(e), file=sys.stderr)
        return 1
    except OSError as e:  # a full disk, an I/O error: the last checkpoint is intact
        print(prefix + " ".join(str(e).split()), file=sys.stderr)
        return 1
    except MemoryError as e:  # a size within the bounds that this machine still cannot hold
        print(prefix + _out_of_memory(e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\nvit {args.command}: interrupted; the last checkpoint is kept (continue with "
              "--resume)", file=sys.stderr)
        return 130
