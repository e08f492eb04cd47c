"""Export to timm's layout and import back, without torch: exact round trips, the config's
contents, and the refusals of from_timm and of ``vit export`` / ``vit import``."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from helpers import one_line_refusal, perturbed_tinyvit
from training_checkpoint import save_training_checkpoint

from vit import TinyViT, from_timm, patchify
from vit.cli.main import main
from vit.model.normalizer import Normalizer
from vit.model.timm_convert import to_timm

try:
    import safetensors.numpy as st
except ImportError:
    st = None
needs_st = pytest.mark.skipif(st is None, reason="safetensors is not installed")

CFGS = [dict(img_size=8, patch_size=4, in_chans=1, dim=16, num_heads=2, mlp_dim=32),
        dict(img_size=6, patch_size=3, in_chans=3, dim=22, num_heads=2, mlp_dim=15,
             num_classes=5, use_pos_emb=False),
        dict(img_size=8, patch_size=2, in_chans=2, dim=12, num_heads=4, mlp_dim=7,
             num_classes=3)]


def perturbed(cfg=CFGS[0], dtype=np.float64, seed=0):
    """A TinyViT whose biases and LayerNorm gains are off their initial 0 and 1."""
    model = TinyViT(**cfg, dtype=dtype, seed=seed)
    rng = np.random.default_rng(seed + 1)
    for p in model.parameters():
        p.data += (0.1 * rng.standard_normal(p.shape)).astype(dtype)
    return model


def legacy(config):
    """A native config.json in the format written before timm's own: VisionTransformer's
    arguments at the top level, plus norm_eps and preprocessing."""
    pre = None
    if config["minigrad_vit"]["normalize"] == "mean-std":
        pre = {k: config["pretrained_cfg"][k] for k in ("mean", "std")}
    return {**config["model_args"], "norm_eps": 1e-5, "preprocessing": pre}


def with_args(config, **change):
    """``config`` with ``model_args`` changed."""
    return {**config, "model_args": {**config["model_args"], **change}}


def images(model, n=4, seed=2):
    c = model.config
    x = np.random.default_rng(seed).standard_normal((n, c["in_chans"], c["img_size"],
                                                     c["img_size"]))
    return x.astype(model.dtype)


def assert_same_bits(a: TinyViT, b: TinyViT):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for name in sa:
        assert sa[name].dtype == sb[name].dtype and sa[name].shape == sb[name].shape, name
        assert sa[name].tobytes() == sb[name].tobytes(), name
    x = images(a)
    assert a(x).tobytes() == b(x).tobytes()


@pytest.mark.parametrize("cfg", CFGS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_round_trip_in_memory_is_bit_exact(cfg, dtype):
    model = perturbed_tinyvit(cfg, dtype)
    before = {k: v.copy() for k, v in model.state_dict().items()}
    state, config = to_timm(model)
    snapshot = ({k: v.copy() for k, v in state.items()}, json.dumps(config))
    back = from_timm(state, config)
    assert back.config == model.config and back.dtype == model.dtype
    assert_same_bits(model, back)
    for k, v in model.state_dict().items():  # the export copies, it never aliases
        assert v.tobytes() == before[k].tobytes()
    assert json.dumps(config) == snapshot[1]  # from_timm leaves its inputs alone
    assert all(state[k].tobytes() == v.tobytes() for k, v in snapshot[0].items())
    kept = {k: v.copy() for k, v in back.state_dict().items()}
    for v in state.values():  # neither model shares memory with the exported arrays
        v += 1
    assert_same_bits(model, back)
    assert all(back.state_dict()[k].tobytes() == v.tobytes() for k, v in kept.items())


def test_config_holds_timm_arguments_for_the_same_network():
    model = perturbed(CFGS[1])
    model.input_range = (0.0, 255.0)
    _, config = to_timm(model, Normalizer(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])))
    args = config.pop("model_args")
    assert int(22 * args.pop("mlp_ratio")) == 15  # timm's Block: int(dim * mlp_ratio)
    assert args == dict(
        img_size=6, patch_size=3, in_chans=3, num_classes=5, embed_dim=22, depth=1,
        num_heads=2, qkv_bias=False, proj_bias=True, qk_norm=False, init_values=None,
        class_token=True, global_pool="token", pos_embed="none", no_embed_class=False,
        reg_tokens=0, pre_norm=False, final_norm=True, fc_norm=False, act_layer="gelu_tanh")
    # timm 1.0.31's config.json: the architecture whose factory's LayerNorm eps is 1e-5 (the
    # rest of its factory arguments are all overridden above), the data config timm reads
    assert config == {
        "architecture": "vit_xsmall_patch16_clip_224", "num_classes": 5, "num_features": 22,
        "global_pool": "token",
        "pretrained_cfg": {"input_size": [3, 6, 6], "fixed_input_size": True,
                           "interpolation": "bilinear", "crop_pct": 1.0, "crop_mode": "center",
                           "mean": [1.0, 2.0, 3.0], "std": [4.0, 5.0, 6.0], "num_classes": 5},
        "minigrad_vit": {"format": "vit-timm/1", "normalize": "mean-std",
                         "input_range": [0.0, 255.0]}}
    assert to_timm(perturbed(CFGS[0]))[1]["model_args"]["pos_embed"] == "learn"


def test_a_model_taking_inputs_as_given_exports_the_identity_normalization():
    _, config = to_timm(perturbed(CFGS[1]))
    assert config["pretrained_cfg"]["mean"] == [0.0] * 3
    assert config["pretrained_cfg"]["std"] == [1.0] * 3
    assert config["minigrad_vit"] == {"format": "vit-timm/1", "normalize": "none",
                                      "input_range": None}


@pytest.mark.parametrize("dim", [7, 14, 22, 26, 49])
def test_mlp_ratio_gives_the_hidden_width_through_timms_formula(dim):
    for hidden in range(1, 130):  # 14 * (61 / 14) rounds below 61: the ratio must be nudged
        model = TinyViT(dim=dim, num_heads=1, mlp_dim=hidden)
        ratio = to_timm(model)[1]["model_args"]["mlp_ratio"]
        assert int(dim * json.loads(json.dumps(ratio))) == hidden, (dim, hidden)


def test_timm_names_and_layouts():
    model = perturbed_tinyvit(CFGS[2])
    state, _ = to_timm(model)
    assert list(state) == [
        "cls_token", "pos_embed", "patch_embed.proj.weight", "patch_embed.proj.bias",
        "blocks.0.norm1.weight", "blocks.0.norm1.bias", "blocks.0.attn.qkv.weight",
        "blocks.0.attn.proj.weight", "blocks.0.norm2.weight", "blocks.0.norm2.bias",
        "blocks.0.mlp.fc1.weight", "blocks.0.mlp.fc1.bias", "blocks.0.mlp.fc2.weight",
        "blocks.0.mlp.fc2.bias", "norm.weight", "norm.bias", "head.weight", "head.bias",
        "blocks.0.attn.proj.bias"]
    np.testing.assert_array_equal(state["blocks.0.attn.proj.bias"], np.zeros(12))
    np.testing.assert_array_equal(state["head.weight"], model.head.weight.data.T)
    # the patch embedding as timm computes it: a stride-P convolution of (D, C, P, P)
    x = images(model)
    B, C, H, _ = x.shape
    P, h = 2, H // 2
    w, b = state["patch_embed.proj.weight"], state["patch_embed.proj.bias"]
    conv = np.einsum("bcipjq,dcpq->bijd", x.reshape(B, C, h, P, h, P), w) + b
    ours = patchify(x, P) @ model.patch_embed.weight.data + model.patch_embed.bias.data
    np.testing.assert_allclose(conv.reshape(B, h * h, -1), ours, rtol=0, atol=1e-13)


def test_zero_biases_timm_has_and_tinyvit_lacks_are_accepted():
    model = perturbed_tinyvit(CFGS[0])
    state, config = to_timm(model)
    state["blocks.0.attn.qkv.bias"] = np.zeros(48)
    assert_same_bits(model, from_timm(state, with_args(config, qkv_bias=True)))


def refusal(state, config, *words, error=ValueError):
    with pytest.raises(error) as e:
        from_timm(state, config)
    message = str(e.value)
    assert "\n" not in message and message.startswith("from_timm")
    for word in words:
        assert word in message, message
    return message


@pytest.mark.parametrize("change, words", [
    (dict(act_layer="gelu"), ["act_layer", "'gelu'", "tanh"]),
    (dict(act_layer=None), ["act_layer"]),
    (dict(norm_eps=1e-6), ["norm_eps", "1e-05"]),
    (dict(global_pool="avg"), ["global_pool", "'avg'"]),
    (dict(reg_tokens=4), ["reg_tokens", "4"]),
    (dict(init_values=1e-5), ["init_values", "layer scale"]),
    (dict(qk_norm=True), ["qk_norm"]),
    (dict(pre_norm=True), ["pre_norm"]),
    (dict(fc_norm=True), ["fc_norm"]),
    (dict(class_token=False), ["class_token"]),
    (dict(no_embed_class=True), ["no_embed_class", "class token"]),
    (dict(proj_bias=False), ["proj_bias", "MLP"]),
    (dict(drop_path_rate=0.1), ["drop_path_rate", "dropout"]),
    (dict(pos_embed="sincos"), ["pos_embed", "'sincos'"]),
    (dict(norm_layer="layernorm"), ["norm_layer"]),
    (dict(mlp_layer="swiglu"), ["mlp_layer"]),
    (dict(img_size=[8, 6]), ["img_size", "[8, 6]"]),
    (dict(embed_dim=-1), ["embed_dim"]),
    (dict(mlp_ratio="4"), ["mlp_ratio"]),
    (dict(mlp_ratio=0.01), ["mlp_ratio", "at least 1"]),
    (dict(preprocessing={"mean": [0.0]}), ["preprocessing"]),
    (dict(distilled=True), ["'distilled'", "not a VisionTransformer argument"]),
])
def test_from_timm_names_the_setting_it_cannot_represent_in_the_older_format(change, words):
    state, config = to_timm(perturbed())
    refusal(state, {**legacy(config), **change}, *words)


@pytest.mark.parametrize("change, words", [
    (dict(act_layer="gelu"), ["act_layer", "'gelu'", "tanh"]),
    (dict(global_pool="avg"), ["global_pool", "'avg'"]),
    (dict(norm_layer="layernorm"), ["norm_layer", "architecture"]),
    (dict(norm_eps=1e-5), ["norm_eps"]),
    (dict(distilled=True), ["'distilled'", "not a VisionTransformer argument"]),
], ids=["act", "pool", "norm_layer", "norm_eps", "unknown"])
def test_from_timm_names_the_model_arg_it_cannot_represent(change, words):
    state, config = to_timm(perturbed())
    refusal(state, with_args(config, **change), *words)


@pytest.mark.parametrize("key, words", [("pre_norm", ["pre_norm", "True"]),
                                        ("embed_dim", ["(1, 1, 256)"])])
def test_a_model_arg_left_out_takes_the_architectures_own(key, words):
    """vit_xsmall_patch16_clip_224's factory sets pre_norm=True and embed_dim=256."""
    state, config = to_timm(perturbed())
    del config["model_args"][key]
    refusal(state, config, *words)


