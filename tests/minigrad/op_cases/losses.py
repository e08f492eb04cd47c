"""Cases for minigrad/ops/losses.py: mse_loss, l1_loss, smooth_l1_loss,
binary_cross_entropy_with_logits, nll_loss, and cross_entropy's weight= and ignore_index=
(its other cases stay in fused.py). References written from torch's documented formulas,
row by row in NumPy/SciPy. Class weights and pos_weight are constants (closures): they have
no gradient; every floating input of a case does."""
from __future__ import annotations

import numpy as np
import scipy.special as sp

from minigrad import F

from .base import add_case, torch_table

_rng = np.random.default_rng(2814)  # this family's own inputs (see base.py)
REDUCTIONS = ("mean", "sum", "none")


def rn(*shape):
    return np.asarray(_rng.standard_normal(shape))


def _reduce(loss, reduction, count=None):
    if reduction == "none":
        return loss
    n = loss.size if count is None else count
    return loss.sum() if reduction == "sum" else loss.sum() / n


def apart(shape, points, gap=0.05):
    """(x, y) with every difference x - y at least ``gap`` from each of ``points``."""
    x, y = rn(*shape), rn(*shape)
    for p in points:
        d = x - y
        near = np.abs(d - p) < gap
        y = np.where(near, y - np.where(d >= p, 2 * gap, -2 * gap), y)
    return x, y


for red in REDUCTIONS:
    kw = dict(reduction=red)
    add_case("mse_loss", red, lambda a, b, kw=kw: F.mse_loss(a, b, **kw),
             lambda a, b, r=red: _reduce((a - b) ** 2, r), rn(3, 4), rn(3, 4))
    add_case("l1_loss", red, lambda a, b, kw=kw: F.l1_loss(a, b, **kw),
             lambda a, b, r=red: _reduce(np.abs(a - b), r), *apart((3, 4), (0.0,)))
    for beta in (1.0, 0.3):
        add_case("smooth_l1_loss", f"{red}-beta={beta}",
                 lambda a, b, kw=kw, be=beta: F.smooth_l1_loss(a, b, beta=be, **kw),
                 lambda a, b, r=red, be=beta: _reduce(np.where(
                     np.abs(a - b) < be, 0.5 * (a - b) ** 2 / be, np.abs(a - b) - 0.5 * be), r),
                 *apart((4, 5), (0.0, beta, -beta)))
add_case("mse_loss", "0d", F.mse_loss, lambda a, b: (a - b) ** 2, rn(), rn())
add_case("smooth_l1_loss", "beta=0", lambda a, b: F.smooth_l1_loss(a, b, beta=0.0),
         lambda a, b: np.mean(np.abs(a - b)), *apart((6,), (0.0,)))


def np_bce(x, y, weight=None, pos_weight=None, reduction="mean"):
    w = 1.0 if weight is None else weight
    p = 1.0 if pos_weight is None else pos_weight
    sig = 1.0 / (1.0 + np.exp(-x))
    return _reduce(-w * (p * y * np.log(sig) + (1 - y) * np.log(1 - sig)), reduction)


_PW = np.array([0.5, 2.0, 1.0, 3.0])
_W = np.array([[1.0], [0.2], [2.0]])
for red in REDUCTIONS:
    for label, extra in [("plain", {}), ("pos_weight", dict(pos_weight=_PW)),
                         ("weight+pos_weight", dict(weight=_W, pos_weight=_PW))]:
        kw = dict(extra, reduction=red)
        add_case("binary_cross_entropy_with_logits", f"{label}-{red}",
                 lambda x, y, kw=kw: F.binary_cross_entropy_with_logits(x, y, **kw),
                 lambda x, y, kw=kw: np_bce(x, y, **kw),
                 rn(3, 4) * 2, _rng.uniform(0, 1, (3, 4)))  # soft targets: differentiable too
add_case("binary_cross_entropy_with_logits", "3d-pos_weight-0d",
         lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=np.array(1.7)),
         lambda x, y: np_bce(x, y, pos_weight=1.7), rn(2, 3, 2), _rng.uniform(0, 1, (2, 3, 2)))


def np_nll(lp, y, weight=None, ignore_index=-100, reduction="mean"):
    """torch's nll_loss, one target at a time; classes on axis 1 (or the only axis)."""
    lp = lp[None] if lp.ndim == 1 else lp
    y = np.asarray(y)[None] if lp.ndim == 1 or y.ndim == 0 else np.asarray(y)
    C = lp.shape[1]
    w = np.ones(C) if weight is None else weight
    loss = np.zeros(y.shape)
    wsum = 0.0
    for idx in np.ndindex(*y.shape):
        c = y[idx]
        if c != ignore_index:
            loss[idx] = -w[c] * lp[(idx[0], c) + idx[1:]]
            wsum += w[c]
    if reduction == "none":
        return loss.reshape(np.shape(y)) if lp.shape[0] > 1 or y.ndim > 1 else loss[0]
    return loss.sum() if reduction == "sum" else loss.sum() / wsum


