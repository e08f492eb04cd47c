"""Cases for minigrad/ops/activations.py: softplus, silu, gelu, gelu_tanh, leaky_relu, elu,
selu, log_sigmoid, hardtanh, softmax, log_softmax, softmin, mish, hardswish, hardsigmoid,
celu, softsign. References written from the formulas in NumPy/SciPy (the
textbook forms, not the stable ones the ops use: the inputs here are moderate)."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np
import scipy.special as sp

from minigrad import F

from .base import _sid, add_case, torch_table
from .base import rn as shared_rn

_rng = np.random.default_rng(1414)  # this family's own inputs (see base.py)
rn = partial(helpers.rn, _rng, scale=2.0)


def off(shape, points=(0.0,), gap=0.05, scale=2.0):
    """Normals at least ``gap`` from each of ``points`` (kinks and switches): a central
    difference must not straddle one."""
    x = rn(*shape, scale=scale)
    for p in points:
        near = np.abs(x - p) < gap
        x = np.where(near, p + np.where(x >= p, gap, -gap) * 2, x)
    return x


def np_softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log(1.0 + np.exp(beta * x)) / beta)


for s in [(), (7,), (2, 3, 4)]:
    add_case("softplus", _sid(s), F.softplus, np_softplus, rn(*s))
add_case("softplus", "beta2-threshold1.5",
         lambda x: F.softplus(x, beta=2.0, threshold=1.5),
         lambda x: np_softplus(x, 2.0, 1.5), off((4, 5), points=(0.75,)))
add_case("softplus", "beta0.5-large", lambda x: F.softplus(x, 0.5),
         lambda x: np_softplus(x, 0.5), off((9,), points=(40.0,), scale=30.0))

for s in [(), (6,), (2, 3, 4)]:
    add_case("silu", _sid(s), F.silu, lambda x: x / (1.0 + np.exp(-x)), rn(*s))
    add_case("gelu", _sid(s), F.gelu, lambda x: 0.5 * x * (1.0 + sp.erf(x / np.sqrt(2.0))), rn(*s))
add_case("gelu", "tanh", lambda x: F.gelu(x, approximate="tanh"),
         lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
         rn(3, 4))

for slope in (0.01, 0.3, -0.5):
    add_case("leaky_relu", f"slope={slope}", lambda x, s=slope: F.leaky_relu(x, s),
             lambda x, s=slope: np.where(x > 0, x, s * x), off((3, 5)))
for alpha in (1.0, 0.4):
    add_case("elu", f"alpha={alpha}", lambda x, a=alpha: F.elu(x, alpha=a),
             lambda x, a=alpha: np.where(x > 0, x, a * (np.exp(x) - 1.0)), off((4, 5)))
_L, _A = 1.0507009873554804934, 1.6732632423543772848  # the SELU paper's λ and α
for s in [(5,), (2, 3, 4)]:
    add_case("selu", _sid(s), F.selu, lambda x: _L * np.where(x > 0, x, _A * (np.exp(x) - 1)),
             off(s))
    add_case("log_sigmoid", _sid(s), F.log_sigmoid, lambda x: -np.log(1.0 + np.exp(-x)), rn(*s))
add_case("log_sigmoid", "wide", F.log_sigmoid, lambda x: -np.log1p(np.exp(-x)),
         rn(8, scale=10.0))

add_case("hardtanh", "default", F.hardtanh, lambda x: np.clip(x, -1.0, 1.0),
         off((4, 5), points=(-1.0, 1.0)))
add_case("hardtanh", "bounds", lambda x: F.hardtanh(x, min_val=-0.5, max_val=2.0),
         lambda x: np.minimum(np.maximum(x, -0.5), 2.0), off((3, 4), points=(-0.5, 2.0)))
for axis in (-1, 0, 1):
    add_case("softmin", f"axis={axis}", lambda x, ax=axis: F.softmin(x, axis=ax),
             lambda x, ax=axis: np.exp(-x) / np.exp(-x).sum(axis=ax, keepdims=True),
             rn(2, 3, 4, scale=1.0))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: one case each (every argument and the kinks:
    ops/test_activations.py)."""
    TF = torch.nn.functional
    rng = np.random.default_rng(9907)

    case = add  # float64

    rn = partial(helpers.rn, rng)

    for name, tf in [("softplus", TF.softplus), ("silu", TF.silu), ("gelu", TF.gelu),
                     ("leaky_relu", TF.leaky_relu), ("elu", TF.elu), ("selu", TF.selu),
                     ("log_sigmoid", TF.logsigmoid), ("hardtanh", TF.hardtanh),
                     ("softmin", lambda a: TF.softmin(a, dim=-1))]:
        case(name, "3d", getattr(F, name), tf, rn(2, 3, 4) * 3)


@torch_table
def _torch_every_argument(torch, add):
    """Every argument against PyTorch autograd, in float64 and float32: at the kinks (where
    each op's gradient is torch's convention), at torch's softplus threshold, and for large
    inputs."""
    TF = torch.nn.functional
    rng = np.random.default_rng(1415)
    OPS = ("softplus", "silu", "gelu", "leaky_relu", "elu", "selu", "log_sigmoid",
           "hardtanh", "softmin")

    rn = partial(helpers.rn, rng)

    def case(label, fn, torch_fn, *arrays):
        """``label`` starts with the op's name; float64 and float32, within 32 ulps, and no
        floating-point warning in the forward."""
        op = max((o for o in OPS if label.startswith(o)), key=len)
        add(op, label[len(op) + 1:] or "plain", fn, torch_fn, *arrays,
            dtypes=(np.float64, np.float32), close=helpers.close_32_ulps, fp_strict=True)

    KINK = np.array([-2.0, -1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 2.0])
    BIG = np.array([-100.0, -30.0, -20.0, 20.0, 30.0, 100.0])
    # activations
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


