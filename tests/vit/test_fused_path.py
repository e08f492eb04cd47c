"""The fused path: ``TinyViT(..., fused=True)`` and ``Block(..., fused=True)`` run the
embedding, each encoder block and the head as ONE recorded op each (vit/model/fused.py's
``patch_tokens``, ``encoder_block`` and ``cls_head``), chosen by the constructor alone, at any
batch size.

- the switch: which ops a model records at any batch size; what is refused at construction
  (float16) and at the call (another dtype, a shape that does not fit, another LayerNorm eps);
- values and gradients against the composed path (``fused=False``, the default) with the same
  parameters, and against central finite differences (float64, ``mg.gradcheck``);
- backward passes: retain_graph, frozen parameters, no_grad, inputs left untouched, in-place
  writes between forward and backward refused (the engine's version counters);
- docs/reliability.md G2: the same bits for any BLAS thread count, at sizes where BLAS would
  split the products itself.

PyTorch as the oracle for both paths: test_fused_model_torch.py and test_vit_torch.py.

Tolerances between the two paths: ``assert_close_ulps`` (tests/ulps.py), 256 ulps of the
dtype at the scale of the expected array: the paths compute the same function but sum in
other orders.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, Tensor
from minigrad.runtime.blas import blas_threads
from minigrad.runtime.parallel import BLAS_THREADED_FLOPS
from minigrad.tools.summary import graph_summary
from ulps import assert_close_ulps
from vit.cli.attention_maps import token_attention_weights
from vit.model import fused as fused_stages
from vit.model.block import Block
from vit.model.tinyvit import TinyViT, patchify

CONFIG = dict(img_size=8, patch_size=4, in_chans=2, dim=8, num_heads=2, mlp_dim=12,
              num_classes=3)
FUSED_OPS = {"patch_tokens", "encoder_block", "cls_head"}
# the block's parameters in the order encoder_block takes them (its signature)
BLOCK_PARAMS = ("norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.proj.weight",
                "norm2.weight", "norm2.bias", "mlp.fc1.weight", "mlp.fc1.bias",
                "mlp.fc2.weight", "mlp.fc2.bias")


def random_model(dtype=np.float64, seed=0, fused=False, **config):
    """A TinyViT (CONFIG, updated by ``config``) whose every parameter is random, norm gains
    and biases and the CLS token too: the same numbers whichever path it runs."""
    model = TinyViT(**{**CONFIG, **config}, dtype=dtype, seed=seed, fused=fused)
    rng = np.random.default_rng(seed + 100)
    for p in model.parameters():
        p.data[...] = rng.standard_normal(p.shape) / np.sqrt(p.shape[-1])
    return model


def random_block(dtype=np.float64, seed=0, fused=False, dim=8, heads=2, hidden=12):
    """A Block whose every parameter is random (norm gains and biases too)."""
    rng = np.random.default_rng(seed)
    block = Block(dim, heads, hidden, dtype=dtype, rng=rng, fused=fused)
    for p in block.parameters():
        p.data[...] = rng.standard_normal(p.shape) / np.sqrt(p.shape[0])
    return block


def random_images(model, B, seed):
    c = model.config
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, c["in_chans"], c["img_size"], c["img_size"]))
    return x.astype(model.dtype), rng.integers(0, c["num_classes"], B)


def op_names(t: Tensor) -> list:
    """The ops recorded in the graph that made ``t``, inputs before results."""
    return [row[0] for row in graph_summary(t).rows]


def step(model, x, y):
    """Loss, the recorded op names and every parameter gradient of one forward + backward."""
    model.zero_grad()
    loss = F.cross_entropy(model(Tensor(x)), y)
    ops = op_names(loss)
    loss.backward()
    return loss.item(), ops, {k: p.grad.copy() for k, p in model.named_parameters()}


def run_block(block, x, cot):
    """Output, input gradient, parameter gradients and recorded ops of one forward + backward."""
    block.zero_grad()
    t = Tensor(x.copy(), requires_grad=True)
    out = block(t)
    ops = op_names(out)
    out.backward(cot)
    return out.data, t.grad, {n: p.grad.copy() for n, p in block.named_parameters()}, ops


# ---- the switch ---------------------------------------------------------------------------------
@pytest.mark.parametrize("B", [1, 7, 300])
def test_a_fused_model_records_exactly_one_op_per_stage_at_any_batch_size(B):
    model = TinyViT(**CONFIG, depth=2, seed=0, fused=True)
    x, y = random_images(model, B, seed=B)
    assert op_names(model(Tensor(x))) == ["patch_tokens", "encoder_block", "encoder_block",
                                          "cls_head"]
    assert op_names(F.cross_entropy(model(Tensor(x)), y)) == \
        ["patch_tokens", "encoder_block", "encoder_block", "cls_head", "cross_entropy"]


@pytest.mark.parametrize("B", [1, 7, 300])
def test_a_composed_model_records_none_of_the_fused_ops_at_any_batch_size(B):
    model = TinyViT(**CONFIG, depth=2, seed=0, fused=False)
    x, _ = random_images(model, B, seed=B)
    ops = op_names(model(Tensor(x)))
    assert not FUSED_OPS & set(ops), ops
    assert {"concatenate", "layer_norm", "self_attention", "gelu_tanh"} <= set(ops)  # it ran


def test_the_path_is_the_constructors_fused_argument_composed_by_default():
    assert TinyViT(**CONFIG).fused is False
    assert Block(8, 2, 12).fused is False
    for depth in (1, 3):
        for want in (False, True):
            model = TinyViT(**CONFIG, depth=depth, fused=want)
            assert model.fused is want
            assert [b.fused for b in model.encoder_blocks()] == [want] * depth
            assert Block(8, 2, 12, fused=want).fused is want
    for bad in (1, "yes", None):  # a flag, not a truthy value
        with pytest.raises(TypeError, match="TinyViT fused"):
            TinyViT(**CONFIG, fused=bad)
        with pytest.raises(TypeError, match="Block fused"):
            Block(8, 2, 12, fused=bad)


def test_fused_float16_is_refused_at_construction_and_composed_float16_runs():
    with pytest.raises(ValueError, match="TinyViT fused.*float16"):
        TinyViT(**CONFIG, dtype=np.float16, fused=True)
    with pytest.raises(ValueError, match="Block fused.*float16"):
        Block(8, 2, 12, dtype=np.float16, fused=True)
    # what the message advises works: fused=False takes float16
    model = TinyViT(**CONFIG, dtype=np.float16, seed=0)
    x, _ = random_images(model, 2, seed=0)
    assert model(Tensor(x)).dtype == np.float16
    assert Block(8, 2, 12, dtype=np.float16)(Tensor(np.ones((2, 5, 8), np.float16))).dtype == \
        np.float16


@pytest.mark.parametrize("dtype, other", [(np.float32, np.float64), (np.float64, np.float32),
                                          (np.float64, np.int64)],
                         ids=["float32-model", "float64-model", "integer-images"])
@pytest.mark.parametrize("method", ["tokens", "features", "logits"])
def test_a_fused_model_refuses_images_of_another_dtype_naming_x(dtype, other, method):
    """Below ``model(x)`` (which casts) the fused stages take only the model's dtype; the
    composed ops cast or promote instead."""
    model = TinyViT(**CONFIG, dtype=dtype, seed=0, fused=True)
    x = Tensor(np.ones((2, 2, 8, 8), dtype=other))
    with pytest.raises(TypeError, match="TinyViT x") as info:
        getattr(model, method)(x)
    assert np.dtype(other).name in str(info.value) and np.dtype(dtype).name in str(info.value)
    getattr(TinyViT(**CONFIG, dtype=dtype, seed=0), method)(x)  # composed: no refusal


@pytest.mark.parametrize("dtype, other", [(np.float32, np.float64), (np.float64, np.float32)])
def test_forward_casts_a_tensor_of_another_dtype_to_the_models(dtype, other, fused):
    """``model(Tensor)`` casts to the model's dtype before ``logits``: the same bits as images
    given in the model's dtype, and the gradient flows back through the cast."""
    model = random_model(dtype, seed=1, fused=fused)
    data = np.random.default_rng(1).standard_normal((3, 2, 8, 8)).astype(other)
    x = Tensor(data, requires_grad=True)
    logits = model(x)
    assert logits.dtype == dtype
    if fused:
        assert FUSED_OPS <= set(op_names(logits))
    same = Tensor(data.astype(dtype), requires_grad=True)
    want = model(same)
    np.testing.assert_array_equal(logits.data, want.data)
    cot = np.random.default_rng(2).standard_normal(logits.shape).astype(dtype)
    logits.backward(cot)
    want.backward(cot)
    assert x.grad.dtype == other
    np.testing.assert_array_equal(x.grad, same.grad.astype(other))


