"""A convolutional autoencoder of the 8x8 digits: how well do 16 numbers describe a digit?

The encoder halves the image twice with stride-2 convolutions down to a code of 4 channels
at 2x2 (16 numbers for 64 pixels); the decoder goes back up with a transposed convolution
(2x2 -> 4x4) and a nearest-neighbour upsampling followed by convolutions (4x4 -> 8x8). It
is trained on the bundled digits' training images (pixels scaled to 0..1, mean squared
error, Adam) and scored on the held-out test images, against two baselines computed from
the training images alone: predicting the mean image for every digit, and the best linear
code of the same size (PCA with 16 components).

    python examples/autoencoder_digits.py                    # about a minute on one core
    python examples/autoencoder_digits.py --epochs 5 --out /tmp/ae.json

Results go to ``--out`` (default ``runs/autoencoder_digits.json``; the run that
``docs/results.md`` reports is ``examples/results/autoencoder_digits.json``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from minigrad import F, Tensor, nn
from minigrad.optim import Adam
from vit.io.atomic import write_atomic
from vit.train.data import load_digits

CODE_CHANNELS = 4  # at 2x2: a code of 16 numbers


class ConvAutoencoder(nn.Module):
    """(B, 1, 8, 8) -> code (B, 4, 2, 2) -> reconstruction (B, 1, 8, 8) in (0, 1).

    Encoder: conv3x3(1->16) ReLU, conv3x3 stride 2 (16->32) ReLU [4x4], conv3x3 stride 2
    (32->4) [2x2, the code]. Decoder: transposed conv3x3 stride 2 (4->32, output_padding 1)
    ReLU [4x4], nearest upsampling x2 [8x8], conv3x3(32->16) ReLU, conv3x3(16->1), sigmoid.
    """

    def __init__(self, *, dtype=np.float32, seed: int = 0) -> None:
        super().__init__()
        rng = np.random.default_rng([seed, 5])
        self.enc1 = nn.Conv2d(1, 16, 3, padding=1, dtype=dtype, rng=rng)
        self.down1 = nn.Conv2d(16, 32, 3, stride=2, padding=1, dtype=dtype, rng=rng)
        self.down2 = nn.Conv2d(32, CODE_CHANNELS, 3, stride=2, padding=1, dtype=dtype, rng=rng)
        self.up1 = nn.ConvTranspose2d(CODE_CHANNELS, 32, 3, stride=2, padding=1,
                                      output_padding=1, dtype=dtype, rng=rng)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec1 = nn.Conv2d(32, 16, 3, padding=1, dtype=dtype, rng=rng)
        self.out = nn.Conv2d(16, 1, 3, padding=1, dtype=dtype, rng=rng)
        self.act = nn.ReLU()

    def encode(self, x: Tensor) -> Tensor:
        """x (B, 1, 8, 8) -> code (B, 4, 2, 2)."""
        h = self.act(self.enc1(x))
        h = self.act(self.down1(h))
        return self.down2(h)

    def decode(self, code: Tensor) -> Tensor:
        """code (B, 4, 2, 2) -> (B, 1, 8, 8) in (0, 1)."""
        h = self.act(self.up1(code))  # (B, 32, 4, 4)
        h = self.upsample(h)  # nearest: (B, 32, 8, 8)
        h = self.act(self.dec1(h))
        return F.sigmoid(self.out(h))

    def forward(self, x: Tensor) -> Tensor:
        return self.decode(self.encode(x))


def baselines(train: np.ndarray, test: np.ndarray, components: int) -> dict:
    """Test MSE of the mean training image, and of PCA fitted on the training images."""
    flat_train, flat_test = train.reshape(len(train), -1), test.reshape(len(test), -1)
    mean = flat_train.mean(axis=0)
    _, _, vt = np.linalg.svd(flat_train - mean, full_matrices=False)
    basis = vt[:components]  # (k, 64), orthonormal rows
    pca = (flat_test - mean) @ basis.T @ basis + mean
    return {"mean_image_mse": float(np.mean((flat_test - mean) ** 2)),
            "pca_mse": float(np.mean((flat_test - pca) ** 2))}


def train(epochs: int = 60, seed: int = 0, batch_size: int = 64, lr: float = 3e-3,
          limit: int | None = None) -> dict:
    """Train on the digits' training images (the first ``limit`` of them, if given); the
    per-epoch training loss and the test MSE, with the baselines."""
    digits = load_digits()
    x_train = (digits.x_train / 16.0).astype(np.float32)[:limit]
    x_test = (digits.x_test / 16.0).astype(np.float32)
    model = ConvAutoencoder(seed=seed)
    optimizer = Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng([seed, 1])
    losses = []
    t0 = time.perf_counter()
    for _ in range(epochs):
        order, total = rng.permutation(len(x_train)), 0.0
        for i in range(0, len(x_train), batch_size):
            xb = x_train[order[i:i + batch_size]]
            loss = F.mse_loss(model(Tensor(xb)), xb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
        losses.append(total / len(x_train))
    seconds = time.perf_counter() - t0
    model.eval()
    recon = model(Tensor(x_test)).data
    code_size = CODE_CHANNELS * 2 * 2
    return {"epochs": epochs, "seed": seed, "batch_size": batch_size, "lr": lr,
            "train_images": len(x_train), "test_images": len(x_test), "code_size": code_size,
            "parameters": sum(p.data.size for p in model.parameters()),
            "test_mse": float(np.mean((recon - x_test) ** 2)),
            **baselines(x_train, x_test, code_size), "train_loss": losses,
            "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/autoencoder_digits.json"))
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None,
                        help="train on the first LIMIT training images only (a quick run)")
    args = parser.parse_args(argv)
    if not 1 <= args.epochs <= 10_000:
        parser.error(f"--epochs: got {args.epochs}; expected 1..10000")
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit: got {args.limit}; expected at least 1")
    if not 0 <= args.seed < 2**63:
        parser.error(f"--seed: got {args.seed}; expected 0..2**63-1")
    try:  # the folder first: a run is not lost to a path that cannot be written
        args.out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        parser.error(f"--out: cannot make the folder {args.out.parent}: {e.strerror}")
    r = train(args.epochs, args.seed, limit=args.limit)
    text = json.dumps(r, indent=1)
    write_atomic(args.out, lambda f: f.write(text.encode()))
    print(f"test MSE {r['test_mse']:.5f} (pixels 0..1; mean image {r['mean_image_mse']:.5f}, "
          f"PCA-{r['code_size']} {r['pca_mse']:.5f}) after {r['epochs']} epochs, "
          f"{r['seconds']:.0f} s; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
