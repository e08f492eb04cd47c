"""Cases for minigrad/ops/fused.py and ops/attention.py: softmax, log_softmax, logsumexp, layer_norm, gelu_tanh, self_attention, cross_entropy."""
from __future__ import annotations

import numpy as np
import scipy.special as sp

import minigrad as mg
from minigrad import F

from .base import _rng, _sid, add_case, away, pos, rn, separated, torch_table  # noqa: F401


# ---- fused nn ops ---------------------------------------------------------------------------
for axis in [-1, 0, 1]:
    add_case("softmax", f"axis={axis}", lambda a, ax=axis: F.softmax(a, axis=ax),
             lambda a, ax=axis: sp.softmax(a, axis=ax), rn((2, 3, 4)) * 2)
    add_case("log_softmax", f"axis={axis}", lambda a, ax=axis: F.log_softmax(a, axis=ax),
             lambda a, ax=axis: sp.log_softmax(a, axis=ax), rn((2, 3, 4)) * 2)
add_case("softmax", "1d", F.softmax, sp.softmax, rn((5,)))
add_case("log_softmax", "1d", F.log_softmax, sp.log_softmax, rn((5,)))
for axis in [None, 0, -1, (0, 2)]:
    for kd in (False, True):
        add_case("logsumexp", f"axis={axis}-keepdims={kd}",
                 lambda a, ax=axis, kd=kd: F.logsumexp(a, axis=ax, keepdims=kd),
                 lambda a, ax=axis, kd=kd: sp.logsumexp(a, axis=ax, keepdims=kd), rn((2, 3, 4)))
add_case("logsumexp", "0d", F.logsumexp, sp.logsumexp, rn(()))
# rows with equal maxima: the gradient splits evenly among them (fixed inputs: no draw from
# the shared generator, so the cases after these keep their inputs)
add_case("logsumexp", "equal-maxima", lambda a: F.logsumexp(a, axis=-1),
         lambda a: sp.logsumexp(a, axis=-1),
         np.array([[0.5, 0.5, 0.5, 0.5], [-3.0, -3.0, -3.0, -3.0], [2.0, 2.0, -1.0, 2.0]]))


def np_layer_norm(x, w=None, b=None, eps=1e-5):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    return y * (1.0 if w is None else w) + (0.0 if b is None else b)


add_case("layer_norm", "affine", F.layer_norm, np_layer_norm, rn((2, 3, 5)), 1 + rn(5) / 2, rn(5))
add_case("layer_norm", "plain", F.layer_norm, np_layer_norm, rn((4, 6)))
add_case("layer_norm", "weight-only", F.layer_norm, np_layer_norm, rn((3, 4)), rn(4))
add_case("layer_norm", "bias-only", lambda x, b: F.layer_norm(x, None, b),
         lambda x, b: np_layer_norm(x, None, b), rn((3, 4)), rn(4))
add_case("layer_norm", "1d-eps", lambda x, w, b: F.layer_norm(x, w, b, eps=0.1),
         lambda x, w, b: np_layer_norm(x, w, b, eps=0.1), rn(6), rn(6), rn(6))


def np_gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


for s in [(), (7,), (2, 3, 4)]:
    add_case("gelu_tanh", _sid(s), F.gelu_tanh, np_gelu, rn(s) * 2)


def np_self_attention(qkv, num_heads, scale=None):
    """Head by head and example by example, with loops: the reference for the fused op."""
    B, T, width = qkv.shape
    D = width // 3
    d = D // num_heads
    s = 1 / np.sqrt(d) if scale is None else scale
    out = np.zeros((B, T, D))
    for b in range(B):
        for h in range(num_heads):
            cols = slice(h * d, (h + 1) * d)
            q, k, v = (qkv[b, :, i * D:(i + 1) * D][:, cols] for i in range(3))
            scores = s * q @ k.T
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            out[b, :, cols] = (e / e.sum(axis=1, keepdims=True)) @ v
    return out


for (B, T, D, H, scale) in [(2, 3, 2, 1, None), (2, 4, 6, 2, None), (1, 5, 6, 3, 0.7),
                            (3, 1, 4, 2, None)]:
    add_case("self_attention", f"B{B}-T{T}-D{D}-H{H}-s{scale}",
             lambda x, H=H, scale=scale: F.self_attention(x, H, scale=scale),
             lambda x, H=H, scale=scale: np_self_attention(x, H, scale), rn((B, T, 3 * D)))


def np_cross_entropy(logits, target, reduction="mean", label_smoothing=0.0):
    C = logits.shape[-1]
    lsm = sp.log_softmax(logits, axis=-1)
    if target.dtype.kind in "iu":
        target = np.eye(C)[target]
    q = (1 - label_smoothing) * target + label_smoothing / C
    loss = -(q * lsm).sum(-1)
    return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](loss)


_labels2 = np.array([0, 3, 3, 1])
_labels3 = np.array([[4, 0, 2], [1, 1, 3]])
for red in ("mean", "sum", "none"):
    for ls in (0.0, 0.1):
        kw = dict(reduction=red, label_smoothing=ls)
        tag = f"{red}-ls={ls}"
        add_case("cross_entropy", f"labels-2d-{tag}",
                 lambda z, kw=kw: F.cross_entropy(z, _labels2, **kw),
                 lambda z, kw=kw: np_cross_entropy(z, _labels2, **kw), rn((4, 5)) * 2)
        add_case("cross_entropy", f"labels-3d-{tag}",
                 lambda z, kw=kw: F.cross_entropy(z, _labels3, **kw),
                 lambda z, kw=kw: np_cross_entropy(z, _labels3, **kw), rn((2, 3, 5)))
        # soft targets are inputs too: their gradient is checked as well
        add_case("cross_entropy", f"soft-{tag}", lambda z, t, kw=kw: F.cross_entropy(z, t, **kw),
                 lambda z, t, kw=kw: np_cross_entropy(z, t, **kw), rn((3, 4)),
                 sp.softmax(rn((3, 4)), axis=-1))
add_case("cross_entropy", "1d-logits-0d-label", lambda z: F.cross_entropy(z, np.array(2)),
         lambda z: np_cross_entropy(z, np.array(2)), rn(5))
add_case("cross_entropy", "labels-as-int-array-input", F.cross_entropy, np_cross_entropy,
         rn((4, 5)), _labels2)
add_case("cross_entropy", "unnormalized-soft",
         lambda z, t: F.cross_entropy(z, t, label_smoothing=0.2),
         lambda z, t: np_cross_entropy(z, t, label_smoothing=0.2), rn((2, 3, 4)), pos((2, 3, 4)))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: the fused ops, self_attention and cross_entropy."""
    TF = torch.nn.functional
    rng = np.random.default_rng(9905)

    case = add  # float64

    def rn(*shape):
        return np.asarray(rng.standard_normal(shape))

    def _dims(axis, ndim):
        return tuple(range(ndim)) if axis is None else axis

    def _ti(a):  # an index / label array as a torch tensor
        return torch.as_tensor(a)

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
