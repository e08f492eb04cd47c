"""The training command end to end: learning, exact resume, reproducibility, errors, every
subcommand, and the position task (only position embeddings can solve it)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from vit.cli.attention_maps import cls_attention, token_attention_weights
from vit.cli.main import main
from vit.model.tinyvit import TinyViT
from vit.train.checkpoint import load_checkpoint
from vit.train.loop import train
from vit.train.optimizer import build_optimizer
from vit.train.options import TrainOptions
from vit.train.runfolder import read_metrics

SMALL = ["--dim", "16", "--heads", "2", "--mlp-dim", "32", "--quiet"]


def run(args, capsys=None):
    """main(args) -> (status, stdout, stderr); argparse's SystemExit becomes a status."""
    try:
        status = main([str(a) for a in args])
    except SystemExit as e:
        status = e.code
    out, err = capsys.readouterr() if capsys else ("", "")
    return status, out, err


def metrics(folder, drop=("seconds",)):
    rows = read_metrics(folder / "metrics.jsonl")
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


def params(folder):
    return load_checkpoint(folder / "checkpoint.npz").model.state_dict()


# ---- learning --------------------------------------------------------------------------------
def test_short_run_lowers_the_loss_and_beats_chance(tmp_path, capsys):
    # without the default augmentation, which slows the first epochs of this tiny model
    status, out, _ = run(["train", "--out", tmp_path, "--epochs", 4, "--rotate", 0, "--scale", 0,
                          "--translate", 0, *SMALL], capsys)
    assert status == 0 and "test accuracy" in out
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4]
    assert set(rows[0]) >= {"epoch", "train_loss", "train_acc", "test_loss", "test_acc", "lr",
                            "seconds"}
    assert rows[-1]["train_loss"] < 0.7 * rows[0]["train_loss"]
    assert rows[-1]["test_loss"] < rows[0]["test_loss"]
    assert rows[-1]["test_acc"] > 0.6  # chance is 0.1
    ck = load_checkpoint(tmp_path / "checkpoint.npz")
    assert ck.epoch == 4 and ck.model.dtype == np.float32 and ck.options["dim"] == 16
    with np.load(tmp_path / "checkpoint.npz", allow_pickle=False) as f:  # no pickle inside
        assert f["rng"].shape == () and f["rng"].dtype.kind == "U"
        assert {"optim/step_count", "sched/last_step", "norm/mean", "param/head.weight"} \
            <= set(f.files)


def test_resume_after_interruption_gives_the_same_weights(tmp_path, capsys):
    common = ["--epochs", 4, "--batch-size", 128, *SMALL]  # mixup on: the RNG state matters
    assert run(["train", "--out", tmp_path / "whole", *common], capsys)[0] == 0
    assert run(["train", "--out", tmp_path / "cut", "--stop-after", 2, *common], capsys)[0] == 0
    assert load_checkpoint(tmp_path / "cut" / "checkpoint.npz").epoch == 2
    status, out, _ = run(["train", "--out", tmp_path / "cut", "--resume", "--quiet"], capsys)
    assert status == 0 and "epoch 4/4" in out
    whole, cut = params(tmp_path / "whole"), params(tmp_path / "cut")
    assert all(np.array_equal(whole[k], cut[k]) for k in whole)
    assert metrics(tmp_path / "whole") == metrics(tmp_path / "cut")
    a = load_checkpoint(tmp_path / "whole" / "checkpoint.npz")
    b = load_checkpoint(tmp_path / "cut" / "checkpoint.npz")
    assert a.optim.keys() == b.optim.keys()
    assert all(np.array_equal(a.optim[k], b.optim[k]) for k in a.optim)
    assert a.rng.bit_generator.state == b.rng.bit_generator.state


