"""TinyViT(depth=L): L pre-norm blocks in sequence; depth=1 is the contract's model unchanged.

Values against the independent reference (vit_reference.tinyvit), gradients against finite
differences in float64 with random cotangents and against vit/model/manual.py's hand-derived
backward; names, sizes, files and bad values. PyTorch parity for depth 2 is in
test_vit_torch.py, timm's in test_timm_torch.py.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import vit_reference as ref

import minigrad as mg
from minigrad import F, Tensor
from vit.model import manual
from vit.model.config import MAX_DEPTH, limits, parameter_count, parameter_shapes
from vit.model.tinyvit import TinyViT

SMALL = dict(img_size=4, patch_size=2, in_chans=1, dim=4, num_heads=2, mlp_dim=6, num_classes=3)
BLOCK = ("norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.proj.weight", "norm2.weight",
         "norm2.bias", "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias")


def perturbed(depth, cfg=SMALL, seed=0, scale=0.3):
    """A model whose every parameter is off its special initial value (unit gains, zero biases)."""
    model = TinyViT(**cfg, depth=depth, seed=seed)
    rng = np.random.default_rng(seed + 100)
    for p in model.parameters():
        p.data[...] += scale * rng.standard_normal(p.shape)
    return model


def images(model, B, seed=1):
    c = model.config
    rng = np.random.default_rng(seed)
    return rng.standard_normal((B, c["in_chans"], c["img_size"], c["img_size"]))


# ---- depth 1 is the contract's model -------------------------------------------------------
def test_depth_1_is_the_default_and_builds_the_same_model_bit_for_bit():
    default, explicit = TinyViT(seed=3), TinyViT(seed=3, depth=1)
    assert default.config["depth"] == explicit.config["depth"] == 1
    assert list(default.state_dict()) == list(explicit.state_dict())
    assert all(n.startswith("block.") for n in default.state_dict() if "." in n and
               n.split(".")[0] not in ("patch_embed", "norm", "head"))
    for (name, a), b in zip(default.state_dict().items(), explicit.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert not hasattr(default, "blocks") and default.encoder_blocks() == [default.block]


def test_depth_is_keyword_only():
    with pytest.raises(TypeError):
        TinyViT(8, 4, 1, 16, 2, 32, 2, True, 2)


def test_deeper_models_start_with_the_same_draws_as_depth_1():
    """The first block and everything before it come from the same random draws, so depth
    only appends blocks (the final norm has no draws; the head's come after the blocks)."""
    one, three = TinyViT(seed=5), TinyViT(seed=5, depth=3)
    for name in ("patch_embed.weight", "cls_token", "pos_embed"):
        np.testing.assert_array_equal(one.state_dict()[name], three.state_dict()[name])
    for name in BLOCK:
        np.testing.assert_array_equal(one.state_dict()["block." + name],
                                      three.state_dict()["blocks.0." + name])
    assert not np.array_equal(three.state_dict()["blocks.0.attn.qkv.weight"],
                              three.state_dict()["blocks.1.attn.qkv.weight"])


# ---- names and sizes -----------------------------------------------------------------------
@pytest.mark.parametrize("depth", [2, 3])
def test_blocks_are_named_as_timm_names_them(depth):
    model = TinyViT(**SMALL, depth=depth)
    names = list(model.state_dict())
    assert set(names) == set(manual.param_names(depth))
    assert not any(n.startswith("block.") for n in names)
    assert [n for n in names if n.startswith("blocks.")] == [
        f"blocks.{i}.{b}" for i in range(depth) for b in BLOCK]
    assert len(model.encoder_blocks()) == depth


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_parameter_count_grows_by_one_block_per_depth(depth):
    config = {**SMALL, "use_pos_emb": True, "depth": depth}
    D, Fh = SMALL["dim"], SMALL["mlp_dim"]
    block = 4 * D + 3 * D * D + D * D + D * Fh + Fh + Fh * D + D  # norms, qkv, proj, fc1, fc2
    one = parameter_count({**config, "depth": 1})
    assert parameter_count(config) == one + (depth - 1) * block
    model = TinyViT(**config)
    assert parameter_count(config) == model.num_parameters()
    assert parameter_shapes(config) == {n: p.shape for n, p in model.named_parameters()}


def test_the_parameter_bound_counts_every_block_before_anything_is_built():
    config = dict(SMALL, use_pos_emb=True)
    n3 = parameter_count({**config, "depth": 3})
    with limits(max_parameters=n3 - 1):
        TinyViT(**config, depth=2)
        with pytest.raises(ValueError, match="depth=3"):
            TinyViT(**config, depth=3)
    with pytest.raises(ValueError, match="parameters"):  # refused by counting, not allocating
        TinyViT(dim=512, num_heads=8, mlp_dim=2048, depth=MAX_DEPTH)


@pytest.mark.parametrize("depth,error", [(0, ValueError), (-1, ValueError),
                                         (MAX_DEPTH + 1, ValueError), (1.0, TypeError),
                                         ("2", TypeError), (True, TypeError),
                                         (None, TypeError)])
def test_bad_depth_names_the_argument(depth, error):
    with pytest.raises(error, match=rf"TinyViT depth: got {depth!r}"):
        TinyViT(depth=depth)


# ---- values --------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("use_pos_emb", [True, False])
def test_matches_the_reference_block_after_block(depth, use_pos_emb):
    cfg = dict(img_size=6, patch_size=2, in_chans=3, dim=12, num_heads=3, mlp_dim=20,
               num_classes=5, use_pos_emb=use_pos_emb)
    model = perturbed(depth, cfg)
    x = images(model, 4)
    cls, logits = ref.tinyvit(model, x)
    tol = dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model.cls_features(x), cls, **tol)
    np.testing.assert_allclose(model.forward(x), logits, **tol)
    # and each block really acts: dropping the last one changes the logits
    shallower = TinyViT(**cfg, depth=depth - 1)
    last = f"blocks.{depth - 1}."
    state = {k: v for k, v in model.state_dict().items() if not k.startswith(last)}
    if depth - 1 == 1:
        state = {k.replace("blocks.0.", "block."): v for k, v in state.items()}
    shallower.load_state_dict(state)
    assert np.max(np.abs(shallower.forward(x) - logits)) > 1e-3


