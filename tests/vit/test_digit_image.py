"""The reduction of a digit picture to the UCI optdigits format, on synthetic pictures whose
8x8 counts are worked out by hand in each test."""
from __future__ import annotations

import numpy as np
import pytest

from vit.io.digit_image import area_resize, block_counts, digit_features, fit_to_frame, ink_mask, otsu_threshold


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
