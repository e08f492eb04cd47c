"""The op case table shared by the op tests (gradcheck, dtype, immutability).

``OP_CASES`` maps every public op name to a list of :class:`OpCase`. A case holds the op's
inputs (float64 arrays, and non-differentiable arrays such as labels or masks), a function
of Tensors built from ``minigrad.F`` and a reference written directly in NumPy/SciPy, so
values are checked against an independent implementation, never against minigrad itself.
Tests that take the ``mg_op_case`` argument are parametrized over every case.
"""
from __future__ import annotations

import numpy as np
import scipy.special as sp

import minigrad as mg
from minigrad import F


class OpCase:
    def __init__(self, op, label, fn, ref, inputs, gc=None, keeps_dtype=True):
        self.op, self.id, self.fn, self.ref = op, f"{op}-{label}", fn, ref
        self.inputs = tuple(np.asarray(x) for x in inputs)  # 0-d stays an array
        self.gc = gc or {}  # extra gradcheck keywords (eps, tolerances)
        self.keeps_dtype = keeps_dtype  # False: casts, or mixes in float64 constants

    def __repr__(self):
        return self.id


_rng = np.random.default_rng(20240611)
OP_CASES: dict[str, list[OpCase]] = {}


def rn(shape):
    return np.asarray(_rng.standard_normal(shape))  # 0-d stays an array (a checked input)


def pos(shape):
    return np.asarray(_rng.uniform(0.5, 2.0, shape))


def away(shape, gap=0.2):
    """Normals pushed at least ``gap`` away from 0 (no kinks of abs/relu within eps)."""
    x = rn(shape)
    return np.where(x >= 0, 1.0, -1.0) * (np.abs(x) + gap)


def separated(shape_a, shape_b, gap=0.05):
    """Two arrays whose broadcast elements differ by more than ``gap`` (no ties)."""
    while True:
        a, b = rn(shape_a), rn(shape_b)
        if np.min(np.abs(np.subtract(a, b)), initial=np.inf) > gap:
            return a, b


def add_case(op, label, fn, ref, *inputs, **kw):
    OP_CASES.setdefault(op, []).append(OpCase(op, label, fn, ref, inputs, **kw))


def _sid(*shapes):
    return "@".join("x".join(map(str, s)) or "0d" for s in shapes)


# ---- elementwise, binary, with broadcasting and rank promotion -----------------------------
BCAST = [((3, 4), (3, 4)), ((3, 1, 4), (5, 4)), ((), (2, 3)), ((2, 3), ()), ((4,), (3, 1)),
         ((2, 1, 3), (1, 4, 1))]
for sa, sb in BCAST:
    sid = _sid(sa, sb)
    add_case("add", sid, F.add, np.add, rn(sa), rn(sb))
    add_case("sub", sid, F.sub, np.subtract, rn(sa), rn(sb))
    add_case("mul", sid, F.mul, np.multiply, rn(sa), rn(sb))
    add_case("div", sid, F.div, np.divide, rn(sa), away(sb, 0.5))
    add_case("maximum", sid, F.maximum, np.maximum, *separated(sa, sb))
    add_case("minimum", sid, F.minimum, np.minimum, *separated(sa, sb))
    add_case("pow", "tensor-exp-" + sid, F.pow, np.power, pos(sa), rn(sb))
_C34 = rn((3, 4))
add_case("add", "const-array", lambda a: F.add(a, _C34), lambda a: a + _C34, rn((2, 3, 4)),
         keeps_dtype=False)
add_case("add", "python-scalar", lambda a: 2.5 + a, lambda a: 2.5 + a, rn((3,)))
add_case("sub", "rsub-scalar", lambda a: 1.5 - a, lambda a: 1.5 - a, rn((2, 3)))
add_case("mul", "self", lambda a: a * a, lambda a: a * a, rn((3, 2)))
add_case("div", "rdiv-scalar", lambda a: 2.0 / a, lambda a: 2.0 / a, away((2, 3), 0.5))
add_case("maximum", "vs-const", lambda a: F.maximum(a, 0.3), lambda a: np.maximum(a, 0.3),
         0.3 + away((2, 5), 0.05))
add_case("minimum", "const-first", lambda a: F.minimum(_C34, a), lambda a: np.minimum(_C34, a),
         _C34 + away((2, 1, 4), 0.05), keeps_dtype=False)
