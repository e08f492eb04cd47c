"""NumPy's spellings of the issue-14 ops on Tensors (minigrad/numpy_api.py): each records
the op F gives, with the same gradient. The table is op_cases/numpy_spellings.py (the
format of test_numpy_api.py's ``CASES``), which test_numpy_api.py's table check counts."""
from __future__ import annotations

from functools import partial

import helpers
import numpy as np
import pytest
from helpers import leaves
from op_cases.numpy_spellings import CASES as CASES_MORE
from op_cases.numpy_spellings import NOT_DIFFERENTIABLE

import minigrad as mg
from minigrad import numpy_api

RNG = np.random.default_rng(1408)  # cotangents and the inputs made here
rn = partial(helpers.rn, RNG)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("key, label, spelled, op, arrays", CASES_MORE,
                         ids=[c[1] for c in CASES_MORE])
def test_numpy_spelling_records_the_op(key, label, spelled, op, arrays, dtype):
    arrays = [x.astype(dtype) for x in arrays]
    want = spelled(*arrays)
    ts = leaves(arrays)
    out = spelled(*ts)
    assert isinstance(out, mg.Tensor), type(out)
    assert out.dtype == np.asarray(want).dtype
    np.testing.assert_allclose(out.data, want, rtol=4 * np.finfo(dtype).eps, atol=0)
    refs = leaves(arrays)
    ref = op(*refs)
    assert out.op == ref.op
    g = RNG.standard_normal(out.shape).astype(dtype)
    out.backward(g)
    ref.backward(g)
    for t, r in zip(ts, refs, strict=True):
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
