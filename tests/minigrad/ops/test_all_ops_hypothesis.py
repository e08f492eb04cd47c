"""Property tests: generated broadcastable shapes for the binary ops and for matmul.

Hypothesis draws the shapes (``mutually_broadcastable_shapes``, with matmul's gufunc
signature for compatible core dims and broadcast batch dims) and a seed; the values come
from NumPy's generator with that seed, shaped so no input sits on a kink (no ties for
maximum/minimum, positive bases for pow, denominators away from 0). Values are checked
against NumPy, gradients with gradcheck.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import minigrad as mg
from minigrad import F

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**32 - 1)


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
