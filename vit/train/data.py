"""Data for the training command: the bundled digits, user data, and a synthetic position task.

Every loader returns a :class:`Dataset` of raw images ``(N, C, H, W)`` (float32, unnormalized)
and integer labels. :class:`Normalizer` holds the per-channel mean and standard deviation of
the *training* pixels only; the training checkpoint stores them, so evaluation normalizes
new data exactly as training did.

* :func:`load_digits` -- the UCI "Optical Recognition of Handwritten Digits" set as
  scikit-learn ships it (1,797 8x8 images, 0..16, 10 classes), bundled in
  ``vit/data/digits.npz`` with a fixed stratified 80/20 split (see ``vit/data/README.md``).
* :func:`load_npz_dataset` -- a user ``.npz`` with ``x`` (N, H, W) or (N, C, H, W) and integer
  ``y``, optionally ``x_test`` and ``y_test`` (otherwise a stratified 80/20 split).
* :func:`load_idx_folder` -- a folder of MNIST IDX files (``train-images-idx3-ubyte[.gz]``...).
* :func:`position_task` -- label = where a fixed blob sits; only position embeddings can tell.

Nothing here unpickles: ``.npz`` files are read with ``allow_pickle=False``.
"""
from __future__ import annotations

import gzip
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minigrad import checks

from ..io.files import MAX_DECODED_BYTES, MAX_EXPANSION, decoded_limit, open_regular, read_into
from ..io.npz import load_npz
from ..model.normalizer import all_finite

__all__ = ["Dataset", "DIGITS_PATH", "SPLIT_SEED", "TEST_FRACTION", "MAX_CLASSES",
           "MAX_DATA_ELEMENTS", "stratified_split", "load_digits", "load_npz_dataset", "read_idx",
           "load_idx_folder", "load_data", "position_task"]

#: The bundled digits (package data).
DIGITS_PATH = Path(__file__).parents[1] / "data" / "digits.npz"
#: The seed of every train/test split made here (fixed, so the test set never moves).
SPLIT_SEED = 0
#: The held-out share of a split.
TEST_FRACTION = 0.2
#: The most classes a data set may have (labels in [0, MAX_CLASSES)): one label of 10**10
#: would otherwise build a head of 10**10 columns.
MAX_CLASSES = 65_536
#: The most pixels a data set may hold, train and test together, as the float32 it becomes
#: (2**28 elements: 1 GiB), and at most ``vit.io.files.decoded_limit`` of its files' sizes in
#: float32 bytes: a 259 KB .gz of 256 MB of zeros is refused before its 1 GB float32 copy.
MAX_DATA_ELEMENTS = 1 << 28


@dataclass
class Dataset:
    """Raw images (N, C, H, W) float32 and int64 labels in [0, num_classes), train and test."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    name: str

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(C, H, W) of one image."""
        return tuple(self.x_train.shape[1:])  # type: ignore[return-value]

    def describe(self) -> str:
        c, h, w = self.image_shape
        return (f"{self.name}: {len(self.x_train)} train / {len(self.x_test)} test images of "
                f"{c}x{h}x{w}, {self.num_classes} classes")


def _count(name: str, value, low: int = 1) -> int:
    return checks.integer(name, value, low=low)


def _path(path, where: str) -> Path:
    try:
        return Path(path)
    except TypeError:
        raise TypeError(f"{where}: got {type(path).__name__} {path!r}; expected a file or "
                        "folder path (str or os.PathLike)") from None