def test_ctrl_c_mid_epoch_then_resume_gives_the_same_weights(tmp_path, capsys, monkeypatch):
    from vit.train import loop
    common = ["--epochs", 3, "--batch-size", 256, *SMALL]
    assert run(["train", "--out", tmp_path / "whole", *common], capsys)[0] == 0
    real_step, calls = loop._train_step, []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 9:  # in the middle of epoch 2 (6 steps per epoch)
            raise KeyboardInterrupt
        return real_step(*args)

    monkeypatch.setattr(loop, "_train_step", interrupted)
    status, _, err = run(["train", "--out", tmp_path / "cut", *common], capsys)
    assert status == 130 and "--resume" in err
    assert load_checkpoint(tmp_path / "cut" / "checkpoint.npz").epoch == 1
    monkeypatch.setattr(loop, "_train_step", real_step)
    assert run(["train", "--out", tmp_path / "cut", "--resume", "--quiet"], capsys)[0] == 0
    whole, cut = params(tmp_path / "whole"), params(tmp_path / "cut")
    assert all(np.array_equal(whole[k], cut[k]) for k in whole)
    assert metrics(tmp_path / "whole") == metrics(tmp_path / "cut")


def test_same_seed_same_metrics_other_seed_differs(tmp_path):
    opts = dict(dim=16, heads=2, mlp_dim=32, epochs=2, batch_size=128, schedule="cosine",
                optimizer="sgd", label_smoothing=0.1)
    quiet = dict(quiet=True, log=lambda _: None)
    train(TrainOptions(**opts, seed=3), tmp_path / "a", **quiet)
    train(TrainOptions(**opts, seed=3), tmp_path / "b", **quiet)
    train(TrainOptions(**opts, seed=4), tmp_path / "c", **quiet)
    assert metrics(tmp_path / "a") == metrics(tmp_path / "b")
    assert metrics(tmp_path / "a") != metrics(tmp_path / "c")


def test_probe_moves_only_the_head(tmp_path, capsys):
    assert run(["train", "--out", tmp_path, "--probe", "--epochs", 2, "--mixup", 0,
                "--label-smoothing", 0.1, "--dtype", "float64", *SMALL], capsys)[0] == 0
    trained = params(tmp_path)
    init = TinyViT(8, 4, 1, 16, 2, 32, 10, dtype=np.float64, seed=0).state_dict()
    moved = {k for k in init if not np.array_equal(init[k], trained[k])}
    assert moved == {"head.weight", "head.bias"}
    assert read_metrics(tmp_path / "metrics.jsonl")[-1]["test_acc"] > 0.3  # chance 0.1


def test_no_decay_norm_bias_decays_only_weight_matrices():
    model = TinyViT(8, 4, 1, 16, 2, 32, 10, dtype=np.float64, seed=0)
    options = TrainOptions(no_decay_norm_bias=True, weight_decay=0.5, lr=0.1, epochs=2)
    optimizer, schedule = build_optimizer(options, model, steps_per_epoch=3)
    decay, no_decay = optimizer.param_groups  # one AdamW, two parameter groups
    assert decay["weight_decay"] == 0.5 and no_decay["weight_decay"] == 0.0
    names = {id(p): n for n, p in model.named_parameters()}
    exempt = {names[id(p)] for p in no_decay["params"]}
    assert exempt == {n for n, p in model.named_parameters() if p.data.ndim == 1} | \
        {"cls_token", "pos_embed"}
    assert {names[id(p)] for p in decay["params"]} == \
        {n for n, p in model.named_parameters() if n not in exempt} >= {"head.weight"}
    before = model.state_dict()
    for _ in range(2):  # the schedule moves the lr; both groups follow it
        schedule.step()
    lr = optimizer.lr
    assert lr == schedule.lr_at(2)
    for p in model.parameters():  # zero gradients: AdamW only applies the decay
        p.grad = np.zeros_like(p.data)
    optimizer.step()
    after = model.state_dict()
    for name in before:
        factor = 1.0 if name in exempt else 1 - lr * 0.5
        np.testing.assert_allclose(after[name], before[name] * factor, rtol=1e-12)
    state = optimizer.state_dict()
    assert float(state["group.1.weight_decay"]) == 0.0
    again, _ = build_optimizer(options, model, steps_per_epoch=3)
    again.load_state_dict(state)
    assert again.lr == lr and again.step_count == 1
    assert [g["weight_decay"] for g in again.param_groups] == [0.5, 0.0]
    with pytest.raises(ValueError, match="adamw only"):
        build_optimizer(TrainOptions(no_decay_norm_bias=True, optimizer="sgd"), model, 3)


