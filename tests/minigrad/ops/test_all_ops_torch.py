"""Every public op against PyTorch autograd (float64, random cotangent, ~1e-12).

Skipped when torch is not installed. Conventions mapped: cross_entropy has the classes on
the last axis in minigrad and on axis 1 in torch (so 2-D logits here); reductions with ties
use torch.amax/amin; var's ddof is torch's correction. Some cases sit exactly on ties and
kinks on purpose: the subgradient conventions must agree with torch's too, except at clip's
bounds, where torch's convention changed between versions (see the clip cases).
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.ops import PUBLIC_OPS

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(99)
TORCH_CASES: dict[str, list] = {}


def rn(*shape):
    return np.asarray(rng.standard_normal(shape))


def pos(*shape):
    return np.asarray(rng.uniform(0.5, 2.0, shape))


def case(op, label, mg_fn, t_fn, *arrays):
    TORCH_CASES.setdefault(op, []).append(pytest.param(mg_fn, t_fn, arrays, id=f"{op}-{label}"))


def _dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis


def _ti(a):  # an index / label array as a torch tensor
    return torch.as_tensor(a)


# elementwise
for name, tname in [("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "div"),
                    ("maximum", "maximum"), ("minimum", "minimum")]:
    f, tf = getattr(F, name), getattr(torch, tname)
    case(name, "bcast", f, tf, rn(3, 1, 4), rn(5, 4) + (3.0 if name == "div" else 0.0))
    case(name, "0d", f, tf, rn(), rn(2, 3) + (3.0 if name == "div" else 0.0))
_tie_a, _tie_b = np.array([1.0, 2.0, 3.0, -1.0, 0.5]), np.array([1.0, 0.0, 5.0, -1.0, 0.5])
case("maximum", "ties", F.maximum, torch.maximum, _tie_a, _tie_b)
case("minimum", "ties", F.minimum, torch.minimum, _tie_a, _tie_b)
case("pow", "tensor-exp", F.pow, torch.pow, pos(3, 1), rn(4))
case("pow", "zero-base", F.pow, torch.pow, np.array([0.0, 0.0, 0.0, 1.5]),
     np.array([0.0, 1.0, 2.5, 0.0]))
case("pow", "zero-exp", lambda a: a ** 0, lambda a: a ** 0, np.array([0.0, -1.0, 2.0]))
case("pow", "scalar-exp", lambda a: a ** 3, lambda a: a ** 3, rn(2, 3))
case("pow", "half-exp", lambda a: a ** 0.5, lambda a: a ** 0.5, pos(2, 3))
case("pow", "scalar-base", lambda b: 2.0 ** b, lambda b: 2.0 ** b, rn(4))
for name in ("neg", "exp", "tanh", "sigmoid"):
    case(name, "3d", getattr(F, name), getattr(torch, name), rn(2, 3, 4) * 3)
case("log", "pos", F.log, torch.log, pos(3, 4))
case("sqrt", "pos", F.sqrt, torch.sqrt, pos(3, 4))
_kinks = np.array([-1.5, -0.0, 0.0, 0.7, 2.0])
case("abs", "with-zero", F.abs, torch.abs, np.concatenate([rn(6), _kinks]))
case("relu", "with-zero", F.relu, torch.relu, np.concatenate([rn(6), _kinks]))
case("sigmoid", "large", F.sigmoid, torch.sigmoid, np.array([-50.0, -20.0, 0.0, 20.0, 50.0]))
_cond = rng.random((3, 4)) > 0.5
case("where", "bcast", lambda a, b: F.where(_cond, a, b),
     lambda a, b: torch.where(_ti(_cond), a, b), rn(1, 4), rn(3, 1))


def _next_to(*bounds):
    """Each bound's two floating-point neighbours: the closest points off the bound."""
    return [np.nextafter(b, s) for b in bounds for s in (-np.inf, np.inf)]


