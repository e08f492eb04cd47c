"""docs/reliability.md G2 for TinyViT on both paths (the ``fused`` fixture): the same bits for
any BLAS thread count, at sizes where BLAS would split a stage's largest product itself."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import FUSED_OPS, blas_counts, op_names, random_model

from minigrad import Tensor
from minigrad.runtime.blas import blas_threads
from minigrad.runtime.parallel import BLAS_THREADED_FLOPS


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
        for a, b in zip(runs[0], run, strict=True):
            np.testing.assert_array_equal(a, b)
