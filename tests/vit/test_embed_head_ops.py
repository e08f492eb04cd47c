"""vit.embed_op.patch_tokens and vit.head_op.cls_head: TinyViT's embedding and head as one op
each, against the composed ops they replace (``fusion.FUSE_BELOW_FLOPS = 0``: patchify +
F.linear + broadcast_to + concatenate + add, and t[:, 0] + LayerNorm + Linear).

Tolerances: a few hundred ulps of the dtype (assert_close_ulps); the two paths sum in other
orders. Gradients are also checked against finite differences in float64 (mg.gradcheck,
random cotangents).
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, Tensor
from minigrad.summary import graph_summary
from ulps import assert_close_ulps
from vit import embed_op, fusion, head_op
from vit.model.tinyvit import TinyViT


def random_model(dtype=np.float64, seed=0, use_pos_emb=True, **config):
    """A small TinyViT whose every parameter is random (norms, biases, CLS token too)."""
    kwargs = dict(img_size=8, patch_size=4, in_chans=2, dim=8, num_heads=2, mlp_dim=12,
                  num_classes=3, use_pos_emb=use_pos_emb)
    kwargs.update(config)
    model = TinyViT(**kwargs, dtype=dtype, seed=seed)
    rng = np.random.default_rng(seed + 100)
    for p in model.parameters():
        p.data[...] = rng.standard_normal(p.shape) / np.sqrt(p.shape[-1])
    return model


@contextlib.contextmanager
def composed():
    """Every fused op off: the model runs as the composed minigrad ops."""
    saved, fusion.FUSE_BELOW_FLOPS = fusion.FUSE_BELOW_FLOPS, 0
    try:
        yield
    finally:
        fusion.FUSE_BELOW_FLOPS = saved


def step(model, x, y):
    """Loss, the recorded op names and every parameter gradient of one forward + backward."""
    model.zero_grad()
    loss = F.cross_entropy(model(Tensor(x)), y)
    ops = [row[0] for row in graph_summary(loss).rows]
    loss.backward()
    return loss.item(), ops, {k: p.grad.copy() for k, p in model.named_parameters()}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("use_pos_emb", [True, False])
def test_fused_model_equals_composed_model_loss_and_every_gradient(dtype, use_pos_emb):
    model = random_model(dtype, use_pos_emb=use_pos_emb)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 2, 8, 8)).astype(dtype)
    y = rng.integers(0, 3, 5)
    loss, ops, got = step(model, x, y)
    with composed():
        ref_loss, ref_ops, want = step(model, x, y)
    assert sorted(ops) == ["cls_head", "cross_entropy", "encoder_block", "patch_tokens"]
    assert "patch_tokens" not in ref_ops and "cls_head" not in ref_ops
    assert "concatenate" in ref_ops and "layer_norm" in ref_ops  # the composed path ran
    assert_close_ulps(loss, ref_loss, dtype=dtype)
    assert set(got) == set(want) == {k for k, _ in model.named_parameters()}
    for name, g in got.items():
        assert g.dtype == dtype, name
        assert_close_ulps(g, want[name], dtype=dtype, err_msg=name)


@pytest.mark.parametrize("use_pos_emb", [True, False])
def test_gradcheck_every_input_of_patch_tokens_float64(use_pos_emb):
    model = random_model(seed=2, use_pos_emb=use_pos_emb)
    images = np.random.default_rng(2).standard_normal((3, 2, 8, 8))
    params = [p.data.copy() for p in embed_op.embedding_parameters(model)]
    mg.gradcheck(lambda *a: embed_op.patch_tokens(images, *a, patch_size=4), params)


def test_gradcheck_every_input_of_cls_head_float64():
    model = random_model(seed=3)
    t = np.random.default_rng(3).standard_normal((4, 5, 8))
    params = [p.data.copy() for p in head_op.head_parameters(model)]
    mg.gradcheck(head_op.cls_head, [t] + params)


def test_patch_tokens_matches_the_specs_patch_order_on_rgb_images():
    """The op gathers patches in (c, p1, p2) order internally; its weight rows are in
    patchify's (p1, p2, c) order, so t[:, 1:] = patchify(x) W + b exactly as the spec says."""
    from vit.model.tinyvit import patchify
    model = random_model(seed=4, in_chans=3, img_size=8, patch_size=2)
    x = np.random.default_rng(4).standard_normal((2, 3, 8, 8))
    w, b, cls, pos = (p.data for p in embed_op.embedding_parameters(model))
    t = embed_op.patch_tokens(x, w, b, cls, pos, patch_size=2).data
    want = np.concatenate([np.broadcast_to(cls, (2, 1, 8)), patchify(x, 2) @ w + b], axis=1) + pos
    assert_close_ulps(t, want)