# Exactly at a clip bound torch's gradient depends on its version (2.13: 1; 2.14.1: 0 for
# number bounds, 1/2 for tensor bounds), so torch is compared off the bounds only, where every
# version agrees, up to the bounds' floating-point neighbours. minigrad's own rule at the
# bounds is tested with hand-derived values in test_clip_convention.py (docs/backward.md §13).
_cx = np.array([-2.0, 0.0, 0.3, 1.7, *_next_to(-0.5, 1.0, 0.0, 0.3)])
case("clip", "both", lambda a: F.clip(a, -0.5, 1.0), lambda a: torch.clamp(a, -0.5, 1.0), _cx)
case("clip", "min-only", lambda a: F.clip(a, 0.0), lambda a: torch.clamp(a, min=0.0),
     _cx[_cx != 0.0])
case("clip", "max-only", lambda a: F.clip(a, None, 0.3), lambda a: torch.clamp(a, max=0.3),
     _cx[_cx != 0.3])
case("clip", "equal-bounds", lambda a: F.clip(a, 0.3, 0.3), lambda a: torch.clamp(a, 0.3, 0.3),
     _cx[_cx != 0.3])
case("clip", "crossed-bounds", lambda a: F.clip(a, 1.0, -0.5),  # all a_max, as np.clip
     lambda a: torch.clamp(a, 1.0, -0.5), _cx)
case("astype", "f64", lambda a: F.astype(a, np.float64), lambda a: a.to(torch.float64), rn(3, 2))
case("astype", "f32-f64", lambda a: F.astype(F.astype(a, np.float32), np.float64),
     lambda a: a.to(torch.float32).to(torch.float64), rn(3, 2))

# reductions (including ties for max/min)
_x_ties = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 5.0, 0.0, 5.0]])
for axis, kd in [(None, False), (1, True), (-1, False), ((0, 1), True), (0, False)]:
    lbl = f"axis={axis}-kd={kd}"
    for name, tf in [("sum", torch.sum), ("mean", torch.mean), ("max", torch.amax),
                     ("min", torch.amin)]:
        case(name, lbl, lambda a, f=getattr(F, name), ax=axis, kd=kd: f(a, axis=ax, keepdims=kd),
             lambda a, tf=tf, ax=axis, kd=kd: tf(a, dim=_dims(ax, a.ndim), keepdim=kd), rn(3, 4))
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

# shape ops
case("reshape", "2d", lambda a: F.reshape(a, (6, 4)), lambda a: a.reshape(6, 4), rn(2, 3, 4))
case("transpose", "none", F.transpose, lambda a: a.permute(2, 1, 0), rn(2, 3, 4))
case("transpose", "axes", lambda a: F.transpose(a, (1, 2, 0)), lambda a: a.permute(1, 2, 0),
     rn(2, 3, 4))
case("permute", "varargs", lambda a: F.permute(a, 2, 0, 1), lambda a: a.permute(2, 0, 1),
     rn(2, 3, 4))
case("swapaxes", "0,-1", lambda a: F.swapaxes(a, 0, -1), lambda a: torch.swapaxes(a, 0, -1),
     rn(2, 3, 4))
case("expand_dims", "1", lambda a: F.expand_dims(a, 1), lambda a: a.unsqueeze(1), rn(3, 4))
case("squeeze", "all", F.squeeze, torch.squeeze, rn(1, 3, 1, 4))
case("squeeze", "dims", lambda a: F.squeeze(a, (0, 2)), lambda a: a.squeeze((0, 2)), rn(1, 3, 1, 4))
case("broadcast_to", "3d", lambda a: F.broadcast_to(a, (2, 3, 4)),
     lambda a: torch.broadcast_to(a, (2, 3, 4)), rn(3, 1))
_rep = np.array([0, 2, 2, 0, 0])
_mask = rng.random((3, 4)) > 0.4
for label, idx in [("slices", (slice(1, None), slice(None, None, 2))), ("int-none", (None, 1)),
                   ("ellipsis", (Ellipsis, 1)), ("repeats", _rep), ("mask", _mask),
                   ("pairs", (_rep[:3], np.array([3, 3, 1]))),
                   ("slice-array", (slice(None), _rep))]:
    tidx = tuple(_ti(i) if isinstance(i, np.ndarray) else i for i in idx) \
        if isinstance(idx, tuple) else _ti(idx)
    case("getitem", label, lambda a, i=idx: a[i], lambda a, i=tidx: a[i], rn(3, 4))
