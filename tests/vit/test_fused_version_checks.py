"""In-place writes between forward and backward are caught through the fused ops too: each
of patch_tokens, encoder_block and cls_head records its parameters as inputs, so the engine's
version check refuses a backward after a tracked write (an optimizer step, ``p += v`` under
no_grad) into any of them, trainable or frozen, naming the fused op, and no ``.grad`` moves.
Writes straight into ``.data`` are not tracked (documented in minigrad/graph.py): not tested.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, Tensor
from minigrad.summary import graph_summary
from vit.model.tinyvit import TinyViT

CONFIG = dict(img_size=8, patch_size=4, in_chans=2, dim=8, num_heads=2, mlp_dim=12,
              num_classes=3)
OP_OF = {"patch_embed": "patch_tokens", "cls_token": "patch_tokens",
         "pos_embed": "patch_tokens", "block": "encoder_block", "norm": "cls_head",
         "head": "cls_head"}
NAMES = [name for name, _ in TinyViT(**CONFIG, seed=0).named_parameters()]


def _forward(model):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 8, 8))
    loss = F.cross_entropy(model(Tensor(x)), rng.integers(0, 3, 3))
    assert {"patch_tokens", "encoder_block", "cls_head"} <= \
        {row[0] for row in graph_summary(loss).rows}
    return loss


@pytest.mark.parametrize("frozen", [False, True], ids=["trainable", "frozen"])
@pytest.mark.parametrize("name", NAMES)
def test_a_tracked_write_into_any_parameter_after_the_forward_is_refused(name, frozen):
    model = TinyViT(**CONFIG, seed=0)
    param = dict(model.named_parameters())[name]
    param.requires_grad = not frozen
    loss = _forward(model)
    with mg.no_grad():
        param += 0.5
    with pytest.raises(RuntimeError, match="modified in place") as info:
        loss.backward()
    assert f"op '{OP_OF[name.split('.')[0]]}'" in str(info.value)
    assert all(p.grad is None for p in model.parameters())


def test_an_optimizer_step_before_backward_is_refused():
    model = TinyViT(**CONFIG, seed=0)
    opt = mg.optim.SGD(model.parameters(), lr=0.1)
    _forward(model).backward()
    loss = _forward(model)
    opt.step()
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()