def test_a_second_backward_pass_agrees_and_nothing_is_modified():
    model = random_model(seed=5)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 2, 8, 8))
    x0 = x.copy()
    before = [p.data.copy() for p in model.parameters()]
    logits = model(Tensor(x))
    cot = rng.standard_normal(logits.shape)
    cot0 = cot.copy()
    logits.backward(cot, retain_graph=True)
    first = [p.grad.copy() for p in model.parameters()]
    logits.backward(cot)  # the same cotangent object: every joint VJP must run again
    for p, a in zip(model.parameters(), first):
        np.testing.assert_array_equal(p.grad, 2 * a)  # doubling is exact
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(cot, cot0)
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.data, b)


def test_frozen_embedding_and_head_parameters_get_no_gradient():
    model = random_model(seed=6)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 2, 8, 8))
    y = rng.integers(0, 3, 3)
    _, _, want = step(model, x, y)
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


@pytest.mark.parametrize("in_chans, patch", [(2, 4), (3, 2), (1, 8)])
def test_images_that_require_grad_are_fused_too_and_get_the_composed_gradient(in_chans, patch):
    """The fused embedding differentiates the images as well, so whether the images require
    grad does not change the path, and so the bits, of a model's values."""
    model = random_model(seed=7, in_chans=in_chans, patch_size=patch)
    data = np.random.default_rng(7).standard_normal((2, in_chans, 8, 8))
    x = Tensor(data.copy(), requires_grad=True)
    assert embed_op.fusable(model, x)
    logits = model(x)
    assert "patch_tokens" in [row[0] for row in graph_summary(logits).rows]
    np.testing.assert_array_equal(logits.data, model.forward(data))  # grad or not: same bits
    cot = np.random.default_rng(8).standard_normal(logits.shape)
    logits.backward(cot)
    with composed():
        x2 = Tensor(data.copy(), requires_grad=True)
        model(x2).backward(cot)
    assert x.grad.shape == x.shape and np.abs(x.grad).sum() > 0
    assert_close_ulps(x.grad, x2.grad)


def test_gradcheck_of_patch_tokens_includes_the_images():
    model = random_model(seed=11, in_chans=3, patch_size=4)
    images = np.random.default_rng(11).standard_normal((2, 3, 8, 8))
    params = [p.data.copy() for p in embed_op.embedding_parameters(model)]
    mg.gradcheck(lambda im, *a: embed_op.patch_tokens(im, *a, patch_size=4), [images] + params)


def test_float16_mixed_dtypes_and_large_models_are_not_fused():
    x16 = Tensor(np.zeros((2, 2, 8, 8), dtype=np.float16))
    m16 = random_model(np.float16)
    assert not embed_op.fusable(m16, x16)
    assert not head_op.fusable(m16, Tensor(np.zeros((2, 5, 8), dtype=np.float16)))
    m32 = random_model(np.float32)
    assert not embed_op.fusable(m32, Tensor(np.zeros((2, 2, 8, 8))))  # float64 images
    assert not head_op.fusable(m32, Tensor(np.zeros((2, 5, 8))))
    # a batch whose tokens pass FUSE_MAX_ELEMENTS: composed, with the same results
    big = fusion.FUSE_MAX_ELEMENTS // (5 * 8) + 1
    xb = np.random.default_rng(8).standard_normal((big, 2, 8, 8)).astype(np.float32)
    assert not embed_op.fusable(m32, Tensor(xb))
    assert embed_op.fusable(m32, Tensor(xb[:big - 1]))
    assert not head_op.fusable(m32, Tensor(np.zeros((big, 5, 8), dtype=np.float32)))


def test_head_is_not_fused_without_its_norm_weights_or_with_another_eps():
    model = random_model(seed=9)
    t = Tensor(np.zeros((2, 5, 8)))
    assert head_op.fusable(model, t)
    model.norm.eps = 1e-6
    assert not head_op.fusable(model, t)


def test_the_largest_fused_embedding_and_head_give_the_same_bits_for_any_blas_thread_count():
    """docs/reliability.md G2 at the largest batch the fused ops take."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    model = random_model(np.float64, seed=10)
    batch = fusion.FUSE_MAX_ELEMENTS // (5 * 8)
    rng = np.random.default_rng(10)
    x = rng.standard_normal((batch, 2, 8, 8))
    y = rng.integers(0, 3, batch)
    results = []
    for threads in (1, 2):
        with threadpoolctl.threadpool_limits(threads):
            loss, ops, grads = step(model, x, y)
        assert "patch_tokens" in ops and "cls_head" in ops
        results.append([loss] + [grads[k] for k in sorted(grads)])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
