"""The metrics log loses nothing.

The rule: a torn LAST line (a kill in the middle of its write) is expected and ignored with a
note; any other line that is not a metrics row is refused with the file, the line number and
what is wrong, in one line, and ``--resume`` never rewrites a log it could not read in full.
``read_metrics``, ``vit plot`` and ``--resume`` share the one check
(``vit.train.runfolder.check_metrics_row``).
"""
from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from reliability_util import TINY, run_cli

from vit.train.runfolder import read_metrics

ROW = dict(epoch=1, train_loss=2.0, train_acc=0.25, test_loss=1.9, test_acc=0.3, lr=0.001,
           seconds=0.5)


def rows_text(n: int) -> list[str]:
    return [json.dumps({**ROW, "epoch": e}) for e in range(1, n + 1)]


def write_log(path: Path, lines: list[str], end: str = "\n") -> None:
    path.write_text("\n".join(lines) + end, encoding="utf-8")


BAD_LINES = {
    "not JSON": "{not json",
    "a list": "[1, 2]",
    "a number": "3",
    "unknown keys": '{"foo": 1}',
    "string epoch": json.dumps({**ROW, "epoch": "3"}),
    "float epoch": json.dumps({**ROW, "epoch": 2.0}),
    "bool epoch": json.dumps({**ROW, "epoch": True}),
    "epoch zero": json.dumps({**ROW, "epoch": 0}),
    "epoch goes back": json.dumps({**ROW, "epoch": 1}),
    "string loss": json.dumps({**ROW, "epoch": 2, "train_loss": "2.0"}),
    "NaN loss": json.dumps({**ROW, "epoch": 2, "test_loss": float("nan")}),
    "infinite lr": json.dumps({**ROW, "epoch": 2, "lr": float("inf")}),
    "accuracy above 1": json.dumps({**ROW, "epoch": 2, "test_acc": 1.5}),
    "negative loss": json.dumps({**ROW, "epoch": 2, "train_loss": -1.0}),
    "missing field": json.dumps({k: v for k, v in {**ROW, "epoch": 2}.items() if k != "lr"}),
    "extra field": json.dumps({**ROW, "epoch": 2, "note": "hi"}),
    "null": "null",
    "blank line": "",
}


@pytest.mark.parametrize("kind", list(BAD_LINES))
def test_a_bad_line_in_the_middle_is_refused_with_its_number(tmp_path, kind):
    lines = rows_text(4)
    lines.insert(1, BAD_LINES[kind])  # line 2 of 5
    log = tmp_path / "metrics.jsonl"
    write_log(log, lines)
    with pytest.raises(ValueError) as info:
        read_metrics(log)
    message = str(info.value)
    assert str(log) in message and "line 2" in message and "expected" in message, message
    assert "\n" not in message