def stratified_split(y: np.ndarray, test_fraction: float = TEST_FRACTION,
                     seed: int = SPLIT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test), each sorted: round(test_fraction * n_c) random examples of every
    class c go to the test side. Deterministic for a given seed."""
    y = np.asarray(y)
    if y.ndim != 1 or y.dtype.kind not in "iu":
        raise ValueError(f"stratified_split y: got dtype {y.dtype} shape {y.shape}; expected "
                         "integer labels of shape (N,)")
    test_fraction = checks.real("test_fraction", test_fraction, low=0, high=1, low_open=True,
                                high_open=True, owner="stratified_split")
    rng = np.random.default_rng(seed)
    test = []
    for c in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == c))
        test.append(members[:round(test_fraction * len(members))])
    test_idx = np.sort(np.concatenate(test)) if test else np.zeros(0, np.int64)
    is_test = np.zeros(len(y), bool)
    is_test[test_idx] = True
    if is_test.all() or not is_test.any():
        raise ValueError(f"cannot split {len(y)} examples {1 - test_fraction:.0%}/"
                         f"{test_fraction:.0%} by class: too few examples per class")
    return np.flatnonzero(~is_test), test_idx


# ---- validation ------------------------------------------------------------------------------
def _images(x: np.ndarray, where: str) -> np.ndarray:
    """(N, H, W) or (N, C, H, W) real images -> (N, C, H, W), checked, not yet converted."""
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":
        raise ValueError(f"{where}: images have dtype {x.dtype}; expected real numbers")
    if x.ndim == 3:
        x = x[:, None]
    if x.ndim != 4 or 0 in x.shape:
        raise ValueError(f"{where}: images have shape {x.shape}; expected (N, H, W) or "
                         "(N, C, H, W) with every size positive")
    if x.shape[2] != x.shape[3]:
        raise ValueError(f"{where}: images are {x.shape[2]}x{x.shape[3]}; TinyViT needs square "
                         "images (H == W)")
    if x.dtype.kind == "f" and not all_finite(x):
        raise ValueError(f"{where}: images hold NaN or infinite values; expected finite pixels")
    return x


def _float32(x: np.ndarray, where: str) -> np.ndarray:
    """Checked images as float32, refused if a value is beyond float32 (inf once cast)."""
    wider = x.dtype.kind == "f" and x.dtype.itemsize > 4
    x = x.astype(np.float32)
    if wider and not all_finite(x):
        raise ValueError(f"{where}: images hold values beyond float32 (inf once converted); "
                         "expected pixels within float32's range")
    return x


def _labels(y: np.ndarray, n: int, where: str) -> np.ndarray:
    """Integer class labels (N,) in [0, MAX_CLASSES) -> int64, range-checked in the labels'
    own dtype before the cast (a uint64 label >= 2**63 would wrap to a negative int64).
    Whole-valued floats are accepted."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{where}: labels have shape {y.shape}; expected ({n},)")
    if len(y) != n:
        raise ValueError(f"{where}: {len(y)} labels for {n} images; expected one label per image")
    if y.dtype.kind == "f":
        if not (np.isfinite(y).all() and np.array_equal(y, np.round(y))):
            raise ValueError(f"{where}: labels are not integers (dtype {y.dtype} with fractional "
                             "or non-finite values); expected class indices 0, 1, ...")
    elif y.dtype.kind not in "iu":
        raise ValueError(f"{where}: labels have dtype {y.dtype}; expected integer class indices")
    if n and y.min() < 0:
        raise ValueError(f"{where}: labels include {y.min()}; expected class indices >= 0")
    if n and y.max() >= MAX_CLASSES:
        raise ValueError(f"{where}: labels include {y.max()}; expected class indices in [0, "
                         f"{MAX_CLASSES - 1}] (at most MAX_CLASSES = {MAX_CLASSES:,} classes)")
    return y.astype(np.int64)


