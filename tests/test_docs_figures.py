"""The default run's figures quoted in the docs are the recorded run of today's defaults:
``docs/default_run.json`` records what ``python -m vit train`` (every option at its default)
scored, with the options it ran; a change of the defaults fails here until the run is
recorded again, and every page quoting the default run's accuracy must quote that record.
(Nothing is trained here: the record is the measurement.)"""
from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path

import pytest

from vit.train.options import TrainOptions

ROOT = Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "docs" / "default_run.json").read_text())

#: (page, a pattern whose group is the default run's test accuracy in percent)
CLAIMS = [
    ("README.md", r"ends with (\d+\.\d+)%"),
    ("README.md", r"default `python -m vit train` run reaches (\d+\.\d+)% test accuracy"),
    ("docs/export.md", r"\((\d+\.\d+)%, the default run's accuracy\)"),
    ("docs/predict.md", r"the default recipe, `python -m vit train`, (\d+\.\d+)% on the test"),
    ("docs/results.md", r"done: epoch 150/150, test accuracy (\d+\.\d+)%"),
]


def test_the_record_is_a_run_of_todays_defaults():
    assert RECORD["options"] == json.loads(json.dumps(asdict(TrainOptions().resolved())))
    assert RECORD["test_acc"] == RECORD["test_correct"] / RECORD["test_images"]


@pytest.mark.parametrize("page, pattern", CLAIMS, ids=[f"{p}:{i}" for i, (p, _) in
                                                        enumerate(CLAIMS)])
def test_the_docs_quote_the_recorded_accuracy(page, pattern):
    text = " ".join((ROOT / page).read_text().split())  # a claim may wrap across lines
    found = re.findall(pattern, text)
    assert found, f"{page}: the claim {pattern!r} is gone; update CLAIMS"
    assert set(found) == {f"{100 * RECORD['test_acc']:.2f}"}, (page, found)


def test_the_test_split_size_quoted_is_the_bundled_one():
    from vit.train.data import load_digits
    assert RECORD["test_images"] == len(load_digits().x_test)
