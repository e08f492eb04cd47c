"""Depth in training: ``TrainOptions.depth`` / ``vit train --depth``, checkpoints that record it
(and older ones without it, which mean one block), and the checks of both."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from vit.cli.main import main
from vit.model.config import MAX_DEPTH, limits, parameter_count
from vit.train.checkpoint import load_checkpoint
from vit.train.options import TrainOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
from hostile_util import small_checkpoint

SMALL = ["--dim", "8", "--heads", "2", "--mlp-dim", "8", "--quiet", "--epochs", "2",
         "--batch-size", "512", "--rotate", "0", "--scale", "0", "--translate", "0"]


def run(args, capsys):
    try:
        status = main([str(a) for a in args])
    except SystemExit as e:
        status = e.code
    return (status, *capsys.readouterr())


def test_train_depth_2_records_it_and_resumes_to_the_same_weights(tmp_path, capsys):
    assert run(["train", "--out", tmp_path / "whole", "--depth", 2, *SMALL], capsys)[0] == 0
    assert run(["train", "--out", tmp_path / "cut", "--depth", 2, "--stop-after", 1, *SMALL],
               capsys)[0] == 0
    status, _, err = run(["train", "--out", tmp_path / "cut", "--resume", "--quiet"], capsys)
    assert status == 0, err
    whole = load_checkpoint(tmp_path / "whole" / "checkpoint.npz")
    cut = load_checkpoint(tmp_path / "cut" / "checkpoint.npz")
    assert whole.model.config["depth"] == whole.options["depth"] == 2
    with np.load(tmp_path / "whole" / "checkpoint.npz") as f:
        assert json.loads(str(f["config"]))["depth"] == 2
        assert "param/blocks.1.mlp.fc2.weight" in f.files and "param/block.norm1.weight" \
            not in f.files
    a, b = whole.model.state_dict(), cut.model.state_dict()
    assert all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("value,words", [("0", ["--depth", "positive integer"]),
                                         ("two", ["--depth", "'two'"]),
                                         (str(MAX_DEPTH + 1), ["depth", str(MAX_DEPTH)])])
def test_bad_depth_on_the_command_line_is_one_line_and_status_2(tmp_path, capsys, value, words):
    status, _, err = run(["train", "--out", tmp_path / "run", "--depth", value, *SMALL], capsys)
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert all(w in err for w in words), err
    assert not (tmp_path / "run" / "checkpoint.npz").exists()


def test_resume_refuses_another_depth(tmp_path, capsys):
    assert run(["train", "--out", tmp_path, "--stop-after", 1, *SMALL], capsys)[0] == 0
    status, _, err = run(["train", "--out", tmp_path, "--resume", "--depth", 3, "--quiet"],
                         capsys)
    assert status == 2 and "--depth 3" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("depth,error", [(0, ValueError), (MAX_DEPTH + 1, ValueError),
                                         (2.0, TypeError), ("2", TypeError), (True, TypeError)])
def test_train_options_check_depth(depth, error):
    with pytest.raises(error, match=r"depth \(--depth\)"):
        TrainOptions(depth=depth)


def test_train_options_count_every_block_against_the_parameter_limit():
    per_depth = [parameter_count(dict(img_size=4, patch_size=4, in_chans=1, dim=64,
                                      num_heads=4, mlp_dim=128, num_classes=2,
                                      use_pos_emb=True, depth=d)) for d in (3, 4)]
    with limits(max_parameters=per_depth[1] - 1):
        TrainOptions(depth=3)
        with pytest.raises(ValueError, match="--depth 4"):
            TrainOptions(depth=4)


# ---- checkpoints -----------------------------------------------------------------------------
def test_a_checkpoint_from_before_depth_loads_as_one_block(tmp_path):
    path = small_checkpoint(tmp_path / "new.npz")
    with np.load(path) as f:
        arrays = dict(f)
    for key in ("config", "options"):
        entry = json.loads(str(arrays[key]))
        assert entry.pop("depth") == 1
        arrays[key] = np.array(json.dumps(entry))
    np.savez(tmp_path / "old.npz", **arrays)
    old, new = load_checkpoint(tmp_path / "old.npz"), load_checkpoint(path)
    assert old.model.config["depth"] == 1 and old.options["depth"] == 1
    assert old.options == new.options
    a, b = old.model.state_dict(), new.model.state_dict()
    assert list(a) == list(b) and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("change,words", [
    (dict(config={"depth": 2}), ["'config' depth=2", "'options' depth=1"]),
    (dict(options={"depth": 2}), ["'config' depth=1", "'options' depth=2"]),
    (dict(config={"depth": 0}), ["depth", "got 0"]),
    (dict(config={"depth": "2"}), ["depth", "'2'"]),
    (dict(config={"depth": 10**9}), ["depth", "1000000000"]),
    (dict(options={"depth": -1}), ["depth", "-1"]),
])
def test_a_checkpoint_whose_depth_is_bad_or_disagrees_is_refused_by_name(tmp_path, change, words):
    path = small_checkpoint(tmp_path / "bad.npz", **change)
    with pytest.raises(ValueError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert str(path) in message and all(w in message for w in words), message


def test_attention_maps_of_a_deeper_model_come_from_its_last_block():
    """vit plot's attention figure reads the last encoder block: at depth 2 the weights are
    those of blocks.1 applied to the output of blocks.0 (was: AttributeError 'block')."""
    import minigrad as mg
    from minigrad import Tensor
    from vit import TinyViT
    from vit.cli.attention_maps import cls_attention, token_attention_weights

    model = TinyViT(img_size=8, patch_size=4, in_chans=1, dim=8, num_heads=2, mlp_dim=16,
                    num_classes=3, seed=3, depth=2)
    x = np.random.default_rng(0).standard_normal((2, 1, 8, 8))
    weights = token_attention_weights(model, x)
    with mg.no_grad():
        first, last = model.encoder_blocks()
        h = last.norm1(first(model.tokens(Tensor(x))))
        _, expected = last.attn(h, return_weights=True)
    np.testing.assert_array_equal(weights, expected)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)
    assert cls_attention(model, x).shape == (2, 2, 2, 2)
