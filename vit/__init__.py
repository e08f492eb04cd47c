"""vit: a Vision Transformer that trains end to end on minigrad, in pure NumPy.

``vit_block`` and ``TinyViT`` follow docs/contract.md to the letter. ``vit.load(path)`` brings a
trained model back (a checkpoint or a saved model) with its normalizer, for
``model.predict(images)`` on raw images (docs/predict.md).
"""
from .block import Attention, Block, Mlp, vit_block
from .loading import load
from .losses import Mixed, cross_entropy, mixup, one_hot
from .model import TinyViT, patchify, unpatchify
from .timm_io import from_timm

__all__ = ["vit_block", "TinyViT", "patchify", "unpatchify", "Attention", "Mlp", "Block",
           "cross_entropy", "mixup", "one_hot", "Mixed", "load", "from_timm"]
