"""The Tensor class: construction, dtypes, operators (and their reflected forms), methods.

Expected values come from NumPy applied to the same arrays, or from derivatives worked out
by hand in the test; never from minigrad itself.
"""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import Linear, Parameter

RNG = np.random.default_rng(7)


def arr(*shape, dtype=np.float64):
    return RNG.uniform(0.5, 2.0, shape).astype(dtype)


# ---- construction and dtypes ------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_graph_keeps_dtype_and_grads_match_it(dtype):
    x = mg.Tensor(arr(4, 3, dtype=dtype), requires_grad=True)
    w = mg.Tensor(arr(3, 2, dtype=dtype), requires_grad=True)
    y = ((x @ w).tanh() * 0.5 + 1 - np.float64(0.25) * x.sum()) / 3.0
    z = (y ** 2).mean() + y.exp().max() + np.float64(2.0) * y.abs().sqrt().sum()
    for t in (y, z):
        assert t.dtype == dtype
    z.backward()
    assert x.grad.dtype == dtype and w.grad.dtype == dtype
    assert x.grad.shape == x.shape and w.grad.shape == w.shape


@pytest.mark.parametrize("data", [np.arange(3), np.array([True, False]), [1, 2]])
def test_only_floating_tensors_may_require_grad(data):
    with pytest.raises(TypeError, match="only floating"):
        mg.Tensor(data, requires_grad=True)
    with pytest.raises(TypeError, match="only floating"):
        mg.tensor(data, requires_grad=True)
    t = mg.Tensor(data)  # fine without grad
    assert not t.requires_grad
    with pytest.raises(TypeError, match="only floating"):
        t.requires_grad_()


@pytest.mark.parametrize("data", [np.array([1 + 2j]), np.array([object()]), "abc",
                                  np.array(["a", "b"]), [None, 1.0]])
def test_object_complex_string_data_rejected(data):
    with pytest.raises(TypeError, match="dtype"):
        mg.Tensor(data)
    with pytest.raises(TypeError, match="dtype"):
        mg.tensor(data)


def test_tensor_copies_and_Tensor_wraps():
    a = arr(3)
    copied, wrapped = mg.tensor(a), mg.Tensor(a)
    assert not np.shares_memory(copied.data, a)
    assert wrapped.data is a
    a[0] = 100.0
    assert copied.data[0] != 100.0 and wrapped.data[0] == 100.0
    assert mg.tensor(a, dtype=np.float32).dtype == np.float32
    assert mg.as_tensor(wrapped) is wrapped and mg.as_tensor(a).data is a


