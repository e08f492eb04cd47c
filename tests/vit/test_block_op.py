"""vit.block_op.encoder_block: the whole encoder block as one op, against the composed Block.

The composed path (``FUSE_BELOW_FLOPS = 0``: F.layer_norm, F.linear, F.self_attention,
F.gelu_tanh) is the reference; PyTorch parity of the model goes through test_vit_torch.py,
which now runs the fused op (its blocks are small).
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, Tensor
from minigrad.summary import graph_summary
from ulps import assert_close_ulps
from vit import Block, block_op, fusion
from vit.cli.attention_maps import token_attention_weights
from vit.model.tinyvit import TinyViT

B, T, D, H, FH = 3, 5, 8, 2, 12


def random_block(dtype, seed=0, dim=D, heads=H, hidden=FH):
    """A Block whose every parameter is random (norm gains and biases too)."""
    rng = np.random.default_rng(seed)
    block = Block(dim, heads, hidden, dtype=dtype, rng=rng)
    for p in block.parameters():
        p.data[...] = rng.standard_normal(p.shape) / np.sqrt(p.shape[0])
    return block


def run(block, x, cot, fused):
    """Output, input gradient and parameter gradients of one forward + backward."""
    saved = fusion.FUSE_BELOW_FLOPS
    fusion.FUSE_BELOW_FLOPS = saved if fused else 0
    try:
        block.zero_grad()
        t = Tensor(x.copy(), requires_grad=True)
        out = block(t)
        ops = [row[0] for row in graph_summary(out).rows]
        out.backward(cot)
    finally:
        fusion.FUSE_BELOW_FLOPS = saved
    grads = {name: p.grad.copy() for name, p in block.named_parameters()}
    return out.data, t.grad, grads, ops


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_block_equals_the_composed_block_values_and_every_gradient(dtype):
    rng = np.random.default_rng(1)
    block = random_block(dtype)
    x = rng.standard_normal((B, T, D)).astype(dtype)
    cot = rng.standard_normal((B, T, D)).astype(dtype)
    out, gx, grads, ops = run(block, x, cot, fused=True)
    ref_out, ref_gx, ref_grads, ref_ops = run(block, x, cot, fused=False)
    assert ops == ["encoder_block"] and "self_attention" in ref_ops  # both paths really ran
    assert out.dtype == gx.dtype == dtype
    assert_close_ulps(out, ref_out, dtype=dtype)
    assert_close_ulps(gx, ref_gx, dtype=dtype)
    assert set(grads) == set(ref_grads) and len(grads) == 10
    for name, g in grads.items():
        assert g.dtype == dtype, name
        assert_close_ulps(g, ref_grads[name], dtype=dtype, err_msg=name)


def test_gradcheck_every_input_of_the_op_float64():
    rng = np.random.default_rng(2)
    block = random_block(np.float64, seed=2)
    x = rng.standard_normal((2, 4, D))
    # t and all ten parameters checked, each with its own random cotangent direction
    inputs = [x] + [p.data.copy() for p in block_op.block_parameters(block)]
    mg.gradcheck(lambda *a: block_op.encoder_block(*a, num_heads=H), inputs)


@pytest.mark.parametrize("depth", [1, 2])
def test_tinyvit_gradients_fused_equal_composed(depth):
    rng = np.random.default_rng(depth)
    model = TinyViT(img_size=8, patch_size=4, in_chans=1, dim=D, num_heads=H, mlp_dim=FH,
                    num_classes=3, depth=depth, seed=depth)
    for p in model.parameters():  # non-trivial norms and biases
        p.data += 0.1 * rng.standard_normal(p.shape)
    x = Tensor(rng.standard_normal((4, 1, 8, 8)))
    y = rng.integers(0, 3, 4)

    def grads(fused):
        saved = fusion.FUSE_BELOW_FLOPS
        fusion.FUSE_BELOW_FLOPS = saved if fused else 0
        try:
            model.zero_grad()
            loss = F.cross_entropy(model(x), y)
            n_ops = len(graph_summary(loss).rows)
            loss.backward()
        finally:
            fusion.FUSE_BELOW_FLOPS = saved
        return loss.item(), n_ops, {k: p.grad.copy() for k, p in model.named_parameters()}

    loss, n_fused, got = grads(True)
    ref_loss, n_composed, want = grads(False)
    # ten ops per block became one, and the embedding's four and the head's three one each
    assert n_composed - n_fused == 9 * depth + 3 + 2
    assert_close_ulps(loss, ref_loss)
    for name in want:
        assert_close_ulps(got[name], want[name], err_msg=name)
    mg.gradcheck(lambda *_: F.cross_entropy(model(x), y), list(model.parameters()), fast=True)


def test_large_blocks_keep_the_composed_ops():
    """Above the threshold the block is the ten ops it was (their parallel kernels)."""
    block = random_block(np.float32, dim=64, heads=4, hidden=128)
    x = np.random.default_rng(3).standard_normal((32, 17, 64)).astype(np.float32)
    assert 2.0 * 32 * 17 * 64 * 3 * 64 >= fusion.FUSE_BELOW_FLOPS
    ops = [row[0] for row in graph_summary(block(Tensor(x, requires_grad=True))).rows]
    assert "encoder_block" not in ops and "self_attention" in ops


def test_float16_and_mixed_dtypes_take_the_composed_path_unchanged():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((B, T, D))
    for block, xin in [(random_block(np.float16), x.astype(np.float16)),
                       (random_block(np.float32), x)]:  # float64 tokens, float32 block
        fused = block(Tensor(xin))
        fusion.FUSE_BELOW_FLOPS, saved = 0, fusion.FUSE_BELOW_FLOPS
        try:
            composed = block(Tensor(xin))
        finally:
            fusion.FUSE_BELOW_FLOPS = saved
        assert fused.dtype == composed.dtype  # (float64 tokens promote the residual sums)
        np.testing.assert_array_equal(fused.data, composed.data)
    assert not block_op.fusable(random_block(np.float16), x.astype(np.float16))


def test_inputs_and_cotangent_are_not_modified_and_a_second_pass_agrees():
    rng = np.random.default_rng(5)
    block = random_block(np.float64, seed=5)
    x = rng.standard_normal((B, T, D))
    cot = rng.standard_normal((B, T, D))
    before = [p.data.copy() for p in block.parameters()]
    x0, cot0 = x.copy(), cot.copy()
    t = Tensor(x, requires_grad=True)
    out = block(t)
    out.backward(cot, retain_graph=True)
    first = [t.grad.copy()] + [p.grad.copy() for p in block.parameters()]
    out.backward(cot)  # the same cotangent object again: the backward must run again
    second = [t.grad] + [p.grad for p in block.parameters()]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(b, 2 * a)  # doubling is exact
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(cot, cot0)
    for p, b in zip(block.parameters(), before):
        np.testing.assert_array_equal(p.data, b)


def test_frozen_parameters_get_no_gradient_and_the_rest_are_right():
    rng = np.random.default_rng(6)
    block = random_block(np.float64, seed=6)
    x = rng.standard_normal((B, T, D))
    cot = rng.standard_normal((B, T, D))
    _, _, want, _ = run(block, x, cot, fused=True)
    block.zero_grad()
    block.norm1.weight.requires_grad = False
    block.mlp.fc2.bias.requires_grad = False
    block(Tensor(x)).backward(cot)  # t is a constant too
    for name, p in block.named_parameters():
        if name in ("norm1.weight", "mlp.fc2.bias"):
            assert p.grad is None
        else:
            np.testing.assert_array_equal(p.grad, want[name])


def test_no_grad_forward_and_attention_maps_still_work():
    model = TinyViT(img_size=8, patch_size=4, in_chans=1, dim=D, num_heads=H, mlp_dim=FH,
                    num_classes=3, depth=2, seed=0)
    x = np.random.default_rng(7).standard_normal((2, 1, 8, 8))
    with mg.no_grad():
        plain = model(Tensor(x))
    assert not plain.requires_grad
    np.testing.assert_array_equal(plain.data, model(Tensor(x)).data)  # graph or not: same bits
    w = token_attention_weights(model, x)
    assert w.shape == (2, H, 5, 5)
    assert_close_ulps(w.sum(axis=-1), np.ones((2, H, 5)))


def test_bad_input_is_still_named_by_the_composed_ops():
    block = random_block(np.float64)
    with pytest.raises(ValueError, match="LayerNorm"):
        block(Tensor(np.zeros((B, T, D + 1))))


def test_largest_fused_block_gives_the_same_bits_for_any_blas_thread_count():
    """docs/reliability.md G2 for the sizes the fused op takes: its products and row sums stay
    below the sizes where OpenBLAS starts threads of its own."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    dim, hidden = 8, 16
    rows = fusion.FUSE_MAX_ELEMENTS // dim  # 1024 token rows: 128 sequences of 8
    block = random_block(np.float64, seed=8, dim=dim, heads=2, hidden=hidden)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((rows // 8, 8, dim))
    cot = rng.standard_normal(x.shape)
    results = []
    for threads in (1, 2):
        with threadpoolctl.threadpool_limits(threads):
            out, gx, grads, ops = run(block, x, cot, fused=True)
        assert ops == ["encoder_block"]
        results.append([out, gx] + [grads[k] for k in sorted(grads)])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    assert not block_op.fusable(block, np.zeros((rows // 8 + 1, 8, dim)))  # one more: composed
