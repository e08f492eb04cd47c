"""Fused ops against the same functions composed from primitive ops, and against SciPy.

Values AND gradients (random cotangent, float64) agree to ~1e-12; softmax, log_softmax,
logsumexp and cross_entropy stay finite and right for logits of magnitude 1e4; bad
cross_entropy arguments raise errors naming the argument.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(7)


# ---- the compositions -----------------------------------------------------------------------

def c_softmax(x, axis=-1):
    e = F.exp(x - F.max(x, axis=axis, keepdims=True))
    return e / F.sum(e, axis=axis, keepdims=True)


def c_logsumexp(x, axis=None, keepdims=False):
    m = F.max(x, axis=axis, keepdims=True)
    y = m + F.log(F.sum(F.exp(x - m), axis=axis, keepdims=True))
    if keepdims:
        return y
    return F.reshape(y, ()) if axis is None else F.squeeze(y, axis)


def c_log_softmax(x, axis=-1):
    return x - c_logsumexp(x, axis=axis, keepdims=True)


def c_layer_norm(x, w=None, b=None, eps=1e-5):
    xc = x - F.mean(x, axis=-1, keepdims=True)
    y = xc / F.sqrt(F.mean(xc * xc, axis=-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    return y if b is None else y + b


def c_gelu_tanh(x):
    u = F.mul(math.sqrt(2 / math.pi), F.add(x, F.mul(0.044715, F.pow(x, 3))))
    return F.mul(F.mul(0.5, x), F.add(1.0, F.tanh(u)))


def c_cross_entropy(z, target, reduction="mean", label_smoothing=0.0):
    C = z.shape[-1]
    lsm = F.log_softmax(z, axis=-1)
    if isinstance(target, np.ndarray) and target.dtype.kind in "iu":
        flat = F.reshape(lsm, (-1, C))
        picked = flat[np.arange(flat.shape[0]), target.reshape(-1)]
        loss = -(1 - label_smoothing) * picked - (label_smoothing / C) * F.sum(flat, axis=-1)
        loss = F.reshape(loss, target.shape)
    else:
        q = target * (1 - label_smoothing) + label_smoothing / C
        loss = -F.sum(q * lsm, axis=-1)
    return {"mean": F.mean, "sum": F.sum, "none": lambda v: v}[reduction](loss)


def c_self_attention(qkv, num_heads, scale=None):
    B, T, width = qkv.shape
    D = width // 3
    d = D // num_heads
    q, k, v = (F.transpose(F.reshape(qkv[:, :, i * D:(i + 1) * D], (B, T, num_heads, d)),
                           (0, 2, 1, 3)) for i in range(3))
    a = c_softmax((q @ F.swapaxes(k, -1, -2)) * (1 / math.sqrt(d) if scale is None else scale))
    return F.reshape(F.transpose(a @ v, (0, 2, 1, 3)), (B, T, D))


def _value_and_grads(fn, arrays, cot_seed=0):
    ts = [mg.Tensor(a.copy(), requires_grad=True) if a.dtype.kind == "f" else a for a in arrays]
    out = fn(*ts)
    cot = np.random.default_rng(cot_seed).standard_normal(out.shape)
    out.backward(cot)
    return out.data, [t.grad for t in ts if isinstance(t, mg.Tensor)], cot


def assert_same_function(fused, composed, arrays, rtol=1e-12, atol=1e-12):
    v1, g1, _ = _value_and_grads(fused, arrays)
    v2, g2, _ = _value_and_grads(composed, arrays)
    assert v1.shape == v2.shape
    np.testing.assert_allclose(v1, v2, rtol=rtol, atol=atol)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ---- fused == composed ------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((2, 3, 4), -1), ((2, 3, 4), 0), ((2, 3, 4), 1), ((5,), 0)])
def test_softmax_family_equals_composition(shape, axis):
    x = RNG.standard_normal(shape) * 3
    assert_same_function(lambda t: F.softmax(t, axis=axis), lambda t: c_softmax(t, axis), [x])
    assert_same_function(lambda t: F.log_softmax(t, axis=axis), lambda t: c_log_softmax(t, axis),
                         [x])


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (2, 1, 0)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_equals_composition(axis, keepdims):
    x = RNG.standard_normal((2, 3, 4)) * 3
    assert_same_function(lambda t: F.logsumexp(t, axis=axis, keepdims=keepdims),
                         lambda t: c_logsumexp(t, axis, keepdims), [x])


@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("shape", [(2, 3, 6), (4, 5), (7,)])
def test_layer_norm_equals_composition(affine, shape):
    D = shape[-1]
    x = RNG.standard_normal(shape) * 2 + 0.5
    w = 1 + RNG.standard_normal(D) / 3 if affine in ("weight", "both") else None
    b = RNG.standard_normal(D) if affine in ("bias", "both") else None
    arrays = [x] + [a for a in (w, b) if a is not None]

    def split(args):
        it = iter(args[1:])
        return args[0], (next(it) if w is not None else None), (next(it) if b is not None else None)

    assert_same_function(lambda *a: F.layer_norm(*split(a)), lambda *a: c_layer_norm(*split(a)),
                         arrays)
    assert_same_function(lambda *a: F.layer_norm(*split(a), eps=0.3),
                         lambda *a: c_layer_norm(*split(a), eps=0.3), arrays)


def test_layer_norm_equals_composition_with_var_op():
    x = RNG.standard_normal((3, 8))
    assert_same_function(
        F.layer_norm,
        lambda t: (t - F.mean(t, axis=-1, keepdims=True)) / F.sqrt(F.var(t, axis=-1, keepdims=True)
                                                                   + 1e-5), [x])


@pytest.mark.parametrize("B,T,D,H,scale", [(2, 5, 8, 2, None), (3, 7, 12, 3, 0.25),
                                         (1, 1, 4, 4, None), (40, 9, 16, 4, None)])
def test_self_attention_equals_composition(B, T, D, H, scale):
    # (40, 9, 16, 4): several batch blocks in the fused kernel
    x = RNG.standard_normal((B, T, 3 * D)) * 2
    assert_same_function(lambda t: F.self_attention(t, H, scale=scale),
                         lambda t: c_self_attention(t, H, scale), [x])


def test_self_attention_weights_are_the_softmax_it_uses():
    from minigrad.ops.attention import attention_weights
    x = RNG.standard_normal((3, 6, 3 * 8))
    a = attention_weights(x, 2)
    q, k = (x[:, :, i * 8:(i + 1) * 8].reshape(3, 6, 2, 4).transpose(0, 2, 1, 3)
            for i in range(2))
    np.testing.assert_allclose(a, sp.softmax(q @ k.swapaxes(-1, -2) / 2.0, axis=-1),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a.sum(axis=-1), 1.0, rtol=1e-12)


def test_gelu_tanh_equals_composition():
    x = np.concatenate([RNG.standard_normal(20) * 3, [0.0, -8.0, 8.0, 1e-3]])
    assert_same_function(F.gelu_tanh, c_gelu_tanh, [x.reshape(4, 6)])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("kind", ["hard-2d", "hard-3d", "soft", "soft-3d"])
def test_cross_entropy_equals_composition(reduction, label_smoothing, kind):
    kw = dict(reduction=reduction, label_smoothing=label_smoothing)
    if kind.startswith("hard"):
        shape = (6, 5) if kind == "hard-2d" else (2, 3, 5)
        z, y = RNG.standard_normal(shape) * 2, RNG.integers(0, 5, shape[:-1])
        assert_same_function(lambda t: F.cross_entropy(t, y, **kw),
                             lambda t: c_cross_entropy(t, y, **kw), [z])
    else:
        shape = (4, 5) if kind == "soft" else (2, 3, 4)
        z, q = RNG.standard_normal(shape) * 2, sp.softmax(RNG.standard_normal(shape), axis=-1)
        # both the logits' and the soft targets' gradients are compared
        assert_same_function(lambda t, s: F.cross_entropy(t, s, **kw),
                             lambda t, s: c_cross_entropy(t, s, **kw), [z, q])


def test_cross_entropy_hard_equals_soft_one_hot():
    z, y = RNG.standard_normal((5, 4)), np.array([3, 0, 0, 2, 1])
    for ls in (0.0, 0.1):
        assert_same_function(lambda t: F.cross_entropy(t, y, label_smoothing=ls),
                             lambda t: F.cross_entropy(t, np.eye(4)[y], label_smoothing=ls), [z])


# ---- SciPy and large logits -----------------------------------------------------------------

def _softmax_vjp(y, g, axis):
    return y * (g - np.sum(g * y, axis=axis, keepdims=True))


@pytest.mark.parametrize("scale", [1.0, 1e4, -1e4])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_family_matches_scipy(scale, axis):
    x = RNG.standard_normal((3, 4, 5)) * scale
    x[0, 0] = scale  # a row of equal (huge) values
    y = sp.softmax(x, axis=axis)
    v, (g,), cot = _value_and_grads(lambda t: F.softmax(t, axis=axis), [x])
    np.testing.assert_allclose(v, y, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(g, _softmax_vjp(y, cot, axis), rtol=1e-9, atol=1e-12)
    v, (g,), cot = _value_and_grads(lambda t: F.log_softmax(t, axis=axis), [x])
    np.testing.assert_allclose(v, sp.log_softmax(x, axis=axis), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, cot - y * cot.sum(axis=axis, keepdims=True), rtol=1e-9,
                               atol=1e-12)
    for t in (v, g):
        assert np.all(np.isfinite(t))


@pytest.mark.parametrize("scale", [1.0, 1e4, -1e4])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (1, False), (-1, True),
                                           ((0, 2), False), ((0, 2), True)])
def test_logsumexp_matches_scipy(scale, axis, keepdims):
    x = RNG.standard_normal((3, 4, 5)) * scale
    v, (g,), cot = _value_and_grads(lambda t: F.logsumexp(t, axis=axis, keepdims=keepdims), [x])
    expected = sp.logsumexp(x, axis=axis, keepdims=keepdims)
    assert v.shape == np.shape(expected)
    np.testing.assert_allclose(v, expected, rtol=1e-13)
    lse = sp.logsumexp(x, axis=axis, keepdims=True)
    np.testing.assert_allclose(g, np.reshape(cot, lse.shape) * np.exp(x - lse), rtol=1e-9,
                               atol=1e-300)
    assert np.all(np.isfinite(g))


def _lse_grad(x, axis=-1, keepdims=False, seed=0):
    """logsumexp's value and gradient for a non-uniform cotangent (and the cotangent)."""
    t = mg.Tensor(x.copy(), requires_grad=True)
    out = F.logsumexp(t, axis=axis, keepdims=keepdims)
    cot = np.random.default_rng(seed).uniform(0.5, 2.0, out.shape).astype(x.dtype)
    with np.errstate(invalid="ignore"):  # a nan row
        out.backward(cot)
    return out.data, t.grad, cot


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_gradient_of_large_equal_inputs_is_the_uniform_softmax(dtype):
    """x̄ = g softmax(x): ¼ of g to each of four equal inputs, however large. e^(x - y) with y
    rounded to its ulp gave 1 each at 1e20 (float64) and e^-1 each at 1e7 (float32)."""
    x = np.array([[1e20] * 4, [-1e20] * 4, [1e7] * 4, [-3e7] * 4, [0.5] * 4], dtype)
    _, grad, cot = _lse_grad(x)
    np.testing.assert_array_equal(grad, np.repeat(cot[:, None] / 4, 4, axis=1))  # exact
    assert grad.dtype == dtype
    _, grad, cot = _lse_grad(np.full((3, 4), 1e20, dtype), axis=None)  # one slice of 12
    np.testing.assert_allclose(grad, np.full((3, 4), cot / 12), rtol=4 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_gradient_of_large_inputs_one_apart_is_their_softmax(dtype):
    """[b, b, b + 1, b - 2] with b = 1e7 (all exact in float32): softmax of [0, 0, 1, -2]."""
    b = 1e7
    x = np.array([[b, b, b + 1, b - 2], [-b, -b, -b + 1, -b - 2]], dtype)
    _, grad, cot = _lse_grad(x, keepdims=True)
    e = np.exp([0.0, 0.0, 1.0, -2.0])
    expected = cot * (e / e.sum())  # cot (2, 1) broadcasts
    np.testing.assert_allclose(grad, expected, rtol=8 * np.finfo(dtype).eps)


def test_logsumexp_gradient_at_infinities():
    """The softmax's limit: a +inf takes the whole gradient from the finite inputs, several
    +inf share it equally, and an all -inf slice shares it equally too (its limit along
    x = t·1, t -> -inf; PyTorch gives nan for all three); a nan keeps its slice nan."""
    inf, nan = np.inf, np.nan
    x = np.array([[inf, 1.0, -inf, 2.0], [inf, -inf, inf, 0.0], [-inf] * 4,
                  [-inf, 3.0, -inf, -inf], [nan, 1.0, 2.0, 3.0]])
    out, grad, cot = _lse_grad(x)
    np.testing.assert_array_equal(out, [inf, inf, -inf, 3.0, nan])
    share = np.array([[1, 0, 0, 0], [0.5, 0, 0.5, 0], [0.25] * 4, [0, 1, 0, 0], [nan] * 4])
    np.testing.assert_array_equal(grad, cot[:, None] * share)
    out, grad, cot = _lse_grad(np.array([[inf, 1.0], [2.0, inf]]), axis=None)
    assert out == inf
    np.testing.assert_array_equal(grad, cot * np.array([[0.5, 0], [0, 0.5]]))


@pytest.mark.parametrize("scale", [1e4, -1e4])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_cross_entropy_large_logits(scale, label_smoothing):
    z = RNG.standard_normal((6, 5)) * scale
    y = RNG.integers(0, 5, 6)
    C, ls = 5, label_smoothing
    q = (1 - ls) * np.eye(C)[y] + ls / C
    lsm = sp.log_softmax(z, axis=-1)
    expected = -np.mean(np.sum(q * lsm, axis=-1))
    for target in (y, np.eye(C)[y]):
        t = mg.Tensor(z, requires_grad=True)
        loss = F.cross_entropy(t, target, label_smoothing=ls)
        loss.backward()
        np.testing.assert_allclose(loss.item(), expected, rtol=1e-12)
        np.testing.assert_allclose(t.grad, (np.exp(lsm) - q) / 6, rtol=1e-9, atol=1e-15)
        assert np.all(np.isfinite(t.grad))


def test_layer_norm_large_offset_and_scale_stays_accurate():
    x = 1e4 + RNG.standard_normal((3, 6)) * 1e2
    assert_same_function(F.layer_norm, c_layer_norm, [x], rtol=1e-8, atol=1e-10)


# ---- cross_entropy argument errors --------------------------------------------------------

Z = mg.Tensor(np.zeros((3, 4)), requires_grad=True)


@pytest.mark.parametrize("target,kwargs,err,word", [
    (np.array([0, 4, 1]), {}, ValueError, "target"),
    (np.array([0, -1, 1]), {}, ValueError, "target"),
    (np.array([0, 1]), {}, ValueError, "target"),
    (np.array([[0, 1, 2]]), {}, ValueError, "target"),
    (np.zeros((3, 5)), {}, ValueError, "target"),
    (np.zeros((4,)), {}, ValueError, "target"),
    (np.array([True, False, True]), {}, TypeError, "target"),
    (np.array([0, 1, 2]), {"reduction": "avg"}, ValueError, "reduction"),
    (np.array([0, 1, 2]), {"reduction": None}, ValueError, "reduction"),
    (np.array([0, 1, 2]), {"label_smoothing": 1.5}, ValueError, "label_smoothing"),
    (np.array([0, 1, 2]), {"label_smoothing": -0.1}, ValueError, "label_smoothing"),
])
def test_cross_entropy_bad_arguments(target, kwargs, err, word):
    with pytest.raises(err, match=word):
        F.cross_entropy(Z, target, **kwargs)


def test_cross_entropy_integer_logits_rejected():
    with pytest.raises((ValueError, TypeError), match="logits"):
        F.cross_entropy(np.zeros((2, 3), dtype=np.int64), np.array([0, 1]))


def test_cross_entropy_accepts_label_tensor_and_list():
    z = RNG.standard_normal((3, 4))
    ref = F.cross_entropy(mg.Tensor(z), np.array([1, 0, 3])).item()
    assert F.cross_entropy(mg.Tensor(z), mg.Tensor(np.array([1, 0, 3]))).item() == ref
    assert F.cross_entropy(mg.Tensor(z), [1, 0, 3]).item() == ref


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_cross_entropy_hard_labels_on_non_contiguous_logits(label_smoothing):
    # A permuted (..., C) view makes softmax(logits) non-C-contiguous; the label subtraction
    # must still land in the gradient (it once went into a discarded reshape copy).
    rng = np.random.default_rng(7)
    raw = rng.standard_normal((4, 3, 5))
    labels = rng.integers(0, 5, size=(3, 4))
    grads = []
    for make_contiguous in (False, True):
        x = mg.Tensor(raw.copy(), requires_grad=True)
        logits = x.transpose(1, 0, 2)
        if make_contiguous:
            logits = logits.reshape(12, 5).reshape(3, 4, 5) * 1.0
        F.cross_entropy(logits, labels, label_smoothing=label_smoothing).backward()
        grads.append(x.grad)
    np.testing.assert_allclose(grads[0], grads[1], rtol=0, atol=1e-15)
    # each row of d(loss)/d(logits) sums to zero
    np.testing.assert_allclose(grads[0].sum(axis=-1), 0.0, atol=1e-15)
