"""Property tests (hypothesis) of the ops, all in this file: generated broadcastable shapes
for the binary ops, where and matmul; reductions of one array over random axes (min, var
with ddof, logsumexp too); random getitem indices (basic, integer arrays with repeats,
boolean masks); random shapes and axes for the fused ops (layer_norm, softmax,
log_softmax, cross_entropy); random permutations and splits. (The ViT's properties are in
tests/vit/test_vit_properties.py.)

Hypothesis draws the shapes (``mutually_broadcastable_shapes``, with matmul's gufunc
signature for compatible core dims and broadcast batch dims) and a seed; the values come
from NumPy's generator with that seed, shaped so no input sits on a kink (no ties for
maximum/minimum, positive bases for pow, denominators away from 0). Values are checked
against NumPy, gradients with gradcheck.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, basic_indices, mutually_broadcastable_shapes

import minigrad as mg
from minigrad import F

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
SETTINGS_25 = settings(max_examples=25, deadline=None,
                       suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**32 - 1)
SHAPES = array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)


def _normal(rng, shape):
    return np.asarray(rng.standard_normal(shape))


def _away_from_zero(rng, shape, gap=0.5):
    x = _normal(rng, shape)
    return np.where(x >= 0, 1.0, -1.0) * (np.abs(x) + gap)


def _positive(rng, shape):
    return np.asarray(rng.uniform(0.5, 2.0, shape))


BINARY = {
    "add": (F.add, np.add, _normal),
    "sub": (F.sub, np.subtract, _normal),
    "mul": (F.mul, np.multiply, _normal),
    "div": (F.div, np.divide, _normal),
    "maximum": (F.maximum, np.maximum, _normal),
    "minimum": (F.minimum, np.minimum, _normal),
    "pow": (F.pow, np.power, _positive),
}


def _check(fn, ref, arrays):
    out = fn(*[mg.Tensor(a) if a.dtype.kind == "f" else a for a in arrays])
    expected = ref(*arrays)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out.data, expected, rtol=1e-12, atol=1e-12)
    rep = mg.gradcheck(fn, [a.copy() for a in arrays], atol=1e-6, rtol=1e-5)
    for r in rep.inputs:  # every gradient came back in its input's shape
        assert r.shape == arrays[r.index].shape


@pytest.mark.parametrize("name", list(BINARY))
@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3),
       seed=SEEDS)
def test_binary_op_broadcasting(name, shapes, seed):
    fn, ref, first = BINARY[name]
    rng = np.random.default_rng(seed)
    sa, sb = shapes.input_shapes
    a = first(rng, sa)
    b = _away_from_zero(rng, sb) if name == "div" else _normal(rng, sb)
    if name in ("maximum", "minimum"):  # no ties within the finite-difference step
        assume(np.all(np.abs(np.subtract(a, b)) > 1e-3))
    assert np.broadcast_shapes(sa, sb) == shapes.result_shape
    _check(fn, ref, [a, b])


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3),
       seed=SEEDS)
def test_where_broadcasting(shapes, seed):
    rng = np.random.default_rng(seed)
    sc, sa, sb = shapes.input_shapes
    cond = np.asarray(rng.random(sc) > 0.5)
    _check(F.where, np.where, [cond, _normal(rng, sa), _normal(rng, sb)])


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=3,
                                            max_side=4),
       seed=SEEDS)
def test_matmul_shapes(shapes, seed):
    rng = np.random.default_rng(seed)
    sa, sb = shapes.input_shapes
    a, b = _normal(rng, sa), _normal(rng, sb)
    assert np.matmul(a, b).shape == shapes.result_shape
    _check(F.matmul, np.matmul, [a, b])


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=3),
       data=st.data(), seed=SEEDS)
def test_reductions_of_broadcast_products(shapes, data, seed):
    """A reduction over any axes of a broadcast product: two ops' VJPs and unbroadcast together."""
    rng = np.random.default_rng(seed)
    sa, sb = shapes.input_shapes
    nd = len(shapes.result_shape)
    axes = data.draw(st.lists(st.integers(-nd, nd - 1), max_size=nd,
                              unique_by=lambda i: i % nd).map(tuple) | st.none())
    keepdims = data.draw(st.booleans())
    name = data.draw(st.sampled_from(["sum", "mean", "max", "var"]))
    a, b = _normal(rng, sa), _normal(rng, sb)
    red, npred = getattr(F, name), getattr(np, name)
    _check(lambda x, y: red(x * y, axis=axes, keepdims=keepdims),
           lambda x, y: npred(x * y, axis=axes, keepdims=keepdims), [a, b])


