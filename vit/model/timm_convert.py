"""TinyViT to timm's ``VisionTransformer`` and back, in memory and without torch
(docs/export.md; the files are vit/cli/timm_folder.py).

``to_timm(model)`` gives the state dict in timm's names and layouts plus ``config``: timm's
own ``config.json`` (vit/model/timm_config.py), whose ``model_args`` are the keyword arguments
of ``timm.models.vision_transformer.VisionTransformer`` that build the same network and whose
``pretrained_cfg`` holds the model's normalization. ``from_timm`` is its inverse (it also
reads the config format written before) and refuses, naming it, the first setting TinyViT
cannot represent. Every transform is a transpose or reshape, so a round trip is exact to the
bit.

Layouts: our Linear weights are (in, out) (``x @ W``), timm's (out, in); our patch
projection is (P·P·C, D) over patches flattened as (p1, p2, c), timm's a stride-P Conv2d
weight (D, C, P, P).
"""
from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from minigrad.nn import LayerNorm, Linear, ModuleList

from .block import Attention, Block, Mlp
from .config import MAX_DEPTH
from .modelfile import Explicit, MissingEntryWarning, Preprocessing
from .normalizer import Normalizer, all_finite
from .timm_config import flat_arguments, is_native, read_preprocessing, timm_config
from .tinyvit import TinyViT

__all__ = ["to_timm", "from_timm"]

# Our name (top level, or inside a block) -> (timm's name, layout).
_TOP = {"cls_token": ("cls_token", "same"), "pos_embed": ("pos_embed", "same"),
        "patch_embed.weight": ("patch_embed.proj.weight", "patch"),
        "patch_embed.bias": ("patch_embed.proj.bias", "same"),
        "norm.weight": ("norm.weight", "same"), "norm.bias": ("norm.bias", "same"),
        "head.weight": ("head.weight", "linear"), "head.bias": ("head.bias", "same")}
_IN_BLOCK = {"norm1.weight": "same", "norm1.bias": "same", "attn.qkv.weight": "linear",
             "attn.proj.weight": "linear", "norm2.weight": "same", "norm2.bias": "same",
             "mlp.fc1.weight": "linear", "mlp.fc1.bias": "same", "mlp.fc2.weight": "linear",
             "mlp.fc2.bias": "same"}
_BLOCK = re.compile(r"(?:block|blocks\.(0|[1-9][0-9]{0,3}))\.(.+)")  # indices < MAX_DEPTH
_MODULES = (TinyViT, Block, Attention, Mlp, Linear, LayerNorm, ModuleList)

# timm 1.0.31's defaults of the VisionTransformer arguments this module reads, and of our two
# keys: no norm_eps means timm's LayerNorm eps, 1e-6.
_DEFAULTS: dict[str, Any] = dict(
    img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="token",
    embed_dim=768, depth=12, num_heads=12, mlp_ratio=4.0, qkv_bias=True, qk_norm=False,
    scale_attn_norm=False, scale_mlp_norm=False, proj_bias=True, init_values=None,
    class_token=True, pos_embed="learn", no_embed_class=False, reg_tokens=0, pre_norm=False,
    final_norm=True, fc_norm=None, pool_include_prefix=False, dynamic_img_size=False,
    dynamic_img_pad=False, drop_rate=0.0, pos_drop_rate=0.0, patch_drop_rate=0.0,
    proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, weight_init="",
    fix_init=False, embed_layer=None, embed_norm_layer=None, norm_layer=None, act_layer=None,
    block_fn=None, mlp_layer=None, attn_layer=None, norm_eps=1e-6, preprocessing=None)
_LIMITS = dict(img_size=1 << 16, patch_size=1 << 16, in_chans=1 << 12, num_classes=1 << 20,
               embed_dim=1 << 16, depth=MAX_DEPTH, num_heads=1 << 16)
_KEY_HINTS = (("reg_token", "register tokens"), ("dist_token", "a distillation token"),
              ("head_dist", "a distillation head"), (".ls1.", "layer scale"),
              (".ls2.", "layer scale"), ("q_norm", "qk_norm"), ("k_norm", "qk_norm"),
              ("norm_pre", "a pre-norm"), ("fc_norm", "an fc_norm"), ("attn_pool", "attention "
              "pooling"), ("qkv.bias", "a qkv bias (qkv_bias=True)"), ("attn.norm", "an "
              "attention scale norm"), ("mlp.norm", "an MLP scale norm"))