def test_scalar_conversions_len_item_numpy_detach():
    x = mg.tensor([[1.5, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    assert len(x) == 2 and x.shape == (2, 3) and x.ndim == 2 and x.size == 6
    s = x.sum()
    assert s.item() == 21.5 and type(s.item()) is float
    assert float(s) == 21.5 and int(mg.tensor(3.7)) == 3
    assert x.numpy() is x.data
    d = (x * 2).detach()
    assert not d.requires_grad and d.is_leaf and d.op is None
    xd = x.detach()
    assert xd.data is x.data and not xd.requires_grad and xd.grad is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        xd.sum().backward()


def test_repr_shows_shape_dtype_and_grad_flag():
    r = repr(mg.tensor(np.zeros((2, 3), np.float32), requires_grad=True))
    assert "shape=(2, 3)" in r and "float32" in r and "requires_grad=True" in r
    r = repr(mg.tensor([1, 2]))
    assert "shape=(2,)" in r and "int64" in r and "requires_grad" not in r
    y = mg.tensor([1.0], requires_grad=True) * 2
    assert "op=mul" in repr(y)


# ---- operators ---------------------------------------------------------------------------
BINARY = {
    "+": (lambda a, b: a + b), "-": (lambda a, b: a - b), "*": (lambda a, b: a * b),
    "/": (lambda a, b: a / b), "**": (lambda a, b: a ** b), "@": (lambda a, b: a @ b),
}


@pytest.mark.parametrize("sym,kind", [
    (s, k) for s in BINARY for k in ("tensor", "ndarray", "np-scalar", "py-scalar")
    if not (s == "@" and k.endswith("scalar"))])  # matmul takes no scalars
def test_binary_operators_and_reflected_forms(sym, kind):
    f = BINARY[sym]
    a, b = arr(3, 3), arr(3, 3)
    other = {"tensor": b, "ndarray": b, "np-scalar": np.float64(1.7), "py-scalar": 1.7}[kind]
    wrap = (lambda v: mg.Tensor(v)) if kind == "tensor" else (lambda v: v)
    fwd, refl = f(mg.Tensor(a), wrap(other)), f(wrap(other), mg.Tensor(a))
    for got, want in ((fwd, f(a, other)), (refl, f(other, a))):
        assert isinstance(got, mg.Tensor)
        np.testing.assert_allclose(got.data, want, rtol=1e-14)


def test_reflected_operator_gradients():
    x0 = arr(4)
    x = mg.Tensor(x0, requires_grad=True)
    cases = [  # (expression, its derivative worked out by hand)
        (lambda t: 2.0 - t, -np.ones(4)),
        (lambda t: 3.0 / t, -3.0 / x0 ** 2),
        (lambda t: 2.0 ** t, 2.0 ** x0 * np.log(2.0)),
        (lambda t: np.float64(5.0) * t, 5.0 * np.ones(4)),
        (lambda t: np.full(4, 0.5) + t, np.ones(4)),
        (lambda t: -t, -np.ones(4)),
        (lambda t: +t * 1.0, np.ones(4)),
        (lambda t: abs(-t), np.ones(4)),
        (lambda t: t ** 3, 3 * x0 ** 2),
    ]
    for expr, want in cases:
        x.grad = None
        expr(x).sum().backward()
        np.testing.assert_allclose(x.grad, want, rtol=1e-12)


def test_numpy_scalar_does_not_promote_float32():
    x = mg.tensor(arr(3), dtype=np.float32)
    for y in (x * np.float64(0.5), np.float64(0.5) * x, x + np.float64(1), x / np.float64(3),
              np.float64(1) - x, x ** np.float64(2), 0.5 * x):
        assert isinstance(y, mg.Tensor) and y.dtype == np.float32
    # an ndarray operand promotes as NumPy does
    assert (x * np.ones(3)).dtype == np.float64


def test_matmul_with_ndarray_and_gradients():
    a0, b0 = arr(2, 3), arr(3, 4)
    b = mg.Tensor(b0, requires_grad=True)
    y = a0 @ b
    assert isinstance(y, mg.Tensor) and y.shape == (2, 4)
    y.sum().backward()
    np.testing.assert_allclose(b.grad, a0.sum(0)[:, None] * np.ones((1, 4)), rtol=1e-13)


def test_indexing_values_and_gradient():
    x0 = arr(3, 4)
    x = mg.Tensor(x0, requires_grad=True)
    np.testing.assert_array_equal(x[1].data, x0[1])
    np.testing.assert_array_equal(x[:, 1:3].data, x0[:, 1:3])
    np.testing.assert_array_equal(x[x0 > 1].data, x0[x0 > 1])
    idx = mg.tensor([0, 2, 0])
    (x[1:, 0].sum() + x[idx, 3].sum()).backward()
    want = np.zeros((3, 4))
    want[1:, 0] = 1
    want[0, 3], want[2, 3] = 2, 1  # row 0 picked twice
    np.testing.assert_array_equal(x.grad, want)


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
def test_comparisons_give_bool_tensors_without_grad(op):
    f = eval(f"lambda a, b: a {op} b")
    a0, b0 = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])
    a = mg.Tensor(a0, requires_grad=True)
    for got, want in ((f(a, b0), f(a0, b0)), (f(a, mg.Tensor(b0)), f(a0, b0)),
                      (f(b0, a), f(b0, a0)), (f(a, 2.0), f(a0, 2.0)),
                      (f(np.float64(2.0), a), f(2.0, a0))):
        assert isinstance(got, mg.Tensor)
        assert got.dtype == bool and not got.requires_grad and got.is_leaf
        np.testing.assert_array_equal(got.data, want)


def test_T_and_hash_by_identity():
    x0 = arr(2, 3, 4)
    x = mg.Tensor(x0, requires_grad=True)
    np.testing.assert_array_equal(x.T.data, x0.T)
    assert len({x, x, mg.Tensor(x0)}) == 2


# ---- NumPy-named methods -----------------------------------------------------------------
METHODS = [
    ("sum()", lambda t: t.sum(), lambda a: a.sum()),
    ("sum(axis=1, keepdims=True)", lambda t: t.sum(axis=1, keepdims=True),
     lambda a: a.sum(axis=1, keepdims=True)),
    ("sum(axis=(0, 2))", lambda t: t.sum(axis=(0, 2)), lambda a: a.sum(axis=(0, 2))),
    ("sum(-1)", lambda t: t.sum(-1), lambda a: a.sum(-1)),
    ("mean(axis=0)", lambda t: t.mean(axis=0), lambda a: a.mean(axis=0)),
    ("max(axis=-1)", lambda t: t.max(axis=-1), lambda a: a.max(axis=-1)),
    ("min(keepdims=True)", lambda t: t.min(keepdims=True), lambda a: a.min(keepdims=True)),
    ("max()", lambda t: t.max(), lambda a: a.max()),
    ("var()", lambda t: t.var(), lambda a: a.var()),
    ("var(axis=1, ddof=1)", lambda t: t.var(axis=1, ddof=1), lambda a: a.var(axis=1, ddof=1)),
    ("reshape(6, 4)", lambda t: t.reshape(6, 4), lambda a: a.reshape(6, 4)),
    ("reshape((4, -1))", lambda t: t.reshape((4, -1)), lambda a: a.reshape((4, -1))),
    ("reshape(-1)", lambda t: t.reshape(-1), lambda a: a.reshape(-1)),
    ("flatten()", lambda t: t.flatten(), lambda a: a.flatten()),
    ("transpose()", lambda t: t.transpose(), lambda a: a.transpose()),
    ("transpose(1, 0, 2)", lambda t: t.transpose(1, 0, 2), lambda a: a.transpose(1, 0, 2)),
    ("transpose((2, 0, 1))", lambda t: t.transpose((2, 0, 1)), lambda a: a.transpose((2, 0, 1))),
    ("permute(2, 1, 0)", lambda t: t.permute(2, 1, 0), lambda a: a.transpose(2, 1, 0)),
    ("swapaxes(0, 2)", lambda t: t.swapaxes(0, 2), lambda a: a.swapaxes(0, 2)),
    ("squeeze()", lambda t: t[:, :1].squeeze(), lambda a: a[:, :1].squeeze()),
    ("squeeze(1)", lambda t: t[:, :1].squeeze(1), lambda a: a[:, :1].squeeze(1)),
    ("clip(0.8, 1.5)", lambda t: t.clip(0.8, 1.5), lambda a: a.clip(0.8, 1.5)),
    ("clip(min=1.0)", lambda t: t.clip(min=1.0), lambda a: a.clip(min=1.0)),
    ("clip(a_max=1.0)", lambda t: t.clip(a_max=1.0), lambda a: np.clip(a, None, 1.0)),
    ("astype(float32)", lambda t: t.astype(np.float32), lambda a: a.astype(np.float32)),
    ("exp()", lambda t: t.exp(), lambda a: np.exp(a)),
    ("log()", lambda t: t.log(), lambda a: np.log(a)),
    ("sqrt()", lambda t: t.sqrt(), lambda a: np.sqrt(a)),
    ("tanh()", lambda t: t.tanh(), lambda a: np.tanh(a)),
    ("abs()", lambda t: (t - 1.2).abs(), lambda a: np.abs(a - 1.2)),
]


@pytest.mark.parametrize("name,method,ref", METHODS, ids=[m[0] for m in METHODS])
def test_numpy_named_methods_match_numpy(name, method, ref):
    a0 = arr(2, 3, 4)
    x = mg.Tensor(a0.copy(), requires_grad=True)
    y = method(x)
    want = ref(a0)
    assert isinstance(y, mg.Tensor) and y.shape == want.shape and y.dtype == want.dtype
    np.testing.assert_allclose(y.data, want, rtol=1e-13)
    assert y.requires_grad
    y.sum().backward()  # every method is differentiable end to end
    assert x.grad.shape == x.shape
    np.testing.assert_array_equal(x.data, a0)


def test_method_gradients_against_hand_derivations():
    a0 = arr(3, 4)
    x = mg.Tensor(a0, requires_grad=True)
    x.mean().backward()
    np.testing.assert_allclose(x.grad, np.full((3, 4), 1 / 12))
    x.grad = None
    x.var(axis=1, ddof=1).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * (a0 - a0.mean(1, keepdims=True)) / 3, rtol=1e-12)
    x.grad = None
    x.reshape(4, 3).transpose().sum(axis=0).backward(np.arange(4.0))
    np.testing.assert_allclose(x.grad, np.repeat(np.arange(4.0), 3).reshape(3, 4))


