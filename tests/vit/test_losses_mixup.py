"""vit.losses: cross-entropy with hard and soft targets, mixup, and soft targets in TinyViT."""
from __future__ import annotations

import numpy as np
import pytest
import vit_reference as ref

from minigrad import F, Tensor
from vit import TinyViT, cross_entropy, mixup, one_hot

K = 4


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((6, 1, 8, 8)), np.array([0, 1, 2, 3, 1, 0])


def onehot(y, k=K):
    out = np.zeros((len(y), k))
    for i, label in enumerate(y):
        out[i, label] = 1.0
    return out


# ---- cross-entropy -------------------------------------------------------------------------
def test_cross_entropy_hard_and_soft_match_reference():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((5, K)) * 3
    y = rng.integers(0, K, 5)
    soft = rng.dirichlet(np.ones(K), 5)
    assert cross_entropy(Tensor(logits), y).item() == pytest.approx(ref.cross_entropy(logits, y),
                                                                    rel=1e-12)
    assert cross_entropy(Tensor(logits), soft).item() == pytest.approx(
        ref.cross_entropy(logits, soft), rel=1e-12)
    assert cross_entropy(Tensor(logits), onehot(y)).item() == pytest.approx(
        ref.cross_entropy(logits, y), rel=1e-12)


def test_one_hot():
    np.testing.assert_array_equal(one_hot(np.array([2, 0]), 3), [[0, 0, 1], [1, 0, 0]])
    assert one_hot(np.array([1]), 2, np.float32).dtype == np.float32
    for bad in (np.array([3]), np.array([-1]), np.array([0.5]), np.array([[1]])):
        with pytest.raises(ValueError, match="y"):
            one_hot(bad, 3)


# ---- mixup -----------------------------------------------------------------------------------
def test_mixup_loss_equals_weighted_losses_value_and_every_gradient(data):
    x, y = data
    model = TinyViT(num_classes=K, seed=0)
    m = mixup(x, y, K, alpha=0.4, rng=np.random.default_rng(3))
    assert 0 < m.lam < 1 and not np.array_equal(m.index, np.arange(6))

    def run(loss_fn):
        model.zero_grad()
        loss = loss_fn(model(Tensor(m.x)))
        loss.backward()
        return loss.item(), [p.grad.copy() for p in model.parameters()]

    soft_value, soft_grads = run(lambda z: F.cross_entropy(z, m.y))
    mix_value, mix_grads = run(lambda z: m.lam * F.cross_entropy(z, y)
                               + (1 - m.lam) * F.cross_entropy(z, y[m.index]))
    assert soft_value == pytest.approx(mix_value, rel=1e-12)
    for g_soft, g_mix in zip(soft_grads, mix_grads, strict=True):
        np.testing.assert_allclose(g_soft, g_mix, rtol=1e-10, atol=1e-14)
    assert model.loss(m.x, m.y) == pytest.approx(mix_value, rel=1e-12)


