"""Cases for minigrad/ops/conv_transpose.py (references: every input element scattered, one at
a time, over the output window it feeds)."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import add_case, torch_table

_rng = np.random.default_rng(3434)  # this family's own inputs (see base.py)
rn = partial(helpers.rn, _rng)


def _pair(v):
    return (v, v) if np.ndim(v) == 0 else tuple(v)


def np_conv_transpose2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                        dilation=1):
    """The definition read forwards: input pixel (h, v) of channel c adds x·w[c, o] at the
    uncropped output (h·sh + i·dh, v·sw + j·dw) of each output channel o of its group; then
    the padding is cropped off both ends (output_padding rows stay at the end)."""
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    (sh, sw), (ph, pw) = _pair(stride), _pair(padding)
    (oh, ow), (dh, dw) = _pair(output_padding), _pair(dilation)
    B, C, H, W = x.shape
    _, Og, kh, kw = w.shape
    Cg = C // groups
    full = np.zeros((B, Og * groups, (H - 1) * sh + dh * (kh - 1) + 1 + oh,
                     (W - 1) * sw + dw * (kw - 1) + 1 + ow))
    for c in range(C):
        outs = slice((c // Cg) * Og, (c // Cg + 1) * Og)  # the output channels of c's group
        for h in range(H):
            for v in range(W):
                for i in range(kh):
                    for j in range(kw):
                        full[:, outs, h * sh + i * dh, v * sw + j * dw] += (
                            x[:, c, h, v, None] * w[c, :, i, j])
    out = full[:, :, ph:full.shape[2] - ph, pw:full.shape[3] - pw]
    if b is not None:
        out = out + np.reshape(b, (-1, 1, 1))
    return out[0] if unbatched else out


def np_conv_transpose1d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                        dilation=1):
    x3 = x[:, :, None] if x.ndim == 3 else x[:, None]
    out = np_conv_transpose2d(x3, w[:, :, None], b, (1, stride), (0, padding),
                              (0, output_padding), groups, (1, dilation))
    return out[:, :, 0] if x.ndim == 3 else out[:, 0]


for label, sx, sw, kw in [
        ("basic", (2, 3, 4, 4), (3, 2, 3, 3), {}),
        ("stride2-pad1-outpad1", (2, 2, 3, 4), (2, 3, 3, 3),
         dict(stride=2, padding=1, output_padding=1)),
        ("groups2-stride-pair-pad-pair", (1, 4, 3, 4), (4, 3, 2, 3),
         dict(groups=2, stride=(2, 1), padding=(0, 1))),
        # output_padding may reach the stride when it stays below the dilation
        ("dilation2-outpad-beyond-stride", (2, 2, 3, 3), (2, 2, 2, 3),
         dict(dilation=2, output_padding=(1, 1))),
        ("depthwise-stride3-kernel2", (2, 3, 3, 2), (3, 1, 2, 2), dict(groups=3, stride=3)),
        ("nonsquare-dilation-pair", (1, 2, 4, 3), (2, 2, 1, 3),
         dict(stride=(1, 2), dilation=(1, 2), padding=(0, 2), output_padding=(0, 1))),
        ("unbatched", (3, 3, 4), (3, 2, 2, 3), dict(stride=2, padding=(1, 0))),
        ("kernel-larger-than-input", (2, 1, 2, 2), (1, 2, 3, 4), dict(padding=(1, 0)))]:
    add_case("conv_transpose2d", label + "-bias",
             lambda x, w, b, kw=kw: F.conv_transpose2d(x, w, b, **kw),
             lambda x, w, b, kw=kw: np_conv_transpose2d(x, w, b, **kw),
             rn(*sx), rn(*sw), rn(sw[1] * kw.get("groups", 1)))
    add_case("conv_transpose2d", label, lambda x, w, kw=kw: F.conv_transpose2d(x, w, **kw),
             lambda x, w, kw=kw: np_conv_transpose2d(x, w, **kw), rn(*sx), rn(*sw))
for label, sx, sw, kw in [
        ("basic", (2, 3, 5), (3, 4, 3), {}),
        ("stride2-pad1-outpad1", (2, 2, 6), (2, 3, 4), dict(stride=2, padding=1, output_padding=1)),
        ("groups-dilation", (1, 4, 5), (4, 1, 3), dict(groups=2, dilation=2, padding=2)),
        ("unbatched", (3, 4), (3, 2, 2), dict(stride=3))]:
    add_case("conv_transpose1d", label + "-bias",
             lambda x, w, b, kw=kw: F.conv_transpose1d(x, w, b, **kw),
             lambda x, w, b, kw=kw: np_conv_transpose1d(x, w, b, **kw),
             rn(*sx), rn(*sw), rn(sw[1] * kw.get("groups", 1)))
    add_case("conv_transpose1d", label, lambda x, w, kw=kw: F.conv_transpose1d(x, w, **kw),
             lambda x, w, kw=kw: np_conv_transpose1d(x, w, **kw), rn(*sx), rn(*sw))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: every argument of the transposed convolutions at once, in
    float64 and float32."""
    TF = torch.nn.functional
    rng = np.random.default_rng(3435)
    rn = partial(helpers.rn, rng)
    both = (np.float64, np.float32)

    add("conv_transpose2d", "stride-pad-outpad-groups-dilation",
        lambda x, w, b: F.conv_transpose2d(x, w, b, (2, 3), (1, 2), (1, 0), 2, (1, 2)),
        lambda x, w, b: TF.conv_transpose2d(x, w, b, (2, 3), (1, 2), (1, 0), 2, (1, 2)),
        rn(2, 4, 5, 6), rn(4, 3, 3, 2), rn(6), dtypes=both)
    # as torch's own samples: an output_padding of 3 = stride, allowed by dilation 4
    add("conv_transpose2d", "outpad-equal-to-stride-dilation4-groups",
        lambda x, w, b: F.conv_transpose2d(x, w, b, 3, (1, 2), (2, 3), 2, (4, 4)),
        lambda x, w, b: TF.conv_transpose2d(x, w, b, 3, (1, 2), (2, 3), 2, (4, 4)),
        rn(2, 2, 4, 4), rn(2, 1, 3, 3), rn(2))
    add("conv_transpose2d", "outpad-below-dilation-only",
        lambda x, w: F.conv_transpose2d(x, w, stride=1, output_padding=2, dilation=3),
        lambda x, w: TF.conv_transpose2d(x, w, stride=1, output_padding=2, dilation=3),
        rn(1, 2, 4, 4), rn(2, 3, 3, 3))
    add("conv_transpose2d", "unbatched",
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1),
        lambda x, w: TF.conv_transpose2d(x, w, stride=2, padding=1), rn(3, 4, 4), rn(3, 2, 3, 3))
    add("conv_transpose1d", "stride-pad-outpad-groups-dilation",
        lambda x, w, b: F.conv_transpose1d(x, w, b, 3, 2, 1, 3, 2),
        lambda x, w, b: TF.conv_transpose1d(x, w, b, 3, 2, 1, 3, 2),
        rn(2, 3, 7), rn(3, 2, 3), rn(6), dtypes=both)
    add("conv_transpose1d", "unbatched", lambda x, w: F.conv_transpose1d(x, w, stride=2),
        lambda x, w: TF.conv_transpose1d(x, w, stride=2), rn(3, 7), rn(3, 2, 3))
