"""Every command that takes a model takes every model file, through one loader: a training
checkpoint, its run folder, a model file (``TinyViT.save``, ``vit import``); a file of
another kind, or without the preprocessing it needs, gets one line and exit status 2."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from cli_util import run_cli as run

import vit
from vit.train.checkpoint import load_checkpoint
from vit.train.data import load_digits

SMALL = ["--dim", "16", "--heads", "2", "--mlp-dim", "32", "--quiet"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A tiny run (2 epochs), its checkpoint saved as a model file, and that model file as
    written before model files held their preprocessing (config and parameters only)."""
    from vit.cli.main import main
    folder = tmp_path_factory.mktemp("run")
    assert main([str(a) for a in ["train", "--out", folder, "--epochs", 2, *SMALL]]) == 0
    model = load_checkpoint(folder / "checkpoint.npz").model
    model.save(folder.parent / "model.npz")
    arrays = {f"param/{k}": v for k, v in model.state_dict().items()}
    arrays["config"] = np.array(json.dumps({**model.config, "dtype": model.dtype.name}))
    np.savez(folder.parent / "old.npz", **arrays)
    return {"run": folder, "checkpoint": folder / "checkpoint.npz",
            "model": folder.parent / "model.npz", "old": folder.parent / "old.npz"}


def one_line(status, err, *words):
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


def accuracy(out):
    return re.search(r"accuracy (\d+\.\d+)% \((\d+)/(\d+)\)", out).groups()


@pytest.mark.parametrize("kind", ["run", "model"])
def test_eval_takes_every_model_file_with_the_same_answer(files, kind, capsys):
    status, out, err = run(["eval", files[kind]], capsys)
    assert status == 0 and err == "", err
    expected = run(["eval", files["checkpoint"]], capsys)[1]
    assert accuracy(out) == accuracy(expected)
    assert out.splitlines()[-10:] == expected.splitlines()[-10:]  # the confusion matrix


def test_an_old_model_file_needs_its_preprocessing_given(files, capsys):
    one_line(*run(["eval", files["old"]], capsys)[::2], "old.npz", "saved before",
             "--normalize none")
    ck = load_checkpoint(files["checkpoint"])
    mean, std = (",".join(repr(float(v)) for v in a) for a in (ck.normalizer.mean,
                                                              ck.normalizer.std))
    status, out, err = run(["eval", files["old"], "--mean", mean, "--std", std], capsys)
    assert status == 0, err
    assert accuracy(out) == accuracy(run(["eval", files["checkpoint"]], capsys)[1])
    one_line(*run(["eval", files["checkpoint"], "--normalize", "none"], capsys)[::2],
             "checkpoint", "one place")


def test_eval_tta_reports_the_averaged_views(files, capsys):
    status, out, err = run(["eval", files["checkpoint"], "--tta"], capsys)
    assert status == 0, err
    assert "test-time augmentation" in out
    data = load_digits()
    pred = vit.load(files["checkpoint"]).predict(data.x_test, tta=True)
    correct = int((pred == data.y_test).sum())
    assert accuracy(out)[1:] == (str(correct), str(len(data.y_test)))


def test_predict_warns_on_another_scale_in_one_line(files, tmp_path, capsys):
    np.save(tmp_path / "x255.npy", load_digits().x_test[:4, 0] * 255 / 16)
    status, out, err = run(["predict", files["model"], tmp_path / "x255.npy"], capsys)
    assert status == 0 and len(out.splitlines()) == 4
    assert err.count("\n") == 1 and "vit predict: warning:" in err and "[0, 255]" in err \
        and "[0, 16]" in err, err


def test_predict_tta_prints_the_averaged_probabilities(files, tmp_path, capsys):
    x = load_digits().x_test[:3, 0]
    np.save(tmp_path / "x.npy", x)
    status, out, err = run(["predict", files["run"], tmp_path / "x.npy", "--tta", "--json",
                            "--top-k", "1"], capsys)
    assert status == 0, err
    probs = vit.load(files["checkpoint"]).predict(x, probabilities=True, tta=True)
    shown = [json.loads(line)["top"][0] for line in out.splitlines()]
    assert [s["class"] for s in shown] == probs.argmax(axis=1).tolist()
    np.testing.assert_allclose([s["probability"] for s in shown], probs.max(axis=1), rtol=0,
                               atol=4 * np.finfo(np.float64).eps)


@pytest.mark.parametrize("kind", ["checkpoint", "model"])
def test_gradcheck_checks_a_trained_model_at_its_own_parameters(files, kind, capsys):
    status, out, err = run(["gradcheck", files[kind], "--fast", "--batch", "2"], capsys)
    assert status == 0, out + err
    assert "2 images of" in out and "gradcheck passed" in out
    names = {line.split()[0] for line in out.splitlines()[2:-1]}
    assert {"head.weight", "cls_token", "block.attn.qkv.weight"} <= names


def test_gradcheck_per_op_checks_every_op_of_a_model_file_on_its_data(files, capsys):
    status, out, err = run(["gradcheck", files["model"], "--per-op", "--batch", "2"], capsys)
    assert status == 0, out + err
    assert "2 images of" in out and "gradcheck passed" in out and "0 unchecked)" in out
    ops = {line.split()[0] for line in out.splitlines()[2:-1]}
    assert {"linear", "layer_norm", "self_attention", "cross_entropy"} <= ops


def test_plot_takes_a_run_folders_checkpoint_and_refuses_a_model_file(files, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    one_line(*run(["plot", files["model"]], capsys)[::2], "a model file",
             "run folder or its checkpoint.npz")
    status, out, err = run(["plot", files["checkpoint"], "--out", tmp_path, "--images", 2],
                           capsys)
    assert status == 0, err
    assert (tmp_path / "curves.png").exists()


@pytest.mark.parametrize("command", ["eval", "predict", "gradcheck", "export"])
def test_a_file_that_is_no_model_gets_one_line(tmp_path, capsys, command):
    np.savez(tmp_path / "data.npz", x=np.zeros((2, 8, 8)), y=np.zeros(2, np.int64))
    argv = {"eval": ["eval", tmp_path / "data.npz"],
            "predict": ["predict", tmp_path / "data.npz", tmp_path / "data.npz"],
            "gradcheck": ["gradcheck", tmp_path / "data.npz"],
            "export": ["export", tmp_path / "data.npz", "--to", "timm", "--out", tmp_path / "o"]}
    one_line(*run(argv[command], capsys)[::2], "data.npz", "without 'format' or 'config'",
             "a training checkpoint, a model file or a run folder")
    one_line(*run(argv[command][:1] + [tmp_path] + argv[command][2:], capsys)[::2],
             "not a run folder")