_y2 = np.array([1, 0, 3, 3, 2])
_y2_ign = np.array([1, -100, 3, 3, -100])
_y4 = _rng.integers(0, 3, (2, 2, 3))
_y4[0, 1, 2] = _y4[1, 0, 0] = 2  # class 2 is ignored below (an ignore_index inside [0, C))
_w4, _w3 = np.array([0.3, 1.0, 2.5, 0.7]), np.array([1.5, 0.5, 4.0])
for red in REDUCTIONS:
    for label, y, kw, shape in [
        ("2d", _y2, {}, (5, 4)),
        ("2d-weight", _y2, dict(weight=_w4), (5, 4)),
        ("2d-ignore", _y2_ign, {}, (5, 4)),
        ("2d-weight-ignore", _y2_ign, dict(weight=_w4), (5, 4)),
        ("4d-weight-ignore=2", _y4, dict(weight=_w3, ignore_index=2), (2, 3, 2, 3)),
    ]:
        kw = dict(kw, reduction=red)
        add_case("nll_loss", f"{label}-{red}", lambda a, y=y, kw=kw: F.nll_loss(a, y, **kw),
                 lambda a, y=y, kw=kw: np_nll(a, y, **kw), rn(*shape))
add_case("nll_loss", "1d-0d-label", lambda a: F.nll_loss(a, np.array(2)),
         lambda a: np_nll(a, np.array(2)), rn(4))


def np_ce(z, target, reduction="mean", label_smoothing=0.0, weight=None, ignore_index=-100):
    """torch's cross_entropy with class weights (classes last here), one row at a time."""
    C = z.shape[-1]
    w = np.ones(C) if weight is None else weight
    eps = label_smoothing
    lsm = sp.log_softmax(z, axis=-1).reshape(-1, C)
    if target.dtype.kind == "f":
        q = ((1 - eps) * target + eps / C).reshape(-1, C) * w
        return _reduce(-(q * lsm).sum(-1).reshape(z.shape[:-1]), reduction)
    loss, wsum = np.zeros(len(lsm)), 0.0
    for i, c in enumerate(target.reshape(-1)):
        if c != ignore_index:
            q = (1 - eps) * w[c] * np.eye(C)[c] + eps / C * w
            loss[i] = -(q * lsm[i]).sum()
            wsum += w[c]
    return _reduce(loss.reshape(target.shape), reduction, wsum)


_yc = np.array([[2, 0, -100], [4, 4, 1]])
_wc = np.array([0.5, 1.0, 2.0, 0.25, 1.5])
for red in REDUCTIONS:
    for ls in (0.0, 0.2):
        for label, kw in [("weight", dict(weight=_wc)), ("ignore", {}),
                          ("weight-ignore", dict(weight=_wc))]:
            y = _yc if "ignore" in label else np.abs(_yc) % 5
            kw = dict(kw, reduction=red, label_smoothing=ls)
            add_case("cross_entropy", f"{label}-{red}-ls={ls}",
                     lambda z, y=y, kw=kw: F.cross_entropy(z, y, **kw),
                     lambda z, y=y, kw=kw: np_ce(z, y, **kw), rn(2, 3, 5))
        kw = dict(reduction=red, label_smoothing=ls, weight=_wc)
        add_case("cross_entropy", f"soft-weight-{red}-ls={ls}",
                 lambda z, t, kw=kw: F.cross_entropy(z, t, **kw),
                 lambda z, t, kw=kw: np_ce(z, t, **kw), rn(4, 5), sp.softmax(rn(4, 5), axis=-1))
add_case("cross_entropy", "ignore_index=3",
         lambda z: F.cross_entropy(z, np.array([3, 0, 3, 1]), ignore_index=3),
         lambda z: np_ce(z, np.array([3, 0, 3, 1]), ignore_index=3), rn(4, 5))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: one case each (every reduction, weight and ignore_index:
    ops/test_losses.py)."""
    TF = torch.nn.functional
    rng = np.random.default_rng(9908)

    case = add  # float64

    def rn(*shape):
        return np.asarray(rng.standard_normal(shape))

    def _ti(a):  # an index / label array as a torch tensor
        return torch.as_tensor(a)

    for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits"):
        case(name, "mean", getattr(F, name), getattr(TF, name), rn(3, 4) * 2,
             rng.uniform(0, 1, (3, 4)))
    _nll_y, _nll_w = np.array([2, -100, 0, 1]), np.array([0.5, 2.0, 1.5])
    case("nll_loss", "weight-ignore", lambda a: F.nll_loss(a, _nll_y, weight=_nll_w),
         lambda a: TF.nll_loss(a, _ti(_nll_y), weight=torch.from_numpy(_nll_w)), rn(4, 3))
