"""Figures of a training run (``python -m vit plot RUN_DIR``), drawn with matplotlib (Agg).

Made to be kept: PNG at ``DPI`` dots per inch (or vector PDF / SVG), text of at least 8
points, integer epoch ticks, a marker on every point when there are few epochs (so a
one-epoch run shows its points), and a labelled colour bar on every heat map.

matplotlib is an optional extra (``pip install 'minigrad-vit[plot]'``); :func:`require_matplotlib`
raises a clear ImportError without it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..io.atomic import write_atomic

__all__ = ["require_matplotlib", "confusion_matrix", "plot_curves", "plot_confusion",
           "plot_attention", "curves_figure", "confusion_figure", "attention_figure",
           "FORMATS", "DPI"]

MISSING = ("matplotlib is not installed; `python -m vit plot` needs it: "
           "pip install 'minigrad-vit[plot]' (or pip install matplotlib)")

#: The file formats ``vit plot --format`` writes (PNG raster; PDF and SVG vector).
FORMATS = ("png", "pdf", "svg")
#: Dots per inch of a PNG: sharp when printed at its size, or shown on a high-density screen.
DPI = 200
#: Up to this many epochs every point gets a marker; beyond, the line alone is clearer.
MARKERS_UP_TO = 30
#: Text sizes (points) of every figure: the smallest, tick labels and cell values, is 8.
STYLE = {"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "xtick.labelsize": 9,
         "ytick.labelsize": 9, "legend.fontsize": 9, "figure.titlesize": 11}
CELL_FONT = 8


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
    """Loss and accuracy per epoch, train and test, side by side (:func:`curves_figure`),
    saved to ``path``."""
    with require_matplotlib().rc_context(STYLE):
        return _save(curves_figure(rows), path)


def plot_confusion(matrix: np.ndarray, path: str | os.PathLike, title: str = "") -> Path:
    """The confusion matrix (:func:`confusion_figure`), saved to ``path``."""
    with require_matplotlib().rc_context(STYLE):
        return _save(confusion_figure(matrix, title), path)


def plot_attention(images: np.ndarray, maps: np.ndarray, labels: np.ndarray,
                   preds: np.ndarray, path: str | os.PathLike,
                   self_weights: np.ndarray | None = None) -> Path:
    """The CLS token's attention maps (:func:`attention_figure`), saved to ``path``."""
    with require_matplotlib().rc_context(STYLE):
        return _save(attention_figure(images, maps, labels, preds, self_weights), path)


