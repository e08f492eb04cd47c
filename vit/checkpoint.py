"""Training checkpoints: one ``.npz`` holding everything a run needs to continue bit for bit.

Entries (no pickle anywhere; JSON travels in 0-d string arrays)::

    format           "vit-train/1"
    config           the model's constructor arguments and dtype (as ``TinyViT.save``)
    options          the training options of the run (JSON)
    epoch            epochs completed
    param/<name>     every model parameter
    optim/<key>      the optimizer's state_dict()
    sched/<key>      the schedule's state_dict()
    norm/mean, norm/std   the training pixels' per-channel statistics
    rng              the np.random.Generator's bit_generator.state (JSON)

Written atomically (temporary file, fsync, rename) by ``vit.npz.save_npz_atomic``, so an
interrupted write leaves the previous checkpoint intact.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import Normalizer
from .model import TinyViT
from .npz import load_npz, save_npz_atomic

__all__ = ["FORMAT", "Checkpoint", "save_checkpoint", "load_checkpoint", "rng_to_array",
           "rng_from_array"]

FORMAT = "vit-train/1"


def _json_array(value: Any) -> np.ndarray:
    return np.array(json.dumps(value, sort_keys=True))


def rng_to_array(rng: np.random.Generator) -> np.ndarray:
    """The generator's full state as JSON in a 0-d string array."""
    return _json_array(rng.bit_generator.state)


def rng_from_array(value: np.ndarray) -> np.random.Generator:
    """A generator in exactly the state :func:`rng_to_array` saved."""
    state = json.loads(str(value))
    bit_generator = getattr(np.random, state["bit_generator"])()
    bit_generator.state = state
    return np.random.Generator(bit_generator)


@dataclass
class Checkpoint:
    """What :func:`load_checkpoint` returns. ``optim`` and ``sched`` are the saved state
    dicts, to be loaded into an optimizer and schedule built from ``options``."""

    model: TinyViT
    options: dict
    epoch: int
    normalizer: Normalizer
    rng: np.random.Generator
    optim: dict
    sched: dict


def save_checkpoint(path: str | os.PathLike, *, model: TinyViT, options: dict, epoch: int,
                    normalizer: Normalizer, rng: np.random.Generator, optimizer: Any,
                    scheduler: Any) -> None:
    """Write the whole training state to ``path`` atomically."""
    arrays: dict[str, np.ndarray] = {
        "format": np.array(FORMAT),
        "config": _json_array({**model.config, "dtype": model.dtype.name}),
        "options": _json_array(options),
        "epoch": np.array(epoch, dtype=np.int64),
        "norm/mean": np.asarray(normalizer.mean, np.float64),
        "norm/std": np.asarray(normalizer.std, np.float64),
        "rng": rng_to_array(rng),
    }
    arrays.update((f"param/{k}", v) for k, v in model.state_dict().items())
    arrays.update((f"optim/{k}", v) for k, v in optimizer.state_dict().items())
    arrays.update((f"sched/{k}", v) for k, v in scheduler.state_dict().items())
    save_npz_atomic(path, arrays)


def _group(arrays: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Raises FileNotFoundError for a missing file and ValueError (with the path and the reason)
    for anything else wrong: not an npz, truncated, pickled arrays, missing or malformed entries,
    parameters that do not fit the saved configuration.
    """
    arrays = load_npz(path)  # never unpickles; ValueError for corrupt files
    where = f"checkpoint {path}"
    if "format" not in arrays or str(arrays["format"]) != FORMAT:
        found = str(arrays["format"]) if "format" in arrays else "no 'format' entry"
        raise ValueError(f"{where}: not a training checkpoint ({found}; expected {FORMAT!r})")
    missing = [k for k in ("config", "options", "epoch", "norm/mean", "norm/std", "rng")
               if k not in arrays]
    if missing:
        raise ValueError(f"{where}: missing entries {missing}")
    try:
        config = json.loads(str(arrays["config"]))
        options = json.loads(str(arrays["options"]))
        dtype = config.pop("dtype")
        model = TinyViT(**config, dtype=dtype)
        rng = rng_from_array(arrays["rng"])
        epoch = int(arrays["epoch"])
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise ValueError(f"{where}: malformed entry ({type(e).__name__}: {e})") from None
    mean = np.asarray(arrays["norm/mean"], np.float64)
    std = np.asarray(arrays["norm/std"], np.float64)
    channels = model.config["in_chans"]
    if mean.shape != (channels,) or std.shape != (channels,) or not np.all(std > 0):
        raise ValueError(f"{where}: normalization statistics of shapes {mean.shape}, {std.shape} "
                         f"(or a std <= 0); expected ({channels},) each with std > 0")
    try:
        model.load_state_dict(_group(arrays, "param/"))
    except (KeyError, ValueError) as e:
        raise ValueError(f"{where}: parameters do not fit the saved model ({e})") from None
    return Checkpoint(model, options, epoch, Normalizer(mean, std), rng,
                      _group(arrays, "optim/"), _group(arrays, "sched/"))
