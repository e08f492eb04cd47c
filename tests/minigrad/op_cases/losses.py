"""Cases for minigrad/ops/losses.py: mse_loss, l1_loss, smooth_l1_loss,
binary_cross_entropy_with_logits, nll_loss, and cross_entropy's weight= and ignore_index=
(its other cases stay in fused.py). References written from torch's documented formulas,
row by row in NumPy/SciPy. Class weights and pos_weight are constants (closures): they have
no gradient; every floating input of a case does."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np
import scipy.special as sp

from minigrad import F

from .base import add_case, torch_table

_rng = np.random.default_rng(2814)  # this family's own inputs (see base.py)
REDUCTIONS = ("mean", "sum", "none")


rn = partial(helpers.rn, _rng)


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

# the class axis: cross_entropy(axis=1) is torch's (N, C, d) layout, nll_loss(axis=-1) takes
# (N, d, C); references move the axis to where np_ce / np_nll read it (own generator, so the
# cases above keep their inputs)
_gen = np.random.default_rng(2815)
_ya = np.array([[1, -100, 4], [0, 2, 2]])  # (2, 3) for logits (2, 5, 3), classes on axis 1
for red in REDUCTIONS:
    add_case("cross_entropy", f"axis=1-weight-ignore-{red}-ls=0.1",
             lambda z, r=red: F.cross_entropy(z, _ya, weight=_wc, reduction=r,
                                              label_smoothing=0.1, axis=1),
             lambda z, r=red: np_ce(np.moveaxis(z, 1, -1), _ya, weight=_wc, reduction=r,
                                    label_smoothing=0.1),
             np.asarray(_gen.standard_normal((2, 5, 3))))
    add_case("cross_entropy", f"axis=1-soft-{red}",
             lambda z, t, r=red: F.cross_entropy(z, t, reduction=r, axis=1),
             lambda z, t, r=red: np_ce(np.moveaxis(z, 1, -1), np.moveaxis(t, 1, -1), reduction=r),
             np.asarray(_gen.standard_normal((2, 5, 3))),
             np.asarray(_gen.uniform(0.1, 1.0, (2, 5, 3))))
    add_case("nll_loss", f"axis=-1-weight-ignore-{red}",
             lambda a, r=red: F.nll_loss(a, _ya, weight=_wc, reduction=r, axis=-1),
             lambda a, r=red: np_nll(np.moveaxis(a, -1, 1), _ya, weight=_wc, reduction=r),
             np.asarray(_gen.standard_normal((2, 3, 5))))
add_case("cross_entropy", "axis=0", lambda z: F.cross_entropy(z, np.array([3, 0, 4, 4]), axis=0),
         lambda z: np_ce(z.T, np.array([3, 0, 4, 4])), np.asarray(_gen.standard_normal((5, 4))))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: one case each (every reduction, weight and ignore_index:
    ops/test_losses.py)."""
    TF = torch.nn.functional
    rng = np.random.default_rng(9908)

    case = add  # float64

    rn = partial(helpers.rn, rng)

    def _ti(a):  # an index / label array as a torch tensor
        return torch.as_tensor(a)

    for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits"):
        case(name, "mean-3x4", getattr(F, name), getattr(TF, name), rn(3, 4) * 2,
             rng.uniform(0, 1, (3, 4)))
    _nll_y, _nll_w = np.array([2, -100, 0, 1]), np.array([0.5, 2.0, 1.5])
    case("nll_loss", "weight-ignore", lambda a: F.nll_loss(a, _nll_y, weight=_nll_w),
         lambda a: TF.nll_loss(a, _ti(_nll_y), weight=torch.from_numpy(_nll_w)), rn(4, 3))


