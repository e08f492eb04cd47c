"""Cases for minigrad/ops/reduce.py: every axis form, keepdims, ddof.

std, prod and norm have their own seeded inputs (``_rng_a``), so that the
older reduce cases keep theirs: every axis form, keepdims, ddof; prod with one and two
zeros in a slice (prod is linear in each input, so finite differences are exact there);
norm's vector orders and the Frobenius norm, and (at the end, their own inputs) its other
matrix norms. References are formulas, not the op's NumPy
function where a plainer one exists."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np
import scipy.special as sp

from minigrad import F

from .base import _rng, _sid, add_case, away, pos, rn, separated, torch_table  # noqa: F401

# ---- reductions -----------------------------------------------------------------------------
AXES = [None, 0, 2, -1, (0, 2), (-1, 1), (0, 1, 2)]
for axis in AXES:
    for kd in (False, True):
        label = f"axis={axis}-keepdims={kd}"
        for name in ("sum", "mean", "max", "min"):
            npf = getattr(np, name)
            add_case(name, label, lambda a, f=getattr(F, name), axis=axis, kd=kd:
                     f(a, axis=axis, keepdims=kd),
                     lambda a, npf=npf, axis=axis, kd=kd: npf(a, axis=axis, keepdims=kd),
                     rn(2, 3, 4))
        for ddof in (0, 1):
            add_case("var", f"{label}-ddof={ddof}",
                     lambda a, ax=axis, kd=kd, dd=ddof: F.var(a, axis=ax, ddof=dd, keepdims=kd),
                     lambda a, ax=axis, kd=kd, dd=ddof: np.var(a, axis=ax, ddof=dd, keepdims=kd),
                     rn(2, 3, 4))
for name in ("sum", "mean", "max", "min", "var"):
    f, npf = getattr(F, name), getattr(np, name)
    add_case(name, "0d", lambda a, f=f: f(a), lambda a, npf=npf: npf(a), rn())
    add_case(name, "1d-axis0", lambda a, f=f: f(a, axis=0), lambda a, npf=npf: npf(a, axis=0),
             rn(5))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: sum, mean, max, min, var (ties for max/min)."""
    rng = np.random.default_rng(9902)

    case = add  # float64

    rn = partial(helpers.rn, rng)

    def _dims(axis, ndim):
        return tuple(range(ndim)) if axis is None else axis

    _x_ties = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 5.0, 0.0, 5.0]])
    for axis, kd in [(None, False), (1, True), (-1, False), ((0, 1), True), (0, False)]:
        lbl = f"axis={axis}-kd={kd}"
        for name, tf in [("sum", torch.sum), ("mean", torch.mean), ("max", torch.amax),
                         ("min", torch.amin)]:
            case(name, lbl,
                 lambda a, f=getattr(F, name), ax=axis, kd=kd: f(a, axis=ax, keepdims=kd),
                 lambda a, tf=tf, ax=axis, kd=kd: tf(a, dim=_dims(ax, a.ndim), keepdim=kd),
                 rn(3, 4))
        for name, tf, sign in [("max", torch.amax, 1.0), ("min", torch.amin, -1.0)]:
            case(name, "ties-" + lbl,
                 lambda a, f=getattr(F, name), ax=axis, kd=kd: f(a, axis=ax, keepdims=kd),
                 lambda a, tf=tf, ax=axis, kd=kd: tf(a, dim=_dims(ax, a.ndim), keepdim=kd),
                 sign * _x_ties)
        for ddof in (0, 1):
            case("var", f"{lbl}-ddof={ddof}",
                 lambda a, ax=axis, kd=kd, d=ddof: F.var(a, axis=ax, ddof=d, keepdims=kd),
                 lambda a, ax=axis, kd=kd, d=ddof: torch.var(a, dim=_dims(ax, a.ndim), correction=d,
                                                             keepdim=kd), rn(3, 4))
    for name, tf in [("sum", torch.sum), ("prod", torch.prod), ("max", torch.amax),
                     ("min", torch.amin)]:  # a 0-d tensor over dim 0 or -1: itself
        for axis in (0, -1):
            case(name, f"0d-axis={axis}", lambda a, f=getattr(F, name), ax=axis: f(a, axis=ax),
                 lambda a, tf=tf, ax=axis: tf(a, ax), np.array(0.7))


