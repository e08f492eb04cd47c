"""Small things a user trips on: ``mg.heap`` without an import, the VJP-shape message, bool
inputs, empty products and splits."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.special as sp

import minigrad as mg
from minigrad import F
from minigrad.ops import PUBLIC_OPS
from op_cases.catalogs import bool_catalog  # the catalog: tests/minigrad/op_cases/

ROOT = Path(__file__).resolve().parents[3]


def test_heap_is_reachable_from_the_package():
    code = "import minigrad as mg; print(mg.heap.keep_heap.__name__)"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "keep_heap"


# ---- the VJP-shape message ---------------------------------------------------------------
def _op_whose_vjp_returns(shape):
    @mg.op
    def badly_shaped(x):
        return x * 2.0, lambda g: np.ones(shape)
    return badly_shaped


def test_a_wrong_vjp_shape_is_told_what_would_be_accepted():
    x = mg.Tensor(np.ones((3, 2)), requires_grad=True)
    with pytest.raises(ValueError) as info:
        _op_whose_vjp_returns((1, 2))(x).backward(np.ones((3, 2)))
    msg = str(info.value)
    assert "badly_shaped" in msg and "(1, 2)" in msg and "(3, 2)" in msg
    # (1, 2) does broadcast to (3, 2): the rule is the other way round
    assert "(or a shape that broadcasts to it)" not in msg
    assert "a shape that (3, 2) broadcasts to" in msg


@pytest.mark.parametrize("returned", [(3, 2), (4, 3, 2), (3, 3, 2), (1, 3, 2)])
def test_the_shapes_the_message_allows_are_accepted(returned):
    """The input's shape (3, 2) broadcasts to each of these: the engine sums them back."""
    x = mg.Tensor(np.ones((3, 2)), requires_grad=True)
    _op_whose_vjp_returns(returned)(x).backward(np.ones((3, 2)))
    np.testing.assert_array_equal(x.grad, np.full((3, 2), np.prod(returned) / 6))


@pytest.mark.parametrize("returned", [(1, 2), (3, 1), (2,), (6,), (2, 3)])
def test_shapes_the_input_does_not_broadcast_to_are_refused(returned):
    x = mg.Tensor(np.ones((3, 2)), requires_grad=True)
    with pytest.raises(ValueError, match="broadcasts to"):
        _op_whose_vjp_returns(returned)(x).backward(np.ones((3, 2)))


# ---- bool inputs ---------------------------------------------------------------------------
MASK = np.array([[True, False, True], [False, False, True]])


@pytest.mark.parametrize("fn", [F.neg, lambda t: -t, lambda t: F.sub(t, t), lambda t: t - t],
                         ids=["neg", "unary-minus", "sub", "minus"])
def test_negating_or_subtracting_masks_is_refused_with_our_message(fn):
    with pytest.raises(TypeError) as info:
        fn(mg.Tensor(MASK))
    msg = str(info.value)
    assert msg.startswith(("neg", "sub")) and "bool" in msg and "logical" in msg


def _float64_of_mask():
    return MASK.astype(np.float64)


@pytest.mark.parametrize("name,fn,ref", [
    ("sigmoid", F.sigmoid, sp.expit),
    ("log_softmax", F.log_softmax, lambda a: sp.log_softmax(a, axis=-1)),
    ("log_softmax-0", lambda t: F.log_softmax(t, axis=0), lambda a: sp.log_softmax(a, axis=0)),
    ("softmax-0", lambda t: F.softmax(t, axis=0), lambda a: sp.softmax(a, axis=0)),
    ("softmax", F.softmax, lambda a: sp.softmax(a, axis=-1)),
    ("logsumexp", F.logsumexp, sp.logsumexp),
    ("logsumexp-1", lambda t: F.logsumexp(t, axis=1), lambda a: sp.logsumexp(a, axis=1)),
    ("gelu_tanh", F.gelu_tanh, lambda a: 0.5 * a * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))),
])
def test_composite_float_ops_compute_masks_as_0_and_1_in_float64(name, fn, ref):
    out = fn(mg.Tensor(MASK))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.data, ref(_float64_of_mask()), rtol=1e-13, atol=1e-15)


def test_the_bool_catalog_covers_every_public_op():
    assert set(bool_catalog()) == set(PUBLIC_OPS)


