"""vit/fusion.py's size rule, checked from the outside: a stage runs as one op exactly when
EVERY matrix product it makes is below ``FUSE_BELOW_FLOPS`` and its token rows hold at most
``FUSE_MAX_ELEMENTS`` numbers, so that no BLAS call of a fused stage is large enough for
OpenBLAS to thread it (docs/reliability.md, G2).

The products are counted here from the model's shapes, independently of the code under test:
- embedding: the (B·T, P·P·C) @ (P·P·C, D) GEMM over the padded patches (T = N + 1 rows per
  image: the CLS slot is a zero patch inside the same product) and its transpose-product;
- block: qkv (M·D·3D), proj (M·D·D), fc1 and fc2 (M·D·F), and, per head, the attention's
  (T, d) @ (d, T) and (T, T) @ (T, d) products (2·T·T·d each), M = B·T;
- head: (B, D) @ (D, K).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, Tensor
from minigrad.summary import graph_summary
from ulps import assert_close_ulps
from vit import block_op, embed_op, fusion, head_op
from vit.model.tinyvit import TinyViT


def random_model(dtype=np.float64, seed=0, **config):
    """A TinyViT whose every parameter is random (norms, biases, CLS token too)."""
    model = TinyViT(**config, dtype=dtype, seed=seed)
    rng = np.random.default_rng(seed + 100)
    for p in model.parameters():
        p.data[...] = rng.standard_normal(p.shape) / np.sqrt(p.shape[-1])
    return model


def stage_products(config: dict, B: int) -> dict:
    """The largest matrix product (2·m·n·k FLOPs) of each stage, counted from the shapes."""
    P, C, D = config["patch_size"], config["in_chans"], config["dim"]
    N = (config["img_size"] // P) ** 2
    T, d, Fh, K = N + 1, D // config["num_heads"], config["mlp_dim"], config["num_classes"]
    M = B * T
    return {
        "embed": 2.0 * M * P * P * C * D,
        "block": max(2.0 * M * D * 3 * D, 2.0 * M * D * D, 2.0 * M * D * Fh, 2.0 * T * T * d),
        "head": 2.0 * B * D * K,
    }


CONFIGS = [  # short and long sequences, narrow and wide patches, one head and several
    dict(img_size=8, patch_size=4, in_chans=2, dim=8, num_heads=2, mlp_dim=12, num_classes=3),
    dict(img_size=16, patch_size=8, in_chans=3, dim=8, num_heads=2, mlp_dim=8, num_classes=3),
    dict(img_size=24, patch_size=1, in_chans=1, dim=8, num_heads=1, mlp_dim=8, num_classes=3),
    dict(img_size=16, patch_size=1, in_chans=1, dim=8, num_heads=2, mlp_dim=16, num_classes=3),
    dict(img_size=13, patch_size=1, in_chans=1, dim=8, num_heads=1, mlp_dim=8, num_classes=3),
    dict(img_size=8, patch_size=2, in_chans=3, dim=16, num_heads=4, mlp_dim=64, num_classes=10),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "img{img_size}p{patch_size}c{in_chans}"
                         "d{dim}h{num_heads}".format(**c))
@pytest.mark.parametrize("B", [1, 2, 3, 12, 42, 43, 60, 204, 205])
def test_a_stage_is_fused_exactly_when_every_product_and_its_rows_are_small(config, B):
    model = random_model(**config)
    x = Tensor(np.zeros((B, config["in_chans"], config["img_size"], config["img_size"])))
    T, D = (config["img_size"] // config["patch_size"]) ** 2 + 1, config["dim"]
    small_rows = B * T * D <= fusion.FUSE_MAX_ELEMENTS
    flops = stage_products(config, B)
    t = Tensor(np.zeros((B, T, D)))
    got = {"embed": embed_op.fusable(model, x), "block": block_op.fusable(model.block, t),
           "head": head_op.fusable(model, t)}
    want = {stage: small_rows and flops[stage] < fusion.FUSE_BELOW_FLOPS for stage in flops}
    assert got == want, {stage: flops[stage] / fusion.FUSE_BELOW_FLOPS for stage in flops}


def _loss_and_grads(model, x, y):
    model.zero_grad()
    loss = F.cross_entropy(model(Tensor(x)), y)
    ops = {row[0] for row in graph_summary(loss).rows}
    loss.backward()
    return ops, [loss.data] + [p.grad.copy() for p in model.parameters()]


@pytest.mark.parametrize("img_size", [24, 13], ids=["T577-composed", "T170-largest-fused"])
def test_long_sequences_give_the_same_bits_for_any_blas_thread_count(img_size):
    """G2 for one block on long sequences (patch side 1): at T = 577 tokens the attention's
    (T, T) products are ten times OpenBLAS's threading size although the block's linear
    products are small; at T = 170 they are just below it (the largest fused attention)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    config = dict(img_size=img_size, patch_size=1, in_chans=1, dim=8, num_heads=1, mlp_dim=8,
                  num_classes=3)
    model = random_model(seed=1, **config)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 1, img_size, img_size))
    y = rng.integers(0, 3, 1)
    runs = []
    for threads in (1, 2, 1, 2):
        with threadpoolctl.threadpool_limits(threads):
            ops, results = _loss_and_grads(model, x, y)
        runs.append(results)
    for run in runs[1:]:
        for a, b in zip(runs[0], run):
            np.testing.assert_array_equal(a, b)
    assert ("encoder_block" in ops) == (img_size == 13)  # the rule, as counted above