# ---- one array: random axes, indices, permutations and splits ----------------------------------
def distinct(rng, shape, gap=1e-3):
    """Normal values with no two within ``gap`` of each other (no ties for max/min)."""
    n = int(np.prod(shape))
    values = np.sort(rng.standard_normal(n))
    values += gap * np.arange(n)  # strictly increasing, spaced by at least gap
    return rng.permutation(values).reshape(shape)


def check(fn, ref_fn, inputs, rtol=1e-10, atol=1e-12, **gc):
    out = fn(*[mg.Tensor(a) if a.dtype.kind == "f" else a for a in inputs])
    np.testing.assert_allclose(out.data, ref_fn(*inputs), rtol=rtol, atol=atol)
    mg.gradcheck(fn, [a.copy() for a in inputs], **gc)


def np_layer_norm(x, gain=None, bias=None, *, eps):
    """(x - mean) / sqrt(var + eps) over the last axis, then * gain + bias (in NumPy)."""
    centred = x - x.mean(axis=-1, keepdims=True)
    out = centred / np.sqrt((centred ** 2).mean(axis=-1, keepdims=True) + eps)
    out = out if gain is None else out * gain
    return out if bias is None else out + bias


def axes_of(data, ndim):
    """None, one axis or a tuple of distinct axes (negative ones too)."""
    one = st.integers(-ndim, ndim - 1)
    many = st.lists(one, min_size=1, max_size=ndim, unique_by=lambda i: i % ndim).map(tuple)
    return data.draw(st.none() | one | many)


# ---- reductions ------------------------------------------------------------------------------
@SETTINGS_25
@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_reduction_over_random_axes(shape, data, seed):
    rng = np.random.default_rng(seed)
    axis = axes_of(data, len(shape))
    keepdims = data.draw(st.booleans())
    name = data.draw(st.sampled_from(["sum", "mean", "max", "min", "var", "logsumexp"]))
    x = distinct(rng, shape)
    kw = dict(axis=axis, keepdims=keepdims)
    if name == "var":
        axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
        count = int(np.prod([shape[a] for a in axes]))
        kw["ddof"] = data.draw(st.integers(0, max(0, count - 1)))
    ref_fn = sp.logsumexp if name == "logsumexp" else getattr(np, name)
    check(lambda a: getattr(F, name)(a, **kw), lambda a: ref_fn(a, **kw), [x])


# ---- getitem ---------------------------------------------------------------------------------
def scatter_reference(shape, index, g):
    """d/dx of <x[index], g>: g added back at every position it was read from."""
    out = np.zeros(shape)
    np.add.at(out, index, g)
    return out


def check_getitem(x, index, rng):
    t = mg.Tensor(x, requires_grad=True)
    out = t[index]
    np.testing.assert_array_equal(out.data, x[index])
    g = rng.standard_normal(out.shape)
    out.backward(g)
    np.testing.assert_allclose(t.grad, scatter_reference(x.shape, index, g), atol=1e-14)
    if out.size:
        mg.gradcheck(lambda a: a[index], [x.copy()])


