"""vit.data: the bundled digits, user .npz and MNIST IDX files, the split, the position task;
labels a data set must not have (beyond uint64's signed range, a single class, more classes
than MAX_CLASSES, floats, bools) are refused naming the file."""
from __future__ import annotations

import gzip
import importlib.resources
import struct

import numpy as np
import pytest
from reliability_util import TINY, run_cli  # tests/reliability/, on sys.path (tests/conftest.py)

from vit.train.data import (
    DIGITS_PATH,
    load_data,
    load_digits,
    load_idx_folder,
    load_npz_dataset,
    position_task,
    read_idx,
    stratified_split,
)


# ---- the bundled digits ----------------------------------------------------------------------
def test_bundled_digits_are_the_uci_set_split_80_20_by_class():
    d = load_digits()
    assert d.num_classes == 10 and d.image_shape == (1, 8, 8)
    assert len(d.x_train) + len(d.x_test) == 1797
    assert (len(d.x_train), len(d.x_test)) == (1438, 359)
    for x in (d.x_train, d.x_test):
        assert x.min() == 0 and x.max() == 16 and np.array_equal(x, np.round(x))
    per_class = np.bincount(d.y_test, minlength=10) / (np.bincount(d.y_train, minlength=10)
                                                      + np.bincount(d.y_test, minlength=10))
    assert np.all(np.abs(per_class - 0.2) < 0.01)


def test_load_digits_docstring_states_the_split_it_loads():
    import re
    data = load_digits()
    train, test = re.search(r"([\d,]+) train / ([\d,]+) test", load_digits.__doc__).groups()
    assert (int(train.replace(",", "")), int(test.replace(",", ""))) == \
        (len(data.x_train), len(data.x_test))


def test_bundled_digits_are_small_uint8_and_package_data():
    assert DIGITS_PATH.stat().st_size < 100_000
    with np.load(DIGITS_PATH, allow_pickle=False) as f:
        assert sorted(f.files) == ["x", "x_test", "y", "y_test"]
        assert all(f[k].dtype == np.uint8 for k in f.files)
    assert importlib.resources.files("vit").joinpath("data/digits.npz").is_file()
    assert importlib.resources.files("vit").joinpath("data/README.md").is_file()


def test_stratified_split_is_seeded_disjoint_and_stratified():
    y = np.repeat(np.arange(3), [10, 20, 50])
    train, test = stratified_split(y, 0.2, seed=3)
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(len(y)))
    assert np.bincount(y[test]).tolist() == [2, 4, 10]
    again = stratified_split(y, 0.2, seed=3)
    assert np.array_equal(again[1], test)
    assert not np.array_equal(stratified_split(y, 0.2, seed=4)[1], test)


# ---- user .npz -------------------------------------------------------------------------------
def _save(path, **arrays):
    np.savez(path, **arrays)
    return path


def test_npz_without_test_split_is_split_and_channels_added(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (100, 6, 6)).astype(np.uint8)
    y = np.arange(100) % 4
    d = load_npz_dataset(_save(tmp_path / "d.npz", x=x, y=y))
    assert d.image_shape == (1, 6, 6) and d.num_classes == 4
    assert (len(d.x_train), len(d.x_test)) == (80, 20)
    assert d.x_train.dtype == np.float32 and d.y_train.dtype == np.int64


def test_npz_with_test_split_and_channels(tmp_path):
    x = np.zeros((10, 3, 4, 4), np.float64)
    path = _save(tmp_path / "d.npz", x=x, y=np.arange(10) % 2, x_test=x[:3],
                 y_test=np.array([0.0, 1.0, 2.0]))  # whole-valued float labels are accepted
    d = load_data(path)
    assert d.image_shape == (3, 4, 4) and len(d.x_test) == 3 and d.num_classes == 3


