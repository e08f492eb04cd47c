"""max_pool2d, avg_pool2d and pad: gradients, PyTorch parity (ties and NaN included),
dtypes and bad arguments. Values against loop references and per-case gradchecks are in the
shared op table (op_cases/conv.py). docs/backward.md §17 (pooling) and §18 (pad).
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

rng = np.random.default_rng(21)

POOL = [  # (x shape, kernel_size, stride, padding)
    ((2, 3, 6, 6), 2, None, 0), ((2, 2, 7, 7), 3, 2, 1), ((1, 2, 6, 5), (3, 2), (1, 2), (1, 0)),
    ((3, 5, 5), 2, 1, 0), ((1, 2, 7, 5), (2, 3), 1, (1, 1)), ((2, 1, 4, 4), 1, 2, 0),
]
POOL_IDS = [f"{s}-k{k}-s{st}-p{p}" for s, k, st, p in POOL]


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("sx,k,s,p", POOL, ids=POOL_IDS)
def test_gradcheck_float64(name, sx, k, s, p):
    f = getattr(F, name)
    report = mg.gradcheck(lambda x: f(x, k, s, p), [rng.standard_normal(sx)], atol=1e-8,
                          rtol=1e-6)
    assert report.ok and report.inputs


def _both(mg_fn, t_fn, x, cot_seed=0, integer_cot=False):
    """(minigrad value, grad), (torch value, grad) for one random cotangent. An integer
    cotangent (1 to 1000) makes every gradient sum exact in any order, so gradients can be
    compared bit for bit: where each window sends its share shows exactly."""
    torch = pytest.importorskip("torch")
    m = mg.Tensor(x.copy(), requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    out, tout = mg_fn(m), t_fn(t)
    assert out.shape == tuple(tout.shape)
    cot_rng = np.random.default_rng(cot_seed)
    cot = (cot_rng.integers(1, 1001, out.shape) if integer_cot
           else cot_rng.standard_normal(out.shape)).astype(x.dtype)
    out.backward(cot)
    tout.backward(torch.from_numpy(cot))
    return (out.data, m.grad), (tout.detach().numpy(), t.grad.numpy())


def _assert_close(mine, theirs, dtype, terms=4):
    for a, b in zip(mine, theirs, strict=True):
        assert a.dtype == dtype and a.shape == b.shape
        scale = np.max(np.abs(b), initial=1.0)
        np.testing.assert_allclose(a, b, rtol=0, atol=terms * np.finfo(dtype).eps * scale)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sx,k,s,p", POOL, ids=POOL_IDS)
def test_pools_match_torch(sx, k, s, p, dtype):
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    x = rng.standard_normal(sx).astype(dtype)
    mine, theirs = _both(lambda t: F.max_pool2d(t, k, s, p), lambda t: TF.max_pool2d(t, k, s, p),
                         x, integer_cot=True)
    for a, b in zip(mine, theirs, strict=True):  # max pooling moves values (and exact integer sums)
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, b)
    for include in (True, False):
        mine, theirs = _both(lambda t: F.avg_pool2d(t, k, s, p, count_include_pad=include),  # noqa: B023 (called at once)
                             lambda t: TF.avg_pool2d(t, k, s, p, count_include_pad=include), x)  # noqa: B023 (called at once)
        _assert_close(mine, theirs, dtype, terms=4 * 9)


def test_random_pool_configurations_match_torch():
    """50 seeded random shapes, kernels, strides and paddings against torch (float64): max
    pooling bit for bit (rounded inputs, so ties are common; integer cotangents), average
    pooling with and without counting the padding to a few ulps."""
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    r = np.random.default_rng(2027)
    for _ in range(50):
        k = tuple(int(v) for v in r.integers(1, 4, 2))
        s = None if r.random() < 0.3 else tuple(int(v) for v in r.integers(1, 4, 2))
        p = tuple(int(r.integers(0, kk // 2 + 1)) for kk in k)
        H, W = (int(r.integers(kk, 9)) for kk in k)
        shape = (2, H, W) if r.random() < 0.2 else (int(r.integers(1, 3)), 2, H, W)
        x = np.round(r.standard_normal(shape) * 2) / 2
        mine, theirs = _both(lambda t: F.max_pool2d(t, k, s, p),  # noqa: B023 (called at once)
                             lambda t: TF.max_pool2d(t, k, s, p), x, integer_cot=True)  # noqa: B023 (called at once)
        for a, b in zip(mine, theirs, strict=True):
            np.testing.assert_array_equal(a, b)
        include = bool(r.random() < 0.5)
        mine, theirs = _both(lambda t: F.avg_pool2d(t, k, s, p, count_include_pad=include),  # noqa: B023 (called at once)
                             lambda t: TF.avg_pool2d(t, k, s, p, count_include_pad=include), x)  # noqa: B023 (called at once)
        _assert_close(mine, theirs, np.float64, terms=4 * 9)


TIES = {  # inputs full of equal values: where does each window's gradient go?
    "all-equal-overlapping": (np.ones((1, 1, 4, 5)), 2, 1, 0),
    "all-equal-padded": (np.full((1, 2, 5, 5), -3.0), 3, 2, 1),
    "two-levels": (np.array([[[[1, 2, 2, 1], [2, 2, 1, 2], [2, 1, 2, 2], [1, 2, 2, 2.0]]]]),
                   (2, 3), 1, (1, 1)),
    "integers-rounded": (np.round(rng.standard_normal((2, 3, 6, 6))), 3, 1, 1),
    "zeros-and-negative-padding": (np.zeros((1, 1, 3, 3)) - np.eye(3), 2, 1, 1),
    "minus-inf-beside-the-padding": (np.array([[[[-np.inf, -np.inf, 1.0], [-np.inf, 2.0, 0.0],
                                                 [3.0, -np.inf, -np.inf]]]]), 2, 1, 1),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(TIES))
def test_max_pool_ties_go_where_torch_sends_them(name, dtype):
    torch = pytest.importorskip("torch")
    x, k, s, p = TIES[name]
    mine, theirs = _both(lambda t: F.max_pool2d(t, k, s, p),
                         lambda t: torch.nn.functional.max_pool2d(t, k, s, p), x.astype(dtype),
                         integer_cot=True)
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_max_pool_ties_first_in_row_major_order():
    """Hand-derived, torch or not: a window of equal values sends its gradient to its
    top-left element (the first in row-major order)."""
    x = mg.Tensor(np.ones((1, 1, 3, 3)), requires_grad=True)
    F.max_pool2d(x, 2, 1).backward(np.array([[[[1.0, 10.0], [100.0, 1000.0]]]]))
    np.testing.assert_array_equal(x.grad[0, 0], [[1, 10, 0], [100, 1000, 0], [0, 0, 0]])


def test_max_pool_nan_goes_to_the_last_nan_as_torch():
    nan = np.nan
    x = np.array([[[[1.0, nan, 1.0], [nan, 1.0, 1.0], [1.0, 1.0, 5.0]]]])
    t = mg.Tensor(x, requires_grad=True)
    out = F.max_pool2d(t, 2, 1)
    np.testing.assert_array_equal(out.data[0, 0], [[nan, nan], [nan, 5.0]])
    out.backward(np.array([[[[1.0, 10.0], [100.0, 1000.0]]]]))
    # window (0, 0) holds NaN at (0, 1) and (1, 0): the gradient goes to the last, (1, 0)
    np.testing.assert_array_equal(t.grad[0, 0], [[0, 10, 0], [101, 0, 0], [0, 0, 1000]])
    torch = pytest.importorskip("torch")
    mine, theirs = _both(lambda a: F.max_pool2d(a, 2, 1),
                         lambda a: torch.nn.functional.max_pool2d(a, 2, 1), x,
                         integer_cot=True)
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_avg_pool_counts_padding_by_default():
    """count_include_pad=True: a corner window of a zero-padded 2 x 2 ones image averages
    1 one and 3 zeros (PyTorch's default); with False only the real element counts."""
    x = mg.Tensor(np.ones((1, 1, 2, 2)), requires_grad=True)
    out = F.avg_pool2d(x, 2, 2, 1)
    np.testing.assert_array_equal(out.data[0, 0], [[0.25, 0.25], [0.25, 0.25]])
    out.backward(np.ones((1, 1, 2, 2)))
    np.testing.assert_array_equal(x.grad, np.full((1, 1, 2, 2), 0.25))
    x2 = mg.Tensor(np.ones((1, 1, 2, 2)), requires_grad=True)
    out = F.avg_pool2d(x2, 2, 2, 1, count_include_pad=False)
    np.testing.assert_array_equal(out.data, np.ones((1, 1, 2, 2)))
    out.backward(np.ones((1, 1, 2, 2)))
    np.testing.assert_array_equal(x2.grad, np.ones((1, 1, 2, 2)))


# ---- pad ----------------------------------------------------------------------------------
PADS = [  # (shape, pad_width, mode, value)
    ((2, 3, 4, 5), ((0, 0), (0, 0), (1, 2), (3, 1)), "constant", 0.0),
    ((2, 3, 4, 5), ((0, 0), (1, 1), (2, 0), (0, 2)), "constant", -1.25),
    ((2, 3, 4, 5), ((0, 0), (0, 0), (3, 1), (2, 4)), "reflect", 0.0),
    ((2, 3, 4, 5), ((0, 0), (0, 0), (2, 3), (1, 0)), "edge", 0.0),
    ((2, 3, 7), ((0, 0), (0, 0), (6, 5)), "reflect", 0.0),
    ((2, 3, 7), ((0, 0), (0, 0), (9, 4)), "edge", 0.0),
]
TORCH_MODE = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}


