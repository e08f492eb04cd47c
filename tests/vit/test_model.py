"""spec/tinyvit.md: examples, patch order, architecture, position embeddings, initialization,
dtypes and argument errors. (Gradients and training steps: test_model_grads.py.)"""
from __future__ import annotations

import numpy as np
import pytest
import vit_reference as ref

import minigrad as mg
from minigrad import Tensor
from vit import TinyViT, patchify


def images(B, C, S, seed=0):
    return np.random.default_rng(seed).standard_normal((B, C, S, S))


# ---- the spec's two examples -------------------------------------------------------------
def test_example_logits_shape():
    model = TinyViT(img_size=8, patch_size=4, in_chans=1, dim=16, num_heads=2, num_classes=3)
    logits = model.forward(np.random.default_rng(0).standard_normal((4, 1, 8, 8)))
    assert isinstance(logits, np.ndarray) and logits.shape == (4, 3)
    assert model.cls_features(np.random.default_rng(1).standard_normal((4, 1, 8, 8))).shape == (4, 16)


@pytest.mark.parametrize("kwargs", [dict(patch_size=2), dict(img_size=4, patch_size=2, in_chans=2)])
def test_example_patchify(kwargs):
    out = TinyViT(**kwargs).patchify(np.arange(32.).reshape(1, 2, 4, 4))
    assert out.shape == (1, 4, 8)
    np.testing.assert_array_equal(out[0, 0], [0, 16, 1, 17, 4, 20, 5, 21])
    np.testing.assert_array_equal(out[0, 1], [2, 18, 3, 19, 6, 22, 7, 23])  # patch right of it
    np.testing.assert_array_equal(out[0, 2], [8, 24, 9, 25, 12, 28, 13, 29])  # patch below


# ---- patch order ---------------------------------------------------------------------------
@pytest.mark.parametrize("B,C,P,Hs,Ws", [(2, 1, 2, 4, 4), (1, 3, 4, 8, 8), (2, 2, 3, 9, 6),
                                         (1, 3, 1, 3, 3), (1, 1, 5, 5, 5), (2, 4, 2, 6, 10)])
def test_patchify_matches_pixel_loop(B, C, P, Hs, Ws):
    x = np.arange(B * C * Hs * Ws, dtype=np.float64).reshape(B, C, Hs, Ws)  # every value unique
    expected = ref.patchify_loop(x, P)
    np.testing.assert_array_equal(patchify(x, P), expected)
    if Hs == Ws:
        model = TinyViT(img_size=Hs, patch_size=P, in_chans=C, dim=4, num_heads=2)
        np.testing.assert_array_equal(model.patchify(x), expected)


@pytest.mark.parametrize("C,P,S", [(1, 4, 8), (3, 2, 6), (2, 3, 9)])
def test_patchify_equals_stride_P_convolution(C, P, S):
    """conv2d(x, K, stride=P) at grid cell (i, j) == patchify(x)[:, i*(S/P)+j] @ K flattened
    as (p1, p2, c) -- so a conv kernel (D, C, P, P) is patch_embed's weight permuted."""
    rng = np.random.default_rng(C * P)
    x, D = rng.standard_normal((2, C, S, S)), 5
    kernel = rng.standard_normal((D, C, P, P))
    g = S // P
    conv = np.zeros((2, D, g, g))
    for i in range(g):
        for j in range(g):
            window = x[:, :, i * P:(i + 1) * P, j * P:(j + 1) * P]  # (B, C, P, P)
            conv[:, :, i, j] = np.tensordot(window, kernel, axes=([1, 2, 3], [1, 2, 3]))
    W = kernel.transpose(2, 3, 1, 0).reshape(P * P * C, D)  # rows in (p1, p2, c) order
    np.testing.assert_allclose(patchify(x, P) @ W, conv.reshape(2, D, g * g).transpose(0, 2, 1),
                               rtol=1e-12, atol=1e-12)


def test_patchify_of_a_tensor_is_differentiable():
    x = Tensor(images(2, 3, 4), requires_grad=True)
    mg.gradcheck(lambda t: patchify(t, 2), [x])


def test_patchify_rejects_sides_not_multiple_of_patch():
    with pytest.raises(ValueError, match="patch_size"):
        TinyViT(patch_size=2).patchify(np.zeros((1, 1, 5, 4)))
    with pytest.raises(ValueError, match="x"):
        TinyViT(patch_size=2).patchify(np.zeros((4, 4)))


