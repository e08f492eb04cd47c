"""Numerical edge cases, each a test: logits of magnitude 1e4, constant tokens (zero variance
in LayerNorm), all-zero images through TinyViT, a single token (T=1) and a single head in
vit_block, batch size 1 through TinyViT's forward/loss/train_step (both tracks), and float16
input to vit_block."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.special as sp

import minigrad as mg
from minigrad import F, Tensor
from minigrad.nn import LayerNorm
from vit import TinyViT, vit_block

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vit"))
import vit_reference as ref
from ulps import assert_close_ulps

BIG = np.array([[1e4, -1e4, 0.0, 1e4 - 1.0],
                [-1e4, -1e4, -1e4, -1e4 + 2.0],
                [3e3, 1e4, -5e3, 9999.5]])
LABELS = np.array([1, 3, 2])
#: overflow, 0/0 and x/0 raise; underflow (exp(-2e4) = 0) is the correct, expected result
STRICT = dict(over="raise", invalid="raise", divide="raise", under="ignore")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_logits_of_magnitude_1e4(dtype):
    z = mg.Tensor(BIG.astype(dtype), requires_grad=True)
    with np.errstate(**STRICT):  # no overflow, no invalid operation anywhere
        p = F.softmax(z, axis=-1)
        lsm = F.log_softmax(z, axis=-1)
        lse = F.logsumexp(z, axis=-1)
        loss = F.cross_entropy(z, LABELS)
        loss.backward()
    want = sp.log_softmax(BIG, axis=-1)
    tol = dict(rtol=1e-12, atol=1e-9) if dtype == np.float64 else dict(rtol=1e-6, atol=2e-3)
    for t in (p, lsm, lse, loss):
        assert t.dtype == dtype and np.all(np.isfinite(t.data))
    np.testing.assert_allclose(lsm.data, want, **tol)
    np.testing.assert_allclose(p.data, np.exp(want), **tol)
    np.testing.assert_allclose(lse.data, sp.logsumexp(BIG, axis=-1), rtol=1e-7)
    np.testing.assert_allclose(loss.item(), -want[np.arange(3), LABELS].mean(), **tol)
    grad = (np.exp(want) - np.eye(4)[LABELS]) / 3
    np.testing.assert_allclose(z.grad, grad, **tol)
    soft = F.cross_entropy(BIG.astype(dtype), sp.softmax(BIG / 1e4, axis=-1).astype(dtype))
    assert np.isfinite(soft.item())


def test_logits_of_magnitude_1e4_through_the_model_loss():
    model = TinyViT(num_classes=4, seed=0)
    model.head.bias.data[:] = [1e4, -1e4, 0.0, 5e3]
    x = np.random.default_rng(0).standard_normal((3, 1, 8, 8))
    with np.errstate(**STRICT):
        loss = model.loss(x, np.array([0, 1, 2]))
        before = model.train_step(x, np.array([0, 1, 2]), lr=1e-3, full=True)
    assert np.isfinite(loss) and loss > 1e3 and before == pytest.approx(loss, rel=1e-12)
    assert all(np.isfinite(p.data).all() for p in model.parameters())


@pytest.mark.parametrize("affine", [False, True])
def test_constant_tokens_zero_variance_layer_norm(affine):
    x = np.full((2, 3, 6), 7.25)
    w, b = (1.0 + np.arange(6) / 10, np.arange(6) / 5) if affine else (None, None)
    t = mg.Tensor(x.copy(), requires_grad=True)
    with np.errstate(**STRICT):
        y = F.layer_norm(t, w, b)
        g = np.random.default_rng(0).standard_normal(y.shape)
        y.backward(g)
    np.testing.assert_array_equal(y.data, np.broadcast_to(0.0 if b is None else b, x.shape))
    assert np.all(np.isfinite(t.grad))
    # dy/dx at zero variance: (1/sqrt(eps)) (g' - mean g'), g' = g w: finite, not 0/0
    gw = g * (1.0 if w is None else w)
    np.testing.assert_allclose(t.grad, (gw - gw.mean(-1, keepdims=True)) / np.sqrt(1e-5),
                               rtol=1e-9)
    args = [x] + ([w, b] if affine else [])
    mg.gradcheck(F.layer_norm, args, eps=1e-8, atol=1e-4, rtol=1e-4)  # smooth there (eps)
    out = LayerNorm(6)(np.zeros((4, 6)))
    assert np.all(out.data == 0)


def test_constant_tokens_through_vit_block():
    rng = np.random.default_rng(0)
    x = np.full((2, 4, 8), -3.0)
    weights = ref.block_weights(rng, 8, 12)
    with np.errstate(**STRICT):
        out = vit_block(x, *weights, 2)
    np.testing.assert_allclose(out, ref.vit_block(x, *weights, 2), rtol=1e-9, atol=1e-9)
    ts = [mg.Tensor(a, requires_grad=True) for a in [x] + weights]
    vit_block(*ts, 2).sum().backward()
    assert all(np.all(np.isfinite(t.grad)) for t in ts)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_all_zero_images_through_tinyvit(dtype):
    model = TinyViT(dim=16, num_heads=2, num_classes=3, dtype=dtype, seed=0)
    x = np.zeros((4, 1, 8, 8), dtype)
    with np.errstate(**STRICT):
        logits = model(Tensor(x))
        loss = F.cross_entropy(logits, np.array([0, 1, 2, 0]))
        loss.backward()
    assert logits.dtype == dtype and np.all(np.isfinite(logits.data))
    assert np.allclose(logits.data, logits.data[:1])  # identical images, identical outputs
    for name, p in model.named_parameters():
        assert p.grad is not None and np.all(np.isfinite(p.grad)), name
    with np.errstate(**STRICT):
        assert np.isfinite(model.train_step(x, np.array([0, 1, 2, 0]), full=True))
        assert np.isfinite(model.train_step(x, np.array([0, 1, 2, 0])))


def test_a_single_token():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 1, 8))
    weights = ref.block_weights(rng, 8, 5)
    out = vit_block(x, *weights, 4)
    np.testing.assert_allclose(out, ref.vit_block(x, *weights, 4), rtol=1e-10, atol=1e-10)
    # one key: the attention weights are 1, attention output = LN(x) @ w_v @ w_o exactly
    h = ref.layer_norm(x)
    y = x + h @ weights[2] @ weights[3]
    np.testing.assert_allclose(out, y + ref.gelu_tanh(ref.layer_norm(y) @ weights[4])
                               @ weights[5], rtol=1e-10, atol=1e-10)
    mg.gradcheck(lambda *a: vit_block(*a, 4), [x] + weights)
    model = TinyViT(img_size=4, patch_size=4, dim=8, num_heads=2, seed=0)  # 1 patch + CLS
    assert model.forward(rng.standard_normal((2, 1, 4, 4))).shape == (2, 2)


def test_a_single_head():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 6))
    weights = ref.block_weights(rng, 6, 7)
    np.testing.assert_allclose(vit_block(x, *weights, 1), ref.vit_block(x, *weights, 1),
                               rtol=1e-10, atol=1e-10)
    mg.gradcheck(lambda *a: vit_block(*a, 1), [x] + weights, fast=True)
    model = TinyViT(dim=6, num_heads=1, mlp_dim=7, num_classes=3, seed=0)
    xi = rng.standard_normal((2, 1, 8, 8))
    np.testing.assert_allclose(model.forward(xi), ref.tinyvit(model, xi)[1], rtol=1e-9,
                               atol=1e-10)


@pytest.mark.parametrize("full", [False, True])
def test_batch_size_one(full):
    model = TinyViT(num_classes=3, seed=0)
    rng = np.random.default_rng(3)
    batch = rng.standard_normal((5, 1, 8, 8))
    one, y = batch[2:3], np.array([1])
    logits = model.forward(one)
    assert logits.shape == (1, 3)
    # a row alone vs inside a batch: BLAS may round it differently (not a bit guarantee)
    assert_close_ulps(logits, model.forward(batch)[2:3])
    assert_close_ulps(model.cls_features(one), model.cls_features(batch)[2:3])
    loss = model.loss(one, y)
    assert loss == pytest.approx(ref.cross_entropy(logits, y), rel=1e-12)
    assert model.train_step(one, y, lr=0.1, full=full) == pytest.approx(loss, rel=1e-12)
    assert model.loss(one, y) < loss  # the step helped this one example
    assert all(np.isfinite(p.data).all() for p in model.parameters())
    soft = np.array([[0.2, 0.5, 0.3]])
    assert np.isfinite(model.train_step(one, soft, full=full))


def test_float16_input_to_vit_block():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 8))
    weights = ref.block_weights(rng, 8, 16)
    out16 = vit_block(x.astype(np.float16), *[w.astype(np.float16) for w in weights], 2)
    out32 = vit_block(x.astype(np.float32), *[w.astype(np.float32) for w in weights], 2)
    assert out16.dtype == np.float16 and np.all(np.isfinite(out16))
    np.testing.assert_allclose(out16.astype(np.float32), out32, rtol=2e-2, atol=2e-2)
    ts = [mg.Tensor(a.astype(np.float16), requires_grad=True) for a in [x] + weights]
    y = vit_block(*ts, 2)
    assert y.dtype == np.float16
    y.sum().backward()
    for t in ts:
        assert t.grad.dtype == np.float16 and np.all(np.isfinite(t.grad))
    big = vit_block((100 * x).astype(np.float16), *[w.astype(np.float16) for w in weights], 2)
    assert np.all(np.isfinite(big))  # LayerNorm first: large inputs do not overflow float16


POISONED_STEPS = """
import numpy as np
from minigrad import F, Tensor
from minigrad.runtime.heap import keep_heap
from vit import TinyViT
assert keep_heap()  # freed memory stays in the process, so np.empty hands it out again
snan32 = np.array([0x7FA00001], dtype=np.uint32).view(np.float32)[0]
snan64 = np.array([0x7FF4000000000001], dtype=np.uint64).view(np.float64)[0]