def test_lam_one_reproduces_plain_cross_entropy(data):
    x, y = data
    m = mixup(x, y, K, lam=1.0, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(m.x, x)
    np.testing.assert_array_equal(m.y, onehot(y))
    model = TinyViT(num_classes=K, seed=1)
    assert model.loss(m.x, m.y) == pytest.approx(model.loss(x, y), rel=1e-14)


@pytest.mark.parametrize("lam", [0.25, 0.0, 0.7])
@pytest.mark.parametrize("flip", [False, True])
def test_images_and_targets_use_the_same_lam(data, lam, flip):
    x, y = data
    m = mixup(x, y, K, lam=lam, flip=flip, rng=np.random.default_rng(2))
    assert m.lam == lam
    j = m.index
    np.testing.assert_allclose(m.x, lam * x + (1 - lam) * x[j], rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(m.y, lam * onehot(y) + (1 - lam) * onehot(y[j]), atol=1e-15)
    np.testing.assert_allclose(m.y.sum(1), 1.0, atol=1e-15)
    if lam == 0.25:  # the spec's example: one quarter of example a, three quarters of b
        i = int(np.flatnonzero(y != y[j])[0])
        assert m.y[i, y[i]] == 0.25 and m.y[i, y[j[i]]] == 0.75


def test_sampled_lam_is_shared_by_images_and_targets(data):
    x, y = data
    for seed in range(5):
        m = mixup(x, y, K, alpha=1.0, rng=np.random.default_rng(seed))
        np.testing.assert_allclose(m.x, m.lam * x + (1 - m.lam) * x[m.index], atol=1e-14)
        np.testing.assert_allclose(m.y, m.lam * onehot(y) + (1 - m.lam) * onehot(y[m.index]),
                                   atol=1e-14)


def test_permutation_versus_flip(data):
    x, y = data
    flipped = mixup(x, y, K, lam=0.5, flip=True)
    np.testing.assert_array_equal(flipped.index, [5, 4, 3, 2, 1, 0])
    indices = [mixup(x, y, K, lam=0.5, rng=np.random.default_rng(s)).index for s in range(6)]
    for index in indices:
        np.testing.assert_array_equal(np.sort(index), np.arange(6))
    assert len({tuple(i) for i in indices}) > 1


def test_seeded_generator_reproducible(data):
    x, y = data
    a = mixup(x, y, K, rng=np.random.default_rng(11))
    b = mixup(x, y, K, rng=np.random.default_rng(11))
    c = mixup(x, y, K, rng=np.random.default_rng(12))
    assert a.lam == b.lam and np.array_equal(a.index, b.index)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.y, b.y)
    assert a.lam != c.lam


def test_lam_follows_beta_alpha_alpha():
    x, y = np.zeros((2, 1)), np.array([0, 1])
    rng = np.random.default_rng(0)
    for alpha in (0.2, 2.0):
        lams = np.array([mixup(x, y, 2, alpha=alpha, rng=rng).lam for _ in range(4000)])
        assert lams.min() >= 0 and lams.max() <= 1
        assert lams.mean() == pytest.approx(0.5, abs=0.03)
        assert lams.var() == pytest.approx(1 / (4 * (2 * alpha + 1)), rel=0.1)


def test_inputs_not_modified_and_dtype_kept(data):
    x, y = data
    x32 = x.astype(np.float32)
    soft = np.random.default_rng(0).dirichlet(np.ones(K), 6)
    copies = x32.copy(), y.copy(), soft.copy()
    m = mixup(x32, y, K, lam=0.3, rng=np.random.default_rng(0))
    assert m.x.dtype == np.float32 and m.y.dtype == np.float32
    m2 = mixup(x32, soft, K, lam=0.3, flip=True)
    np.testing.assert_allclose(m2.y, 0.3 * soft + 0.7 * soft[::-1], rtol=1e-6)
    for a, c in zip((x32, y, soft), copies, strict=True):
        np.testing.assert_array_equal(a, c)
    assert not np.shares_memory(m.x, x32)


@pytest.mark.parametrize("alpha", [0, -0.5, 0.0, float("nan"), float("inf"), True, "1"])
def test_alpha_must_be_positive(data, alpha):
    error = TypeError if isinstance(alpha, (bool, str)) else ValueError  # minigrad.checks' rule
    with pytest.raises(error, match="alpha"):
        mixup(*data, K, alpha=alpha, rng=np.random.default_rng(0))
    with pytest.raises(error, match="alpha"):  # even when lam is given
        mixup(*data, K, alpha=alpha, lam=0.5)


@pytest.mark.parametrize("kwargs", [dict(lam=-0.1), dict(lam=1.5)])
def test_lam_outside_unit_interval_rejected(data, kwargs):
    with pytest.raises(ValueError, match="lam"):
        mixup(*data, K, **kwargs)


def test_bad_mixup_inputs(data):
    x, y = data
    with pytest.raises(ValueError, match="x"):
        mixup(x.astype(int), y, K)
    with pytest.raises(ValueError, match="y"):
        mixup(x, y[:3], K)
    with pytest.raises(ValueError, match="y"):
        mixup(x, np.array([0, 1, 2, 3, 4, 0]), K)  # label 4 with 4 classes


# ---- soft targets in TinyViT.loss and train_step --------------------------------------------------
def test_loss_and_train_step_accept_soft_targets(data):
    x, y = data
    soft = np.random.default_rng(5).dirichlet(np.ones(K), 6)
    model = TinyViT(num_classes=K, seed=2)
    cls, logits = ref.tinyvit(model, x)
    assert model.loss(x, onehot(y)) == pytest.approx(model.loss(x, y), rel=1e-14)
    expected = ref.cross_entropy(logits, soft)
    assert model.loss(x, soft) == pytest.approx(expected, rel=1e-12)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dlogits = (p - soft) / 6
    W0, b0 = model.head.weight.data.copy(), model.head.bias.data.copy()
    assert model.train_step(x, soft, lr=0.2) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(model.head.weight.data, W0 - 0.2 * cls.T @ dlogits, atol=1e-14)
    np.testing.assert_allclose(model.head.bias.data, b0 - 0.2 * dlogits.sum(0), atol=1e-14)
    before = model.loss(x, soft)
    assert model.train_step(x, soft, lr=0.05, full=True) == pytest.approx(before, rel=1e-12)
    assert model.loss(x, soft) < before


@pytest.mark.parametrize("bad", [np.ones((6, K + 1)) / (K + 1), np.ones((5, K)) / K,
                                 np.ones((6, K, 1))])
def test_soft_targets_of_wrong_shape(data, bad):
    model = TinyViT(num_classes=K)
    with pytest.raises(ValueError, match="y"):
        model.loss(data[0], bad)
    with pytest.raises(ValueError, match="y"):
        model.train_step(data[0], bad)


def test_one_hot_bounds_the_class_count_as_minigrads_does():
    from minigrad.ops.indexing import MAX_ONE_HOT_ELEMENTS
    y = np.array([0, 1])
    for build in (lambda: one_hot(y, MAX_ONE_HOT_ELEMENTS), lambda: F.one_hot(y, MAX_ONE_HOT_ELEMENTS)):
        with pytest.raises(ValueError, match="num_classes"):
            build()
    assert one_hot(y, MAX_ONE_HOT_ELEMENTS // 2).shape == (2, MAX_ONE_HOT_ELEMENTS // 2)