@pytest.mark.parametrize("change, words", [
    (dict(architecture="vit_tiny_patch16_224"), ["architecture", "'vit_tiny_patch16_224'"]),
    (dict(model_args=[1]), ["model_args"]),
    (dict(num_classes=7), ["num_classes", "7"]),
    (dict(extra=1), ["'extra'"]),
    (dict(minigrad_vit={"format": "vit-timm/1", "normalize": "zscore"}), ["minigrad_vit"]),
])
def test_from_timm_names_what_it_cannot_read_in_timms_format(change, words):
    state, config = to_timm(perturbed())
    refusal(state, {**config, **change}, *words)


@pytest.mark.parametrize("key", ["norm_eps", "act_layer"])
def test_a_missing_setting_means_timms_default_in_the_older_format(key):
    state, config = to_timm(perturbed())
    config = legacy(config)
    del config[key]
    refusal(state, config, key, "missing", "default")


def test_the_older_format_still_reads_with_its_preprocessing():
    from vit.model.modelfile import MissingEntryWarning
    model = perturbed(CFGS[1])
    model.normalizer = Normalizer(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    state, config = to_timm(model)
    with pytest.warns(MissingEntryWarning, match="input range"):
        back = from_timm(state, legacy(config))
    assert_same_bits(model, back)
    np.testing.assert_array_equal(back.normalizer.std, [4.0, 5.0, 6.0])
    assert back.input_range is None


def test_a_config_that_states_no_preprocessing_needs_it_given():
    state, config = to_timm(perturbed())
    old = legacy(config)  # a model file without statistics, exported before: null
    refusal(state, old, "preprocessing is null", "normalize='none'")
    assert from_timm(state, old, normalize="none").normalizer is None
    foreign = {k: v for k, v in config.items() if k != "minigrad_vit"}  # trained elsewhere
    refusal(state, foreign, "pretrained_cfg mean [0.0]", "mean=")
    back = from_timm(state, foreign, mean=[0.5], std=[2.0])
    np.testing.assert_array_equal(back.normalizer.mean, [0.5])
    with pytest.raises(ValueError, match="one place"):
        from_timm(state, config, mean=[0.5], std=[2.0])


@pytest.mark.parametrize("extra, words", [
    ("dist_token", ["'dist_token'", "distillation token"]),
    ("reg_token", ["register tokens"]),
    ("blocks.0.ls1.gamma", ["layer scale"]),
    ("blocks.0.attn.q_norm.weight", ["qk_norm"]),
    ("norm_pre.weight", ["pre-norm"]),
    ("fc_norm.weight", ["fc_norm"]),
    ("blocks.0.attn.qkv.bias", ["qkv bias"]),
    ("blocks.1.norm1.weight", ["'blocks.1.norm1.weight'", "unknown entry"]),
    ("mystery", ["'mystery'", "unknown"]),
])
def test_from_timm_refuses_parameters_tinyvit_does_not_have(extra, words):
    state, config = to_timm(perturbed_tinyvit(CFGS[0]))
    state[extra] = np.zeros(16)
    refusal(state, config, *words)


def test_from_timm_refuses_nonzero_biases_tinyvit_lacks():
    state, config = to_timm(perturbed_tinyvit(CFGS[0]))
    state["blocks.0.attn.proj.bias"] = np.full(16, 1e-300)
    refusal(state, config, "'blocks.0.attn.proj.bias'", "nonzero")
    state["blocks.0.attn.proj.bias"] = np.zeros(16)
    state["blocks.0.attn.qkv.bias"] = np.ones(48)
    refusal(state, with_args(config, qkv_bias=True), "'blocks.0.attn.qkv.bias'", "nonzero")


def test_from_timm_refuses_bad_arrays():
    state, config = to_timm(perturbed_tinyvit(CFGS[0]))
    refusal({k: v for k, v in state.items() if k != "head.bias"}, config, "missing",
            "'head.bias'")
    refusal({**state, "head.weight": state["head.weight"].T}, config, "'head.weight'", "(2, 16)")
    refusal({**state, "norm.bias": state["norm.bias"].astype(np.float32)}, config, "mixed",
            "dtype=")
    refusal({**state, "norm.bias": state["norm.bias"].astype(np.int64)}, config, "'norm.bias'")
    refusal({**state, "norm.bias": list(state["norm.bias"])}, config, "'norm.bias'", "NumPy",
            error=TypeError)
    refusal(state, with_args(config, embed_dim=8), "'cls_token'", "(1, 1, 8)")
    refusal(list(state.items()), config, "state_dict", error=TypeError)
    refusal(state, [config], "config", error=TypeError)


def test_from_timm_casts_on_request():
    model = perturbed_tinyvit(CFGS[0])
    state, config = to_timm(model)
    state["norm.bias"] = state["norm.bias"].astype(np.float32)
    back = from_timm(state, config, dtype=np.float64)
    assert back.dtype == np.float64
    np.testing.assert_array_equal(back.norm.bias.data, model.norm.bias.data.astype(np.float32))


def test_from_timm_depth_follows_tinyvit():
    import inspect
    state, config = to_timm(perturbed_tinyvit(CFGS[0]))
    if "depth" in inspect.signature(TinyViT).parameters:
        pytest.skip("TinyViT takes depth: the depth > 1 round trip runs in test_timm_torch.py")
    refusal(state, with_args(config, depth=3), "depth", "3", "one block")


def test_to_timm_refuses_what_it_cannot_map():
    from minigrad.nn import Linear

    with pytest.raises(TypeError, match="to_timm model"):
        to_timm(object())
    model = perturbed_tinyvit(CFGS[0])
    model.norm.eps = 1e-6
    with pytest.raises(ValueError, match="eps"):
        to_timm(model)
    model = perturbed_tinyvit(CFGS[0])
    model.extra = Linear(16, 16)
    with pytest.raises(ValueError, match="'extra.weight'"):
        to_timm(model)


# ---- files and the command line --------------------------------------------------------
def checkpoint(path, model, mean, std):
    save_training_checkpoint(path, model, Normalizer(mean, std))


def run(argv, capsys):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


@needs_st
@pytest.mark.parametrize("saved", ["checkpoint", "model"])
def test_cli_export_then_import_is_bit_exact(tmp_path, capsys, saved):
    model = perturbed_tinyvit(CFGS[1], np.float32)
    source = tmp_path / "source.npz"
    if saved == "checkpoint":
        checkpoint(source, model, np.array([0.5, 1.0, 2.0]), np.array([3.0, 4.0, 5.0]))
    else:
        model.save(source)
    out = tmp_path / "timm"
    code, text, err = run(["export", source, "--to", "timm", "--out", out], capsys)
    assert (code, err) == (0, "") and "model.safetensors" in text
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors"]  # no temp files
    mask = os.umask(0)
    os.umask(mask)
    for name in os.listdir(out):  # readable as any new file is, not mkstemp's 0600
        assert os.stat(out / name).st_mode & 0o777 == 0o666 & ~mask
    config = json.loads((out / "config.json").read_text())
    if saved == "checkpoint":
        assert config["pretrained_cfg"]["mean"] == [0.5, 1.0, 2.0]
        assert config["pretrained_cfg"]["std"] == [3.0, 4.0, 5.0]
    assert config["minigrad_vit"]["normalize"] == ("mean-std" if saved == "checkpoint" else "none")
    state = st.load_file(str(out / "model.safetensors"))
    assert state["blocks.0.mlp.fc1.weight"].dtype == np.float32
    assert_same_bits(model, from_timm(state, config))
    code, text, err = run(["import", out, "--out", tmp_path / "back.npz"], capsys)
    assert (code, err) == (0, "") and "back.npz" in text
    back = TinyViT.load(tmp_path / "back.npz")
    assert_same_bits(model, back)
    if saved == "checkpoint":
        np.testing.assert_array_equal(back.normalizer.mean, [0.5, 1.0, 2.0])
        np.testing.assert_array_equal(back.normalizer.std, [3.0, 4.0, 5.0])
    else:
        assert back.normalizer is None


@needs_st
def test_export_replaces_links_in_the_folder_without_writing_through_them(tmp_path, capsys):
    perturbed_tinyvit(CFGS[0]).save(tmp_path / "m.npz")
    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    victim.write_text("keep")
    os.symlink(victim, out / "config.json")
    assert run(["export", tmp_path / "m.npz", "--to", "timm", "--out", out], capsys)[0] == 0
    assert victim.read_text() == "keep" and not (out / "config.json").is_symlink()


@needs_st
def test_cli_refuses_bad_input_with_one_line(tmp_path, capsys):
    model_path = tmp_path / "m.npz"
    perturbed_tinyvit(CFGS[0]).save(model_path)
    export = ["export", model_path, "--to", "timm", "--out"]
    one_line_refusal(*run(["export", tmp_path / "nope.npz", "--to", "timm", "--out",
                         tmp_path / "o"], capsys)[::2], "nope.npz")
    one_line_refusal(*run(["export", model_path, "--to", "onnx", "--out", tmp_path / "o"],
                        capsys)[::2], "--to", "onnx")
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    one_line_refusal(*run(export + [tmp_path / "link"], capsys)[::2], "symbolic link")
    assert os.listdir(tmp_path / "real") == []
    (tmp_path / "file").write_text("x")
    one_line_refusal(*run(export + [tmp_path / "file"], capsys)[::2], "not a folder")
    one_line_refusal(*run(export + [tmp_path / "file" / "sub"], capsys)[::2], "not a writable")
    (tmp_path / "notnpz.npz").write_text("hello")
    one_line_refusal(*run(["export", tmp_path / "notnpz.npz", "--to", "timm", "--out",
                         tmp_path / "o"], capsys)[::2], "notnpz.npz")

    imp = ["import", tmp_path / "t", "--out", tmp_path / "back.npz"]
    one_line_refusal(*run(imp, capsys)[::2], "does not exist")
    assert run(export + [tmp_path / "t"], capsys)[0] == 0
    config = json.loads((tmp_path / "t" / "config.json").read_text())
    (tmp_path / "t" / "config.json").write_text(json.dumps(with_args(config, act_layer="gelu")))
    one_line_refusal(*run(imp, capsys)[::2], "act_layer")
    (tmp_path / "t" / "config.json").write_text('{"embed_dim": NaN}')
    one_line_refusal(*run(imp, capsys)[::2], "config.json", "JSON")
    (tmp_path / "t" / "config.json").write_text(json.dumps(config))
    (tmp_path / "t" / "model.safetensors").write_bytes(b"\x08" + bytes(20))
    one_line_refusal(*run(imp, capsys)[::2], "model.safetensors")
    os.unlink(tmp_path / "t" / "model.safetensors")
    one_line_refusal(*run(imp, capsys)[::2], "model.safetensors", "no such file")
    assert not (tmp_path / "back.npz").exists()


def test_refusals_cut_names_and_values_from_files_short():
    state, config = to_timm(perturbed_tinyvit(CFGS[0]))
    assert len(refusal({**state, "x" * 10**6: np.zeros(1)}, config, "unknown")) < 300
    assert len(refusal(state, with_args(config, act_layer="y" * 10**6), "act_layer")) < 300


def test_blocks_map_by_index_and_their_count_must_match_the_depth():
    """A model holding its blocks as ``blocks.0.``, ``blocks.1.``, ... (as a deeper TinyViT
    may) maps block by block; a depth that disagrees with the blocks is refused."""
    from minigrad.nn import ModuleList
    from vit.model.block import Block

    model = perturbed_tinyvit(CFGS[0])
    del model.block
    model.blocks = ModuleList([Block(16, 2, 32, rng=np.random.default_rng(i)) for i in range(3)])
    model.config["depth"] = 3
    state, config = to_timm(model)
    assert config["model_args"]["depth"] == 3
    for i in range(3):
        np.testing.assert_array_equal(state[f"blocks.{i}.mlp.fc2.weight"],
                                      model.blocks[i].mlp.fc2.weight.data.T)
    assert not any(k.startswith("blocks.3") for k in state)
    model.config["depth"] = 2
    with pytest.raises(ValueError, match="depth 2"):
        to_timm(model)


def test_round_trip_depth_3_once_tinyvit_has_depth():
    import inspect
    if "depth" not in inspect.signature(TinyViT).parameters:
        pytest.skip("TinyViT has no depth parameter yet; this runs once it has")
    model = perturbed_tinyvit({**CFGS[2], "depth": 3})
    state, config = to_timm(model)
    assert config["model_args"]["depth"] == 3 and "blocks.2.attn.qkv.weight" in state
    assert_same_bits(model, from_timm(state, config))


@needs_st
@pytest.mark.parametrize("name", ["config.json", "model.safetensors"])
def test_import_refuses_a_fifo_in_place_of_either_file_without_blocking(tmp_path, capsys, name):
    model = perturbed_tinyvit(CFGS[0], np.float32)
    model.save(tmp_path / "m.npz")
    out = tmp_path / "timm"
    assert run(["export", tmp_path / "m.npz", "--to", "timm", "--out", out], capsys)[0] == 0
    (out / name).unlink()
    os.mkfifo(out / name)
    code, _, err = run(["import", out, "--out", tmp_path / "back.npz"], capsys)
    assert code == 2 and err.count("\n") == 1 and "regular" in err, err
    assert not (tmp_path / "back.npz").exists()


# ---- preprocessing through the folder, and the pair all or nothing --------------------------
@needs_st
def test_export_then_import_keeps_the_preprocessing_and_the_answers(tmp_path, capsys):
    import vit
    model = perturbed(CFGS[0], np.float32)
    checkpoint(tmp_path / "ck.npz", model, np.array([4.0]), np.array([6.0]))
    with np.load(tmp_path / "ck.npz") as f:  # a run's checkpoint holds its pixels' range
        arrays = {k: f[k] for k in f.files}
    np.savez(tmp_path / "ck.npz", **{**arrays, "input/range": np.array([0.0, 16.0])})
    assert run(["export", tmp_path / "ck.npz", "--to", "timm", "--out", tmp_path / "t"],
               capsys)[0] == 0
    assert run(["import", tmp_path / "t", "--out", tmp_path / "m.npz"], capsys)[0] == 0
    back, ours = vit.load(tmp_path / "m.npz"), vit.load(tmp_path / "ck.npz")
    assert back.input_range == ours.input_range == (0.0, 16.0)
    x = np.random.default_rng(0).uniform(0, 16, (20, 1, 8, 8))
    np.testing.assert_array_equal(back.predict(x, probabilities=True),
                                  ours.predict(x, probabilities=True))


@needs_st
def test_import_of_a_folder_that_states_no_preprocessing(tmp_path, capsys):
    state, config = to_timm(perturbed(CFGS[0], np.float32))
    folder = tmp_path / "t"
    folder.mkdir()
    st.save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(legacy(config)))  # an older export: null
    imp = ["import", folder, "--out", tmp_path / "m.npz"]
    one_line_refusal(*run(imp, capsys)[::2], "preprocessing is null", "--normalize none")
    assert not (tmp_path / "m.npz").exists()
    assert run(imp + ["--mean", "4.5", "--std", "6"], capsys)[0] == 0
    np.testing.assert_array_equal(TinyViT.load(tmp_path / "m.npz").normalizer.mean, [4.5])
    assert run(imp + ["--normalize", "none"], capsys)[0] == 0
    assert TinyViT.load(tmp_path / "m.npz").normalizer is None
    one_line_refusal(*run(imp + ["--mean", "1,2", "--std", "1,2"], capsys)[::2], "mean", "1 finite")
    one_line_refusal(*run(imp + ["--mean", "x"], capsys)[::2], "--mean", "'x'")