@torch_table
def _torch_every_argument(torch, add):
    """Every reduction and every weight / pos_weight / ignore_index combination against
    PyTorch autograd, float64 and float32, ties and kinks included. Layouts: minigrad's
    cross_entropy has the classes last, torch's on axis 1 (3-D logits are permuted for
    torch); nll_loss has them on axis 1 in both."""
    TF = torch.nn.functional
    rng = np.random.default_rng(1416)
    REDUCTIONS = ("mean", "sum", "none")
    OPS = ("mse_loss", "l1_loss", "smooth_l1_loss", "nll_loss", "cross_entropy",
           "bce")  # bce: binary_cross_entropy_with_logits

    rn = partial(helpers.rn, rng)

    def case(label, fn, torch_fn, *arrays):
        """``label`` starts with the op's name; float64 and float32, within 32 ulps, and no
        floating-point warning in the forward."""
        op = max((o for o in OPS if label.startswith(o)), key=len)
        name = "binary_cross_entropy_with_logits" if op == "bce" else op
        add(name, label[len(op) + 1:] or "plain", fn, torch_fn, *arrays,
            dtypes=(np.float64, np.float32), close=helpers.close_32_ulps, fp_strict=True)

    def tw(w, like):
        """A NumPy weight as a torch tensor of ``like``'s dtype (torch does not promote them)."""
        return None if w is None else torch.as_tensor(w, dtype=like.dtype)

    # elementwise losses
    _ties = (np.array([0.0, 1.0, -1.0, 0.3, 2.0, -2.0]), np.array([0.0, 0.0, 0.0, 0.3, 1.0, -1.0]))
    for red in REDUCTIONS:
        for name, tf in [("mse_loss", TF.mse_loss), ("l1_loss", TF.l1_loss)]:
            case(f"{name}-{red}", lambda a, b, f=getattr(F, name), r=red: f(a, b, reduction=r),
                 lambda a, b, f=tf, r=red: f(a, b, reduction=r), rn(3, 4), rn(3, 4))
            case(f"{name}-{red}-ties", lambda a, b, f=getattr(F, name), r=red: f(a, b, reduction=r),
                 lambda a, b, f=tf, r=red: f(a, b, reduction=r), *_ties)
        for beta in (1.0, 0.5, 0.0):  # d = 0, ±1, ±beta exactly in _ties
            case(f"smooth_l1_loss-{red}-beta={beta}",
                 lambda a, b, r=red, be=beta: F.smooth_l1_loss(a, b, reduction=r, beta=be),
                 lambda a, b, r=red, be=beta: TF.smooth_l1_loss(a, b, reduction=r, beta=be),
                 np.concatenate([rn(8), _ties[0], [0.5, -0.5]]),
                 np.concatenate([rn(8), _ties[1], [0.0, 0.0]]))

    # binary cross-entropy with logits
    _x = np.concatenate([rn(3, 4, scale=3), [[100.0, -100.0, 30.0, -30.0]]])  # (4, 4)
    _y = np.concatenate([rng.uniform(0, 1, (3, 4)), [[0.0, 1.0, 1.0, 0.0]]])
    _hard_y = np.array([[1.0, 0.0, 0.0, 1.0]] * 4)  # the wrong class at ±100: loss 100 each
    _pw, _w = np.array([0.5, 2.0, 1.0, 3.0]), rng.uniform(0.2, 2.0, (4, 1))
    for red in REDUCTIONS:
        for label, kw in [("plain", {}), ("pos_weight", dict(pos_weight=_pw)),
                          ("weight", dict(weight=_w)),
                          ("weight+pos_weight", dict(weight=_w, pos_weight=_pw))]:
            for tag, y in (("soft", _y), ("hard", _hard_y)):
                case(f"bce-{label}-{red}-{tag}",
                     lambda a, b, kw=kw, r=red: F.binary_cross_entropy_with_logits(
                         a, b, reduction=r, **kw),
                     lambda a, b, kw=kw, r=red: TF.binary_cross_entropy_with_logits(
                         a, b, reduction=r, **{k: tw(v, a) for k, v in kw.items()}),
                     _x, y)

    # nll_loss and cross_entropy with weight and ignore_index
    _wc = np.array([0.5, 1.0, 2.0, 0.25, 1.5])
    _labels = {"plain": np.array([2, 0, 4, 4, 1, 3]), "ignored": np.array([2, -100, 4, -100, 1, 3]),
               "all-ignored": np.full(6, -100)}
    for red in REDUCTIONS:
        for lname, y in _labels.items():
            for wname, w in (("", None), ("-weight", _wc)):
                case(f"nll_loss-{lname}{wname}-{red}",
                     lambda a, y=y, w=w, r=red: F.nll_loss(a, y, weight=w, reduction=r),
                     lambda a, y=y, w=w, r=red: TF.nll_loss(a, torch.from_numpy(y), weight=tw(w, a),
                                                            reduction=r),
                     rn(6, 5))
                for ls in (0.0, 0.1):
                    case(f"cross_entropy-{lname}{wname}-{red}-ls={ls}",
                         lambda a, y=y, w=w, r=red, ls=ls: F.cross_entropy(
                             a, y, weight=w, reduction=r, label_smoothing=ls),
                         lambda a, y=y, w=w, r=red, ls=ls: TF.cross_entropy(
                             a, torch.from_numpy(y), weight=tw(w, a), reduction=r,
                             label_smoothing=ls),
                         rn(6, 5, scale=2))
        _y4 = rng.integers(0, 3, (2, 4, 2))
        _y4[0, 0, 0] = _y4[1, 2, 1] = 1  # class 1 is ignore_index here: inside [0, C)
        case(f"nll_loss-4d-weight-ignore=1-{red}",
             lambda a, r=red, y=_y4: F.nll_loss(a, y, weight=_wc[:3], ignore_index=1,
                                                 reduction=r),
             lambda a, r=red, y=_y4: TF.nll_loss(a, torch.from_numpy(y), weight=tw(_wc[:3], a),
                                                 ignore_index=1, reduction=r), rn(2, 3, 4, 2))
        case(f"nll_loss-1d-{red}", lambda a, r=red: F.nll_loss(a, np.array(3), reduction=r),
             lambda a, r=red: TF.nll_loss(a, torch.tensor(3), reduction=r), rn(5))
        # cross_entropy on (B, T, C) here is (B, C, T) for torch
        _y3 = np.array([[1, -100, 4], [0, 2, 2]])
        for ls in (0.0, 0.2):
            case(f"cross_entropy-3d-weight-ignore-{red}-ls={ls}",
                 lambda a, r=red, ls=ls, y3=_y3: F.cross_entropy(a, y3, weight=_wc, reduction=r,
                                                                 label_smoothing=ls),
                 lambda a, r=red, ls=ls, y3=_y3: TF.cross_entropy(
                     a.permute(0, 2, 1), torch.from_numpy(y3), weight=tw(_wc, a),
                     reduction=r, label_smoothing=ls), rn(2, 3, 5))
            case(f"cross_entropy-soft-weight-{red}-ls={ls}",
                 lambda a, t, r=red, ls=ls: F.cross_entropy(a, t, weight=_wc, reduction=r,
                                                            label_smoothing=ls),
                 lambda a, t, r=red, ls=ls: TF.cross_entropy(a, t, weight=tw(_wc, a),
                                                             reduction=r, label_smoothing=ls),
                 rn(4, 5), rng.dirichlet(np.ones(5), 4))
        # the class axis: axis=1 is torch's own layout, nothing permuted
        case(f"cross_entropy-axis=1-weight-ignore-{red}",
             lambda a, r=red, y3=_y3: F.cross_entropy(a, y3, weight=_wc, reduction=r,
                                              label_smoothing=0.1, axis=1),
             lambda a, r=red, y3=_y3: TF.cross_entropy(a, torch.from_numpy(y3), weight=tw(_wc, a),
                                               reduction=r, label_smoothing=0.1), rn(2, 5, 3))
        case(f"cross_entropy-axis=1-soft-{red}",
             lambda a, t, r=red: F.cross_entropy(a, t, reduction=r, axis=1),
             lambda a, t, r=red: TF.cross_entropy(a, t, reduction=r), rn(2, 5, 3),
             np.moveaxis(rng.dirichlet(np.ones(5), (2, 3)), -1, 1))
        case(f"nll_loss-axis=-1-weight-ignore-{red}",
             lambda a, r=red, y3=_y3: F.nll_loss(a, y3, weight=_wc, reduction=r, axis=-1),
             lambda a, r=red, y3=_y3: TF.nll_loss(a.permute(0, 2, 1), torch.from_numpy(y3),
                                          weight=tw(_wc, a), reduction=r), rn(2, 3, 5))


