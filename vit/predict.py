"""Classifying raw images with a trained model: ``TinyViT.predict`` and ``python -m vit predict``.

``predict(model, images)`` feeds images exactly as ``vit eval`` feeds its test split: float32
pixels (what vit's data loaders make of any file), normalized by the model's ``normalizer``
(the checkpoint's, attached by ``vit.load``) into the model's dtype, then the logits in
batches of at most 512 images, their argmax the class. The command reads PNG/JPEG pictures
(Pillow, the ``images`` extra) or ``.npy``/``.npz`` arrays; a digits model (1x8x8 inputs)
sees a picture the way the UCI data were made (``vit.digit_image``, docs/predict.md).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import warnings
from typing import Any

import numpy as np

import minigrad as mg
from minigrad import Tensor, checks

from .data import MAX_DATA_ELEMENTS
from .digit_image import digit_features
from .files import fspath, open_regular, shorten
from .limits import activation_bytes, current_limits
from .model import TinyViT
from .normalizer import all_finite
from .npz import MAX_HEADER_BYTES, load_npz

__all__ = ["predict", "as_batch", "top_k", "read_input", "is_digits_model", "add_predict_command",
           "cmd_predict", "MAX_IMAGE_PIXELS", "MAX_ARRAY_BYTES", "BATCH"]

#: The most pixels a picture may declare in its header (checked before it is decoded): a
#: 4096 x 4096 photo. Pillow's own bomb limit (Image.MAX_IMAGE_PIXELS, 89 M) is left alone.
MAX_IMAGE_PIXELS = 1 << 24
#: The largest ``.npy`` or ``.npz`` file of images read (its bytes, and the arrays declared).
MAX_ARRAY_BYTES = 1 << 28
#: Images per forward pass, as ``vit.train.evaluate`` (fewer if the activations would exceed
#: ``vit.model.limits``), so that the logits are those of ``vit eval`` to the bit.
BATCH = 512


# ---- the Python API --------------------------------------------------------------------------
def as_batch(images, config: dict, where: str = "TinyViT.predict images") -> np.ndarray:
    """Raw images in any layout the model can take -> an (N, C, S, S) view of them: (N, S, S)
    for one channel, (N, C, S, S) (the model's own layout, preferred when both fit) or
    (N, S, S, C). Values must be real and finite."""
    C, S = config["in_chans"], config["img_size"]
    given = type(images).__name__
    x = np.asarray(images.data if isinstance(images, Tensor) else images)
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{where}: got {given} of dtype {x.dtype}; expected real pixel values")
    if x.ndim == 3 and C == 1 and x.shape[1:] == (S, S):
        x = x[:, None]
    elif x.ndim == 4 and x.shape[1:] != (C, S, S) and x.shape[1:] == (S, S, C):
        x = x.transpose(0, 3, 1, 2)
    if x.ndim != 4 or x.shape[1:] != (C, S, S) or x.shape[0] == 0:
        gray = f"(N, {S}, {S}), " if C == 1 else ""
        raise ValueError(f"{where}: got shape {x.shape}; expected {gray}(N, {C}, {S}, {S}) or "
                         f"(N, {S}, {S}, {C}) with N >= 1 for this model's {C}x{S}x{S} inputs")
    if x.dtype.kind == "f" and not all_finite(x):
        raise ValueError(f"{where}: got NaN or infinite pixels; expected finite values")
    return x


def _float32(x: np.ndarray, where: str) -> np.ndarray:
    """Pixels as float32, what vit's data loaders make of any file (so what ``vit eval``
    normalizes); refused if a value is beyond float32's range."""
    with np.errstate(over="ignore"):  # such a value is refused just below
        out = x.astype(np.float32)
    if x.dtype.kind == "f" and x.dtype.itemsize > 4 and not all_finite(out):
        raise ValueError(f"{where}: got pixels beyond float32's range; expected values within "
                         f"+-{np.finfo(np.float32).max:.3g}")
    return out


