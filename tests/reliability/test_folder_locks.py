"""One lock for every folder a command writes (a training run, a cross-validation, a timm
export), held on the folder itself: deleting any file in it does not free it, and a second
command on a held folder is refused before it changes anything there."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from reliability_util import run_cli

from vit.model.tinyvit import TinyViT
from vit.train.runfolder import LOCK, RunFolderBusy, RunLock

CV = ["--dim", "8", "--heads", "2", "--mlp-dim", "8", "--epochs", "1", "--batch-size", "16",
      "--quiet", "--folds", "2", "--seeds", "0"]


def contents(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def small_set(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 10)
    x = rng.normal(size=(30, 8, 8)).astype(np.float32) + y[:, None, None]
    np.savez(tmp_path / "small.npz", x=x, y=y)
    return tmp_path / "small.npz"


def test_deleting_the_lock_file_does_not_free_the_folder(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    with RunLock(folder):
        os.unlink(folder / LOCK)
        with pytest.raises(RunFolderBusy, match="another run"):
            RunLock(folder).acquire()
        (folder / LOCK).write_text("planted")  # a file put there is no lock either
        with pytest.raises(RunFolderBusy):
            RunLock(folder).acquire()
    RunLock(folder).acquire().release()


def test_the_lock_is_released_with_its_holder_and_leaves_no_file(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    lock = RunLock(folder).acquire()
    lock.release()
    assert not list(folder.iterdir())
    RunLock(folder).acquire().release()


def test_crossval_overwrite_on_a_held_folder_changes_nothing(small_set, tmp_path, capsys):
    out = tmp_path / "cv"
    out.mkdir()
    (out / "fold0.npz").write_bytes(b"the running one's fold")
    (out / "crossval.json").write_text("{}")
    with RunLock(out):
        before = contents(out)
        status, _, err = run_cli(["crossval", "--data", small_set, "--out", out,
                                  "--overwrite", *CV], capsys)
        assert status == 2 and "another run" in err and err.count("\n") == 1, err
        assert contents(out) == before


def test_an_interrupted_crossval_overwrite_leaves_no_earlier_result(small_set, tmp_path,
                                                                    monkeypatch, capsys):
    from vit.train import crossval as cv
    out = tmp_path / "cv"
    assert run_cli(["crossval", "--data", small_set, "--out", out, *CV], capsys)[0] == 0
    assert (out / "crossval.json").exists()
    real, calls = cv.train, []

    def stop_at_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)
    monkeypatch.setattr(cv, "train", stop_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        cv.crossval(cv.TrainOptions(data=str(small_set), dim=8, heads=2, mlp_dim=8, epochs=1,
                                    batch_size=16, seed=0), out, folds=2, seeds=[0],
                    overwrite=True, quiet=True, log=lambda s: None)
    # the result of the earlier cross-validation is not left beside the new runs
    assert not (out / "crossval.json").exists()
    assert not (out / LOCK).exists()


def test_an_export_into_a_held_folder_changes_nothing(tmp_path, capsys):
    pytest.importorskip("safetensors")
    TinyViT(img_size=8, patch_size=4, dim=8, num_heads=2, mlp_dim=8, seed=0).save(
        tmp_path / "m.npz")
    out = tmp_path / "t"
    assert run_cli(["export", tmp_path / "m.npz", "--to", "timm", "--out", out], capsys)[0] == 0
    TinyViT(img_size=8, patch_size=4, dim=8, num_heads=2, mlp_dim=8, seed=1).save(
        tmp_path / "m2.npz")
    with RunLock(out):
        before = contents(out)
        status, _, err = run_cli(["export", tmp_path / "m2.npz", "--to", "timm", "--out", out],
                                 capsys)
        assert status == 2 and "another run" in err and err.count("\n") == 1, err
        assert contents(out) == before
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors"]
    json.loads((out / "config.json").read_text())


def test_a_training_run_refuses_a_folder_a_crossval_holds(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    with RunLock(out, "--out"):
        os.unlink(out / LOCK)
        status, _, err = run_cli(["train", "--out", out, "--dim", "8", "--heads", "2",
                                  "--mlp-dim", "8", "--epochs", "1", "--quiet"], capsys)
        assert status == 2 and "another run" in err, err
        assert not list(out.iterdir())