# ---- gradients -----------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [2, 3])
def test_gradcheck_every_parameter_and_the_images_random_cotangents(depth):
    """float64 central differences; the logits (B, K) get a random, non-uniform cotangent
    from mg.gradcheck, the loss (with soft targets) a second one."""
    model = perturbed(depth)
    x = Tensor(images(model, 3), requires_grad=True)
    soft = np.random.default_rng(7).dirichlet(np.ones(3), 3)

    def outputs(xi, *params):
        logits = model(xi)
        return logits, F.cross_entropy(logits, soft)

    params = list(model.parameters())
    report = mg.gradcheck(outputs, [x] + params, atol=1e-8, rtol=1e-6)
    assert report.ok and len(report.inputs) == 1 + len(params)
    assert len(params) == 8 + 10 * depth


@pytest.mark.parametrize("soft", [False, True], ids=["labels", "soft"])
@pytest.mark.parametrize("depth", [2, 3])
def test_manual_backward_matches_the_engine(depth, soft):
    cfg = dict(img_size=8, patch_size=2, in_chans=3, dim=12, num_heads=3, mlp_dim=20,
               num_classes=5)
    model = perturbed(depth, cfg)
    x = images(model, 3)
    rng = np.random.default_rng(4)
    y = rng.dirichlet(np.ones(5), 3) if soft else rng.integers(0, 5, 3)
    model.zero_grad()
    loss = F.cross_entropy(model(Tensor(x)), y)
    loss.backward()
    params = model.state_dict()
    before = {k: v.copy() for k, v in params.items()}
    got_loss, grads = manual.loss_and_grads(params, x, y, cfg["patch_size"], cfg["num_heads"])
    assert abs(got_loss - loss.item()) <= 1e-12 * abs(loss.item())
    assert list(grads) == list(params)
    eps = np.finfo(np.float64).eps
    for name, p in model.named_parameters():
        scale = np.max(np.abs(p.grad)) + eps
        np.testing.assert_allclose(grads[name], p.grad, rtol=0, atol=1000 * eps * scale,
                                   err_msg=name)
        np.testing.assert_array_equal(params[name], before[name])  # nothing modified


def test_manual_refuses_a_parameter_dict_missing_a_block_or_mixing_the_schemes():
    model = TinyViT(**SMALL, depth=3)
    x, y = images(model, 2), np.array([0, 1])
    params = model.state_dict()
    del params["blocks.1.mlp.fc2.bias"]
    with pytest.raises(KeyError, match="blocks.1.mlp.fc2.bias"):
        manual.loss_and_grads(params, x, y, 2, 2)
    mixed = {**TinyViT(**SMALL).state_dict(), **model.state_dict()}
    with pytest.raises(KeyError, match="one scheme"):
        manual.loss_and_grads(mixed, x, y, 2, 2)


@pytest.mark.parametrize("depth", [2, 3])
def test_full_step_trains_every_block(depth):
    model = TinyViT(**SMALL, depth=depth, seed=1)
    x, y = images(model, 4), np.array([0, 1, 2, 0])
    before = model.state_dict()
    first = model.train_step(x, y, lr=1e-3, full=True)  # dim 4: steep (gradients ~20)
    for name, value in model.state_dict().items():
        assert not np.array_equal(value, before[name]), name
    assert model.loss(x, y) < first


# ---- files ---------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [1, 3])
def test_save_load_round_trip_keeps_depth_and_every_bit(tmp_path, depth):
    model = perturbed(depth)
    model.save(tmp_path / "m.npz")
    back = TinyViT.load(tmp_path / "m.npz")
    assert back.config == model.config and back.config["depth"] == depth
    for (name, a), b in zip(model.state_dict().items(), back.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)


def _rewrite_config(path, change):
    arrays = dict(np.load(path))
    config = json.loads(str(arrays["config"]))
    change(config)
    arrays["config"] = np.array(json.dumps(config))
    np.savez(path, **arrays)


def test_a_model_saved_before_depth_existed_loads_as_one_block(tmp_path):
    model = perturbed(1)
    model.save(tmp_path / "old.npz")
    _rewrite_config(tmp_path / "old.npz", lambda c: c.pop("depth"))
    assert "depth" not in json.loads(str(np.load(tmp_path / "old.npz")["config"]))
    back = TinyViT.load(tmp_path / "old.npz")
    assert back.config["depth"] == 1
    x = images(model, 2)
    np.testing.assert_array_equal(back.forward(x), model.forward(x))


@pytest.mark.parametrize("depth,words", [(2, ["unexpected", "param/block.norm1.weight"]),
                                         (0, ["depth", "0"]),
                                         (True, ["depth", "True"]), ("3", ["depth", "'3'"]),
                                         (10**6, ["depth", "1000000"])])
def test_a_saved_depth_that_disagrees_or_is_bad_is_refused_by_name(tmp_path, depth, words):
    perturbed(1).save(tmp_path / "m.npz")
    _rewrite_config(tmp_path / "m.npz", lambda c: c.update(depth=depth))
    with pytest.raises(ValueError) as info:
        TinyViT.load(tmp_path / "m.npz")
    message = str(info.value)
    assert all(w in message for w in words), message
