"""NumPy functions and ufuncs called on Tensors (``minigrad.numpy_api``, NEP 13 and NEP 18).

A NumPy callable minigrad has an op for records into the graph like that op: the forward is
checked against NumPy on the raw arrays, the gradient against the op called directly (same
cotangent); ndarrays and Tensors mix as the reflected operators do. The arguments NumPy's
spellings take (dtype=, bounds that require grad) are honoured. What numpy_api refuses (out=,
where=, every other NumPy callable) and how a Tensor converts to an ndarray:
test_numpy_api_refusals.py.
"""
from __future__ import annotations

from functools import partial

import helpers
import numpy as np
import pytest
from helpers import leaves, numpy_since_2

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(1311)
rn = partial(helpers.rn, RNG)
pos = partial(helpers.uniform, RNG, 0.5, 2.0)


def _close(got, want):
    """Equal up to a few ulps of the dtype, scaled by the magnitude."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                 want.shape, want.dtype)
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    eps = np.finfo(want.dtype).eps
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=16 * eps, atol=16 * eps * scale)


# ---- every entry of the table ------------------------------------------------------------
# (key, id, numpy spelling, the op it must record like, input makers). The numpy spelling is
# run on the raw arrays (NumPy's answer) and on Tensors (the dispatch under test). Inputs
# that are not float (masks) stay arrays.
def _outer_ref(op):
    return lambda a, b: op(F.reshape(a, a.shape + (1,) * b.ndim), b)


CASES = [
    (np.add, "add", lambda a, b: np.add(a, b), F.add, [rn(3, 4), rn(4)]),
    (np.subtract, "sub", lambda a, b: np.subtract(a, b), F.sub, [rn(3, 4), rn(3, 1)]),
    (np.multiply, "mul", lambda a, b: np.multiply(a, b), F.mul, [rn(2, 3), rn(2, 3)]),
    (np.divide, "div", lambda a, b: np.divide(a, b), F.div, [rn(2, 3), pos(3)]),
    (np.power, "pow", lambda a, b: np.power(a, b), F.pow, [pos(2, 3), rn(2, 3)]),
    (np.maximum, "maximum", lambda a, b: np.maximum(a, b), F.maximum, [rn(4, 3), rn(4, 3)]),
    (np.minimum, "minimum", lambda a, b: np.minimum(a, b), F.minimum, [rn(4, 3), rn(3)]),
    (np.matmul, "matmul", lambda a, b: np.matmul(a, b), F.matmul, [rn(2, 3, 4), rn(4, 5)]),
    (np.negative, "neg", lambda a: np.negative(a), F.neg, [rn(3, 2)]),
    (np.positive, "positive", lambda a: np.positive(a), lambda a: a, [rn(3, 2)]),
    (np.exp, "exp", lambda a: np.exp(a), F.exp, [rn(3, 2)]),
    (np.log, "log", lambda a: np.log(a), F.log, [pos(3, 2)]),
    (np.sqrt, "sqrt", lambda a: np.sqrt(a), F.sqrt, [pos(3, 2)]),
    (np.tanh, "tanh", lambda a: np.tanh(a), F.tanh, [rn(3, 2)]),
    (np.absolute, "abs", lambda a: np.abs(a), F.abs, [rn(3, 2)]),
    (np.square, "square", lambda a: np.square(a), lambda a: F.pow(a, 2), [rn(3, 2)]),
    (("reduce", np.add), "add.reduce", lambda a: np.add.reduce(a, axis=1),
     lambda a: F.sum(a, axis=1), [rn(3, 4)]),
    (("reduce", np.add), "add.reduce-default-axis0", lambda a: np.add.reduce(a),
     lambda a: F.sum(a, axis=0), [rn(3, 4)]),
    (("reduce", np.maximum), "maximum.reduce", lambda a: np.maximum.reduce(a, axis=None),
     F.max, [rn(3, 4)]),
    (("reduce", np.minimum), "minimum.reduce", lambda a: np.minimum.reduce(a, 0, keepdims=True),
     lambda a: F.min(a, axis=0, keepdims=True), [rn(3, 4)]),
    (("outer", np.multiply), "multiply.outer", lambda a, b: np.multiply.outer(a, b),
     _outer_ref(F.mul), [rn(3), rn(2, 2)]),
    (("outer", np.subtract), "subtract.outer", lambda a, b: np.subtract.outer(a, b),
     _outer_ref(F.sub), [rn(3), rn(4)]),
    (np.sum, "sum", lambda a: np.sum(a), F.sum, [rn(3, 4)]),
    (np.sum, "sum-axes-keepdims", lambda a: np.sum(a, axis=(0, 2), keepdims=True),
     lambda a: F.sum(a, axis=(0, 2), keepdims=True), [rn(2, 3, 4)]),
    (np.sum, "sum-out-None", lambda a: np.sum(a, -1, None, None), lambda a: F.sum(a, -1),
     [rn(2, 3)]),
    (np.mean, "mean", lambda a: np.mean(a, axis=0), lambda a: F.mean(a, axis=0), [rn(3, 4)]),
    (np.max, "max", lambda a: np.max(a, axis=1), lambda a: F.max(a, axis=1), [rn(3, 4)]),
    (np.amax, "amax", lambda a: np.amax(a), F.max, [rn(3, 4)]),
    (np.min, "min", lambda a: np.min(a, axis=-1, keepdims=True),
     lambda a: F.min(a, axis=-1, keepdims=True), [rn(3, 4)]),
    (np.amin, "amin", lambda a: np.amin(a, 0), lambda a: F.min(a, axis=0), [rn(3, 4)]),
    (np.var, "var", lambda a: np.var(a, axis=1), lambda a: F.var(a, axis=1), [rn(3, 5)]),
    (np.var, "var-ddof", lambda a: np.var(a, ddof=1), lambda a: F.var(a, ddof=1), [rn(3, 5)]),
    (np.var, "var-correction", lambda a: np.var(a, 0, correction=1),
     lambda a: F.var(a, axis=0, ddof=1), [rn(3, 5)]),
    (np.reshape, "reshape", lambda a: np.reshape(a, (4, -1)), lambda a: F.reshape(a, (4, -1)),
     [rn(2, 6)]),
    (np.ravel, "ravel", lambda a: np.ravel(a), lambda a: F.reshape(a, (-1,)), [rn(2, 3)]),
    (np.transpose, "transpose", lambda a: np.transpose(a), F.transpose, [rn(2, 3, 4)]),
    (np.transpose, "permute_dims", lambda a: np.permute_dims(a, (1, 2, 0)),
     lambda a: F.transpose(a, (1, 2, 0)), [rn(2, 3, 4)]),
    (np.swapaxes, "swapaxes", lambda a: np.swapaxes(a, 0, 2),
     lambda a: F.swapaxes(a, 0, 2), [rn(2, 3, 4)]),
    (np.expand_dims, "expand_dims", lambda a: np.expand_dims(a, (0, 2)),
     lambda a: F.expand_dims(a, (0, 2)), [rn(2, 3)]),
    (np.squeeze, "squeeze", lambda a: np.squeeze(a, axis=1), lambda a: F.squeeze(a, 1),
     [rn(2, 1, 3)]),
    (np.broadcast_to, "broadcast_to", lambda a: np.broadcast_to(a, (4, 2, 3)),
     lambda a: F.broadcast_to(a, (4, 2, 3)), [rn(2, 1)]),
    (np.concatenate, "concatenate", lambda a, b: np.concatenate([a, b, a], axis=1),
     lambda a, b: F.concatenate([a, b, a], axis=1), [rn(2, 3), rn(2, 1)]),
    (np.concatenate, "concatenate-axis-None", lambda a, b: np.concatenate((a, b), axis=None),
     lambda a, b: F.concatenate([F.reshape(a, (-1,)), F.reshape(b, (-1,))]),
     [rn(2, 3), rn(4)]),
    (np.stack, "stack", lambda a, b: np.stack([a, b], axis=1),
     lambda a, b: F.stack([a, b], axis=1), [rn(2, 3), rn(2, 3)]),
    (np.split, "split", lambda a: np.split(a, 2, axis=1)[1], lambda a: F.split(a, 2, axis=1)[1],
     [rn(3, 4)]),
    (np.where, "where", lambda c, a, b: np.where(c, a, b), F.where,
     [RNG.random((3, 4)) < 0.5, rn(3, 4), rn(4)]),
    (np.clip, "clip", lambda a: np.clip(a, -0.5, 0.5), lambda a: F.clip(a, -0.5, 0.5),
     [rn(4, 5)]),
    (np.clip, "clip-min-max-keywords", lambda a: np.clip(a, min=-0.5),
     lambda a: F.clip(a, -0.5, None), [rn(4, 5)]),
    # shape and indexing ops (ops/shape.py, indexing.py) under NumPy's names and defaults
    (np.flip, "flip", lambda a: np.flip(a, (0, 2)), lambda a: F.flip(a, (0, 2)), [rn(2, 3, 4)]),
    (np.flip, "flip-all", lambda a: np.flip(a), F.flip, [rn(2, 3)]),
    (np.fliplr, "fliplr", lambda a: np.fliplr(a), lambda a: F.flip(a, 1), [rn(3, 4)]),
    (np.flipud, "flipud", lambda a: np.flipud(a), lambda a: F.flip(a, 0), [rn(3, 4)]),
    (np.roll, "roll", lambda a: np.roll(a, (1, -2), axis=(0, 1)),
     lambda a: F.roll(a, (1, -2), (0, 1)), [rn(3, 4)]),
    (np.roll, "roll-flat", lambda a: np.roll(a, 5), lambda a: F.roll(a, 5), [rn(3, 4)]),
    (np.tile, "tile", lambda a: np.tile(a, (2, 1, 3)), lambda a: F.tile(a, (2, 1, 3)),
     [rn(2, 3)]),
    (np.repeat, "repeat", lambda a: np.repeat(a, [1, 0, 2], axis=1),
     lambda a: F.repeat(a, [1, 0, 2], 1), [rn(2, 3)]),
    (np.repeat, "repeat-flat", lambda a: np.repeat(a, 2), lambda a: F.repeat(a, 2), [rn(2, 3)]),
    (np.moveaxis, "moveaxis", lambda a: np.moveaxis(a, 0, -1),
     lambda a: F.moveaxis(a, 0, -1), [rn(2, 3, 4)]),
    (np.tril, "tril", lambda a: np.tril(a, -1), lambda a: F.tril(a, -1), [rn(2, 3, 4)]),
    (np.triu, "triu", lambda a: np.triu(a), F.triu, [rn(4, 3)]),
    (np.triu, "triu-1d", lambda a: np.triu(a, 1), lambda a: F.triu(F.broadcast_to(a, (4, 4)), 1),
     [rn(4)]),
    (np.trace, "trace", lambda a: np.trace(a, 1, 0, 2), lambda a: F.trace(a, 1, 0, 2),
     [rn(3, 2, 4)]),
    (np.trace, "trace-default", lambda a: np.trace(a), F.trace, [rn(3, 3)]),
    (np.diagonal, "diagonal", lambda a: np.diagonal(a, -1, 1, 2),
     lambda a: F.diagonal(a, -1, 1, 2), [rn(2, 3, 4)]),
    (np.take_along_axis, "take_along_axis", lambda a, i: np.take_along_axis(a, i, axis=0),
     lambda a, i: F.take_along_axis(a, i, 0), [rn(3, 4), RNG.integers(0, 3, (5, 4))]),
    (np.take_along_axis, "take_along_axis-default-axis", lambda a, i: np.take_along_axis(a, i),
     lambda a, i: F.take_along_axis(a, i, -1), [rn(3, 4), RNG.integers(0, 4, (3, 6))]),
    (np.pad, "pad-constant", lambda a: np.pad(a, ((1, 0), (2, 1)), constant_values=1.5),
     lambda a: F.pad(a, ((1, 0), (2, 1)), value=1.5), [rn(3, 4)]),
    (np.pad, "pad-reflect", lambda a: np.pad(a, 2, mode="reflect"),
     lambda a: F.pad(a, 2, "reflect"), [rn(3, 4)]),
    (np.pad, "pad-edge", lambda a: np.pad(a, (1, 2), "edge"), lambda a: F.pad(a, (1, 2), "edge"),
     [rn(3, 4)]),
    (numpy_since_2("astype"), "astype", lambda a: np.astype(a, np.float32),
     lambda a: F.astype(a, np.float32), [rn(3, 4)]),
    (np.around, "around", lambda a: np.around(a, 2), lambda a: F.round(a, 2), [rn(3, 4)]),
    (numpy_since_2("cumulative_sum"), "cumulative_sum", lambda a: np.cumulative_sum(a, axis=1),
     lambda a: F.cumsum(a, 1), [rn(3, 4)]),
    (numpy_since_2("cumulative_prod"), "cumulative_prod-1d", lambda a: np.cumulative_prod(a),
     lambda a: F.cumprod(a, 0), [rn(5)]),
    (numpy_since_2("matrix_transpose"), "matrix_transpose", lambda a: np.matrix_transpose(a),
     lambda a: F.swapaxes(a, -1, -2), [rn(2, 3, 4)]),
    (numpy_since_2("linalg.matrix_transpose"), "linalg.matrix_transpose",
     lambda a: np.linalg.matrix_transpose(a), lambda a: F.swapaxes(a, -1, -2), [rn(3, 4)]),
    (numpy_since_2("linalg.matmul"), "linalg.matmul", lambda a, b: np.linalg.matmul(a, b), F.matmul,
     [rn(2, 3, 4), rn(4, 2)]),
    (numpy_since_2("linalg.outer"), "linalg.outer", lambda a, b: np.linalg.outer(a, b), F.outer,
     [rn(3), rn(4)]),
    (numpy_since_2("linalg.tensordot"), "linalg.tensordot",
     lambda a, b: np.linalg.tensordot(a, b, axes=1),
     lambda a, b: F.tensordot(a, b, 1), [rn(2, 3), rn(3, 4)]),
    (numpy_since_2("linalg.trace"), "linalg.trace", lambda a: np.linalg.trace(a, offset=1),
     lambda a: F.trace(a, 1, -2, -1), [rn(2, 3, 4)]),
    (numpy_since_2("linalg.diagonal"), "linalg.diagonal",
     lambda a: np.linalg.diagonal(a, offset=-1),
     lambda a: F.diagonal(a, -1, -2, -1), [rn(2, 4, 3)]),
]
CASES = [c for c in CASES if c[0] is not None]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("key, label, spelled, op, arrays", CASES, ids=[c[1] for c in CASES])
def test_numpy_spelling_records_the_op(key, label, spelled, op, arrays, dtype):
    arrays = [x.astype(dtype) if x.dtype.kind == "f" else x for x in arrays]
    want = spelled(*arrays)  # NumPy's value and dtype: a float32 graph stays float32
    ts = leaves(arrays)
    out = spelled(*ts)
    assert isinstance(out, mg.Tensor), type(out)
    _close(out.data, want)
    for x, t in zip(arrays, ts, strict=True):  # inputs never modified
        np.testing.assert_array_equal(x, t.data if isinstance(t, mg.Tensor) else t)

    refs = leaves(arrays)
    ref = op(*refs)
    assert out.op == ref.op
    g = RNG.standard_normal(out.shape).astype(dtype)
    out.backward(g)
    ref.backward(g)
    for t, r in zip(ts, refs, strict=True):
        if isinstance(t, mg.Tensor):
            np.testing.assert_array_equal(t.grad, r.grad)


def test_every_table_entry_is_tested():
    from op_cases.numpy_spellings import CASES as CASES_MORE  # the differentiable NumPy spellings
    from op_cases.numpy_spellings import NOT_DIFFERENTIABLE

    from minigrad import numpy_api

    tested = {c[0] for c in CASES + CASES_MORE} | set(NOT_DIFFERENTIABLE)
    table = (set(numpy_api.UFUNCS) | {("reduce", u) for u in numpy_api.REDUCTIONS}
             | set(numpy_api.FUNCTIONS))
    assert table - tested == set(), f"table entries without a case: {table - tested}"
    assert {k for k in tested if not isinstance(k, tuple)} - table == set()
    # outer is derived from every binary ufunc of the table; two are in CASES, the rest here
    for ufunc in numpy_api.UFUNCS:
        if ufunc.nin == 2 and ufunc is not np.matmul:
            a, b = rn(3), pos(2)
            if ufunc is np.power:
                a = pos(3)
            out = ufunc.outer(mg.Tensor(a, requires_grad=True), b)
            assert isinstance(out, mg.Tensor) and out.requires_grad
            _close(out.data, ufunc.outer(a, b))


@pytest.mark.parametrize("ufunc, sym", [(np.less, "<"), (np.less_equal, "<="),
                                        (np.greater, ">"), (np.greater_equal, ">="),
                                        (np.equal, "=="), (np.not_equal, "!=")])
def test_comparison_ufuncs_give_bool_tensors_like_the_operators(ufunc, sym):
    a, b = rn(3, 4), rn(4)
    b[1] = a[0, 1]  # one tie
    t = mg.Tensor(a, requires_grad=True)
    for got in (ufunc(t, b), ufunc(a, mg.Tensor(b)), eval(f"b {sym} t"),
                eval(f"np.float32(0.5) {sym} t")):
        assert isinstance(got, mg.Tensor) and not got.requires_grad
        assert got.dtype == np.bool_
    np.testing.assert_array_equal(ufunc(t, b).data, ufunc(a, b))
    np.testing.assert_array_equal(eval(f"b {sym} t").data, eval(f"b {sym} a"))


def test_shape_ndim_size_read_the_metadata():
    t = mg.Tensor(rn(2, 3), requires_grad=True)
    assert np.shape(t) == (2, 3) and np.ndim(t) == 2 and np.size(t) == 6
    assert np.size(t, 1) == 3


def test_plain_numpy_code_is_differentiable_gradcheck_float64():
    x, y, w = rn(3, 4), rn(3, 4), rn(4, 2)

    def f1(x):
        return np.exp(np.sum(x * 2, axis=0))

    def f2(x, y):
        return np.concatenate([np.tanh(x), np.maximum(x, y), np.abs(y)], axis=1)

    def f3(x, w):
        h = np.matmul(np.reshape(x, (3, 4)), w)
        return np.add.reduce(np.square(h), axis=1) + np.var(np.transpose(h), axis=0, ddof=1)

    def f4(x, y):
        return np.mean(np.where(x > 0, np.sqrt(np.clip(y * y, 0.1, 2.0)), np.stack([x, y])[1]))

    for fn, inputs in ((f1, [x]), (f2, [x, y]), (f3, [x, w]), (f4, [x, y])):
        report = mg.gradcheck(fn, [a.copy() for a in inputs], atol=1e-7, rtol=1e-6)
        assert report.ok and len(report.inputs) == len(inputs)


def test_ndarray_and_tensor_mixed_records_the_tensor_gradient():
    a, b = rn(2, 3), rn(2, 3)
    t = mg.Tensor(b, requires_grad=True)
    out = np.multiply(a, t)
    g = rn(2, 3)
    out.backward(g)
    np.testing.assert_array_equal(t.grad, g * a)  # d(a t)/dt = a


@pytest.mark.parametrize("sym", ["+", "-", "*", "/", "**", "@"])
def test_ndarray_op_tensor_still_records_like_the_reflected_operator(sym):
    a, b = pos(3, 3), pos(3, 3)
    t, r = mg.Tensor(b, requires_grad=True), mg.Tensor(b, requires_grad=True)
    out = eval(f"a {sym} t")
    ref = {"+": F.add, "-": F.sub, "*": F.mul, "/": F.div, "**": F.pow, "@": F.matmul}[sym](a, r)
    assert isinstance(out, mg.Tensor) and out.op == ref.op
    _close(out.data, eval(f"a {sym} b"))
    g = rn(3, 3)
    out.backward(g)
    ref.backward(g)
    np.testing.assert_array_equal(t.grad, r.grad)


def test_numpy_scalars_and_python_numbers_stay_weakly_typed():
    t = mg.Tensor(rn(3, dtype=np.float32), requires_grad=True)
    for out in (np.multiply(np.float64(0.5), t), np.float64(0.5) * t, np.add(t, 2.0),
                np.power(t, 2), np.maximum(t, np.float64(0.0)), np.sum(t * np.float64(3))):
        assert out.dtype == np.float32, out


def test_ndarray_inplace_with_a_tensor_refuses_and_leaves_the_array_alone():
    a = rn(3)
    before = a.copy()
    t = mg.Tensor(rn(3), requires_grad=True)
    with pytest.raises(TypeError, match=r"np\.add.*out="):
        a += t
    np.testing.assert_array_equal(a, before)
    with pytest.raises(TypeError, match=r"np\.floor_divide is not differentiable"):
        a // t


# ---- arguments NumPy's spellings take: dtype=, a clip bound that requires grad ------------
@pytest.mark.parametrize("fn", [np.sum, np.mean, np.var, np.add.reduce])
def test_reduction_dtype_is_honoured(fn):
    x = rn(3, 4, dtype=np.float32)
    t = mg.Tensor(x, requires_grad=True)
    out = fn(t, axis=0, dtype=np.float64)
    _close(out.data, fn(x, axis=0, dtype=np.float64))
    out.backward(np.ones(4))
    assert t.grad.dtype == np.float32  # the gradient comes back in the input's dtype


def test_clip_bound_that_requires_grad_gets_the_gradient_F_clip_gives():
    x = np.array([-2.0, 0.25, 3.0])
    grads = []
    for clip in (lambda t, lo, hi: np.clip(t, lo, hi), F.clip):
        t, lo, hi = (mg.Tensor(a, requires_grad=True) for a in (x, np.zeros(3), np.ones(3)))
        (clip(t, lo, hi) * np.array([1.0, 2.0, 3.0])).sum().backward()
        grads.append((t.grad, lo.grad, hi.grad))
    for ours, theirs in zip(*grads, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(grads[0][1], [1.0, 0.0, 0.0])  # below a_min: to a_min