def test_no_decay_norm_bias_run_resumes_exactly(tmp_path, capsys):
    common = ["--epochs", 3, "--batch-size", 256, "--no-decay-norm-bias", *SMALL]
    assert run(["train", "--out", tmp_path / "whole", *common], capsys)[0] == 0
    assert run(["train", "--out", tmp_path / "cut", "--stop-after", 1, *common], capsys)[0] == 0
    assert run(["train", "--out", tmp_path / "cut", "--resume", "--quiet"], capsys)[0] == 0
    whole, cut = params(tmp_path / "whole"), params(tmp_path / "cut")
    assert all(np.array_equal(whole[k], cut[k]) for k in whole)
    assert metrics(tmp_path / "whole") == metrics(tmp_path / "cut")
    assert load_checkpoint(tmp_path / "cut" / "checkpoint.npz").options["no_decay_norm_bias"]


@pytest.mark.parametrize("pos_emb, solved", [(True, True), (False, False)])
def test_position_task_needs_position_embeddings(tmp_path, capsys, pos_emb, solved):
    args = ["train", "--task", "position", "--out", tmp_path, "--epochs", 8, "--mixup", 0,
            "--lr", 1e-2, *SMALL] + ([] if pos_emb else ["--no-pos-emb"])
    assert run(args, capsys)[0] == 0
    acc = read_metrics(tmp_path / "metrics.jsonl")[-1]["test_acc"]
    if solved:
        assert acc > 0.9
    else:  # 4 positions: chance is 0.25 (512 test images: one standard deviation is 0.02)
        assert abs(acc - 0.25) < 0.08


# ---- user data -------------------------------------------------------------------------------
def test_train_and_eval_on_a_user_npz(tmp_path, capsys):
    rng = np.random.default_rng(0)
    y = np.arange(120) % 3
    x = rng.normal(size=(120, 2, 4, 4)) + y[:, None, None, None]  # 2 channels, 4x4
    np.savez(tmp_path / "mine.npz", x=x, y=y)
    out = tmp_path / "run"
    assert run(["train", "--data", tmp_path / "mine.npz", "--patch-size", 2, "--epochs", 3,
                "--out", out, *SMALL], capsys)[0] == 0
    status, text, _ = run(["eval", out / "checkpoint.npz"], capsys)
    assert status == 0 and "accuracy" in text and "confusion" in text
    assert load_checkpoint(out / "checkpoint.npz").normalizer.mean.shape == (2,)


# ---- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ["train", "--lr", "-1"], ["train", "--batch-size", "0"], ["train", "--mixup", "-0.2"],
    ["train", "--epochs", "2.5"], ["train", "--label-smoothing", "1"], ["train", "--bogus"],
    ["train", "--optimizer", "adam"], ["train", "--lr", "nan"], ["frobnicate"],
])
def test_bad_options_exit_2_without_traceback(args, capsys):
    status, _, err = run(args, capsys)
    assert status == 2 and "error:" in err and err.count("\n") == 1


def test_bad_values_found_late_exit_2_with_one_line(tmp_path, capsys):
    status, _, err = run(["train", "--dim", 16, "--heads", 3, "--out", tmp_path / "r"], capsys)
    assert status == 2 and err.count("\n") == 1 and "--heads 3 does not divide" in err
    status, _, err = run(["train", "--patch-size", 3, "--out", tmp_path / "r2", "--quiet"], capsys)
    assert status == 2 and "does not divide the image size" in err