def test_astype_to_integer_leaves_the_graph():
    x = mg.tensor([1.5, 2.5], requires_grad=True)
    i = x.astype(np.int64)
    assert i.dtype == np.int64 and not i.requires_grad
    np.testing.assert_array_equal(i.data, [1, 2])
    y = x.astype(np.float32)
    assert y.requires_grad
    (y * 2).sum().backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad, [2.0, 2.0])


# ---- deepcopy, copy and pickle --------------------------------------------------------------
def test_deepcopy_of_a_non_leaf_is_refused():
    t = mg.Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(t * 2)


def test_deepcopy_of_a_leaf_copies_data_grad_and_requires_grad():
    t = mg.Tensor(np.arange(3.0), requires_grad=True)
    t.grad = np.ones(3)
    c = copy.deepcopy(t)
    assert c is not t and c.requires_grad and c.is_leaf and c.version == 0
    np.testing.assert_array_equal(c.data, t.data)
    np.testing.assert_array_equal(c.grad, t.grad)
    assert not np.shares_memory(c.data, t.data) and not np.shares_memory(c.grad, t.grad)
    (c * c).sum().backward()
    np.testing.assert_array_equal(t.grad, np.ones(3))  # the original is not touched


def test_deepcopy_of_a_module_still_works():
    m = Linear(2, 3, rng=0)
    c = copy.deepcopy(m)
    assert c.weight is not m.weight and type(c.weight) is Parameter
    assert type(pickle.loads(pickle.dumps(m.weight))) is Parameter
    np.testing.assert_array_equal(c.weight.data, m.weight.data)
    assert not np.shares_memory(c.weight.data, m.weight.data)


