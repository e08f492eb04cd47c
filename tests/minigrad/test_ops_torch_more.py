"""The issue 14 ops of ops-a against PyTorch autograd (float64, random cotangent, ~1e-12).

Kept apart from test_ops_torch.py, whose table is a module-level dict: ``TORCH_CASES_MORE``
is this file's share, and ``test_every_op_here_has_a_torch_case`` checks that it covers
``OPS_A``. Names mapped: arcsin -> torch.asin (and the other arc- functions), arctan2 ->
torch.atan2, mod -> torch.remainder (both take the divisor's sign), norm -> torch.linalg's
vector_norm / matrix_norm, outer -> torch.outer of the flattened inputs (np.outer flattens).
Cases sit on ties and zeros on purpose where the conventions must agree: prod and cumprod
with zeros, norm at 0 and ord=inf ties, sign/floor at their jumps, std of a constant slice.
hypot at the origin differs on purpose (0 here, nan in torch; docs/backward.md §24).
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

from test_ops_a_catalogs import OPS_A  # noqa: E402  (the list of this helper's ops)

torch = pytest.importorskip("torch")

rng = np.random.default_rng(1405)
TORCH_CASES_MORE: dict[str, list] = {}


def rn(*shape):
    return np.asarray(rng.standard_normal(shape))


def uni(lo, hi, *shape):
    return np.asarray(rng.uniform(lo, hi, shape))


def case(op, label, mg_fn, t_fn, *arrays):
    TORCH_CASES_MORE.setdefault(op, []).append(
        pytest.param(mg_fn, t_fn, arrays, id=f"{op}-{label}"))


def _dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis


# contractions
for sub, shapes in [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(2, 3), (3, 4)]),
                    ("ii->i", [(4, 4)]), ("ii", [(3, 3)]), ("ij,j->j", [(3, 4), (4,)]),
                    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("ba", [(2, 3)]),
                    ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 2), (2, 2, 3)]),
                    ("ij,ij->ij", [(3, 1), (3, 4)])]:
    case("einsum", sub, lambda *xs, s=sub: F.einsum(s, *xs),
         lambda *xs, s=sub: torch.einsum(s, *xs), *[rn(*s) for s in shapes])
case("tensordot", "int", lambda a, b: F.tensordot(a, b, 2), lambda a, b: torch.tensordot(a, b, 2),
     rn(3, 4, 5), rn(4, 5, 2))
case("tensordot", "pairs", lambda a, b: F.tensordot(a, b, ([1, 0], [0, 2])),
     lambda a, b: torch.tensordot(a, b, ([1, 0], [0, 2])), rn(3, 4, 2), rn(4, 5, 3))
case("outer", "2d@1d", F.outer, lambda a, b: torch.outer(a.reshape(-1), b.reshape(-1)),
     rn(2, 3), rn(4))
case("inner", "3x4@5x4", F.inner, torch.inner, rn(3, 4), rn(5, 4))
case("inner", "1d", F.inner, torch.inner, rn(4), rn(4))

# reductions and scans
_const = np.concatenate([rn(2, 4), np.full((1, 4), 0.7)])  # a constant row: std 0
for axis, kd in [(None, False), (1, True), (-1, False), ((0, 1), True)]:
    for ddof in (0, 1):
        case("std", f"axis={axis}-kd={kd}-ddof={ddof}",
             lambda a, ax=axis, kd=kd, d=ddof: F.std(a, axis=ax, ddof=d, keepdims=kd),
             lambda a, ax=axis, kd=kd, d=ddof: torch.std(a, dim=_dims(ax, a.ndim), correction=d,
                                                         keepdim=kd), rn(3, 4))
case("std", "constant-row", lambda a: F.std(a, axis=1), lambda a: torch.std(a, dim=1,
                                                                            correction=0), _const)
_zeros = rn(4, 5)
_zeros[0, 2] = 0.0
_zeros[1, 0] = 0.0
_zeros[2, 1] = _zeros[2, 3] = 0.0
case("prod", "all", F.prod, torch.prod, rn(2, 3) + 0.5)
case("prod", "zeros-axis=1", lambda a: F.prod(a, axis=1), lambda a: torch.prod(a, dim=1), _zeros)
case("prod", "zeros-axis=0-kd", lambda a: F.prod(a, axis=0, keepdims=True),
     lambda a: torch.prod(a, dim=0, keepdim=True), _zeros.T.copy())
case("prod", "one-zero-all", F.prod, torch.prod, np.array([2.0, 0.0, -3.0, 0.5]))
for axis in (0, 1, -1):
    case("cumsum", f"axis={axis}", lambda a, ax=axis: F.cumsum(a, ax),
         lambda a, ax=axis: torch.cumsum(a, ax), rn(3, 4))
    case("cumprod", f"zeros-axis={axis}", lambda a, ax=axis: F.cumprod(a, ax),
         lambda a, ax=axis: torch.cumprod(a, ax), _zeros)
    case("logcumsumexp", f"axis={axis}", lambda a, ax=axis: F.logcumsumexp(a, ax),
         lambda a, ax=axis: torch.logcumsumexp(a, ax), 3 * rn(3, 4))
case("cumsum", "axis=None", F.cumsum, lambda a: torch.cumsum(a.reshape(-1), 0), rn(3, 4))
case("logcumsumexp", "large", lambda a: F.logcumsumexp(a, -1),
     lambda a: torch.logcumsumexp(a, -1), np.array([[800.0, 801.0, 799.5, -800.0]]))
_with_zero_row = np.concatenate([rn(2, 4), np.zeros((1, 4))])
_ties = np.array([[-2.0, 2.0, 1.0], [0.5, -3.0, 1.0]])
for ord, axis, kd, x in [(None, None, False, rn(3, 4)), (2, 1, False, _with_zero_row),
                         (1, -1, True, rn(3, 4)), (3, 0, False, _with_zero_row),
                         (0.5, 1, False, _with_zero_row), (np.inf, 1, False, _ties),
                         (-np.inf, 1, False, _ties), (-1.5, 1, False, rn(2, 4))]:
    case("norm", f"ord={ord}-axis={axis}-kd={kd}",
         lambda a, o=ord, ax=axis, kd=kd: F.norm(a, ord=o, axis=ax, keepdims=kd),
         lambda a, o=ord, ax=axis, kd=kd: torch.linalg.vector_norm(
             a, 2 if o is None else o, dim=ax, keepdim=kd), x)
case("norm", "fro", lambda a: F.norm(a, "fro"), lambda a: torch.linalg.matrix_norm(a, "fro"),
     rn(3, 4))

# elementwise
_names = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
          "arctanh": "atanh"}
_domain = {"arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9),
           "log1p": (-0.5, 2.0), "log2": (0.3, 4.0), "log10": (0.3, 4.0), "rsqrt": (0.3, 3.0),
           "reciprocal": (0.4, 2.0), "tan": (-1.2, 1.2)}
for name in ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
             "arctanh", "log1p", "expm1", "log2", "log10", "exp2", "square", "reciprocal",
             "rsqrt"):
    lo, hi = _domain.get(name, (-2.0, 2.0))
    tf = getattr(torch, _names.get(name, name))
    case(name, "3x4", getattr(F, name), tf, uni(lo, hi, 3, 4))
    case(name, "0d", getattr(F, name), tf, uni(lo, hi))
_jumps = np.array([-2.0, -1.5, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 2.5, 0.3, -0.7])  # on the jumps
for name in ("sign", "floor", "ceil", "round", "trunc"):
    case(name, "at-jumps", getattr(F, name), getattr(torch, name), _jumps)
    case(name, "3x4", getattr(F, name), getattr(torch, name), 3 * rn(3, 4))
case("round", "decimals=1", lambda a: F.round(a, 1), lambda a: torch.round(a, decimals=1),
     3 * rn(3, 4))
for name, tname in [("arctan2", "atan2"), ("hypot", "hypot"), ("logaddexp", "logaddexp")]:
    case(name, "bcast", getattr(F, name), getattr(torch, tname), rn(3, 1, 4), rn(5, 4))
    case(name, "0d", getattr(F, name), getattr(torch, tname), rn(), rn(2, 3))
case("arctan2", "origin", F.arctan2, torch.atan2, np.array([0.0, 1.0]), np.array([0.0, -1.0]))
_b = np.where(rng.random(4) < 0.5, -1.0, 1.0) * uni(0.5, 2.0, 4)
case("mod", "bcast", F.mod, torch.remainder, _b * (rng.choice([-3.0, 1.0, 2.0], (3, 4))
                                                  + uni(0.1, 0.9, 3, 4)), _b)
case("mod", "0d", F.mod, torch.remainder, np.asarray(2.7), np.array([[1.1, -0.8], [2.0, -1.3]]))


def test_every_op_here_has_a_torch_case():
    assert set(TORCH_CASES_MORE) == set(OPS_A)


@pytest.mark.parametrize("mg_fn,t_fn,arrays",
                         [p for cases in TORCH_CASES_MORE.values() for p in cases])
def test_matches_torch_autograd(mg_fn, t_fn, arrays):
    mts = [mg.Tensor(a.copy(), requires_grad=True) for a in arrays]
    tts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = mg_fn(*mts), t_fn(*tts)
    assert out.shape == tuple(tout.shape)
    assert tout.dtype == torch.float64 and out.dtype == np.float64
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    cot = np.random.default_rng(5).standard_normal(out.shape)
    out.backward(cot)
    tout.backward(torch.from_numpy(cot))
    for m, t in zip(mts, tts):
        assert m.grad is not None and t.grad is not None
        np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-12, atol=1e-12)
