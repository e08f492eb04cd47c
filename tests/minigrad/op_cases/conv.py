"""Cases for minigrad/ops/conv.py and ops/pool.py (references: loops over every output element)."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import _rng, _sid, add_case, away, pos, rn, separated, torch_table  # noqa: F401


# ---- convolution, pooling, pad (references: loops over every output element) ----------------
def _pads2(padding, kernel, dilation):
    if padding == "same":  # PyTorch's: the odd pixel of an even kernel goes after
        total = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
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
    shape = tuple(n + b + a for n, (b, a) in zip(x.shape, pairs, strict=True))
    out = np.empty(shape)
    for index in np.ndindex(*shape):
        src = []
        for i, n, (b, _) in zip(index, x.shape, pairs, strict=True):
            j = i - b
            if mode == "edge":
                j = min(max(j, 0), n - 1)
            elif mode == "reflect":
                j = 0 if n == 1 else j % (2 * n - 2)
                j = 2 * n - 2 - j if j > n - 1 else j
            src.append(j)
        inside = all(0 <= j < n for j, n in zip(src, x.shape, strict=True))
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
             lambda x, w, b, kw=kw: np_conv2d(x, w, b, **kw), rn(*sx), rn(*sw), rn(sw[0]))
    add_case("conv2d", label, lambda x, w, kw=kw: F.conv2d(x, w, **kw),
             lambda x, w, kw=kw: np_conv2d(x, w, **kw), rn(*sx), rn(*sw))
for label, sx, sw, kw in [
        ("basic", (2, 3, 9), (4, 3, 3), {}),
        ("stride-pad-dilation", (2, 2, 11), (3, 2, 3), dict(stride=2, padding=2, dilation=2)),
        ("depthwise", (1, 3, 8), (3, 1, 4), dict(groups=3, padding=1)),
        ("same", (2, 2, 7), (4, 2, 4), dict(padding="same")),
        ("unbatched", (3, 8), (2, 3, 1), {})]:
    add_case("conv1d", label + "-bias", lambda x, w, b, kw=kw: F.conv1d(x, w, b, **kw),
             lambda x, w, b, kw=kw: np_conv1d(x, w, b, **kw), rn(*sx), rn(*sw), rn(sw[0]))
    add_case("conv1d", label, lambda x, w, kw=kw: F.conv1d(x, w, **kw),
             lambda x, w, kw=kw: np_conv1d(x, w, **kw), rn(*sx), rn(*sw))
for label, sx, args in [
        ("k2", (2, 3, 6, 6), (2,)), ("k3-s2-p1", (2, 2, 7, 7), (3, 2, 1)),
        ("k3x2-overlapping", (1, 2, 6, 5), ((3, 2), (1, 2), (1, 0))),
        ("unbatched-s1", (3, 5, 5), (2, 1)), ("odd-drops-last-row", (1, 2, 7, 5), (2,))]:
    add_case("max_pool2d", label, lambda x, a=args: F.max_pool2d(x, *a),
             lambda x, a=args: np_pool2d(x, *a, kind="max"), rn(*sx))
    add_case("avg_pool2d", label, lambda x, a=args: F.avg_pool2d(x, *a),
             lambda x, a=args: np_pool2d(x, *a, kind="avg"), rn(*sx))
add_case("avg_pool2d", "exclude-pad", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
         lambda x: np_pool2d(x, 3, 2, 1, kind="avg", count_include_pad=False), rn(2, 2, 6, 7))
for label, sx, pw, kw in [
        ("constant-int", (2, 3), 2, {}),
        ("constant-value-per-axis", (2, 3, 4), ((1, 0), (0, 2), (3, 1)), dict(value=1.5)),
        ("constant-pair", (3, 2), (0, 2), {}),
        ("reflect", (3, 4), ((1, 2), (2, 3)), dict(mode="reflect")),
        ("reflect-widest", (3,), 2, dict(mode="reflect")),  # n - 1 each side
        ("reflect-size-1-axis-unpadded", (1, 4), ((0, 0), (3, 1)), dict(mode="reflect")),
        ("edge", (2, 3), ((2, 3), (0, 1)), dict(mode="edge")),
        ("edge-nchw", (2, 2, 3, 3), ((0, 0), (0, 0), (1, 2), (2, 0)), dict(mode="edge"))]:
    add_case("pad", label, lambda x, pw=pw, kw=kw: F.pad(x, pw, **kw),
             lambda x, pw=pw, kw=kw: np_pad(x, pw, **kw), rn(*sx))
# a 0-d array padded by zero widths is itself (fixed input: the cases after keep theirs)
add_case("pad", "0d-zero-widths", lambda x: F.pad(x, (0, 0)), lambda x: np.pad(x, (0, 0)),
         np.array(0.3))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: convolution, pooling, pad (every argument and the tie
    rules: ops/test_conv.py, ops/test_pool.py)."""
    TF = torch.nn.functional
    rng = np.random.default_rng(9906)

    case = add  # float64

    rn = partial(helpers.rn, rng)

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


