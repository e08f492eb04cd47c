"""HIPS autograd's ``check_grads`` cases (HIPS/autograd: tests/test_numpy.py, test_graphs.py,
test_core.py, test_scalar_ops.py) for the ops minigrad has: each function's value against the
plain-NumPy function it stands for, and its gradient against central finite differences in
float64 with a random cotangent (``mg.gradcheck``). Our own code; the cases are theirs.
autograd's second-order checks (``grad`` of ``grad``) are left out: minigrad has no
higher-order derivatives. test_autograd_systematic_cases.py has test_systematic.py and
test_binary_ops.py.
"""
from __future__ import annotations

import numpy as np
import pytest
from peer_util import assert_close, gradcheck_ok

import minigrad as mg
from minigrad import F

rng = np.random.default_rng(1)
R = rng.standard_normal
CASES: list = []


def case(label, mg_fn, np_fn, *arrays, gc=None):
    """``mg_fn(*Tensors)`` must equal ``np_fn(*arrays)``; its VJPs must pass gradcheck."""
    CASES.append(pytest.param(mg_fn, np_fn, [np.asarray(a, float) for a in arrays], gc or {},
                              id=label))


# ---- test_numpy.py --------------------------------------------------------------------------
mat1, mat2, vect1, vect2, vect3, float1 = R((10, 11)), R((10, 11)), R(10), R(11), R(11), R(())
for label, a, b in [("mat-vec", mat1, vect2), ("mat-mat", mat1, mat2.T), ("vec-mat", vect1, mat1),
                    ("vec-vec", vect2, vect3)]:
    case(f"dot-{label}", lambda x, y: x @ y, np.dot, a, b)
for label, a, b in [("mat-float", mat1, float1), ("float-mat", float1, mat1),
                    ("vec-float", vect1, float1), ("float-vec", float1, vect1)]:
    case(f"dot-with-floats-{label}", lambda x, y: x * y, np.dot, a, b)
case("outer", lambda x, y: F.expand_dims(x, 1) * F.expand_dims(y, 0), np.outer, vect2, vect3)
for name in ("max", "min"):
    case(f"{name}", lambda x, n=name: getattr(x, n)(), getattr(np, name), R((10, 11)))
    case(f"{name}-axis", lambda x, n=name: getattr(x, n)(axis=1),
         lambda x, n=name: getattr(np, n)(x, axis=1), R((3, 4, 5)))
    case(f"{name}-axis-keepdims", lambda x, n=name: getattr(x, n)(axis=1, keepdims=True),
         lambda x, n=name: getattr(np, n)(x, axis=1, keepdims=True), R((3, 4, 5)))
for name in ("sum", "mean"):
    case(f"{name}-1", lambda x, n=name: getattr(x, n)(), getattr(np, name), R((10, 11)))
    case(f"{name}-2", lambda x, n=name: getattr(x, n)(axis=0),
         lambda x, n=name: getattr(np, n)(x, axis=0), R((10, 11)))
    case(f"{name}-3", lambda x, n=name: getattr(x, n)(axis=0, keepdims=True),
         lambda x, n=name: getattr(np, n)(x, axis=0, keepdims=True), R((10, 11)))
case("sum-axis-tuple", lambda x: x.sum(axis=(1, 2)), lambda x: np.sum(x, axis=(1, 2)), R((5, 6, 7)))
case("flipud", lambda x: x[::-1], np.flipud, R((10, 11)))
case("fliplr", lambda x: x[:, ::-1], np.fliplr, R((10, 11)))
case("rot90", lambda x: x[:, ::-1].T, np.rot90, R((10, 11)))
case("non-numpy-sum", lambda x, y: sum([x, y]), lambda x, y: sum([x, y]), R((10, 11)), R((10, 11)))
A564 = R((5, 6, 4))
for label, idx in [("ints", np.s_[3, 0, 1]), ("slice", np.s_[::-1, 2:4, :]),
                   ("lists", np.s_[[0, 1, 2], :, :]), ("mixed", np.s_[3, 2:, [1, 3]])]:
    case(f"index-{label}", lambda x, i=idx: x[i], lambda x, i=idx: x[i], A564)
