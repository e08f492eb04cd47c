"""vit.manual (TinyViT's forward and backward by hand) against the engine."""
import numpy as np
import pytest

from minigrad import F, Tensor
from vit.model import manual
from vit.model.tinyvit import TinyViT

CONFIGS = [  # (TinyViT kwargs, batch)
    (dict(img_size=8, patch_size=4, in_chans=1, dim=16, num_heads=2, mlp_dim=32,
          num_classes=3, use_pos_emb=True), 5),
    (dict(img_size=8, patch_size=4, in_chans=1, dim=16, num_heads=2, mlp_dim=32,
          num_classes=3, use_pos_emb=False), 4),
    (dict(img_size=8, patch_size=2, in_chans=3, dim=12, num_heads=3, mlp_dim=20,
          num_classes=5, use_pos_emb=True), 3),
    (dict(img_size=6, patch_size=3, in_chans=3, dim=8, num_heads=1, mlp_dim=16,
          num_classes=4, use_pos_emb=False), 1),
    (dict(img_size=12, patch_size=4, in_chans=2, dim=24, num_heads=4, mlp_dim=8,
          num_classes=2, use_pos_emb=True), 6),
]


def _data(cfg, batch, soft, seed=1, dtype=np.float64):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, cfg["in_chans"], cfg["img_size"], cfg["img_size"]))
    if soft:
        y = rng.dirichlet(np.ones(cfg["num_classes"]), batch)
    else:
        y = rng.integers(0, cfg["num_classes"], batch)
    return x.astype(dtype), y


def _engine(model, x, y):
    model.zero_grad()
    loss = F.cross_entropy(model(Tensor(x)), y)
    loss.backward()
    return loss.item(), {n: p.grad for n, p in model.named_parameters()}


def _perturbed(model, seed=2):
    """Random LayerNorm affine parameters too, so none of the gradients is trivial."""
    rng = np.random.default_rng(seed)
    for _, p in model.named_parameters():
        p.data += 0.3 * rng.standard_normal(p.shape)
    return model


@pytest.mark.parametrize("soft", [False, True], ids=["hard", "soft"])
@pytest.mark.parametrize("cfg,batch", CONFIGS, ids=[f"cfg{i}" for i in range(len(CONFIGS))])
def test_matches_engine(cfg, batch, soft):
    model = _perturbed(TinyViT(**cfg, dtype=np.float64, seed=0))
    x, y = _data(cfg, batch, soft)
    want_loss, want = _engine(model, x, y)
    params = model.state_dict()
    loss, grads = manual.loss_and_grads(params, x, y, cfg["patch_size"], cfg["num_heads"])
    assert isinstance(loss, float)
    assert abs(loss - want_loss) <= 1e-10
    assert list(grads) == list(params)
    for name, g in want.items():
        assert grads[name].shape == params[name].shape, name
        assert grads[name].dtype == np.float64, name
        np.testing.assert_allclose(grads[name], g, rtol=0, atol=1e-10, err_msg=name)


def test_inputs_untouched():
    cfg, batch = CONFIGS[2]
    params = TinyViT(**cfg, seed=0).state_dict()
    before = {k: v.copy() for k, v in params.items()}
    x, y = _data(cfg, batch, soft=True)
    x0, y0 = x.copy(), y.copy()
    manual.loss_and_grads(params, x, y, cfg["patch_size"], cfg["num_heads"])
    for k in params:
        np.testing.assert_array_equal(params[k], before[k])
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize("soft", [False, True], ids=["hard", "soft"])
def test_float32_stays_float32(soft):
    cfg, batch = CONFIGS[0]
    model64 = TinyViT(**cfg, dtype=np.float64, seed=0)
    params32 = {k: v.astype(np.float32) for k, v in model64.state_dict().items()}
    x, y = _data(cfg, batch, soft, dtype=np.float32)
    loss, grads = manual.loss_and_grads(params32, x, y, cfg["patch_size"], cfg["num_heads"])
    want_loss, want = _engine(model64, x.astype(np.float64), y)
    assert abs(loss - want_loss) < 1e-5
    for name, g in grads.items():
        assert g.dtype == np.float32, name
        np.testing.assert_allclose(g, want[name], rtol=1e-3, atol=1e-5, err_msg=name)
    logits, _ = manual.forward(params32, x, cfg["patch_size"], cfg["num_heads"])
    assert logits.dtype == np.float32
    # float64 images into float32 parameters compute in float32 too
    _, grads = manual.loss_and_grads(params32, x.astype(np.float64), y, cfg["patch_size"],
                                     cfg["num_heads"])
    assert all(g.dtype == np.float32 for g in grads.values())


def test_sgd_step_matches_engine_train_step():
    cfg, batch = CONFIGS[0]
    model = TinyViT(**cfg, dtype=np.float64, seed=0)
    params = model.state_dict()
    x, y = _data(cfg, batch, soft=False)
    for _ in range(3):
        loss, grads = manual.loss_and_grads(params, x, y, cfg["patch_size"], cfg["num_heads"])
        manual.sgd_step(params, grads, np.float64(0.1))
        want = model.train_step(x, y, lr=0.1, full=True)
        assert abs(loss - want) <= 1e-10
    for name, p in model.named_parameters():
        np.testing.assert_allclose(params[name], p.data, rtol=0, atol=1e-10, err_msg=name)
    p32 = {k: v.astype(np.float32) for k, v in params.items()}
    manual.sgd_step(p32, {k: v.astype(np.float32) for k, v in grads.items()}, np.float64(0.1))
    assert all(v.dtype == np.float32 for v in p32.values())


def _arrays(tree):
    """Every array in a nested tuple of caches, in order."""
    if isinstance(tree, np.ndarray):
        return [tree]
    if isinstance(tree, (tuple, list)):
        return [a for item in tree for a in _arrays(item)]
    return []


def test_block_backward_leaves_its_cache_as_it_was():
    # vit/model/fused.py's encoder_block runs block_backward on the same cache in every pass
    cfg, batch = CONFIGS[2]
    model = _perturbed(TinyViT(**cfg, dtype=np.float64, seed=0))
    params = model.state_dict()
    rng = np.random.default_rng(3)
    M, D = batch * ((cfg["img_size"] // cfg["patch_size"]) ** 2 + 1), cfg["dim"]
    t = rng.standard_normal((M, D))
    g = rng.standard_normal((M, D))
    weights = [params["block." + n] for n in manual.BLOCK_PARAMS]
    _, cache = manual.block_forward(t, weights, batch, cfg["num_heads"])
    saved = [a.copy() for a in _arrays(cache)]
    dt1, first = manual.block_backward(g, cache, batch, cfg["num_heads"])
    for a, b in zip(_arrays(cache), saved, strict=True):
        np.testing.assert_array_equal(a, b)
    dt2, second = manual.block_backward(g, cache, batch, cfg["num_heads"])
    np.testing.assert_array_equal(dt2, dt1)
    for name, a, b in zip(manual.BLOCK_PARAMS, first, second, strict=True):
        np.testing.assert_array_equal(b, a, err_msg=name)