# ---- pad: circular, and negative widths (crops) --------------------------------------------
def np_pad_cropping(x, pad_width, mode="constant", value=0.0):
    """Each axis in turn, by index arithmetic: circular takes the cropped axis and indexes it
    modulo its length; the other modes index the whole axis (np_pad's rule per element), then
    drop the cropped ends."""
    pairs = np.broadcast_to(np.asarray(pad_width), (x.ndim, 2))
    out = np.asarray(x, dtype=np.float64)
    for axis, (b, a) in enumerate(pairs):
        n = out.shape[axis]
        if mode == "circular":
            core = np.take(out, np.arange(max(-b, 0), n - max(-a, 0)), axis=axis)
            c = core.shape[axis]
            out = np.take(core, np.arange(-max(b, 0), c + max(a, 0)) % c, axis=axis)
            continue
        widths = [(0, 0)] * out.ndim
        widths[axis] = (max(b, 0), max(a, 0))
        grown = np_pad(out, widths, mode=mode, value=value)
        keep = np.arange(max(-b, 0), grown.shape[axis] - max(-a, 0))
        out = np.take(grown, keep, axis=axis)
    return out


for label, sx, pw, kw in [
        ("circular", (3, 4), ((1, 2), (3, 0)), dict(mode="circular")),
        ("circular-as-wide-as-the-axis", (2, 3), ((0, 0), (3, 3)), dict(mode="circular")),
        ("wrap-numpy-spelling", (2, 2, 3), ((0, 0), (1, 0), (2, 1)), dict(mode="wrap")),
        ("circular-crop-then-wrap", (2, 5), ((0, 0), (-1, 4)), dict(mode="circular")),
        ("circular-crop-both", (4, 5), ((-1, 2), (3, -2)), dict(mode="circular")),
        ("constant-crop", (3, 5), ((-1, 2), (2, -3)), dict(value=0.5)),
        ("reflect-pad-then-crop", (4, 5), ((-2, 3), (3, -4)), dict(mode="reflect")),
        ("edge-crop", (3, 4), ((2, -1), (-2, -1)), dict(mode="edge")),
        ("crop-only", (4, 5), -1, {})]:
    add_case("pad", label, lambda x, pw=pw, kw=kw: F.pad(x, pw, **kw),
             lambda x, pw=pw, kw=kw: np_pad_cropping(
                 x, pw, **dict(kw, mode="circular" if kw.get("mode") == "wrap"
                               else kw.get("mode", "constant"))), rn(*sx))


@torch_table
def _torch_pad_modes(torch, add):
    """pad's circular mode and negative widths against torch.nn.functional.pad (its flat list,
    last axis first), float64 and float32, each mode with growing and cropping widths."""
    TF = torch.nn.functional
    rng = np.random.default_rng(9910)
    TORCH_MODE = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
                  "circular": "circular"}
    for label, shape, pw, mode in [
            ("circular-2d", (2, 3, 4, 5), ((1, 2), (3, 0)), "circular"),
            ("circular-1d", (2, 3, 5), ((2, 5),), "circular"),
            ("circular-crop", (2, 3, 5), ((-1, 4),), "circular"),
            ("circular-crop-2d", (1, 2, 5, 6), ((-2, 1), (4, -1)), "circular"),
            ("reflect-crop", (1, 2, 5, 6), ((3, -4), (-1, 4)), "reflect"),
            ("edge-crop", (2, 2, 4, 5), ((-1, 3), (2, -2)), "edge"),
            ("constant-crop", (2, 3, 4, 5), ((-1, 2), (-2, -1)), "constant")]:
        flat = [w for pair in reversed(pw) for w in pair]
        full = ((0, 0),) * (len(shape) - len(pw)) + pw
        add("pad", label, lambda x, p=full, m=mode: F.pad(x, p, m),
            lambda x, p=flat, m=TORCH_MODE[mode]: TF.pad(x, p, mode=m),
            rng.standard_normal(shape), dtypes=(np.float64, np.float32),
            close=helpers.close_32_ulps)
