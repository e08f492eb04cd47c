"""Cases for minigrad/ops/reduce.py: every axis form, keepdims, ddof."""
from __future__ import annotations

import numpy as np
import scipy.special as sp

import minigrad as mg
from minigrad import F

from .base import _rng, _sid, add_case, away, pos, rn, separated  # noqa: F401


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
