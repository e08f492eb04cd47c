"""The model's config: its constants, the schema of its constructor arguments, and its size,
computed from the config before anything is allocated and checked against the bounds here
(``docs/reliability.md``, Threat model).

``TinyViT.__init__``, the model and checkpoint loaders and ``TrainOptions`` all check sizes
through :func:`check_config`.
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import numpy as np

from minigrad import checks

from ..io.npz import json_entry

__all__ = ["LN_EPS", "BLOCK_PARAMS", "block_prefixes",
           "MAX_PARAMETERS", "MAX_ACTIVATION_BYTES", "MAX_DEPTH", "DTYPES", "CONFIG_KEYS", "limits",
           "current_limits", "parameter_shapes", "parameter_count", "activation_bytes",
           "check_config", "parse_config"]

#: The model's LayerNorm eps (docs/contract.md), defined once for vit: the composed block,
#: ``vit_block`` and the hand-derived stages all use it. (Its GELU is the tanh form, whose
#: constants belong to the formula: ``minigrad.ops.activations.GELU_C`` and ``GELU_K``.)
LN_EPS = 1e-5
#: The most encoder blocks a parameter dict may name (TinyViT's depth bound).
MAX_DEPTH = 1024

#: The parameters of one encoder block, after its prefix (``block.`` or ``blocks.<i>.``).
BLOCK_PARAMS = ("norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.proj.weight",
                "norm2.weight", "norm2.bias", "mlp.fc1.weight", "mlp.fc1.bias",
                "mlp.fc2.weight", "mlp.fc2.bias")


def block_prefixes(depth: int) -> list[str]:
    """The encoder blocks' name prefixes: ``["block."]`` for one block, else ``blocks.<i>.``."""
    return ["block."] if depth == 1 else [f"blocks.{i}." for i in range(depth)]


#: The most parameters a TinyViT may have unless raised (``max_parameters=``, :func:`limits`,
#: ``vit --max-parameters``): 80 MB of float64 weights, 240 MB with AdamW's two buffers.
MAX_PARAMETERS = 10_000_000
#: The most bytes one image's forward activations may take (:func:`activation_bytes`):
#: attention is quadratic in the tokens, so img_size / patch_size is bounded through this.
MAX_ACTIVATION_BYTES = 1 << 30
#: The dtypes a model file may name (an allow-list: the name never reaches ``np.dtype``
#: otherwise).
DTYPES = ("float16", "float32", "float64")
#: The keys of a model's config (the constructor arguments), as saved with ``dtype``.
#: ``depth`` came later: a saved config without it is a model of one block.
CONFIG_KEYS = ("img_size", "patch_size", "in_chans", "dim", "num_heads", "mlp_dim",
               "num_classes", "use_pos_emb", "depth")

_LIMITS = contextvars.ContextVar("vit_model_limits",
                                 default=(MAX_PARAMETERS, MAX_ACTIVATION_BYTES))


@contextlib.contextmanager
def limits(max_parameters: int | None = None,
           max_activation_bytes: int | None = None) -> Iterator[None]:
    """Raise (or lower) the size bounds of every TinyViT built in this thread or task, for
    the duration of the block (e.g. around ``train()`` or ``load_checkpoint()``)."""
    current = _LIMITS.get()
    owner = "vit.model.config.limits"
    new = (current[0] if max_parameters is None
           else checks.positive_int("max_parameters", max_parameters, owner=owner),
           current[1] if max_activation_bytes is None
           else checks.positive_int("max_activation_bytes", max_activation_bytes, owner=owner))
    token = _LIMITS.set(new)
    try:
        yield
    finally:
        _LIMITS.reset(token)


def current_limits() -> tuple[int, int]:
    """(max_parameters, max_activation_bytes) in force here (see :func:`limits`)."""
    return _LIMITS.get()


