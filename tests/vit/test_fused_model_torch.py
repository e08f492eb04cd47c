"""PyTorch as the oracle for both paths of TinyViT (the ``fused`` fixture: the composed ops,
or one op per stage, patch_tokens, encoder_block, cls_head) on the shapes test_vit_torch.py
does not take: patch side 1 (37 tokens) and 8, depth 3, batch 1, and a random cotangent on the
logits instead of a loss. float64, 1e-10."""
from __future__ import annotations

import numpy as np
import pytest

from minigrad import Tensor
from minigrad.tools.summary import graph_summary
from vit import TinyViT

torch = pytest.importorskip("torch")
from test_vit_torch import TOL, TorchTinyViT, tt  # noqa: E402


@pytest.mark.slow  # fast: test_vit_torch.py, both paths against torch
@pytest.mark.parametrize("cfg, B", [
    (dict(img_size=6, patch_size=1, in_chans=1, dim=8, num_heads=2, mlp_dim=12, num_classes=3), 2),
    (dict(img_size=16, patch_size=8, in_chans=3, dim=8, num_heads=1, mlp_dim=8, num_classes=4), 3),
    (dict(img_size=8, patch_size=2, in_chans=3, dim=12, num_heads=3, mlp_dim=20, num_classes=5,
          depth=3, use_pos_emb=False), 1),
    (dict(img_size=4, patch_size=4, in_chans=2, dim=8, num_heads=4, mlp_dim=8, num_classes=2,
          depth=2), 1),
], ids=["p1-37-tokens", "p8-rgb", "depth3-nopos-batch1", "one-patch-batch1"])
def test_logits_and_every_gradient_match_torch(cfg, B, fused):
    model = TinyViT(**cfg, seed=3, fused=fused)
    rng = np.random.default_rng(3)
    for p in model.parameters():  # off the special initial values, so every term matters
        p.data[...] += 0.2 * rng.standard_normal(p.shape)
    x = rng.standard_normal((B, cfg["in_chans"], cfg["img_size"], cfg["img_size"]))
    logits = model(Tensor(x))
    ops = {row[0] for row in graph_summary(logits).rows}
    fused_ops = {"patch_tokens", "encoder_block", "cls_head"}
    assert (fused_ops <= ops) if fused else not (fused_ops & ops)
    cot = rng.standard_normal(logits.shape)
    logits.backward(cot)
    ref = TorchTinyViT(model)
    ref_logits = ref.logits(tt(x, False))
    ref_logits.backward(torch.from_numpy(cot))
    np.testing.assert_allclose(logits.data, ref_logits.detach().numpy(), **TOL)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad, ref.p[name].grad.numpy(), **TOL, err_msg=name)