def test_a_fused_block_refuses_tokens_of_another_dtype_naming_x():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5, 8))  # float64 tokens
    with pytest.raises(TypeError, match="Block x.*float64"):
        random_block(np.float32, fused=True)(Tensor(x))
    # the composed block promotes them (its residual sums), as before
    assert random_block(np.float32)(Tensor(x)).dtype == np.float64


@pytest.mark.parametrize("norm", ["block.norm1", "block.norm2", "norm"])
def test_another_layer_norm_eps_is_refused_on_the_fused_path_only(norm, fused):
    """The fused stages compute with eps 1e-5: a norm given another eps is named, not
    silently computed with 1e-5; the composed path computes with the norm's own eps."""
    model = random_model(seed=9, fused=fused)
    layer = model
    for part in norm.split("."):
        layer = getattr(layer, part)
    images = Tensor(np.random.default_rng(9).standard_normal((2, 2, 8, 8)))
    before = model(images).data
    layer.eps = 1e-1
    if fused:
        owner = "TinyViT" if norm == "norm" else "Block"
        with pytest.raises(ValueError, match=owner + r" fused.*eps is 0\.1"):
            model(images)
    else:
        assert not np.allclose(model(images).data, before)  # the eps is used


# ---- images that do not fit ---------------------------------------------------------------------
BAD_SHAPES = {  # name: (shape, words the composed path's message contains)
    "3-D": ((2, 8, 8), ("patchify x", "(2, 8, 8)")),
    "5-D": ((1, 2, 2, 8, 8), ("patchify x", "(1, 2, 2, 8, 8)")),
    "side not a multiple of the patch": ((2, 2, 9, 9), ("patchify x", "(2, 2, 9, 9)")),
    "empty batch": ((0, 2, 8, 8), ("patchify x", "(0, 2, 8, 8)")),
    "one channel too few": ((2, 1, 8, 8), ("Linear", "(2, 4, 16)", "32")),
    "one channel too many": ((2, 3, 8, 8), ("Linear", "(2, 4, 48)", "32")),
}


