"""Export to timm's layout and import back, without torch: exact round trips, the config's
contents, and the refusals of from_timm and of ``vit export`` / ``vit import``."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from vit import TinyViT, from_timm, patchify
from vit.cli.main import main
from vit.model.normalizer import Normalizer
from vit.model.timm_convert import to_timm

from helpers import one_line_refusal, perturbed_tinyvit
from training_checkpoint import save_training_checkpoint

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
    model = perturbed_tinyvit(CFGS[1])
    _, config = to_timm(model, Normalizer(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])))
    assert int(22 * config.pop("mlp_ratio")) == 15  # timm's Block: int(dim * mlp_ratio)
    assert config == dict(
        img_size=6, patch_size=3, in_chans=3, num_classes=5, embed_dim=22, depth=1,
        num_heads=2, qkv_bias=False, proj_bias=True, qk_norm=False, init_values=None,
        class_token=True, global_pool="token", pos_embed="none", no_embed_class=False,
        reg_tokens=0, pre_norm=False, final_norm=True, fc_norm=False, act_layer="gelu_tanh",
        norm_eps=1e-5, preprocessing={"mean": [1.0, 2.0, 3.0], "std": [4.0, 5.0, 6.0]})
    assert to_timm(perturbed_tinyvit(CFGS[0]))[1]["pos_embed"] == "learn"


@pytest.mark.parametrize("dim", [7, 14, 22, 26, 49])
def test_mlp_ratio_gives_the_hidden_width_through_timms_formula(dim):
    for hidden in range(1, 130):  # 14 * (61 / 14) rounds below 61: the ratio must be nudged
        model = TinyViT(dim=dim, num_heads=1, mlp_dim=hidden)
        ratio = to_timm(model)[1]["mlp_ratio"]
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
    assert_same_bits(model, from_timm(state, {**config, "qkv_bias": True}))


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
def test_from_timm_names_the_setting_it_cannot_represent(change, words):
    state, config = to_timm(perturbed_tinyvit(CFGS[0]))
    refusal(state, {**config, **change}, *words)


@pytest.mark.parametrize("key", ["norm_eps", "act_layer"])
def test_a_missing_setting_means_timms_default(key):
    state, config = to_timm(perturbed_tinyvit(CFGS[0]))
    del config[key]
    refusal(state, config, key, "missing", "default")


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
    refusal(state, {**config, "qkv_bias": True}, "'blocks.0.attn.qkv.bias'", "nonzero")


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
    refusal(state, {**config, "embed_dim": 8}, "'cls_token'", "(1, 1, 8)")
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
    refusal(state, {**config, "depth": 3}, "depth", "3", "one block")


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
    want = {"mean": [0.5, 1.0, 2.0], "std": [3.0, 4.0, 5.0]} if saved == "checkpoint" else None
    assert config["preprocessing"] == want
    state = st.load_file(str(out / "model.safetensors"))
    assert state["blocks.0.mlp.fc1.weight"].dtype == np.float32
    assert_same_bits(model, from_timm(state, config))
    code, text, err = run(["import", out, "--out", tmp_path / "back.npz"], capsys)
    assert (code, err) == (0, "") and "back.npz" in text
    assert_same_bits(model, TinyViT.load(tmp_path / "back.npz"))


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
    (tmp_path / "t" / "config.json").write_text(json.dumps({**config, "act_layer": "gelu"}))
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
    assert len(refusal(state, {**config, "act_layer": "y" * 10**6}, "act_layer")) < 300


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
    assert config["depth"] == 3
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
    assert config["depth"] == 3 and "blocks.2.attn.qkv.weight" in state
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