@pytest.mark.parametrize("name", sorted(bool_catalog()))
def test_every_op_on_bool_input_works_or_gives_our_message(name):
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = bool_catalog()[name]()
    except (TypeError, ValueError) as e:  # ours names the op (or its argument) first
        assert str(e).startswith(name), f"{name}: NumPy's message? {e}"
        return
    assert isinstance(out, mg.Tensor) and type(out.data) is np.ndarray


# ---- empty products and splits ---------------------------------------------------------------
MATMUL_EMPTY = [((3, 4, 0), (0, 3)), ((2, 0), (0, 3)), ((0,), (0,)), ((0, 4), (4, 3)),
                ((4, 0), (0,)), ((0,), (0, 3)), ((3, 4, 0), (0,)), ((0,), (2, 0, 3)),
                ((2, 3, 0), (2, 0, 4)), ((2, 0, 4), (4, 3)), ((3, 4), (4, 0)),
                ((0, 3, 4), (4, 2)), ((2, 3, 4), (4, 0)), ((2, 3, 0), (0, 0))]


@pytest.mark.parametrize("sa,sb", MATMUL_EMPTY, ids=lambda s: "x".join(map(str, s)) or "0d")
def test_matmul_with_an_empty_axis_is_numpys_and_so_is_its_backward(sa, sb):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    ta, tb = mg.Tensor(a, requires_grad=True), mg.Tensor(b, requires_grad=True)
    out = ta @ tb
    expected = a @ b
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.data, expected)  # zeros, or nothing at all
    g = rng.standard_normal(expected.shape)
    out.backward(g)
    # out is linear in each operand: a's gradient at i is <g, e_i @ b>, with NumPy's matmul
    np.testing.assert_allclose(ta.grad, _linear_grad(lambda e: e @ b, a.shape, g), atol=1e-12)
    np.testing.assert_allclose(tb.grad, _linear_grad(lambda e: a @ e, b.shape, g), atol=1e-12)


def _linear_grad(f, shape, g):
    grad = np.zeros(shape)
    for i in np.ndindex(*shape):
        e = np.zeros(shape)
        e[i] = 1.0
        grad[i] = np.sum(g * f(e))
    return grad


@pytest.mark.parametrize("sx,n", [((2, 0), 3), ((0, 3), 2), ((2, 3, 0), 4)])
def test_linear_with_an_empty_axis(sx, n):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(sx)
    w, b = rng.standard_normal((sx[-1], n)), rng.standard_normal(n)
    tx, tw, tb = (mg.Tensor(v, requires_grad=True) for v in (x, w, b))
    out = F.linear(tx, tw, tb)
    np.testing.assert_array_equal(out.data, x @ w + b)
    g = rng.standard_normal(out.shape)
    out.backward(g)
    assert tx.grad.shape == x.shape and tw.grad.shape == w.shape
    np.testing.assert_allclose(tb.grad, g.reshape(-1, n).sum(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tw.grad, _linear_grad(lambda e: x @ e, w.shape, g), atol=1e-12)
    np.testing.assert_allclose(tx.grad, _linear_grad(lambda e: e @ w, x.shape, g), atol=1e-12)


@pytest.mark.parametrize("shape,sections,axis", [((0,), 3, 0), ((0, 2), 1, 0), ((2, 0), 2, 1),
                                                 ((3, 0, 2), 5, 1), ((0,), [0, 0], 0),
                                                 ((0, 4), [1, 3], 0)])
def test_split_along_an_empty_axis_is_numpys(shape, sections, axis):
    x = np.zeros(shape)
    t = mg.Tensor(x, requires_grad=True)
    pieces = F.split(t, sections, axis=axis)
    expected = np.split(x, sections, axis=axis)
    assert [p.shape for p in pieces] == [e.shape for e in expected]
    total = sum(F.sum(p) for p in pieces) + F.sum(t)
    total.backward()
    assert t.grad.shape == shape


def test_split_into_sections_is_numpys_with_gradients():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6))
    pieces = F.split(mg.Tensor(x), 3, axis=1)
    for p, e in zip(pieces, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(p.data, e)
    mg.gradcheck(lambda a: F.concatenate([p * (i + 1.0) for i, p in enumerate(F.split(a, 3, 1))],
                                         axis=1), [x], raise_exception=True)