def _dataset(x, y, x_test, y_test, name: str, file_bytes: int | None = None,
             image_shape: tuple | None = None) -> Dataset:
    """Validate, bound the size, split when there is no test set (before converting: one
    float32 copy of each part), and count the classes. ``file_bytes``: the size of the files
    read (the float32 data is bounded by ``decoded_limit`` of it); ``image_shape``: the
    (C, H, W) a model expects, refused before anything is converted."""
    x = _images(x, f"{name} x")
    y = _labels(y, len(x), f"{name} y")
    if x_test is not None:
        x_test = _images(x_test, f"{name} x_test")
        y_test = _labels(y_test, len(x_test), f"{name} y_test")
        if x_test.shape[1:] != x.shape[1:]:
            raise ValueError(f"{name}: test images are {x_test.shape[1:]} but training images "
                             f"are {x.shape[1:]}; expected the same (C, H, W)")
    elements = x.size + (0 if x_test is None else x_test.size)
    limit = MAX_DATA_ELEMENTS if file_bytes is None else \
        min(MAX_DATA_ELEMENTS, decoded_limit(file_bytes) // 4)
    if elements > limit:
        raise ValueError(f"{name}: {elements:,} pixels ({4 * elements:,} bytes as float32); "
                         f"expected at most {limit:,} (MAX_DATA_ELEMENTS, or "
                         f"{MAX_EXPANSION}x the files' {file_bytes or 0:,} bytes in float32 "
                         "bytes)")
    if image_shape is not None and tuple(x.shape[1:]) != tuple(image_shape):
        c, h, w = image_shape
        raise ValueError(f"{name}: images are {'x'.join(map(str, x.shape[1:]))}; expected "
                         f"{c}x{h}x{w} images, as the model was trained on")
    if x_test is None:
        train, test = stratified_split(y)
        x, y, x_test, y_test = x[train], y[train], x[test], y[test]
    x, x_test = _float32(x, f"{name} x"), _float32(x_test, f"{name} x_test")
    present = np.unique(y)
    if len(present) < 2:  # a one-class set would train to a trivial 100%
        raise ValueError(f"{name}: every training label is {present[0]} (one class); expected "
                         "at least two classes")
    num_classes = int(max(y.max(), y_test.max())) + 1
    return Dataset(x, y, x_test, y_test, num_classes, name)


# ---- loaders ---------------------------------------------------------------------------------
def load_npz_dataset(path: str | os.PathLike, name: str | None = None,
                     image_shape: tuple | None = None) -> Dataset:
    """A user ``.npz``: ``x`` and ``y``, optionally ``x_test`` and ``y_test`` (both or neither).

    Raises ValueError for a corrupt or pickled file, missing arrays, mismatched lengths or
    non-integer labels. Without a test set, a stratified 80/20 split with ``SPLIT_SEED``.
    """
    name = name or str(path)
    arrays = load_npz(path)
    missing = [k for k in ("x", "y") if k not in arrays]
    if missing:
        raise ValueError(f"{name}: no {' or '.join(repr(k) for k in missing)} array (found "
                         f"{sorted(arrays)}); expected 'x' images and 'y' labels")
    if ("x_test" in arrays) != ("y_test" in arrays):
        raise ValueError(f"{name}: has only one of 'x_test' and 'y_test'; expected both or neither")
    return _dataset(arrays["x"], arrays["y"], arrays.get("x_test"), arrays.get("y_test"), name,
                    os.path.getsize(path), image_shape)


def load_digits(image_shape: tuple | None = None) -> Dataset:
    """The bundled UCI digits: 1,438 train / 359 test 8x8 images, values 0..16, 10 classes."""
    if not DIGITS_PATH.exists():
        raise FileNotFoundError(f"{DIGITS_PATH}: the bundled digits are missing; reinstall the "
                                "package or regenerate them with scripts/make_digits.py")
    return load_npz_dataset(DIGITS_PATH, name="digits", image_shape=image_shape)


#: IDX element types: code -> big-endian dtype.
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | os.PathLike, max_bytes: int = MAX_DECODED_BYTES,
             as_itemsize: int = 1) -> np.ndarray:
    """One IDX file (gzip-compressed if its name ends in ``.gz``) as a native-endian array.

    Format: two zero bytes, a type code, the number of dimensions d, then d big-endian uint32
    sizes and the data, big-endian, row-major. The magic number is checked, the declared size
    is bounded by ``vit.io.files.decoded_limit(file size, max_bytes)`` before anything is
    allocated (at ``as_itemsize`` bytes an element if more: what it is converted to), and the
    file must hold exactly the declared data: it is read (decompressed) in
    chunks up to that size, so trailing bytes are refused without inflating them.
    """
    path = _path(path, "read_idx path")
    try:
        with open_regular(path, "IDX file") as raw_file:
            limit = decoded_limit(os.fstat(raw_file.fileno()).st_size, max_bytes)
            f = gzip.GzipFile(fileobj=raw_file, mode="rb") if path.suffix == ".gz" else raw_file
            with f:
                head = f.read(4)
                if len(head) < 4:
                    raise ValueError(f"{path}: {len(head)} bytes; too short for an IDX header "
                                     "(expected 4 magic bytes, the sizes, then the data)")
                zero, code, ndim = struct.unpack(">HBB", head)
                if zero != 0 or code not in _IDX_TYPES or ndim == 0:
                    raise ValueError(f"{path}: bad magic number 0x{head.hex()}; expected an IDX "
                                     "file (0x00000801 for labels, 0x00000803 for images of "
                                     "unsigned bytes)")
                sizes = f.read(4 * ndim)
                if len(sizes) < 4 * ndim:
                    raise ValueError(f"{path}: truncated IDX header ({4 + len(sizes)} bytes, "
                                     f"expected {4 + 4 * ndim})")
                shape = struct.unpack(f">{ndim}I", sizes)
                dtype = np.dtype(_IDX_TYPES[code])
                expected, span = dtype.itemsize, max(dtype.itemsize, as_itemsize)
                for n in shape:
                    expected *= n
                    span *= max(n, 1)  # (0, 2**32-1, 2**32-1) holds nothing, but no array
                if span > limit:       # has such a shape ("array is too big")
                    became = "" if span == expected else f", {span:,} as it is converted"
                    raise ValueError(f"{path}: declares shape {shape} of {dtype.str} "
                                     f"({expected:,} bytes{became}); expected at most "
                                     f"{limit:,} bytes "
                                     "(a corrupt or hostile header)")
                data = np.empty(shape, dtype)
                got = read_into(f, memoryview(data.reshape(-1).view(np.uint8)))
                if got < expected:
                    raise ValueError(f"{path}: {got} data bytes for shape {shape}; expected "
                                     f"{expected} (truncated or corrupt)")
                if f.read(1):
                    raise ValueError(f"{path}: more bytes follow the {expected:,} data bytes "
                                     f"of shape {shape}; expected exactly the declared data")
    except (OSError, EOFError, zlib.error) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{path}: cannot be read or decompressed ({e}); expected a readable "
                         "IDX file") from None
    if not dtype.isnative:  # big-endian on disk: swap in place, no second copy
        data = data.byteswap(inplace=True).view(dtype.newbyteorder("="))
    return data


