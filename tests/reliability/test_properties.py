"""Property tests (hypothesis) for what tests/minigrad/test_ops_hypothesis.py leaves out:
reductions of one array over random axes (min, var with ddof, logsumexp too), random getitem
indices (basic, integer arrays with repeats, boolean masks), random shapes and axes for the
fused ops (layer_norm, softmax, log_softmax, cross_entropy), random permutations and splits;
``vit_block`` against the independent reference over random shapes; and ``patchify`` /
``unpatchify`` as a bijection, both ways, on arrays and on Tensors.

Values come from NumPy's generator seeded by hypothesis, pushed away from kinks and ties so
the finite differences of gradcheck mean something."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import scipy.special as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, basic_indices

import minigrad as mg
from minigrad import F
from vit import patchify, unpatchify, vit_block

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vit"))
import vit_reference as ref  # noqa: E402

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**32 - 1)
SHAPES = array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)


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


def axes_of(data, ndim):
    """None, one axis or a tuple of distinct axes (negative ones too)."""
    one = st.integers(-ndim, ndim - 1)
    many = st.lists(one, min_size=1, max_size=ndim, unique_by=lambda i: i % ndim).map(tuple)
    return data.draw(st.none() | one | many)


# ---- reductions ------------------------------------------------------------------------------
@SETTINGS
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


@SETTINGS
@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_getitem_basic_indices(shape, data, seed):
    index = data.draw(basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    check_getitem(np.random.default_rng(seed).standard_normal(shape), index,
                  np.random.default_rng(seed + 1))


@SETTINGS
@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_getitem_integer_arrays_with_repeats(shape, data, seed):
    rng = np.random.default_rng(seed)
    k = data.draw(st.integers(1, len(shape)))  # index the first k axes with paired arrays
    picks = data.draw(st.integers(1, 6))
    index = tuple(rng.integers(-n, n, size=picks) for n in shape[:k])  # repeats likely
    if data.draw(st.booleans()) and k < len(shape):
        index = index + (slice(None, None, -1),)  # arrays mixed with a slice
    check_getitem(rng.standard_normal(shape), index, rng)


@SETTINGS
@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_getitem_boolean_masks(shape, data, seed):
    rng = np.random.default_rng(seed)
    k = data.draw(st.integers(1, len(shape)))
    mask = rng.random(shape[:k]) < 0.5
    index = mask if data.draw(st.booleans()) else (Ellipsis, rng.random(shape[-1]) < 0.5)
    check_getitem(rng.standard_normal(shape), index, rng)


# ---- fused nn ops -----------------------------------------------------------------------------
@SETTINGS
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
    check(fn, lambda *a: ref.layer_norm(*a, eps=eps), inputs, rtol=1e-9, atol=1e-10)


@SETTINGS
@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_softmax_and_log_softmax_random_shapes_and_axes(shape, data, seed):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    scale = data.draw(st.sampled_from([0.1, 1.0, 5.0]))
    x = scale * rng.standard_normal(shape)
    check(lambda a: F.softmax(a, axis=axis), lambda a: sp.softmax(a, axis=axis), [x])
    check(lambda a: F.log_softmax(a, axis=axis), lambda a: sp.log_softmax(a, axis=axis), [x])


@SETTINGS
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
    fn = lambda z, *t: F.cross_entropy(z, t[0] if t else target, reduction=reduction,  # noqa
                                       label_smoothing=smoothing)
    inputs = [logits] + ([target] if target.dtype.kind == "f" else [])
    check(fn, lambda *a: want, inputs)


# ---- shape ops ---------------------------------------------------------------------------------
@SETTINGS
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
        return F.concatenate([p * w for p, w in zip(pieces, weights)], axis=axis)

    def reference(a):
        return np.concatenate([p * w for p, w in zip(np.split(a, cuts, axis), weights)], axis)

    check(fn, reference, [x])


# ---- vit_block against the reference ---------------------------------------------------------
@SETTINGS
@given(n=st.integers(1, 3), t=st.integers(1, 5), heads=st.integers(1, 3), d=st.integers(1, 3),
       f=st.integers(1, 6), scale=st.sampled_from([0.5, 1.0, 3.0]), seed=SEEDS)
def test_vit_block_equals_the_reference(n, t, heads, d, f, scale, seed):
    rng = np.random.default_rng(seed)
    D = heads * d
    assume(D >= 2)  # a single feature normalizes to 0: a degenerate LayerNorm
    x = scale * rng.standard_normal((n, t, D))
    weights = ref.block_weights(rng, D, f)
    want = ref.vit_block(x, *weights, heads)
    got = vit_block(x, *weights, heads)
    assert got.dtype == np.float64 and got.shape == (n, t, D)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)
    got32 = vit_block(x.astype(np.float32), *[w.astype(np.float32) for w in weights], heads)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, want, rtol=2e-3, atol=2e-3 * scale)


# ---- patchify / unpatchify --------------------------------------------------------------------
PATCH = dict(b=st.integers(1, 3), c=st.integers(1, 3), p=st.integers(1, 4), gh=st.integers(1, 3),
             gw=st.integers(1, 3), seed=SEEDS)


@SETTINGS
@given(**PATCH)
def test_unpatchify_inverts_patchify(b, c, p, gh, gw, seed):
    x = np.random.default_rng(seed).standard_normal((b, c, gh * p, gw * p))
    tokens = patchify(x, p)
    np.testing.assert_array_equal(tokens, ref.patchify_loop(x, p))
    back = unpatchify(tokens, p, c, (gh * p, gw * p))
    assert back.shape == x.shape and np.array_equal(back, x)


@SETTINGS
@given(**PATCH)
def test_patchify_inverts_unpatchify(b, c, p, gh, gw, seed):
    tokens = np.random.default_rng(seed).standard_normal((b, gh * gw, p * p * c))
    images = unpatchify(tokens, p, c, (gh * p, gw * p))
    assert images.shape == (b, c, gh * p, gw * p)
    assert np.array_equal(patchify(images, p), tokens)
    assert len(np.unique(images)) == tokens.size  # every value lands somewhere, once


@SETTINGS
@given(**PATCH)
def test_the_round_trip_on_tensors_passes_gradients_through_unchanged(b, c, p, gh, gw, seed):
    rng = np.random.default_rng(seed)
    x = mg.Tensor(rng.standard_normal((b, c, gh * p, gw * p)), requires_grad=True)
    tokens = patchify(x, p)
    back = unpatchify(tokens, p, c, (gh * p, gw * p))
    assert isinstance(back, mg.Tensor) and np.array_equal(back.data, x.data)
    g = rng.standard_normal(x.shape)
    back.backward(g)
    np.testing.assert_array_equal(x.grad, g)  # the composition is the identity