def predict(model: TinyViT, images, *, probabilities: bool = False) -> np.ndarray:
    """Classes (N,) int64 of raw ``images`` (any layout of :func:`as_batch`), the argmax of the
    logits; ``probabilities=True``: softmax(logits) (N, K) in float64 instead,
    p_k = exp(z_k - max z) / sum_j exp(z_j - max z).

    With a ``model.normalizer`` (a checkpoint's, from ``vit.load``) the images are taken as
    ``vit eval`` takes its test split: float32 pixels, normalized into the model's dtype,
    batches of ``BATCH``. Without one they are the model's inputs, cast to its dtype."""
    if not isinstance(probabilities, bool):
        raise TypeError(f"TinyViT.predict probabilities: got {probabilities!r}; expected True "
                        "or False")
    x = as_batch(images, model.config)
    if model.normalizer is not None:
        x = model.normalizer(_float32(x, "TinyViT.predict images"), model.dtype)
    else:
        x = x.astype(model.dtype)  # a copy: the caller's array is never touched
    per_image = activation_bytes(model.config, model.dtype.itemsize)
    step = max(1, min(BATCH, current_limits()[1] // per_image))
    with mg.no_grad():
        logits = np.concatenate([model(Tensor(x[i:i + step])).data
                                 for i in range(0, len(x), step)])
    if not probabilities:
        return np.argmax(logits, axis=1).astype(np.int64)
    z = logits.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def top_k(probabilities: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, K) probabilities -> the k most probable classes (N, k) and their probabilities,
    most probable first; equal probabilities in class order. 1 <= k <= K."""
    checks.integer("k", k, low=1, high=np.shape(probabilities)[-1], owner="top_k")
    order = np.argsort(-probabilities, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(probabilities, order, axis=1)


# ---- files -----------------------------------------------------------------------------------
def is_digits_model(config: dict) -> bool:
    """Whether the model takes the UCI digits' format (one channel, 8x8, values 0..16), so
    that a picture is reduced to it (vit.digit_image) rather than read pixel for pixel."""
    return config["in_chans"] == 1 and config["img_size"] == 8


def _pillow():
    try:
        from PIL import Image, ImageOps
    except ImportError:
        raise ImportError("reading PNG/JPEG pictures needs Pillow: pip install "
                          "'minigrad-vit[images]' (or give .npy/.npz arrays)") from None
    return Image, ImageOps


def _open_picture(path: str):
    """The decoded PNG or JPEG at ``path`` (EXIF orientation applied), its size checked from
    the header (at most ``MAX_IMAGE_PIXELS``) before a pixel is decoded."""
    Image, ImageOps = _pillow()
    with open_regular(path, "PNG/JPEG picture") as f:
        try:
            with warnings.catch_warnings():  # Pillow's bomb warning is a refusal here
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                im = Image.open(f, formats=("PNG", "JPEG"))
                w, h = im.size
                if w * h > MAX_IMAGE_PIXELS:
                    raise ValueError(f"{path}: a {w}x{h} picture ({w * h:,} pixels); expected "
                                     f"at most {MAX_IMAGE_PIXELS:,} pixels")
                im.load()
        except ValueError as e:
            if str(e).startswith(path):
                raise
            raise ValueError(f"{path}: not a readable PNG or JPEG picture ({e})") from None
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
            raise ValueError(f"{path}: too large a picture ({e}); expected at most "
                             f"{MAX_IMAGE_PIXELS:,} pixels") from None
        except Image.UnidentifiedImageError:
            raise ValueError(f"{path}: not a PNG or JPEG picture (unrecognized contents); "
                             "expected a .png, .jpg, .npy or .npz file") from None
        except (OSError, SyntaxError, EOFError, TypeError, IndexError, KeyError) as e:
            raise ValueError(f"{path}: not a readable PNG or JPEG picture, truncated or "
                             f"corrupt ({e})") from None
    return ImageOps.exif_transpose(im), Image


def _picture_pixels(im, Image, mode: str) -> np.ndarray:
    """``im`` as (H, W) (mode "L") or (H, W, 3) ("RGB") float64 in [0, 1]; transparent
    pixels composited over white (paper), 16-bit gray scaled from 0..65535."""
    if im.mode.startswith("I;16") or im.mode == "I":
        gray = np.clip(np.asarray(im, np.float64) / 65535, 0, 1)
        return gray if mode == "L" else np.repeat(gray[..., None], 3, axis=2)
    if "A" in im.mode or "transparency" in im.info:
        im = Image.alpha_composite(Image.new("RGBA", im.size, "white"), im.convert("RGBA"))
    return np.asarray(im.convert(mode), np.float64) / 255


def _read_npy(path: str) -> np.ndarray:
    """A ``.npy`` array of at most ``MAX_ARRAY_BYTES``, never unpickled: the file is read into
    memory first (so NumPy's parsers see bounded bytes), its header (version 1.0 or 2.0, at
    most ``vit.npz.MAX_HEADER_BYTES``) must declare exactly the data that follows it, and
    only then is the array built."""
    with open_regular(path, ".npy array") as f:
        data = f.read(MAX_ARRAY_BYTES + 1)
    if len(data) > MAX_ARRAY_BYTES:
        raise ValueError(f"{path}: larger than {MAX_ARRAY_BYTES:,} bytes; expected a smaller "
                         ".npy array of images")
    fmt, buf = np.lib.format, io.BytesIO(data)
    try:
        version = fmt.read_magic(buf)
        read = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f"format version {version}; expected 1.0 or 2.0")
        shape, _, dtype = read(buf, max_header_size=MAX_HEADER_BYTES)
        if dtype.hasobject:
            raise ValueError("it holds pickled objects, which are never loaded")
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        held = len(data) - buf.tell()
        if declared != held:
            raise ValueError(f"its header declares {shorten(shape)} of {dtype} ({declared:,} "
                             f"bytes) but {held:,} bytes follow")
        buf.seek(0)
        return np.load(buf, allow_pickle=False)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as e:
        raise ValueError(f"{path}: not a readable .npy array ({shorten(str(e), 80)}); expected "
                         "an array of numbers saved by np.save") from None


def _read_array(path: str) -> np.ndarray:
    if path.lower().endswith(".npy"):
        x = _read_npy(path)
    else:
        arrays = load_npz(path, max_bytes=MAX_ARRAY_BYTES)  # never unpickles, sizes bounded
        if len(arrays) != 1:
            raise ValueError(f"{path}: holds {len(arrays)} arrays {shorten(sorted(arrays))}; "
                             "expected exactly one array of images")
        (x,) = arrays.values()
    if x.dtype.kind not in "biuf":
        raise ValueError(f"{path}: an array of dtype {x.dtype}; expected real pixel values")
    return x


def read_input(path: str | os.PathLike, config: dict) -> np.ndarray:
    """The images in one file as raw (n, C, S, S) float32 for a model of ``config``: a PNG or
    JPEG picture (n = 1; for a digits model reduced to 8x8 counts 0..16, otherwise exactly
    S x S pixels 0..255, grayscale or RGB), or a ``.npy``/``.npz`` array of one image ((S, S),
    (C, S, S), (S, S, C)) or several (the layouts of :func:`as_batch`)."""
    where = fspath(path, "predict FILE")
    if not os.path.exists(where):
        raise FileNotFoundError(f"{where}: no such file; expected a PNG/JPEG picture or a "
                                ".npy/.npz array")
    C, S = config["in_chans"], config["img_size"]
    if where.lower().endswith((".npy", ".npz")):
        x = _read_array(where)
        if x.ndim == 2 or (x.ndim == 3 and x.shape in ((C, S, S), (S, S, C))):
            x = x[None]  # one image
        return _float32(as_batch(x, config, where), where)
    im, Image = _open_picture(where)
    if is_digits_model(config):
        return digit_features(_picture_pixels(im, Image, "L"), where).astype(np.float32)[None, None]
    if C not in (1, 3) or im.size != (S, S):
        raise ValueError(f"{where}: a {im.size[0]}x{im.size[1]} picture; expected {S}x{S} pixels "
                         f"{'(grayscale or RGB)' if C in (1, 3) else ''} for this model's "
                         f"{C}x{S}x{S} inputs{'' if C in (1, 3) else ' (give .npy arrays)'}")
    pixels = 255 * _picture_pixels(im, Image, "L" if C == 1 else "RGB")
    return _float32(as_batch(pixels.reshape(1, S, S, C), config, where), where)


# ---- the command -----------------------------------------------------------------------------
def add_predict_command(sub: Any) -> None:
    """Register ``predict`` on the subparsers of ``python -m vit``."""
    from .cli import positive_int  # the CLI's own option types (vit.cli imports this lazily)

    p = sub.add_parser("predict", help="classify PNG/JPEG pictures or .npy/.npz images",
                       description="Print the most probable classes of each image, one line per "
                       "image (docs/predict.md). A digits model (1x8x8 inputs) reduces a picture "
                       "of a handwritten digit of any size to the UCI digits' 8x8 format.")
    p.add_argument("checkpoint", metavar="CHECKPOINT",
                   help="a training checkpoint or a model saved by TinyViT.save")
    p.add_argument("files", nargs="+", metavar="FILE", help=".png, .jpg, .npy or .npz")
    p.add_argument("--top-k", type=positive_int, default=None, metavar="K",
                   help="classes shown per image (default 3, or every class if fewer)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=cmd_predict)


def cmd_predict(args: argparse.Namespace) -> int:
    from .loading import load

    model = load(args.checkpoint)
    K = model.config["num_classes"]
    k = min(3, K) if args.top_k is None else args.top_k
    if not 1 <= k <= K:
        raise ValueError(f"--top-k: got {k}; expected 1 to {K} (the model's classes)")
    names, batches, total = [], [], 0
    for path in args.files:  # every file is read and checked before anything is printed
        x = read_input(path, model.config)
        total += x.size
        if total > MAX_DATA_ELEMENTS:
            raise ValueError(f"{path}: the files hold more than {MAX_DATA_ELEMENTS:,} pixels "
                             "together; expected fewer images per call")
        names += [(str(path), None)] if len(x) == 1 else [(str(path), i) for i in range(len(x))]
        batches.append(x)
    classes, probs = top_k(predict(model, np.concatenate(batches), probabilities=True), k)
    for (name, index), c, p in zip(names, classes, probs):
        if args.json:
            print(json.dumps({"file": name, "index": index, "top": [
                {"class": int(ci), "probability": float(pi)} for ci, pi in zip(c, p)]}))
        else:
            label = name if index is None else f"{name}[{index}]"
            print(f"{label}: " + "  ".join(f"{ci} ({100 * pi:.1f}%)" for ci, pi in zip(c, p)))
    sys.stdout.flush()
    return 0
