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

import numpy as np

from minigrad.runtime.blas import blas_threads
from minigrad.runtime.heap import keep_heap

from ..model.config import MAX_DEPTH, MAX_PARAMETERS, limits
from ..model.modelfile import MissingEntryWarning
from ..model.predict import InputRangeWarning
from ..train.loop import TrainingDiverged
from ..train.options import TrainOptions
from ..train.runfolder import CHECKPOINT, METRICS
from .args import (
    add_preprocessing_options,
    degrees,
    fraction,
    natural,
    nonnegative,
    positive,
    positive_int,
    seed_list,
)
from .commands import (
    DEFAULTS,
    cmd_crossval,
    cmd_eval,
    cmd_export,
    cmd_gradcheck,
    cmd_import,
    cmd_plot,
    cmd_train,
)
from .plots import (
    DPI,
    FORMATS,  # (matplotlib itself is imported only to draw)
)
from .predict import add_predict_command

__all__ = ["main", "build_parser"]

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
    g.add_argument("--per-op", action="store_true",
                   help="check each op of one forward and loss at its own inputs (which op's "
                   "backward formula is wrong), not the whole function; with --fast, random "
                   "directions of each op's inputs")
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
