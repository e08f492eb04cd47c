"""What the fused path (``TinyViT(..., fused=True)``, ``Block(..., fused=True)``) refuses, and
where the composed path refuses the same: float16 at construction; images or tokens of
another dtype, naming x (``forward`` casts a Tensor to the model's dtype); another LayerNorm
eps; images that do not fit (a wrong rank, size, channel count, more patches than position
embeddings), tokens of another width and empty token arrays, each naming them. Without
position embeddings both paths take any grid of patches, and a block takes a NumPy array as
a constant input."""
from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import FUSED_OPS, VIT_CONFIG, op_names, random_block, random_images, random_model
from ulps import assert_close_ulps

from minigrad import Tensor
from vit.model.block import Block
from vit.model.tinyvit import TinyViT


# ---- dtypes and LayerNorm eps -------------------------------------------------------------------
def test_fused_float16_is_refused_at_construction_and_composed_float16_runs():
    with pytest.raises(ValueError, match="TinyViT fused.*float16"):
        TinyViT(**VIT_CONFIG, dtype=np.float16, fused=True)
    with pytest.raises(ValueError, match="Block fused.*float16"):
        Block(8, 2, 12, dtype=np.float16, fused=True)
    # what the message advises works: fused=False takes float16
    model = TinyViT(**VIT_CONFIG, dtype=np.float16, seed=0)
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
    model = TinyViT(**VIT_CONFIG, dtype=dtype, seed=0, fused=True)
    x = Tensor(np.ones((2, 2, 8, 8), dtype=other))
    with pytest.raises(TypeError, match="TinyViT x") as info:
        getattr(model, method)(x)
    assert np.dtype(other).name in str(info.value) and np.dtype(dtype).name in str(info.value)
    getattr(TinyViT(**VIT_CONFIG, dtype=dtype, seed=0), method)(x)  # composed: no refusal


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
    model = TinyViT(**VIT_CONFIG, use_pos_emb=use_pos_emb, seed=0, fused=fused)
    with pytest.raises(ValueError) as info:
        getattr(model, method)(Tensor(np.zeros(shape)))
    message = str(info.value)
    for word in ("TinyViT x", str(shape)) if fused else words:
        assert word in message, (word, message)


def test_more_patches_than_position_embeddings_are_refused(fused):
    """(2, 2, 16, 16) images make 16 patches; the position embeddings hold 4 (+ CLS)."""
    model = TinyViT(**VIT_CONFIG, seed=0, fused=fused)
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
