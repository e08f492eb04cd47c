"""Draw the test pictures of handwritten-style digits in tests/data/digits/ (one per digit 0-9).

Each digit is a few pen strokes (polylines and arcs) in a unit box, drawn with Pillow's
ImageDraw onto canvases of different sizes, stroke widths, positions, slants and colours
(some light ink on a dark ground, one JPEG). Nothing comes from the UCI data set. The file
name starts with the digit it shows: ``tests/vit/test_predict_digits.py`` reads the label
from there.

    python scripts/draw_digits.py [--out tests/data/digits]
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from PIL import Image, ImageDraw

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "digits"


def arc(cx: float, cy: float, rx: float, ry: float, start: float, end: float, n: int = 40):
    """Points on an ellipse from angle ``start`` to ``end`` (degrees, 0 = right, 90 = down)."""
    return [(cx + rx * math.cos(math.radians(a)), cy + ry * math.sin(math.radians(a)))
            for a in (start + (end - start) * i / n for i in range(n + 1))]


#: Each digit as strokes (lists of (x, y) points) in a box x in [0, 0.7], y in [0, 1].
STROKES = {
    0: [arc(0.35, 0.5, 0.3, 0.46, -90, 275)],
    1: [[(0.15, 0.22), (0.38, 0.02), (0.38, 0.98)]],
    2: [arc(0.35, 0.28, 0.28, 0.25, 190, 370) + [(0.05, 0.97), (0.68, 0.97)]],
    3: [arc(0.33, 0.26, 0.27, 0.23, 200, 450) + arc(0.33, 0.73, 0.32, 0.25, -90, 150)],
    4: [[(0.5, 0.98), (0.5, 0.02), (0.02, 0.68), (0.7, 0.68)]],
    5: [[(0.65, 0.03), (0.12, 0.03), (0.08, 0.45)] + arc(0.32, 0.68, 0.32, 0.28, -120, 150)],
    6: [arc(0.7, 0.76, 0.62, 0.74, 250, 180, 20) + arc(0.36, 0.76, 0.28, 0.22, 180, 540)],
    7: [[(0.02, 0.04), (0.68, 0.04), (0.25, 0.98)]],
    8: [arc(0.35, 0.26, 0.24, 0.23, 0, 360), arc(0.35, 0.74, 0.3, 0.25, -90, 270)],
    9: [arc(0.35, 0.3, 0.3, 0.28, 0, 360),
        [(0.65, 0.3), (0.64, 0.7), (0.56, 0.88), (0.4, 0.98), (0.15, 0.94)]],
}

#: (digit, canvas (w, h), digit box (left, top, height), stroke width in px, slant (x per y),
#:  ink, ground, format): a spread of sizes, widths, positions and polarities.
PICTURES = [
    (0, (64, 64), (12, 6, 52), 4, 0.0, 0, 255, "png"),           # thin pen
    (1, (200, 120), (120, 10, 100), 14, 0.1, 255, 0, "png"),         # light on dark, off centre
    (2, (48, 80), (8, 10, 60), 5, 0.0, 30, 230, "png"),
    (3, (300, 300), (40, 60, 200), 22, 0.05, 0, 255, "png"),
    (4, (96, 96), (30, 8, 80), 8, 0.0, 240, 20, "png"),              # light on dark
    (5, (128, 160), (20, 30, 110), 12, 0.0, 10, 250, "jpeg"),
    (6, (40, 40), (8, 4, 32), 4, 0.0, 0, 255, "png"),                # small picture
    (7, (160, 120), (10, 15, 90), 9, -0.1, 255, 40, "png"),          # light on dark, slanted
    (8, (100, 140), (20, 10, 120), 13, 0.0, 0, 255, "png"),
    (9, (256, 192), (150, 20, 150), 16, 0.08, 50, 220, "png"),
]


def draw(digit: int, canvas, box, width: int, slant: float, ink: int, ground: int) -> Image.Image:
    """One picture: the digit's strokes scaled into ``box``, with round pen ends and joints,
    drawn at 4x and reduced (Lanczos), so that the edges are grey as in a scan."""
    s = 4
    left, top, height, width = s * box[0], s * box[1], s * box[2], s * width
    im = Image.new("L", (s * canvas[0], s * canvas[1]), ground)
    pen = ImageDraw.Draw(im)
    for stroke in STROKES[digit]:
        points = [(left + height * (x + slant * (1 - y)), top + height * y) for x, y in stroke]
        pen.line(points, fill=ink, width=width, joint="curve")
        for x, y in (points[0], points[-1]):  # round pen ends
            pen.ellipse([x - width / 2, y - width / 2, x + width / 2, y + width / 2], fill=ink)
    return im.resize(canvas, Image.Resampling.LANCZOS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    for digit, canvas, box, width, slant, ink, ground, fmt in PICTURES:
        name = f"{digit}-{canvas[0]}x{canvas[1]}-pen{width}" + \
            ("-light-on-dark" if ink > ground else "") + (".jpg" if fmt == "jpeg" else ".png")
        im = draw(digit, canvas, box, width, slant, ink, ground)
        im.save(out / name, **({"quality": 90} if fmt == "jpeg" else {"optimize": True}))
        print(f"wrote {out / name}")


if __name__ == "__main__":
    main()
