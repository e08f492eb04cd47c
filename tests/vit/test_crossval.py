"""vit.crossval: stratified folds (a partition, balanced per class, deterministic) and the
``crossval`` command end to end on a tiny set (structure of crossval.json, test folds never
in a run's training data, normalization from the training folds only, resume, bad input)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from cli_util import run_cli

from vit.io.npz import load_npz
from vit.model.normalizer import Normalizer
from vit.train.checkpoint import load_checkpoint
from vit.train.crossval import merged, stratified_folds
from vit.train.data import load_digits
from vit.train.loop import evaluate
from vit.train.options import TrainOptions

LABELS = {
    "digits": load_digits().y_train,
    "unbalanced": np.repeat(np.arange(4), [50, 7, 13, 1]),
    "one class": np.zeros(23, np.int64),
    "gaps": np.array([9, 3, 3, 9, 9, 9, 0, 3, 9, 0, 0, 3] * 3),
}


@pytest.mark.parametrize("k", [2, 3, 5, 10])
@pytest.mark.parametrize("name", list(LABELS))
def test_folds_partition_the_examples_with_balanced_classes(name, k):
    y = LABELS[name]
    fold = stratified_folds(y, k, seed=4)
    assert fold.shape == y.shape and fold.dtype == np.int64
    tests = [np.flatnonzero(fold == i) for i in range(k)]
    everything = np.concatenate(tests)
    assert len(everything) == len(y) and np.array_equal(np.sort(everything), np.arange(len(y)))
    sizes = np.array([len(t) for t in tests])
    assert sizes.max() - sizes.min() <= 1
    for c in np.unique(y):
        per_fold = np.array([np.sum(y[t] == c) for t in tests])
        assert per_fold.max() - per_fold.min() <= 1, (c, per_fold)


def test_folds_are_a_deterministic_function_of_the_labels_and_the_seed():
    y = LABELS["digits"]
    before = y.copy()
    a, b = stratified_folds(y, 5, seed=1), stratified_folds(y, 5, seed=1)
    assert np.array_equal(a, b) and np.array_equal(y, before)
    assert not np.array_equal(a, stratified_folds(y, 5, seed=2))
    # shuffled within each class: not the round-robin of the original order
    assert not np.array_equal(a[y == 0], np.arange(np.sum(y == 0)) % 5)


@pytest.mark.parametrize("y, k, error, words", [
    (np.zeros((3, 2), np.int64), 2, ValueError, ["(N,)"]),
    (np.array([0.0, 1.0]), 2, ValueError, ["float64"]),
    (np.arange(10), 1, ValueError, ["--folds", "1", ">= 2"]),
    (np.arange(10), True, TypeError, ["--folds"]),  # a wrong type (minigrad.checks' rule)
    (np.arange(3), 4, ValueError, ["--folds 4", "3 examples"]),
])
def test_bad_fold_arguments_are_named(y, k, error, words):
    with pytest.raises(error) as info:
        stratified_folds(y, k)
    assert all(w in str(info.value) for w in words), str(info.value)


@pytest.fixture
def small_set(tmp_path):
    """60 images of 3 classes, 8x8, as a user .npz without a test part."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 20)
    x = rng.normal(size=(60, 8, 8)).astype(np.float32) + y[:, None, None]
    path = tmp_path / "small.npz"
    np.savez(path, x=x, y=y)
    return path


TINY = ["--dim", "8", "--heads", "2", "--mlp-dim", "8", "--epochs", "2", "--batch-size", "16",
        "--rotate", "5", "--quiet"]


run = run_cli


def test_a_tiny_crossval_run(small_set, tmp_path, capsys):
    out = tmp_path / "cv"
    status, stdout, err = run(["crossval", "--data", small_set, "--folds", "2", "--seeds", "3",
                               "--out", out, *TINY], capsys)
    assert status == 0, err
    result = json.loads((out / "crossval.json").read_text())
    assert stdout.strip() == result["summary"] and "2 folds x 1 seed" in stdout
    assert result["images"] == 60 and result["folds"] == 2 and result["seeds"] == [3]
    assert result["options"]["epochs"] == 2 and result["options"]["rotate"] == 5.0
    assert [(r["fold"], r["seed"]) for r in result["runs"]] == [(0, 3), (1, 3)]
    x_all = np.concatenate([load_npz(out / f"fold{i}.npz")["x_test"] for i in range(2)])
    assert len(x_all) == 60
    accs = []
    for r in result["runs"]:
        ck = load_checkpoint(out / r["run"] / "checkpoint.npz")
        assert ck.epoch == 2 and ck.options["seed"] == 3
        fold = load_npz(ck.options["data"])  # the run's own data file
        train_i, test_i = fold["train_index"], fold["test_index"]
        assert len(np.intersect1d(train_i, test_i)) == 0 and len(train_i) + len(test_i) == 60
        assert r["test_n"] == len(test_i) == 30
        # no test image among the training images (compared by content, not by index)
        seen = {row.tobytes() for row in fold["x"]}
        assert not any(row.tobytes() in seen for row in fold["x_test"])
        # normalization statistics of the training part only
        fitted = Normalizer.fit(fold["x"])
        assert np.array_equal(ck.normalizer.mean, fitted.mean)
        # the accuracy recorded is that of the checkpoint on its held-out fold
        _, acc, _ = evaluate(ck.model, ck.normalizer(fold["x_test"]), fold["y_test"])
        assert acc == r["test_acc"]
        accs.append(acc)
    assert result["mean"] == pytest.approx(np.mean(accs), abs=1e-12)
    assert result["std"] == pytest.approx(np.std(accs, ddof=1), abs=1e-12)
    assert result["per_seed"]["3"]["fold_acc"] == accs

    # a used OUT is refused before anything changes; --resume finds the runs complete
    mtime = (out / "crossval.json").stat().st_mtime_ns
    status, _, err = run(["crossval", "--data", small_set, "--folds", "2", "--seeds", "3",
                          "--out", out, *TINY], capsys)
    assert status == 2 and "--resume" in err and err.count("\n") == 1
    assert (out / "crossval.json").stat().st_mtime_ns == mtime
    status, stdout, err = run(["crossval", "--data", small_set, "--folds", "2", "--seeds", "3",
                               "--out", out, "--resume", *TINY], capsys)
    assert status == 0, err
    assert json.loads((out / "crossval.json").read_text())["runs"] == result["runs"]
    # other options than the saved runs': refused
    status, _, err = run(["crossval", "--data", small_set, "--folds", "2", "--seeds", "3",
                          "--out", out, "--resume", *TINY, "--lr", "0.1"], capsys)
    assert status == 2 and "options differ" in err