for e in (2, 3, 2.0, 0.5, -1.5, 0, 1):
    add_case("pow", f"scalar-exp-{e!r}", lambda a, e=e: a ** e, lambda a, e=e: a ** e, pos((2, 3)))
add_case("pow", "square-negative-base", lambda a: F.pow(a, 2), lambda a: a ** 2, rn((3, 3)))
add_case("pow", "int-exp-negative-base", lambda a: a ** 3, lambda a: a ** 3, rn((4,)))
add_case("pow", "scalar-base", lambda b: 2.0 ** b, lambda b: 2.0 ** b, rn((2, 3)))
add_case("pow", "const-array-exp", lambda a: F.pow(a, _C34), lambda a: a ** _C34, pos((2, 1, 4)),
         keeps_dtype=False)

# ---- elementwise, unary ----------------------------------------------------------------------
UNARY_SHAPES = [(), (5,), (2, 3, 4)]
for s in UNARY_SHAPES:
    sid = _sid(s)
    add_case("neg", sid, F.neg, np.negative, rn(s))
    add_case("exp", sid, F.exp, np.exp, rn(s))
    add_case("log", sid, F.log, np.log, pos(s))
    add_case("sqrt", sid, F.sqrt, np.sqrt, pos(s))
    add_case("tanh", sid, F.tanh, np.tanh, rn(s))
    add_case("abs", sid, F.abs, np.abs, away(s))
    add_case("sigmoid", sid, F.sigmoid, sp.expit, rn(s) * 3)
    add_case("relu", sid, F.relu, lambda a: np.maximum(a, 0.0), away(s))
add_case("sigmoid", "large", F.sigmoid, sp.expit, np.array([-40.0, -12.0, 0.3, 15.0, 40.0]))
add_case("tanh", "large", F.tanh, np.tanh, np.array([-8.0, -3.0, 0.1, 4.0]))

# ---- where, clip, astype ---------------------------------------------------------------------
WHERE = [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), (4,)), ((2, 1, 3), (3,), (4, 1)),
         ((4,), (), (2, 1))]
for sc, sa, sb in WHERE:
    add_case("where", _sid(sc, sa, sb), F.where, np.where, _rng.random(sc) > 0.5, rn(sa), rn(sb))
_mask = _rng.random((3, 4)) > 0.5
add_case("where", "tensor-cond", lambda a, b: F.where(mg.Tensor(_mask), a, b),
         lambda a, b: np.where(_mask, a, b), rn((3, 4)), rn((4,)))
add_case("where", "scalar-branch", lambda a: F.where(_mask, a, 0.0),
         lambda a: np.where(_mask, a, 0.0), rn((3, 4)))

_clip_x = away((3, 4), 0.05)  # |x| >= 0.05 and |x - 0.5| checked below: no element at a bound
_clip_x[np.abs(_clip_x - 0.5) < 0.05] += 0.2
_lo, _hi = np.array([-0.5, 0.0, -1.0, 0.25]), np.array([[0.5], [1.5], [0.5]])
for label, lo, hi in [("both", -0.5, 0.5), ("min-only", 0.0, None), ("max-only", None, 0.5),
                      ("array-bounds", _lo, _hi)]:
    x = _clip_x.copy()
    for bound in (lo, hi):
        if bound is not None:  # keep every element >= 0.02 from its bound
            b = np.broadcast_to(bound, x.shape)
            x = np.where(np.abs(x - b) < 0.02, x + 0.05, x)
    add_case("clip", label, lambda a, lo=lo, hi=hi: F.clip(a, lo, hi),
             lambda a, lo=lo, hi=hi: np.clip(a, lo, hi), x, keeps_dtype=np.ndim(lo) == 0)
_wide_lo = np.array([[-0.3], [0.1]])[:, :, None] * np.ones((2, 1, 4))  # (2, 1, 4) > x's rank
add_case("clip", "bounds-broadcast-beyond-input", lambda a: F.clip(a, _wide_lo, 0.9),
         lambda a: np.clip(a, _wide_lo, 0.9), np.array([[-0.8, -0.1, 0.3, 1.4],
                                                       [0.5, -0.5, 2.0, 0.0],
                                                       [-2.0, 0.7, 0.2, -0.05]]),
         keeps_dtype=False)