case("vector-slice", lambda x: x[2:4], lambda x: x[2:4], R(5))
case("index-slice-fanout", lambda x: x[::-1, 2:4, :] + x[::-1, 3:5, :],
     lambda x: x[::-1, 2:4, :] + x[::-1, 3:5, :], A564)
case("index-multiple-slices", lambda x: x[2:6][1:3], lambda x: x[2:6][1:3], R(7))
case("reshape-method", lambda x: x.reshape((20, 6)), lambda x: x.reshape((20, 6)), A564)
case("reshape-call", lambda x: F.reshape(x, (20, 6)), lambda x: np.reshape(x, (20, 6)), A564)
case("reshape-method-nolist", lambda x: x.reshape(20, 6), lambda x: x.reshape(20, 6), A564)
case("ravel-as-reshape", lambda x: x.reshape(-1), np.ravel, A564)
case("flatten-method", lambda x: x.flatten(), lambda x: x.flatten(), A564)
CA, CB = R((5, 6, 4)), R((4, 6, 4))
case("simple-concatenate", lambda x: F.concatenate((CA, x)), lambda x: np.concatenate((CA, x)), CB)
case("concatenate-axis-0", lambda x: F.concatenate((CA, x, CA)),
     lambda x: np.concatenate((CA, x, CA)), R((5, 6, 4)))
case("concatenate-axis-1", lambda x: F.concatenate((CA, x, CA), axis=1),
     lambda x: np.concatenate((CA, x, CA), axis=1), R((5, 6, 4)))
case("concatenate-axis-1-unnamed", lambda x: F.concatenate((CA, x, CA), 1),
     lambda x: np.concatenate((CA, x, CA), 1), R((5, 6, 4)))
case("split-first-half", lambda x: F.split(x, 2)[0], lambda x: np.split(x, 2)[0], R(10))
case("diag-as-int-arrays", lambda x: x[np.arange(10), np.arange(10)], np.diag, R((10, 10)))
case("transpose", lambda x: x.T, lambda x: x.T, R((8, 8)))
case("clip", lambda x: F.clip(x, a_min=0.1, a_max=1.1), lambda x: np.clip(x, 0.1, 1.1), R((5, 5)))
case("1d-array", lambda x: F.stack([x, x * 1.0, x + 2.5]), lambda x: np.array([x, x * 1.0, x + 2.5]), 3.0)
_2d = lambda x, st: st([st([x, x * 1.0, x + 2.5]), st([x ** 2, x, x / 2.0])])  # noqa: E731
case("2d-array", lambda x: _2d(x, F.stack), lambda x: _2d(x, np.array), 3.0)
case("1d-array-fanout", lambda x: (lambda a: a + a)(F.stack([x, x * 1.0, x + 2.5])),
     lambda x: 2 * np.array([x, x * 1.0, x + 2.5]), 3.0)
case("2d-array-fanout", lambda x: (lambda a: a + a)(_2d(x, F.stack)), lambda x: 2 * _2d(x, np.array), 3.0)
case("array-from-scalar", lambda x: x, np.array, 3.0)
case("array-from-arrays", lambda x: F.stack([x, x]), lambda x: np.array([x, x]), R((3, 2)))
case("array-from-arrays-2", lambda x: F.stack([F.stack([2 * x, x + 1]), F.stack([x, x])]),
     lambda x: np.array([[2 * x, x + 1], [x, x]]), R((3, 2)))
case("len", lambda x: x if len(x) == 3 else None, lambda x: x, R((3, 2)))
_c = R((3, 2))
case("no-relation", lambda x: mg.Tensor(_c), lambda x: _c, R((3, 2)))
VB, VC, VD = R(3), R((3, 4)), R((1, 3))
for label, a in [("B", VB), ("C", VC), ("D", VD)]:
    for kd in (True, False):
        for ddof in (0, 1):
            case(f"var-ddof-{label}-None-kd={kd}-ddof={ddof}",
                 lambda x, kd=kd, d=ddof: x.var(keepdims=kd, ddof=d),
                 lambda x, kd=kd, d=ddof: np.var(x, keepdims=kd, ddof=d), a)