# ---- the architecture ----------------------------------------------------------------------
@pytest.mark.parametrize("cfg", [
    dict(),
    dict(img_size=6, patch_size=2, in_chans=3, dim=12, num_heads=3, mlp_dim=7, num_classes=4),
    dict(img_size=4, patch_size=4, in_chans=2, dim=8, num_heads=8, mlp_dim=8, num_classes=5,
         use_pos_emb=False),
])
def test_cls_features_and_logits_match_reference(cfg):
    model = TinyViT(**cfg, seed=1)
    c = model.config
    x = images(3, c["in_chans"], c["img_size"], seed=2)
    # randomize LayerNorm gains/biases and the zero biases so that every parameter matters
    rng = np.random.default_rng(3)
    for p in model.parameters():
        p.data[...] += 0.3 * rng.standard_normal(p.shape)
    cls, logits = ref.tinyvit(model, x)
    np.testing.assert_allclose(model.cls_features(x), cls, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model.forward(x), logits, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model(Tensor(x)).data, logits, rtol=1e-10, atol=1e-10)
    assert model.loss(x, np.array([0, 1, 0])) == pytest.approx(
        ref.cross_entropy(logits, np.array([0, 1, 0])), rel=1e-12)


def test_parameter_count_follows_the_architecture():
    """qkv and proj have no bias; patch embed, MLP and head do; three LayerNorms with affine."""
    P, C, D, M, K, S = 2, 3, 12, 20, 5, 6
    N = (S // P) ** 2
    model = TinyViT(img_size=S, patch_size=P, in_chans=C, dim=D, num_heads=3, mlp_dim=M,
                    num_classes=K)
    expected = (P * P * C * D + D) + D + (N + 1) * D + 2 * D + 3 * D * D + D * D + 2 * D \
        + (D * M + M) + (M * D + D) + 2 * D + (D * K + K)
    assert model.num_parameters() == expected
    no_pos = TinyViT(img_size=S, patch_size=P, in_chans=C, dim=D, num_heads=3, mlp_dim=M,
                     num_classes=K, use_pos_emb=False)
    assert no_pos.num_parameters() == expected - (N + 1) * D


def shuffle_patches(x, P, perm):
    """Move the image's P x P tiles so that tile perm[n] lands at grid position n."""
    B, C, S, _ = x.shape
    g = S // P
    tiles = x.reshape(B, C, g, P, g, P).transpose(0, 2, 4, 1, 3, 5).reshape(B, g * g, C, P, P)
    tiles = tiles[:, perm].reshape(B, g, g, C, P, P)
    return tiles.transpose(0, 3, 1, 4, 2, 5).reshape(B, C, S, S)


def test_without_position_embeddings_patch_order_does_not_matter():
    perm = np.random.default_rng(0).permutation(16)
    x = images(3, 2, 8)
    shuffled = shuffle_patches(x, 2, perm)
    np.testing.assert_array_equal(ref.patchify_loop(shuffled, 2), ref.patchify_loop(x, 2)[:, perm])
    kw = dict(img_size=8, patch_size=2, in_chans=2, dim=16, num_heads=4, seed=5)
    free = TinyViT(**kw, use_pos_emb=False)
    np.testing.assert_allclose(free.cls_features(shuffled), free.cls_features(x), rtol=0,
                               atol=1e-12)
    placed = TinyViT(**kw, use_pos_emb=True)
    placed.pos_embed.data *= 50  # make positions count (at init, std 0.02 is a small effect)
    assert np.abs(placed.cls_features(shuffled) - placed.cls_features(x)).max() > 1e-3
    np.testing.assert_allclose(placed.cls_features(shuffled),
                               ref.tinyvit(placed, x, permute=perm)[0], rtol=1e-10, atol=1e-10)


# ---- initialization -------------------------------------------------------------------------
def test_initialization_statistics():
    model = TinyViT(img_size=8, patch_size=4, in_chans=16, dim=256, num_heads=4, mlp_dim=512,
                    num_classes=10, seed=0)
    seen = set()
    for name, p in model.named_parameters():
        a = p.data
        if name in ("cls_token", "pos_embed"):
            assert a.std() == pytest.approx(0.02, rel=0.15) and abs(a.mean()) < 0.005
        elif name.endswith("bias"):
            np.testing.assert_array_equal(a, 0)
        elif a.ndim == 1:  # LayerNorm gain
            np.testing.assert_array_equal(a, 1)
        else:  # a (fan_in, fan_out) weight
            fan_in = a.shape[0]
            assert a.var() * fan_in == pytest.approx(1.0, rel=0.1), name
            assert abs(a.mean()) < 3 / np.sqrt(a.size * fan_in), name
        seen.add(name)
    assert {"cls_token", "pos_embed", "head.weight", "patch_embed.weight",
            "block.attn.qkv.weight", "norm.weight"} <= seen
    assert model.cls_token.shape[-1] == 256 and model.pos_embed.data.size == 5 * 256


def test_seed_reproducible_and_different_seeds_differ():
    a, b, c = TinyViT(seed=7), TinyViT(seed=7), TinyViT(seed=8)
    for (n, pa), (_, pb), (_, pc) in zip(a.named_parameters(), b.named_parameters(),
                                         c.named_parameters(), strict=True):
        np.testing.assert_array_equal(pa.data, pb.data)
        if pa.data.std() > 0:
            assert not np.array_equal(pa.data, pc.data), n
    x = images(2, 1, 8)
    np.testing.assert_array_equal(a.forward(x), b.forward(x))


# ---- dtypes and inputs ------------------------------------------------------------------------
def test_float32_model_params_outputs_and_cast_inputs():
    model = TinyViT(dtype=np.float32, seed=0)
    assert all(p.dtype == np.float32 for p in model.parameters())
    x64 = images(3, 1, 8)
    x32 = x64.astype(np.float32)
    for method in (model.forward, model.cls_features, model.patchify):
        out = method(x64)
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, method(x32))
    ref64 = TinyViT(seed=0)
    np.testing.assert_allclose(model.forward(x64), ref64.forward(x64), rtol=1e-4, atol=1e-4)
    assert isinstance(model.loss(x64, np.array([0, 1, 1])), float)
    assert model(Tensor(x32)).dtype == np.float32
    xt = Tensor(x64, requires_grad=True)  # a float64 Tensor is cast too, differentiably
    logits = model(xt)
    assert logits.dtype == np.float32
    np.testing.assert_array_equal(logits.data, model.forward(x64))
    logits.sum().backward()
    assert xt.grad.dtype == np.float64 and model.head.weight.grad.dtype == np.float32


