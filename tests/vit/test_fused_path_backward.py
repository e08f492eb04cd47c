"""Backward passes through the fused path (``TinyViT(..., fused=True)``, ``Block(...,
fused=True)``) and the composed one (the ``fused`` fixture): a second pass with retain_graph
doubles every gradient, inputs and cotangents are never modified, frozen parameters get no
gradient, a no_grad forward records nothing and gives the same bits (attention maps
included), and an in-place write into any parameter (or an optimizer step) between forward
and backward is refused by the engine's version counters."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    FUSED_OPS,
    VIT_CONFIG,
    block_pass,
    model_pass,
    op_names,
    random_block,
    random_model,
)
from ulps import assert_close_ulps

import minigrad as mg
from minigrad import F, Tensor
from vit.cli.attention_maps import token_attention_weights
from vit.model.tinyvit import TinyViT


# ---- backward passes ----------------------------------------------------------------------------
def test_a_second_backward_pass_doubles_every_gradient_and_nothing_is_modified(fused):
    """Each joint VJP runs again on retain_graph (no cache is overwritten by the first pass),
    and neither the images, the cotangent nor a parameter is written to."""
    model = random_model(seed=5, fused=fused)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 2, 8, 8))
    x0 = x.copy()
    before = [p.data.copy() for p in model.parameters()]
    logits = model(Tensor(x))
    cot = rng.standard_normal(logits.shape)
    cot0 = cot.copy()
    logits.backward(cot, retain_graph=True)
    first = [p.grad.copy() for p in model.parameters()]
    logits.backward(cot)  # the same cotangent object: every VJP must run again
    for p, a in zip(model.parameters(), first, strict=True):
        np.testing.assert_array_equal(p.grad, 2 * a)  # doubling is exact
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(cot, cot0)
    for p, b in zip(model.parameters(), before, strict=True):
        np.testing.assert_array_equal(p.data, b)


def test_a_blocks_inputs_and_cotangent_are_not_modified_and_a_second_pass_agrees(fused):
    rng = np.random.default_rng(5)
    block = random_block(seed=5, fused=fused)
    x = rng.standard_normal((3, 5, 8))
    cot = rng.standard_normal((3, 5, 8))
    before = [p.data.copy() for p in block.parameters()]
    x0, cot0 = x.copy(), cot.copy()
    t = Tensor(x, requires_grad=True)
    out = block(t)
    out.backward(cot, retain_graph=True)
    first = [t.grad.copy()] + [p.grad.copy() for p in block.parameters()]
    out.backward(cot)  # the same cotangent object again: the backward must run again
    for p, a in zip(block.parameters(), first[1:], strict=True):
        np.testing.assert_array_equal(p.grad, 2 * a)  # doubling is exact
    if fused:  # t reaches one op: its gradient doubles exactly too
        np.testing.assert_array_equal(t.grad, 2 * first[0])
    else:  # t feeds the residual and norm1: the second pass adds its terms one at a time
        assert_close_ulps(t.grad, 2 * first[0])
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(cot, cot0)
    for p, b in zip(block.parameters(), before, strict=True):
        np.testing.assert_array_equal(p.data, b)


def test_frozen_embedding_and_head_parameters_get_no_gradient_and_the_rest_are_unchanged(fused):
    model = random_model(seed=6, fused=fused)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 2, 8, 8))
    y = rng.integers(0, 3, 3)
    _, _, want = model_pass(model, x, y)
    frozen = ("cls_token", "patch_embed.bias", "norm.weight", "head.bias")
    params = dict(model.named_parameters())
    for name in frozen:
        params[name].requires_grad = False
    model.zero_grad()
    F.cross_entropy(model(Tensor(x)), y).backward()
    for name, p in model.named_parameters():
        if name in frozen:
            assert p.grad is None, name
        else:
            np.testing.assert_array_equal(p.grad, want[name], err_msg=name)


def test_frozen_block_parameters_get_no_gradient_and_the_rest_are_unchanged(fused):
    rng = np.random.default_rng(6)
    block = random_block(seed=6, fused=fused)
    x = rng.standard_normal((3, 5, 8))
    cot = rng.standard_normal((3, 5, 8))
    _, _, want, _ = block_pass(block, x, cot)
    block.zero_grad()
    block.norm1.weight.requires_grad = False
    block.mlp.fc2.bias.requires_grad = False
    block(Tensor(x)).backward(cot)  # t is a constant too
    for name, p in block.named_parameters():
        if name in ("norm1.weight", "mlp.fc2.bias"):
            assert p.grad is None, name
        else:
            np.testing.assert_array_equal(p.grad, want[name], err_msg=name)


def test_a_no_grad_forward_records_nothing_gives_the_same_bits_and_attention_maps_work(fused):
    model = random_model(seed=7, depth=2, in_chans=1, fused=fused)
    x = np.random.default_rng(7).standard_normal((2, 1, 8, 8))
    with mg.no_grad():
        plain = model(Tensor(x))
    assert not plain.requires_grad and op_names(plain) == []
    np.testing.assert_array_equal(plain.data, model(Tensor(x)).data)  # graph or not: same bits
    w = token_attention_weights(model, x)
    assert w.shape == (2, 2, 5, 5)
    assert_close_ulps(w.sum(axis=-1), np.ones((2, 2, 5)))
    composed = random_model(seed=7, depth=2, in_chans=1)
    assert_close_ulps(w, token_attention_weights(composed, x))


# ---- in-place writes between forward and backward (the version counters) ------------------------
OP_OF = {"patch_embed": "patch_tokens", "cls_token": "patch_tokens",
         "pos_embed": "patch_tokens", "block": "encoder_block", "norm": "cls_head",
         "head": "cls_head"}


NAMES = [name for name, _ in TinyViT(**VIT_CONFIG, seed=0).named_parameters()]


def _loss(model):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 8, 8))
    return F.cross_entropy(model(Tensor(x)), rng.integers(0, 3, 3))


@pytest.mark.parametrize("frozen", [False, True], ids=["trainable", "frozen"])
@pytest.mark.parametrize("name", NAMES)
def test_a_tracked_write_into_any_parameter_after_the_forward_is_refused(name, frozen, fused):
    """Each fused op records the model's parameters themselves as inputs, so a tracked
    write (``p += v`` under no_grad, an optimizer step) into any of them, trainable or frozen,
    is refused at backward naming the op, and no ``.grad`` moves. (Writes straight into
    ``.data`` are not tracked: documented in minigrad/graph.py, not tested.)"""
    model = TinyViT(**VIT_CONFIG, seed=0, fused=fused)
    param = dict(model.named_parameters())[name]
    param.requires_grad = not frozen
    loss = _loss(model)
    if fused:
        assert FUSED_OPS <= set(op_names(loss))
    with mg.no_grad():
        param += 0.5
    with pytest.raises(RuntimeError, match="modified in place") as info:
        loss.backward()
    if fused:
        assert f"op '{OP_OF[name.split('.')[0]]}'" in str(info.value)
    assert all(p.grad is None for p in model.parameters())


def test_an_optimizer_step_before_backward_is_refused(fused):
    model = TinyViT(**VIT_CONFIG, seed=0, fused=fused)
    opt = mg.optim.SGD(model.parameters(), lr=0.1)
    _loss(model).backward()
    loss = _loss(model)
    opt.step()
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()