def _eps(model: TinyViT) -> float:
    eps = {m.eps for _, m in model.named_modules() if isinstance(m, LayerNorm)}
    if len(eps) != 1:
        raise ValueError(f"to_timm: LayerNorms with eps {sorted(eps)}; timm's VisionTransformer "
                         "takes one eps for every norm")
    return eps.pop()


def _mlp_ratio(dim: int, hidden: int) -> float:
    """The float r with int(dim * r) == hidden, as timm computes the MLP width: hidden / dim,
    nudged up by ulps where the product rounds below hidden (e.g. dim 22, hidden 15)."""
    r = hidden / dim
    for _ in range(8):
        if int(dim * r) == hidden:
            return r
        r = math.nextafter(r, math.inf)
    raise ValueError(f"to_timm: no float mlp_ratio gives int({dim} * mlp_ratio) == {hidden}")


def _our_to_timm(name: str) -> tuple[str, str, int | None]:
    """timm's name, the layout, and the block index (None outside the blocks) of our parameter."""
    if name in _TOP:
        return (*_TOP[name], None)
    match = _BLOCK.fullmatch(name)
    if match and match.group(2) in _IN_BLOCK:
        index = int(match.group(1) or 0)
        return f"blocks.{index}.{match.group(2)}", _IN_BLOCK[match.group(2)], index
    raise ValueError(f"to_timm: parameter {name!r} has no counterpart in timm's "
                     "VisionTransformer that this exporter knows")


def _to_layout(a: np.ndarray, layout: str, P: int, C: int) -> np.ndarray:
    """Ours -> timm's: Linear (in, out) -> (out, in); patch (P·P·C, D) over (p1, p2, c) ->
    Conv2d (D, C, P, P). A new contiguous array."""
    if layout == "patch":
        return np.ascontiguousarray(a.reshape(P, P, C, a.shape[1]).transpose(3, 2, 0, 1))
    return np.ascontiguousarray(a.T if layout == "linear" else a)


def _from_layout(a: np.ndarray, layout: str, P: int, C: int) -> np.ndarray:
    """The inverse of :func:`_to_layout`: Conv2d (D, C, P, P) -> (p1, p2, c, D) -> (P·P·C, D)."""
    if layout == "patch":
        return np.ascontiguousarray(a.transpose(2, 3, 1, 0).reshape(P * P * C, a.shape[0]))
    return np.ascontiguousarray(a.T if layout == "linear" else a)


