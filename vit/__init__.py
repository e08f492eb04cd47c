"""vit: a Vision Transformer that trains end to end on minigrad, in pure NumPy.

``vit_block`` and ``TinyViT`` follow docs/contract.md to the letter. ``vit.load(path)`` brings a
trained model back (a checkpoint or a saved model) with its normalizer, for
``model.predict(images)`` on raw images (docs/predict.md).

Layers, each importing only those before it: ``vit.io`` (safe files), ``vit.model`` (the
network), ``vit.train`` (training), ``vit.cli`` (``python -m vit``); docs/architecture.md.
"""
from .model.block import Attention, Block, Mlp, vit_block
from .model.losses import Mixed, cross_entropy, mixup, one_hot
from .model.timm_convert import from_timm
from .model.tinyvit import TinyViT, patchify, unpatchify
from .train.loading import load

__all__ = ["vit_block", "TinyViT", "patchify", "unpatchify", "Attention", "Mlp", "Block",
           "cross_entropy", "mixup", "one_hot", "Mixed", "load", "from_timm"]
