"""TrainOptions: everything that defines a training run, checked in one place.

The command line (vit/cli/args.py), the Python API and the checkpoint loader all build
options through :class:`TrainOptions`, so every value is validated the same way: TypeError for
a wrong type, ValueError for a wrong value, each naming the field and its command-line option.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from types import MappingProxyType

import numpy as np

from ..io.files import is_finite_real, shorten
from ..model.config import MAX_DEPTH, current_limits, parameter_count
from .augment import MAX_TRANSLATE
from .runfolder import MAX_EPOCH

__all__ = ["TrainOptions", "MAX_EPOCHS", "ADDED_LATER"]

#: The most epochs of a run (the metrics log's bound), and the largest integer option (an
#: int64, as checkpoints store them).
MAX_EPOCHS = MAX_EPOCH
MAX_INT = 2**63 - 1

#: Options added after checkpoints were first saved, with the value that reproduces the runs
#: saved without them (their behaviour before the option existed), not today's default.
ADDED_LATER = {"rotate": 0.0, "scale": 0.0, "translate": 0.0, "depth": 1, "fused": False}


@dataclass
class TrainOptions:
    """Everything that defines a run (saved in its checkpoint). ``lr`` and ``warmup`` of
    None take a default that depends on the optimizer / schedule (:meth:`resolved`)."""

    task: str = "digits"  # "digits" (bundled, or --data) or "position" (synthetic)
    data: str | None = None
    patch_size: int = 4
    dim: int = 64
    heads: int = 4
    mlp_dim: int = 128
    depth: int = 1  # encoder blocks (1: the contract's model)
    no_pos_emb: bool = False
    epochs: int = 150
    batch_size: int = 64
    optimizer: str = "adamw"  # "adamw" or "sgd" (with momentum)
    lr: float | None = None
    momentum: float = 0.9
    weight_decay: float = 0.05
    no_decay_norm_bias: bool = False  # adamw: no weight decay on biases, norms, cls, pos_embed
    schedule: str = "onecycle"  # "onecycle", "cosine" or "constant"
    warmup: float | None = None  # share of the steps spent warming up
    mixup: float = 0.2  # Beta(alpha, alpha); 0 disables
    shift: int = 0  # random translation by up to this many pixels (edges replicated)
    # random affine per image (vit/train/augment.py), bilinear, raw pixel value 0 outside; the
    # defaults were chosen on validation folds (scripts/recipe_search.py --cv)
    rotate: float = 10.0  # degrees, uniform in [-rotate, rotate]
    scale: float = 0.1  # zoom factor uniform in [1 - scale, 1 + scale]
    translate: float = 0.5  # pixels (sub-pixel), uniform in [-translate, translate] per axis
    label_smoothing: float = 0.0
    probe: bool = False  # head only: TinyViT.train_step's linear probe (plain SGD)
    seed: int = 0
    dtype: str = "float32"
    fused: bool = False  # TinyViT(fused=True): each stage one recorded op (vit/model/fused.py)

    def resolved(self) -> TrainOptions:
        """A copy with the defaults that depend on other options filled in."""
        lr, warmup = self.lr, self.warmup
        if lr is None:
            lr = 0.5 if self.probe else {"adamw": 3e-3, "sgd": 0.02}[self.optimizer]
        if warmup is None:
            warmup = {"onecycle": 0.3, "cosine": 0.05, "constant": 0.0}[self.schedule]
        return TrainOptions(**{**asdict(self), "lr": float(lr), "warmup": float(warmup)})

    @classmethod
    def from_dict(cls, values: dict) -> TrainOptions:
        """Options from a mapping of field names (a checkpoint's JSON), validated."""
        if not isinstance(values, dict):
            raise TypeError(f"training options: got {type(values).__name__}; expected a "
                            "mapping of option names to values")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(f"unknown training options {[shorten(k) for k in unknown[:5]]}; "
                             "expected only the fields of TrainOptions")
        return cls(**{**ADDED_LATER, **values})

    #: The allowed names of the options that name things (never looked up any other way).
    CHOICES = MappingProxyType({
        "task": ("digits", "position"), "optimizer": ("adamw", "sgd"),
        "schedule": ("onecycle", "cosine", "constant"), "dtype": ("float32", "float64")})

    def __post_init__(self) -> None:
        """Every field checked, in one place (the CLI, the API and the checkpoint loader
        all build options through here): TypeError for a wrong type, ValueError for a wrong
        value, each naming the field and its command-line option."""
        def name(field: str) -> str:
            return f"TrainOptions {field} (--{field.replace('_', '-')})"

        def number(field: str, low: float, high: float = math.inf, *, low_open=False,
                   high_open=False, integer=False, optional=False) -> None:
            value = getattr(self, field)
            if value is None and optional:
                return
            kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
            want = "an integer" if integer else "a number"
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, kinds):
                raise TypeError(f"{name(field)}: got {shorten(value)}; expected {want}"
                                + (" or None" if optional else ""))
            if integer and high == math.inf:
                high = MAX_INT  # an int64 everywhere it is stored or counted
            # is_finite_real first: math.isfinite(10**400) raises OverflowError
            ok = (is_finite_real(value) and (value > low if low_open else value >= low)
                  and (value < high if high_open else value <= high))
            if not ok:
                left, right = "(" if low_open else "[", ")" if high_open else "]"
                shown_high = "2**63 - 1" if high == MAX_INT else f"{high:g}"
                span = (f"{'>' if low_open else '>='} {low:g}" if high == math.inf else
                        f"in {left}{low:g}, {shown_high}{right}")
                raise ValueError(f"{name(field)}: got {shorten(value)}; expected {want} {span}")

        for field, allowed in self.CHOICES.items():
            if getattr(self, field) not in allowed:
                raise ValueError(f"{name(field)}: got {shorten(getattr(self, field))}; expected "
                                 f"one of {', '.join(repr(a) for a in allowed)}")
        if self.data is not None and not isinstance(self.data, str):
            raise TypeError(f"{name('data')}: got {type(self.data).__name__} "
                            f"{shorten(self.data)}; expected a path (str) or None")
        for field in ("patch_size", "dim", "heads", "mlp_dim", "batch_size"):
            number(field, 1, integer=True)
        number("epochs", 1, MAX_EPOCHS, integer=True)
        number("depth", 1, MAX_DEPTH, integer=True)
        number("seed", 0, integer=True)
        number("shift", 0, int(MAX_TRANSLATE), integer=True)  # the same bound as translate's
        for field in ("no_pos_emb", "no_decay_norm_bias", "probe", "fused"):
            if not isinstance(getattr(self, field), (bool, np.bool_)):
                raise TypeError(f"{name(field)}: got {shorten(getattr(self, field))}; expected "
                                "True or False")
        number("lr", 0, low_open=True, optional=True)
        number("warmup", 0, 1, high_open=True, optional=True)
        for field in ("momentum", "weight_decay", "mixup"):
            number(field, 0)
        number("label_smoothing", 0, 1, high_open=True)
        number("rotate", 0, 180)
        number("scale", 0, 1, high_open=True)
        number("translate", 0, MAX_TRANSLATE)
        # the optimizer keeps these in the parameters' dtype: each must be a finite number of
        # that dtype (1e39 is a float64 and an infinite float32), checked before any file
        largest = float(np.finfo(np.dtype(self.dtype)).max)
        for field in ("lr", "momentum", "weight_decay"):
            value = getattr(self, field)
            if value is not None and value > largest:
                raise ValueError(f"{name(field)}: got {shorten(value)}; expected at most "
                                 f"{largest:g}, the largest {self.dtype} (the dtype the "
                                 "parameters are updated in)")
        if self.dim % self.heads:
            raise ValueError(f"{name('heads')}: --heads {self.heads} does not divide --dim "
                             f"{self.dim}; expected a divisor of --dim")
        # The model's size whatever the data: one patch, one channel, two classes. The exact
        # count, with the data's shape, is checked again when the model is built.
        least = parameter_count(dict(img_size=self.patch_size, patch_size=self.patch_size,
                                     in_chans=1, dim=self.dim, num_heads=self.heads,
                                     mlp_dim=self.mlp_dim, num_classes=2,
                                     use_pos_emb=not self.no_pos_emb, depth=self.depth))
        limit = current_limits()[0]
        if least > limit:
            raise ValueError(f"TrainOptions --dim {self.dim}, --mlp-dim {self.mlp_dim}, "
                             f"--depth {self.depth}, "
                             f"--patch-size {self.patch_size}: a model of at least {least:,} "
                             f"parameters; expected at most {limit:,} (vit --max-parameters N "
                             "raises the limit)")
