"""The figures of ``vit plot``: files a user would keep (resolution, text sizes, colour bars,
integer epochs, visible points for a short run), drawn without error for a one-epoch run."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")

from cli_util import run_cli  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from vit.cli.main import main  # noqa: E402
from vit.cli.plots import (  # noqa: E402
    DPI,
    attention_figure,
    confusion_figure,
    curves_figure,
    plot_attention,
    plot_confusion,
    plot_curves,
)

TINY = ["--dim", "8", "--heads", "2", "--mlp-dim", "8", "--batch-size", "256", "--quiet"]


def rows(n: int) -> list[dict]:
    rng = np.random.default_rng(n)
    return [dict(epoch=e, train_loss=2.0 / e, train_acc=min(1.0, 0.3 + 0.01 * e),
                 test_loss=1.5 / e + rng.uniform(0, 0.01), test_acc=min(1.0, 0.4 + 0.01 * e),
                 lr=0.1, seconds=0.1) for e in range(1, n + 1)]


def drawn(fig):
    fig.draw_without_rendering()  # tick labels exist only once drawn
    return fig


def visible_texts(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


cli = run_cli


def test_a_png_is_written_at_DPI_with_its_size_in_inches(tmp_path):
    assert DPI >= 150
    path = plot_curves(rows(5), tmp_path / "curves.png")
    with Image.open(path) as png:
        assert png.format == "PNG"
        assert png.info["dpi"] == pytest.approx((DPI, DPI), abs=0.5)
        fig = curves_figure(rows(5))
        width, height = fig.get_size_inches()
        assert png.size == (round(width * DPI), round(height * DPI))


@pytest.mark.parametrize("figure", ["curves", "confusion", "attention"])
def test_no_text_is_smaller_than_8_points(figure):
    rng = np.random.default_rng(0)
    if figure == "curves":
        fig = curves_figure(rows(40))
    elif figure == "confusion":
        fig = confusion_figure(rng.integers(0, 30, (10, 10)))
    else:
        maps = rng.dirichlet(np.ones(5), (4, 2))
        fig = attention_figure(rng.uniform(0, 16, (4, 1, 8, 8)), maps[..., 1:].reshape(4, 2, 2, 2),
                               np.arange(4), np.arange(4), maps[..., 0])
    sizes = [t.get_fontsize() for t in visible_texts(drawn(fig))]
    assert sizes and min(sizes) >= 8, sorted(sizes)[:5]


def test_one_epoch_shows_its_points_on_a_single_integer_tick():
    fig = drawn(curves_figure(rows(1)))
    loss, acc = fig.axes[:2]
    for ax in (loss, acc):
        lines = ax.get_lines()
        assert len(lines) == 2
        for line in lines:
            assert line.get_marker() == "o" and line.get_markersize() > 0
            assert len(line.get_xdata()) == 1
            lo, hi = ax.get_ylim()
            assert all(lo <= y <= hi for y in line.get_ydata())  # the point is on the axes
        assert list(ax.get_xticks()) == [1]
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1"]


def test_long_runs_have_lines_without_markers_and_integer_epoch_ticks():
    fig = drawn(curves_figure(rows(150)))
    for ax in fig.axes[:2]:
        assert all(line.get_marker() in (None, "None", "") for line in ax.get_lines())
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert len(ticks) >= 3 and all(float(t).is_integer() for t in ticks)
    assert fig.axes[0].get_yscale() == "log"  # 2.0 / 150: more than a decade


def test_few_epochs_get_a_marker_on_every_point():
    fig = curves_figure(rows(3))
    assert all(line.get_marker() == "o" for ax in fig.axes[:2] for line in ax.get_lines())


def test_confusion_has_counts_row_normalised_colours_and_a_labelled_colour_bar():
    matrix = np.array([[8, 2, 0], [0, 1, 1], [0, 0, 50]])
    fig = confusion_figure(matrix, "t")
    assert len(fig.axes) == 2  # the matrix and its colour bar
    main_ax, bar = fig.axes
    assert bar.get_ylabel()  # the colour bar says what its colour means
    shown = main_ax.get_images()[0].get_array()
    expected = 100 * matrix / matrix.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(shown), expected)
    assert shown[1, 1] == shown[1, 2] == 50  # one right of two: half its row, whatever the count
    written = sorted((round(t.get_position()[1]), round(t.get_position()[0]), t.get_text())
                     for t in main_ax.texts)
    assert written == [(i, j, str(v)) for (i, j), v in np.ndenumerate(matrix) if v]


def test_attention_has_a_colour_bar_and_shows_the_cls_self_weight():
    rng = np.random.default_rng(1)
    weights = rng.dirichlet(np.ones(5), (3, 2))  # (n, heads, 1 + 4 patches), rows sum to 1
    maps, own = weights[..., 1:].reshape(3, 2, 2, 2), weights[..., 0]
    fig = attention_figure(rng.uniform(0, 16, (3, 1, 8, 8)), maps, np.array([1, 2, 3]),
                           np.array([1, 0, 3]), own)
    assert len(fig.axes) == 2 * 3 + 1  # images, maps, one colour bar
    assert fig.axes[-1].get_ylabel()
    labels = [ax.get_xlabel() for ax in fig.axes[3:6]]
    assert labels == [f"CLS→CLS {own[i].mean():.2f}" for i in range(3)]
    assert "itself" in fig.get_suptitle()
    for ax, _, s in zip(fig.axes[3:6], maps, own, strict=True):  # what is drawn plus what is written is 1
        np.testing.assert_allclose(np.asarray(ax.get_images()[0].get_array()).sum() + s.mean(),
                                   1.0, rtol=1e-12)
    without = attention_figure(rng.uniform(0, 16, (3, 1, 8, 8)), maps, np.arange(3),
                               np.arange(3))
    assert "left out" in without.get_suptitle()  # says so when the self-weight is not given


def test_figures_save_as_vector_formats(tmp_path):
    assert plot_confusion(np.eye(3, dtype=int), tmp_path / "c.pdf").read_bytes()[:5] == b"%PDF-"
    svg = plot_attention(np.zeros((1, 1, 8, 8)), np.full((1, 1, 2, 2), 0.2), np.zeros(1, int),
                         np.zeros(1, int), tmp_path / "a.svg", np.full((1, 1), 0.2))
    assert b"<svg" in svg.read_bytes()[:2000]


@pytest.fixture(scope="module")
def one_epoch_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plots") / "run"
    assert main(["train", "--out", str(folder), *TINY, "--epochs", "1"]) == 0
    return folder


@pytest.mark.slow  # fast: tests/vit/test_train.py::test_plot_writes_pngs
@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml")])
def test_vit_plot_of_a_one_epoch_run_writes_every_figure(one_epoch_run, tmp_path, capsys, fmt,
                                                         magic):
    status, out, err = cli(["plot", one_epoch_run, "--out", tmp_path, "--format", fmt], capsys)
    assert status == 0, err
    for name in ("curves", "confusion", "attention"):
        assert (tmp_path / f"{name}.{fmt}").read_bytes()[:len(magic)] == magic
        assert f"{name}.{fmt}" in out
    if fmt == "png":
        with Image.open(tmp_path / "curves.png") as png:
            assert png.info["dpi"] == pytest.approx((DPI, DPI), abs=0.5)


def test_vit_plot_refuses_another_format_in_one_line(one_epoch_run, tmp_path, capsys):
    status, _, err = cli(["plot", one_epoch_run, "--out", tmp_path, "--format", "gif"], capsys)
    assert status == 2 and len(err.splitlines()) == 1 and "--format" in err
    assert not list(tmp_path.iterdir())


def test_vit_plot_after_a_torn_last_line_still_draws_the_complete_epoch(one_epoch_run, tmp_path,
                                                                       capsys):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(one_epoch_run, run)
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as f:
        f.write('{"epoch": 2, "train_lo')
    status, _, err = cli(["plot", run, "--out", tmp_path / "figs"], capsys)
    assert status == 0 and "incomplete" in err
    assert (tmp_path / "figs" / "curves.png").stat().st_size > 10_000


def test_a_short_run_shows_every_accuracy_point():
    short = rows(8)
    short[0]["train_acc"] = 0.05  # a first epoch far below the rest
    fig = curves_figure(short)
    acc = fig.axes[1]
    lo, hi = acc.get_ylim()
    for line in acc.get_lines():
        assert all(lo <= y <= hi for y in line.get_ydata()), (lo, hi, line.get_ydata())


def test_plotting_leaves_no_figure_open_in_pyplot(tmp_path):
    import matplotlib.pyplot as plt
    before = plt.get_fignums()
    plot_curves(rows(3), tmp_path / "c.png")
    plot_confusion(np.eye(2, dtype=int), tmp_path / "m.png")
    curves_figure(rows(2))
    assert plt.get_fignums() == before
