"""Figures of a training run (``python -m vit plot RUN_DIR``), drawn with matplotlib (Agg).

matplotlib is an optional extra (``pip install 'minigrad-vit[plot]'``); :func:`require_matplotlib`
raises a clear ImportError without it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .atomic import write_atomic

__all__ = ["require_matplotlib", "confusion_matrix", "plot_curves", "plot_confusion",
           "plot_attention"]

MISSING = ("matplotlib is not installed; `python -m vit plot` needs it: "
           "pip install 'minigrad-vit[plot]' (or pip install matplotlib)")


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or ImportError(MISSING)."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(MISSING) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, num_classes: int) -> np.ndarray:
    """(K, K) counts: row = true class, column = predicted class."""
    out = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(out, (np.asarray(y_true), np.asarray(y_pred)), 1)
    return out


def plot_curves(rows: list[dict], path: str | os.PathLike) -> Path:
    """Loss and accuracy per epoch, train and test, side by side."""
    plt = require_matplotlib()
    epochs = [r["epoch"] for r in rows]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(8, 3.2))
    for split, style in (("train", "-"), ("test", "--")):
        label = "train (augmented batches)" if split == "train" else split
        ax_loss.plot(epochs, [r[f"{split}_loss"] for r in rows], style, label=label)
        ax_acc.plot(epochs, [100 * r[f"{split}_acc"] for r in rows], style, label=label)
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy", title="loss", yscale="log")
    best = max(r["test_acc"] for r in rows)
    ax_acc.set(xlabel="epoch", ylabel="accuracy (%)",
               title=f"accuracy (final test {100 * rows[-1]['test_acc']:.1f}%, "
                     f"best {100 * best:.1f}%)")
    ax_acc.set_ylim(max(0.0, 100 * min(r["test_acc"] for r in rows[len(rows) // 4:]) - 5), 100.5)
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    return _save(fig, path)


def plot_confusion(matrix: np.ndarray, path: str | os.PathLike, title: str = "") -> Path:
    """The confusion matrix as a heat map with the counts written in."""
    plt = require_matplotlib()
    k = len(matrix)
    fig, ax = plt.subplots(figsize=(0.45 * k + 1.8, 0.45 * k + 1.4))
    ax.imshow(matrix, cmap="Blues")
    for i in range(k):
        for j in range(k):
            if matrix[i, j]:
                color = "white" if matrix[i, j] > matrix.max() / 2 else "black"
                ax.text(j, i, str(matrix[i, j]), ha="center", va="center", fontsize=7, color=color)
    ax.set(xticks=range(k), yticks=range(k), xlabel="predicted", ylabel="true",
           title=title or f"confusion ({np.trace(matrix)}/{matrix.sum()} right)")
    ax.tick_params(labelsize=7)
    return _save(fig, path)


def plot_attention(images: np.ndarray, maps: np.ndarray, labels: np.ndarray,
                   preds: np.ndarray, path: str | os.PathLike) -> Path:
    """Each image above the CLS token's attention over its patches (mean over heads)."""
    plt = require_matplotlib()
    n = len(images)
    fig, axes = plt.subplots(2, n, figsize=(1.5 * n, 3.3), squeeze=False)
    for i in range(n):
        axes[0, i].imshow(images[i].mean(axis=0), cmap="gray")
        axes[0, i].set_title(f"true {labels[i]}, pred {preds[i]}", fontsize=7)
        grid = maps[i].mean(axis=0)
        axes[1, i].imshow(grid, cmap="viridis", vmin=0, vmax=max(float(maps.mean(axis=1).max()),
                                                                  1e-9))
        if grid.size <= 16:  # small grids: write the weights in
            for (r, c), w in np.ndenumerate(grid):
                axes[1, i].text(c, r, f"{w:.2f}", ha="center", va="center", fontsize=7,
                                color="white" if w < 0.6 * grid.max() else "black")
        for ax in axes[:, i]:
            ax.set_xticks([])
            ax.set_yticks([])
    axes[0, 0].set_ylabel("image", fontsize=8)
    axes[1, 0].set_ylabel("CLS → patches\n(mean of heads)", fontsize=8)
    return _save(fig, path)


def _save(fig: Any, path: str | os.PathLike) -> Path:
    """Draw ``fig`` into a temporary file beside ``path`` and rename it over ``path``
    (vit.atomic: a symlink at ``path`` is replaced, never followed)."""
    import matplotlib.pyplot as plt
    try:
        fig.tight_layout()
        fmt = os.path.splitext(os.fspath(path))[1][1:].lower() or "png"
        write_atomic(path, lambda f: fig.savefig(f, format=fmt, dpi=80))
    finally:
        plt.close(fig)
    return Path(path)
