"""The reduction of a digit picture to the UCI optdigits format, on synthetic pictures whose
8x8 counts are worked out by hand in each test; area_resize against an independent area
average; and the reduction's cost, linear in the picture's pixels: dense (n_out, n_in)
weight matrices for a 1 x 2**24 picture (within ``MAX_IMAGE_PIXELS``, a few kB as a PNG)
would be 32 x 2**24 float64 per temporary, 4 GiB each, several of them, before a pixel is
averaged. The memory cases run in a child with a bounded address space
(tests/reliability/hostile_util.py)."""
from __future__ import annotations

import numpy as np
import pytest
from hostile_util import run_limited  # tests/reliability/, on sys.path (tests/conftest.py)

from vit.io.digit_image import (
    area_resize,
    block_counts,
    digit_features,
    fit_to_frame,
    ink_mask,
    otsu_threshold,
)


def paper(h: int, w: int) -> np.ndarray:
    return np.ones((h, w))


def test_block_counts_counts_on_pixels_in_4x4_tiles():
    b = np.zeros((32, 32), bool)
    b[0:4, 0:4] = True          # one full tile: 16
    b[4, 4] = True              # one pixel in tile (1, 1): 1
    b[8:10, 28:32] = True       # two rows of tile (2, 7): 8
    b[31, 0:32] = True          # the bottom row: 4 in every tile of row 7
    expected = np.zeros((8, 8), np.int64)
    expected[0, 0], expected[1, 1], expected[2, 7] = 16, 1, 8
    expected[7, :] = 4
    np.testing.assert_array_equal(block_counts(b), expected)


def test_block_counts_refuses_a_bitmap_it_cannot_tile():
    with pytest.raises(ValueError, match="multiple of 4"):
        block_counts(np.zeros((30, 30), bool))


def test_area_resize_averages_footprints():
    a = np.arange(16.0).reshape(4, 4)
    # halving: each output is the mean of a 2x2 block
    np.testing.assert_array_equal(area_resize(a, 2, 2), [[2.5, 4.5], [10.5, 12.5]])
    # 3 -> 2: the middle pixel is shared half and half
    np.testing.assert_allclose(area_resize(np.array([[0.0, 3.0, 6.0]]), 1, 2),
                               [[(0 + 1.5) / 1.5, (1.5 + 6) / 1.5]])
    # doubling repeats each pixel
    np.testing.assert_array_equal(area_resize(np.array([[1.0, 2.0]]), 2, 4),
                                  [[1, 1, 2, 2], [1, 1, 2, 2]])


def test_a_tall_bar_is_fitted_to_the_height_and_centred():
    # 80 x 20 dark bar: scale 32/80 = 0.4 -> 32 x 8 pixels, left edge (32 - 8) / 2 = 12,
    # so columns 12..19 are ink: tiles 3 and 4 full in every row
    g = paper(100, 120)
    g[10:90, 70:90] = 0.0
    expected = np.zeros((8, 8), np.int64)
    expected[:, 3:5] = 16
    np.testing.assert_array_equal(digit_features(g), expected)


def test_a_wide_bar_is_fitted_to_the_width_and_centred():
    # 10 x 40 bar: scale 32/40 -> 8 x 32, top (32 - 8) / 2 = 12: tile rows 3 and 4 full
    g = paper(50, 50)
    g[5:15, 3:43] = 0.2
    expected = np.zeros((8, 8), np.int64)
    expected[3:5, :] = 16
    np.testing.assert_array_equal(digit_features(g), expected)


def test_light_on_dark_is_read_like_dark_on_light():
    g = paper(64, 64)
    g[8:56, 20:28] = 0.0   # a vertical stroke 48 x 8 ...
    g[8:16, 20:44] = 0.0   # ... and a top bar: a "7"-like shape of 48 x 24
    inverted = 1.0 - g
    np.testing.assert_array_equal(digit_features(inverted), digit_features(g))
    # by hand: scale 32/48 = 2/3 -> 32 x 16 at left 8; the stroke 8 px -> columns 8..13,
    # 5.33 px of it; the bar 8 rows -> rows 0..4 (5.33 rows), columns 8..23
    bitmap = fit_to_frame(ink_mask(g))
    assert bitmap[:, :8].sum() == 0 and bitmap[:, 24:].sum() == 0
    assert bitmap[0:5, 8:24].all() and not bitmap[6:, 14:24].any()


def test_position_and_size_do_not_matter():
    small = paper(40, 40)
    small[4:20, 10:18] = 0.0     # 16 x 8 box
    small[4:8, 10:26] = 0.0      # a bar sticking out right: box 16 x 16
    big = paper(200, 150)        # the same shape, 4x larger, elsewhere
    big[100:164, 60:92] = 0.0
    big[100:116, 60:124] = 0.0
    np.testing.assert_array_equal(digit_features(big), digit_features(small))
    # the box is square, so it fills the frame: the bar is the top 8 rows (tile rows 0, 1
    # full), the stem the left half (tiles 0..3 of every row)
    expected = np.zeros((8, 8), np.int64)
    expected[:, :4] = 16
    expected[:2, :] = 16
    np.testing.assert_array_equal(digit_features(small), expected)


def test_grey_levels_are_split_by_otsu_without_scaling():
    # a 40 x 40 picture whose ink box is exactly 32 x 32 (a dark square outline at rows and
    # columns 4..35): no scaling, so each pixel is on exactly when darker than the threshold
    g = np.full((40, 40), 0.9)
    g[4:36, 4] = g[4:36, 35] = g[4, 4:36] = g[35, 4:36] = 0.1
    g[8:12, 8:12] = 0.3       # dark grey: ink
    g[16:20, 16:20] = 0.7     # light grey: paper
    t = otsu_threshold(g)
    assert 0.3 < t <= 0.7
    counts = digit_features(g)
    assert counts[1, 1] == 16 and counts[3, 3] == 0
    # the outline: a corner tile has its top row and left column (7), an edge tile 4
    assert counts[0, 0] == 7 and counts[0, 3] == 4 and counts[3, 0] == 4 and counts[2, 2] == 0


def test_otsu_splits_two_levels_between_them():
    g = np.array([[0.2, 0.2, 0.8, 0.8, 0.8]])
    t = otsu_threshold(g)
    assert 0.2 < t <= 0.8
    assert np.isnan(otsu_threshold(np.full((3, 3), 0.5)))


@pytest.mark.parametrize("gray, error, match", [
    (np.full((10, 10), 0.5), ValueError, "same gray level"),
    (np.zeros((10,)), ValueError, r"\(H, W\)"),
    (np.full((4, 4), 2.0), ValueError, r"outside \[0, 1\]"),
    (np.array([["a"]]), TypeError, "real gray levels"),
])
def test_bad_pictures_are_refused(gray, error, match):
    with pytest.raises(error, match=match):
        digit_features(gray)


def test_the_picture_is_not_modified():
    g = paper(20, 20)
    g[2:18, 8:12] = 0.0
    before = g.copy()
    digit_features(g)
    np.testing.assert_array_equal(g, before)


# ---- area_resize and the reduction's memory -------------------------------------------------
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


@pytest.mark.slow  # a child process
def test_a_very_wide_digit_picture_is_reduced_in_bounded_memory():
    # 3 x 2**22 float64 is 96 MiB; the old weight matrices needed 1 GiB per temporary
    result, rss = run_limited(WIDE_LINE, limit_mb=900)
    assert result == "ok", result


@pytest.mark.slow  # a child process; fast: test_area_resize_is_the_mean_over_each_footprint
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
