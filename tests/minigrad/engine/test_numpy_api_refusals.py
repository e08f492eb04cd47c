"""What minigrad.numpy_api refuses, naming the function: ``out=``, ``where=``, ``initial=`` and
a ufunc's ``dtype=``, the ufunc methods it does not support, and every NumPy callable that has
no op (a TypeError naming it, as the README quotes). No Tensor ever becomes an object array,
and one that requires grad never becomes an array at all (as in PyTorch); one without grad
converts to its data, and another array type is left to answer for itself."""
from __future__ import annotations

import re
from functools import partial

import helpers
import numpy as np
import pytest
from helpers import numpy_since_2

import minigrad as mg

RNG = np.random.default_rng(1312)
rn = partial(helpers.rn, RNG)
pos = partial(helpers.uniform, RNG, 0.5, 2.0)


# ---- arguments: out=, where=, dtype=, ufunc methods --------------------------------------
@pytest.mark.parametrize("call", [
    lambda t: np.sum(t, out=np.empty(())),
    lambda t: np.mean(t, axis=0, out=np.empty(3)),
    lambda t: np.max(t, out=np.empty(())),
    lambda t: np.exp(t, out=np.empty((2, 3))),
    lambda t: np.add(t, 1.0, out=mg.Tensor(np.empty((2, 3)))),
    lambda t: np.add.reduce(t, out=np.empty(3)),
    lambda t: np.concatenate([t, t], out=np.empty((4, 3))),
    lambda t: np.clip(t, 0, 1, out=np.empty((2, 3))),
], ids=["sum", "mean", "max", "exp", "add-into-Tensor", "add.reduce", "concatenate", "clip"])
def test_out_pointing_at_an_array_is_refused(call):
    with pytest.raises(TypeError, match=r"out="):
        call(mg.Tensor(rn(2, 3), requires_grad=True))


@pytest.mark.parametrize("call, name", [
    (lambda t, m: np.sum(t, where=m), "np.sum"),
    (lambda t, m: np.mean(t, where=m), "np.mean"),
    (lambda t, m: np.max(t, where=m, initial=0.0), "np.max"),
    (lambda t, m: np.exp(t, where=m), "np.exp"),
    (lambda t, m: np.add.reduce(t, where=m), "np.add.reduce"),
])
def test_where_is_refused_naming_the_function(call, name):
    t = mg.Tensor(rn(2, 3), requires_grad=True)
    with pytest.raises(TypeError, match=re.escape(name) + r".*where="):
        call(t, np.ones((2, 3), bool))


def test_initial_and_ufunc_dtype_are_refused():
    t = mg.Tensor(rn(2, 3), requires_grad=True)
    with pytest.raises(TypeError, match=r"np\.sum.*initial="):
        np.sum(t, initial=1.0)
    with pytest.raises(TypeError, match=r"np\.exp.*dtype="):
        np.exp(t, dtype=np.float32)
    with pytest.raises(TypeError, match=r"np\.reshape.*order="):
        np.reshape(t, (3, 2), order="F")


@pytest.mark.parametrize("call, name", [
    (lambda t: np.add.accumulate(t), "np.add.accumulate"),
    (lambda t: np.add.at(t, [0], 1.0), "np.add.at"),
    (lambda t: np.add.reduceat(t, [0, 1]), "np.add.reduceat"),
    (lambda t: np.multiply.reduce(t), "np.multiply.reduce"),
    (lambda t: np.subtract.reduce(t), "np.subtract.reduce"),
    (lambda t: np.sin.at(t, [0]), "np.sin.at"),
])
def test_unsupported_ufunc_methods_are_refused_naming_the_method(call, name):
    with pytest.raises(TypeError, match=re.escape(name)):
        call(mg.Tensor(rn(3), requires_grad=True))


# ---- everything else is refused, naming the function -------------------------------------
REFUSED = [
    ("np.sort", lambda t: np.sort(t)), ("np.argsort", lambda t: np.argsort(t)),
    ("np.linalg.inv", lambda t: np.linalg.inv(t)),
    ("np.linalg.det", lambda t: np.linalg.det(t)),
    ("np.linalg.svd", lambda t: np.linalg.svd(t)), ("np.fft.fft", lambda t: np.fft.fft(t)),
    ("np.histogram", lambda t: np.histogram(t)), ("np.unique", lambda t: np.unique(t)),
    ("np.dot", lambda t: np.dot(t, t)), ("np.diff", lambda t: np.diff(t)),
    ("np.diag", lambda t: np.diag(t)), ("np.copy", lambda t: np.copy(t)),
    ("np.put_along_axis", lambda t: np.put_along_axis(t, np.zeros((1, 3), int), 1.0, 0)),
    ("np.rot90", lambda t: np.rot90(t)),
    ("np.zeros_like", lambda t: np.zeros_like(t)), ("np.allclose", lambda t: np.allclose(t, t)),
    ("np.nonzero", lambda t: np.nonzero(t)), ("np.vstack", lambda t: np.vstack([t, t])),
    ("np.hstack", lambda t: np.hstack([t, t])), ("np.atleast_3d", lambda t: np.atleast_3d(t)),
    ("np.average", lambda t: np.average(t)), ("np.fmax", lambda t: np.fmax(t, t)),
    ("np.float_power", lambda t: np.float_power(t, 2)), ("np.isnan", lambda t: np.isnan(t)),
    ("np.isfinite", lambda t: np.isfinite(t)), ("np.where", lambda t: np.where(t)),
    *[(f"np.{name}", lambda t, name=name: numpy_since_2(name)(t))  # NumPy >= 2.0 only
      for name in ("linalg.vector_norm", "linalg.matrix_norm") if numpy_since_2(name)],
    # np.cumsum, np.std, np.einsum, np.sin, ... are differentiable ops
    # (test_numpy_api_spellings.py); np.flip, np.roll, np.tile, np.repeat, np.pad, np.trace,
    # np.tril, np.moveaxis, np.take_along_axis, ... since session 11 (test_numpy_api.py's CASES)
]