@pytest.mark.parametrize("limit", ["FUSE_MAX_ELEMENTS", "FUSE_BELOW_FLOPS"])
def test_results_agree_just_below_at_and_above_each_bound(limit, monkeypatch):
    """Moving a bound across a model's size switches stages between one op and the composed
    ops; loss and every gradient stay within a few hundred ulps of the composed model's."""
    config = dict(img_size=8, patch_size=4, in_chans=2, dim=8, num_heads=2, mlp_dim=12,
                  num_classes=3)
    B = 6
    model = random_model(seed=3, **config)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((B, 2, 8, 8))
    y = rng.integers(0, 3, B)
    monkeypatch.setattr(fusion, "FUSE_BELOW_FLOPS", 0)
    composed_ops, want = _loss_and_grads(model, x, y)
    monkeypatch.undo()
    assert not composed_ops & {"patch_tokens", "encoder_block", "cls_head"}
    T, D = 5, 8
    sizes = stage_products(config, B) if limit == "FUSE_BELOW_FLOPS" else \
        {"all": B * T * D}
    seen = set()
    for size in sizes.values():
        # FLOPs: fused while size < bound; elements: fused while size <= bound
        for bound in (size - 1, size, size + 1):
            monkeypatch.setattr(fusion, limit, bound)
            ops, got = _loss_and_grads(model, x, y)
            seen.add(frozenset(ops & {"patch_tokens", "encoder_block", "cls_head"}))
            for a, b in zip(got, want):
                assert_close_ulps(a, b)
    assert len(seen) >= 2  # the bounds did switch stages on and off


def test_gradcheck_of_the_fused_model_at_the_longest_fused_sequence():
    """float64 finite differences through the three fused ops on 170 tokens."""
    config = dict(img_size=13, patch_size=1, in_chans=1, dim=8, num_heads=1, mlp_dim=8,
                  num_classes=3)
    model = random_model(seed=4, **config)
    rng = np.random.default_rng(4)
    x = Tensor(rng.standard_normal((1, 1, 13, 13)))
    assert {"patch_tokens", "encoder_block", "cls_head"} <= \
        {row[0] for row in graph_summary(model(x)).rows}
    mg.gradcheck(lambda *_: model(x), list(model.parameters()), fast=True)


@pytest.mark.parametrize("config, B, fused", [
    # the embedding's patch product just below the FLOPs bound (2·B·T·P·P·C·D, B = 34)
    (dict(img_size=16, patch_size=8, in_chans=3, dim=8, num_heads=2, mlp_dim=8, num_classes=3),
     34, {"patch_tokens", "encoder_block", "cls_head"}),
    # the head's product just below it (2·32·8·1000), and one image more: the head composed
    (dict(img_size=8, patch_size=4, in_chans=1, dim=8, num_heads=2, mlp_dim=8,
          num_classes=1000), 32, {"patch_tokens", "encoder_block", "cls_head"}),
    (dict(img_size=8, patch_size=4, in_chans=1, dim=8, num_heads=2, mlp_dim=8,
          num_classes=1000), 33, {"patch_tokens", "encoder_block"}),
], ids=["embed-at-flops-bound", "head-at-flops-bound", "head-past-flops-bound"])
def test_the_largest_fused_products_give_the_same_bits_for_any_blas_thread_count(config, B,
                                                                                 fused):
    """G2 at each stage's FLOPs bound (the existing tests take the FUSE_MAX_ELEMENTS bound)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    flops = stage_products(config, B)
    assert max(flops["embed"], flops["head"]) > fusion.FUSE_BELOW_FLOPS / 2  # near the bound
    model = random_model(seed=5, **config)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((B, config["in_chans"], config["img_size"], config["img_size"]))
    y = rng.integers(0, config["num_classes"], B)
    runs = []
    for threads in (1, 2, 1, 2):
        with threadpoolctl.threadpool_limits(threads):
            ops, results = _loss_and_grads(model, x, y)
        assert ops & {"patch_tokens", "encoder_block", "cls_head"} == fused
        runs.append(results)
    for run in runs[1:]:
        for a, b in zip(runs[0], run):
            np.testing.assert_array_equal(a, b)