def test_the_bundled_digits_are_merged():
    data = load_digits()
    x, y = merged(data)
    assert len(y) == 1797 and np.array_equal(y[:len(data.y_train)], data.y_train)
    assert np.array_equal(x[len(data.y_train):], data.x_test)


@pytest.mark.parametrize("args, words", [
    (["--seeds", "1,1"], ["--seeds", "1,1"]),
    (["--seeds", "-1"], ["--seeds", "-1"]),
    (["--seeds", "a,b"], ["--seeds", "a,b"]),
    (["--seeds", ""], ["--seeds"]),
    (["--folds", "1"], ["--folds", "1"]),
    (["--seeds", f"0,{2**63}"], ["seed", str(2**63)]),  # beyond an int64: before fold 0 trains
    (["--patch-size", "3"], ["--patch-size 3"]),
])
def test_bad_crossval_input_exits_2_without_writing(args, words, tmp_path, capsys):
    out = tmp_path / "cv"
    status, _, err = run(["crossval", "--out", out, *TINY, *args], capsys)
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert all(w in err for w in words), err
    assert not out.exists()


def test_train_options_and_crossval_share_every_training_option():
    import argparse

    from vit.cli.main import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    dests = {a.dest for a in sub.choices["crossval"]._actions}
    fields = set(TrainOptions.__dataclass_fields__) - {"seed"}
    assert fields <= dests


def test_crossval_tta_reports_test_time_augmentation_beside_the_single_view(small_set, tmp_path,
                                                                            capsys):
    from vit.train.augment import affine
    out = tmp_path / "cv"
    status, stdout, err = run(["crossval", "--data", small_set, "--folds", "2", "--seeds", "3",
                               "--out", out, "--tta", *TINY], capsys)
    assert status == 0, err
    result = json.loads((out / "crossval.json").read_text())
    assert "test-time augmentation" in stdout and result["summary"] == stdout.strip()
    for i, r in enumerate(result["runs"]):
        ck = load_checkpoint(out / r["run"] / "checkpoint.npz")
        fold = load_npz(out / f"fold{i}.npz")
        x = ck.normalizer(fold["x_test"], ck.model.dtype)
        fill = ck.normalizer(np.zeros((1, 1, 1, 1)), np.float64)[0, :, 0, 0]
        probs = 0.0
        for dy, dx in [(0, 0), (0.5, 0), (-0.5, 0), (0, 0.5), (0, -0.5)]:
            moved = affine(x, np.broadcast_to(np.eye(2), (len(x), 2, 2)),
                           np.tile([-dy, -dx], (len(x), 1)), fill=fill)
            z = ck.model(moved).astype(np.float64)
            e = np.exp(z - z.max(axis=1, keepdims=True))
            probs = probs + e / e.sum(axis=1, keepdims=True)
        assert r["test_acc_tta"] == np.mean(probs.argmax(1) == fold["y_test"])
    assert result["tta"]["mean"] == np.mean([r["test_acc_tta"] for r in result["runs"]])


def test_crossval_holds_no_copy_of_the_data_while_its_runs_train(tmp_path, monkeypatch):
    """While a fold trains, crossval itself holds the labels and the fold assignment only:
    the merged set and the source are released once the fold files are written (they were a
    second and third copy beside the run's own)."""
    import gc
    import weakref

    from vit.train import crossval as cv
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(2), 200)
    np.savez(tmp_path / "d.npz", x=rng.normal(size=(400, 8, 8)).astype(np.float32), y=y)
    alive = []
    real_merged = cv.merged

    def tracked(data):
        x, labels = real_merged(data)
        alive.extend([weakref.ref(x), weakref.ref(data.x_train)])
        return x, labels

    def check_then_stop(*args, **kwargs):
        gc.collect()
        assert [r() is None for r in alive] == [True, True]
        raise KeyboardInterrupt
    monkeypatch.setattr(cv, "merged", tracked)
    monkeypatch.setattr(cv, "train", check_then_stop)
    with pytest.raises(KeyboardInterrupt):
        cv.crossval(TrainOptions(data=str(tmp_path / "d.npz"), dim=8, heads=2, mlp_dim=8,
                                 epochs=1, batch_size=64), tmp_path / "cv", folds=2, seeds=[0],
                    quiet=True, log=lambda s: None)