@pytest.mark.parametrize("name, call", REFUSED, ids=[r[0] for r in REFUSED])
def test_other_numpy_functions_refuse_naming_themselves(name, call):
    t = mg.Tensor(pos(3, 3), requires_grad=True)
    with pytest.raises(TypeError, match=re.escape(name) + r"\b") as info:
        call(t)
    message = str(info.value)
    assert "t.data" in message, message
    assert "object" not in message


def test_the_refusal_quoted_in_the_readme():
    with pytest.raises(TypeError) as info:
        np.sort(mg.Tensor(rn(3), requires_grad=True))
    assert str(info.value) == ("np.sort is not differentiable in minigrad: it has no op for "
                               "it; use np.sort(t.data) for a constant array, or write an op "
                               "with mg.op")


def test_refused_functions_are_not_in_the_table():
    from minigrad import numpy_api

    names = {f"np.{f.__name__}" for f in (set(numpy_api.UFUNCS) | set(numpy_api.FUNCTIONS))}
    assert names.isdisjoint({r[0] for r in REFUSED if r[0] != "np.where"})


# ---- conversion to an ndarray ------------------------------------------------------------
@pytest.mark.parametrize("convert", [
    lambda t: np.asarray(t), lambda t: np.array(t), lambda t: np.array([t, t]),
    lambda t: np.asarray([[t]]), lambda t: np.asanyarray(t), lambda t: np.ascontiguousarray(t),
    lambda t: np.array(t, dtype=object),
], ids=["asarray", "array", "list", "nested", "asanyarray", "ascontiguousarray", "object"])
def test_a_tensor_that_requires_grad_does_not_become_an_array(convert):
    t = mg.Tensor(rn(3), requires_grad=True)
    with pytest.raises(TypeError, match=r"requires grad.*\.data") as info:
        convert(t)
    assert isinstance(info.value, RuntimeError)  # as torch's "Can't call numpy() on Tensor..."
    y = t * 2.0  # a result of the graph requires grad too
    with pytest.raises(TypeError, match=r"requires grad"):
        convert(y)


def test_ndarray_setitem_of_a_tensor_that_requires_grad_refuses():
    a = np.zeros(3)
    with pytest.raises(TypeError, match=r"requires grad"):
        a[:] = mg.Tensor(rn(3), requires_grad=True)
    np.testing.assert_array_equal(a, np.zeros(3))
    b = rn(3)
    a[:] = mg.Tensor(b)
    np.testing.assert_array_equal(a, b)


def test_a_tensor_without_grad_converts_to_its_data_never_to_objects():
    x = rn(2, 3)
    t = mg.Tensor(x)
    a = np.asarray(t)
    assert a.dtype == np.float64 and np.shares_memory(a, t.data)  # as t.numpy()
    c = np.array(t)
    assert not np.shares_memory(c, t.data)
    np.testing.assert_array_equal(c, x)
    s = np.array([t, t])
    assert s.dtype == np.float64 and s.shape == (2, 2, 3)
    np.testing.assert_array_equal(s, np.stack([x, x]))
    zero_d = np.array([mg.Tensor(np.float32(1.5)), mg.Tensor(np.float32(2.5))])
    assert zero_d.dtype == np.float32 and zero_d.tolist() == [1.5, 2.5]
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="copy"):
        np.asarray(t, dtype=np.float32, copy=False)
    with mg.no_grad():
        y = mg.Tensor(x, requires_grad=True) * 2.0
    np.testing.assert_array_equal(np.asarray(y), x * 2.0)
    np.testing.assert_array_equal(np.asarray(mg.Tensor(x, requires_grad=True).detach()), x)


def test_another_array_type_is_left_to_answer_for_itself():
    class Other:  # a third-party array type with its own protocols
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return "other ufunc"

        def __array_function__(self, func, types, args, kwargs):
            return "other function"

    t = mg.Tensor(rn(3), requires_grad=True)
    assert np.add(t, Other()) == "other ufunc"  # Tensor's method returned NotImplemented
    assert np.concatenate([t, Other()]) == "other function"