def test_invalid_utf8_is_refused(tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_bytes((rows_text(1)[0] + "\n").encode() + b"\xff\xfe\n" +
                    (rows_text(2)[1] + "\n").encode())
    with pytest.raises(ValueError, match="line 2"):
        read_metrics(log)


def test_a_torn_last_line_is_ignored_with_a_note(tmp_path):
    log = tmp_path / "metrics.jsonl"
    write_log(log, rows_text(3) + ['{"epoch": 4, "train_loss": 2.1'], end="")
    with pytest.warns(RuntimeWarning, match="line 4 is incomplete"):
        rows = read_metrics(log)
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    notes = []
    assert len(read_metrics(log, note=notes.append)) == 3 and "line 4" in notes[0]


def test_a_complete_log_gives_every_row_without_a_note(tmp_path):
    log = tmp_path / "metrics.jsonl"
    write_log(log, rows_text(5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["epoch"] for r in read_metrics(log)] == [1, 2, 3, 4, 5]
    write_log(log, rows_text(5), end="")  # the last row complete, only its newline missing
    assert len(read_metrics(log)) == 5


def test_a_torn_line_that_is_not_last_is_refused(tmp_path):
    log = tmp_path / "metrics.jsonl"
    lines = rows_text(3)
    lines.insert(1, '{"epoch": 2, "train_loss": 2.1')
    write_log(log, lines)
    with pytest.raises(ValueError, match="line 2 is not valid JSON"):
        read_metrics(log)


# ---- through the CLI: resume and plot ------------------------------------------------------
@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A run stopped after 2 of 4 epochs (resumable)."""
    from vit.cli.main import main
    folder = tmp_path_factory.mktemp("stopped") / "run"
    assert main(["train", "--out", str(folder), *TINY, "--epochs", "4", "--stop-after",
                 "2"]) == 0
    return folder


@pytest.fixture
def run_copy(stopped, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(stopped, out)
    return out


def one_line(status, err, *words):
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, (status, err)
    for w in words:
        assert w in err, (w, err)


@pytest.mark.parametrize("kind", ["not JSON", "a list", "unknown keys", "string epoch"])
def test_resume_refuses_a_log_with_a_bad_line_and_leaves_it_unchanged(run_copy, capsys, kind):
    log = run_copy / "metrics.jsonl"
    lines = log.read_text().splitlines()
    lines.insert(1, BAD_LINES[kind])
    write_log(log, lines)
    before = log.read_bytes()
    ckpt = (run_copy / "checkpoint.npz").read_bytes()
    status, _, err = run_cli(["train", "--out", run_copy, "--resume", "--quiet"], capsys)
    one_line(status, err, "metrics.jsonl", "line 2")
    assert log.read_bytes() == before  # not rewritten without the later rows
    assert (run_copy / "checkpoint.npz").read_bytes() == ckpt


@pytest.mark.parametrize("kind", ["not JSON", "a list", "unknown keys", "string epoch",
                                  "NaN loss"])
def test_plot_refuses_a_log_with_a_bad_line(run_copy, tmp_path, capsys, kind):
    pytest.importorskip("matplotlib")
    log = run_copy / "metrics.jsonl"
    lines = log.read_text().splitlines()
    lines.insert(1, BAD_LINES[kind])
    write_log(log, lines)
    figures = tmp_path / "figures"
    status, _, err = run_cli(["plot", run_copy, "--out", figures], capsys)
    one_line(status, err, "metrics.jsonl", "line 2")
    assert not figures.exists() or not list(figures.iterdir())


def test_resume_after_a_torn_last_line_notes_it_and_redoes_the_epoch(run_copy, capsys):
    log = run_copy / "metrics.jsonl"
    with open(log, "a", encoding="utf-8") as f:
        f.write('{"epoch": 3, "train_loss": 2.1')
    status, out, err = run_cli(["train", "--out", run_copy, "--resume", "--quiet"], capsys)
    assert status == 0, err
    assert "line 3 is incomplete" in out + err
    assert [r["epoch"] for r in read_metrics(log)] == [1, 2, 3, 4]


def test_resume_says_which_rows_after_the_checkpoint_it_drops(run_copy, capsys):
    log = run_copy / "metrics.jsonl"
    with open(log, "a", encoding="utf-8") as f:  # an epoch logged, its checkpoint never written
        f.write(json.dumps({**ROW, "epoch": 3}) + "\n")
    status, out, err = run_cli(["train", "--out", run_copy, "--resume", "--quiet"], capsys)
    assert status == 0, err
    assert "epochs 3..3" in out + err and "dropped" in out + err
    rows = read_metrics(log)
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4] and rows[2]["train_loss"] != 2.0


def test_a_metrics_line_that_cannot_be_written_names_the_log(run_copy, capsys, monkeypatch):
    """A disk full at the moment of a metrics line: one line naming metrics.jsonl (it used
    to be a bare ``[Errno 28] No space left on device``); the checkpoint of the epoch before
    is intact and --resume finishes the run."""
    import errno
    import os
    real = os.fsync

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith("metrics.jsonl"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    status, _, err = run_cli(["train", "--out", run_copy, "--resume", "--quiet"], capsys)
    assert status == 1 and err.count("\n") == 1, err
    assert "metrics.jsonl" in err and "No space left on device" in err, err
    monkeypatch.setattr(os, "fsync", real)
    status, _, err = run_cli(["train", "--out", run_copy, "--resume", "--quiet"], capsys)
    assert status == 0, err
    assert [r["epoch"] for r in read_metrics(run_copy / "metrics.jsonl")] == [1, 2, 3, 4]