for label, a in [("C", VC), ("D", VD)]:
    for axis in (None, 1):
        for kd in (True, False):
            case(f"var-ddof-{label}-{axis}-kd={kd}-ddof=2",
                 lambda x, ax=axis, kd=kd: x.var(axis=ax, keepdims=kd, ddof=2),
                 lambda x, ax=axis, kd=kd: np.var(x, axis=ax, keepdims=kd, ddof=2), a)
_mask = R((4, 5)) > 0
case("where", lambda x, y: F.where(_mask, x, y), lambda x, y: np.where(_mask, x, y), R((4, 5)), R((4, 5)))
case("squeeze-func", F.squeeze, np.squeeze, R((5, 1, 4)))
case("squeeze-method", lambda x: x.squeeze(), lambda x: x.squeeze(), R((5, 1, 4)))
case("expand-dims", lambda x: F.expand_dims(x, 2), lambda x: np.expand_dims(x, 2), R((5, 1, 4)))
case("multi-index", lambda x: x[[0, 0]].sum(), lambda x: np.sum(x[[0, 0]]), R(3))
case("multi-index2", lambda x: x[[0, 1, 0]].sum(), lambda x: np.sum(x[[0, 1, 0]]), R(3))
case("index-dot-slices", lambda x: x[:2] @ x[2:], lambda x: np.dot(x[:2], x[2:]), R(4))
case("cast-to-int", lambda w: w[:, :-1][w[:, -1].astype(np.int64)].sum(),
     lambda w: w[:, :-1][w[:, -1].astype(np.int64)].sum(), R((5, 10)))
case("max-equal-values", lambda x: F.stack([x, x]).max(), lambda x: np.max([x, x]), 1.0)
_m2 = lambda x, st: st([st([x, x]), st([x, 0.5 + 0 * x])])  # noqa: E731
_m3 = lambda x, st: st([st([x, x, x]), st([x, .5 + 0 * x, .5 + 0 * x]),  # noqa: E731
                        st([.5 + 0 * x] * 3), st([x, x, .5 + 0 * x])])
for x0 in (1.0, -1.0):
    case(f"max-equal-values-2d-{x0}", lambda x: _m2(x, F.stack).max(axis=1),
         lambda x: _m2(x, np.array).max(axis=1), x0)
    case(f"min-3-way-equality-{x0}", lambda x: _m3(x, F.stack).min(axis=0),
         lambda x: _m3(x, np.array).min(axis=0), x0)
case("maximum-equal-values", lambda x: F.maximum(x, x), lambda x: np.maximum(x, x), 1.0)
for x0 in (1.0, -1.0, 2.0):
    case(f"maximum-equal-values-2d-{x0}",
         lambda x: F.maximum(F.stack([x, x, 0.5 + 0 * x]),
                             F.stack([F.stack([x, 0.5 + 0 * x, x]), F.stack([x, x, 0.5 + 0 * x])])),
         lambda x: np.maximum(np.array([x, x, 0.5]), np.array([[x, 0.5, x], [x, x, 0.5]])), x0)

# ---- test_graphs.py ---------------------------------------------------------------------------
case("grad-fanout", lambda x: F.tanh(F.tanh(x) + F.tanh(x)), lambda x: np.tanh(2 * np.tanh(x)), R(()))
case("grad-const", lambda x: mg.Tensor(np.array(1.0)), lambda x: 1.0, 2.0)
case("grad-identity", lambda x: x, lambda x: x, 2.0)


def _mutating(a, b0=False):
    b = a + 1.0
    c = (b[0] if b0 else b) + 1.5
    return (a + b) + c