def curves_figure(rows: list[dict]) -> Any:
    """The matplotlib Figure of loss and accuracy per epoch, train and test, side by side:
    integer epoch ticks, a marker on every point up to ``MARKERS_UP_TO`` epochs."""
    plt = require_matplotlib()
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    epochs = [r["epoch"] for r in rows]
    marker = "o" if len(rows) <= MARKERS_UP_TO else None
    with plt.rc_context(STYLE):
        fig = _figure(figsize=(9, 3.6))
        ax_loss, ax_acc = fig.subplots(1, 2)
        for split, style in (("train", "-"), ("test", "--")):
            label = "train (augmented batches)" if split == "train" else split
            ax_loss.plot(epochs, [r[f"{split}_loss"] for r in rows], style, marker=marker,
                         markersize=4, label=label)
            ax_acc.plot(epochs, [100 * r[f"{split}_acc"] for r in rows], style, marker=marker,
                        markersize=4, label=label)
        losses = [r[k] for r in rows for k in ("train_loss", "test_loss")]
        # a log axis only pays when the loss falls by more than a decade; within one, its
        # labels would be minor ticks in scientific notation (1.9 x 10^0)
        log = min(losses) > 0 and max(losses) / min(losses) > 10
        ax_loss.set(xlabel="epoch", ylabel="cross-entropy", title="loss",
                    yscale="log" if log else "linear")
        if log:  # plain numbers (0.1, not 10^-1), and 2 and 5 of each decade labelled too
            ax_loss.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax_loss.yaxis.set_minor_formatter(FuncFormatter(_two_and_five))
        best = max(r["test_acc"] for r in rows)
        ax_acc.set(xlabel="epoch", ylabel="accuracy (%)",
                   title=f"accuracy (final test {100 * rows[-1]['test_acc']:.1f}%, "
                         f"best {100 * best:.1f}%)")
        # a long run's last three quarters decide the range, so its end is readable; a short
        # run shows every point
        shown = rows[len(rows) // 4:] if len(rows) > MARKERS_UP_TO else rows
        late = [r[k] for r in shown for k in ("train_acc", "test_acc")]
        ax_acc.set_ylim(max(0.0, 100 * min(late) - 5), 100.5)
        for ax in (ax_loss, ax_acc):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if len(epochs) == 1:  # one point: one tick, its epoch, not 0.96 ... 1.04
                ax.set_xticks(epochs)
                ax.set_xlim(epochs[0] - 0.5, epochs[0] + 0.5)
            ax.grid(alpha=0.3)
            ax.legend()
        return fig


def _two_and_five(value: float, _: Any) -> str:
    """The label of a minor tick of a log axis: only 2 x 10^k and 5 x 10^k are labelled."""
    mantissa = value / 10 ** np.floor(np.log10(value))
    return f"{value:g}" if round(mantissa) in (2, 5) and abs(mantissa - round(mantissa)) < 1e-6 \
        else ""


def confusion_figure(matrix: np.ndarray, title: str = "") -> Any:
    """The Figure of a (K, K) confusion matrix: each cell's count written in, coloured by its
    share of the true class (its row), so that a rare class's errors show as clearly as a
    common one's; a colour bar of that share."""
    plt = require_matplotlib()
    matrix = np.asarray(matrix)
    k = len(matrix)
    rows = matrix.sum(axis=1, keepdims=True)
    share = 100 * matrix / np.maximum(rows, 1)
    side = min(max(0.45 * k + 2.0, 4.0), 12.0)
    with plt.rc_context(STYLE):
        fig = _figure(figsize=(side + 1.0, side))
        ax = fig.subplots()
        image = ax.imshow(share, cmap="Blues", vmin=0, vmax=100)
        if k <= 30:  # beyond, the numbers would not fit their cells
            for (i, j), count in np.ndenumerate(matrix):
                if count:
                    ax.text(j, i, str(count), ha="center", va="center", fontsize=CELL_FONT,
                            color="white" if share[i, j] > 50 else "black")
        ticks = range(k) if k <= 30 else range(0, k, max(1, k // 15))
        ax.set(xticks=ticks, yticks=ticks, xlabel="predicted class", ylabel="true class",
               title=title or f"confusion ({np.trace(matrix)}/{matrix.sum()} right)")
        bar = fig.colorbar(image, ax=ax, shrink=0.85)
        bar.set_label("share of the true class (%); cells: counts")
        return fig


def attention_figure(images: np.ndarray, maps: np.ndarray, labels: np.ndarray,
                     preds: np.ndarray, self_weights: np.ndarray | None = None) -> Any:
    """The Figure of each image above the CLS token's attention over its patches (mean over heads).

    images (n, C, H, W) raw; maps (n, heads, H/P, W/P) from ``cls_attention``; self_weights
    (n, heads) from ``cls_self_attention``: the CLS token's weight on itself, which the patch
    maps leave out (each map sums to 1 minus it), written under each map."""
    plt = require_matplotlib()
    n = len(images)
    grids = maps.mean(axis=1)  # (n, H/P, W/P)
    top = max(float(grids.max()), 1e-9)
    with plt.rc_context(STYLE):
        fig = _figure(figsize=(1.5 * n + 1.4, 4.2))
        axes = fig.subplots(2, n, squeeze=False)
        for i in range(n):
            axes[0, i].imshow(images[i].mean(axis=0), cmap="gray")
            wrong = labels[i] != preds[i]
            axes[0, i].set_title(f"true {labels[i]}, pred {preds[i]}", fontsize=9,
                                 color="tab:red" if wrong else "black")
            shown = axes[1, i].imshow(grids[i], cmap="viridis", vmin=0, vmax=top)
            if grids[i].size <= 16:  # small grids: write the weights in
                for (r, c), w in np.ndenumerate(grids[i]):
                    axes[1, i].text(c, r, f"{w:.2f}", ha="center", va="center",
                                    fontsize=CELL_FONT,
                                    color="white" if w < 0.6 * top else "black")
            if self_weights is not None:
                axes[1, i].set_xlabel(f"CLS→CLS {float(self_weights[i].mean()):.2f}",
                                      fontsize=9)
            for ax in axes[:, i]:
                ax.set_xticks([])
                ax.set_yticks([])
        axes[0, 0].set_ylabel("image")
        axes[1, 0].set_ylabel("CLS → patches")
        bar = fig.colorbar(shown, ax=axes[1, :].tolist(), shrink=0.9)
        bar.set_label("attention weight\n(mean over heads)")
        note = ("patch weights sum to 1 − CLS→CLS, the [CLS] token's weight on itself"
                if self_weights is not None else
                "the [CLS] token's weight on itself is left out: patch weights sum to less than 1")
        fig.suptitle(f"what the [CLS] token attends to; {note}", fontsize=10)
        return fig


def _figure(figsize: tuple[float, float]) -> Any:
    """A Figure outside pyplot's registry (nothing to close, nothing kept after it is
    dropped), laid out by matplotlib's constrained layout (room for the colour bars)."""
    from matplotlib.figure import Figure
    return Figure(figsize=figsize, layout="constrained")


def _save(fig: Any, path: str | os.PathLike) -> Path:
    """Draw ``fig`` into a temporary file beside ``path`` and rename it over ``path``
    (vit.atomic: a symlink at ``path`` is replaced, never followed). The format is the
    suffix's (PNG without one)."""
    fmt = os.path.splitext(os.fspath(path))[1][1:].lower() or "png"
    write_atomic(path, lambda f: fig.savefig(f, format=fmt, dpi=DPI))
    return Path(path)