@pytest.mark.parametrize("use_pos_emb", [True, False])
@pytest.mark.parametrize("method", ["tokens", "logits", "features"])
@pytest.mark.parametrize("case", list(BAD_SHAPES))
def test_bad_images_are_refused_naming_them(case, method, use_pos_emb, fused):
    """``tokens``, ``logits`` and ``features`` are the public way in below ``model(x)`` (which
    validates images itself), called by ``attention_maps`` and custom training loops. The
    fused path names x and its shape; the composed path names the op that refused it."""
    shape, words = BAD_SHAPES[case]
    model = TinyViT(**CONFIG, use_pos_emb=use_pos_emb, seed=0, fused=fused)
    with pytest.raises(ValueError) as info:
        getattr(model, method)(Tensor(np.zeros(shape)))
    message = str(info.value)
    for word in ("TinyViT x", str(shape)) if fused else words:
        assert word in message, (word, message)


def test_more_patches_than_position_embeddings_are_refused(fused):
    """(2, 2, 16, 16) images make 16 patches; the position embeddings hold 4 (+ CLS)."""
    model = TinyViT(**CONFIG, seed=0, fused=fused)
    with pytest.raises(ValueError) as info:
        model.logits(Tensor(np.zeros((2, 2, 16, 16))))
    if fused:
        assert "TinyViT x" in str(info.value) and "(2, 2, 16, 16)" in str(info.value)


def test_without_position_embeddings_both_paths_take_any_grid_of_patches():
    composed, fused = (random_model(seed=10, use_pos_emb=False, fused=f) for f in (False, True))
    x = Tensor(np.random.default_rng(10).standard_normal((2, 2, 16, 12)))  # 12 patches
    assert_close_ulps(fused.logits(x).data, composed.logits(x).data)


def test_a_block_refuses_tokens_of_another_width(fused):
    block = random_block(fused=fused)
    with pytest.raises(ValueError, match="Block x" if fused else "LayerNorm"):
        block(Tensor(np.zeros((3, 5, 9))))


EMPTY_TOKENS = pytest.mark.parametrize("shape", [(0, 5, 8), (3, 0, 8)],
                                       ids=["no-sequences", "no-tokens"])


