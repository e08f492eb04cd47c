"""NumPy's spellings of the ops-a ops on Tensors (minigrad/numpy_api.py): each records the
op F gives, with the same gradient. ``CASES_MORE`` has the format of test_numpy_api.py's
``CASES`` (key, id, numpy spelling, the op it must record like, input makers), so that the
table check there can take it in (see ``test_every_new_table_entry_is_tested``)."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, numpy_api

RNG = np.random.default_rng(1407)


def rn(*shape):
    return RNG.standard_normal(shape)


def uni(lo, hi, *shape):
    return RNG.uniform(lo, hi, shape)


def _unary(ufunc, op, make=rn):
    return (ufunc, op.__name__, lambda a: ufunc(a), op, [make(3, 2)])


_IN = lambda *s: uni(-0.9, 0.9, *s)  # noqa: E731  (inside arcsin's and arctanh's domain)
_POS = lambda *s: uni(0.3, 3.0, *s)  # noqa: E731
CASES_MORE = [
    _unary(np.sin, F.sin), _unary(np.cos, F.cos), _unary(np.tan, F.tan),
    _unary(np.arcsin, F.arcsin, _IN), _unary(np.arccos, F.arccos, _IN),
    _unary(np.arctan, F.arctan), _unary(np.sinh, F.sinh), _unary(np.cosh, F.cosh),
    _unary(np.arcsinh, F.arcsinh), _unary(np.arctanh, F.arctanh, _IN),
    _unary(np.log1p, F.log1p, _POS), _unary(np.expm1, F.expm1), _unary(np.log2, F.log2, _POS),
    _unary(np.log10, F.log10, _POS), _unary(np.exp2, F.exp2),
    _unary(np.reciprocal, F.reciprocal, _POS), _unary(np.sign, F.sign),
    _unary(np.floor, F.floor), _unary(np.ceil, F.ceil), _unary(np.trunc, F.trunc),
    (np.arctan2, "arctan2", lambda a, b: np.arctan2(a, b), F.arctan2, [rn(3, 4), rn(4)]),
    (np.hypot, "hypot", lambda a, b: np.hypot(a, b), F.hypot, [rn(3, 1), rn(4)]),
    (np.logaddexp, "logaddexp", lambda a, b: np.logaddexp(a, b), F.logaddexp,
     [rn(3, 4), rn(3, 4)]),
    (np.remainder, "mod", lambda a, b: np.mod(a, b), F.mod, [3 * rn(3, 4), _POS(4)]),
    (np.einsum, "einsum", lambda a, b: np.einsum("ij,jk->ik", a, b),
     lambda a, b: F.einsum("ij,jk->ik", a, b), [rn(2, 3), rn(3, 4)]),
    (np.tensordot, "tensordot", lambda a, b: np.tensordot(a, b, axes=([0], [1])),
     lambda a, b: F.tensordot(a, b, ([0], [1])), [rn(2, 3), rn(4, 2)]),
    (np.outer, "outer", lambda a, b: np.outer(a, b), F.outer, [rn(3), rn(2, 2)]),
    (np.inner, "inner", lambda a, b: np.inner(a, b), F.inner, [rn(2, 3), rn(4, 3)]),
    (np.std, "std", lambda a: np.std(a, axis=0, ddof=1), lambda a: F.std(a, axis=0, ddof=1),
     [rn(4, 3)]),
    (np.prod, "prod", lambda a: np.prod(a, axis=1, keepdims=True),
     lambda a: F.prod(a, axis=1, keepdims=True), [rn(3, 4)]),
    (np.linalg.norm, "norm", lambda a: np.linalg.norm(a, 3, axis=1),
     lambda a: F.norm(a, 3, axis=1), [rn(3, 4)]),
    (np.round, "round", lambda a: np.round(a, 1), lambda a: F.round(a, 1), [rn(3, 4)]),
    (np.cumsum, "cumsum", lambda a: np.cumsum(a, axis=1), lambda a: F.cumsum(a, 1), [rn(3, 4)]),
    (np.cumprod, "cumprod", lambda a: np.cumprod(a), F.cumprod, [rn(3, 4)]),
]
NOT_DIFFERENTIABLE = [np.argmax, np.argmin, np.any, np.all]  # they answer with arrays


def _tensors(arrays):
    return [mg.Tensor(x.copy(), requires_grad=True) for x in arrays]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("key, label, spelled, op, arrays", CASES_MORE,
                         ids=[c[1] for c in CASES_MORE])
def test_numpy_spelling_records_the_op(key, label, spelled, op, arrays, dtype):
    arrays = [x.astype(dtype) for x in arrays]
    want = spelled(*arrays)
    ts = _tensors(arrays)
    out = spelled(*ts)
    assert isinstance(out, mg.Tensor), type(out)
    assert out.dtype == np.asarray(want).dtype
    np.testing.assert_allclose(out.data, want, rtol=4 * np.finfo(dtype).eps, atol=0)
    refs = _tensors(arrays)
    ref = op(*refs)
    assert out.op == ref.op
    g = RNG.standard_normal(out.shape).astype(dtype)
    out.backward(g)
    ref.backward(g)
    for t, r in zip(ts, refs):
        np.testing.assert_array_equal(t.grad, r.grad)


@pytest.mark.parametrize("func", NOT_DIFFERENTIABLE, ids=lambda f: f.__name__)
def test_argmax_and_friends_answer_with_arrays(func):
    x = rn(3, 4)
    t = mg.Tensor(x, requires_grad=True)
    for kw in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}):
        got = func(t > 0.0 if func in (np.any, np.all) else t, **kw)
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, func(x > 0.0 if func in (np.any, np.all) else x,
                                                **kw))


def test_every_new_table_entry_is_tested():
    """The numpy_api entries this helper added each have a case here (the older ones are
    test_numpy_api.py's)."""
    added = {c[0] for c in CASES_MORE} | set(NOT_DIFFERENTIABLE)
    for key in added:
        assert key in numpy_api.UFUNCS or key in numpy_api.FUNCTIONS, key


def test_options_numpy_has_and_minigrad_does_not_are_refused():
    t = mg.Tensor(rn(3, 4), requires_grad=True)
    with pytest.raises(TypeError, match="np.cumsum.*out="):
        np.cumsum(t, out=np.empty(12))
    with pytest.raises(TypeError, match="np.prod: initial="):
        np.prod(t, initial=2.0)
    with pytest.raises(TypeError, match="np.einsum: dtype="):
        np.einsum("ij->i", t, dtype=np.float32)
    with pytest.raises(ValueError, match="np.std: got ddof=1 and correction=1"):
        np.std(t, ddof=1, correction=1)
    np.testing.assert_allclose(np.std(t, correction=1).data, np.std(t.data, ddof=1))
