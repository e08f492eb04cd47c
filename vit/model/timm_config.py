"""``config.json`` of a timm folder: timm 1.0.31's own format, which
``timm.create_model("local-dir:DIR", pretrained=True)`` reads (``timm/models/_hub.py``,
``load_model_config_from_path``), plus one block of ours that timm ignores::

    {"architecture": "vit_xsmall_patch16_clip_224",
     "num_classes": K, "num_features": D, "global_pool": "token",
     "model_args": {VisionTransformer's keyword arguments: img_size, patch_size, ...},
     "pretrained_cfg": {"input_size": [C, S, S], "fixed_input_size": true,
                        "mean": [C numbers], "std": [C numbers], "num_classes": K, ...},
     "minigrad_vit": {"format": "vit-timm/1", "normalize": "mean-std" or "none",
                      "input_range": [lowest, highest] or null,
                      "weights_sha256": the SHA-256 of model.safetensors (vit export)}}

timm builds ``architecture``'s factory with ``model_args`` over the factory's own arguments.
TinyViT's LayerNorms have eps 1e-5, which ``model_args`` cannot say (timm's ``norm_layer`` is
a class or a name, and every named norm has eps 1e-6): ``vit_xsmall_patch16_clip_224``'s
factory sets ``norm_layer=partial(LayerNorm, eps=1e-5)`` and nothing ``model_args`` does not
override (its other arguments, embed_dim, depth, num_heads and pre_norm, are all written).
``pretrained_cfg``'s ``mean`` and ``std`` are the model's normalization, so timm's
``resolve_data_config({}, model=m)`` returns them; they are in the units of the model's raw
pixels (``minigrad_vit.input_range``; e.g. 0..16 for the digits), not timm's usual 0..1.
For a model that takes its inputs as given (``normalize: "none"``) they are 0 and 1.

The format written before this one (VisionTransformer's keyword arguments at the top level,
plus ``norm_eps`` and ``preprocessing``) is still read.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..io.files import shorten
from .modelfile import Explicit, Preprocessing, explicit_preprocessing
from .normalizer import Normalizer, check_statistics

__all__ = ["ARCHITECTURE", "BLOCK", "FORMAT", "timm_config", "is_native", "flat_arguments",
           "read_preprocessing"]

#: The timm architecture written (see the module docstring: its LayerNorm eps is 1e-5) and
#: the arguments its factory sets, which ``model_args`` then override.
ARCHITECTURE = "vit_xsmall_patch16_clip_224"
FACTORY_ARGS = dict(embed_dim=256, depth=10, num_heads=4, pre_norm=True, norm_eps=1e-5)
#: Our block in config.json (timm reads only its own keys) and its format.
BLOCK, FORMAT = "minigrad_vit", "vit-timm/1"
_TOP = {"architecture", "num_classes", "num_features", "global_pool", "model_args",
        "pretrained_cfg", "label_names", "label_descriptions", BLOCK}


def timm_config(model_args: dict, pre: Preprocessing) -> dict:
    """config.json for VisionTransformer(**model_args) with preprocessing ``pre``."""
    C, S = model_args["in_chans"], model_args["img_size"]
    if pre.normalizer is None:
        mean, std = [0.0] * C, [1.0] * C  # timm normalizes by them: the identity
    else:
        mean = [float(v) for v in pre.normalizer.mean]
        std = [float(v) for v in pre.normalizer.std]
    return {
        "architecture": ARCHITECTURE,
        "num_classes": model_args["num_classes"],
        "num_features": model_args["embed_dim"],
        "global_pool": "token",
        "model_args": model_args,
        "pretrained_cfg": {"input_size": [C, S, S], "fixed_input_size": True,
                           "interpolation": "bilinear", "crop_pct": 1.0, "crop_mode": "center",
                           "mean": mean, "std": std, "num_classes": model_args["num_classes"]},
        BLOCK: {"format": FORMAT, "normalize": "none" if pre.normalizer is None else "mean-std",
                "input_range": None if pre.input_range is None else list(pre.input_range)},
    }


def is_native(config: Mapping) -> bool:
    """Whether ``config`` is in timm's own format (else the one written before it)."""
    return "architecture" in config or "model_args" in config


def flat_arguments(config: Mapping) -> dict:
    """VisionTransformer's keyword arguments (and ``norm_eps``) that a native config builds:
    the factory's arguments, overridden by ``model_args``. A ValueError names the first key
    that is not of the format."""
    unknown = sorted(str(k) for k in config if k not in _TOP)
    if unknown:
        raise ValueError(f"from_timm config {shorten(unknown[0])}: not a key of timm's "
                         f"config.json this importer knows; expected {sorted(_TOP)}")
    arch = config.get("architecture")
    if arch != ARCHITECTURE:
        raise ValueError(f"from_timm config architecture: got {shorten(arch)}; expected "
                         f"{ARCHITECTURE!r} as `vit export --to timm` writes (the factory "
                         "whose LayerNorm eps, 1e-5, is TinyViT's)")
    args = config.get("model_args")
    if not isinstance(args, Mapping):
        raise ValueError(f"from_timm config model_args: got {shorten(args)}; expected a JSON "
                         "object of VisionTransformer's keyword arguments")
    for key in ("norm_eps", "preprocessing", "norm_layer"):
        if key in args:
            raise ValueError(f"from_timm config model_args {key}: not a timm argument here; "
                             "expected it left out (the architecture sets the norm layer)")
    flat = {**FACTORY_ARGS, **args}
    for key in ("num_classes",):
        if key in config and config[key] != flat.get(key):
            raise ValueError(f"from_timm config {key}: got {shorten(config[key])} but "
                             f"model_args {key} is {shorten(flat.get(key))}; expected the same")
    return flat