@EMPTY_TOKENS
def test_a_fused_block_refuses_empty_token_arrays_naming_x(shape):
    with pytest.raises(ValueError, match="Block x.*" + re.escape(str(shape))):
        random_block(fused=True)(Tensor(np.zeros(shape)))


@EMPTY_TOKENS
def test_a_composed_block_refuses_empty_token_arrays_naming_the_shape(shape):
    """The reference behaviour the fused block's test above asks for."""
    B, T, D = shape  # named by the attention's input, (B, T, 3D)
    with pytest.raises(ValueError, match=re.escape(f"got shape {(B, T, 3 * D)}")):
        random_block()(Tensor(np.zeros(shape)))


def test_a_fused_block_takes_a_numpy_array_as_a_constant_input():
    """As the composed block (and the op wrapper) do: the array is a constant, the result the
    bits the block gives on the same data as a Tensor (the same op)."""
    block = Block(8, 2, 16, rng=np.random.default_rng(0), fused=True)
    t = np.random.default_rng(1).standard_normal((2, 3, 8))
    before = t.copy()
    out = block(t)
    expected = block(Tensor(t.copy()))
    assert isinstance(out, Tensor) and out.shape == (2, 3, 8)
    assert op_names(out) == ["encoder_block"]
    assert out.data.dtype == expected.data.dtype
    assert out.data.tobytes() == expected.data.tobytes()
    np.testing.assert_array_equal(t, before)  # the input is not modified
    out.sum().backward()  # the parameters still get their gradients through it
    assert all(p.grad is not None for p in block.parameters())


def test_a_composed_block_takes_a_numpy_array_as_a_constant_input():
    """The reference behaviour the fused block's test above asks for."""
    block = Block(8, 2, 16, rng=np.random.default_rng(0))
    t = np.random.default_rng(1).standard_normal((2, 3, 8))
    out = block(t)
    assert out.data.tobytes() == block(Tensor(t.copy())).data.tobytes()
    out.sum().backward()
    assert all(p.grad is not None for p in block.parameters())


# ---- values and gradients against the composed path ---------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("depth", [1, 2])
def test_fused_and_composed_models_with_the_same_seed_agree_in_logits_and_every_gradient(
        dtype, depth):
    """The two constructors draw the same parameters from one seed; their logits and every
    parameter's gradient then agree within 256 ulps of the dtype (float64: ~6e-14 of the
    largest value; float32: ~3e-5)."""
    composed = TinyViT(**CONFIG, depth=depth, dtype=dtype, seed=11)
    fused = TinyViT(**CONFIG, depth=depth, dtype=dtype, seed=11, fused=True)
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
    loss, ops, got = step(fused, x, y)
    ref_loss, ref_ops, want = step(composed, x, y)
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
    out, gx, grads, ops = run_block(random_block(dtype, fused=True), x, cot)
    ref_out, ref_gx, ref_grads, ref_ops = run_block(random_block(dtype), x, cot)
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
    ref_loss, ref_ops, want = step(models[0], x, y)
    loss, ops, got = step(models[1], x, y)
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
    for a, b in zip(*results):
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
    for p, a in zip(model.parameters(), first):
        np.testing.assert_array_equal(p.grad, 2 * a)  # doubling is exact
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(cot, cot0)
    for p, b in zip(model.parameters(), before):
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
    for p, a in zip(block.parameters(), first[1:]):
        np.testing.assert_array_equal(p.grad, 2 * a)  # doubling is exact
    if fused:  # t reaches one op: its gradient doubles exactly too
        np.testing.assert_array_equal(t.grad, 2 * first[0])
    else:  # t feeds the residual and norm1: the second pass adds its terms one at a time
        assert_close_ulps(t.grad, 2 * first[0])
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(cot, cot0)
    for p, b in zip(block.parameters(), before):
        np.testing.assert_array_equal(p.data, b)


def test_frozen_embedding_and_head_parameters_get_no_gradient_and_the_rest_are_unchanged(fused):
    model = random_model(seed=6, fused=fused)
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


def test_frozen_block_parameters_get_no_gradient_and_the_rest_are_unchanged(fused):
    rng = np.random.default_rng(6)
    block = random_block(seed=6, fused=fused)
    x = rng.standard_normal((3, 5, 8))
    cot = rng.standard_normal((3, 5, 8))
    _, _, want, _ = run_block(block, x, cot)
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