# ---- BCE's weight and pos_weight differentiated; binary_cross_entropy (backward.md §42) ---------
for red in REDUCTIONS:
    add_case("binary_cross_entropy_with_logits", f"weight,pos_weight-differentiated-{red}",
             lambda x, y, w, p, r=red: F.binary_cross_entropy_with_logits(
                 x, y, weight=w, pos_weight=p, reduction=r),
             lambda x, y, w, p, r=red: np_bce(x, y, weight=w, pos_weight=p, reduction=r),
             rn(3, 4) * 2, _rng.uniform(0, 1, (3, 4)), _rng.uniform(0.2, 2.0, (3, 1)),
             _rng.uniform(0.5, 3.0, (4,)))


def np_bce_probabilities(p, y, weight=None, reduction="mean"):
    """-w [y log p + (1 - y) log(1 - p)] (p in (0.02, 0.98): the -100 floor far away)."""
    w = 1.0 if weight is None else weight
    return _reduce(-w * (y * np.log(p) + (1.0 - y) * np.log(1.0 - p)), reduction)


for red in REDUCTIONS:
    add_case("binary_cross_entropy", f"soft-{red}",
             lambda p, y, r=red: F.binary_cross_entropy(p, y, reduction=r),
             lambda p, y, r=red: np_bce_probabilities(p, y, reduction=r),
             _rng.uniform(0.02, 0.98, (3, 4)), _rng.uniform(0, 1, (3, 4)))
    add_case("binary_cross_entropy", f"weight-{red}",
             lambda p, y, w, r=red: F.binary_cross_entropy(p, y, weight=w, reduction=r),
             lambda p, y, w, r=red: np_bce_probabilities(p, y, weight=w, reduction=r),
             _rng.uniform(0.02, 0.98, (2, 3, 4)), _rng.uniform(0, 1, (2, 3, 4)),
             _rng.uniform(0.2, 2.0, (3, 1)))