@SETTINGS_25
@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_getitem_basic_indices(shape, data, seed):
    index = data.draw(basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    check_getitem(np.random.default_rng(seed).standard_normal(shape), index,
                  np.random.default_rng(seed + 1))


@SETTINGS_25
@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_getitem_integer_arrays_with_repeats(shape, data, seed):
    rng = np.random.default_rng(seed)
    k = data.draw(st.integers(1, len(shape)))  # index the first k axes with paired arrays
    picks = data.draw(st.integers(1, 6))
    index = tuple(rng.integers(-n, n, size=picks) for n in shape[:k])  # repeats likely
    if data.draw(st.booleans()) and k < len(shape):
        index = index + (slice(None, None, -1),)  # arrays mixed with a slice
    check_getitem(rng.standard_normal(shape), index, rng)


@SETTINGS_25
@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_getitem_boolean_masks(shape, data, seed):
    rng = np.random.default_rng(seed)
    k = data.draw(st.integers(1, len(shape)))
    mask = rng.random(shape[:k]) < 0.5
    index = mask if data.draw(st.booleans()) else (Ellipsis, rng.random(shape[-1]) < 0.5)
    check_getitem(rng.standard_normal(shape), index, rng)


# ---- fused nn ops -----------------------------------------------------------------------------
@SETTINGS_25
@given(shape=array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5).filter(
    lambda s: s[-1] >= 2), data=st.data(), seed=SEEDS)
def test_layer_norm_random_shapes(shape, data, seed):
    rng = np.random.default_rng(seed)
    D = shape[-1]
    eps = data.draw(st.sampled_from([1e-5, 1e-3, 0.1, 1.0]))
    inputs = [rng.standard_normal(shape) * data.draw(st.sampled_from([0.1, 1.0, 10.0]))]
    if data.draw(st.booleans()):
        inputs.append(1 + 0.5 * rng.standard_normal(D))
        if data.draw(st.booleans()):
            inputs.append(rng.standard_normal(D))
    fn = lambda *a: F.layer_norm(*a, eps=eps)  # noqa: E731
    check(fn, lambda *a: np_layer_norm(*a, eps=eps), inputs, rtol=1e-9, atol=1e-10)


@SETTINGS_25
@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_softmax_and_log_softmax_random_shapes_and_axes(shape, data, seed):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    scale = data.draw(st.sampled_from([0.1, 1.0, 5.0]))
    x = scale * rng.standard_normal(shape)
    check(lambda a: F.softmax(a, axis=axis), lambda a: sp.softmax(a, axis=axis), [x])
    check(lambda a: F.log_softmax(a, axis=axis), lambda a: sp.log_softmax(a, axis=axis), [x])


@SETTINGS_25
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4).filter(
    lambda s: s[-1] >= 2), data=st.data(), seed=SEEDS)
def test_cross_entropy_random_shapes(shape, data, seed):
    rng = np.random.default_rng(seed)
    C = shape[-1]
    reduction = data.draw(st.sampled_from(["mean", "sum", "none"]))
    smoothing = data.draw(st.sampled_from([0.0, 0.1, 0.5]))
    logits = 2 * rng.standard_normal(shape)
    if data.draw(st.booleans()):
        target = rng.integers(0, C, shape[:-1])
        onehot = np.eye(C)[target]
    else:
        target = onehot = sp.softmax(rng.standard_normal(shape), axis=-1)
    q = (1 - smoothing) * onehot + smoothing / C
    losses = -(q * sp.log_softmax(logits, axis=-1)).sum(-1)
    want = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](losses)
    fn = lambda z, *t: F.cross_entropy(z, t[0] if t else target, reduction=reduction,  # noqa: E731
                                       label_smoothing=smoothing)
    inputs = [logits] + ([target] if target.dtype.kind == "f" else [])
    check(fn, lambda *a: want, inputs)


# ---- shape ops ---------------------------------------------------------------------------------
@SETTINGS_25
@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_transpose_random_permutation_and_split(shape, data, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    check(lambda a: F.transpose(a, perm), lambda a: np.transpose(a, perm), [x])
    axis = data.draw(st.integers(0, len(shape) - 1))
    cuts = sorted(data.draw(st.lists(st.integers(0, shape[axis]), max_size=3)))
    weights = [float(i + 1) for i in range(len(cuts) + 1)]

    def fn(a):
        pieces = F.split(a, cuts, axis=axis)
        return F.concatenate([p * w for p, w in zip(pieces, weights, strict=True)], axis=axis)

    def reference(a):
        return np.concatenate([p * w for p, w in zip(np.split(a, cuts, axis), weights, strict=True)], axis)

    check(fn, reference, [x])