def _numbers(value: Any, name: str, channels: int) -> np.ndarray:
    a = np.asarray(value) if isinstance(value, (list, tuple)) else None
    if a is None or a.shape != (channels,) or a.dtype.kind not in "iuf" or \
            not np.isfinite(a.astype(np.float64)).all():
        raise ValueError(f"from_timm config {name}: got {shorten(value)}; expected "
                         f"{channels} finite numbers, one per channel")
    return a.astype(np.float64)


def _range(value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    a = _numbers(value, f"{BLOCK} input_range", 2)
    if a[0] > a[1]:
        raise ValueError(f"from_timm config {BLOCK} input_range: got {a.tolist()}; expected "
                         "[lowest, highest] with lowest <= highest")
    return float(a[0]), float(a[1])


def read_preprocessing(config: Mapping, channels: int,
                       explicit: Explicit) -> tuple[Preprocessing, list[str]]:
    """The preprocessing a config states (our block's ``normalize`` with pretrained_cfg's
    mean and std; the older format's ``preprocessing``), or ``explicit``'s for a config that
    states none (a timm model trained elsewhere: its pretrained_cfg mean/std are for timm's
    0..1 inputs, so they are not taken silently). Both at once: a ValueError."""
    notes: list[str] = []
    stated = None
    if is_native(config):
        block = config.get(BLOCK)
        if block is not None:
            if not isinstance(block, Mapping) or block.get("format") != FORMAT or \
                    block.get("normalize") not in ("mean-std", "none") or \
                    set(block) - {"format", "normalize", "input_range", "weights_sha256"}:
                raise ValueError(f"from_timm config {BLOCK}: got {shorten(block)}; expected "
                                 f"{{'format': {FORMAT!r}, 'normalize': 'mean-std' or 'none', "
                                 "'input_range': [lowest, highest] or null}")
            cfg = config.get("pretrained_cfg")
            if not isinstance(cfg, Mapping):
                raise ValueError(f"from_timm config pretrained_cfg: got {shorten(cfg)}; "
                                 "expected a JSON object with mean and std")
            normalizer = None
            if block["normalize"] == "mean-std":
                mean = _numbers(cfg.get("mean"), "pretrained_cfg mean", channels)
                std = _numbers(cfg.get("std"), "pretrained_cfg std", channels)
                check_statistics(mean, std, "from_timm config pretrained_cfg mean",
                                 "from_timm config pretrained_cfg std")
                normalizer = Normalizer(mean, std)
            stated = Preprocessing(normalizer, _range(block.get("input_range")))
        else:
            cfg = config.get("pretrained_cfg") or {}
            theirs = {k: cfg.get(k) for k in ("mean", "std") if isinstance(cfg, Mapping)}
            why = (f"a timm config without a {BLOCK!r} block: its pretrained_cfg mean "
                   f"{shorten(theirs.get('mean'))} and std {shorten(theirs.get('std'))} are "
                   "timm's for 0..1 pixels, not necessarily what the model was trained on")
    else:
        pre = config.get("preprocessing")
        if pre is not None:
            ok = isinstance(pre, Mapping) and set(pre) == {"mean", "std"}
            if not ok:
                raise ValueError(f"from_timm config preprocessing: got {shorten(pre)}; expected "
                                 f"null or {{'mean': [{channels} numbers], 'std': [{channels} "
                                 "positive numbers]}")
            mean = _numbers(pre["mean"], "preprocessing mean", channels)
            std = _numbers(pre["std"], "preprocessing std", channels)
            check_statistics(mean, std, "from_timm config preprocessing mean",
                             "from_timm config preprocessing std")
            stated = Preprocessing(Normalizer(mean, std), None)
            notes.append("from_timm config: written before exports kept the input range of "
                         "the training pixels; predict cannot warn about images on another "
                         "scale")
        why = "its preprocessing is null (exported from a model file that held none)"
    if stated is not None:
        if explicit.given:
            raise ValueError("from_timm: the config states its preprocessing; got mean/std/"
                             "normalize as well; expected them from one place (leave out "
                             "--mean/--std/--normalize)")
        return stated, notes
    if not explicit.given:
        raise ValueError(f"from_timm config: {why}; expected the preprocessing given "
                         "explicitly: mean=/std= (--mean M --std S), the training pixels' "
                         "per-channel statistics, or normalize='none' (--normalize none)")
    return explicit_preprocessing(explicit, channels), notes
