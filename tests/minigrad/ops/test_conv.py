"""conv1d and conv2d: gradients against finite differences and PyTorch, dtypes, bad arguments.

Values against loop references and the per-case gradchecks live in the shared op table
(op_cases/conv.py); this file adds the float64 gradcheck over every argument combination,
torch parity of values and gradients, and the refusals. docs/backward.md §16.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

rng = np.random.default_rng(14)
EPS64, EPS32 = np.finfo(np.float64).eps, np.finfo(np.float32).eps

# (x shape, weight shape, keywords): every argument, alone and combined
CONV2D = [
    ((2, 3, 6, 5), (4, 3, 3, 3), dict(stride=2, padding=1)),
    ((1, 4, 7, 7), (4, 2, 3, 2), dict(groups=2, dilation=(2, 1), padding=(2, 0))),
    ((2, 4, 5, 5), (8, 1, 3, 3), dict(groups=4, padding="same")),
    ((3, 2, 4, 6), (3, 2, 1, 1), dict(stride=(1, 3))),
    ((1, 1, 9, 4), (2, 1, 4, 1), dict(stride=(3, 1), padding=(1, 0), dilation=(2, 1))),
    ((2, 6, 6, 6), (6, 2, 2, 3), dict(groups=3, padding="valid")),
    ((3, 5, 4), (2, 3, 2, 2), dict(padding=1)),  # unbatched
]
CONV1D = [
    ((2, 3, 10), (4, 3, 3), dict(stride=2, padding=1, dilation=2)),
    ((1, 4, 7), (8, 1, 2), dict(groups=4, padding="same")),
    ((3, 6), (2, 3, 3), dict()),  # unbatched
]
IDS2, IDS1 = [f"{c[0]}-{c[1]}-{c[2]}" for c in CONV2D], [f"{c[0]}-{c[1]}-{c[2]}" for c in CONV1D]


@pytest.mark.parametrize("sx,sw,kw", CONV2D + CONV1D, ids=IDS2 + IDS1)
def test_gradcheck_float64_with_bias(sx, sw, kw):
    f = F.conv2d if len(sw) == 4 else F.conv1d
    report = mg.gradcheck(lambda x, w, b: f(x, w, b, **kw),
                          [rng.standard_normal(sx), rng.standard_normal(sw),
                           rng.standard_normal(sw[0])], atol=1e-8, rtol=1e-6)
    assert report.ok and len(report.inputs) == 3


def _torch_pair(f, tf, sx, sw, kw, dtype):
    """minigrad's and torch's values and gradients (x, w, b) for one random cotangent."""
    torch = pytest.importorskip("torch")
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (sx, sw, sw[:1]))
    ms = [mg.Tensor(a.copy(), requires_grad=True) for a in (x, w, b)]
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out, tout = f(*ms, **kw), tf(*ts, **kw)
    cot = rng.standard_normal(out.shape).astype(dtype)
    out.backward(cot)
    tout.backward(torch.from_numpy(cot))
    return ([out.data] + [m.grad for m in ms],
            [tout.detach().numpy()] + [t.grad.numpy() for t in ts])


def _close(mine, theirs, dtype, terms):
    """Equal up to rounding: a few ulps per summed term, scaled by the sum's magnitude."""
    for m, t in zip(mine, theirs, strict=True):
        assert m.shape == t.shape and m.dtype == dtype
        scale = np.max(np.abs(t), initial=1.0)
        np.testing.assert_allclose(m, t, rtol=0, atol=4 * terms * np.finfo(dtype).eps * scale)


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note on its own copy
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sx,sw,kw", CONV2D + CONV1D, ids=IDS2 + IDS1)
def test_matches_torch(sx, sw, kw, dtype):
    torch = pytest.importorskip("torch")
    f, tf = ((F.conv2d, torch.nn.functional.conv2d) if len(sw) == 4
             else (F.conv1d, torch.nn.functional.conv1d))
    mine, theirs = _torch_pair(f, tf, sx, sw, kw, dtype)
    terms = int(np.prod(sw[1:])) * int(np.prod(sx)) // sw[1]  # longest sum: w̄ sums B·Ho·Wo
    _close(mine, theirs, dtype, terms)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_random_configurations_match_torch():
    """60 seeded random shapes and arguments (stride, padding, dilation, groups, bias,
    batched or not) against torch in float64: values and all three gradients."""
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(2026)
    for _ in range(60):
        groups = int(r.choice([1, 2, 3]))
        C, O = groups * int(r.integers(1, 3)), groups * int(r.integers(1, 3))
        kh, kw = (int(k) for k in r.integers(1, 4, 2))
        dil = tuple(int(d) for d in r.integers(1, 3, 2))
        stride = tuple(int(s) for s in r.integers(1, 3, 2))
        pad = "same" if r.random() < 0.15 else tuple(int(p) for p in r.integers(0, 3, 2))
        if pad == "same":
            stride = (1, 1)
        H = int(r.integers(dil[0] * (kh - 1) + 1, 9))
        W = int(r.integers(dil[1] * (kw - 1) + 1, 9))
        sx = (C, H, W) if r.random() < 0.2 else (int(r.integers(1, 4)), C, H, W)
        kw_ = dict(stride=stride, padding=pad, dilation=dil, groups=groups)
        mine, theirs = _torch_pair(F.conv2d, torch.nn.functional.conv2d, sx,
                                   (O, C // groups, kh, kw), kw_, np.float64)
        _close(mine, theirs, np.float64, 4 * 9 * 64)


def test_bigger_cnn_shapes_match_torch_float32():
    """A benchmark-sized layer (28 x 28, batch 16): many columns per GEMM."""
    torch = pytest.importorskip("torch")
    mine, theirs = _torch_pair(F.conv2d, torch.nn.functional.conv2d, (16, 8, 28, 28),
                               (16, 8, 3, 3), dict(padding=1), np.float32)
    _close(mine, theirs, np.float32, 16 * 28 * 28)


@pytest.mark.parametrize("f,sx,sw", [(F.conv2d, (2, 3, 5, 5), (4, 3, 3, 3)),
                                     (F.conv1d, (2, 3, 7), (4, 3, 3))])
def test_float32_stays_float32_and_inputs_unchanged(f, sx, sw):
    arrays = [rng.standard_normal(s).astype(np.float32) for s in (sx, sw, sw[:1])]
    copies = [a.copy() for a in arrays]
    ts = [mg.Tensor(a, requires_grad=True) for a in arrays]
    out = f(*ts, stride=2, padding=1)
    out.backward(np.ones(out.shape, np.float32))
    assert out.dtype == np.float32
    assert all(t.grad.dtype == np.float32 for t in ts)
    for a, c in zip(arrays, copies, strict=True):
        np.testing.assert_array_equal(a, c)


def test_hand_computed_values_and_gradients():
    """A 1 x 1 x 3 x 3 input, a 2 x 2 kernel of ones, stride 1: each output is a window
    sum, and each input element's gradient counts the windows holding it."""
    x = mg.Tensor(np.arange(9.0).reshape(1, 1, 3, 3), requires_grad=True)
    w = mg.Tensor(np.ones((1, 1, 2, 2)), requires_grad=True)
    out = F.conv2d(x, w)
    np.testing.assert_array_equal(out.data, [[[[8.0, 12.0], [20.0, 24.0]]]])
    out.backward(np.ones((1, 1, 2, 2)))
    np.testing.assert_array_equal(x.grad, [[[[1, 2, 1], [2, 4, 2], [1, 2, 1]]]])
    np.testing.assert_array_equal(w.grad, [[[[8.0, 12.0], [20.0, 24.0]]]])


def test_groups_do_not_mix_channels():
    """With groups=2, output channels 0-1 see only input channels 0-1: their gradient with
    respect to channels 2-3 is exactly zero."""
    x = mg.Tensor(rng.standard_normal((2, 4, 5, 5)), requires_grad=True)
    w = mg.Tensor(rng.standard_normal((4, 2, 3, 3)))
    out = F.conv2d(x, w, groups=2)
    cot = np.zeros(out.shape)
    cot[:, :2] = 1.0
    out.backward(cot)
    assert np.all(x.grad[:, 2:] == 0) and np.all(x.grad[:, :2] != 0)


def test_integer_input_gives_no_graph():
    out = F.conv2d(np.arange(16).reshape(1, 1, 4, 4), np.ones((1, 1, 2, 2), dtype=np.int64))
    assert out.dtype.kind == "i" and not out.requires_grad
    np.testing.assert_array_equal(out.data[0, 0, 0], [10, 14, 18])


X = np.zeros((2, 4, 5, 5))
W = np.zeros((6, 4, 3, 3))
BAD = [
    ("x-3d-batch-missing-dims", lambda: F.conv2d(np.zeros((2, 5)), W), ValueError,
     ["x", "(2, 5)", "(B, C, H, W)"]),
    ("weight-ndim", lambda: F.conv2d(X, np.zeros((6, 4, 3))), ValueError,
     ["weight", "(6, 4, 3)", "(O, C/groups, kh, kw)"]),
    ("weight-channels", lambda: F.conv2d(X, np.zeros((6, 3, 3, 3))), ValueError,
     ["weight", "(6, 3, 3, 3)", "C/groups = 4"]),
    ("weight-channels-groups", lambda: F.conv2d(X, W, groups=2), ValueError,
     ["weight", "groups=2", "C/groups = 2"]),
    ("groups-not-divisor", lambda: F.conv2d(X, np.zeros((6, 1, 3, 3)), groups=3), ValueError,
     ["groups", "got 3", "4 input", "6 output"]),
    ("groups-zero", lambda: F.conv2d(X, W, groups=0), ValueError, ["groups", "got 0"]),
    ("groups-float", lambda: F.conv2d(X, W, groups=1.0), TypeError, ["groups", "1.0", "int"]),
    ("bias-shape", lambda: F.conv2d(X, W, np.zeros(4)), ValueError, ["bias", "(4,)", "(6,)"]),
    ("stride-zero", lambda: F.conv2d(X, W, stride=0), ValueError, ["stride", "got 0", ">= 1"]),
    ("stride-triple", lambda: F.conv2d(X, W, stride=(1, 1, 1)), ValueError,
     ["stride", "(1, 1, 1)", "tuple of 2"]),
    ("stride-bool", lambda: F.conv2d(X, W, stride=True), TypeError, ["stride", "True"]),
    ("dilation-zero", lambda: F.conv2d(X, W, dilation=(1, 0)), ValueError, ["dilation", "(1, 0)"]),
    ("padding-negative", lambda: F.conv2d(X, W, padding=-1), ValueError,
     ["padding", "-1", ">= 0"]),
    ("padding-float", lambda: F.conv2d(X, W, padding=0.5), TypeError, ["padding", "0.5"]),
    ("padding-unknown-str", lambda: F.conv2d(X, W, padding="full"), ValueError,
     ["padding", "'full'", "'same'"]),
    ("padding-same-strided", lambda: F.conv2d(X, W, stride=2, padding="same"), ValueError,
     ["padding", "'same'", "stride 1"]),
    ("kernel-bigger-than-input", lambda: F.conv2d(X, np.zeros((6, 4, 6, 3))), ValueError,
     ["kernel", "(6, 3)", "(5, 5)", "fit"]),
    ("dilated-kernel-too-big", lambda: F.conv2d(X, W, dilation=3), ValueError,
     ["kernel spanning (7, 7)", "dilation (3, 3)", "(5, 5)"]),
    ("x-None", lambda: F.conv2d(None, W), TypeError, ["conv2d", "x", "None"]),
    ("weight-complex", lambda: F.conv2d(X, W.astype(complex)), TypeError,
     ["conv2d", "weight", "complex"]),
    ("conv1d-x-4d", lambda: F.conv1d(X, W), ValueError, ["conv1d", "(B, C, L)"]),
    ("conv1d-stride-pair", lambda: F.conv1d(X[:, :, 0], W[:, :, 0], stride=(1, 2)),
     ValueError, ["conv1d", "stride", "(1, 2)"]),
    ("conv1d-kernel-too-big", lambda: F.conv1d(X[:, :, 0], np.zeros((6, 4, 7))), ValueError,
     ["conv1d", "kernel", "fit"]),
]


@pytest.mark.parametrize("call,exc,words", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_arguments_are_named(call, exc, words):
    before = [X.copy(), W.copy()]
    with pytest.raises(exc) as info:
        call()
    for word in words:
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"
    np.testing.assert_array_equal(X, before[0])
    np.testing.assert_array_equal(W, before[1])


def test_every_keyword_combination_runs_on_a_tiny_input():
    """Shapes agree with the output-size formula for every stride/padding/dilation/groups."""
    x = np.ones((1, 2, 5, 4))
    for s, p, d, g in itertools.product((1, 2), (0, 1), (1, 2), (1, 2)):
        w = np.ones((2, 2 // g, 2, 2))
        out = F.conv2d(x, w, stride=s, padding=p, dilation=d, groups=g)
        ho = (5 + 2 * p - d - 1) // s + 1
        wo = (4 + 2 * p - d - 1) // s + 1
        assert out.shape == (1, 2, ho, wo)


@pytest.mark.slow  # a benchmark run; conv's values and gradients: the rest of this file
def test_cnn_step_benchmark_runs():
    """benchmarks/cnn_step.py end to end in its --quick mode (no timing is asserted)."""
    import os
    import subprocess
    import sys
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    proc = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "cnn_step.py"),
                           "--quick", "--configs", "A"], capture_output=True, text=True,
                          timeout=600, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "A cnn 8x8" in proc.stdout and "minigrad32" in proc.stdout


@pytest.mark.parametrize("op, x, w, padding", [
    ("conv2d", np.ones((1, 1, 4, 4)), np.ones((1, 1, 2, 2)), 10**6),
    ("conv1d", np.ones((1, 1, 4)), np.ones((1, 1, 2)), 10**9),
])
def test_conv_padding_is_bounded_as_pad_bounds_it(op, x, w, padding):
    """The padded input is what conv builds first: a padding of 10**6 around a 4x4 image
    (4e12 elements) is refused before it is allocated, as F.pad refuses the same."""
    with pytest.raises(ValueError, match="pad_width.*MAX_OUTPUT_ELEMENTS"):
        F.pad(mg.tensor(x), [(0, 0)] * 2 + [(padding, padding)] * (x.ndim - 2))
    with pytest.raises(ValueError, match=f"{op} padding.*MAX_OUTPUT_ELEMENTS"):
        getattr(F, op)(mg.tensor(x), mg.tensor(w), padding=padding)
