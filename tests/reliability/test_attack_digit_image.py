"""Attack review: the digit reduction must stay linear in the picture's pixels.

``area_resize`` used to build dense (n_out, n_in) weight matrices: for a 1 x 2**24 picture
(within ``MAX_IMAGE_PIXELS``, a few kB as a PNG) that is 32 x 2**24 float64 per temporary,
4 GiB each, several of them, before a pixel is averaged.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_util import run_limited  # noqa: E402

from vit.io.digit_image import area_resize  # noqa: E402

WIDE_LINE = """
import numpy as np
from vit.io.digit_image import digit_features
n = 1 << 22
g = np.ones((3, n))
g[1] = 0.0  # one black line across white paper, n pixels long
out = digit_features(g)
# the line's box is 1 x n: scaled to 1 x 32, in row (32 - 1) // 2 = 15, so every tile of
# tile row 15 // 4 = 3 holds 4 on-pixels and nothing else is on
want = np.zeros((8, 8), np.int64)
want[3] = 4
assert (out == want).all(), out
"""


def test_a_very_wide_digit_picture_is_reduced_in_bounded_memory():
    # 3 x 2**22 float64 is 96 MiB; the old weight matrices needed 1 GiB per temporary
    result, rss = run_limited(WIDE_LINE, limit_mb=900)
    assert result == "ok", result


def test_a_1x16m_png_is_read_in_bounded_memory(tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image
    w = 1 << 24  # exactly MAX_IMAGE_PIXELS: accepted by the header check
    row = np.full((1, w), 255, np.uint8)
    row[0, w // 4: 3 * w // 4] = 0  # a dash in the middle
    p = tmp_path / "dash.png"
    Image.fromarray(row).save(p)
    body = f"""
import numpy as np
from vit.cli.predict import read_input
cfg = dict(in_chans=1, img_size=8)
x = read_input({str(p)!r}, cfg)
# the dash's box is 1 x w/2: 1 x 32 in bitmap row 15, so tile row 3 holds 4 per tile
want = np.zeros((1, 1, 8, 8), np.float32)
want[0, 0, 3] = 4
assert (x == want).all(), x
"""
    result, rss = run_limited(body, limit_mb=1500)
    assert result == "ok", result


@pytest.mark.parametrize("shape, out", [((5, 7), (3, 2)), ((3, 40), (32, 5)), ((1, 1), (4, 4)),
                                        ((7, 3), (7, 3)), ((16, 16), (5, 11))])
def test_area_resize_is_the_mean_over_each_footprint(shape, out):
    # independent oracle: upsample by an integer L so every footprint edge falls on the
    # fine grid, then take block means (exact area averaging on the lcm grid)
    a = np.random.default_rng(7).random(shape)
    H, W = shape
    h, w = out
    Lh, Lw = np.lcm(H, h) // H, np.lcm(W, w) // W
    fine = np.repeat(np.repeat(a, Lh, axis=0), Lw, axis=1)
    want = fine.reshape(h, fine.shape[0] // h, w, fine.shape[1] // w).mean(axis=(1, 3))
    got = area_resize(a, h, w)
    np.testing.assert_allclose(got, want, rtol=64 * np.finfo(np.float64).eps, atol=0)
