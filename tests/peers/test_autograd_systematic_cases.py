"""HIPS autograd's systematic ``combo_check`` cases (HIPS/autograd: tests/test_systematic.py with
tests/numpy_utils.py's stat_check, unary_ufunc_check and binary_ufunc_check, and
tests/test_binary_ops.py) for the ops minigrad has: every combination of their argument shapes
(scalars, vectors, (3, 2) and (1, 2) matrices, broadcasting between them) and keyword values,
value against NumPy and gradient of every argument by ``mg.gradcheck`` in float64. Our own code.
"""
from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
from peer_util import assert_close, gradcheck_ok

import minigrad as mg
from minigrad import F

rng = np.random.default_rng(0)
R = rng.standard_normal
CASES: list = []


def case(label, mg_fn, np_fn, *arrays):
    CASES.append(pytest.param(mg_fn, np_fn, [np.asarray(a, float) for a in arrays], id=label))


def transform(lims, x):
    return np.asarray(x) * (lims[1] - lims[0]) + lims[0]


# ---- stat_check: max, mean, min, sum, var -----------------------------------------------------
SB, SC, SD = R(3), R((2, 3)), R((1, 3))
for name in ("max", "mean", "min", "sum", "var"):
    case(f"stat-{name}-0d", getattr(F, name), getattr(np, name), R(()))
    for (label, a), axis, kd in itertools.product([("B", SB), ("C", SC), ("D", SD)], [None, 0],
                                                  [True, False]):
        case(f"stat-{name}-{label}-axis={axis}-kd={kd}",
             lambda x, n=name, ax=axis, k=kd: getattr(F, n)(x, axis=ax, keepdims=k),
             lambda x, n=name, ax=axis, k=kd: getattr(np, n)(x, axis=ax, keepdims=k), a)
    for (label, a), axis, kd in itertools.product([("C", SC), ("D", SD)], [None, 0, 1], [True, False]):
        case(f"stat-{name}-{label}-axis={axis}-kd={kd}",
             lambda x, n=name, ax=axis, k=kd: getattr(F, n)(x, axis=ax, keepdims=k),
             lambda x, n=name, ax=axis, k=kd: getattr(np, n)(x, axis=ax, keepdims=k), a)


def _unary_inputs(lims):
    return [("int", transform(lims, 1)), ("scalar", transform(lims, 0.4)),
            ("vector", transform(lims, rng.random(2))), ("mat", transform(lims, rng.random((3, 2)))),
            ("mat2", transform(lims, rng.random((1, 2))))]


# ---- unary_ufunc_check --------------------------------------------------------------------------
for name, f, npf, lims in [("abs", F.abs, np.abs, [0.1, 4.0]), ("exp", F.exp, np.exp, [-2, 2]),
                           ("log", F.log, np.log, [0.2, 2.0]), ("sqrt", F.sqrt, np.sqrt, [1.0, 3.0]),
                           ("square", lambda x: x ** 2, np.square, [-2, 2]),
                           ("tanh", F.tanh, np.tanh, [-2, 2]), ("negative", F.neg, np.negative, [-2, 2])]:
    for label, a in _unary_inputs(lims):
        case(f"unary-{name}-{label}", f, npf, a)


# ---- binary_ufunc_check and test_binary_ops.py ----------------------------------------------------
def _binary_inputs(lims_a, lims_b):
    shapes = [0.6, 1, rng.random(2), rng.random((3, 2)), rng.random((1, 2))]
    names = ["scalar", "int", "vector", "mat", "mat2"]
    return [(f"{na}-{nb}", transform(lims_a, a), transform(lims_b, b))
            for (na, a), (nb, b) in itertools.product(zip(names, shapes, strict=True), zip(names, shapes, strict=True))]


for name, f, npf, lims_b in [("add", F.add, np.add, [-2, 2]), ("true-divide", F.div, np.true_divide, [0.8, 1.2]),
                             ("true-divide-neg", F.div, np.true_divide, [-0.3, -2.0]),
                             ("op-mul", operator.mul, operator.mul, [-2, 2]),
                             ("op-add", operator.add, operator.add, [-2, 2]),
                             ("op-sub", operator.sub, operator.sub, [-2, 2])]:
    for label, a, b in _binary_inputs([-2, 2], lims_b):
        case(f"binary-{name}-{label}", f, npf, a, b)

ARG_PAIRS = [("scalar", 2.0), ("vector", R(4)), ("mat", R((3, 4))), ("mat2", R((1, 4)))]
for (la, a), (lb, b) in itertools.product(ARG_PAIRS, ARG_PAIRS):
    for name, f in [("mul", operator.mul), ("add", operator.add), ("sub", operator.sub)]:
        case(f"binary-ops-{name}-{la}-{lb}", f, f, a, b)
    gap = lambda x: np.sqrt(np.asarray(x) ** 2 + 0.5)  # noqa: E731
    case(f"binary-ops-div-{la}-{lb}", operator.truediv, operator.truediv, gap(a), gap(b))
    case(f"binary-ops-pow-{la}-{lb}", operator.pow, operator.pow, np.abs(a) + 1.1, b)

