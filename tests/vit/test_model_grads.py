"""TinyViT gradients (gradcheck over every parameter, shared CLS / position embeddings) and
``train_step``: the spec's head-only closed form and ``full=True`` plain SGD; a step that would
make a parameter non-finite changes nothing."""
from __future__ import annotations

import numpy as np
import pytest
import vit_reference as ref

import minigrad as mg
from minigrad import F, Tensor
from vit import TinyViT

SMALL = dict(img_size=4, patch_size=2, in_chans=1, dim=4, num_heads=2, mlp_dim=6, num_classes=3)


def batch(model, B, seed=0):
    c = model.config
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, c["in_chans"], c["img_size"], c["img_size"]))
    return x, rng.integers(0, c["num_classes"], B)


def perturb(model, scale=0.3, seed=1):
    """Move every parameter off its special initial value (zero biases, unit gains)."""
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        p.data[...] += scale * rng.standard_normal(p.shape)


def engine_grads(model, x, y):
    model.zero_grad()
    loss = F.cross_entropy(model(Tensor(x.astype(model.dtype))), y)
    loss.backward()
    return float(loss.item()), {n: p.grad.copy() for n, p in model.named_parameters()}


# ---- gradcheck --------------------------------------------------------------------------------
@pytest.mark.parametrize("use_pos_emb", [True, False])
def test_gradcheck_every_parameter_elementwise_small(use_pos_emb):
    model = TinyViT(**SMALL, use_pos_emb=use_pos_emb, seed=0)
    perturb(model)
    x, y = batch(model, 3)
    params = list(model.parameters())
    report = mg.gradcheck(lambda *ps: F.cross_entropy(model(Tensor(x)), y), params,
                          atol=1e-8, rtol=1e-6)
    assert len(report.inputs) == len(params) == (18 if use_pos_emb else 17)
    assert all(r.mode == "elementwise" for r in report.inputs)


def test_gradcheck_every_parameter_and_the_images_elementwise():
    model = TinyViT(**SMALL, seed=3)
    x, y = batch(model, 2)
    xt = Tensor(x, requires_grad=True)
    mg.gradcheck(lambda xi, *ps: F.cross_entropy(model(xi), y), [xt] + list(model.parameters()),
                 atol=1e-8, rtol=1e-6)


def test_gradcheck_fast_mode_default_config():
    model = TinyViT(seed=0)
    perturb(model, 0.1)
    x, y = batch(model, 4)
    report = mg.gradcheck(lambda *ps: F.cross_entropy(model(Tensor(x)), y),
                          list(model.parameters()), fast=True, directions=3)
    assert all(r.mode == "fast" for r in report.inputs)


def test_gradcheck_catches_a_wrong_gradient():
    """The check above can fail: a forward whose recorded VJP is wrong is reported."""
    @mg.op
    def bad_gelu(z):
        y = ref.gelu_tanh(z)
        return y, lambda g: g * 0.5  # wrong derivative
    model = TinyViT(**SMALL, seed=0)
    x, y = batch(model, 2)
    with pytest.raises(mg.GradcheckError):
        mg.gradcheck(lambda *ps: F.cross_entropy(bad_gelu(model(Tensor(x))), y),
                     list(model.parameters()))


# ---- shared parameters: one contribution per example -------------------------------------------
def test_cls_and_pos_grads_are_mean_of_per_example_grads():
    model = TinyViT(img_size=4, patch_size=2, dim=8, num_heads=2, num_classes=3, seed=2)
    x, y = batch(model, 5)
    _, whole = engine_grads(model, x, y)
    per = [engine_grads(model, x[i:i + 1], y[i:i + 1])[1] for i in range(5)]
    for name in ("cls_token", "pos_embed", "patch_embed.weight", "head.bias"):
        singles = np.stack([g[name] for g in per])
        assert np.abs(singles - singles[0]).max() > 1e-6  # examples really contribute differently
        np.testing.assert_allclose(whole[name], singles.sum(0) / 5, rtol=1e-10, atol=1e-13)


# ---- head-only train_step (the spec's NumPy track) ---------------------------------------------
def closed_form(model, x, y):
    """dlogits = (softmax(logits) - onehot(y)) / B, dW = cls^T dlogits, db = dlogits.sum(0)."""
    cls, logits = ref.tinyvit(model, x)
    B, K = logits.shape
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    onehot = np.zeros((B, K))
    onehot[np.arange(B), y] = 1
    dlogits = (p - onehot) / B
    return ref.cross_entropy(logits, y), cls.T @ dlogits, dlogits.sum(0)