case("getitem", "tensor-index", lambda a: a[mg.Tensor(_rep)], lambda a: a[_ti(_rep)], rn(3, 4))
for ax in (0, -1):
    case("concatenate", f"axis={ax}", lambda a, b, ax=ax: F.concatenate([a, b], axis=ax),
         lambda a, b, ax=ax: torch.cat([a, b], dim=ax), rn(2, 3), rn(2, 3))
    case("stack", f"axis={ax}", lambda a, b, ax=ax: F.stack([a, b], axis=ax),
         lambda a, b, ax=ax: torch.stack([a, b], dim=ax), rn(2, 3), rn(2, 3))
for how, ax in [(3, 1), ([1, 3], -1)]:
    case("split", f"{how}-axis={ax}",
         lambda a, h=how, ax=ax: F.concatenate([p.reshape(-1) * (i + 1.0) for i, p in
                                                enumerate(F.split(a, h, axis=ax))]),
         lambda a, h=how, ax=ax: torch.cat([p.reshape(-1) * (i + 1.0) for i, p in
                                            enumerate(torch.tensor_split(a, h, dim=ax))]),
         rn(2, 3, 4))

# matmul
for sa, sb in [((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)),
               ((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
               ((2, 1, 3, 4), (5, 4, 2))]:
    case("matmul", "x".join(map(str, sa)) + "@" + "x".join(map(str, sb)), F.matmul, torch.matmul,
         rn(*sa), rn(*sb))

for sx in [(4,), (3, 4), (2, 3, 4)]:  # minigrad's weight is (in, out); torch's is (out, in)
    case("linear", "x".join(map(str, sx)), F.linear,
         lambda x, w, b: torch.nn.functional.linear(x, w.T, b), rn(*sx), rn(4, 5), rn(5))

# fused nn ops
for ax in (-1, 0, 1):
    case("softmax", f"axis={ax}", lambda a, ax=ax: F.softmax(a, axis=ax),
         lambda a, ax=ax: torch.softmax(a, dim=ax), rn(2, 3, 4) * 3)
    case("log_softmax", f"axis={ax}", lambda a, ax=ax: F.log_softmax(a, axis=ax),
         lambda a, ax=ax: torch.log_softmax(a, dim=ax), rn(2, 3, 4) * 3)
for ax, kd in [(None, False), (1, True), ((0, 2), False)]:
    case("logsumexp", f"axis={ax}-kd={kd}",
         lambda a, ax=ax, kd=kd: F.logsumexp(a, axis=ax, keepdims=kd),
         lambda a, ax=ax, kd=kd: torch.logsumexp(a, dim=_dims(ax, a.ndim), keepdim=kd),
         rn(2, 3, 4) * 3)
case("layer_norm", "affine", F.layer_norm,
     lambda x, w, b: TF.layer_norm(x, (5,), w, b, eps=1e-5), rn(2, 3, 5), rn(5), rn(5))
case("layer_norm", "plain", F.layer_norm, lambda x: TF.layer_norm(x, (6,), eps=1e-5), rn(4, 6))
case("gelu_tanh", "3d", F.gelu_tanh, lambda x: TF.gelu(x, approximate="tanh"), rn(2, 3, 4) * 3)


def _torch_self_attention(qkv, num_heads, scale=None):
    B, T, width = qkv.shape
    D = width // 3
    q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, T, num_heads, -1).transpose(1, 2)
               for i in range(3))
    o = TF.scaled_dot_product_attention(q, k, v, scale=scale)  # (B, H, T, d)
    return o.transpose(1, 2).reshape(B, T, D)


for (B, T, D, H, scale) in [(2, 4, 6, 2, None), (3, 5, 6, 3, 0.3)]:
    case("self_attention", f"B{B}-T{T}-D{D}-H{H}-s{scale}",
         lambda x, H=H, scale=scale: F.self_attention(x, H, scale=scale),
         lambda x, H=H, scale=scale: _torch_self_attention(x, H, scale), rn(B, T, 3 * D))
_labels = np.array([2, 0, 4, 4, 1, 3])
for red in ("mean", "sum", "none"):
    for ls in (0.0, 0.1):
        kw = dict(reduction=red, label_smoothing=ls)
        case("cross_entropy", f"labels-{red}-ls={ls}",
             lambda z, kw=kw: F.cross_entropy(z, _labels, **kw),
             lambda z, kw=kw: TF.cross_entropy(z, _ti(_labels), **kw), rn(6, 5) * 2)
        case("cross_entropy", f"soft-{red}-ls={ls}",
             lambda z, t, kw=kw: F.cross_entropy(z, t, **kw),
             lambda z, t, kw=kw: TF.cross_entropy(z, t, **kw), rn(4, 5) * 2,
             np.exp(rn(4, 5)) / 3.0)


