"""pad's circular mode (NumPy's 'wrap') and negative widths, written out by hand: which
elements the padding copies, the VJP that sums every copy's cotangent back onto its source,
torch's order (circular crops, then wraps; the others pad, then crop), and the widths refused
(torch's rules: circular wraps at most once; no crop past the axis). Against torch on random
inputs: op_cases/conv.py (ops/test_all_ops_torch.py)."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

X5 = np.arange(5.0)


def _pad1(x, pw, mode):
    return F.pad(x, pw, mode).data.tolist()


def test_circular_copies_the_other_end():
    assert _pad1(X5, (2, 1), "circular") == [3, 4, 0, 1, 2, 3, 4, 0]
    assert _pad1(X5, (5, 0), "circular") == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]  # once around


def test_wrap_is_numpys_spelling_of_circular():
    x = np.random.default_rng(3).standard_normal((3, 4))
    pw = ((1, 2), (3, 4))
    np.testing.assert_array_equal(F.pad(x, pw, "wrap").data, F.pad(x, pw, "circular").data)
    np.testing.assert_array_equal(F.pad(x, pw, "wrap").data, np.pad(x, pw, "wrap"))


def test_circular_vjp_sums_every_wrapped_copy():
    # [3 4 | 0 1 2 3 4 | 0 1 2 3 4]: 0..2 appear 2x... count each source's copies
    t = mg.Tensor(X5.copy(), requires_grad=True)
    out = F.pad(t, (2, 5), "circular")
    g = np.arange(1.0, out.shape[0] + 1)  # distinct cotangents: a sum, not a count
    out.backward(g)
    src = np.r_[[3, 4], np.arange(5), np.arange(5)]
    want = np.bincount(src, weights=g, minlength=5)
    np.testing.assert_array_equal(t.grad, want)


def test_negative_widths_crop_in_torchs_order():
    # circular crops first and wraps what is left: (-1, 2) wraps [1 2 3 4], not [0 .. 4]
    assert _pad1(X5, (-1, 2), "circular") == [1, 2, 3, 4, 1, 2]
    assert _pad1(X5, (4, -1), "circular") == [0, 1, 2, 3, 0, 1, 2, 3]
    # the others pad the whole axis, then crop: reflect (3, -4) mirrors 3 2 1 before 0
    assert _pad1(X5, (3, -4), "reflect") == [3, 2, 1, 0]
    assert _pad1(X5, (-1, 2), "reflect") == [1, 2, 3, 4, 3, 2]
    assert _pad1(X5, (3, -4), "edge") == [0, 0, 0, 0]
    assert _pad1(X5, (-2, -1), "constant") == [2, 3]
    assert _pad1(X5, (-1, -4), "constant") == []  # all cropped: empty, as torch


def test_cropped_elements_get_no_gradient():
    t = mg.Tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    out = F.pad(t, ((-1, 1), (2, -3)), "edge")  # rows 1, 2 + a copy of 2; cols 0,0,0,1... cut
    out.backward(np.ones(out.shape))
    np.testing.assert_array_equal(t.grad, [[0, 0, 0, 0], [3, 0, 0, 0], [6, 0, 0, 0]])


@pytest.mark.parametrize("pw, mode, words", [
    ((6, 0), "circular", ["(6, 0)", "at most 5", "wraps around at most once"]),
    ((-1, 5), "circular", ["(-1, 5)", "at most 4"]),  # 4 left after cropping one
    ((3, -4), "circular", ["(3, -4)", "at most 1"]),
    ((-6, 1), "circular", ["(-6, 1)", "crop at most the 5"]),
    ((-3, -3), "constant", ["(-3, -3)", "crop at most the 5"]),
    ((-3, -3), "reflect", ["(-3, -3)", "crop at most"]),
    ((-1, 5), "reflect", ["(-1, 5)", "at most 4"]),
])
def test_widths_past_what_the_axis_holds_are_refused(pw, mode, words):
    with pytest.raises(ValueError, match="pad pad_width") as info:
        F.pad(X5, pw, mode)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_circular_on_an_empty_axis_and_crop_only_widths():
    e = np.zeros((2, 0))
    assert F.pad(e, ((1, 1), (0, 0)), "circular").shape == (4, 0)
    with pytest.raises(ValueError, match="pad pad_width"):
        F.pad(e, ((0, 0), (1, 0)), "circular")
    # cropping needs nothing to copy: an empty result in every mode (torch refuses it for
    # reflect and replicate only)
    for mode in ("constant", "reflect", "edge", "circular"):
        assert F.pad(X5, (0, -5), mode).shape == (0,)


def test_huge_widths_are_named_and_bounded():
    x = mg.Tensor(np.ones((2, 3)), requires_grad=True)
    for pw in (((-2**70, 0), (0, 0)), ((0, 0), (2**70, -2**70))):
        with pytest.raises((TypeError, ValueError), match="pad pad_width"):
            F.pad(x, pw)
    with pytest.raises(ValueError, match="elements to allocate"):  # bounded before it grows
        F.pad(x, ((2**40, -2**40 + 1), (0, 0)))


def test_inputs_are_not_modified_and_float32_kept():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    keep = x.copy()
    t = mg.Tensor(x, requires_grad=True)
    out = F.pad(t, ((-1, 1), (2, -1)), "circular")
    out.backward(np.ones(out.shape, np.float32))
    assert out.dtype == np.float32 and t.grad.dtype == np.float32
    np.testing.assert_array_equal(x, keep)