def _torch_pad_list(pairs):
    """NumPy's per-axis pairs, first axis first -> torch's flat list, last axis first."""
    flat = [v for b, a in reversed(pairs) for v in (b, a)]
    while flat[-2:] == [0, 0]:  # torch's non-constant modes pad only the trailing axes
        flat = flat[:-2]
    return flat


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,pw,mode,value", PADS, ids=[f"{p[2]}-{p[1]}" for p in PADS])
def test_pad_matches_torch(shape, pw, mode, value, dtype):
    torch = pytest.importorskip("torch")
    kw = dict(value=value) if mode == "constant" else {}
    x = rng.standard_normal(shape).astype(dtype)
    mine, theirs = _both(lambda t: F.pad(t, pw, mode, **kw),
                         lambda t: torch.nn.functional.pad(t, _torch_pad_list(pw),
                                                           TORCH_MODE[mode], **kw), x)
    _assert_close(mine, theirs, dtype, terms=4)


@pytest.mark.parametrize("pw", [3, (1, 2), [[2, 0], [0, 3]], ((1,), (2,)), np.array([[1, 1]])])
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_width_as_numpy_reads_it(pw, mode):
    x = rng.standard_normal((4, 5))  # wider than every pad: reflect takes them all
    np.testing.assert_array_equal(F.pad(x, pw, mode).data, np.pad(x, pw, mode))
    report = mg.gradcheck(lambda t: F.pad(t, pw, mode), [x], atol=1e-8, rtol=1e-6)
    assert report.ok


