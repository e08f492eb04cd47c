"""Pictures of digits drawn for the purpose (tests/data/digits, scripts/draw_digits.py: pen
strokes of different sizes, widths, positions, polarities; nothing from the data set) are
classified by a model trained on the bundled digits with the default recipe."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from vit.cli.main import main
from vit.train.loop import train
from vit.train.options import TrainOptions

pytest.importorskip("PIL")

DIGITS = Path(__file__).resolve().parents[1] / "data" / "digits"
SCRIPT = DIGITS.parents[2] / "scripts" / "draw_digits.py"
PICTURES = sorted(p for p in DIGITS.iterdir() if p.suffix in (".png", ".jpg"))


def label(path: Path) -> int:
    """The digit a picture shows: the first character of its name (draw_digits.py)."""
    return int(path.name[0])


@pytest.fixture(scope="module")
def default_model(tmp_path_factory):
    """The default recipe (150 epochs on the bundled digits), trained once for this module."""
    out = tmp_path_factory.mktemp("digits")
    train(TrainOptions(), out, quiet=True, log=lambda _: None)
    return out / "checkpoint.npz"


def test_the_pictures_are_the_ten_digits():
    assert sorted(label(p) for p in PICTURES) == list(range(10))
    assert any("light-on-dark" in p.name for p in PICTURES)


@pytest.mark.slow
def test_drawn_digits_are_recognized(default_model, capsys):
    status = main(["predict", str(default_model), *map(str, PICTURES), "--json", "--top-k", "1"])
    out = capsys.readouterr().out
    assert status == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["file"] for row in rows] == [str(p) for p in PICTURES]
    predicted = [row["top"][0]["class"] for row in rows]
    truth = [label(p) for p in PICTURES]
    correct = sum(p == t for p, t in zip(predicted, truth, strict=True))
    assert correct >= 9, list(zip(truth, predicted, strict=True))


def test_the_shipped_pictures_are_what_the_script_draws(tmp_path):
    from PIL import Image
    spec = importlib.util.spec_from_file_location("draw_digits", SCRIPT)
    draw_digits = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(draw_digits)
    for digit, canvas, box, width, slant, ink, ground, fmt in draw_digits.PICTURES:
        drawn = np.asarray(draw_digits.draw(digit, canvas, box, width, slant, ink, ground), int)
        (shipped,) = [p for p in PICTURES if label(p) == digit]
        pixels = np.asarray(Image.open(shipped).convert("L"), int)
        if fmt == "png":  # lossless
            np.testing.assert_array_equal(pixels, drawn, err_msg=shipped.name)
        else:  # JPEG at quality 90: close, not equal
            assert np.abs(pixels - drawn).mean() < 4, shipped.name
