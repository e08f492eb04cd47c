"""``python -m vit predict``: classify PNG/JPEG pictures or ``.npy``/``.npz`` images.

A digits model (1x8x8 inputs) sees a picture the way the UCI data were made
(``vit.io.digit_image``, docs/predict.md); any other model takes pictures of exactly its
size. The classifying itself is ``TinyViT.predict`` (vit/model/predict.py).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import numpy as np

from ..io.digit_image import digit_features
from ..io.files import fspath
from ..io.images import open_picture, picture_pixels, read_array
from ..model.predict import as_batch, as_float32, predict, top_k
from ..train.data import MAX_DATA_ELEMENTS
from ..train.loading import open_model
from .args import add_preprocessing_options, explicit_of, positive_int

__all__ = ["is_digits_model", "read_input", "add_predict_command", "cmd_predict"]


def is_digits_model(config: dict) -> bool:
    """Whether the model takes the UCI digits' format (one channel, 8x8, values 0..16), so
    that a picture is reduced to it (vit.digit_image) rather than read pixel for pixel."""
    return config["in_chans"] == 1 and config["img_size"] == 8


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
        x = read_array(where)
        if x.ndim == 2 or (x.ndim == 3 and x.shape in ((C, S, S), (S, S, C))):
            x = x[None]  # one image
        return as_float32(as_batch(x, config, where), where)
    im, Image = open_picture(where)
    if is_digits_model(config):
        return digit_features(picture_pixels(im, Image, "L"), where).astype(np.float32)[None, None]
    if C not in (1, 3) or im.size != (S, S):
        raise ValueError(f"{where}: a {im.size[0]}x{im.size[1]} picture; expected {S}x{S} pixels "
                         f"{'(grayscale or RGB)' if C in (1, 3) else ''} for this model's "
                         f"{C}x{S}x{S} inputs{'' if C in (1, 3) else ' (give .npy arrays)'}")
    pixels = 255 * picture_pixels(im, Image, "L" if C == 1 else "RGB")
    return as_float32(as_batch(pixels.reshape(1, S, S, C), config, where), where)


# ---- the command -----------------------------------------------------------------------------
def add_predict_command(sub: Any) -> None:
    """Register ``predict`` on the subparsers of ``python -m vit``."""
    p = sub.add_parser("predict", help="classify PNG/JPEG pictures or .npy/.npz images",
                       description="Print the most probable classes of each image, one line per "
                       "image (docs/predict.md). A digits model (1x8x8 inputs) reduces a picture "
                       "of a handwritten digit of any size to the UCI digits' 8x8 format.")
    p.add_argument("checkpoint", metavar="MODEL",
                   help="a training checkpoint, its run folder or a model file")
    p.add_argument("files", nargs="+", metavar="FILE", help=".png, .jpg, .npy or .npz")
    p.add_argument("--top-k", type=positive_int, default=None, metavar="K",
                   help="classes shown per image (default 3, or every class if fewer)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--tta", action="store_true",
                   help="average the softmax over the image and its four half-pixel shifts")
    add_preprocessing_options(p)
    p.set_defaults(func=cmd_predict)


def cmd_predict(args: argparse.Namespace) -> int:
    model = open_model(args.checkpoint, explicit=explicit_of(args), what="vit predict MODEL").model
    K = model.config["num_classes"]
    k = min(3, K) if args.top_k is None else args.top_k
    if not 1 <= k <= K:
        raise ValueError(f"--top-k: got {k}; expected 1 to {K} (the model's classes)")
    names: list[tuple[str, int | None]] = []
    batches: list[np.ndarray] = []
    total = 0
    for path in args.files:  # every file is read and checked before anything is printed
        x = read_input(path, model.config)
        total += x.size
        if total > MAX_DATA_ELEMENTS:
            raise ValueError(f"{path}: the files hold more than {MAX_DATA_ELEMENTS:,} pixels "
                             "together; expected fewer images per call")
        names += [(str(path), None)] if len(x) == 1 else [(str(path), i) for i in range(len(x))]
        batches.append(x)
    classes, probs = top_k(predict(model, np.concatenate(batches), probabilities=True,
                                   tta=args.tta), k)
    for (name, index), c, p in zip(names, classes, probs, strict=True):
        if args.json:
            top = [{"class": int(ci), "probability": float(pi)}
                   for ci, pi in zip(c, p, strict=True)]
            print(json.dumps({"file": name, "index": index, "top": top}))
        else:
            label = name if index is None else f"{name}[{index}]"
            shown = "  ".join(f"{ci} ({100 * pi:.1f}%)" for ci, pi in zip(c, p, strict=True))
            print(f"{label}: {shown}")
    sys.stdout.flush()
    return 0
