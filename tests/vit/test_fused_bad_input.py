"""Bad images given to TinyViT's differentiable methods (``tokens``, ``logits``, ``features``)
are named as the composed ops name them, fused model or not: the fused stages' ``fusable``
rules must send anything the one-op forward cannot take back to the composed path, whose
patchify and Linear checks say what was wrong (``vit.embed_op``, ``vit.head_op``).

``TinyViT.forward`` validates images itself first; these methods are the public way in below
it (and what ``attention_maps`` and custom training loops call).
"""
from __future__ import annotations

import numpy as np
import pytest

from minigrad import Tensor
from vit import embed_op, fusion, head_op
from vit.model.tinyvit import TinyViT

CONFIG = dict(img_size=8, patch_size=4, in_chans=2, dim=8, num_heads=2, mlp_dim=12,
              num_classes=3)

BAD_SHAPES = {  # name: (shape, words the message must contain)
    "3-D": ((2, 8, 8), ("patchify x", "(2, 8, 8)")),
    "5-D": ((1, 2, 2, 8, 8), ("patchify x", "(1, 2, 2, 8, 8)")),
    "side not a multiple of the patch": ((2, 2, 9, 9), ("patchify x", "(2, 2, 9, 9)")),
    "empty batch": ((0, 2, 8, 8), ("patchify x", "(0, 2, 8, 8)")),
    "one channel too few": ((2, 1, 8, 8), ("Linear", "(2, 4, 16)", "32")),
    "one channel too many": ((2, 3, 8, 8), ("Linear", "(2, 4, 48)", "32")),
}


def _error(model, method, x, fuse):
    saved = fusion.FUSE_BELOW_FLOPS
    fusion.FUSE_BELOW_FLOPS = saved if fuse else 0
    try:
        with pytest.raises(ValueError) as info:
            getattr(model, method)(x)
    finally:
        fusion.FUSE_BELOW_FLOPS = saved
    return str(info.value)


@pytest.mark.parametrize("use_pos_emb", [True, False])
@pytest.mark.parametrize("method", ["tokens", "logits", "features"])
@pytest.mark.parametrize("case", list(BAD_SHAPES))
def test_bad_images_are_named_as_the_composed_ops_name_them(case, method, use_pos_emb):
    shape, words = BAD_SHAPES[case]
    model = TinyViT(**CONFIG, use_pos_emb=use_pos_emb, seed=0)
    x = Tensor(np.zeros(shape))
    fused = _error(model, method, x, fuse=True)
    composed = _error(model, method, x, fuse=False)
    assert fused == composed
    for word in words:
        assert word in fused, (word, fused)


@pytest.mark.parametrize("shape", [s for s, _ in BAD_SHAPES.values()] + [(2, 2, 16, 16)])
def test_embedding_is_not_fusable_for_images_it_cannot_take(shape):
    model = TinyViT(**CONFIG, seed=0)  # (2, 2, 16, 16): 17 tokens, position embeddings for 5
    assert embed_op.fusable(model, Tensor(np.zeros((2, 2, 8, 8))))
    assert not embed_op.fusable(model, Tensor(np.zeros(shape)))


def test_head_is_not_fusable_for_tokens_of_another_width():
    model = TinyViT(**CONFIG, seed=0)
    assert head_op.fusable(model, Tensor(np.zeros((2, 5, 8))))
    assert not head_op.fusable(model, Tensor(np.zeros((2, 5, 9))))
    assert not head_op.fusable(model, Tensor(np.zeros((2, 0, 8))))  # no CLS row
