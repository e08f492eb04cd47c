"""The bool-input and 0-d catalogs of test_small_fixes.py and test_zero_d.py, for the ops of
ops-a (issue 14), kept in a file of their own so that the two shared tables need not be
edited at the same time by several helpers. Same checks as there: a bool input works or
fails with a message naming the op; a 0-d result holds an ndarray and 0-d leaves get 0-d
ndarray gradients of their dtype."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

#: The differentiable ops ops-a added for issue 14 (test_ops_torch_more.py imports this too).
OPS_A = (
    "einsum", "tensordot", "outer", "inner", "std", "prod", "norm", "cumsum", "cumprod",
    "logcumsumexp", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
    "arcsinh", "arctanh", "log1p", "expm1", "log2", "log10", "exp2", "square", "reciprocal",
    "rsqrt", "arctan2", "hypot", "logaddexp", "sign", "floor", "ceil", "round", "trunc", "mod",
)
MASK = np.array([[True, False, True], [False, False, True]])
UNARY = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
         "arctanh", "log1p", "expm1", "log2", "log10", "exp2", "square", "reciprocal", "rsqrt",
         "sign", "floor", "ceil", "round", "trunc")
BINARY = ("arctan2", "hypot", "logaddexp", "mod")


def _bool_catalog():
    b = mg.Tensor(MASK)
    table = {name: (lambda f=getattr(F, name): f(b)) for name in UNARY}
    table.update({name: (lambda f=getattr(F, name): f(b, b)) for name in BINARY})
    table.update({
        "einsum": lambda: F.einsum("ij,kj->ik", b, b),
        "tensordot": lambda: F.tensordot(b, b, ([1], [1])), "outer": lambda: F.outer(b, b),
        "inner": lambda: F.inner(b, b), "std": lambda: F.std(b), "prod": lambda: F.prod(b),
        "norm": lambda: F.norm(b), "cumsum": lambda: F.cumsum(b, axis=1),
        "cumprod": lambda: F.cumprod(b), "logcumsumexp": lambda: F.logcumsumexp(b),
    })
    return table


def test_the_ops_of_ops_a_are_public():
    assert set(OPS_A) <= set(mg.ops.PUBLIC_OPS)


def test_the_bool_catalog_covers_every_op_of_ops_a():
    assert set(_bool_catalog()) == set(OPS_A)


@pytest.mark.parametrize("name", sorted(OPS_A))
def test_every_op_on_bool_input_works_or_gives_our_message(name):
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = _bool_catalog()[name]()
    except (TypeError, ValueError) as e:  # ours names the op (or its argument) first
        assert str(e).startswith(name), f"{name}: NumPy's message? {e}"
        return
    assert isinstance(out, mg.Tensor) and type(out.data) is np.ndarray


def test_sign_of_a_mask_is_refused_with_our_message():
    with pytest.raises(TypeError, match=r"^sign a: got a bool operand.*astype"):
        F.sign(mg.Tensor(MASK))


def _zero_d_catalog():
    v = mg.Tensor(np.arange(1.0, 4.0))
    table = {name: [lambda a, b, f=getattr(F, name): f(a)] for name in UNARY}
    table.update({name: [getattr(F, name)] for name in BINARY})
    table.update({
        "einsum": [lambda a, b: F.einsum(",->", a, b), lambda a, b: F.einsum("i,i", v * a, v)],
        "tensordot": [lambda a, b: F.tensordot(a, b, 0), lambda a, b: F.tensordot(v * a, v, 1)],
        "outer": [lambda a, b: F.outer(a, b)[0, 0]],
        "inner": [F.inner, lambda a, b: F.inner(v * a, v)],
        "std": [lambda a, b: F.std(a), lambda a, b: F.std(v * a, ddof=1)],
        "prod": [lambda a, b: F.prod(a), lambda a, b: F.prod(v * a)],
        "norm": [lambda a, b: F.norm(a), lambda a, b: F.norm(v * a, 3)],
        "cumsum": [lambda a, b: F.cumsum(a)[0], lambda a, b: F.cumsum(v * a)[2]],
        "cumprod": [lambda a, b: F.cumprod(a)[0], lambda a, b: F.cumprod(v * a)[2]],
        "logcumsumexp": [lambda a, b: F.logcumsumexp(a)[0],
                         lambda a, b: F.logcumsumexp(v * a)[2]],
    })
    return table


def test_the_zero_d_catalog_covers_every_op_of_ops_a():
    assert set(_zero_d_catalog()) == set(OPS_A)


@pytest.mark.parametrize("name", sorted(OPS_A))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_op_with_a_0d_result_holds_an_ndarray_and_0d_leaves_get_ndarray_grads(name, dtype):
    for fn in _zero_d_catalog()[name]:
        a = mg.Tensor(np.array(0.75, dtype), requires_grad=True)
        b = mg.Tensor(np.array(1.5, dtype), requires_grad=True)
        out = fn(a, b)
        assert isinstance(out, mg.Tensor) and type(out.data) is np.ndarray, name
        assert out.shape == ()
        assert out.requires_grad, name
        out.backward()
        for t in (a, b):
            assert t.grad is None or (type(t.grad) is np.ndarray and t.grad.shape == ()
                                      and t.grad.dtype == dtype), name
        assert a.grad is not None, name