add_case("astype", "f64-to-f64", lambda a: F.astype(a, np.float64), lambda a: a, rn((2, 3)),
         keeps_dtype=False)
add_case("astype", "f64-to-f32-roundtrip", lambda a: F.astype(F.astype(a, np.float32), np.float64),
         lambda a: a.astype(np.float32).astype(np.float64), rn((2, 3)),
         gc=dict(eps=1e-2, atol=1e-4, rtol=1e-3), keeps_dtype=False)

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

# ---- shape ops ------------------------------------------------------------------------------
for shape in [(6, 4), (-1,), (4, 1, 6), (2, -1, 3)]:
    add_case("reshape", _sid(shape), lambda a, s=shape: F.reshape(a, s),
             lambda a, s=shape: np.reshape(a, s), rn((2, 3, 4)))
add_case("reshape", "0d", lambda a: F.reshape(a, (1, 1)), lambda a: a.reshape(1, 1), rn(()))
for axes in [None, (1, 0, 2), (2, 0, 1), (-1, 0, -2)]:
    add_case("transpose", f"{axes}", lambda a, ax=axes: F.transpose(a, ax),
             lambda a, ax=axes: np.transpose(a, ax), rn((2, 3, 4)))
add_case("transpose", "2d", F.transpose, np.transpose, rn((3, 5)))
add_case("permute", "varargs", lambda a: F.permute(a, 2, 0, 1),
         lambda a: np.transpose(a, (2, 0, 1)), rn((2, 3, 4)))
add_case("permute", "tuple", lambda a: F.permute(a, (1, 2, 0)),
         lambda a: np.transpose(a, (1, 2, 0)), rn((2, 3, 4)))
for a1, a2 in [(0, 2), (-1, 0), (1, 1), (0, 1)]:
    add_case("swapaxes", f"{a1},{a2}", lambda a, a1=a1, a2=a2: F.swapaxes(a, a1, a2),
             lambda a, a1=a1, a2=a2: np.swapaxes(a, a1, a2), rn((2, 3, 4)))
for axis in [0, -1, 1, (0, 2)]:
    add_case("expand_dims", f"{axis}", lambda a, ax=axis: F.expand_dims(a, ax),
             lambda a, ax=axis: np.expand_dims(a, ax), rn((3, 4)))
for axis in [None, 0, -2, (0, 2)]:
    add_case("squeeze", f"{axis}", lambda a, ax=axis: F.squeeze(a, ax),
             lambda a, ax=axis: np.squeeze(a, ax), rn((1, 3, 1, 4)))
for s_in, s_out in [((3, 1), (2, 3, 4)), ((4,), (3, 4)), ((), (2, 2)), ((2, 1, 3), (2, 5, 3))]:
    add_case("broadcast_to", _sid(s_in, s_out), lambda a, s=s_out: F.broadcast_to(a, s),
             lambda a, s=s_out: np.broadcast_to(a, s), rn(s_in))

_bool = np.array([[True, False, True, True], [False, False, True, False],
                  [True, True, False, True]])
INDICES = {
    "int": 1, "neg-ints": (-1, 2), "slices": (slice(1, None), slice(None, None, 2)),
    "reverse": slice(None, None, -1), "none": (None, 1), "ellipsis": (Ellipsis, 1),
    "ellipsis-none-slice": (Ellipsis, None, slice(1, 3)),
    "int-array-repeats": np.array([0, 0, 2, 0]),
    "2d-int-array-repeats": np.array([[1, 1], [0, 1]]),
    "list-repeats": [2, 2, 1],
    "paired-arrays-repeats": (np.array([0, 0, 1, 0]), np.array([2, 2, 2, 2])),
    "slice-and-array": (slice(None), np.array([3, 3, 0])),
    "bool-mask": _bool, "bool-rows": np.array([True, False, True]),
    "slice-and-bool": (slice(0, 2), np.array([True, False, False, True])),
}
for label, idx in INDICES.items():
    add_case("getitem", label, lambda a, i=idx: a[i], lambda a, i=idx: a[i], rn((3, 4)))
add_case("getitem", "tensor-index-repeats", lambda a: a[mg.Tensor(np.array([2, 2, 0]))],
         lambda a: a[np.array([2, 2, 0])], rn((3, 4)))