case("mutating-outgrad", _mutating, _mutating, R(5))
case("mutating-outgrad-from-indexing", lambda a: _mutating(a, True), lambda a: _mutating(a, True), R(5))
for label, shape, axis, kd in [("all", (3, 3), None, True), ("axis0", (3, 1), 0, False),
                               ("axis1", (1, 3), 1, False), ("axis0-keepdims", (3, 1), 0, True),
                               ("axis1-keepdims", (1, 3), 1, True)]:
    case(f"singleton-array-output-{label}", lambda x, a=axis, k=kd: F.exp(x).sum(axis=a, keepdims=k),
         lambda x, a=axis, k=kd: np.sum(np.exp(x), axis=a, keepdims=k), R(shape))

# ---- test_core.py and test_scalar_ops.py (scalars as 0-d arrays) ------------------------------
for name, f in [("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("div", lambda x, y: x / y),
                ("mul", lambda x, y: x * y), ("pow", lambda x, y: x ** y)]:
    case(f"core-{name}", f, f, 0.7, 1.8)
for x0 in (1.1, -1.1, 0.0):
    case(f"scalar-abs-{x0}", lambda x: 3.0 * F.abs(x), lambda x: 3.0 * np.abs(x), x0)
u = rng.random
for name, f, npf, x0 in [("exp", F.exp, np.exp, R(())), ("log", F.log, np.log, abs(R(()))),
                         ("neg", lambda x: -x, np.negative, R(())), ("tanh", F.tanh, np.tanh, R(())),
                         ("sqrt", F.sqrt, np.sqrt, 10 * u()), ("reciprocal", lambda x: 1 / x,
                                                                np.reciprocal, u())]:
    case(f"scalar-{name}", lambda x, f=f: 3.0 * f(x), lambda x, npf=npf: 3.0 * npf(x), x0)
_y = R(()) ** 2 + 1.0
case("power-arg0", lambda x: x ** float(_y), lambda x: np.power(x, _y), u() ** 2 + 1.0)
_x = R(()) ** 2
case("power-arg1", lambda y: float(_x) ** y, lambda y: np.power(_x, y), u() ** 2)
case("power-arg1-zero-base", lambda y: 0.0 ** y, lambda y: np.power(0.0, y), u() ** 2)
for name, f in [("divide", lambda x, y: x / y), ("multiply", lambda x, y: x * y)]:
    case(f"scalar-{name}", f, f, u(), u())


@pytest.mark.parametrize("mg_fn, np_fn, arrays, gc", CASES)
def test_check_grads(mg_fn, np_fn, arrays, gc):
    assert_close(mg_fn(*[mg.Tensor(a) for a in arrays]).data, np_fn(*arrays), np.float64,
                 what="value against NumPy")
    gradcheck_ok(mg_fn, *arrays, **gc)


def test_power_zero_exponent_gradient_at_zero():
    """test_power_arg0's special case (autograd issue #116): d(x ** 0)/dx at x = 0 is 0."""
    x = mg.Tensor(np.array(0.0), requires_grad=True)
    (x ** 0.0).backward()
    assert x.grad == 0.0


def test_astype_gradient_keeps_input_dtype():
    """test_astype: a float32 input cast to float64 inside the function gets a float32 grad."""
    x = mg.Tensor(np.arange(3, dtype=np.float32), requires_grad=True)
    F.exp(x.astype(np.float64)).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad, np.exp(np.arange(3.0)), rtol=2 * np.finfo(np.float32).eps)


def test_nonscalar_output_needs_a_cotangent():
    """test_nonscalar_output: autograd's grad() of a non-scalar raises TypeError. minigrad's
    backward() without ``grad`` on a many-element output raises, as documented in
    Tensor.backward, a RuntimeError that is also a ValueError (as PyTorch's is)."""
    y = mg.Tensor(np.zeros(2), requires_grad=True) * 2
    with pytest.raises(ValueError, match="grad="):
        y.backward()
    with pytest.raises(RuntimeError):
        y.backward()
