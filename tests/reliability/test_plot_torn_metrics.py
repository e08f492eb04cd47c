"""``vit plot`` on a run whose last metrics line is torn: one line on stderr, the figures drawn.

read_metrics ignores a torn last line and tells its ``note`` hook; the CLI passes a hook that
prints ``vit plot: note: ...`` rather than letting Python print a two-line RuntimeWarning
(the file and line of the warn call, then the message).
"""
from __future__ import annotations

import pytest
from reliability_util import TINY, python_m_vit

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def torn_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("torn") / "run"
    done = python_m_vit(["train", "--out", folder, *TINY, "--epochs", "2"])
    assert done.returncode == 0, done.stderr
    with open(folder / "metrics.jsonl", "a", encoding="utf-8") as f:
        f.write('{"epoch": 3, "train_loss": 2.1')  # a kill in the middle of the write
    return folder


@pytest.mark.slow  # a training run; fast: test_metrics_log.py, test_plots.py's torn line
def test_plot_notes_a_torn_last_line_in_one_line(torn_run, tmp_path):
    figures = tmp_path / "figures"
    done = python_m_vit(["plot", torn_run, "--out", figures])
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("vit plot: note: ") and "line 3 is incomplete" in lines[0]
    assert "Warning" not in done.stderr
    assert (figures / "curves.png").is_file()