@pytest.mark.parametrize("arrays, message", [
    (dict(x=np.zeros((4, 4, 4))), "no 'y'"),
    (dict(x=np.zeros((4, 4, 4)), y=np.zeros(5, int)), "5 labels for 4 images"),
    (dict(x=np.zeros((4, 4, 4)), y=np.array([0, 1, 0.5, 1])), "not integers"),
    (dict(x=np.zeros((4, 4, 4)), y=np.array(["a", "b", "a", "b"])), "expected integer"),
    (dict(x=np.zeros((4, 4, 4)), y=np.array([0, 1, -1, 1])), ">= 0"),
    (dict(x=np.zeros((4, 4, 5)), y=np.array([0, 1, 0, 1])), "square"),
    (dict(x=np.zeros((4, 16)), y=np.array([0, 1, 0, 1])), "(N, H, W)"),
    (dict(x=np.full((4, 4, 4), np.nan), y=np.array([0, 1, 0, 1])), "NaN"),
    (dict(x=np.zeros((4, 4, 4)), y=np.array([0, 1, 0, 1]), x_test=np.zeros((1, 4, 4))),
     "both or neither"),
    (dict(x=np.zeros((4, 4, 4)), y=np.array([0, 1, 0, 1]), x_test=np.zeros((2, 5, 5)),
          y_test=np.array([0, 1])), "the same (C, H, W)"),
])
def test_npz_errors_are_clear(tmp_path, arrays, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_npz_dataset(_save(tmp_path / "bad.npz", **arrays))


def test_corrupt_truncated_and_pickled_npz_are_refused(tmp_path):
    (tmp_path / "junk.npz").write_bytes(b"this is not a zip file")
    with pytest.raises(ValueError, match="junk.npz: "):  # (vit.io.npz.load_npz's wording)
        load_data(tmp_path / "junk.npz")
    good = _save(tmp_path / "good.npz", x=np.zeros((8, 4, 4)), y=np.arange(8) % 2)
    (tmp_path / "cut.npz").write_bytes(good.read_bytes()[:200])
    with pytest.raises(ValueError, match="npz"):
        load_data(tmp_path / "cut.npz")
    np.savez(tmp_path / "obj.npz", x=np.zeros((2, 4, 4)), y=np.array([0, "a"], dtype=object))
    with pytest.raises(ValueError, match="pickled"):
        load_data(tmp_path / "obj.npz")
    with pytest.raises(ValueError, match="no such file"):
        load_data(tmp_path / "missing.npz")


# ---- MNIST IDX -------------------------------------------------------------------------------
def _idx(array: np.ndarray, code: int = 0x08) -> bytes:
    return struct.pack(">HBB", 0, code, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape) \
        + array.astype(array.dtype.newbyteorder(">")).tobytes()


def _write_mnist(folder, n=50, size=6, test=True, gz=True):
    rng = np.random.default_rng(1)
    folder.mkdir(exist_ok=True)
    parts = {"train": n} | ({"t10k": n // 5} if test else {})
    for prefix, count in parts.items():
        for kind, array in (("images-idx3", rng.integers(0, 256, (count, size, size))),
                            ("labels-idx1", np.arange(count) % 10)):
            data = _idx(array.astype(np.uint8))
            name = folder / f"{prefix}-{kind}-ubyte"
            if gz:
                with gzip.open(f"{name}.gz", "wb") as f:
                    f.write(data)
            else:
                name.write_bytes(data)
    return folder


@pytest.mark.parametrize("gz", [True, False])
def test_idx_folder_gz_or_not(tmp_path, gz):
    d = load_data(_write_mnist(tmp_path / "mnist", gz=gz))
    assert (len(d.x_train), len(d.x_test)) == (50, 10)
    assert d.image_shape == (1, 6, 6) and d.num_classes == 10
    raw = read_idx(next((tmp_path / "mnist").glob("train-images*")))
    assert raw.dtype == np.uint8 and np.array_equal(raw, d.x_train[:, 0])


def test_idx_folder_without_test_files_is_split(tmp_path):
    d = load_idx_folder(_write_mnist(tmp_path / "m", n=100, test=False))
    assert (len(d.x_train), len(d.x_test)) == (80, 20)


def test_idx_reads_other_element_types(tmp_path):
    a = np.arange(6, dtype=np.int32).reshape(2, 3) - 3
    (tmp_path / "a.idx").write_bytes(_idx(a, 0x0C))
    assert np.array_equal(read_idx(tmp_path / "a.idx"), a)


def test_idx_errors_are_clear(tmp_path):
    folder = _write_mnist(tmp_path / "m", gz=False)
    images = folder / "train-images-idx3-ubyte"
    good = images.read_bytes()
    images.write_bytes(b"\x12\x34" + good[2:])
    with pytest.raises(ValueError, match="bad magic number"):
        load_idx_folder(folder)
    images.write_bytes(good[:-7])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_idx_folder(folder)
    images.write_bytes(good)
    (folder / "train-labels-idx1-ubyte").write_bytes(_idx(np.zeros(49, np.uint8)))
    with pytest.raises(ValueError, match="50 images but .* 49 labels"):
        load_idx_folder(folder)
    (folder / "train-labels-idx1-ubyte").write_bytes(_idx(np.zeros((50, 2), np.uint8)))
    with pytest.raises(ValueError, match="expected 1-D labels"):
        load_idx_folder(folder)
    (folder / "train-labels-idx1-ubyte").unlink()
    with pytest.raises(ValueError, match="no train-labels"):
        load_idx_folder(folder)
    (tmp_path / "gzfolder").mkdir()
    (tmp_path / "gzfolder" / "train-images-idx3-ubyte.gz").write_bytes(b"not gzip")
    (tmp_path / "gzfolder" / "train-labels-idx1-ubyte.gz").write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="decompressed"):
        load_idx_folder(tmp_path / "gzfolder")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no train-images"):
        load_data(tmp_path / "empty")


# ---- the position task -----------------------------------------------------------------------
def test_position_task_label_is_where_the_blob_is():
    d = position_task(n_train=400, n_test=100, img_size=8, patch_size=4, noise=0.1, seed=5)
    assert d.num_classes == 4 and d.image_shape == (1, 8, 8)
    patches = d.x_train[:, 0].reshape(-1, 2, 4, 2, 4).sum(axis=(2, 4)).reshape(-1, 4)
    assert np.array_equal(np.argmax(patches, axis=1), d.y_train)
    assert np.all(np.bincount(d.y_train) > 70)
    again = position_task(n_train=400, n_test=100, noise=0.1, seed=5)
    assert np.array_equal(again.x_test, d.x_test)
    assert position_task(patch_size=2).num_classes == 16


def test_position_task_patch_multisets_do_not_depend_on_the_label():
    """Swap the blob's patch with another: the image of one label becomes one of another, with
    the same set of patches; so a permutation-invariant model cannot beat chance."""
    d = position_task(n_train=8, n_test=1, noise=0.5, seed=0)
    from vit.model.tinyvit import patchify
    p = patchify(d.x_train, 4)
    for i, label in enumerate(d.y_train):
        other = (label + 1) % 4
        swapped = p[i].copy()
        swapped[[label, other]] = swapped[[other, label]]
        assert np.argmax(swapped.sum(axis=1)) == other
        assert sorted(map(tuple, swapped)) == sorted(map(tuple, p[i]))


# ---- labels ---------------------------------------------------------------------------------
def images(n=40):
    return np.random.default_rng(0).normal(size=(n, 8, 8)).astype(np.float32)


@pytest.mark.parametrize("y, words", [
    (np.array([0, 1] * 19 + [2**63, 1], np.uint64), [str(2**63)]),
    (np.array([0, 1] * 19 + [2**64 - 1, 1], np.uint64), [str(2**64 - 1)]),
    (np.full(40, 3), ["one class", "3"]),
    (np.full(40, 0), ["one class"]),
    (np.array([0, 1] * 19 + [10**6, 1]), ["1000000"]),
    (np.array([0, 1] * 19 + [10**10, 1]), ["10000000000"]),
    (np.array([0.0, 1.0] * 19 + [1e30, 1.0]), ["1e+30"]),
    (np.array([True, False] * 20), ["bool"]),
], ids=["uint64-2**63", "uint64-max", "all-3", "all-0", "label-1e6", "label-1e10",
        "float-1e30", "bool"])
def test_bad_labels_are_refused(tmp_path, y, words):
    from vit.train.data import load_npz_dataset
    path = tmp_path / "labels.npz"
    np.savez(path, x=images(len(y)), y=y)
    with pytest.raises(ValueError) as info:
        load_npz_dataset(path)
    message = str(info.value)
    assert "labels.npz" in message and "expected" in message, message
    for w in words:
        assert w in message, f"{message!r} does not name {w!r}"


def test_cli_train_on_a_single_class_is_exit_2(tmp_path, capsys):
    path = tmp_path / "one.npz"
    np.savez(path, x=images(), y=np.full(40, 5))
    status, _, err = run_cli(["train", "--data", path, "--out", tmp_path / "r", *TINY], capsys)
    assert status == 2 and err.count("\n") == 1 and "one class" in err, err


def test_max_class_count_is_a_stated_limit(tmp_path):
    from vit.train.data import MAX_CLASSES, load_npz_dataset
    path = tmp_path / "ok.npz"
    y = np.arange(40) % 2
    y[0] = MAX_CLASSES - 1
    np.savez(path, x=images(), y=y)
    assert load_npz_dataset(path).num_classes == MAX_CLASSES
    y[0] = MAX_CLASSES
    np.savez(path, x=images(), y=y)
    with pytest.raises(ValueError, match=f"{MAX_CLASSES - 1}"):
        load_npz_dataset(path)