def test_pad_copies_of_an_element_each_send_it_their_gradient():
    """[a, b, c] reflected by 2 each side (the most reflect takes) is c b | a b c | b a: a 2,
    b 3, c 2 copies. Edge repeats the ends any number of times."""
    t = mg.Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    out = F.pad(t, 2, mode="reflect")
    np.testing.assert_array_equal(out.data, [3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0])
    out.backward(np.ones(7))
    np.testing.assert_array_equal(t.grad, [2.0, 3.0, 2.0])
    e = mg.Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    F.pad(e, (2, 4), mode="edge").backward(np.arange(9.0))
    np.testing.assert_array_equal(e.grad, [0 + 1 + 2, 3, 4 + 5 + 6 + 7 + 8])


REFLECT_TOO_WIDE = [  # (shape, pad_width): a width >= the axis' length
    ((3,), 3), ((3,), (0, 5)), ((3,), (4, 0)), ((1, 4), ((1, 0), (1, 1))),
    ((2, 3, 7), ((0, 0), (0, 0), (7, 0))), ((2, 5), ((0, 0), (2, 5))),
]


@pytest.mark.parametrize("shape, pw", REFLECT_TOO_WIDE, ids=[f"{s}-{p}" for s, p in REFLECT_TOO_WIDE])
def test_pad_reflect_as_wide_as_the_axis_is_refused_naming_pad_width(shape, pw):
    """Reflect mirrors the axis without its edge, so it has n - 1 elements to give on each
    side; NumPy reflects again past that, torch refuses, and so does pad: a ValueError
    naming pad_width, the axis and its length."""
    t = mg.Tensor(np.ones(shape), requires_grad=True)
    with pytest.raises(ValueError, match=r"^pad pad_width: got .* for axis \d+ of length \d+ "
                                         r"with mode 'reflect'; expected widths of at most"):
        F.pad(t, pw, mode="reflect")
    F.pad(t, pw, mode="edge")  # edge repeats the end: any width
    F.pad(t, pw)


def test_pad_reflect_width_rule_is_torchs():
    torch = pytest.importorskip("torch")
    x = torch.zeros(1, 2, 3)
    torch.nn.functional.pad(x, (2, 2), mode="reflect")  # n - 1: taken
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        torch.nn.functional.pad(x, (3, 0), mode="reflect")
    F.pad(np.zeros((1, 2, 3)), ((0, 0), (0, 0), (2, 2)), mode="reflect")