# ---- gelu_tanh and the softmax family (inputs from the shared generator) ---------------
for axis in [-1, 0, 1]:
    add_case("softmax", f"axis={axis}", lambda a, ax=axis: F.softmax(a, axis=ax),
             lambda a, ax=axis: sp.softmax(a, axis=ax), shared_rn(2, 3, 4) * 2)
    add_case("log_softmax", f"axis={axis}", lambda a, ax=axis: F.log_softmax(a, axis=ax),
             lambda a, ax=axis: sp.log_softmax(a, axis=ax), shared_rn(2, 3, 4) * 2)
add_case("softmax", "1d", F.softmax, sp.softmax, shared_rn(5))
add_case("log_softmax", "1d", F.log_softmax, sp.log_softmax, shared_rn(5))


def np_gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


for s in [(), (7,), (2, 3, 4)]:
    add_case("gelu_tanh", _sid(s), F.gelu_tanh, np_gelu, shared_rn(*s) * 2)


@torch_table
def _torch_references_gelu_tanh_and_softmax(torch, add):
    """Against PyTorch autograd: gelu_tanh, softmax and log_softmax."""
    TF = torch.nn.functional
    rng = np.random.default_rng(9905)
    case = add  # float64

    rn = partial(helpers.rn, rng)

    for ax in (-1, 0, 1):
        case("softmax", f"axis={ax}", lambda a, ax=ax: F.softmax(a, axis=ax),
             lambda a, ax=ax: torch.softmax(a, dim=ax), rn(2, 3, 4) * 3)
        case("log_softmax", f"axis={ax}", lambda a, ax=ax: F.log_softmax(a, axis=ax),
             lambda a, ax=ax: torch.log_softmax(a, dim=ax), rn(2, 3, 4) * 3)
    case("gelu_tanh", "3d", F.gelu_tanh, lambda x: TF.gelu(x, approximate="tanh"), rn(2, 3, 4) * 3)


# ---- mish, hardswish, hardsigmoid, celu, softsign (docs/backward.md §40) ----------------
for s in [(), (7,), (2, 3, 4)]:
    add_case("mish", _sid(s), F.mish, lambda x: x * np.tanh(np.log(1.0 + np.exp(x))), rn(*s))
    add_case("softsign", _sid(s), F.softsign, lambda x: np.sign(x) * (1.0 - 1.0 / (1.0 + np.abs(x))),
             rn(*s))
for s in [(5,), (3, 4)]:  # the kinks at ±3 kept out of the central difference
    add_case("hardswish", _sid(s), F.hardswish,
             lambda x: np.where(x <= -3, 0.0, np.where(x >= 3, x, x * (x + 3.0) / 6.0)),
             off(s, points=(-3.0, 3.0), scale=3.0))
    add_case("hardsigmoid", _sid(s), F.hardsigmoid,
             lambda x: np.where(x <= -3, 0.0, np.where(x >= 3, 1.0, (x + 3.0) / 6.0)),
             off(s, points=(-3.0, 3.0), scale=3.0))
for alpha in (1.0, 0.5, 2.5):
    add_case("celu", f"alpha={alpha}", lambda x, a=alpha: F.celu(x, alpha=a),
             lambda x, a=alpha: np.maximum(x, 0.0) + np.minimum(0.0, a * (np.exp(x / a) - 1.0)),
             off((3, 4)))


@torch_table
def _torch_more_activations(torch, add):
    """mish, hardswish, hardsigmoid, celu, softsign against PyTorch autograd in float64 and
    float32: on the kinks (±3 for the hard pair, 0 for celu), beyond them and for large |x|."""
    TF = torch.nn.functional
    rng = np.random.default_rng(1416)
    rn = partial(helpers.rn, rng)
    KINKS = np.array([-3.0, 3.0, -0.0, 0.0, np.nextafter(-3.0, 0), np.nextafter(3.0, 0),
                      np.nextafter(-3.0, -4), np.nextafter(3.0, 4), -6.0, 6.0])
    BIG = np.array([-100.0, -30.0, -20.0, 20.0, 30.0, 100.0])

    def sixth_in_float32(got, want, dtype):
        """torch's hardsigmoid backward multiplies by 1.0f/6 in every dtype, so its float64
        gradient is off by 3e-8 relative (0.16666667163 where minigrad has 1/6): within 4
        float32 ulps in float64 (float32 itself: 32 ulps)."""
        helpers.close_32_ulps(got, want, np.float32 if dtype == np.float64 else dtype)

    def case(op, label, fn, torch_fn, x):
        add(op, label, fn, torch_fn, x, dtypes=(np.float64, np.float32),
            close=sixth_in_float32 if op == "hardsigmoid" else helpers.close_32_ulps,
            fp_strict=True)

    for name, tf in [("mish", TF.mish), ("hardswish", TF.hardswish),
                     ("hardsigmoid", TF.hardsigmoid), ("celu", TF.celu),
                     ("softsign", TF.softsign)]:
        case(name, "kinks", getattr(F, name), tf, np.concatenate([rn(8, scale=3), KINKS, BIG]))
        case(name, "3d", getattr(F, name), tf, rn(2, 3, 4, scale=3))
    for alpha in (0.5, 2.0, -1.5):
        case("celu", f"alpha={alpha}", lambda a, al=alpha: F.celu(a, al),
             lambda a, al=alpha: TF.celu(a, al), np.concatenate([rn(8, scale=2), KINKS[:4]]))
