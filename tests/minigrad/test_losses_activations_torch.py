"""The activations and losses of ops/activations.py and ops/losses.py against PyTorch autograd.

Values and gradients (random cotangent) in float64 and float32, for every reduction and
every weight / pos_weight / ignore_index combination, at the kinks (where each op's gradient
is torch's convention), at torch's softplus threshold, and for large inputs. Tolerances come
from the dtype: 32 ulps of the largest magnitude compared (tests/ulps.py). Skipped
without torch.

Layouts: minigrad's cross_entropy has the classes last, torch's on axis 1 (3-D logits are
permuted for torch); nll_loss has them on axis 1 in both.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from ulps import assert_close_ulps

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(1415)
CASES = []
REDUCTIONS = ("mean", "sum", "none")


def rn(*shape, scale=1.0):
    return np.asarray(rng.standard_normal(shape) * scale)


def case(label, mg_fn, t_fn, *arrays):
    """Every floating array is a differentiable input; labels are passed as they are."""
    CASES.append(pytest.param(mg_fn, t_fn, arrays, id=label))


def tw(w, like):
    """A NumPy weight as a torch tensor of ``like``'s dtype (torch does not promote them)."""
    return None if w is None else torch.as_tensor(w, dtype=like.dtype)


def close(got, want, dtype):
    """Within 32 ulps of the dtype at the largest magnitude compared (tests/ulps.py). Measured
    on this machine: at most 2.9 ulps over every case below, float32 and float64."""
    assert_close_ulps(got, np.asarray(want, dtype=np.float64).astype(dtype), 32, dtype=dtype)


KINK = np.array([-2.0, -1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 2.0])
BIG = np.array([-100.0, -30.0, -20.0, 20.0, 30.0, 100.0])
# ---- activations ----------------------------------------------------------------------------
case("softplus", F.softplus, TF.softplus, np.concatenate([rn(10, scale=3), BIG]))
for beta, thr in [(2.0, 5.0), (0.5, 20.0), (-1.0, 3.0), (1.0, 0.0)]:
    x = np.concatenate([rn(8, scale=4), [thr / beta, np.nextafter(thr / beta, np.inf), 0.0]])
    case(f"softplus-beta={beta}-threshold={thr}",
         lambda a, b=beta, t=thr: F.softplus(a, beta=b, threshold=t),
         lambda a, b=beta, t=thr: TF.softplus(a, beta=b, threshold=t), x)
case("silu", F.silu, TF.silu, np.concatenate([rn(10, scale=3), BIG, KINK]))
case("gelu", F.gelu, TF.gelu, np.concatenate([rn(10, scale=3), [-8.0, -5.0, 0.0, 5.0, 8.0]]))
case("gelu-tanh", lambda a: F.gelu(a, approximate="tanh"),
     lambda a: TF.gelu(a, approximate="tanh"), rn(3, 4, scale=2))
for slope in (0.01, 0.2, -0.3, 1.5):
    case(f"leaky_relu-{slope}", lambda a, s=slope: F.leaky_relu(a, s),
         lambda a, s=slope: TF.leaky_relu(a, s), np.concatenate([rn(6), KINK]))
for alpha in (1.0, 0.3, 2.0):
    case(f"elu-{alpha}", lambda a, al=alpha: F.elu(a, al), lambda a, al=alpha: TF.elu(a, al),
         np.concatenate([rn(6, scale=3), KINK, BIG]))
case("selu", F.selu, TF.selu, np.concatenate([rn(6, scale=3), KINK, BIG]))
case("log_sigmoid", F.log_sigmoid, TF.logsigmoid, np.concatenate([rn(6, scale=3), KINK, BIG]))
case("hardtanh", F.hardtanh, TF.hardtanh, np.concatenate([rn(6, scale=2), KINK]))
case("hardtanh-bounds", lambda a: F.hardtanh(a, -0.5, 2.0), lambda a: TF.hardtanh(a, -0.5, 2.0),
     np.concatenate([rn(6, scale=2), KINK]))
