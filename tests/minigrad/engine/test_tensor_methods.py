"""Tensor's NumPy-named methods (minigrad/methods.py): each gives NumPy's value with
NumPy's signature, and records the op of the same name (so its gradient is that op's, which
tests/minigrad/op_cases/ checks against finite differences)."""
import numpy as np
import pytest
import scipy.special as sp

import minigrad as mg

RNG = np.random.default_rng(7)
X = RNG.uniform(0.2, 0.9, (3, 4))  # inside every function's domain (arcsin, arctanh, log)

# method name, its arguments, the NumPy reference on the array
CASES = [
    ("sum", (1,), lambda a: a.sum(1)), ("mean", (), lambda a: a.mean()),
    ("prod", (0,), lambda a: a.prod(0)), ("std", (1,), lambda a: a.std(1)),
    ("var", (), lambda a: a.var()), ("norm", (), lambda a: np.linalg.norm(a)),
    ("cumsum", (1,), lambda a: a.cumsum(1)), ("cumprod", (0,), lambda a: a.cumprod(0)),
    ("logcumsumexp", (1,), lambda a: np.logaddexp.accumulate(a, axis=1)),
    ("sin", (), np.sin), ("cos", (), np.cos), ("tan", (), np.tan), ("arcsin", (), np.arcsin),
    ("arccos", (), np.arccos), ("arctan", (), np.arctan), ("sinh", (), np.sinh),
    ("cosh", (), np.cosh), ("arcsinh", (), np.arcsinh), ("arctanh", (), np.arctanh),
    ("log1p", (), np.log1p), ("expm1", (), np.expm1), ("log2", (), np.log2),
    ("log10", (), np.log10), ("exp2", (), np.exp2), ("square", (), np.square),
    ("reciprocal", (), np.reciprocal), ("rsqrt", (), lambda a: 1 / np.sqrt(a)),
    ("sign", (), np.sign), ("floor", (), np.floor), ("ceil", (), np.ceil), ("trunc", (), np.trunc),
    ("round", (1,), lambda a: a.round(1)), ("sigmoid", (), sp.expit),
    ("repeat", (2, 1), lambda a: a.repeat(2, 1)), ("tile", ((2, 1),), lambda a: np.tile(a, (2, 1))),
    ("flip", (0,), lambda a: np.flip(a, 0)), ("roll", (1, 1), lambda a: np.roll(a, 1, 1)),
    ("tril", (), np.tril), ("triu", (1,), lambda a: np.triu(a, 1)),
    ("moveaxis", (0, 1), lambda a: np.moveaxis(a, 0, 1)), ("diagonal", (), lambda a: a.diagonal()),
    ("trace", (1,), lambda a: a.trace(1)),
    ("take_along_axis", (np.array([[0], [3], [1]]), 1),
     lambda a: np.take_along_axis(a, np.array([[0], [3], [1]]), 1)),
]


@pytest.mark.parametrize("name, args, ref", CASES, ids=[c[0] for c in CASES])
def test_method_gives_numpy_value_and_records_its_op(name, args, ref):
    t = mg.Tensor(X.copy(), requires_grad=True)
    out = getattr(t, name)(*args)
    np.testing.assert_allclose(out.data, ref(X), rtol=1e-13, atol=1e-15)
    assert out.op == name
    via_f = getattr(mg.F, name)(mg.Tensor(X.copy(), requires_grad=True), *args)
    np.testing.assert_array_equal(out.data, via_f.data)


@pytest.mark.parametrize("name", ["argmax", "argmin", "any", "all"])
def test_index_and_truth_reductions_return_arrays(name):
    t = mg.Tensor(X - 0.5, requires_grad=True)
    out = getattr(t, name)(1)
    assert isinstance(out, np.ndarray) and not isinstance(out, mg.Tensor)
    np.testing.assert_array_equal(out, getattr(X - 0.5, name)(1))
    assert getattr(t, name)(1, keepdims=True).shape == (3, 1)


def test_keepdims_and_ddof_are_keyword_only_as_documented():
    t = mg.Tensor(X)
    with pytest.raises(TypeError):
        t.std(0, 1)  # NumPy's second positional would be dtype
    assert t.std(0, ddof=1).shape == (4,)


def test_mod_operators_follow_numpy_and_record_mod():
    a, b = mg.Tensor(np.array([-3.5, 2.0, 7.25]), requires_grad=True), 2.0
    np.testing.assert_array_equal((a % b).data, np.mod(a.data, b))
    np.testing.assert_array_equal((5.0 % a).data, np.mod(5.0, a.data))
    assert (a % b).op == "mod"
    c = mg.Tensor(np.array([-3.5, 2.0, 7.25]))
    c %= 2.0
    np.testing.assert_array_equal(c.data, [0.5, 0.0, 1.25])
    (a % b).sum().backward()
    np.testing.assert_array_equal(a.grad, [1.0, 1.0, 1.0])
