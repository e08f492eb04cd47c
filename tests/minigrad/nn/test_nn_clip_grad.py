"""nn.utils.clip_grad_norm_ and clip_grad_value_: against torch.nn.utils where installed and
NumPy otherwise; in place on .grad (a new array, the old one untouched), grad None skipped."""
import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn import Parameter
from minigrad.nn.utils import clip_grad_norm_, clip_grad_value_


def params_with_grads(seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    ps = [Parameter(np.zeros(s, dtype)) for s in [(3,), (2, 4), (5,)]]
    for p in ps[:2]:
        p.grad = (3 * rng.standard_normal(p.shape)).astype(dtype)
    return ps  # the last one has no gradient


def tol(dtype, size, ulps=64):
    return ulps * np.finfo(dtype).eps * max(1.0, size)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
def test_clip_grad_norm_matches_numpy(norm_type):
    ps = params_with_grads()
    grads = [p.grad.copy() for p in ps[:2]]
    flat = np.concatenate([g.ravel() for g in grads])
    expected = np.abs(flat).max() if norm_type == math.inf else \
        (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    total = clip_grad_norm_(ps, max_norm=1.0, norm_type=norm_type)
    assert abs(total - expected) <= tol(np.float64, expected)
    coef = 1.0 / (expected + 1e-6)
    for p, g in zip(ps[:2], grads, strict=True):
        np.testing.assert_allclose(p.grad, g * coef, rtol=0, atol=tol(np.float64, 1.0))
    assert ps[2].grad is None


def test_clip_grad_norm_leaves_small_gradients_and_old_arrays_alone():
    ps = params_with_grads()
    olds = [p.grad for p in ps[:2]]
    copies = [g.copy() for g in olds]
    total = clip_grad_norm_(ps, max_norm=1e6)
    assert total > 0
    for p, c in zip(ps[:2], copies, strict=True):
        np.testing.assert_array_equal(p.grad, c)
    clip_grad_norm_(ps, max_norm=0.5)
    for old, c in zip(olds, copies, strict=True):
        np.testing.assert_array_equal(old, c)  # the arrays given are not written


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_clip_grad_norm_matches_torch(norm_type, dtype):
    torch = pytest.importorskip("torch")
    ps = params_with_grads(1, dtype)
    ts = [torch.zeros(p.shape, dtype=getattr(torch, np.dtype(dtype).name), requires_grad=True)
          for p in ps]
    for p, t in zip(ps, ts, strict=True):
        if p.grad is not None:
            t.grad = torch.tensor(p.grad)
    total = clip_grad_norm_(ps, max_norm=0.7, norm_type=norm_type)
    ttotal = float(torch.nn.utils.clip_grad_norm_(ts, max_norm=0.7, norm_type=norm_type))
    assert abs(total - ttotal) <= tol(dtype, ttotal)
    for p, t in zip(ps[:2], ts[:2], strict=True):
        assert p.grad.dtype == dtype
        np.testing.assert_allclose(p.grad, t.grad.numpy(), rtol=0, atol=tol(dtype, 1.0))


def test_clip_grad_value_matches_torch_or_numpy():
    ps = params_with_grads(2)
    grads = [p.grad.copy() for p in ps[:2]]
    clip_grad_value_(ps, 1.5)
    for p, g in zip(ps[:2], grads, strict=True):
        np.testing.assert_array_equal(p.grad, np.minimum(np.maximum(g, -1.5), 1.5))
    assert ps[2].grad is None and any((np.abs(g) > 1.5).any() for g in grads)
    torch = pytest.importorskip("torch")
    t = torch.tensor(grads[0]).requires_grad_()
    t.grad = torch.tensor(grads[0])
    torch.nn.utils.clip_grad_value_([t], 1.5)
    np.testing.assert_array_equal(ps[0].grad, t.grad.numpy())


def test_clip_accepts_one_tensor_a_generator_and_no_gradients():
    p = Parameter(np.zeros(2))
    p.grad = np.array([3.0, 4.0])
    assert clip_grad_norm_(p, 1.0) == 5.0
    model = nn.Linear(2, 2, rng=0)
    assert clip_grad_norm_(model.parameters(), 1.0) == 0.0  # no gradient yet


@pytest.mark.parametrize("call, error, words", [
    (lambda ps: clip_grad_norm_(ps, -1.0), ValueError, ["max_norm", "-1.0"]),
    (lambda ps: clip_grad_norm_(ps, "1"), TypeError, ["max_norm", "'1'"]),
    (lambda ps: clip_grad_norm_(ps, 1.0, norm_type=0), ValueError, ["norm_type", "0"]),
    (lambda ps: clip_grad_norm_([1.0], 1.0), TypeError, ["parameters[0]", "float"]),
    (lambda ps: clip_grad_value_(ps, -0.5), ValueError, ["clip_value", "-0.5"]),
    (lambda ps: clip_grad_value_(3, 0.5), TypeError, ["parameters", "int"]),
])
def test_arguments_are_checked(call, error, words):
    with pytest.raises(error) as info:
        call(params_with_grads())
    assert all(w in str(info.value) for w in words), str(info.value)


def test_nonfinite_total_norm():
    p = Parameter(np.zeros(2))
    p.grad = np.array([np.inf, 1.0])
    with pytest.raises(ValueError, match="inf"):
        clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(p.grad, [np.inf, 1.0])
    assert clip_grad_norm_(p, 1.0) == math.inf  # as torch: scaled by 1 / inf = 0
    np.testing.assert_array_equal(p.grad, [np.nan, 0.0])


# ---- old gradient arrays and float16 --------------------------------------------------------
@pytest.mark.parametrize("fn", ["norm", "value"])
def test_clipping_never_writes_into_the_old_gradient_arrays(fn):
    rng = np.random.default_rng(3)
    params = [mg.Tensor(rng.standard_normal(s).astype(dt), requires_grad=True)
              for s, dt in (((3,), np.float32), ((2, 2), np.float64), ((4,), np.float16))]
    for p in params:
        p.grad = (10 * rng.standard_normal(p.shape)).astype(p.dtype)
    params.append(mg.Tensor(np.ones(2), requires_grad=True))  # grad None: skipped
    old = [p.grad for p in params]
    copies = [None if g is None else g.copy() for g in old]
    if fn == "norm":
        total = clip_grad_norm_(params, 1.0)
        want = np.sqrt(sum(np.sum(c.astype(np.float64) ** 2) for c in copies if c is not None))
        assert total == pytest.approx(want, rel=1e-12)
    else:
        clip_grad_value_(params, 0.5)
    for g, c in zip(old, copies, strict=True):
        if c is not None:
            np.testing.assert_array_equal(g, c)  # the old arrays are untouched
    for p, c in zip(params, copies, strict=True):
        if c is None:
            assert p.grad is None
        else:
            assert p.grad.dtype == c.dtype  # each gradient keeps its dtype


def test_clip_grad_norm_scales_float16_gradients_by_the_exact_factor():
    # the factor max_norm / N was rounded to float16 first: 1e-8 is 0 there (below its
    # smallest subnormal, 6e-8), so a gradient of 1e4 clipped to max_norm 1e-4 became 0,
    # not 1e-4 (a normal float16 number)
    p = mg.Tensor(np.zeros(1, np.float16), requires_grad=True)
    p.grad = np.array([1e4], np.float16)
    clip_grad_norm_([p], max_norm=1e-4)
    want = np.float16(1e4 * 1e-4 / (1e4 + 1e-6))  # rounded once, from float64
    assert p.grad.dtype == np.float16
    np.testing.assert_array_equal(p.grad, [want])