def _find_idx(folder: Path, prefix: str, kind: str, dims: int) -> Path | None:
    for sep in ("-", "."):
        for ext in ("", ".gz"):
            path = folder / f"{prefix}-{kind}{sep}idx{dims}-ubyte{ext}"
            if path.exists():
                return path
    return None


def load_idx_folder(folder: str | os.PathLike, image_shape: tuple | None = None) -> Dataset:
    """MNIST-style IDX files: ``train-images-idx3-ubyte`` and ``train-labels-idx1-ubyte`` (each
    optionally ``.gz``), and optionally ``t10k-images-idx3-ubyte`` / ``t10k-labels-idx1-ubyte``
    as the test set (otherwise a stratified 80/20 split of the training files)."""
    folder = _path(folder, "load_idx_folder folder")
    parts, file_bytes = {}, 0
    for prefix in ("train", "t10k"):
        images = _find_idx(folder, prefix, "images", 3)
        labels = _find_idx(folder, prefix, "labels", 1)
        if (images is None) != (labels is None):
            have, lack = (images, "labels-idx1") if labels is None else (labels, "images-idx3")
            raise ValueError(f"{folder}: found {have.name} but no {prefix}-{lack}-ubyte[.gz]")
        if images is None:
            continue
        x, y = read_idx(images, as_itemsize=4), read_idx(labels)  # images become float32
        file_bytes += os.path.getsize(images) + os.path.getsize(labels)
        if x.ndim != 3:
            raise ValueError(f"{images}: {x.ndim}-D; expected 3-D images (magic 0x00000803)")
        if y.ndim != 1:
            raise ValueError(f"{labels}: {y.ndim}-D; expected 1-D labels (magic 0x00000801)")
        if len(x) != len(y):
            raise ValueError(f"{folder}: {images.name} holds {len(x)} images but {labels.name} "
                             f"holds {len(y)} labels; expected equal counts")
        parts[prefix] = (x, y)
    if "train" not in parts:
        raise ValueError(f"{folder}: no train-images-idx3-ubyte[.gz] and "
                         "train-labels-idx1-ubyte[.gz]; expected MNIST-style IDX files")
    test = parts.get("t10k", (None, None))
    return _dataset(*parts["train"], *test, name=str(folder), file_bytes=file_bytes,
                    image_shape=image_shape)


