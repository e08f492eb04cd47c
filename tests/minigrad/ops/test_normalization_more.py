"""layer_norm over several axes, rms_norm, batch_norm, instance_norm, group_norm: the rules
the op table does not check. The last-axis layer_norm is the same function bit for bit
whichever way it is spelled; arguments are refused naming the op and the argument (2**70
included); inputs are never modified; a batch statistic needs more than one value."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(31)
H = 2**70


def test_layer_norm_last_axis_spellings_give_the_same_bits():
    x, w, b = RNG.standard_normal((3, 4, 5)), RNG.standard_normal(5), RNG.standard_normal(5)
    g = RNG.standard_normal((3, 4, 5))
    outs = []
    for kw in ({}, {"normalized_shape": 5}, {"normalized_shape": (5,)}):
        ts = [mg.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = F.layer_norm(*ts, **kw)
        F.sum(y * g).backward()
        outs.append([y.data] + [t.grad for t in ts])
    for other in outs[1:]:
        for a, b_ in zip(outs[0], other, strict=True):
            assert np.array_equal(a, b_)


def test_layer_norm_over_two_axes_is_the_merged_last_axis():
    x, w = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((3, 4))
    merged = F.layer_norm(x.reshape(2, 12), w.reshape(12)).data.reshape(2, 3, 4)
    assert np.array_equal(F.layer_norm(x, w, normalized_shape=(3, 4)).data, merged)


def test_inputs_are_not_modified():
    x, w, b = RNG.standard_normal((4, 2, 3)), RNG.standard_normal(2), RNG.standard_normal(2)
    m, v = RNG.standard_normal(2), RNG.uniform(1, 2, 2)
    kept = [a.copy() for a in (x, w, b, m, v)]
    F.batch_norm(x, None, None, w, b, training=True)
    F.batch_norm(x, m, v, w, b)
    F.instance_norm(x, m, v, w, b, use_input_stats=False)
    F.group_norm(x, 2, w, b)
    F.rms_norm(x, (2, 3))
    for a, k in zip((x, w, b, m, v), kept, strict=True):
        assert np.array_equal(a, k)


X3 = np.arange(24.0).reshape(2, 3, 4) / 7
BAD = [
    ("ln-shape", lambda: F.layer_norm(X3, normalized_shape=(4, 4)), ValueError,
     "layer_norm normalized_shape"),
    ("ln-torch-order", lambda: F.layer_norm(X3, (4,)), ValueError, "normalized_shape=..."),
    ("ln-huge", lambda: F.layer_norm(X3, normalized_shape=(H,)), ValueError, "normalized_shape"),
    ("ln-float", lambda: F.layer_norm(X3, normalized_shape=4.0), TypeError, "normalized_shape"),
    ("ln-dim", lambda: F.layer_norm(X3, dim=-1), TypeError, "layer_norm"),
    ("rms-huge", lambda: F.rms_norm(X3, H), ValueError, "rms_norm normalized_shape"),
    ("rms-weight", lambda: F.rms_norm(X3, 4, np.ones(3)), ValueError, "rms_norm weight"),
    ("rms-eps", lambda: F.rms_norm(X3, 4, eps=-1.0), ValueError, "rms_norm eps"),
    ("rms-dim", lambda: F.rms_norm(X3, 4, dim=-1), TypeError, "rms_norm"),
    ("gn-huge", lambda: F.group_norm(X3, H), ValueError, "group_norm num_groups"),
    ("gn-divisor", lambda: F.group_norm(X3, 2), ValueError, "divisor"),
    ("gn-zero", lambda: F.group_norm(X3, 0), ValueError, "group_norm num_groups"),
    ("gn-bool", lambda: F.group_norm(X3, True), TypeError, "group_norm num_groups"),
    ("gn-weight", lambda: F.group_norm(X3, 3, np.ones(4)), ValueError, "group_norm weight"),
    ("bn-train-running", lambda: F.batch_norm(X3, np.zeros(3), np.ones(3), training=True),
     ValueError, "never modify"),
    ("bn-eval-none", lambda: F.batch_norm(X3, None, None), ValueError, "running_mean"),
    ("bn-one-value", lambda: F.batch_norm(np.ones((1, 3)), None, None, training=True),
     ValueError, "more than 1 value"),
    ("bn-1d-x", lambda: F.batch_norm(np.ones(3), None, None, training=True), ValueError,
     "batch_norm x"),
    ("bn-mean-shape", lambda: F.batch_norm(X3, np.zeros(4), np.ones(3)), ValueError,
     "batch_norm running_mean"),
    ("bn-momentum", lambda: F.batch_norm(X3, None, None, training=True, momentum=2.0),
     ValueError, "batch_norm momentum"),
    ("bn-training-str", lambda: F.batch_norm(X3, None, None, training="yes"), TypeError,
     "batch_norm training"),
    ("bn-dim", lambda: F.batch_norm(X3, None, None, training=True, dim=1), TypeError,
     "batch_norm"),
    ("in-one-value", lambda: F.instance_norm(np.ones((2, 3, 1))), ValueError,
     "more than 1 value"),
    ("in-running", lambda: F.instance_norm(X3, np.zeros(3), np.ones(3)), ValueError,
     "never modify"),
    ("in-2d-x", lambda: F.instance_norm(np.ones((2, 3))), ValueError, "instance_norm x"),
]


@pytest.mark.parametrize("label, call, error, words", BAD, ids=[b[0] for b in BAD])
def test_bad_arguments_are_refused_naming_them(label, call, error, words):
    with pytest.raises(error, match=None) as info:
        call()
    assert words in str(info.value), str(info.value)
    assert not isinstance(info.value, OverflowError)


def test_running_statistics_get_no_gradient():
    m = mg.tensor(np.zeros(3), requires_grad=True)
    with pytest.raises((TypeError, ValueError)):
        F.batch_norm(mg.tensor(X3, requires_grad=True), m, np.ones(3))


def test_rms_norm_default_eps_is_the_dtype_epsilon():
    x = RNG.standard_normal((2, 4)).astype(np.float32) * 1e-4
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True)
                       + np.finfo(np.float32).eps)
    got = F.rms_norm(x, 4).data
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert not np.allclose(got, x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True)
                                            + 1e-12), rtol=1e-3)


@pytest.mark.filterwarnings("error")
def test_an_empty_batch_gives_an_empty_result_without_warnings():
    x = mg.tensor(np.zeros((0, 4, 3)), requires_grad=True)
    for f in (lambda t: F.batch_norm(t, np.zeros(4), np.ones(4)), lambda t: F.group_norm(t, 2),
              lambda t: F.rms_norm(t, (4, 3)), lambda t: F.layer_norm(t, normalized_shape=(4, 3))):
        y = f(x)
        assert y.shape == (0, 4, 3)
        y.sum().backward()
        assert x.grad.shape == (0, 4, 3)
        x.grad = None