def poison():  # fill, then free, blocks of the sizes a step allocates
    junk = [np.full(n, v, dtype=v.dtype) for v in (snan32, snan64)
            for n in (100, 1_000, 5_000, 20_000, 100_000, 400_000) for _ in range(4)]
    del junk

for cfg, batch in [(dict(num_classes=3), 3),
                   (dict(patch_size=2, dim=64, num_heads=4, mlp_dim=128, num_classes=10), 128)]:
    for dtype in (np.float32, np.float64):
        for seed in range(3):
            model = TinyViT(**cfg, dtype=dtype, seed=seed)
            rng = np.random.default_rng(seed)
            x = rng.standard_normal((batch, 1, 8, 8)).astype(dtype)
            y = rng.integers(0, cfg["num_classes"], batch)
            with np.errstate(all="raise"):
                poison()
                loss = F.cross_entropy(model(Tensor(x)), y)
                poison()
                loss.backward()
            assert np.isfinite(loss.item())
            for name, p in model.named_parameters():
                assert np.isfinite(p.grad).all(), name
print("ok")
"""


@pytest.mark.slow  # a child process; the ops' values: tests/minigrad/ops/
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_no_kernel_reads_memory_it_did_not_write():
    """Freed memory full of signalling NaNs, handed out again by np.empty: a forward and
    backward pass that read any element before writing it would raise (errstate 'raise') or
    leave a non-finite gradient. In a child process, as it changes malloc's settings."""
    import subprocess
    proc = subprocess.run([sys.executable, "-c", POISONED_STEPS], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