def test_pickle_of_a_non_leaf_is_refused_in_our_words():
    t = mg.Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(TypeError, match=r"non-leaf.*detach\(\)"):
        pickle.dumps(t * 2)


def test_pickle_of_a_leaf_keeps_data_and_requires_grad_not_grad():
    t = mg.Tensor(np.arange(3, dtype=np.float32), requires_grad=True)
    t.grad = np.ones(3, np.float32)
    u = pickle.loads(pickle.dumps(t))
    assert isinstance(u, mg.Tensor) and u.requires_grad and u.is_leaf and u.grad is None
    assert u.dtype == np.float32
    np.testing.assert_array_equal(u.data, t.data)
    v = pickle.loads(pickle.dumps(mg.Tensor(np.ones(2, np.int64))))
    assert not v.requires_grad and v.dtype == np.int64


def test_shallow_copy_shares_data_and_graph():
    t = mg.Tensor(np.ones(3), requires_grad=True)
    y = t * 2
    c = copy.copy(y)
    assert c.data is y.data and c.op == "mul"
    c.sum().backward()
    np.testing.assert_array_equal(t.grad, np.full(3, 2.0))


def test_shallow_copy_of_a_parameter_is_a_parameter_on_the_same_array():
    w = Parameter(np.ones(2))
    c = copy.copy(w)
    assert type(c) is Parameter and c.data is w.data
    c.bump_version()
    assert w.version == 1  # one counter: a write through the copy is a write to w