add_case("binary_cross_entropy", "0d", F.binary_cross_entropy, np_bce_probabilities,
         np.asarray(0.3), np.asarray(0.8))


@torch_table
def _torch_bce_probabilities_and_weights(torch, add):
    """binary_cross_entropy against torch in float64 and float32 (every reduction, a weight,
    probabilities of exactly 0 and 1, where torch floors each log at -100 and the input
    gradient's denominator at 1e-12); the weight and pos_weight gradients, which torch refuses
    to give, against the formula composed from torch's own ops."""
    TF = torch.nn.functional
    rng = np.random.default_rng(1417)

    def case(op, label, fn, torch_fn, *arrays):
        add(op, label, fn, torch_fn, *arrays, dtypes=(np.float64, np.float32),
            close=helpers.close_32_ulps, fp_strict=True)

    p, y, w = rng.uniform(0.02, 0.98, (3, 4)), rng.uniform(0, 1, (3, 4)), rng.uniform(0.2, 2, (3, 1))
    for red in REDUCTIONS:
        case("binary_cross_entropy", f"soft-{red}",
             lambda a, b, r=red: F.binary_cross_entropy(a, b, reduction=r),
             lambda a, b, r=red: TF.binary_cross_entropy(a, b, reduction=r), p, y)
        case("binary_cross_entropy", f"weight-{red}",
             lambda a, b, r=red: F.binary_cross_entropy(a, b, weight=w, reduction=r),
             lambda a, b, r=red: TF.binary_cross_entropy(
                 a, b, weight=torch.as_tensor(w, dtype=a.dtype), reduction=r), p, y)
    # 0 and 1 on both sides, and below e^-100: only the input differentiated (torch's target
    # gradient is the unfloored log(1 - p) - log p there, ±inf at 0 and 1: backward.md §42)
    edge = np.array([0.0, 1.0, 0.0, 1.0, 1e-50, 1 - 1e-12, 0.5, 1e-13])
    edge_y = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.3, 0.7])
    for red in REDUCTIONS:
        case("binary_cross_entropy", f"edges-{red}",
             lambda a, r=red: F.binary_cross_entropy(a, edge_y.astype(a.dtype), reduction=r),
             lambda a, r=red: TF.binary_cross_entropy(
                 a, torch.as_tensor(edge_y, dtype=a.dtype), reduction=r),
             edge)

    sp = TF.softplus
    x, t = rng.normal(0, 2, (3, 4)), rng.uniform(0, 1, (3, 4))
    for red in REDUCTIONS:
        def composed(a, b, ww, pw, r=red):
            loss = ww * (pw * b * sp(-a) + (1 - b) * sp(a))
            return loss if r == "none" else loss.sum() if r == "sum" else loss.mean()

        case("binary_cross_entropy_with_logits", f"weight,pos_weight-differentiated-{red}",
             lambda a, b, ww, pw, r=red: F.binary_cross_entropy_with_logits(
                 a, b, weight=ww, pos_weight=pw, reduction=r),
             composed, x, t, rng.uniform(0.2, 2.0, (3, 1)), rng.uniform(0.5, 3.0, (4,)))
    case("binary_cross_entropy", "weight-differentiated",
         lambda a, b, ww: F.binary_cross_entropy(a, b, weight=ww),
         lambda a, b, ww: (ww * -(b * torch.log(a) + (1 - b) * torch.log1p(-a))).mean(),
         p, y, w)