# convolution, pooling, pad (every argument and the tie rules: test_conv.py, test_pool.py)
case("conv2d", "stride-pad-groups",
     lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
     lambda x, w, b: TF.conv2d(x, w, b, stride=2, padding=1, groups=2),
     rn(2, 4, 6, 5), rn(6, 2, 3, 3), rn(6))
case("conv1d", "pad-dilation", lambda x, w: F.conv1d(x, w, padding=2, dilation=2),
     lambda x, w: TF.conv1d(x, w, padding=2, dilation=2), rn(2, 3, 9), rn(4, 3, 3))
case("max_pool2d", "k3-s2-p1", lambda x: F.max_pool2d(x, 3, 2, 1),
     lambda x: TF.max_pool2d(x, 3, 2, 1), rn(2, 3, 7, 7))
case("avg_pool2d", "k3-s2-p1", lambda x: F.avg_pool2d(x, 3, 2, 1),
     lambda x: TF.avg_pool2d(x, 3, 2, 1), rn(2, 3, 7, 7))
case("pad", "reflect", lambda x: F.pad(x, ((0, 0), (0, 0), (2, 1), (1, 3)), "reflect"),
     lambda x: TF.pad(x, (1, 3, 2, 1), mode="reflect"), rn(2, 3, 4, 5))

# activations and losses: one case each here; every argument, reduction, weight and
# ignore_index combination, and the kinks, in test_losses_activations_torch.py
for name, tf in [("softplus", TF.softplus), ("silu", TF.silu), ("gelu", TF.gelu),
                 ("leaky_relu", TF.leaky_relu), ("elu", TF.elu), ("selu", TF.selu),
                 ("log_sigmoid", TF.logsigmoid), ("hardtanh", TF.hardtanh),
                 ("softmin", lambda a: TF.softmin(a, dim=-1))]:
    case(name, "3d", getattr(F, name), tf, rn(2, 3, 4) * 3)
for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits"):
    case(name, "mean", getattr(F, name), getattr(TF, name), rn(3, 4) * 2, rng.uniform(0, 1, (3, 4)))
_nll_y, _nll_w = np.array([2, -100, 0, 1]), np.array([0.5, 2.0, 1.5])
case("nll_loss", "weight-ignore", lambda a: F.nll_loss(a, _nll_y, weight=_nll_w),
     lambda a: TF.nll_loss(a, _ti(_nll_y), weight=torch.from_numpy(_nll_w)), rn(4, 3))


def test_every_public_op_has_a_torch_case():
    # the newer families keep their torch cases beside their other tests
    from test_indexing_torch import TORCH_CASES as indexing
    from test_ops_torch_more import TORCH_CASES_MORE
    from test_sdpa_torch import TORCH_COVERED as sdpa

    assert set(TORCH_CASES) | set(TORCH_CASES_MORE) | set(indexing) | sdpa == set(PUBLIC_OPS)


@pytest.mark.parametrize("mg_fn,t_fn,arrays",
                         [p for cases in TORCH_CASES.values() for p in cases])
def test_matches_torch_autograd(mg_fn, t_fn, arrays):
    mts = [mg.Tensor(a.copy(), requires_grad=True) if a.dtype.kind == "f" else a for a in arrays]
    tts = [torch.tensor(a, requires_grad=True) if a.dtype.kind == "f" else _ti(a) for a in arrays]
    out, tout = mg_fn(*mts), t_fn(*tts)
    assert out.shape == tuple(tout.shape)
    assert tout.dtype == torch.float64 and out.dtype == np.float64
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    cot = np.random.default_rng(5).standard_normal(out.shape)
    out.backward(cot)
    tout.backward(torch.from_numpy(cot))
    for m, t in zip(mts, tts):
        if isinstance(m, mg.Tensor):
            assert m.grad is not None and t.grad is not None
            np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-12, atol=1e-12)