add_case("getitem", "tensor-bool-mask", lambda a: F.getitem(a, mg.Tensor(_bool)),
         lambda a: a[_bool], rn((3, 4)))
add_case("getitem", "tuple-with-tensor", lambda a: a[1:, mg.Tensor(np.array([0, 0]))],
         lambda a: a[1:, np.array([0, 0])], rn((3, 4)))

_K = rn((2, 2, 4))
for axis, shapes in [(0, [(2, 3, 4), (1, 3, 4), (3, 3, 4)]), (1, [(2, 1, 4), (2, 3, 4), (2, 2, 4)]),
                     (-1, [(2, 3, 1), (2, 3, 2), (2, 3, 3)])]:
    add_case("concatenate", f"axis={axis}", lambda a, b, c, ax=axis: F.concatenate([a, b, c], ax),
             lambda a, b, c, ax=axis: np.concatenate([a, b, c], ax), *[rn(s) for s in shapes])
add_case("concatenate", "with-constant", lambda a: F.concatenate((_K, a), axis=1),
         lambda a: np.concatenate((_K, a), axis=1), rn((2, 3, 4)), keeps_dtype=False)
for axis in [0, 1, 2, -1, -2]:
    add_case("stack", f"axis={axis}", lambda a, b, c, ax=axis: F.stack([a, b, c], ax),
             lambda a, b, c, ax=axis: np.stack([a, b, c], ax), rn((3, 4)), rn((3, 4)), rn((3, 4)))


def _weighted(pieces):
    """Join pieces scaled 1, 2, 3, ...: a gradient sent to the wrong piece shows."""
    return F.concatenate([p * float(i + 1) for i, p in enumerate(pieces)], axis=-1)


for how, axis in [(2, 0), (3, 1), (2, -1), ([1, 3], 2), ([2], -2)]:
    def fn(a, how=how, axis=axis):
        return _weighted([F.reshape(p, (-1,)) for p in F.split(a, how, axis=axis)])

    def ref(a, how=how, axis=axis):
        pieces = np.split(a, how, axis)
        return np.concatenate([p.reshape(-1) * (i + 1) for i, p in enumerate(pieces)])

    add_case("split", f"{how}-axis={axis}", fn, ref, rn((2, 3, 4)))

# ---- matmul ---------------------------------------------------------------------------------
MATMUL = [((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)),
          ((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
          ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 2)), ((4,), (2, 1, 4, 3)),
          ((2, 1, 3, 4), (4,))]
for sa, sb in MATMUL:
    add_case("matmul", _sid(sa, sb), F.matmul, np.matmul, rn(sa), rn(sb))
add_case("matmul", "operator", lambda a, b: a @ b, np.matmul, rn((2, 3)), rn((3, 2)))
add_case("matmul", "same-tensor", lambda a: a @ a, lambda a: a @ a, rn((3, 3)))
for sx in [(4,), (3, 4), (2, 3, 4), (2, 1, 3, 4)]:
    add_case("linear", _sid(sx) + "-bias", F.linear, lambda x, w, b: x @ w + b,
             rn(sx), rn((4, 5)), rn((5,)))
    add_case("linear", _sid(sx), lambda x, w: F.linear(x, w), np.matmul, rn(sx), rn((4, 5)))
add_case("linear", "strided-x", lambda x, w, b: F.linear(x.transpose(1, 0, 2), w, b),
         lambda x, w, b: x.transpose(1, 0, 2) @ w + b, rn((3, 2, 4)), rn((4, 5)), rn((5,)))

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

