"""The fused path: ``TinyViT(..., fused=True)`` and ``Block(..., fused=True)`` run the
embedding, each encoder block and the head as ONE recorded op each (vit/model/fused.py's
``patch_tokens``, ``encoder_block`` and ``cls_head``), chosen by the constructor alone, at any
batch size.

Here: the switch (which ops a model records at any batch size), and values and gradients
against the composed path (``fused=False``, the default) with the same parameters, and against
central finite differences (float64, ``mg.gradcheck``). What the fused path refuses (float16,
another dtype, a shape that does not fit, another LayerNorm eps): test_fused_path_inputs.py;
backward passes and in-place writes: test_fused_path_backward.py; the same bits for any BLAS
thread count: test_fused_path_threads.py. PyTorch as the oracle for both paths:
test_fused_model_torch.py and test_vit_torch.py.

Tolerances between the two paths: ``assert_close_ulps`` (tests/ulps.py), 256 ulps of the
dtype at the scale of the expected array: the paths compute the same function but sum in
other orders.
"""
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
    random_images,
    random_model,
)
from ulps import assert_close_ulps

import minigrad as mg
from minigrad import F, Tensor
from vit.model import fused as fused_stages
from vit.model.block import Block
from vit.model.tinyvit import TinyViT, patchify

# the block's parameters in the order encoder_block takes them (its signature)
BLOCK_PARAMS = ("norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.proj.weight",
                "norm2.weight", "norm2.bias", "mlp.fc1.weight", "mlp.fc1.bias",
                "mlp.fc2.weight", "mlp.fc2.bias")


# ---- the switch ---------------------------------------------------------------------------------
@pytest.mark.parametrize("B", [1, 7, 300])
def test_a_fused_model_records_exactly_one_op_per_stage_at_any_batch_size(B):
    model = TinyViT(**VIT_CONFIG, depth=2, seed=0, fused=True)
    x, y = random_images(model, B, seed=B)
    assert op_names(model(Tensor(x))) == ["patch_tokens", "encoder_block", "encoder_block",
                                          "cls_head"]
    assert op_names(F.cross_entropy(model(Tensor(x)), y)) == \
        ["patch_tokens", "encoder_block", "encoder_block", "cls_head", "cross_entropy"]


@pytest.mark.parametrize("B", [1, 7, 300])
def test_a_composed_model_records_none_of_the_fused_ops_at_any_batch_size(B):
    model = TinyViT(**VIT_CONFIG, depth=2, seed=0, fused=False)
    x, _ = random_images(model, B, seed=B)
    ops = op_names(model(Tensor(x)))
    assert not FUSED_OPS & set(ops), ops
    assert {"concatenate", "layer_norm", "self_attention", "gelu_tanh"} <= set(ops)  # it ran


def test_the_path_is_the_constructors_fused_argument_composed_by_default():
    assert TinyViT(**VIT_CONFIG).fused is False
    assert Block(8, 2, 12).fused is False
    for depth in (1, 3):
        for want in (False, True):
            model = TinyViT(**VIT_CONFIG, depth=depth, fused=want)
            assert model.fused is want
            assert [b.fused for b in model.encoder_blocks()] == [want] * depth
            assert Block(8, 2, 12, fused=want).fused is want
    for bad in (1, "yes", None):  # a flag, not a truthy value
        with pytest.raises(TypeError, match="TinyViT fused"):
            TinyViT(**VIT_CONFIG, fused=bad)
        with pytest.raises(TypeError, match="Block fused"):
            Block(8, 2, 12, fused=bad)


