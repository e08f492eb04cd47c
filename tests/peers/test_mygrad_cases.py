"""MyGrad's cases (rsokl/MyGrad: tests/tensor_ops/test_getitem.py, test_max.py,
tests/math/sequence/test_sequential_funcs.py, tests/tensor_base/test_broadcast.py,
test_chainrule.py, test_pow_special_cases.py) for the ops minigrad has: basic, integer-array
and boolean indexing (repeated indices accumulate), reductions over drawn axes with keepdims,
gradients summed back over broadcast axes, and the chain rule through fan-out and constant
branches. Our own code, with hypothesis drawing shapes and indices as MyGrad's tests do.
Gradients are checked against finite differences (``mg.gradcheck``, float64) or, for
indexing, against an independent reference (peer_util.index_grad).
"""
from __future__ import annotations

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from peer_util import assert_close, gradcheck_ok, index_grad

import minigrad as mg
from minigrad import F

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


def _distinct(shape, seed):
    """Values at least 0.8 apart (no ties for max/min, none within a finite-difference step)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n) + rng.uniform(0, 0.2, n)).reshape(shape) - n / 2


def _check_index(x, index):
    t = mg.Tensor(x, requires_grad=True)
    out = t[index]
    np.testing.assert_array_equal(out.data, x[index])
    g = np.random.default_rng(0).standard_normal(out.shape)
    out.backward(g)
    np.testing.assert_allclose(t.grad, index_grad(x.shape, index, g), rtol=1e-14, atol=1e-14)


# ---- test_getitem.py ------------------------------------------------------------------------------
def test_getitem_unpacking():
    """a, b, c = x iterates over the first axis; each piece carries its gradient back."""
    x = mg.Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    a, b, c = x
    for p in (a, b, c):
        p.retain_grad()
    f = 2 * a + 3 * b + 4 * c
    f.backward()
    assert (a.item(), b.item(), c.item(), f.item()) == (1.0, 2.0, 3.0, 20.0)
    assert (a.grad, b.grad, c.grad) == (2.0, 3.0, 4.0)
    np.testing.assert_array_equal(x.grad, [2.0, 3.0, 4.0])


@SETTINGS
@given(data=st.data(), shape=SHAPES)
def test_getitem_basic_index(data, shape):
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    _check_index(np.random.default_rng(1).standard_normal(shape), index)


@SETTINGS
@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
def test_getitem_integer_array_index(data, shape):
    index = data.draw(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(
        min_dims=0, max_dims=3, max_side=5)))  # drawn indices repeat: the reads must add up
    _check_index(np.random.default_rng(2).standard_normal(shape), index)


@SETTINGS
@given(data=st.data(), shape=SHAPES)
def test_getitem_boolean_mask(data, shape):
    mask = data.draw(hnp.arrays(bool, shape))
    _check_index(np.random.default_rng(3).standard_normal(shape), mask)


FIXED_INDICES = [
    ("ix-rows-columns", (4, 3), np.ix_(np.array([0, 3]), np.array([0, 2]))),
    ("ellipsis-2-0", (3, 2, 4, 3), (Ellipsis, 2, 0)),
    ("ix-bool-rows-int-columns", (4, 3), np.ix_(np.array([False, True, False, True]), [0, 2])),
    ("slice-and-list", (4, 3), (slice(1, 2), [1, 2])),
]


@pytest.mark.parametrize("label, shape, index", FIXED_INDICES, ids=[c[0] for c in FIXED_INDICES])
def test_getitem_fixed_indices(label, shape, index):
    x = np.random.default_rng(4).standard_normal(shape)
    _check_index(x, index)
    gradcheck_ok(lambda t: t[index], x)


# ---- test_sequential_funcs.py, test_max.py: reductions over drawn axes --------------------------------
def _axes(ndim):
    """None, an int or a tuple of distinct axes, negative ones included (MyGrad's valid_axes)."""
    if ndim == 0:
        return st.sampled_from([None, ()])
    single = st.integers(-ndim, ndim - 1)
    tuples = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).flatmap(
        lambda ax: st.tuples(*[st.sampled_from([a, a - ndim]) for a in ax]))
    return st.none() | single | tuples


@SETTINGS
@given(data=st.data(), name=st.sampled_from(["max", "min", "sum", "mean"]),
       shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3),
       keepdims=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_reduction_over_drawn_axes(data, name, shape, keepdims, seed):
    axis = data.draw(_axes(len(shape)), label="axis")
    x = _distinct(shape, seed)
    fn = lambda t: getattr(t, name)(axis=axis, keepdims=keepdims)  # noqa: E731
    assert_close(fn(mg.Tensor(x)).data, getattr(np, name)(x, axis=axis, keepdims=keepdims), np.float64)
    gradcheck_ok(fn, x)


