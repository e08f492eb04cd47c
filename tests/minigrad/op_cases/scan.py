"""Cases for minigrad/ops/scan.py: every axis form, zeros in cumprod (one and two per lane;
cumprod is linear in each input, so finite differences are exact there too), large values in
logcumsumexp. References are explicit loops over the prefixes, not NumPy's scans."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np
import scipy.special as sp

from minigrad import F

from .base import _sid, add_case, torch_table

_rng = np.random.default_rng(1403)  # this family's own inputs (see base.py)
rn = partial(helpers.rn, _rng)


def _prefixes(reduce):
    """out[..., i, ...] = reduce(a[..., :i+1, ...]) along ``axis`` (a.ravel() for None)."""
    def scan(a, axis=None):
        if axis is None:
            a, axis = a.reshape(-1), 0
        a = np.moveaxis(a, axis, -1)
        out = np.stack([reduce(a[..., :i + 1]) for i in range(a.shape[-1])], axis=-1)
        return np.moveaxis(out, -1, axis)
    return scan


_cumsum = _prefixes(lambda p: np.sum(p, axis=-1))
_cumprod = _prefixes(lambda p: np.prod(p, axis=-1))
_logcumsumexp = _prefixes(lambda p: sp.logsumexp(p, axis=-1))

for axis, shape in [(None, (3, 4)), (0, (3, 4)), (-1, (2, 3, 4)), (1, (2, 3, 4)), (0, (5,)),
                    (None, ())]:
    label = f"axis={axis}-{_sid(shape)}"
    x = rn(*shape)
    add_case("cumsum", label, lambda a, ax=axis: F.cumsum(a, axis=ax),
             lambda a, ax=axis: _cumsum(a, ax), x)
    add_case("cumprod", label, lambda a, ax=axis: F.cumprod(a, axis=ax),
             lambda a, ax=axis: _cumprod(a, ax), rn(*shape))
    add_case("logcumsumexp", label, lambda a, ax=axis: F.logcumsumexp(a, axis=ax),
             lambda a, ax=axis: _logcumsumexp(a, ax), 3 * rn(*shape))

_zeros = rn(4, 5)
_zeros[0, 2] = 0.0  # one zero in the middle of a row
_zeros[1, 0] = 0.0  # one at the start
_zeros[2, 1] = _zeros[2, 3] = 0.0  # two
_zeros[3, 4] = 0.0  # one at the end
add_case("cumprod", "zeros-axis=1", lambda a: F.cumprod(a, axis=1), lambda a: _cumprod(a, 1),
         _zeros)
add_case("cumprod", "zeros-axis=0", lambda a: F.cumprod(a, axis=0), lambda a: _cumprod(a, 0),
         _zeros.T.copy())
add_case("logcumsumexp", "large", lambda a: F.logcumsumexp(a, axis=-1),
         lambda a: _logcumsumexp(a, -1),
         np.array([[800.0, 801.0, 799.5, -800.0], [-750.0, -751.0, -749.0, -760.0]]),
         gc=dict(atol=1e-6))
# equal values and ties of the running max: the weights e^{m_j - m_i} are 1 across them
add_case("logcumsumexp", "equal", lambda a: F.logcumsumexp(a, axis=-1),
         lambda a: _logcumsumexp(a, -1),
         np.array([[0.5, 0.5, 0.5, 0.5, 0.5], [-2.0, 1.0, 1.0, -2.0, 1.0]]))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: cumsum, cumprod (with zeros), logcumsumexp (large too)."""
    rng = np.random.default_rng(14053)

    case = add  # float64

    rn = partial(helpers.rn, rng)

    _zeros = rn(4, 5)
    _zeros[0, 2] = 0.0
    _zeros[1, 0] = 0.0
    _zeros[2, 1] = _zeros[2, 3] = 0.0

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
