"""The network: its config and constants (``config``), the encoder block and ``vit_block``
(``block``), ``TinyViT`` (``tinyvit``), its losses, its preprocessing (``normalizer``) and
prediction (``predict``), the conversion to and from timm (``timm_convert``); the hand-derived
forward and backward (``manual``, the baseline the engine is measured against) and the fast
path for tiny models built on it (``fused``, behind ``TinyViT(fused=True)``)."""
from .block import Attention, Block, Mlp, vit_block
from .config import (
    MAX_ACTIVATION_BYTES,
    MAX_DEPTH,
    MAX_PARAMETERS,
    limits,
    parameter_count,
    parameter_shapes,
)
from .losses import Mixed, cross_entropy, mixup, one_hot
from .normalizer import Normalizer
from .timm_convert import from_timm, to_timm
from .tinyvit import TinyViT, patchify, unpatchify

__all__ = ["TinyViT", "patchify", "unpatchify", "vit_block", "Attention", "Mlp", "Block",
           "cross_entropy", "mixup", "one_hot", "Mixed", "Normalizer", "from_timm", "to_timm",
           "limits", "parameter_count", "parameter_shapes", "MAX_PARAMETERS",
           "MAX_ACTIVATION_BYTES", "MAX_DEPTH"]