def test_inputs_are_cast_and_not_modified():
    model = TinyViT(seed=0)
    x = np.random.default_rng(0).integers(0, 255, (2, 1, 8, 8))
    y = np.array([1, 0])
    xc, yc = x.copy(), y.copy()
    np.testing.assert_array_equal(model.forward(x), model.forward(x.astype(np.float64)))
    model.loss(x, y)
    model.train_step(x, y)
    assert x.dtype == xc.dtype and np.array_equal(x, xc) and np.array_equal(y, yc)


# ---- argument errors ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 8, 8), (2, 2, 8, 8), (2, 1, 8, 4), (2, 1, 4, 4),
                                   (0, 1, 8, 8), (2, 1, 8, 8, 1)])
def test_wrong_image_shape(shape):
    model = TinyViT()
    for call in (model.forward, model.cls_features, lambda x: model.loss(x, np.zeros(2, int)),
                 lambda x: model.train_step(x, np.zeros(2, int)), lambda x: model(Tensor(x))):
        with pytest.raises(ValueError, match="x"):
            call(np.zeros(shape))


@pytest.mark.parametrize("kwargs,name", [
    (dict(img_size=8, patch_size=3), "patch_size"), (dict(img_size=6, patch_size=4), "patch_size"),
    (dict(dim=16, num_heads=3), "num_heads"), (dict(dim=10, num_heads=4), "num_heads"),
    (dict(num_heads=0), "num_heads"), (dict(dim=0), "dim"), (dict(num_classes=0), "num_classes"),
    (dict(img_size=2.5), "img_size"), (dict(mlp_dim=-1), "mlp_dim"),
])
def test_bad_configuration(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        TinyViT(**kwargs)


@pytest.mark.parametrize("y", [np.array([0, 2]), np.array([-1, 0]), np.array([0.0, 1.0]),
                               np.array([0, 1, 1]), np.array([[0], [1]]), np.array([True, False]),
                               np.array(["0", "1"])])
def test_bad_labels(y):
    model = TinyViT(num_classes=2)
    x = images(2, 1, 8)
    for call in (model.loss, model.train_step, lambda a, b: model.train_step(a, b, full=True)):
        with pytest.raises(ValueError, match="y"):
            call(x, y)


def test_no_python_loops_in_the_data_path():
    """Spec constraint: no loops over batch, heads or tokens (vectorized NumPy only)."""
    import ast
    import inspect
    import textwrap

    import vit.model.block
    import vit.model.tinyvit
    functions = [vit.model.block.Attention.forward, vit.model.block.Mlp.forward,
                 vit.model.block.Block.forward, vit.model.block._block,
                 vit.model.block.vit_block, vit.model.tinyvit.patchify, TinyViT.features, TinyViT.logits, TinyViT.cls_features,
                 TinyViT.forward, TinyViT.loss, TinyViT.patchify]
    for fn in functions:  # (comprehensions over the 7 arguments are fine; over range() not)
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))
                 or (isinstance(n, ast.comprehension) and "range" in ast.dump(n.iter))]
        # patchify copies one colour channel at a time (a loop over C, which the spec allows)
        loops = [n for n in loops if not (fn is vit.model.tinyvit.patchify and isinstance(n, ast.For)
                                          and ast.unparse(n.iter) == "range(C)")]
        assert not loops, fn.__qualname__