for axis in (-1, 0, 1):
    case(f"softmin-axis={axis}", lambda a, ax=axis: F.softmin(a, axis=ax),
         lambda a, ax=axis: TF.softmin(a, dim=ax), rn(2, 3, 4, scale=2))

# ---- elementwise losses ---------------------------------------------------------------------
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

# ---- binary cross-entropy with logits -------------------------------------------------------
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

# ---- nll_loss and cross_entropy with weight and ignore_index ---------------------------------
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
                         a, torch.from_numpy(y), weight=tw(w, a), reduction=r, label_smoothing=ls),
                     rn(6, 5, scale=2))
    _y4 = rng.integers(0, 3, (2, 4, 2))
    _y4[0, 0, 0] = _y4[1, 2, 1] = 1  # class 1 is ignore_index here: inside [0, C)
    case(f"nll_loss-4d-weight-ignore=1-{red}",
         lambda a, r=red: F.nll_loss(a, _y4, weight=_wc[:3], ignore_index=1, reduction=r),
         lambda a, r=red: TF.nll_loss(a, torch.from_numpy(_y4), weight=tw(_wc[:3], a),
                                      ignore_index=1, reduction=r), rn(2, 3, 4, 2))
    case(f"nll_loss-1d-{red}", lambda a, r=red: F.nll_loss(a, np.array(3), reduction=r),
         lambda a, r=red: TF.nll_loss(a, torch.tensor(3), reduction=r), rn(5))
    # cross_entropy on (B, T, C) here is (B, C, T) for torch
    _y3 = np.array([[1, -100, 4], [0, 2, 2]])
    for ls in (0.0, 0.2):
        case(f"cross_entropy-3d-weight-ignore-{red}-ls={ls}",
             lambda a, r=red, ls=ls: F.cross_entropy(a, _y3, weight=_wc, reduction=r,
                                                     label_smoothing=ls),
             lambda a, r=red, ls=ls: TF.cross_entropy(
                 a.permute(0, 2, 1), torch.from_numpy(_y3), weight=tw(_wc, a),
                 reduction=r, label_smoothing=ls), rn(2, 3, 5))
        case(f"cross_entropy-soft-weight-{red}-ls={ls}",
             lambda a, t, r=red, ls=ls: F.cross_entropy(a, t, weight=_wc, reduction=r,
                                                        label_smoothing=ls),
             lambda a, t, r=red, ls=ls: TF.cross_entropy(a, t, weight=tw(_wc, a),
                                                         reduction=r, label_smoothing=ls),
             rn(4, 5), rng.dirichlet(np.ones(5), 4))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mg_fn,t_fn,arrays", CASES)
def test_matches_torch_autograd(mg_fn, t_fn, arrays, dtype):
    def cast(a):
        return a.astype(dtype) if a.dtype.kind == "f" else a

    mts = [mg.Tensor(cast(a), requires_grad=True) if a.dtype.kind == "f" else a for a in arrays]
    tts = [torch.tensor(cast(a), requires_grad=True) if a.dtype.kind == "f" else torch.as_tensor(a)
           for a in arrays]
    # no overflow, no 0/0 outside the documented nan cases (underflow to 0 is expected)
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        try:
            out = mg_fn(*mts)
        except FloatingPointError as e:
            pytest.fail(f"a NumPy floating-point warning in the forward: {e}")
    tout = t_fn(*tts)
    assert out.dtype == dtype and out.shape == tuple(tout.shape)
    close(out.data, tout.detach().numpy(), dtype)
    cot = np.random.default_rng(5).standard_normal(out.shape).astype(dtype)
    out.backward(cot)
    tout.backward(torch.from_numpy(cot))
    for m, t in zip(mts, tts):
        if isinstance(m, mg.Tensor):
            assert m.grad is not None and m.grad.dtype == dtype
            close(m.grad, t.grad.numpy(), dtype)
