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


def _bool_catalog():
    """Every public op with bool Tensors where the op takes numbers."""
    b = mg.Tensor(MASK)
    return {
        "add": lambda: b + b, "sub": lambda: b - b, "mul": lambda: b * b, "div": lambda: b / b,
        "neg": lambda: -b, "pow": lambda: b ** b, "exp": lambda: F.exp(b),
        "log": lambda: F.log(b), "sqrt": lambda: F.sqrt(b), "tanh": lambda: F.tanh(b),
        "abs": lambda: F.abs(b), "sigmoid": lambda: F.sigmoid(b), "relu": lambda: F.relu(b),
        "maximum": lambda: F.maximum(b, b), "minimum": lambda: F.minimum(b, b),
        "where": lambda: F.where(b, b, b), "clip": lambda: F.clip(b, 0, 1),
        "astype": lambda: F.astype(b, np.float32), "sum": lambda: F.sum(b),
        "mean": lambda: F.mean(b), "max": lambda: F.max(b), "min": lambda: F.min(b),
        "var": lambda: F.var(b), "reshape": lambda: F.reshape(b, (3, 2)),
        "transpose": lambda: b.T, "permute": lambda: F.permute(b, 1, 0),
        "swapaxes": lambda: F.swapaxes(b, 0, 1), "expand_dims": lambda: F.expand_dims(b, 0),
        "squeeze": lambda: F.squeeze(F.expand_dims(b, 0)),
        "broadcast_to": lambda: F.broadcast_to(b, (2, 2, 3)), "getitem": lambda: b[b],
        "concatenate": lambda: F.concatenate([b, b]), "stack": lambda: F.stack([b, b]),
        "split": lambda: F.split(b, 3, axis=1)[0], "matmul": lambda: b @ b.T,
        "linear": lambda: F.linear(b, MASK.T), "softmax": lambda: F.softmax(b),
        "log_softmax": lambda: F.log_softmax(b), "logsumexp": lambda: F.logsumexp(b),
        "layer_norm": lambda: F.layer_norm(b), "gelu_tanh": lambda: F.gelu_tanh(b),
        "cross_entropy": lambda: F.cross_entropy(b, np.array([0, 1])),
        "self_attention": lambda: F.self_attention(mg.Tensor(np.ones((1, 2, 6), bool)), 2),
        "conv2d": lambda: F.conv2d(mg.Tensor(np.ones((1, 1, 2, 3), bool)), MASK[None, None, :1, :1]),
        "conv1d": lambda: F.conv1d(F.expand_dims(b, 0), np.ones((1, 2, 1), bool)),
        "max_pool2d": lambda: F.max_pool2d(mg.Tensor(MASK[None, None]), 1),
        "avg_pool2d": lambda: F.avg_pool2d(mg.Tensor(MASK[None, None]), 1),
        "pad": lambda: F.pad(b, 1),
        # issue 14: indexing, shape and attention (ops-c)
        "take_along_axis": lambda: F.take_along_axis(b, np.array([[0], [2]]), 1),
        "put_along_axis": lambda: F.put_along_axis(b, np.array([[0], [2]]), True, 1),
        "tile": lambda: F.tile(b, 2), "repeat": lambda: F.repeat(b, 2, 1),
        "roll": lambda: F.roll(b, 1), "flip": lambda: F.flip(b), "tril": lambda: F.tril(b),
        "triu": lambda: F.triu(b), "moveaxis": lambda: F.moveaxis(b, 0, 1),
        "diagonal": lambda: F.diagonal(b), "trace": lambda: F.trace(b),
        "scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(b, b, b),
        "softplus": lambda: F.softplus(b), "silu": lambda: F.silu(b), "gelu": lambda: F.gelu(b),
        "leaky_relu": lambda: F.leaky_relu(b), "elu": lambda: F.elu(b), "selu": lambda: F.selu(b),
        "log_sigmoid": lambda: F.log_sigmoid(b), "hardtanh": lambda: F.hardtanh(b),
        "softmin": lambda: F.softmin(b), "mse_loss": lambda: F.mse_loss(b, b),
        "l1_loss": lambda: F.l1_loss(b, b), "smooth_l1_loss": lambda: F.smooth_l1_loss(b, b),
        "binary_cross_entropy_with_logits": lambda: F.binary_cross_entropy_with_logits(b, b),
        "nll_loss": lambda: F.nll_loss(b, np.array([0, 1])),
    }


def test_the_bool_catalog_covers_every_public_op():
    from test_ops_a_catalogs import OPS_A  # the ops-a ops (issue 14) have their own catalog

    assert set(_bool_catalog()) | set(OPS_A) == set(PUBLIC_OPS)


@pytest.mark.parametrize("name", sorted(_bool_catalog()))
def test_every_op_on_bool_input_works_or_gives_our_message(name):
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = _bool_catalog()[name]()
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
