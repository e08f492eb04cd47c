"""Dtypes and input safety for every op.

float32 in -> float32 out and float32 gradients (no silent float64 promotion), float64
stays float64, Python scalars do not promote, and no op writes into its inputs (forward
or backward). Bool inputs: every op computes with them or refuses them with our message
(negating or subtracting masks is refused; composite float ops take them as 0 and 1 in
float64).
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp
from op_cases.catalogs import bool_catalog  # the catalog: tests/minigrad/op_cases/

import minigrad as mg
from minigrad import F
from minigrad.ops import PUBLIC_OPS


def _run(case, dtype, seed=0):
    """Forward and backward with a random cotangent; returns (out, tensors)."""
    ts = [mg.Tensor(x.astype(dtype), requires_grad=True) if x.dtype.kind == "f" else x
          for x in case.inputs]
    out = case.fn(*ts)
    cot = np.random.default_rng(seed).standard_normal(out.shape).astype(out.dtype)
    out.backward(cot)
    return out, [t for t in ts if isinstance(t, mg.Tensor)]


@pytest.mark.dtype_keeping_cases
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_kept_in_value_and_gradient(mg_op_case, dtype):
    case = mg_op_case
    out, ts = _run(case, dtype)
    assert out.dtype == dtype, f"{case.id}: output {out.dtype} from {np.dtype(dtype)} inputs"
    assert type(out.data) is np.ndarray
    for t in ts:
        assert t.grad is not None, f"{case.id}: no gradient"
        assert t.grad.dtype == dtype, f"{case.id}: gradient {t.grad.dtype}"
        assert t.grad.shape == t.shape
        assert np.all(np.isfinite(t.grad))
    if dtype == np.float32:  # the float32 result is the float64 one, rounded
        expected = np.asarray(case.ref(*case.inputs))
        np.testing.assert_allclose(out.data, expected, rtol=2e-5, atol=2e-5)


def test_inputs_are_never_modified(mg_op_case):
    case = mg_op_case
    copies = [x.copy() for x in case.inputs]
    ts = [mg.Tensor(x, requires_grad=True) if x.dtype.kind == "f" else x for x in case.inputs]
    out = case.fn(*ts)
    saved_out = out.data.copy()
    out.backward(np.random.default_rng(1).standard_normal(out.shape), retain_graph=True)
    out.backward(np.random.default_rng(2).standard_normal(out.shape))
    for x, c in zip(case.inputs, copies, strict=True):
        np.testing.assert_array_equal(x, c, err_msg=f"{case.id}: an input array was written")
    for t, x in zip(ts, case.inputs, strict=True):  # Tensor wraps without copying: still the same array
        assert not isinstance(t, mg.Tensor) or t.data is x
    np.testing.assert_array_equal(out.data, saved_out, err_msg="backward changed the output")


def test_gradients_do_not_alias_the_cotangent_or_each_other():
    x = mg.Tensor(np.ones((2, 3), np.float32), requires_grad=True)
    y = mg.Tensor(np.ones((2, 3), np.float32), requires_grad=True)
    cot = np.full((2, 3), 2.0, np.float32)
    F.add(F.reshape(x, (6,)), F.reshape(y, (6,))).backward(cot.reshape(6))
    x.grad += 1
    np.testing.assert_array_equal(cot, 2.0)
    np.testing.assert_array_equal(y.grad, 2.0)


SCALAR_EXPRS = {
    "x*2.0": lambda x: x * 2.0, "3*x": lambda x: 3 * x, "x+1.5": lambda x: x + 1.5,
    "1-x": lambda x: 1 - x, "x-0.25": lambda x: x - 0.25, "x/3.0": lambda x: x / 3.0,
    "2.0/x": lambda x: 2.0 / x, "x**2": lambda x: x ** 2, "x**0.5": lambda x: x ** 0.5,
    "x**-1.5": lambda x: x ** -1.5, "2.0**x": lambda x: 2.0 ** x, "-x": lambda x: -x,
    "maximum(x,0.5)": lambda x: F.maximum(x, 0.5), "minimum(1,x)": lambda x: F.minimum(1, x),
    "where(m,x,0.0)": lambda x: F.where(x.data > 1.0, x, 0.0), "clip": lambda x: x.clip(0.7, 1.2),
    "mean*0.1+1": lambda x: x.mean(axis=0) * 0.1 + 1, "var/2": lambda x: x.var(axis=1) / 2,
    "pow(x,tensor-f32)": lambda x: F.pow(x, mg.Tensor(np.float32(1.5))),
}


@pytest.mark.parametrize("expr", list(SCALAR_EXPRS), ids=list(SCALAR_EXPRS))
def test_python_scalars_keep_float32(expr):
    x = mg.Tensor(np.random.default_rng(0).uniform(0.5, 2.0, (3, 4)).astype(np.float32),
                  requires_grad=True)
    out = SCALAR_EXPRS[expr](x)
    assert out.dtype == np.float32
    out.backward(np.ones(out.shape, np.float32))
    assert x.grad.dtype == np.float32


def test_float32_cotangent_chain_stays_float32_throughout():
    """Intermediate gradients are float32 too: retain_grad on every stage of a small net."""
    rng = np.random.default_rng(0)
    x = mg.Tensor(rng.standard_normal((4, 6)).astype(np.float32), requires_grad=True)
    w = mg.Tensor(rng.standard_normal((6, 5)).astype(np.float32), requires_grad=True)
    h1 = F.layer_norm(x)
    h2 = F.gelu_tanh(h1 @ w)
    h3 = F.softmax(h2 * 0.5, axis=-1)
    loss = F.cross_entropy(F.log(h3 + 1e-3), np.array([0, 1, 2, 3]), label_smoothing=0.1)
    for h in (h1, h2, h3):
        h.retain_grad()
    loss.backward()
    assert loss.dtype == np.float32
    for t in (x, w, h1, h2, h3):
        assert t.grad.dtype == np.float32


def test_float64_model_is_not_demoted_by_float32_constants():
    x = mg.Tensor(np.ones(3), requires_grad=True)
    out = x * np.float32(2.0) + np.ones(3, np.float32)
    assert out.dtype == np.float64
    out.backward(np.ones(3))
    assert x.grad.dtype == np.float64


@pytest.mark.parametrize("dtype", [np.int64, np.int32, bool])
def test_cast_to_non_floating_is_not_differentiable(dtype):
    """As in PyTorch: an integer result cannot carry a gradient (it would be truncated)."""
    x = mg.Tensor(np.array([1.7, 2.2, -0.6]), requires_grad=True)
    y = F.astype(x, dtype)
    assert y.dtype == dtype and not y.requires_grad
    loss = F.sum(y * 2.5 + x * x)
    loss.backward()
    np.testing.assert_array_equal(x.grad, 2 * x.data)  # only the x * x path


def test_cast_between_floats_is_differentiable_and_casts_back():
    x = mg.Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    y = F.astype(x, np.float64)
    assert y.dtype == np.float64 and y.requires_grad
    (y * np.array([0.1, 0.2])).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad, [0.1, 0.2], rtol=1e-7)


# ---- bool inputs ----------------------------------------------------------------------------
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