def test_unwritable_out_fails_before_training(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    status, out, err = run(["train", "--out", tmp_path / "file" / "run", *SMALL], capsys)
    assert status == 2 and "not a writable folder" in err and out == ""


def test_a_used_out_needs_resume_or_overwrite_and_resume_keeps_options(tmp_path, capsys):
    base = ["train", "--out", tmp_path, "--epochs", 2, "--stop-after", 1, *SMALL]
    assert run(base, capsys)[0] == 0
    status, _, err = run(base, capsys)
    assert status == 2 and "--resume" in err
    status, _, err = run(["train", "--out", tmp_path, "--resume", "--lr", "0.1"], capsys)
    assert status == 2 and "--lr 0.1 differs" in err
    assert run(["train", "--out", tmp_path / "none", "--resume"], capsys)[0] == 2
    assert run(base + ["--overwrite"], capsys)[0] == 0


def test_divergence_stops_with_a_message_and_keeps_the_last_checkpoint(tmp_path, capsys):
    status, _, err = run(["train", "--out", tmp_path, "--optimizer", "sgd", "--lr", "1e30",
                          "--schedule", "constant", "--epochs", 3, *SMALL], capsys)
    assert status == 1 and "loss became" in err and "last good checkpoint" in err
    ck = load_checkpoint(tmp_path / "checkpoint.npz")
    assert ck.epoch == 0 and all(np.isfinite(v).all() for v in ck.model.state_dict().values())


def test_corrupt_checkpoint_and_data_give_clear_errors(tmp_path, capsys):
    assert run(["train", "--out", tmp_path, "--epochs", 1, *SMALL], capsys)[0] == 0
    ckpt = tmp_path / "checkpoint.npz"
    good = ckpt.read_bytes()
    for bad in (good[: len(good) // 2], b"garbage" * 10, b""):
        ckpt.write_bytes(bad)
        status, _, err = run(["eval", ckpt], capsys)
        assert status == 2 and "checkpoint.npz" in err and "Traceback" not in err
    TinyViT(dim=16, num_heads=2).save(ckpt)  # a model file: eval takes it, on data it fits
    status, _, err = run(["eval", ckpt], capsys)
    assert status == 2 and "does not fit the model" in err and "give --data" in err
    assert run(["eval", tmp_path / "missing.npz"], capsys)[0] == 2
    (tmp_path / "data.npz").write_bytes(b"PK\x03\x04 broken zip")
    status, _, err = run(["train", "--data", tmp_path / "data.npz", "--out", tmp_path / "r",
                          *SMALL], capsys)
    assert status == 2 and "data.npz" in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()  # bad data fails before the run folder is made


def test_a_checkpoint_write_killed_midway_leaves_nothing_behind_on_resume(tmp_path, capsys):
    base = ["train", "--out", tmp_path, "--epochs", 2, *SMALL]
    assert run(base + ["--stop-after", 1], capsys)[0] == 0
    stale = tmp_path / ".tmp-abc123.npz"  # what a kill between mkstemp and rename leaves
    stale.write_bytes(b"half a checkpoint")
    assert run(base + ["--resume"], capsys)[0] == 0
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.npz", "metrics.jsonl"]


# ---- the other subcommands -------------------------------------------------------------------
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny finished run, shared by the eval and plot tests."""
    folder = tmp_path_factory.mktemp("run")
    assert run(["train", "--out", folder, "--epochs", 2, *SMALL]) == (0, "", "")
    return folder


def test_eval_and_attention(trained, capsys):
    tmp_path = trained
    status, out, _ = run(["eval", tmp_path / "checkpoint.npz"], capsys)
    assert status == 0 and "accuracy" in out and out.count("\n") >= 13  # 10 matrix rows
    ck = load_checkpoint(tmp_path / "checkpoint.npz")
    x = np.random.default_rng(0).normal(size=(3, 1, 8, 8)).astype(np.float32)
    w = token_attention_weights(ck.model, x)
    assert w.shape == (3, 2, 5, 5)
    np.testing.assert_allclose(w.sum(axis=-1), 1, rtol=1e-5)
    assert cls_attention(ck.model, x).shape == (3, 2, 2, 2)


def test_plot_writes_pngs(trained, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    status, out, _ = run(["plot", trained, "--images", 3, "--out", tmp_path], capsys)
    assert status == 0
    for name in ("curves.png", "confusion.png", "attention.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    status, _, err = run(["plot", tmp_path / "nothing"], capsys)
    assert status == 2 and "metrics.jsonl" in err


def test_plot_without_matplotlib_says_how_to_get_it(trained, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    status, _, err = run(["plot", trained], capsys)
    assert status == 1 and "pip install" in err and "Traceback" not in err


def test_attention_weights_reproduce_the_block(tmp_path):
    """The recomputed weights, applied to V and projected, give the block's attention output."""
    import minigrad as mg
    from minigrad import Tensor
    model = TinyViT(dim=16, num_heads=4, seed=1)
    x = np.random.default_rng(2).normal(size=(2, 1, 8, 8))
    w = token_attention_weights(model, x)
    with mg.no_grad():
        h = model.block.norm1(model.tokens(Tensor(x))).data
        expected = model.block.attn(Tensor(h)).data
    v = (h @ model.block.attn.qkv.weight.data)[..., 32:].reshape(2, 5, 4, 4).transpose(0, 2, 1, 3)
    heads = (w @ v).transpose(0, 2, 1, 3).reshape(2, 5, 16)
    np.testing.assert_allclose(heads @ model.block.attn.proj.weight.data, expected, atol=1e-12)


def test_gradcheck_command_passes_and_prints_a_table(capsys):
    status, out, _ = run(["gradcheck", "--dim", 8, "--heads", 2, "--mlp-dim", 8, "--batch", 2],
                         capsys)
    assert status == 0 and "gradcheck passed" in out
    for name in ("cls_token", "pos_embed", "block.attn.qkv.weight", "head.bias"):
        assert name in out


def test_gradcheck_command_checks_every_block_of_a_deeper_model(capsys):
    status, out, _ = run(["gradcheck", "--dim", 8, "--heads", 2, "--mlp-dim", 8, "--batch", 2,
                          "--depth", 2, "--fast"], capsys)
    assert status == 0 and "gradcheck passed" in out
    for name in ("blocks.0.attn.qkv.weight", "blocks.1.mlp.fc2.bias"):
        assert name in out
    assert "block.attn" not in out  # depth 2 names its blocks blocks.0 and blocks.1


@pytest.mark.slow  # a child process; fast: the in-process commands of this file
def test_python_dash_m_vit(tmp_path):
    done = subprocess.run([sys.executable, "-m", "vit", "train", "--batch-size", "0"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "vit", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "gradcheck" in done.stdout
    json.dumps(TrainOptions().__dict__)  # the options are JSON, as the checkpoint stores them


def test_ensemble_script_averages_runs(trained, capsys):
    """scripts/ensemble.py: a run averaged with itself scores what it scores alone."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "scripts" / "ensemble.py"
    spec = importlib.util.spec_from_file_location("ensemble_script", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main([str(trained), str(trained)]) == 0
    lines = capsys.readouterr().out.splitlines()
    alone = lines[0].split("test accuracy ")[1].split("%")[0]
    averaged = lines[2].split(": ")[1].split("%")[0]
    assert alone == averaged
    wrong = int(lines[0].split("(")[1].split(" of")[0])
    assert lines[3].startswith(f"missed by every run: {wrong} images")


@pytest.mark.parametrize("bad, words", [
    (["--optimizer", "sgd", "--momentum", "1e39"], ["momentum", "1e+39", "float32"]),
    (["--lr", "1e39"], ["lr", "1e+39", "float32"]),
    (["--weight-decay", "1e39"], ["weight_decay", "1e+39", "float32"]),
    (["--translate", "1e308"], ["translate", "1e+308"]),
    (["--shift", str(2**63 - 1)], ["shift", str(2**63 - 1)]),
])
def test_an_option_the_first_step_would_refuse_is_refused_before_any_write(bad, words,
                                                                           tmp_path, capsys):
    """Checked in the dtype it is used in, before the run folder exists; with --overwrite the
    finished run there is left as it was."""
    tiny = ["--dim", "8", "--heads", "2", "--mlp-dim", "8", "--epochs", "1", "--batch-size",
            "256", "--quiet"]
    status, _, err = run(["train", "--out", tmp_path / "new", *tiny, *bad], capsys)
    assert status == 2 and err.count("\n") == 1 and all(w in err for w in words), err
    assert not (tmp_path / "new").exists()
    done = tmp_path / "done"
    assert run(["train", "--out", done, *tiny], capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in done.iterdir()}
    status, _, err = run(["train", "--out", done, "--overwrite", *tiny, *bad], capsys)
    assert status == 2 and err.count("\n") == 1, err
    assert {p.name: p.read_bytes() for p in done.iterdir()} == before


def test_a_batch_beyond_the_activation_bound_is_refused_before_any_write(tmp_path):
    """Checked from the options and the data's shape, before the folder exists (it was
    checked by the first forward, after the augmentation had built the batch)."""
    from vit.model.config import activation_bytes, limits
    o = TrainOptions(dim=8, heads=2, mlp_dim=8, epochs=1, batch_size=256)
    per_image = activation_bytes(dict(img_size=8, patch_size=4, dim=8, num_heads=2,
                                      mlp_dim=8), 4)
    with limits(max_activation_bytes=100 * per_image):
        with pytest.raises(ValueError, match="--batch-size 256.*expected at most"):
            train(o, tmp_path / "run", quiet=True, log=lambda s: None)
    assert not (tmp_path / "run").exists()