# ---- in-place writes between forward and backward (the version counters) -------------------------
OP_OF = {"patch_embed": "patch_tokens", "cls_token": "patch_tokens",
         "pos_embed": "patch_tokens", "block": "encoder_block", "norm": "cls_head",
         "head": "cls_head"}
NAMES = [name for name, _ in TinyViT(**CONFIG, seed=0).named_parameters()]


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
    model = TinyViT(**CONFIG, seed=0, fused=fused)
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
    model = TinyViT(**CONFIG, seed=0, fused=fused)
    opt = mg.optim.SGD(model.parameters(), lr=0.1)
    _loss(model).backward()
    loss = _loss(model)
    opt.step()
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


# ---- the same bits for any BLAS thread count (docs/reliability.md, G2) ---------------------------
def largest_products(config: dict, B: int) -> dict:
    """Each stage's largest single matrix product (2·m·n·k FLOPs), counted from the shapes:
    the embedding's (B·T, P·P·C) @ (P·P·C, D) over the padded patches (the CLS slot is a zero
    patch in the same product); the block's token products qkv (M·D·3D), proj (M·D·D), fc1
    and fc2 (M·D·F) and, per head, the attention's (T, d) @ (d, T) and (T, T) @ (T, d); the
    head's (B, D) @ (D, K). T = N + 1 tokens, M = B·T."""
    P, C, D = config["patch_size"], config["in_chans"], config["dim"]
    T = (config["img_size"] // P) ** 2 + 1
    d, hidden, K, M = D // config["num_heads"], config["mlp_dim"], config["num_classes"], B * T
    return {"embed": 2.0 * M * P * P * C * D,
            "block": max(2.0 * M * D * 3 * D, 2.0 * M * D * D, 2.0 * M * D * hidden,
                         2.0 * T * T * d),
            "head": 2.0 * B * D * K}


THREAD_CASES = {  # name: (stage whose product BLAS would split, config, batch)
    "block-300-images": ("block", dict(img_size=8, patch_size=4, in_chans=1, dim=16,
                                       num_heads=2, mlp_dim=32, num_classes=10), 300),
    "attention-577-tokens": ("block", dict(img_size=24, patch_size=1, in_chans=1, dim=8,
                                           num_heads=1, mlp_dim=8, num_classes=3), 1),
    "embedding-64-rgb-images": ("embed", dict(img_size=16, patch_size=8, in_chans=3, dim=8,
                                              num_heads=2, mlp_dim=8, num_classes=3), 64),
    "head-1000-classes": ("head", dict(img_size=8, patch_size=4, in_chans=1, dim=8,
                                       num_heads=2, mlp_dim=8, num_classes=1000), 64),
}


def blas_counts() -> list:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(THREAD_CASES))
def test_the_same_bits_for_any_blas_thread_count_where_blas_would_split_a_product(case, dtype,
                                                                                   fused):
    """Forward and backward (logits, the images' and every parameter's gradient) under
    ``blas_threads(1)`` and ``blas_threads(2)``, twice each: bit for bit the same, at sizes
    where a stage's largest product is at least ``BLAS_THREADED_FLOPS`` (counted above)."""
    if not blas_counts():
        pytest.skip("no BLAS library whose thread count threadpoolctl can set")
    stage, config, B = THREAD_CASES[case]
    assert largest_products(config, B)[stage] >= BLAS_THREADED_FLOPS
    model = random_model(dtype, seed=5, fused=fused, **config)
    rng = np.random.default_rng(5)
    data = rng.standard_normal((B, config["in_chans"], config["img_size"],
                                config["img_size"])).astype(dtype)
    cot = rng.standard_normal((B, config["num_classes"])).astype(dtype)
    runs = []
    for threads in (1, 2, 1, 2):
        with blas_threads(threads):
            assert blas_counts() == [threads] * len(blas_counts())  # outside the ops
            model.zero_grad()
            x = Tensor(data, requires_grad=True)
            logits = model(x)
            ops = set(op_names(logits))
            logits.backward(cot)
        assert (FUSED_OPS <= ops) if fused else not FUSED_OPS & ops
        runs.append([logits.data, x.grad] + [p.grad.copy() for p in model.parameters()])
    for run in runs[1:]:
        for a, b in zip(runs[0], run):
            np.testing.assert_array_equal(a, b)