# ---- misc combo_checks -----------------------------------------------------------------------------
T234 = R((2, 3, 4))
for axes in [None, [0, 1, 2], [0, 2, 1], [2, 0, 1], [2, 1, 0], [1, 0, 2], [1, 2, 0]]:
    case(f"transpose-{axes}", lambda x, ax=axes: F.transpose(x, ax),
         lambda x, ax=axes: np.transpose(x, ax), T234)
for a, b in itertools.product([R(3), R((2, 3)), R((2, 2, 3))], [R(3), R((3, 4)), R((2, 3, 4))]):
    case(f"matmul-{a.shape}-{b.shape}", F.matmul, np.matmul, a, b)
for name in ("maximum", "minimum"):
    for a, b in itertools.product([R(1), R((1, 4)), R((3, 4))], [R(1), R((1, 4)), R((3, 4))]):
        case(f"{name}-{a.shape}-{b.shape}", getattr(F, name), getattr(np, name), a, b)
T345 = R((3, 4, 5))
for a1, a2 in itertools.product(range(3), range(3)):
    case(f"swapaxes-{a1}-{a2}", lambda x, a=a1, b=a2: F.swapaxes(x, a, b),
         lambda x, a=a1, b=a2: np.swapaxes(x, a, b), T345)


def _joined(pieces, cat):
    """Split pieces scaled 1, 2, 3, ... and joined flat: autograd sums a list output
    (to_scalar); weights make a gradient sent to the wrong piece show."""
    return cat([p.reshape(-1) * float(i + 1) for i, p in enumerate(pieces)])


for shape, how, axes in [((1,), [1], [0]), ((7,), [1], [0]), ((4, 8), [4, [1, 2]], [0, 1]),
                         ((4, 4, 4), [2, [1, 2]], [0, 1, 2])]:
    x = R(shape)
    for h, ax in itertools.product(how, axes):
        case(f"split-{shape}-{h}-axis{ax}", lambda t, h=h, ax=ax: _joined(F.split(t, h, axis=ax), F.concatenate),
             lambda t, h=h, ax=ax: _joined(np.split(t, h, axis=ax), np.concatenate), x)
for label, arrays, axes in [("list", (R(1), R(3)), [0]), ("2d", (R((2, 2)), R((2, 2))), [0, 1]),
                            ("3d", (R((2, 2, 2)), R((2, 2, 2))), [0, 1, 2])]:
    for ax in axes:
        case(f"concatenate-{label}-axis{ax}", lambda *t, ax=ax: F.concatenate(list(t), axis=ax),
             lambda *t, ax=ax: np.concatenate(t, axis=ax), *arrays)
    case(f"concatenate-{label}-tuple", lambda *t: F.concatenate(tuple(t)),
         lambda *t: np.concatenate(t), *arrays)
for arrays in [(R(2),), (R(2), R(2))]:
    for ax in (0, 1):
        case(f"stack-1d-{len(arrays)}-axis{ax}", lambda *t, ax=ax: F.stack(t, axis=ax),
             lambda *t, ax=ax: np.stack(t, axis=ax), *arrays)


@pytest.mark.parametrize("mg_fn, np_fn, arrays", CASES)
def test_combo_check(mg_fn, np_fn, arrays):
    assert_close(mg_fn(*[mg.Tensor(a) for a in arrays]).data, np_fn(*arrays), np.float64,
                 what="value against NumPy")
    gradcheck_ok(mg_fn, *arrays)


@pytest.mark.parametrize("name", ["max", "mean", "min", "sum", "var"])
def test_stat_check_python_number(name):
    """stat_check's first case, x = 3.5: a Python number into a reduction, as NumPy takes it."""
    out = getattr(F, name)(3.5)
    assert out.shape == () and out.item() == getattr(np, name)(3.5)


COMPARE = [("lt-self", lambda x, y: x < x), ("le", lambda x, y: x <= y), ("gt", lambda x, y: x > y),
           ("ge", lambda x, y: x >= y), ("eq", lambda x, y: x == y), ("ne", lambda x, y: x != y)]
def _compare_params():
    out = []
    for (la, a), (lb, b) in itertools.product(ARG_PAIRS, ARG_PAIRS):
        for name, f in COMPARE:
            out.append(pytest.param(f, a, b, id=f"{name}-{la}-{lb}"))
    return out


@pytest.mark.parametrize("f, a, b", _compare_params())
def test_comparison_grads_and_values(f, a, b):
    """test_binary_ops.py test_comparison_grads/values (and test_core.py's comparisons):
    sum(x < y) + 0.0 has NumPy's value and zero gradient for both arguments."""
    fn = lambda x, y: f(x, y).sum() + 0.0  # noqa: E731
    x, y = mg.Tensor(np.asarray(a, float), requires_grad=True), mg.Tensor(np.asarray(b, float), requires_grad=True)
    out = fn(x, y)
    assert out.item() == float(np.sum(f(np.asarray(a), np.asarray(b))))
    assert not out.requires_grad  # comparisons are not differentiable: no gradient flows
    # autograd asserts grad == 0 exactly (finite differences jump where x == y): with the
    # inputs joined to the output by a zero-weight path, their gradients are exactly zero
    (fn(x, y) + (x * 0.0).sum() + (y * 0.0).sum()).backward()
    assert np.all(x.grad == 0) and np.all(y.grad == 0)
