"""interpolate and adaptive average pooling beyond the op table: the source indices against
PyTorch over many sizes and factors (float32 and float64), checked arguments, and sizes
bounded before anything is allocated."""
from __future__ import annotations

import warnings

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.ops import bounds

RNG = np.random.default_rng(3739)
X3 = np.arange(10.0).reshape(1, 2, 5)
X4 = np.arange(40.0).reshape(1, 2, 4, 5)


def _sweep():
    for mode, nd in (("nearest", 3), ("linear", 3), ("nearest", 4), ("bilinear", 4)):
        for ac in ((None,) if mode == "nearest" else (False, True)):
            for n in (1, 2, 3, 5, 8, 13):
                for kw in ([dict(size=s) for s in (1, 2, 3, 7, 10, 26)]
                           + [dict(scale_factor=f) for f in (0.5, 1.5, 2, 3, 0.3, 1.7, 1 / 3)]
                           + [dict(scale_factor=1.5, recompute_scale_factor=True)]):
                    if kw.get("scale_factor", 1) * n >= 1:
                        yield mode, nd, ac, n, kw


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_source_index_and_weight_is_pytorchs(dtype):
    """A sweep of sizes, factors and modes, values and gradients against torch: a wrong
    index (float32 floors included) moves a value by O(1), far beyond the tolerance."""
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    for mode, nd, ac, n, kw in _sweep():
        x = RNG.standard_normal((2, 3, n) if nd == 3 else (2, 3, n, n + 2)).astype(dtype)
        theirs = torch.tensor(x, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = TF.interpolate(theirs, mode=mode, align_corners=ac, **kw)
        mine = mg.tensor(x, requires_grad=True)
        got = F.interpolate(mine, mode=mode, align_corners=ac, **kw)
        g = RNG.standard_normal(tuple(want.shape)).astype(dtype)
        want.backward(torch.tensor(g))
        got.backward(g)
        label = (mode, ac, n, kw)
        assert got.shape == tuple(want.shape) and got.dtype == dtype, label
        helpers.assert_close(got.data, want.detach().numpy(), dtype, ulps=64)
        helpers.assert_close(mine.grad, theirs.grad.numpy(), dtype, ulps=64)


def test_the_factor_not_the_sizes_places_nearest():
    """10 by factor 1.55 gives 15 outputs read at floor(o / 1.55); size 15 reads at
    floor(o · 10/15): the two differ (o = 3 reads 1, and 2), and each follows its rule."""
    x = np.arange(10.0).reshape(1, 1, 10)
    by_factor = F.interpolate(x, scale_factor=1.55).data[0, 0]
    by_size = F.interpolate(x, size=15).data[0, 0]
    expected_factor = [min(int(np.floor(o / 1.55)), 9) for o in range(15)]
    expected_size = [min(int(np.floor(o * 10 / 15)), 9) for o in range(15)]
    assert by_factor.tolist() == expected_factor and by_size.tolist() == expected_size
    assert expected_factor[3] == 1 and expected_size[3] == 2  # the case separates the rules


def test_align_corners_keeps_the_corners():
    x = RNG.standard_normal((1, 2, 4, 6))
    y = F.interpolate(x, size=(7, 11), mode="bilinear", align_corners=True).data
    np.testing.assert_allclose(y[..., [0, 0, -1, -1], [0, -1, 0, -1]],
                               x[..., [0, 0, -1, -1], [0, -1, 0, -1]], rtol=1e-15)


def test_inputs_are_not_modified_and_gradients_add_for_shared_sources():
    x = RNG.standard_normal((1, 1, 3))
    kept = x.copy()
    t = mg.tensor(x, requires_grad=True)
    F.interpolate(t, size=6).backward(np.ones((1, 1, 6)))  # each source read twice
    np.testing.assert_array_equal(x, kept)
    np.testing.assert_array_equal(t.grad, [[[2.0, 2.0, 2.0]]])


@pytest.mark.parametrize("call, error, words", [
    (lambda: F.interpolate(X3), ValueError, ["interpolate", "size", "scale_factor"]),
    (lambda: F.interpolate(X3, size=3, scale_factor=2), ValueError, ["exactly one"]),
    (lambda: F.interpolate(X3, size=0), ValueError, ["size", "got 0"]),
    (lambda: F.interpolate(X3, size=2.5), TypeError, ["size", "2.5"]),
    (lambda: F.interpolate(X4, size=(2, 3, 4)), ValueError, ["size", "tuple of 2"]),
    (lambda: F.interpolate(X3, scale_factor=0.0), ValueError, ["scale_factor", "0"]),
    (lambda: F.interpolate(X3, scale_factor=float("nan")), ValueError, ["scale_factor"]),
    (lambda: F.interpolate(X3, scale_factor=0.1), ValueError, ["scale_factor", ">= 1"]),
    (lambda: F.interpolate(X3, scale_factor="2"), TypeError, ["scale_factor", "'2'"]),
    (lambda: F.interpolate(X3, size=4, mode="bilinear"), ValueError, ["mode", "'bilinear'"]),
    (lambda: F.interpolate(X4, size=4, mode="linear"), ValueError, ["mode", "'linear'"]),
    (lambda: F.interpolate(X3, size=4, mode="cubic"), ValueError, ["mode", "'cubic'"]),
    (lambda: F.interpolate(X3, size=4, align_corners=True), ValueError,
     ["align_corners", "nearest"]),
    (lambda: F.interpolate(X3, size=4, mode="linear", align_corners=1), TypeError,
     ["align_corners", "True or False"]),
    (lambda: F.interpolate(X3, size=4, recompute_scale_factor=True), ValueError,
     ["recompute_scale_factor"]),
    (lambda: F.interpolate(X3[0], size=4), ValueError, ["x", "(N, C, L)"]),
    (lambda: F.interpolate(np.ones((1, 1, 0)), size=4), ValueError, ["x", ">= 1"]),
    (lambda: F.adaptive_avg_pool2d(X4, 0), ValueError, ["output_size", "got 0"]),
    (lambda: F.adaptive_avg_pool2d(X4, (2, 2, 2)), ValueError, ["output_size"]),
    (lambda: F.adaptive_avg_pool2d(X3[0], 2), ValueError, ["x", "(N, C, H, W)"]),
    (lambda: F.adaptive_avg_pool1d(X4, 2), ValueError, ["x", "(N, C, L)"]),
    (lambda: F.adaptive_avg_pool1d(X3, "2"), TypeError, ["output_size", "'2'"]),
])
def test_bad_arguments_name_the_op_and_the_argument(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert all(w in str(info.value) for w in words), str(info.value)


@pytest.mark.parametrize("call, name", [
    (lambda: F.interpolate(X3, scale_factor=1e9), "scale_factor"),
    (lambda: F.interpolate(X4, scale_factor=(1e5, 1e5), mode="bilinear"), "scale_factor"),
    (lambda: F.interpolate(X4, scale_factor=1e300), "scale_factor"),
    (lambda: F.interpolate(X4, size=(2**20, 2**20)), "size"),
    (lambda: F.adaptive_avg_pool2d(X4, (2**20, 2**20)), "output_size"),
    (lambda: F.adaptive_avg_pool1d(X3, 2**40), "output_size"),
])
def test_huge_outputs_are_refused_before_allocation(call, name):
    with pytest.raises(ValueError) as info:
        call()
    assert name in str(info.value) and "MAX_OUTPUT_ELEMENTS" in str(info.value)


def test_the_bound_is_read_at_each_call(monkeypatch):
    monkeypatch.setattr(bounds, "MAX_OUTPUT_ELEMENTS", 1 * 2 * 9)
    F.interpolate(X3, size=9)
    with pytest.raises(ValueError, match="size"):
        F.interpolate(X3, size=10)


def test_adaptive_windows_overlap_and_repeat():
    """7 → 3: windows [0, 3), [2, 5), [4, 7) (each shares an end); 2 → 3: [0, 1), [0, 2),
    [1, 2); the gradient counts every window an element belongs to."""
    x = mg.tensor(np.arange(7.0).reshape(1, 1, 7), requires_grad=True)
    y = F.adaptive_avg_pool1d(x, 3)
    np.testing.assert_allclose(y.data[0, 0], [1.0, 3.0, 5.0])
    y.backward(np.ones((1, 1, 3)))
    np.testing.assert_allclose(x.grad[0, 0], [1 / 3, 1 / 3, 2 / 3, 1 / 3, 2 / 3, 1 / 3, 1 / 3])
    z = mg.tensor(np.array([[[1.0, 3.0]]]), requires_grad=True)
    w = F.adaptive_avg_pool1d(z, 3)
    np.testing.assert_allclose(w.data[0, 0], [1.0, 2.0, 3.0])
    w.backward(np.ones((1, 1, 3)))
    np.testing.assert_allclose(z.grad[0, 0], [1.5, 1.5])


def test_an_inf_outside_a_window_does_not_leak_into_it():
    x = np.array([[[1.0, 2.0, np.inf, 4.0, 5.0, 6.0]]])
    np.testing.assert_array_equal(F.adaptive_avg_pool1d(x, 2).data, [[[np.inf, 5.0]]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape, size", [((2, 2, 7, 5), 3), ((1, 3, 3, 4), (5, 7)),
                                         ((2, 1, 8, 6), (None, 4))])
def test_adaptive_max_pool_indices_and_gradients_are_pytorchs(shape, size, dtype):
    """Ties (small integers), a NaN and a plane of -inf, overlapping windows: the values,
    the indices and the gradient (integer cotangent: exact sums) bit for bit."""
    torch = pytest.importorskip("torch")
    x = RNG.integers(0, 3, shape).astype(dtype)
    x[0, 0, 1, 1] = np.nan
    x[-1, -1] = -np.inf
    m, t = mg.tensor(x.copy(), requires_grad=True), torch.tensor(x, requires_grad=True)
    (y, i) = F.adaptive_max_pool2d(m, size, return_indices=True)
    (ty, ti) = torch.nn.functional.adaptive_max_pool2d(t, size, return_indices=True)
    cot = RNG.integers(1, 1001, y.shape).astype(dtype)
    y.backward(cot)
    ty.backward(torch.from_numpy(cot))
    np.testing.assert_array_equal(y.data, ty.detach().numpy())
    np.testing.assert_array_equal(i.data, ti.numpy())
    np.testing.assert_array_equal(m.grad, t.grad.numpy())
    assert m.grad.dtype == dtype