# ---- convolution, pooling, pad (references: loops over every output element) ----------------
def _pads2(padding, kernel, dilation):
    if padding == "same":  # PyTorch's: the odd pixel of an even kernel goes after
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [(t // 2, t - t // 2) for t in total]
    return [(p, p) for p in ((padding,) * 2 if np.ndim(padding) == 0 else padding)]


def np_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """out[n, o, p, q] = b[o] + Σ w[o] ⊙ (the window of x for (p, q)), one element at a time."""
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    sh, sw = (stride,) * 2 if np.ndim(stride) == 0 else stride
    dh, dw = (dilation,) * 2 if np.ndim(dilation) == 0 else dilation
    B, C, H, W = x.shape
    O, Cg, kh, kw = w.shape
    (pt, pb), (pl, pr) = _pads2(padding, (kh, kw), (dh, dw))
    xp = np.zeros((B, C, H + pt + pb, W + pl + pr))
    xp[:, :, pt:pt + H, pl:pl + W] = x
    Ho = (H + pt + pb - dh * (kh - 1) - 1) // sh + 1
    Wo = (W + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((B, O, Ho, Wo))
    for n in range(B):
        for o in range(O):
            c0 = (o // (O // groups)) * Cg
            for p in range(Ho):
                for q in range(Wo):
                    total = 0.0 if b is None else b[o]
                    for c in range(Cg):
                        for i in range(kh):
                            for j in range(kw):
                                total += w[o, c, i, j] * xp[n, c0 + c, p * sh + i * dh,
                                                             q * sw + j * dw]
                    out[n, o, p, q] = total
    return out[0] if unbatched else out


def np_conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    x3 = x[:, :, None] if x.ndim == 3 else x[:, None]
    pads = "same" if padding == "same" else (0, padding)
    out = np_conv2d(x3, w[:, :, None], b, (1, stride), pads, (1, dilation), groups)
    return out[:, :, 0] if x.ndim == 3 else out[:, 0]


def np_pool2d(x, kernel, stride=None, padding=0, kind="max", count_include_pad=True):
    """Each window in turn: its max (-inf padding) or its mean (zero padding)."""
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    kh, kw = (kernel,) * 2 if np.ndim(kernel) == 0 else kernel
    sh, sw = (kh, kw) if stride is None else (stride,) * 2 if np.ndim(stride) == 0 else stride
    ph, pw = (padding,) * 2 if np.ndim(padding) == 0 else padding
    B, C, H, W = x.shape
    Ho, Wo = (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1
    out = np.zeros((B, C, Ho, Wo))
    for n in range(B):
        for c in range(C):
            for p in range(Ho):
                for q in range(Wo):
                    vals = [x[n, c, r, s] for r in range(p * sh - ph, p * sh - ph + kh)
                            for s in range(q * sw - pw, q * sw - pw + kw)
                            if 0 <= r < H and 0 <= s < W]
                    if kind == "max":
                        out[n, c, p, q] = max(vals)
                    else:
                        out[n, c, p, q] = sum(vals) / (kh * kw if count_include_pad else len(vals))
    return out[0] if unbatched else out


def np_pad(x, pad_width, mode="constant", value=0.0):
    """Every output element from its source index: constant outside, mirror (period 2n - 2)
    for reflect, the nearest end for edge."""
    pairs = np.broadcast_to(np.asarray(pad_width), (x.ndim, 2))
    shape = tuple(n + b + a for n, (b, a) in zip(x.shape, pairs))
    out = np.empty(shape)
    for index in np.ndindex(*shape):
        src = []
        for i, n, (b, _) in zip(index, x.shape, pairs):
            j = i - b
            if mode == "edge":
                j = min(max(j, 0), n - 1)
            elif mode == "reflect":
                j = 0 if n == 1 else j % (2 * n - 2)
                j = 2 * n - 2 - j if j > n - 1 else j
            src.append(j)
        inside = all(0 <= j < n for j, n in zip(src, x.shape))
        out[index] = x[tuple(src)] if inside else value
    return out


for label, sx, sw, kw in [
        ("basic", (2, 3, 5, 5), (4, 3, 3, 3), {}),
        ("stride2-pad1", (2, 3, 7, 6), (4, 3, 3, 3), dict(stride=2, padding=1)),
        ("dilation2-pad-pair", (1, 2, 7, 7), (3, 2, 3, 3), dict(dilation=2, padding=(1, 2))),
        ("groups2-stride-pair", (2, 4, 5, 6), (6, 2, 3, 2), dict(groups=2, stride=(2, 1))),
        ("depthwise", (2, 3, 6, 5), (3, 1, 3, 3), dict(groups=3, padding=1)),
        ("depthwise-multiplier", (2, 3, 5, 5), (6, 1, 2, 2), dict(groups=3, stride=2)),
        ("1x1", (3, 5, 4, 4), (2, 5, 1, 1), {}),
        ("nonsquare-odd", (1, 2, 7, 5), (3, 2, 1, 3), dict(stride=(1, 2), dilation=(1, 2))),
        ("same-even-kernel", (2, 3, 5, 6), (2, 3, 2, 4), dict(padding="same")),
        ("unbatched", (3, 6, 5), (2, 3, 3, 2), dict(padding=(0, 1)))]:
    add_case("conv2d", label + "-bias", lambda x, w, b, kw=kw: F.conv2d(x, w, b, **kw),
             lambda x, w, b, kw=kw: np_conv2d(x, w, b, **kw), rn(sx), rn(sw), rn(sw[0]))
    add_case("conv2d", label, lambda x, w, kw=kw: F.conv2d(x, w, **kw),
             lambda x, w, kw=kw: np_conv2d(x, w, **kw), rn(sx), rn(sw))
for label, sx, sw, kw in [
        ("basic", (2, 3, 9), (4, 3, 3), {}),
        ("stride-pad-dilation", (2, 2, 11), (3, 2, 3), dict(stride=2, padding=2, dilation=2)),
        ("depthwise", (1, 3, 8), (3, 1, 4), dict(groups=3, padding=1)),
        ("same", (2, 2, 7), (4, 2, 4), dict(padding="same")),
        ("unbatched", (3, 8), (2, 3, 1), {})]:
    add_case("conv1d", label + "-bias", lambda x, w, b, kw=kw: F.conv1d(x, w, b, **kw),
             lambda x, w, b, kw=kw: np_conv1d(x, w, b, **kw), rn(sx), rn(sw), rn(sw[0]))
    add_case("conv1d", label, lambda x, w, kw=kw: F.conv1d(x, w, **kw),
             lambda x, w, kw=kw: np_conv1d(x, w, **kw), rn(sx), rn(sw))
for label, sx, args in [
        ("k2", (2, 3, 6, 6), (2,)), ("k3-s2-p1", (2, 2, 7, 7), (3, 2, 1)),
        ("k3x2-overlapping", (1, 2, 6, 5), ((3, 2), (1, 2), (1, 0))),
        ("unbatched-s1", (3, 5, 5), (2, 1)), ("odd-drops-last-row", (1, 2, 7, 5), (2,))]:
    add_case("max_pool2d", label, lambda x, a=args: F.max_pool2d(x, *a),
             lambda x, a=args: np_pool2d(x, *a, kind="max"), rn(sx))
    add_case("avg_pool2d", label, lambda x, a=args: F.avg_pool2d(x, *a),
             lambda x, a=args: np_pool2d(x, *a, kind="avg"), rn(sx))
add_case("avg_pool2d", "exclude-pad", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
         lambda x: np_pool2d(x, 3, 2, 1, kind="avg", count_include_pad=False), rn((2, 2, 6, 7)))
for label, sx, pw, kw in [
        ("constant-int", (2, 3), 2, {}),
        ("constant-value-per-axis", (2, 3, 4), ((1, 0), (0, 2), (3, 1)), dict(value=1.5)),
        ("constant-pair", (3, 2), (0, 2), {}),
        ("reflect", (3, 4), ((1, 2), (2, 3)), dict(mode="reflect")),
        ("reflect-wider-than-axis", (3,), 5, dict(mode="reflect")),
        ("reflect-size-1-axis", (1, 4), ((2, 1), (1, 1)), dict(mode="reflect")),
        ("edge", (2, 3), ((2, 3), (0, 1)), dict(mode="edge")),
        ("edge-nchw", (2, 2, 3, 3), ((0, 0), (0, 0), (1, 2), (2, 0)), dict(mode="edge"))]:
    add_case("pad", label, lambda x, pw=pw, kw=kw: F.pad(x, pw, **kw),
             lambda x, pw=pw, kw=kw: np_pad(x, pw, **kw), rn(sx))

ALL_CASES = [c for cases in OP_CASES.values() for c in cases]


def pytest_generate_tests(metafunc):
    if "mg_op_case" in metafunc.fixturenames:
        cases = ALL_CASES
        if metafunc.definition.get_closest_marker("dtype_keeping_cases"):
            cases = [c for c in ALL_CASES if c.keeps_dtype]  # the others cast on purpose
        metafunc.parametrize("mg_op_case", cases, ids=[c.id for c in cases])