# ---- std, prod, norm ------------------------------------------------------------------------
_rng_a = np.random.default_rng(1404)  # this family's own inputs (see base.py)
rn_a = partial(helpers.rn, _rng_a)


def _std(a, axis=None, ddof=0, keepdims=False):
    d = a - np.mean(a, axis=axis, keepdims=True)
    n = a.size if axis is None else int(np.prod([a.shape[i] for i in np.atleast_1d(axis)]))
    return np.sqrt(np.sum(d * d, axis=axis, keepdims=keepdims) / (n - ddof))


AXES_A = [None, 0, -1, (0, 2), (0, 1, 2)]
for axis in AXES_A:
    for kd in (False, True):
        label = f"axis={axis}-keepdims={kd}"
        for ddof in (0, 1):
            add_case("std", f"{label}-ddof={ddof}",
                     lambda a, ax=axis, kd=kd, dd=ddof: F.std(a, axis=ax, ddof=dd, keepdims=kd),
                     lambda a, ax=axis, kd=kd, dd=ddof: _std(a, ax, dd, kd), rn_a(2, 3, 4))
        add_case("prod", label, lambda a, ax=axis, kd=kd: F.prod(a, axis=ax, keepdims=kd),
                 lambda a, ax=axis, kd=kd: np.prod(a, axis=ax, keepdims=kd),
                 rn_a(2, 3, 4) + 0.5)
add_case("std", "1d", F.std, lambda a: _std(a), rn_a(5))
_z = rn_a(3, 4)
_z[0, 1] = 0.0  # one zero in row 0
_z[1, 0] = _z[1, 3] = 0.0  # two in row 1; row 2 none
add_case("prod", "zeros-axis=1", lambda a: F.prod(a, axis=1),
         lambda a: np.array([a[i, 0] * a[i, 1] * a[i, 2] * a[i, 3] for i in range(3)]), _z)
add_case("prod", "one-zero-all", F.prod, lambda a: np.prod(a.reshape(-1)), _z[0])
add_case("prod", "0d", F.prod, lambda a: a * 1.0, rn_a())
# a 0-d array over an int axis 0 or -1: NumPy's ufunc reductions return it (fixed input: no
# draw from the generators, so the cases after these keep their inputs)
for name in ("sum", "prod", "max", "min"):
    for axis, kd in [(0, False), (-1, True)]:
        add_case(name, f"0d-axis={axis}-keepdims={kd}",
                 lambda a, f=getattr(F, name), ax=axis, kd=kd: f(a, axis=ax, keepdims=kd),
                 lambda a, npf=getattr(np, name), ax=axis, kd=kd: npf(a, axis=ax, keepdims=kd),
                 np.array(0.7))


def _pnorm(x, p, axis=None, keepdims=False):
    ax = tuple(range(x.ndim)) if axis is None else axis
    if p == np.inf:
        return np.max(np.abs(x), axis=ax, keepdims=keepdims)
    if p == -np.inf:
        return np.min(np.abs(x), axis=ax, keepdims=keepdims)
    return np.sum(np.abs(x) ** p, axis=ax, keepdims=keepdims) ** (1.0 / p)


