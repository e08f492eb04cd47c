"""Regenerate ``vit/data/digits.npz`` from the copy of the UCI digits that scikit-learn ships.

    pip install scikit-learn      # only for this script; not a dependency of the package
    python scripts/make_digits.py

Writes ``x`` / ``y`` (training part) and ``x_test`` / ``y_test`` (held-out part) as uint8,
compressed: a stratified 80/20 split made with NumPy by ``vit.train.data.stratified_split`` with the
fixed seed ``vit.train.data.SPLIT_SEED``. The split is stored, so it never depends on the NumPy
version that reads the file. Source and license: ``vit/data/README.md``.
"""
from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

from vit.train.data import DIGITS_PATH, SPLIT_SEED, TEST_FRACTION, stratified_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DIGITS_PATH, help="where to write the .npz")
    args = parser.parse_args()
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise SystemExit("scikit-learn is needed to regenerate the digits: "
                         "pip install scikit-learn") from None
    digits = load_digits()  # read from scikit-learn's package data, no download
    x = digits.images
    if x.shape != (1797, 8, 8) or x.min() < 0 or x.max() > 16 or not np.all(x == np.round(x)):
        raise SystemExit(f"unexpected digits: shape {x.shape}, range [{x.min()}, {x.max()}]")
    x = x.astype(np.uint8)
    y = digits.target.astype(np.uint8)
    train, test = stratified_split(y, TEST_FRACTION, SPLIT_SEED)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, x=x[train], y=y[train], x_test=x[test], y_test=y[test])
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()[:16]
    print(f"wrote {args.out}: {len(train)} train + {len(test)} test images, "
          f"{args.out.stat().st_size} bytes, sha256 {digest}...")
    print("test images per class:", np.bincount(y[test], minlength=10).tolist())


if __name__ == "__main__":
    main()