# ---- values and gradients against the composed path ---------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("depth", [1, 2])
def test_fused_and_composed_models_with_the_same_seed_agree_in_logits_and_every_gradient(
        dtype, depth):
    """The two constructors draw the same parameters from one seed; their logits and every
    parameter's gradient then agree within 256 ulps of the dtype (float64: ~6e-14 of the
    largest value; float32: ~3e-5)."""
    composed = TinyViT(**VIT_CONFIG, depth=depth, dtype=dtype, seed=11)
    fused = TinyViT(**VIT_CONFIG, depth=depth, dtype=dtype, seed=11, fused=True)
    want_params, got_params = dict(composed.named_parameters()), dict(fused.named_parameters())
    assert list(got_params) == list(want_params)
    for name, p in got_params.items():
        np.testing.assert_array_equal(p.data, want_params[name].data, err_msg=name)
    x, _ = random_images(fused, 6, seed=11)
    cot = np.random.default_rng(12).standard_normal((6, 3)).astype(dtype)
    results = []
    for model in (composed, fused):
        logits = model(Tensor(x))
        logits.backward(cot)
        results.append(logits.data)
    assert results[1].dtype == dtype
    assert_close_ulps(results[1], results[0], dtype=dtype)
    for name, p in got_params.items():
        assert p.grad.dtype == dtype, name
        assert_close_ulps(p.grad, want_params[name].grad, dtype=dtype, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("use_pos_emb", [True, False])
def test_fused_model_equals_composed_model_loss_and_every_gradient(dtype, use_pos_emb):
    composed = random_model(dtype, use_pos_emb=use_pos_emb)
    fused = random_model(dtype, use_pos_emb=use_pos_emb, fused=True)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 2, 8, 8)).astype(dtype)
    y = rng.integers(0, 3, 5)
    loss, ops, got = model_pass(fused, x, y)
    ref_loss, ref_ops, want = model_pass(composed, x, y)
    assert sorted(ops) == ["cls_head", "cross_entropy", "encoder_block", "patch_tokens"]
    assert "concatenate" in ref_ops and "layer_norm" in ref_ops  # the composed path ran
    assert_close_ulps(loss, ref_loss, dtype=dtype)
    assert set(got) == set(want) == {k for k, _ in fused.named_parameters()}
    for name, g in got.items():
        assert g.dtype == dtype, name
        assert_close_ulps(g, want[name], dtype=dtype, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_block_equals_the_composed_block_values_and_every_gradient(dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 8)).astype(dtype)
    cot = rng.standard_normal((3, 5, 8)).astype(dtype)
    out, gx, grads, ops = block_pass(random_block(dtype, fused=True), x, cot)
    ref_out, ref_gx, ref_grads, ref_ops = block_pass(random_block(dtype), x, cot)
    assert ops == ["encoder_block"] and "self_attention" in ref_ops  # both paths really ran
    assert out.dtype == gx.dtype == dtype
    assert_close_ulps(out, ref_out, dtype=dtype)
    assert_close_ulps(gx, ref_gx, dtype=dtype)
    assert set(grads) == set(ref_grads) == set(BLOCK_PARAMS)
    for name, g in grads.items():
        assert g.dtype == dtype, name
        assert_close_ulps(g, ref_grads[name], dtype=dtype, err_msg=name)


@pytest.mark.parametrize("depth", [1, 2])
def test_a_fused_model_records_nine_ops_fewer_per_block_and_the_composed_gradients(depth):
    """Ten ops per block become one, the embedding's four and the head's three one each."""
    models = []
    for fused in (False, True):
        model = TinyViT(img_size=8, patch_size=4, in_chans=1, dim=8, num_heads=2, mlp_dim=12,
                        num_classes=3, depth=depth, seed=depth, fused=fused)
        rng = np.random.default_rng(depth)
        for p in model.parameters():  # non-trivial norms and biases
            p.data += 0.1 * rng.standard_normal(p.shape)
        models.append(model)
    x, y = random_images(models[0], 4, seed=depth)
    ref_loss, ref_ops, want = model_pass(models[0], x, y)
    loss, ops, got = model_pass(models[1], x, y)
    assert len(ref_ops) - len(ops) == 9 * depth + 3 + 2
    assert_close_ulps(loss, ref_loss)
    for name in want:
        assert_close_ulps(got[name], want[name], err_msg=name)


@pytest.mark.parametrize("in_chans, patch", [(2, 4), (3, 2), (1, 8)])
def test_images_that_require_grad_get_the_composed_gradient(in_chans, patch):
    """The fused embedding differentiates the images too: whether the images require grad
    does not change a fused model's values (the same bits), and their gradient is the
    composed path's."""
    composed = random_model(seed=7, in_chans=in_chans, patch_size=patch)
    fused = random_model(seed=7, in_chans=in_chans, patch_size=patch, fused=True)
    data = np.random.default_rng(7).standard_normal((2, in_chans, 8, 8))
    x = Tensor(data.copy(), requires_grad=True)
    logits = fused(x)
    assert "patch_tokens" in op_names(logits)
    np.testing.assert_array_equal(logits.data, fused.forward(data))  # grad or not: same bits
    cot = np.random.default_rng(8).standard_normal(logits.shape)
    logits.backward(cot)
    x2 = Tensor(data.copy(), requires_grad=True)
    composed(x2).backward(cot)
    assert x.grad.shape == x.shape and np.abs(x.grad).sum() > 0
    assert_close_ulps(x.grad, x2.grad)