@SETTINGS
@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
       keepdims=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_var_over_drawn_axes_and_ddof(data, shape, keepdims, seed):
    axis = data.draw(_axes(len(shape)).filter(lambda a: a != ()), label="axis")
    ddof = data.draw(st.integers(0, min(shape) - 1), label="ddof")
    x = np.random.default_rng(seed).uniform(-10, 10, shape)
    fn = lambda t: t.var(axis=axis, ddof=ddof, keepdims=keepdims)  # noqa: E731
    assert_close(fn(mg.Tensor(x)).data, np.var(x, axis=axis, ddof=ddof, keepdims=keepdims),
                 np.float64, ulps=256)
    gradcheck_ok(fn, x)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (1, 2, 1)])
def test_var_over_no_axes_is_zero(shape):
    """test_var_no_axis: var over axis=() is 0 everywhere, and so is its gradient."""
    x = mg.Tensor(np.random.default_rng(5).standard_normal(shape), requires_grad=True)
    out = x.var(axis=())
    np.testing.assert_array_equal(out.data, np.zeros(shape))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad, np.zeros(shape))


@SETTINGS
@given(data=st.data(), fill=st.floats(-100, 100), keepdims=st.booleans(),
       shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3))
def test_degenerate_max_splits_evenly(data, fill, keepdims, shape):
    """test_degenerate_max_back: MyGrad gives the whole gradient of a constant slice to its
    first element; minigrad splits it evenly among the tied elements (docs/backward.md, as
    torch.amax). So this checks minigrad's rule: every element gets g / (elements reduced)."""
    axis = data.draw(_axes(len(shape)), label="axis")
    x = mg.Tensor(np.full(shape, fill), requires_grad=True)
    out = x.max(axis=axis, keepdims=keepdims)
    g = np.arange(1.0, out.size + 1).reshape(out.shape)
    out.backward(g)
    kept = np.reshape(g, np.max(x.data, axis=axis, keepdims=True).shape)
    np.testing.assert_allclose(x.grad, np.broadcast_to(kept, shape) * out.size / x.size, rtol=1e-15)


# ---- test_broadcast.py: gradients summed back to the input's shape ------------------------------------
@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3),
       seed=st.integers(0, 2 ** 16))
def test_broadcast_gradient_is_reduced(shapes, seed):
    (sa, sb), out_shape = shapes.input_shapes, shapes.result_shape
    rng = np.random.default_rng(seed)
    a, b = (mg.Tensor(rng.standard_normal(s), requires_grad=True) for s in (sa, sb))
    g = rng.standard_normal(out_shape)
    (a * 1.0 + b * 2.0).backward(g)
    for t, w in ((a, 1.0), (b, 2.0)):
        lead = len(out_shape) - t.ndim  # new leading axes, then the size-1 axes that grew
        want = g.sum(axis=tuple(range(lead)))
        grown = tuple(i for i, n in enumerate(t.shape) if n == 1 and want.shape[i] != 1)
        np.testing.assert_allclose(t.grad, w * want.sum(axis=grown, keepdims=True), rtol=1e-13)


def test_hybrid_broadcasting():
    """(3, 1, 2) -> (5, 3, 4, 2): a new leading axis and a grown size-1 axis at once."""
    x = mg.Tensor(np.ones((3, 1, 2)), requires_grad=True)
    g = np.random.default_rng(6).standard_normal((5, 3, 4, 2))
    F.broadcast_to(x, (5, 3, 4, 2)).backward(g)
    np.testing.assert_allclose(x.grad, g.sum(axis=0).sum(axis=-2, keepdims=True), rtol=1e-14)


def test_cotangent_of_the_wrong_shape_is_refused():
    """test_bad_gradient_dimensionality, at the public face: backward(grad) checks the shape."""
    y = mg.Tensor(np.ones((1, 2, 3)), requires_grad=True) * 2
    with pytest.raises(ValueError, match=r"\(1, 2\)"):
        y.backward(np.ones((1, 2)))


# ---- test_pow_special_cases.py ------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("kind", ["int", "float", "0d-array"])
def test_pow_special_exponents(kind, p):
    """x ** 1 and x ** 2 with the exponent as int, float or 0-d array: value, gradient p x^(p-1)
    and a float32 graph that stays float32."""
    exp = {"int": int(p), "float": float(p), "0d-array": np.array(p)}[kind]
    x = mg.Tensor(np.linspace(-2, 2, 5, dtype=np.float32), requires_grad=True)
    y = x ** exp
    np.testing.assert_array_equal(y.data, x.data ** p)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, p * x.data ** (p - 1), rtol=np.finfo(np.float32).eps)
    assert y.dtype == np.float32 and x.grad.dtype == np.float32
