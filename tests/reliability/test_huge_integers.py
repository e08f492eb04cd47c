"""An integer of hundreds of digits wherever a number is read (a training option, a checkpoint
entry, a metrics row, ``vit plot``) is refused in one short line: the message shows the value
cut short (``vit.io.files.shorten``), not its 400 digits."""
from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import one_line_refusal
from hostile_util import small_checkpoint
from reliability_util import run_cli


@pytest.mark.parametrize("field", ["epochs", "seed", "batch_size", "lr", "momentum", "mixup"])
def test_a_huge_integer_option_is_one_line_without_400_digits(field):
    from vit.train.options import TrainOptions
    with pytest.raises(ValueError) as info:
        TrainOptions.from_dict({field: 10**400})
    message = str(info.value)
    assert field in message and "expected" in message and "..." in message, message
    assert len(message) < 300, message


def test_a_huge_integer_in_a_checkpoint_is_exit_2(tmp_path, capsys):
    small_checkpoint(tmp_path / "checkpoint.npz", options=json.dumps(
        {**json.loads(str(np.load(small_checkpoint(tmp_path / "b.npz"))["options"])),
         "epochs": 10**400}))
    status, _, err = run_cli(["eval", tmp_path / "checkpoint.npz"], capsys)
    line = one_line_refusal(status, err, "epochs")
    assert len(line) < 400, line


def test_a_metrics_row_with_a_huge_epoch_is_refused():
    from vit.train.runfolder import check_metrics_row
    row = {"epoch": 10**400, "train_loss": 1.0, "train_acc": 0.5, "test_loss": 1.0,
           "test_acc": 0.5, "lr": 0.1, "seconds": 1.0}
    problem = check_metrics_row(row)
    assert problem and "epoch" in problem and "..." in problem and len(problem) < 200, problem
    problem = check_metrics_row({**row, "epoch": 1, "seconds": 10**400})
    assert problem and "seconds" in problem and len(problem) < 200, problem


def test_plot_of_a_huge_epoch_is_exit_2(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    small_checkpoint(run / "checkpoint.npz")  # plot reads the run's checkpoint first
    row = {"epoch": 10**400, "train_loss": 1.0, "train_acc": 0.5, "test_loss": 1.0,
           "test_acc": 0.5, "lr": 0.1, "seconds": 1.0}
    (run / "metrics.jsonl").write_text(json.dumps(row) + "\n")
    status, _, err = run_cli(["plot", run, "--out", tmp_path / "p"], capsys)
    line = one_line_refusal(status, err, "epoch")
    assert len(line) < 400, line


def test_shorten_cuts_long_values():
    from vit.io.files import shorten
    assert shorten(10**400).endswith("...") and len(shorten(10**400)) <= 43
    assert shorten(12) == "12" and shorten("ab") == "'ab'"