def parameter_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """Every parameter's shape, by name in ``named_parameters()`` order, from the config
    alone (nothing is allocated): what ``TinyViT(**config)`` builds. The blocks are
    ``block.*`` for depth 1 (no ``depth`` key means 1) and ``blocks.<i>.*`` beyond."""
    P, C, D = config["patch_size"], config["in_chans"], config["dim"]
    F, K = config["mlp_dim"], config["num_classes"]
    N = (config["img_size"] // P) ** 2
    shapes: dict[str, tuple[int, ...]] = {"cls_token": (1, 1, D)}
    if config["use_pos_emb"]:
        shapes["pos_embed"] = (1, N + 1, D)
    shapes.update({"patch_embed.weight": (P * P * C, D), "patch_embed.bias": (D,)})
    block_shapes: list[tuple[int, ...]] = [(D,), (D,), (D, 3 * D), (D, D), (D,), (D,), (D, F),
                                           (F,), (F, D), (D,)]
    block = dict(zip(BLOCK_PARAMS, block_shapes, strict=True))
    for prefix in block_prefixes(config.get("depth", 1)):
        shapes.update((prefix + name, shape) for name, shape in block.items())
    shapes.update({"norm.weight": (D,), "norm.bias": (D,), "head.weight": (D, K),
                   "head.bias": (K,)})
    return shapes


def parameter_count(config: dict) -> int:
    """The number of scalar parameters of ``TinyViT(**config)``, in exact integers."""
    total = 0
    for shape in parameter_shapes(config).values():
        n = 1
        for size in shape:
            n *= size
        total += n
    return total


def activation_bytes(config: dict, itemsize: int = 8) -> int:
    """An estimate of one image's forward activations, in bytes: T = N + 1 tokens, L blocks,
    ``itemsize * L * (num_heads * T**2 + T * (8 * dim + 2 * mlp_dim))`` (per block the
    attention weights; the tokens, q, k, v, the attention output and the MLP's hidden layer:
    a training step keeps every block's for the backward)."""
    T = (config["img_size"] // config["patch_size"]) ** 2 + 1
    per_block = config["num_heads"] * T * T + T * (8 * config["dim"] + 2 * config["mlp_dim"])
    return itemsize * config.get("depth", 1) * per_block


def check_config(config: dict, dtype=np.float64, max_parameters: int | None = None,
                 owner: str = "TinyViT") -> None:
    """ValueError/TypeError unless ``config`` (the constructor arguments) describes a
    TinyViT within the size bounds: positive integer sizes, patch_size dividing img_size,
    num_heads dividing dim, 1 <= depth <= ``MAX_DEPTH`` (no ``depth`` key: 1), at most
    ``max_parameters`` parameters (default: the current :func:`limits`) and at most
    ``MAX_ACTIVATION_BYTES`` of activations per image."""
    for name in ("img_size", "patch_size", "in_chans", "dim", "mlp_dim", "num_classes"):
        checks.positive_int(name, config[name], owner=owner)
    checks.integer("depth", config.get("depth", 1), low=1, high=MAX_DEPTH, owner=owner)
    if config["img_size"] % config["patch_size"]:
        raise ValueError(f"{owner} patch_size: got {config['patch_size']}; expected a divisor "
                         f"of img_size = {config['img_size']}")
    heads = checks.integer("num_heads", config["num_heads"], owner=owner)
    if heads <= 0 or config["dim"] % heads:
        raise ValueError(f"{owner} num_heads: got {heads}; expected a positive integer "
                         f"dividing D = {config['dim']}")
    checks.boolean("use_pos_emb", config["use_pos_emb"], owner=owner)
    limit, act_limit = _LIMITS.get()
    if max_parameters is not None:
        limit = checks.positive_int("max_parameters", max_parameters, owner=owner)
    shown = ", ".join(f"{k}={config.get(k, 1)}" for k in CONFIG_KEYS[:7] + ("depth",))
    n = parameter_count(config)
    if n > limit:
        raise ValueError(f"{owner}: the config ({shown}) makes {n:,} parameters; expected at "
                         f"most {limit:,} (raise the limit with max_parameters=, "
                         "vit.model.config.limits() or vit --max-parameters)")
    act = activation_bytes(config, np.dtype(dtype).itemsize)
    if act > act_limit:
        raise ValueError(f"{owner}: the config ({shown}) needs {act:,} bytes of activations per "
                         f"image ({(config['img_size'] // config['patch_size']) ** 2 + 1:,} "
                         f"tokens); expected at most {act_limit:,} (vit.model.config.limits("
                         "max_activation_bytes=...) raises it)")


def parse_config(text, where: str) -> tuple[dict, str]:
    """(constructor arguments, dtype name) from a saved ``config`` entry (JSON in a 0-d
    string array), checked against the allow-list of keys and dtypes: a ValueError naming
    ``where``, the entry, what it held and what was expected."""
    config = json_entry(text, f"{where}: entry 'config'")
    if not isinstance(config, dict):
        raise ValueError(f"{where}: entry 'config' is a JSON {type(config).__name__}; "
                         "expected a JSON object of the model's constructor arguments")
    keys = {*CONFIG_KEYS, "dtype"}
    config.setdefault("depth", 1)  # saved before TinyViT had depth: one block
    if set(config) != keys:
        raise ValueError(f"{where}: entry 'config' has keys missing "
                         f"{sorted(keys - set(config))} and unknown {sorted(set(config) - keys)}"
                         f"; expected exactly {sorted(keys)} (depth may be left out: 1)")
    dtype = config.pop("dtype")
    if dtype not in DTYPES:
        raise ValueError(f"{where}: entry 'config' dtype: got {dtype!r}; expected one of "
                         f"{', '.join(DTYPES)}")
    for name in CONFIG_KEYS:
        value, want = config[name], bool if name == "use_pos_emb" else int
        if type(value) is not want:  # JSON gives exactly int or bool; no bool-as-int
            raise ValueError(f"{where}: entry 'config' {name}: got {value!r}; expected "
                             f"{'true or false' if want is bool else 'a positive integer'}")
    return config, dtype

