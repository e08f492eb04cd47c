"""Cases for minigrad/ops/reduce.py: every axis form, keepdims, ddof."""
from __future__ import annotations

import numpy as np
import scipy.special as sp

import minigrad as mg
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
                     rn((2, 3, 4)))
        for ddof in (0, 1):
            add_case("var", f"{label}-ddof={ddof}",
                     lambda a, ax=axis, kd=kd, dd=ddof: F.var(a, axis=ax, ddof=dd, keepdims=kd),
                     lambda a, ax=axis, kd=kd, dd=ddof: np.var(a, axis=ax, ddof=dd, keepdims=kd),
                     rn((2, 3, 4)))
for name in ("sum", "mean", "max", "min", "var"):
    f, npf = getattr(F, name), getattr(np, name)
    add_case(name, "0d", lambda a, f=f: f(a), lambda a, npf=npf: npf(a), rn(()))
    add_case(name, "1d-axis0", lambda a, f=f: f(a, axis=0), lambda a, npf=npf: npf(a, axis=0),
             rn((5,)))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: sum, mean, max, min, var (ties for max/min)."""
    rng = np.random.default_rng(9902)

    case = add  # float64

    def rn(*shape):
        return np.asarray(rng.standard_normal(shape))

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
