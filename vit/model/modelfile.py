"""What a model file holds: the network and the preprocessing it was trained with.

A model file (``TinyViT.save``, ``vit import``) is one ``.npz``, never pickled::

    format          "vit-model/1"
    config          the constructor arguments and dtype (JSON in a 0-d string)
    param/<name>    every parameter, in the config's dtype and shape
    norm/mean       (C,) float64: the per-channel mean of the training pixels     } both, or
    norm/std        (C,) float64: their per-channel standard deviation (> 0)      } neither
    input/range     (2,) float64: the smallest and largest training pixel (optional)

The model's input is ``(x - norm/mean[c]) / norm/std[c]`` of raw pixels ``x``; a file of this
format without ``norm/*`` states that its inputs are used as given (no normalization).
``input/range`` is the raw range of the pixels the model was trained on (``predict`` warns
when images are clearly on another scale); absent, the range is unknown.

A training checkpoint (``vit.train.checkpoint``) holds the same model entries (``norm/*``
always) under its own ``format`` plus the training state, so one reader,
:func:`read_preprocessing`, serves both. A file written before these entries existed (a
``TinyViT.save`` file without ``format``) does not say how its inputs were normalized: it is
read only with explicit statistics or an explicit ``normalize="none"``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..io.files import is_finite_real, shorten
from .config import check_config, parameter_shapes, parse_config
from .normalizer import Normalizer, all_finite, check_statistics

__all__ = ["FORMAT", "Preprocessing", "Explicit", "MissingEntryWarning", "preprocessing_entries",
           "model_entries", "read_preprocessing", "read_params", "explicit_preprocessing",
           "input_range_of"]

FORMAT = "vit-model/1"
#: The entries of the preprocessing, in a model file and a checkpoint alike.
NORM_KEYS = ("norm/mean", "norm/std")
RANGE_KEY = "input/range"


class MissingEntryWarning(UserWarning):
    """A file written before an entry existed was read without it (what is lost is said)."""


@dataclass(frozen=True)
class Preprocessing:
    """How raw images become the model's input: ``normalizer`` (None: used as given) and the
    raw ``input_range`` (lowest, highest) of the training pixels (None: unknown)."""

    normalizer: Normalizer | None
    input_range: tuple[float, float] | None


@dataclass(frozen=True)
class Explicit:
    """Preprocessing given by the caller for a file that does not state its own: ``mean`` and
    ``std`` (one number per channel), or ``normalize="none"``; all None: nothing given."""

    mean: Sequence[float] | None = None
    std: Sequence[float] | None = None
    normalize: str | None = None

    @property
    def given(self) -> bool:
        return self.mean is not None or self.std is not None or self.normalize is not None


def input_range_of(x: np.ndarray) -> tuple[float, float]:
    """(lowest, highest) value of the raw training images ``x``, as Python floats."""
    return float(np.min(x)), float(np.max(x))


def preprocessing_entries(pre: Preprocessing) -> dict[str, np.ndarray]:
    """The ``norm/*`` and ``input/range`` entries of ``pre`` (those it has)."""
    out: dict[str, np.ndarray] = {}
    if pre.normalizer is not None:
        out["norm/mean"] = np.asarray(pre.normalizer.mean, np.float64)
        out["norm/std"] = np.asarray(pre.normalizer.std, np.float64)
    if pre.input_range is not None:
        out[RANGE_KEY] = np.asarray(pre.input_range, np.float64)
    return out


def model_entries(config: dict, dtype: np.dtype, state: dict[str, np.ndarray],
                  pre: Preprocessing) -> dict[str, np.ndarray]:
    """Every model entry but ``format``: config (JSON), ``param/<name>``, preprocessing."""
    import json
    arrays = {"config": np.array(json.dumps({**config, "dtype": np.dtype(dtype).name},
                                            sort_keys=True))}
    arrays.update((f"param/{k}", v) for k, v in state.items())
    arrays.update(preprocessing_entries(pre))
    return arrays


def _vector(value: Any, name: str, channels: int) -> np.ndarray:
    """``value`` as (channels,) float64 finite numbers, or a ValueError naming ``name``."""
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        a = None
    if a is None or a.shape != (channels,) or not np.isfinite(a).all():
        raise ValueError(f"{name}: got {shorten(value)}; expected {channels} finite number"
                         f"{'s' * (channels > 1)}, one per channel")
    return a


def explicit_preprocessing(explicit: Explicit, channels: int) -> Preprocessing:
    """The caller's ``mean``/``std`` (a Normalizer) or ``normalize="none"``, checked; the
    input range stays unknown."""
    if explicit.normalize is not None:
        if explicit.normalize != "none":
            raise ValueError(f"normalize: got {shorten(explicit.normalize)}; expected 'none' "
                             "(or give mean and std)")
        if explicit.mean is not None or explicit.std is not None:
            raise ValueError("normalize='none' with mean/std: expected one of them")
        return Preprocessing(None, None)
    if (explicit.mean is None) != (explicit.std is None):
        missing = "std" if explicit.std is None else "mean"
        raise ValueError(f"{missing}: missing; expected mean and std together (one number per "
                         "channel each)")
    mean = _vector(explicit.mean, "mean", channels)
    std = _vector(explicit.std, "std", channels)
    check_statistics(mean, std, "mean", "std")
    return Preprocessing(Normalizer(mean, std), None)


def _range_entry(arrays: dict, where: str) -> tuple[float, float]:
    a = np.asarray(arrays[RANGE_KEY])
    if a.shape != (2,) or a.dtype != np.float64 or not all(is_finite_real(v) for v in a) \
            or a[0] > a[1]:
        raise ValueError(f"{where}: entry {RANGE_KEY!r} is {a.dtype} of shape {a.shape}"
                         f"{' holding ' + shorten(a.tolist()) if a.size <= 4 else ''}; expected "
                         "float64 [lowest, highest] finite pixel values, lowest <= highest")
    return float(a[0]), float(a[1])


def read_preprocessing(arrays: dict, where: str, channels: int, *, states: bool,
                       explicit: Explicit = Explicit(), needs_norm: bool = False,
                       missing: str = "") -> tuple[Preprocessing, list[str]]:
    """The preprocessing of a model file or checkpoint's entries, and notes on what an older
    file lacks. ``states``: the file states its preprocessing (a ``vit-model/1`` file or a
    checkpoint); otherwise only ``explicit`` can give it (else a ValueError naming the
    file, what is missing and how to give it: ``missing`` says why it is missing).
    ``needs_norm``: ``norm/*`` must be present (a checkpoint). Explicit preprocessing for a
    file that states its own is refused: the numbers come from one place."""
    has_norm = [k for k in NORM_KEYS if k in arrays]
    if len(has_norm) == 1:
        raise ValueError(f"{where}: entry {has_norm[0]!r} without "
                         f"{({*NORM_KEYS} - {has_norm[0]}).pop()!r}; expected both or neither")
    if needs_norm and not has_norm:
        raise ValueError(f"{where}: missing entries {list(NORM_KEYS)}; expected the training "
                         "pixels' statistics")
    notes: list[str] = []
    if not states and not has_norm:
        if not explicit.given:
            raise ValueError(
                f"{where}: {missing or 'it does not say how its inputs were normalized'}; "
                "expected its preprocessing given explicitly: the training pixels' per-channel "
                "mean and std (mean=..., std=...; --mean M --std S) or normalize='none' "
                "(--normalize none) for a model that takes its inputs as given")
        return explicit_preprocessing(explicit, channels), notes
    if explicit.given:
        stated = "its own statistics" if has_norm else "that its inputs are used as given"
        raise ValueError(f"{where}: the file states {stated}; got mean/std/normalize as well; "
                         "expected them from one place (leave out --mean/--std/--normalize)")
    normalizer = None
    if has_norm:
        for key in NORM_KEYS:
            a = np.asarray(arrays[key])
            if a.shape != (channels,) or a.dtype != np.float64 or \
                    not np.isfinite(a).all():
                raise ValueError(f"{where}: entry {key!r} is {a.dtype} of shape {a.shape}; "
                                 f"expected {channels} finite float64 numbers, one per channel")
        check_statistics(arrays["norm/mean"], arrays["norm/std"], f"{where}: entry 'norm/mean'",
                         f"{where}: entry 'norm/std'")
        normalizer = Normalizer(arrays["norm/mean"], arrays["norm/std"])
    input_range = _range_entry(arrays, where) if RANGE_KEY in arrays else None
    if input_range is None and needs_norm:  # a checkpoint: vit train always writes it
        notes.append(f"{where}: no {RANGE_KEY!r} entry (written before models kept the range "
                     "of their training pixels); predict cannot warn about images on another "
                     "scale")
    return Preprocessing(normalizer, input_range), notes


def read_params(arrays: dict, where: str, max_parameters: int | None = None,
                extra: Sequence[str] = ()) -> tuple[dict, str, dict[str, np.ndarray]]:
    """(config, dtype, parameters) of a model file's entries, each checked (config keys,
    types and size bounds, then every ``param/<name>``: present, its shape and dtype) before
    anything is allocated. ``extra``: the other entries the file may hold."""
    if "config" not in arrays:
        raise ValueError(f"{where}: no 'config' entry; not a model file (expected what "
                         "TinyViT.save or vit import writes)")
    config, dtype = parse_config(arrays["config"], where)
    try:
        check_config(config, dtype, max_parameters, owner=f"{where}: entry 'config'")
    except (TypeError, ValueError) as e:
        raise ValueError(str(e)) from None
    shapes = parameter_shapes(config)
    allowed = {"config", "format", *NORM_KEYS, RANGE_KEY, *extra}
    state = {}
    for key, value in arrays.items():
        if key in allowed:
            continue
        name = key[len("param/"):] if key.startswith("param/") else None
        if name not in shapes:
            raise ValueError(f"{where}: unexpected entry {shorten(key)}; expected only "
                             f"{', '.join(sorted(allowed - set(extra)))} and the config's "
                             "param/<name> entries")
        if value.shape != shapes[name] or value.dtype != np.dtype(dtype):
            raise ValueError(f"{where}: entry {key!r} is {value.dtype} of shape "
                             f"{value.shape}; expected {dtype} of shape {shapes[name]}")
        if not all_finite(value):  # a NaN weight makes every answer NaN (and --json invalid)
            raise ValueError(f"{where}: entry {key!r} holds NaN or infinite values; expected "
                             "finite weights")
        state[name] = value
    missing = [name for name in shapes if name not in state]
    if missing:
        raise ValueError(f"{where}: parameters do not match the config: missing "
                         f"{['param/' + n for n in missing][:5]}; expected every parameter")
    return config, dtype, state