@needs_st
def test_a_pair_from_two_exports_is_refused(tmp_path, capsys):
    for name, seed in (("a", 0), ("b", 1)):
        perturbed(CFGS[0], seed=seed).save(tmp_path / f"{name}.npz")
        assert run(["export", tmp_path / f"{name}.npz", "--to", "timm", "--out",
                    tmp_path / name], capsys)[0] == 0
    os.replace(tmp_path / "b" / "model.safetensors", tmp_path / "a" / "model.safetensors")
    one_line_refusal(*run(["import", tmp_path / "a", "--out", tmp_path / "m.npz"], capsys)[::2],
                   "other weights", "weights_sha256")


@needs_st
def test_a_failed_export_leaves_the_previous_pair_whole(tmp_path, capsys, monkeypatch):
    perturbed(CFGS[0], seed=0).save(tmp_path / "a.npz")
    perturbed(CFGS[0], seed=1).save(tmp_path / "b.npz")
    out = tmp_path / "t"
    assert run(["export", tmp_path / "a.npz", "--to", "timm", "--out", out], capsys)[0] == 0
    before = {n: (out / n).read_bytes() for n in ("config.json", "model.safetensors")}
    real = os.replace

    def fail_on_config(src, dst):
        if str(dst).endswith("config.json"):
            raise OSError(28, "No space left on device")
        return real(src, dst)
    monkeypatch.setattr(os, "replace", fail_on_config)
    code, _, err = run(["export", tmp_path / "b.npz", "--to", "timm", "--out", out], capsys)
    monkeypatch.setattr(os, "replace", real)
    assert code == 1 and "unchanged" in err and err.count("\n") == 1, err
    assert {n: (out / n).read_bytes() for n in before} == before
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors"]