for ord, axis, kd, shape in [(None, None, False, (3, 4)), (None, None, True, (2, 3, 4)),
                             (None, -1, False, (3, 4)), (2, 0, True, (3, 4)),
                             (1, 1, False, (3, 4)), (3, -1, False, (2, 5)),
                             (0.5, None, False, (4,)), (-1.5, 0, False, (4, 2)),
                             (np.inf, 1, False, (3, 4)), (-np.inf, None, False, (5,)),
                             ("fro", None, False, (3, 4)), (None, (0, 2), True, (2, 3, 4)),
                             ("fro", (1, 0), False, (3, 4))]:
    p = 2 if ord in (None, "fro") else ord
    add_case("norm", f"ord={ord}-axis={axis}-keepdims={kd}",
             lambda x, o=ord, ax=axis, kd=kd: F.norm(x, ord=o, axis=ax, keepdims=kd),
             lambda x, p=p, ax=axis, kd=kd: _pnorm(x, p, ax, kd), rn_a(*shape))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references_std_prod_norm(torch, add):
    """Against PyTorch autograd: std, prod (with zeros), norm (torch.linalg's vector_norm /
    matrix_norm)."""
    rng = np.random.default_rng(14052)

    case = add  # float64

    rn_a = partial(helpers.rn, rng)

    def _dims(axis, ndim):
        return tuple(range(ndim)) if axis is None else axis

    _const = np.concatenate([rn_a(2, 4), np.full((1, 4), 0.7)])  # a constant row: std 0
    for axis, kd in [(None, False), (1, True), (-1, False), ((0, 1), True)]:
        for ddof in (0, 1):
            case("std", f"axis={axis}-kd={kd}-ddof={ddof}",
                 lambda a, ax=axis, kd=kd, d=ddof: F.std(a, axis=ax, ddof=d, keepdims=kd),
                 lambda a, ax=axis, kd=kd, d=ddof: torch.std(a, dim=_dims(ax, a.ndim), correction=d,
                                                             keepdim=kd), rn_a(3, 4))
    case("std", "constant-row", lambda a: F.std(a, axis=1),
         lambda a: torch.std(a, dim=1, correction=0), _const)
    _zeros = rn_a(4, 5)
    _zeros[0, 2] = 0.0
    _zeros[1, 0] = 0.0
    _zeros[2, 1] = _zeros[2, 3] = 0.0
    case("prod", "all", F.prod, torch.prod, rn_a(2, 3) + 0.5)
    case("prod", "zeros-axis=1", lambda a: F.prod(a, axis=1), lambda a: torch.prod(a, dim=1),
         _zeros)
    case("prod", "zeros-axis=0-kd", lambda a: F.prod(a, axis=0, keepdims=True),
         lambda a: torch.prod(a, dim=0, keepdim=True), _zeros.T.copy())
    case("prod", "one-zero-all", F.prod, torch.prod, np.array([2.0, 0.0, -3.0, 0.5]))

    _with_zero_row = np.concatenate([rn_a(2, 4), np.zeros((1, 4))])
    _ties = np.array([[-2.0, 2.0, 1.0], [0.5, -3.0, 1.0]])
    for ord, axis, kd, x in [(None, None, False, rn_a(3, 4)), (2, 1, False, _with_zero_row),
                             (1, -1, True, rn_a(3, 4)), (3, 0, False, _with_zero_row),
                             (0.5, 1, False, _with_zero_row), (np.inf, 1, False, _ties),
                             (-np.inf, 1, False, _ties), (-1.5, 1, False, rn_a(2, 4))]:
        case("norm", f"ord={ord}-axis={axis}-kd={kd}",
             lambda a, o=ord, ax=axis, kd=kd: F.norm(a, ord=o, axis=ax, keepdims=kd),
             lambda a, o=ord, ax=axis, kd=kd: torch.linalg.vector_norm(
                 a, 2 if o is None else o, dim=ax, keepdim=kd), x)
    case("norm", "fro", lambda a: F.norm(a, "fro"), lambda a: torch.linalg.matrix_norm(a, "fro"),
         rn_a(3, 4))


# ---- logsumexp ---------------------------------------------------------------------------
for axis in [None, 0, -1, (0, 2)]:
    for kd in (False, True):
        add_case("logsumexp", f"axis={axis}-keepdims={kd}",
                 lambda a, ax=axis, kd=kd: F.logsumexp(a, axis=ax, keepdims=kd),
                 lambda a, ax=axis, kd=kd: sp.logsumexp(a, axis=ax, keepdims=kd), rn(2, 3, 4))
add_case("logsumexp", "0d", F.logsumexp, sp.logsumexp, rn())
# rows with equal maxima: the gradient splits evenly among them (fixed inputs: no draw from
# the shared generator, so the cases after these keep their inputs)
add_case("logsumexp", "equal-maxima", lambda a: F.logsumexp(a, axis=-1),
         lambda a: sp.logsumexp(a, axis=-1),
         np.array([[0.5, 0.5, 0.5, 0.5], [-3.0, -3.0, -3.0, -3.0], [2.0, 2.0, -1.0, 2.0]]))