@pytest.mark.parametrize("pw", [1, (1, 2), ((0, 1),), [[2, 2]]])
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_of_a_0d_array_is_refused_naming_pad_width(pw, mode):
    """A 0-d array has no axis to pad: np.pad returns it unchanged whatever the widths,
    torch.nn.functional.pad refuses; a ValueError naming pad_width (not NumPy's own
    TypeError from inside np.pad)."""
    t = mg.Tensor(np.array(1.5), requires_grad=True)
    with pytest.raises(ValueError, match=r"^pad pad_width: got .* for a 0-d x; expected "
                                         r"zero widths .*no axis to pad"):
        F.pad(t, pw, mode)


@pytest.mark.parametrize("pw", [0, (0, 0), [[0, 0]]])
def test_pad_of_a_0d_array_by_zero_is_the_array_as_numpy(pw):
    t = mg.Tensor(np.array(1.5), requires_grad=True)
    out = F.pad(t, pw)
    np.testing.assert_array_equal(out.data, np.pad(t.data, pw))
    assert out.shape == ()
    out.backward(np.array(2.0))
    assert t.grad.shape == () and t.grad == 2.0


def test_float32_stays_float32_and_inputs_unchanged():
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    keep = x.copy()
    for f in (lambda t: F.max_pool2d(t, 3, 2, 1), lambda t: F.avg_pool2d(t, 3, 2, 1),
              lambda t: F.pad(t, ((0, 0), (0, 0), (2, 2), (2, 2)), "reflect"),
              lambda t: F.pad(t, 1, value=2.0)):
        t = mg.Tensor(x, requires_grad=True)
        out = f(t)
        out.backward(np.ones(out.shape, np.float32))
        assert out.dtype == np.float32 and t.grad.dtype == np.float32
        np.testing.assert_array_equal(x, keep)


X = np.zeros((2, 3, 5, 5))
BAD = [
    ("max-kernel-zero", lambda: F.max_pool2d(X, 0), ValueError, ["kernel_size", "got 0"]),
    ("max-kernel-float", lambda: F.max_pool2d(X, 2.0), TypeError, ["kernel_size", "2.0"]),
    ("max-stride-zero", lambda: F.max_pool2d(X, 2, 0), ValueError, ["stride", "got 0"]),
    ("max-padding-negative", lambda: F.max_pool2d(X, 2, 1, -1), ValueError,
     ["padding", "-1", ">= 0"]),
    ("max-padding-over-half", lambda: F.max_pool2d(X, 2, 1, 2), ValueError,
     ["padding", "(2, 2)", "half the kernel"]),
    ("max-kernel-too-big", lambda: F.max_pool2d(X, 6), ValueError,
     ["kernel", "(6, 6)", "(5, 5)", "fit"]),
    ("max-x-2d", lambda: F.max_pool2d(X[0, 0], 2), ValueError, ["x", "(5, 5)", "(B, C, H, W)"]),
    ("avg-kernel-triple", lambda: F.avg_pool2d(X, (2, 2, 2)), ValueError,
     ["kernel_size", "(2, 2, 2)"]),
    ("avg-count-include-pad-str", lambda: F.avg_pool2d(X, 2, count_include_pad="yes"),
     TypeError, ["count_include_pad", "'yes'"]),
    ("avg-None", lambda: F.avg_pool2d(None, 2), TypeError, ["avg_pool2d", "None"]),
    ("pad-mode-unknown", lambda: F.pad(X, 1, "symmetric"), ValueError,
     ["mode", "'symmetric'", "constant, reflect, edge, circular"]),
    ("pad-mode-none", lambda: F.pad(X, 1, None), TypeError, ["mode", "None"]),
    ("pad-crop-past-the-axis", lambda: F.pad(X, -2), ValueError,
     ["pad_width", "(-2, -2)", "length 2", "crop at most"]),
    ("pad-float-width", lambda: F.pad(X, 1.5), TypeError, ["pad_width", "1.5", "integers"]),
    ("pad-too-many-pairs", lambda: F.pad(X, ((1, 1),) * 5), ValueError,
     ["pad_width", "(2, 3, 5, 5)", "4 pairs"]),
    ("pad-value-str", lambda: F.pad(X, 1, value="0"), TypeError, ["value", "'0'", "number"]),
    ("pad-value-with-reflect", lambda: F.pad(X, 1, "reflect", value=1.0), ValueError,
     ["value", "'reflect'", "'constant'"]),
    ("pad-edge-empty-axis", lambda: F.pad(np.zeros((0, 3)), 1, "edge"), ValueError,
     ["pad_width", "empty axis 0"]),
]


@pytest.mark.parametrize("call,exc,words", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_arguments_are_named(call, exc, words):
    before = X.copy()
    with pytest.raises(exc) as info:
        call()
    for word in words:
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"
    np.testing.assert_array_equal(X, before)