def load_data(path: str | os.PathLike | None, image_shape: tuple | None = None) -> Dataset:
    """``None`` -> the bundled digits; a ``.npz`` file; or a folder of IDX files. With
    ``image_shape`` (C, H, W), images of another shape are refused before any conversion
    (a checkpoint's model decides the shape: ``vit eval``, ``--resume``)."""
    if path is None:
        return load_digits(image_shape)
    path = _path(path, "load_data path")
    if path.is_dir():
        return load_idx_folder(path, image_shape)
    if not path.exists():
        raise ValueError(f"--data {path}: no such file or folder")
    return load_npz_dataset(path, image_shape=image_shape)


def position_task(n_train: int = 1024, n_test: int = 512, img_size: int = 8,
                  patch_size: int = 4, noise: float = 0.5, seed: int = SPLIT_SEED) -> Dataset:
    """Where is the blob? One class per patch position of an ``img_size`` image.

    Every image is Gaussian noise (std ``noise``) plus one fixed bump filling a whole patch,
    placed in the patch of the label (patch-aligned, row-major order). The set of patches is
    then distributed identically for every label: only *where* the bump sits differs, so a
    model without position embeddings (whose CLS output is invariant to permuting the patches)
    is at chance, 1 / (number of patches), and one with them can solve it.
    """
    n_train, n_test = _count("position_task n_train", n_train), _count("position_task n_test",
                                                                        n_test)
    img_size = _count("position_task img_size", img_size)
    patch_size = _count("position_task patch_size", patch_size)
    noise = checks.real("noise", noise, low=0, owner="position_task")
    if img_size % patch_size:
        raise ValueError(f"position task: patch size {patch_size} does not divide {img_size}; "
                         "expected a divisor of img_size")
    grid = img_size // patch_size
    k = grid * grid
    if k < 2:
        raise ValueError(f"position task: patch size {patch_size} leaves a single patch of "
                         f"{img_size}x{img_size} images; expected at least two patches")
    rng = np.random.default_rng(seed)
    bump = np.sin(np.pi * (np.arange(patch_size) + 0.5) / patch_size)
    bump = 2.0 * np.outer(bump, bump)

    def make(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, k, n)
        x = noise * rng.standard_normal((n, 1, img_size, img_size))
        r, c = (y // grid) * patch_size, (y % grid) * patch_size
        rows = r[:, None, None] + np.arange(patch_size)[None, :, None]
        cols = c[:, None, None] + np.arange(patch_size)[None, None, :]
        x[np.arange(n)[:, None, None], 0, rows, cols] += bump
        return x.astype(np.float32), y.astype(np.int64)

    x_train, y_train = make(n_train)
    x_test, y_test = make(n_test)
    return Dataset(x_train, y_train, x_test, y_test, k, "position")