def test_head_step_follows_closed_form_and_freezes_the_encoder():
    model = TinyViT(num_classes=4, seed=0)
    x, y = batch(model, 6)
    before = {n: p.data.copy() for n, p in model.named_parameters()}
    cls_before = model.cls_features(x)
    loss, dW, db = closed_form(model, x, y)
    _, grads = engine_grads(model, x, y)
    np.testing.assert_allclose(grads["head.weight"], dW, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(grads["head.bias"], db, rtol=1e-10, atol=1e-13)
    lr = 0.37
    returned = model.train_step(x, y, lr=lr)
    assert isinstance(returned, float) and returned == pytest.approx(loss, rel=1e-12)
    after = dict(model.named_parameters())
    np.testing.assert_allclose(after["head.weight"].data, before["head.weight"] - lr * dW,
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(after["head.bias"].data, before["head.bias"] - lr * db,
                               rtol=1e-13, atol=1e-15)
    for n, p in after.items():
        if not n.startswith("head."):
            np.testing.assert_array_equal(p.data, before[n], err_msg=n)
    np.testing.assert_array_equal(model.cls_features(x), cls_before)
    assert model.loss(x, y) < loss  # a small step downhill


def test_head_step_returns_loss_before_the_step():
    model = TinyViT(seed=1)
    x, y = batch(model, 4)
    losses = [model.loss(x, y)]
    for _ in range(3):
        assert model.train_step(x, y) == pytest.approx(losses[-1], rel=1e-12)
        losses.append(model.loss(x, y))
    assert losses[-1] < losses[0]


def test_head_step_default_lr_is_0_1():
    a, b = TinyViT(seed=4), TinyViT(seed=4)
    x, y = batch(a, 3)
    a.train_step(x, y)
    b.train_step(x, y, lr=0.1)
    np.testing.assert_array_equal(a.head.weight.data, b.head.weight.data)


# ---- full=True: every parameter by -lr * grad --------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_full_step_moves_every_parameter_by_minus_lr_grad(dtype):
    model = TinyViT(**SMALL, dtype=dtype, seed=0)
    x, y = batch(model, 3)
    loss, grads = engine_grads(model, x, y)
    before = {n: p.data.copy() for n, p in model.named_parameters()}
    lr = 0.05
    returned = model.train_step(x, y, lr=lr, full=True)
    assert returned == pytest.approx(loss, rel=1e-6 if dtype == np.float32 else 1e-12)
    for n, p in model.named_parameters():
        assert p.dtype == dtype
        assert np.abs(grads[n]).max() > 0, n  # every parameter really moves
        np.testing.assert_array_equal(p.data, before[n] - dtype(lr) * grads[n], err_msg=n)
    assert model.loss(x, y) < loss


@pytest.mark.parametrize("lr", [0, -0.1, float("nan"), float("inf"), "0.1", None])
def test_bad_learning_rate(lr):
    model = TinyViT()
    x, y = batch(model, 2)
    wrong_type = isinstance(lr, str) or lr is None  # minigrad.checks: TypeError, not ValueError
    with pytest.raises(TypeError if wrong_type else ValueError, match="lr"):
        model.train_step(x, y, lr=lr)


# ---- a step that would make parameters non-finite -------------------------------------------
@pytest.mark.parametrize("full", [False, True], ids=["probe", "full"])
@pytest.mark.parametrize("lr", [1e300, 1e40], ids=["1e300", "1e40"])
def test_train_step_that_would_make_parameters_non_finite_changes_nothing(full, lr):
    from vit.model.tinyvit import TinyViT
    model = TinyViT(dim=8, num_heads=2, mlp_dim=8, dtype=np.float32, seed=0)
    x = np.random.default_rng(0).normal(size=(4, 1, 8, 8)).astype(np.float32)
    y = np.array([0, 1, 0, 1])
    before = {k: v.copy() for k, v in model.state_dict().items()}
    with np.errstate(all="raise"):  # no floating-point warning escapes either
        with pytest.raises(ValueError, match="lr.*non-finite.*expected") as info:
            model.train_step(x, y, lr=lr, full=full)
    assert "\n" not in str(info.value)
    for k, v in model.state_dict().items():
        assert np.array_equal(v, before[k]), k
    assert np.isfinite(model.train_step(x, y, lr=0.1, full=full))  # a sane step still works