@torch_table
def _torch_references_logsumexp(torch, add):
    """Against PyTorch autograd: logsumexp."""
    rng = np.random.default_rng(9906)
    case = add  # float64

    rn = partial(helpers.rn, rng)

    def _dims(axis, ndim):
        return tuple(range(ndim)) if axis is None else axis

    for ax, kd in [(None, False), (1, True), ((0, 2), False)]:
        case("logsumexp", f"axis={ax}-kd={kd}",
             lambda a, ax=ax, kd=kd: F.logsumexp(a, axis=ax, keepdims=kd),
             lambda a, ax=ax, kd=kd: torch.logsumexp(a, dim=_dims(ax, a.ndim), keepdim=kd),
             rn(2, 3, 4) * 3)


# ---- matrix norms beyond Frobenius (ops/matrix_norms.py; backward.md §41) ---------------------
_rng_m = np.random.default_rng(2611)  # their own inputs: the cases above keep theirs


def _matrix_norm_ref(x, ord, axes=(-2, -1), keepdims=False):
    """From the definitions: the singular values as the square roots of AᵀA's eigenvalues
    (eigvalsh, not an SVD), the ±1 / ±inf norms from explicit column / row sums."""
    a = np.moveaxis(x, axes, (-2, -1))
    if ord in (2, -2, "nuc"):
        a2 = a if a.shape[-2] >= a.shape[-1] else np.swapaxes(a, -1, -2)  # the smaller Gram
        sv = np.sqrt(np.clip(np.linalg.eigvalsh(np.swapaxes(a2, -1, -2) @ a2), 0, None))
        out = sv.sum(-1) if ord == "nuc" else sv.max(-1) if ord == 2 else sv.min(-1)
    else:
        sums = np.abs(a).sum(axis=-1 if np.isinf(ord) else -2)
        out = sums.max(-1) if ord > 0 else sums.min(-1)
    if keepdims:
        out = np.expand_dims(out, tuple(sorted(ax % x.ndim for ax in axes)))
    return out


for ord in (2, -2, "nuc", 1, -1, np.inf, -np.inf):
    for label, shape, axes, kd in [("3x4", (3, 4), None, False),
                                   ("batch-axes=(2,0)-keepdims", (4, 2, 3), (2, 0), True),
                                   ("5x2-axes=(-1,-2)", (2, 5, 2), (-1, -2), False)]:
        x = _rng_m.standard_normal(shape)
        x = np.where(x >= 0, 1.0, -1.0) * (np.abs(x) + 0.1)  # |x| kinks out of reach
        add_case("norm", f"matrix-ord={ord}-{label}",
                 lambda a, o=ord, ax=axes, kd=kd: F.norm(a, ord=o, axis=ax, keepdims=kd),
                 lambda a, o=ord, ax=axes, kd=kd: _matrix_norm_ref(
                     a, o, (-2, -1) if ax is None else ax, kd), x)


@torch_table
def _torch_matrix_norms(torch, add):
    """The matrix norms against torch.linalg.matrix_norm in float64 and float32 (random
    matrices: distinct singular values and sums), stacked, with axis pairs in either order;
    and the degenerate cases where the choice of subgradient shows: an identity (every
    singular value tied), a diagonal with a tied top pair, equal column and row sums."""
    rng = np.random.default_rng(2612)
    for ord in (2, -2, "nuc", 1, -1, np.inf, -np.inf):
        for label, shape, axes in [("3x4", (3, 4), (-2, -1)), ("batch-(2,0)", (4, 2, 3), (2, 0)),
                                   ("batch-(-1,-2)", (2, 5, 2), (-1, -2))]:
            add("norm", f"matrix-ord={ord}-{label}",
                lambda a, o=ord, ax=axes: F.norm(a, ord=o, axis=ax),
                lambda a, o=ord, ax=axes: torch.linalg.matrix_norm(a, ord=o, dim=ax),
                rng.standard_normal(shape), dtypes=(np.float64, np.float32),
                close=helpers.close_32_ulps)
        for label, x in [("identity", np.eye(3)), ("tied-top", np.diag([3.0, -3.0, 1.0])),
                         ("tied-sums", np.array([[1.0, -2.0], [-2.0, 1.0]]))]:
            add("norm", f"matrix-ord={ord}-degenerate-{label}",
                lambda a, o=ord: F.norm(a, ord=o), lambda a, o=ord: torch.linalg.matrix_norm(
                    a, ord=o), x)