def test_patch_tokens_matches_the_specs_patch_order_on_rgb_images():
    """The op gathers patches in (c, p1, p2) order internally; its weight rows are in
    patchify's (p1, p2, c) order, so t[:, 1:] = patchify(x) W + b exactly as the spec says."""
    model = random_model(seed=4, in_chans=3, img_size=8, patch_size=2)
    x = np.random.default_rng(4).standard_normal((2, 3, 8, 8))
    w, b = model.patch_embed.weight.data, model.patch_embed.bias.data
    cls, pos = model.cls_token.data, model.pos_embed.data
    t = fused_stages.patch_tokens(x, w, b, cls, pos, patch_size=2).data
    want = np.concatenate([np.broadcast_to(cls, (2, 1, 8)), patchify(x, 2) @ w + b], axis=1) + pos
    assert_close_ulps(t, want)


def test_apply_unchecked_records_what_the_op_wrapper_records():
    """The same op name, value bits and gradient bits as calling the op itself."""
    model = random_model(seed=13)
    params = [model.norm.weight, model.norm.bias, model.head.weight, model.head.bias]
    data = np.random.default_rng(13).standard_normal((4, 5, 8))
    cot = np.random.default_rng(14).standard_normal((4, 3))
    results = []
    for call in (lambda t: fused_stages.apply_unchecked(fused_stages.cls_head, [t, *params]),
                 lambda t: fused_stages.cls_head(t, *params)):
        model.zero_grad()
        t = Tensor(data.copy(), requires_grad=True)
        out = call(t)
        assert op_names(out) == ["cls_head"]
        out.backward(cot)
        results.append([out.data, t.grad] + [p.grad.copy() for p in params])
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


# ---- finite differences (float64) ---------------------------------------------------------------
@pytest.mark.parametrize("use_pos_emb", [True, False])
@pytest.mark.parametrize("in_chans", [2, 3])
def test_gradcheck_every_input_of_patch_tokens_and_the_images(use_pos_emb, in_chans):
    model = random_model(seed=2, use_pos_emb=use_pos_emb, in_chans=in_chans)
    images = np.random.default_rng(2).standard_normal((3, in_chans, 8, 8))
    params = [model.patch_embed.weight, model.patch_embed.bias, model.cls_token]
    params += [model.pos_embed] if use_pos_emb else []
    mg.gradcheck(lambda im, *a: fused_stages.patch_tokens(im, *a, patch_size=4),
                 [images] + [p.data.copy() for p in params])


def test_gradcheck_every_input_of_cls_head():
    model = random_model(seed=3)
    t = np.random.default_rng(3).standard_normal((4, 5, 8))
    params = [model.norm.weight, model.norm.bias, model.head.weight, model.head.bias]
    mg.gradcheck(fused_stages.cls_head, [t] + [p.data.copy() for p in params])


def test_gradcheck_every_input_of_encoder_block():
    block = random_block(seed=2)
    x = np.random.default_rng(2).standard_normal((2, 4, 8))
    # t and all ten parameters checked, each with its own random cotangent direction
    named = dict(block.named_parameters())
    inputs = [x] + [named[name].data.copy() for name in BLOCK_PARAMS]
    mg.gradcheck(lambda *a: fused_stages.encoder_block(*a, num_heads=2), inputs)


@pytest.mark.parametrize("config", [
    dict(img_size=13, patch_size=1, in_chans=1, dim=8, num_heads=1, mlp_dim=8, num_classes=3),
    dict(img_size=8, patch_size=4, in_chans=1, dim=8, num_heads=2, mlp_dim=12, num_classes=3,
         depth=2),
], ids=["170-tokens", "depth2"])
def test_gradcheck_every_parameter_and_the_images_of_the_model(config, fused):
    model = random_model(seed=4, fused=fused, **config)
    x = Tensor(np.random.default_rng(4).standard_normal(
        (2, config["in_chans"], config["img_size"], config["img_size"])), requires_grad=True)
    if fused:
        assert FUSED_OPS <= set(op_names(model(x)))
    mg.gradcheck(lambda im: model(im), [x], fast=True)
    mg.gradcheck(lambda *_: model(x), list(model.parameters()), fast=True)
