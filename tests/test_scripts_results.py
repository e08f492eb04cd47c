"""scripts/results.py reads a run's metrics.jsonl through vit.train.runfolder.read_metrics: the one
check every reader shares (a torn last line noted and ignored, any other bad line refused
with its number), not a json.loads loop of its own."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROW = dict(epoch=1, train_loss=2.0, train_acc=0.25, test_loss=1.9, test_acc=0.3, lr=0.001,
           seconds=0.5)


@pytest.fixture(scope="module")
def results():
    spec = importlib.util.spec_from_file_location("results_script", ROOT / "scripts" / "results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(folder: Path, lines: list[str], end="\n") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.jsonl").write_text("\n".join(lines) + end, encoding="utf-8")


def test_final_metrics_ignores_a_torn_last_line(results, tmp_path):
    rows = [json.dumps({**ROW, "epoch": 1, "seconds": 0.5}),
            json.dumps({**ROW, "epoch": 2, "test_acc": 0.75, "seconds": 0.7})]
    write(tmp_path, rows + ['{"epoch": 3, "train_lo'], end="")
    notes = []
    got = results.final_metrics(tmp_path, note=notes.append)
    assert got == {"acc": 0.75, "epoch_s": 0.6, "epochs": 2}
    assert len(notes) == 1 and "line 3 is incomplete" in notes[0]


def test_final_metrics_refuses_a_bad_line_with_its_number(results, tmp_path):
    write(tmp_path, [json.dumps(ROW), '{"foo": 1}', json.dumps({**ROW, "epoch": 2})])
    with pytest.raises(ValueError, match="line 2"):
        results.final_metrics(tmp_path)


def test_final_metrics_refuses_an_empty_log(results, tmp_path):
    write(tmp_path, [], end="")
    with pytest.raises(ValueError, match="no completed epoch"):
        results.final_metrics(tmp_path)
