"""Training checkpoints: one ``.npz`` holding everything a run needs to continue bit for bit.

Entries (no pickle anywhere; JSON travels in 0-d string arrays)::

    format           "vit-train/1"
    config           the model's constructor arguments and dtype (as ``TinyViT.save``; one
                     without ``depth``, from before it existed, is a model of one block)
    param/<name>     every model parameter
    norm/mean, norm/std   the training pixels' per-channel statistics
    input/range      the smallest and largest training pixel (absent in checkpoints
                     written before it existed: then unknown)
    options          the training options of the run (JSON)
    epoch            epochs completed
    optim/<key>      the optimizer's state_dict()
    sched/<key>      the schedule's state_dict()
    rng              the np.random.Generator's bit_generator.state (JSON)

The first five are a model file's entries (vit/model/modelfile.py: the model layer owns
them), so ``vit.load`` reads the model of a checkpoint as it reads a model file.

Written atomically (temporary file, fsync, rename) by ``vit.io.npz.save_npz_atomic``, so an
interrupted write leaves the previous checkpoint intact.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..io.files import shorten
from ..io.npz import json_entry, load_npz, save_npz_atomic
from ..model.config import check_config, limits, parameter_shapes, parse_config
from ..model.modelfile import Preprocessing, model_entries, read_preprocessing
from ..model.normalizer import Normalizer
from ..model.tinyvit import TinyViT
from .optimizer import decays
from .options import TrainOptions
from .rngstate import rng_from_array, rng_to_array

__all__ = ["FORMAT", "Checkpoint", "save_checkpoint", "load_checkpoint", "checkpoint_from_entries",
           "validate_entries",
           "check_progress"]

FORMAT = "vit-train/1"


def _json_array(value: Any) -> np.ndarray:
    return np.array(json.dumps(value, sort_keys=True))


@dataclass
class Checkpoint:
    """What :func:`load_checkpoint` returns. ``optim`` and ``sched`` are the saved state
    dicts, to be loaded into an optimizer and schedule built from ``options``."""

    model: TinyViT  # with its normalizer and input_range attached, as vit.load gives it
    options: dict
    epoch: int
    normalizer: Normalizer
    rng: np.random.Generator
    optim: dict
    sched: dict
    input_range: tuple[float, float] | None = None
    notes: tuple[str, ...] = ()  # what an older checkpoint lacks


def save_checkpoint(path: str | os.PathLike, *, model: TinyViT, options: dict, epoch: int,
                    normalizer: Normalizer, rng: np.random.Generator, optimizer: Any,
                    scheduler: Any, input_range: tuple[float, float] | None = None) -> None:
    """Write the whole training state to ``path`` atomically: the model file's entries
    (``input_range``: the raw training pixels' lowest and highest value) and the run's."""
    arrays: dict[str, np.ndarray] = {
        "format": np.array(FORMAT),
        **model_entries(model.config, model.dtype, model.state_dict(),
                        Preprocessing(normalizer, input_range)),
        "options": _json_array(options),
        "epoch": np.array(epoch, dtype=np.int64),
        "rng": rng_to_array(rng),
    }
    arrays.update((f"optim/{k}", v) for k, v in optimizer.state_dict().items())
    arrays.update((f"sched/{k}", v) for k, v in scheduler.state_dict().items())
    save_npz_atomic(path, arrays)


def _group(arrays: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


# ---- the schema of the entries ---------------------------------------------------------------
_FIXED = ("format", "config", "options", "epoch", "norm/mean", "norm/std", "rng")
_OPTIONAL = ("input/range",)  # written since the model file held it
_GROUPS = ("param/", "optim/", "sched/")
#: A scalar entry's kind and range: ("int" | "float" | "bool", low, high, low_open, high_open).
_INT, _NONNEG = ("int", 0, None, False, False), ("float", 0, None, False, False)
_POS = ("float", 0, None, True, False)
_UNIT = ("float", 0, 1, False, True)  # [0, 1)
_BOOL = ("bool", None, None, False, False)
#: optimizer -> hyperparameters saved at the top and per group (``group.<g>.<name>``, all
#: but lr); per-parameter buffers and counters (``state.<i>.<name>``).
_OPTIM = {
    "sgd": ({"lr": _NONNEG, "momentum": _NONNEG, "dampening": ("float", 0, 1, False, False),
             "weight_decay": _NONNEG, "nesterov": _BOOL}, ("momentum_buffer",), ()),
    "adamw": ({"lr": _NONNEG, "betas": "betas", "eps": _POS, "weight_decay": _NONNEG},
              ("exp_avg", "exp_avg_sq"), ("step",)),
}
_SCHED = {
    "onecycle": {"last_step": _INT, "max_lr": _POS, "total_steps": ("int", 1, None, False, False),
                 "pct_start": _UNIT, "div_factor": _POS, "final_div_factor": _POS},
    "cosine": {"last_step": _INT, "base_lr": _POS, "warmup_steps": _INT,
               "total_steps": ("int", 1, None, False, False), "min_lr": _NONNEG},
}
_SCHED["constant"] = _SCHED["cosine"]


_I64_MAX = 2**63 - 1


def _describe(a: np.ndarray) -> str:
    """An entry's dtype and shape, and its value if it holds one (cut: ``shorten``)."""
    if a.size == 1 and a.dtype.kind in "biufU":
        value = shorten(a.reshape(()).item())
        return f"{a.dtype} {value}" if a.shape == () else \
            f"{a.dtype} of shape {a.shape} holding {value}"
    return f"{a.dtype} of shape {a.shape}"


def _scalar(arrays: dict, key: str, spec, where: str):
    """The 0-d entry ``key`` as a Python number, checked against ``spec``."""
    a = np.asarray(arrays[key])
    kind, low, high, low_open, high_open = spec
    kinds = {"int": "iu", "float": "iuf", "bool": "b"}[kind]
    want = {"int": "an integer", "float": "a real number", "bool": "true or false"}[kind]
    if a.shape != () or a.dtype.kind not in kinds:
        raise ValueError(f"{where}: entry {key!r} is {_describe(a)}; expected a 0-d array of "
                         f"{want}")
    value = a.item()
    if kind == "bool":
        return value
    if kind == "int" and high is None:
        high = _I64_MAX  # every counter is an int64 where it is used (a uint64 may be 2**64-1)
    ok = np.isfinite(value) and (low is None or (value > low if low_open else value >= low)) \
        and (high is None or (value < high if high_open else value <= high))
    if not ok:
        span = f"{'>' if low_open else '>='} {low}" + (
            "" if high is None else f" and {'<' if high_open else '<='} "
            f"{'2**63 - 1' if high == _I64_MAX else high}")
        raise ValueError(f"{where}: entry {key!r} holds {shorten(value)}; expected {want} "
                         f"{span}")
    return value


def _finite_array(arrays: dict, key: str, shape: tuple, dtype: np.dtype, where: str) -> None:
    a = np.asarray(arrays[key])
    if a.shape != tuple(shape) or a.dtype != dtype:
        raise ValueError(f"{where}: entry {key!r} is {a.dtype} of shape {a.shape}; expected "
                         f"{dtype} of shape {tuple(shape)}")
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise ValueError(f"{where}: entry {key!r} holds {int(np.sum(~np.isfinite(a)))} "
                         "non-finite values (nan or inf); expected finite numbers")


def _check_keys(arrays: dict, expected: set, prefix: str, where: str) -> None:
    got = {k for k in arrays if k.startswith(prefix)}
    if got - expected:
        raise ValueError(f"{where}: unexpected entries {sorted(got - expected)[:5]}; expected "
                         f"only {sorted(expected)[:8]}{' ...' if len(expected) > 8 else ''}")
    if expected - got:
        raise ValueError(f"{where}: missing entries {sorted(expected - got)[:5]}; expected "
                         f"every one of the {len(expected)} {prefix}* entries")


def _optimizer_params(options, shapes: dict) -> list[tuple[int, ...]]:
    """The shapes of the optimizer's parameters, in its order (as ``build_optimizer``)."""
    if options.probe:
        return [shapes["head.weight"], shapes["head.bias"]]
    if options.no_decay_norm_bias and options.optimizer == "adamw":
        return ([s for n, s in shapes.items() if decays(n, s)]
                + [s for n, s in shapes.items() if not decays(n, s)])
    return list(shapes.values())


def _check_optim(arrays: dict, options, shapes: dict, dtype: np.dtype, where: str) -> int:
    kind = "sgd" if options.probe else options.optimizer
    hyper, buffers, counters = _OPTIM[kind]
    params = _optimizer_params(options, shapes)
    groups = 2 if options.no_decay_norm_bias and kind == "adamw" else 1
    expected = {"optim/num_params", "optim/step_count", "optim/num_groups"}
    expected |= {f"optim/{h}" for h in hyper}
    expected |= {f"optim/group.{g}.{h}" for g in range(groups) for h in ("size", *hyper)
                 if h != "lr"}
    per_param = {k for k in arrays if k.startswith("optim/state.")}
    for key in sorted(per_param):
        index, _, name = key[len("optim/state."):].partition(".")
        if not (index.isdigit() and int(index) < len(params) and name in buffers + counters
                and str(int(index)) == index):
            raise ValueError(f"{where}: unexpected entry {key!r}; expected optim/state.<i>."
                             f"<{'|'.join(buffers + counters)}> with i < {len(params)}")
    _check_keys(arrays, expected | per_param, "optim/", where)
    for key, want in (("num_params", len(params)), ("num_groups", groups)):
        value = _scalar(arrays, f"optim/{key}", _INT, where)
        if value != want:
            raise ValueError(f"{where}: entry 'optim/{key}' holds {value}; expected {want} for "
                             f"this model and options")
    steps = _scalar(arrays, "optim/step_count", _INT, where)
    sizes = [_scalar(arrays, f"optim/group.{g}.size", _INT, where) for g in range(groups)]
    if sum(sizes) != len(params):
        raise ValueError(f"{where}: entries 'optim/group.*.size' hold {sizes}; expected sizes "
                         f"adding up to {len(params)}")
    for key in (k for k in expected if k.startswith("optim/")):
        name = key.rpartition(".")[2] if key.startswith("optim/group.") else key[len("optim/"):]
        spec = hyper.get(name)
        if spec == "betas":
            _finite_array(arrays, key, (2,), np.dtype(np.float64), where)
            if not np.all((0 <= arrays[key]) & (arrays[key] < 1)):
                raise ValueError(f"{where}: entry {key!r} holds {arrays[key].tolist()}; "
                                 "expected two numbers in [0, 1)")
        elif spec is not None:
            _scalar(arrays, key, spec, where)
    for i, shape in enumerate(params):
        present = {n for n in buffers + counters if f"optim/state.{i}.{n}" in arrays}
        if present and present != set(buffers + counters):
            raise ValueError(f"{where}: optim/state.{i} has {sorted(present)}; expected all of "
                             f"{sorted(buffers + counters)} or none")
        for n in buffers if present else ():
            _finite_array(arrays, f"optim/state.{i}.{n}", shape, dtype, where)
            if n == "exp_avg_sq" and np.any(arrays[f"optim/state.{i}.{n}"] < 0):
                raise ValueError(f"{where}: entry 'optim/state.{i}.{n}' holds negative values; "
                                 "expected a running mean of squares, every value >= 0")
        for n in counters if present else ():  # every parameter steps with the optimizer
            value = _scalar(arrays, f"optim/state.{i}.{n}", _INT, where)
            if value != steps:
                raise ValueError(f"{where}: entry 'optim/state.{i}.{n}' holds {value}; expected "
                                 f"optim/step_count = {steps} (each parameter is updated at "
                                 "every step)")
    return steps


def _check_sched(arrays: dict, options, where: str) -> dict:
    schema = _SCHED[options.schedule]
    _check_keys(arrays, {f"sched/{k}" for k in schema}, "sched/", where)
    values = {k: _scalar(arrays, f"sched/{k}", spec, where) for k, spec in schema.items()}
    total = values["total_steps"]
    for key in ("last_step", "warmup_steps"):
        if key in values and values[key] > total:
            raise ValueError(f"{where}: entry 'sched/{key}' holds {values[key]}; expected at "
                             f"most sched/total_steps = {total}")
    return values


def check_progress(ck: Checkpoint, steps_per_epoch: int, where: str) -> None:
    """The counters of a checkpoint against the data it resumes on (``vit train --resume``,
    before the state is loaded): the schedule spans the options' epochs of
    ``steps_per_epoch`` steps (ceil(N / batch_size), a count only the data gives), it stands
    at ``epoch`` full epochs, and the optimizer took the same steps (a probe's closed-form
    update never steps its optimizer: 0). One ValueError naming the entry otherwise."""
    epochs, total = ck.options["epochs"], int(ck.sched["total_steps"])
    if total != epochs * steps_per_epoch:
        raise ValueError(f"{where}: entry 'sched/total_steps' holds {total}; expected epochs x "
                         f"steps per epoch = {epochs} x {steps_per_epoch} for this data "
                         f"({steps_per_epoch} steps per epoch)")
    last, steps = int(ck.sched["last_step"]), int(ck.optim["step_count"])
    if last != ck.epoch * steps_per_epoch:
        raise ValueError(f"{where}: entry 'sched/last_step' holds {last}; expected epoch x "
                         f"steps per epoch = {ck.epoch} x {steps_per_epoch}")
    if steps != (0 if ck.options["probe"] else last):
        raise ValueError(f"{where}: entry 'optim/step_count' holds {steps} but 'sched/last_step' "
                         f"holds {last}; expected the same (one schedule step per update"
                         f"{'; 0 for a probe' if ck.options['probe'] else ''})")


def _options_entry(arrays: dict, where: str):
    values = json_entry(arrays["options"], f"{where}: entry 'options'")
    if not isinstance(values, dict):
        raise ValueError(f"{where}: entry 'options' is a JSON {type(values).__name__}; "
                         "expected a JSON object of training options")
    try:
        return TrainOptions.from_dict(values)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: entry 'options': {e}") from None


def validate_entries(arrays: dict, where: str, max_parameters: int | None = None):
    """Check every entry of a checkpoint against the schema, before anything is built:
    names, types, shapes, ranges, finiteness and the agreement of config, options, epoch,
    parameters, optimizer and schedule. Returns (config, dtype, options, rng). Every problem
    is one ValueError naming the entry, what it held and what was expected."""
    if "format" not in arrays:
        what = "a model file saved without one" if "config" in arrays else "not a file vit writes"
        raise ValueError(f"{where}: not a training checkpoint (no 'format' entry: {what}); "
                         f"expected a checkpoint ({FORMAT}) as `vit train` writes")
    fmt = np.asarray(arrays["format"])
    if fmt.shape != () or str(fmt) != FORMAT:
        raise ValueError(f"{where}: not a training checkpoint (entry 'format' is "
                         f"{_describe(fmt)}; expected the 0-d string {FORMAT!r})")
    unknown = sorted(k for k in arrays if k not in _FIXED + _OPTIONAL
                     and not k.startswith(_GROUPS))
    if unknown:
        raise ValueError(f"{where}: unexpected entries {unknown[:5]}; expected only "
                         f"{', '.join(_FIXED)} and param/, optim/, sched/ entries")
    missing = [k for k in _FIXED if k not in arrays]
    if missing:
        raise ValueError(f"{where}: missing entries {missing}; expected all of {list(_FIXED)}")
    config, dtype = parse_config(arrays["config"], where)
    try:
        check_config(config, dtype, max_parameters, owner=f"{where}: entry 'config'")
    except (TypeError, ValueError) as e:
        raise ValueError(str(e)) from None
    with limits(max_parameters=max_parameters):  # the options' own size check, too
        options = _options_entry(arrays, where)
    pairs = [("dim", "dim", options.dim), ("num_heads", "heads", options.heads),
             ("mlp_dim", "mlp_dim", options.mlp_dim), ("patch_size", "patch_size",
                                                       options.patch_size),
             ("use_pos_emb", "no_pos_emb", not options.no_pos_emb),
             ("depth", "depth", options.depth)]
    for key, option, value in pairs:
        if config[key] != value:
            raise ValueError(f"{where}: entry 'config' {key}={config[key]} but entry 'options' "
                             f"{option}={getattr(options, option)}; expected them to agree")
    if dtype != options.dtype:
        raise ValueError(f"{where}: entry 'config' dtype={dtype} but entry 'options' dtype="
                         f"{options.dtype}; expected them to agree")
    _scalar(arrays, "epoch", ("int", 0, options.epochs, False, False), where)
    for key in ("norm/mean", "norm/std"):
        _finite_array(arrays, key, (config["in_chans"],), np.dtype(np.float64), where)
    pre, notes = read_preprocessing(arrays, where, config["in_chans"], states=True,
                                    needs_norm=True)
    try:
        rng = rng_from_array(arrays["rng"])
    except ValueError as e:
        raise ValueError(f"{where}: entry {e}") from None
    shapes = parameter_shapes(config)
    _check_keys(arrays, {f"param/{n}" for n in shapes}, "param/", where)
    for name, shape in shapes.items():
        _finite_array(arrays, f"param/{name}", shape, np.dtype(dtype), where)
    _check_optim(arrays, options, shapes, np.dtype(dtype), where)
    _check_sched(arrays, options, where)
    return config, dtype, options, rng, pre, notes


def load_checkpoint(path: str | os.PathLike, max_parameters: int | None = None) -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Every entry is validated (:func:`validate_entries`) before the model is built; the model
    may have at most ``max_parameters`` parameters (default: ``vit.model.config.limits``). The
    model carries the preprocessing (``normalizer``, ``input_range``); ``notes`` say what a
    checkpoint written before an entry existed lacks. Raises FileNotFoundError for a missing
    file and ValueError (with the path, the entry and the reason) for anything else wrong.
    """
    return checkpoint_from_entries(load_npz(path, names=entry_name_problem),
                                   f"checkpoint {path}", max_parameters)


def entry_name_problem(name: str) -> str | None:
    """Why a member named ``name`` has no place in a checkpoint, nor in a model file (whose
    entries are a subset; None: it may): asked by the reader before the member is read, so an
    unknown entry is never inflated."""
    if name in _FIXED + _OPTIONAL or name.startswith(_GROUPS):
        return None
    return (f"unexpected entries [{shorten(name)!s}]; expected only {', '.join(_FIXED)} and "
            "param/, optim/, sched/ entries")


def checkpoint_from_entries(arrays: dict, where: str,
                            max_parameters: int | None = None) -> Checkpoint:
    """:func:`load_checkpoint` of entries already read (``load_npz``, never unpickled)."""
    config, dtype, options, rng, pre, notes = validate_entries(arrays, where, max_parameters)
    model = TinyViT(**config, dtype=dtype, max_parameters=max_parameters)
    model.load_state_dict(_group(arrays, "param/"))
    model.normalizer, model.input_range = pre.normalizer, pre.input_range
    return Checkpoint(model, asdict(options), int(arrays["epoch"]), pre.normalizer, rng,
                      _group(arrays, "optim/"), _group(arrays, "sched/"), pre.input_range,
                      tuple(notes))