def to_timm(model: TinyViT, normalizer: Normalizer | None = None
            ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(state dict in timm's names and layouts, config.json) of ``model``; copies, never
    views. The config carries the model's preprocessing (``model.normalizer``, or
    ``normalizer`` when given, and ``model.input_range``).

    timm's ``proj_bias`` switches the attention projection's bias and the MLP's biases
    together; TinyViT has the MLP biases only, so the export keeps ``proj_bias=True`` and
    writes ``blocks.i.attn.proj.bias`` as zeros (adding exact zeros changes no value).
    """
    if not isinstance(model, TinyViT):
        raise TypeError(f"to_timm model: got {type(model).__name__}; expected a TinyViT")
    for where, module in model.named_modules():
        if not isinstance(module, _MODULES):
            raise ValueError(f"to_timm: module {where!r} is a {type(module).__name__}, which "
                             "this exporter cannot map to timm")
    cfg = dict(model.config)
    known = {"img_size", "patch_size", "in_chans", "dim", "num_heads", "mlp_dim", "num_classes",
             "use_pos_emb", "depth"}
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise ValueError(f"to_timm: TinyViT setting {unknown[0]!r} = {cfg[unknown[0]]!r} has no "
                         "timm counterpart that this exporter knows")
    P, C, D = cfg["patch_size"], cfg["in_chans"], cfg["dim"]
    state, blocks = {}, set()
    for name, value in model.state_dict().items():
        timm_name, layout, index = _our_to_timm(name)
        if timm_name in state:
            raise ValueError(f"to_timm: parameters 'block.*' and 'blocks.0.*' both map to "
                             f"{timm_name!r}")
        state[timm_name] = _to_layout(value, layout, P, C)
        if index is not None:
            blocks.add(index)
    depth = int(cfg.get("depth", 1))
    if blocks != set(range(depth)):
        raise ValueError(f"to_timm: blocks {sorted(blocks)} for depth {depth}; expected blocks "
                         f"0 to {depth - 1}")
    for i in range(depth):  # see the docstring: timm's proj_bias is on for the MLP's sake
        state[f"blocks.{i}.attn.proj.bias"] = np.zeros(D, dtype=model.dtype)
    eps = _eps(model)
    if eps != 1e-5:
        raise ValueError(f"to_timm: LayerNorm eps {eps}; the timm architecture written builds "
                         "LayerNorms of eps 1e-5 (TinyViT's)")
    model_args = dict(
        img_size=cfg["img_size"], patch_size=P, in_chans=C, num_classes=cfg["num_classes"],
        embed_dim=D, depth=depth, num_heads=cfg["num_heads"],
        mlp_ratio=_mlp_ratio(D, cfg["mlp_dim"]), qkv_bias=False, proj_bias=True, qk_norm=False,
        init_values=None, class_token=True, global_pool="token",
        pos_embed="learn" if cfg["use_pos_emb"] else "none", no_embed_class=False,
        reg_tokens=0, pre_norm=False, final_norm=True, fc_norm=False, act_layer="gelu_tanh")
    pre = Preprocessing(model.normalizer if normalizer is None else normalizer,
                        getattr(model, "input_range", None))
    return state, timm_config(model_args, pre)


# ---- import ----------------------------------------------------------------------------
def _show(value: Any) -> str:
    """repr, cut short: names and values come from files and may be huge."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _size(config: dict, name: str) -> int:
    value = config.get(name, _DEFAULTS[name])
    if name in ("img_size", "patch_size") and isinstance(value, (list, tuple)) and \
            len(value) == 2 and value[0] == value[1]:
        value = value[0]  # timm takes a square size as an int or a pair
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or \
            not 0 < value <= _LIMITS[name]:
        raise ValueError(f"from_timm config {name}: got {_show(value)}; expected an integer in "
                         f"[1, {_LIMITS[name]}]" + (" (a square size)" if "size" in name else ""))
    return int(value)


_FIXED = dict(global_pool="token", qk_norm=False, scale_attn_norm=False, scale_mlp_norm=False,
              proj_bias=True, class_token=True, reg_tokens=0, pre_norm=False, final_norm=True,
              pool_include_prefix=False, dynamic_img_size=False, dynamic_img_pad=False,
              act_layer="gelu_tanh")
_WHY = dict(global_pool="TinyViT classifies the class token", reg_tokens="no register tokens",
            proj_bias="timm then has no MLP biases; TinyViT's Mlp has them",
            act_layer="TinyViT's MLP uses GELU with the tanh approximation",
            pre_norm="no norm before the blocks", qk_norm="no norm of queries and keys",
            dynamic_img_size="TinyViT takes one image size")


def _expected(key: str, value: Any, get) -> str | None:
    """What TinyViT needs of timm's setting ``key``, or None when ``value`` is representable
    (sizes and mlp_ratio are checked by the caller)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key in _FIXED:
        if value == _FIXED[key] and type(value) is type(_FIXED[key]):
            return None
        return f"TinyViT needs {_FIXED[key]!r}" + (f" ({_WHY[key]})" if key in _WHY else "")
    if key.endswith("_rate"):
        return None if number and value == 0 else "TinyViT has no dropout (expected 0)"
    if (key.endswith("_layer") and key != "act_layer") or key == "block_fn":
        return None if value is None else ("expected it left out (TinyViT has timm's default "
                                           "layers; LayerNorm's eps goes in norm_eps)")
    if key == "init_values":
        return None if value is None or (number and value == 0) else \
            "TinyViT has no layer scale (expected None)"
    if key == "fc_norm":
        return None if value in (None, False) and not number else \
            "TinyViT norms the tokens before pooling (expected False)"
    if key == "pos_embed":
        return None if value in ("learn", "none", "") else "expected 'learn' or 'none'"
    if key == "no_embed_class":
        if (get("pos_embed") != "learn" and isinstance(value, bool)) or value is False:
            return None
        return "TinyViT's position embedding covers the class token (expected False)"
    if key in ("qkv_bias", "fix_init"):
        return None if isinstance(value, bool) else "expected true or false"
    if key == "weight_init":  # only how timm initializes; the weights are loaded over it
        return None if value in ("skip", "reset", "jax", "jax_nlhb", "moco", "") else \
            "expected one of timm's weight_init names"
    if key == "norm_eps":
        ours = LayerNorm(1).eps
        return None if number and value == ours else f"TinyViT's LayerNorm eps is {ours}"
    return None


def _settings(config: Mapping) -> dict[str, Any]:
    """TinyViT's constructor arguments for a timm config, or a ValueError naming the first
    setting TinyViT cannot represent (settings checked in the order of timm's signature)."""
    if not isinstance(config, Mapping):
        raise TypeError(f"from_timm config: got {type(config).__name__}; expected a dict")
    for key in config:
        if key not in _DEFAULTS:
            raise ValueError(f"from_timm config {_show(key)}: not a VisionTransformer argument "
                             "this importer knows")
    get = lambda k: config.get(k, _DEFAULTS[k])  # noqa: E731 (absent: timm's default)
    for key in _DEFAULTS:
        value = get(key)
        expected = _expected(key, value, get)
        if expected is not None:
            shown = f"missing (timm's default {value!r} applies)" if key not in config else \
                f"got {_show(value)}"
            raise ValueError(f"from_timm config {key}: {shown}; {expected}")
    s = {name: _size(config, name) for name in _LIMITS}
    ratio = get("mlp_ratio")
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or \
            not 0 < ratio <= 1 << 10:
        raise ValueError(f"from_timm config mlp_ratio: got {_show(ratio)}; expected a positive "
                         "number")
    hidden = int(s["embed_dim"] * ratio)  # exactly as timm's Block computes the MLP width
    if hidden < 1:
        raise ValueError(f"from_timm config mlp_ratio: got {_show(ratio)}; int(embed_dim * "
                         f"mlp_ratio) = {hidden}, expected at least 1")
    if s["img_size"] % s["patch_size"] or s["embed_dim"] % s["num_heads"]:
        raise ValueError(f"from_timm config: img_size {s['img_size']} and embed_dim "
                         f"{s['embed_dim']} must be multiples of patch_size {s['patch_size']} "
                         f"and num_heads {s['num_heads']}")
    return dict(img_size=s["img_size"], patch_size=s["patch_size"], in_chans=s["in_chans"],
                dim=s["embed_dim"], num_heads=s["num_heads"], mlp_dim=hidden,
                num_classes=s["num_classes"], use_pos_emb=get("pos_embed") == "learn",
                depth=s["depth"], qkv_bias=get("qkv_bias"))


def _timm_shapes(s: dict) -> dict[str, tuple[int, ...]]:
    """Every parameter of timm's VisionTransformer for these settings, with its shape."""
    P, C, D, F, K = s["patch_size"], s["in_chans"], s["dim"], s["mlp_dim"], s["num_classes"]
    shapes = {"cls_token": (1, 1, D), "patch_embed.proj.weight": (D, C, P, P),
              "patch_embed.proj.bias": (D,)}
    if s["use_pos_emb"]:
        shapes["pos_embed"] = (1, (s["img_size"] // P) ** 2 + 1, D)
    for i in range(s["depth"]):
        b = f"blocks.{i}."
        shapes.update({b + "norm1.weight": (D,), b + "norm1.bias": (D,),
                       b + "attn.qkv.weight": (3 * D, D), b + "attn.proj.weight": (D, D),
                       b + "attn.proj.bias": (D,), b + "norm2.weight": (D,),
                       b + "norm2.bias": (D,), b + "mlp.fc1.weight": (F, D),
                       b + "mlp.fc1.bias": (F,), b + "mlp.fc2.weight": (D, F),
                       b + "mlp.fc2.bias": (D,)})
        if s["qkv_bias"]:
            shapes[b + "attn.qkv.bias"] = (3 * D,)
    shapes.update({"norm.weight": (D,), "norm.bias": (D,), "head.weight": (K, D),
                   "head.bias": (K,)})
    return shapes


def from_timm(state_dict: Mapping[str, Any], config: Mapping[str, Any], *,
              dtype: Any = None, mean=None, std=None, normalize: str | None = None) -> TinyViT:
    """The TinyViT that timm's model of ``config`` with ``state_dict`` computes, with the
    preprocessing the config states (``model.normalizer``, ``model.input_range``).

    ``state_dict``: timm's names -> NumPy arrays (e.g. ``safetensors.numpy.load_file``), all
    of one floating dtype unless ``dtype`` is given (then cast to it). ``config``: timm's
    config.json as :func:`to_timm` writes it, or the format written before it (then absent
    keys take timm's defaults). A config that does not state its preprocessing (a timm model
    trained elsewhere) needs ``mean=``/``std=`` (one number per channel) or
    ``normalize="none"``; otherwise a ValueError. Biases TinyViT has no place for
    (``attn.proj.bias``, a qkv bias) are accepted only when exactly zero. Any other
    difference is a ValueError naming the first setting or entry TinyViT cannot represent.
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"from_timm config: got {type(config).__name__}; expected a dict")
    s = _settings(flat_arguments(config) if is_native(config) else config)
    pre, notes = read_preprocessing(config, s["in_chans"], Explicit(mean, std, normalize))
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"from_timm state_dict: got {type(state_dict).__name__}; expected a "
                        "dict of parameter name -> array")
    shapes = _timm_shapes(s)
    for key in state_dict:
        if key not in shapes:
            hint = next((what for part, what in _KEY_HINTS if part in str(key)), None)
            raise ValueError(f"from_timm state_dict {_show(key)}: " + (
                f"{hint}, which TinyViT does not have" if hint else
                "unknown entry; expected only the parameters of the configured model"))
    missing = [k for k in shapes if k not in state_dict]
    if missing:
        raise ValueError(f"from_timm state_dict: missing {missing[0]!r} (and {len(missing) - 1} "
                         "more)" if len(missing) > 1 else f"from_timm state_dict: missing "
                         f"{missing[0]!r}")
    arrays = {}
    for key, want in shapes.items():
        value = state_dict[key]
        if not isinstance(value, np.ndarray):
            raise TypeError(f"from_timm state_dict {key!r}: got {type(value).__name__}; "
                            "expected a NumPy array (for torch: tensor.detach().cpu().numpy())")
        if value.dtype.kind != "f" or value.shape != want:
            raise ValueError(f"from_timm state_dict {key!r}: got {value.dtype} {value.shape}; "
                             f"expected a floating array of shape {want}")
        if not all_finite(value):  # a NaN weight makes every answer NaN (and --json invalid)
            raise ValueError(f"from_timm state_dict {key!r}: holds NaN or infinite values; "
                             "expected finite weights")
        arrays[key] = value
    dtypes = sorted({a.dtype.name for a in arrays.values()})
    if dtype is None and len(dtypes) > 1:
        raise ValueError(f"from_timm state_dict: mixed dtypes {dtypes}; pass dtype= to cast")
    for key in [k for k in arrays if k.endswith(("attn.proj.bias", "attn.qkv.bias"))]:
        if np.any(arrays.pop(key) != 0):
            raise ValueError(f"from_timm state_dict {key!r}: a nonzero bias, which TinyViT's "
                             "attention does not have (it has no bias there)")
    del s["qkv_bias"]
    model = TinyViT(**s, dtype=dtype if dtype is not None else dtypes[0])
    P, C = s["patch_size"], s["in_chans"]
    state = {}
    for name, param in model.named_parameters():
        timm_name, layout, _ = _our_to_timm(name)
        state[name] = _from_layout(arrays.pop(timm_name), layout, P, C).astype(param.dtype)
    if arrays:  # TinyViT and _timm_shapes disagree: a model change this module missed
        raise ValueError(f"from_timm: timm parameters {sorted(arrays)} found no place in TinyViT")
    model.load_state_dict(state)
    model.normalizer, model.input_range = pre.normalizer, pre.input_range
    for note in notes:
        warnings.warn(note, MissingEntryWarning, stacklevel=2)
    return model
