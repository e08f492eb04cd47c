"""Cases for minigrad/ops/resize.py: interpolate in every mode (sizes, factors such as 1.5 and
0.5, align_corners both ways, odd sizes) and adaptive average pooling (windows that divide
the input, overlap, and repeat elements). References compute each output element from its
source position, in float64 and one element at a time."""
from __future__ import annotations

import math
from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import add_case, torch_table

_rng = np.random.default_rng(3737)  # this family's own inputs (see base.py)
rn = partial(helpers.rn, _rng)


def _out_size(n, size, factor):
    return size if size is not None else math.floor(n * factor)


def _taps(n, m, mode, align_corners, factor):
    """[(index, weight), ...] for each of the m outputs along an axis of n, from the
    definition: nearest reads floor(o · s); linear reads the two neighbours of its source
    position, weighted by its distance to them."""
    s = 1.0 / factor if factor is not None else n / m
    taps = []
    for o in range(m):
        if mode == "nearest":
            taps.append([(min(int(np.floor(o * s)), n - 1), 1.0)])
            continue
        if align_corners:
            r = o * (n - 1) / (m - 1) if m > 1 else 0.0
        else:
            r = max(s * (o + 0.5) - 0.5, 0.0)
        left = min(int(np.floor(r)), n - 1)
        frac = r - left
        right = min(left + 1, n - 1)
        taps.append([(left, 1.0 - frac), (right, frac)])
    return taps


def np_interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Every output element as Σ weight · x[source] (a product of per-axis weights in 2-D)."""
    spatial = x.shape[2:]
    sizes = size if isinstance(size, tuple) else (size,) * len(spatial)
    factors = scale_factor if isinstance(scale_factor, tuple) else (scale_factor,) * len(spatial)
    kind = "nearest" if mode == "nearest" else "linear"
    axes = [_taps(n, _out_size(n, s, f), kind, align_corners, f)
            for n, s, f in zip(spatial, sizes, factors, strict=True)]
    out = np.zeros(x.shape[:2] + tuple(len(a) for a in axes))
    for index in np.ndindex(*out.shape[2:]):
        total = np.zeros(x.shape[:2])
        if len(axes) == 1:
            for i, w in axes[0][index[0]]:
                total += w * x[:, :, i]
        else:
            for i, wi in axes[0][index[0]]:
                for j, wj in axes[1][index[1]]:
                    total += wi * wj * x[:, :, i, j]
        out[(slice(None), slice(None)) + index] = total
    return out


def np_adaptive_avg(x, output_size, n_axes):
    """Each window's mean, its bounds floor(o·n/m) and ceil((o+1)·n/m) from the definition."""
    unbatched = x.ndim == n_axes + 1
    x = x[None] if unbatched else x
    sizes = output_size if isinstance(output_size, tuple) else (output_size,) * n_axes
    sizes = tuple(n if m is None else m for n, m in zip(x.shape[2:], sizes, strict=True))

    def window(o, n, m):
        return slice(math.floor(o * n / m), math.ceil((o + 1) * n / m))

    out = np.zeros(x.shape[:2] + sizes)
    for index in np.ndindex(*sizes):
        region = (slice(None), slice(None)) + tuple(
            window(o, n, m) for o, n, m in zip(index, x.shape[2:], sizes, strict=True))
        out[(slice(None), slice(None)) + index] = x[region].mean(axis=tuple(range(2, 2 + n_axes)))
    return out[0] if unbatched else out


for label, shape, kw in [
        ("nearest-size-up-odd", (2, 3, 5), dict(size=8)),
        ("nearest-size-down", (1, 2, 9), dict(size=4)),
        ("nearest-factor-2", (2, 2, 3), dict(scale_factor=2)),
        ("nearest-factor-0.5-odd", (1, 3, 7), dict(scale_factor=0.5)),
        ("linear-size-up", (2, 3, 5), dict(size=9, mode="linear")),
        ("linear-factor-1.5", (1, 2, 5), dict(scale_factor=1.5, mode="linear")),
        ("linear-factor-0.5", (2, 2, 7), dict(scale_factor=0.5, mode="linear")),
        ("linear-align-corners", (2, 2, 4), dict(size=7, mode="linear", align_corners=True)),
        ("linear-align-corners-down", (1, 3, 9), dict(size=4, mode="linear",
                                                     align_corners=True)),
        ("linear-to-1", (1, 2, 5), dict(size=1, mode="linear", align_corners=True)),
        ("nearest-2d-size", (2, 2, 3, 5), dict(size=(7, 4))),
        ("nearest-2d-factor-1.5", (1, 3, 4, 5), dict(scale_factor=1.5)),
        ("bilinear-size", (2, 2, 3, 5), dict(size=(5, 8), mode="bilinear")),
        ("bilinear-factor-pair", (1, 2, 5, 4), dict(scale_factor=(1.5, 0.5), mode="bilinear")),
        ("bilinear-align-corners", (2, 2, 4, 3), dict(size=(7, 6), mode="bilinear",
                                                      align_corners=True)),
        ("bilinear-align-corners-down", (1, 2, 7, 9), dict(scale_factor=0.5, mode="bilinear",
                                                           align_corners=True))]:
    add_case("interpolate", label, lambda x, kw=kw: F.interpolate(x, **kw),
             lambda x, kw=kw: np_interpolate(x, **kw), rn(*shape))

for label, shape, size in [("divides", (2, 3, 8), 4), ("overlapping", (2, 2, 7), 3),
                           ("upsampling", (1, 3, 3), 5), ("unbatched", (3, 10), 4),
                           ("to-1", (2, 2, 5), 1)]:
    add_case("adaptive_avg_pool1d", label, lambda x, s=size: F.adaptive_avg_pool1d(x, s),
             lambda x, s=size: np_adaptive_avg(x, s, 1), rn(*shape))
for label, shape, size in [("divides", (2, 3, 8, 6), (4, 3)), ("overlapping", (1, 2, 7, 5), 3),
                           ("mixed", (2, 2, 5, 9), (7, 4)), ("unbatched", (3, 6, 5), (4, 2)),
                           ("none-keeps", (1, 2, 5, 6), (None, 4)), ("to-1x1", (2, 3, 4, 5), 1)]:
    add_case("adaptive_avg_pool2d", label, lambda x, s=size: F.adaptive_avg_pool2d(x, s),
             lambda x, s=size: np_adaptive_avg(x, s, 2), rn(*shape))


def np_adaptive_max(x, output_size):
    """Each window's maximum, its bounds from the definition (no ties in these inputs)."""
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    sizes = output_size if isinstance(output_size, tuple) else (output_size,) * 2
    (H, W), (Ho, Wo) = x.shape[2:], sizes
    out = np.zeros(x.shape[:2] + sizes)
    for p in range(Ho):
        for q in range(Wo):
            rows = slice(math.floor(p * H / Ho), math.ceil((p + 1) * H / Ho))
            cols = slice(math.floor(q * W / Wo), math.ceil((q + 1) * W / Wo))
            out[:, :, p, q] = x[:, :, rows, cols].max(axis=(2, 3))
    return out[0] if unbatched else out


for label, shape, size in [("divides", (2, 3, 8, 6), (4, 3)), ("overlapping", (1, 2, 7, 5), 3),
                           ("upsampling", (2, 2, 3, 4), (5, 7)), ("unbatched", (3, 6, 5), (4, 2))]:
    add_case("adaptive_max_pool2d", label, lambda x, s=size: F.adaptive_max_pool2d(x, s),
             lambda x, s=size: np_adaptive_max(x, s), rn(*shape))
add_case("adaptive_max_pool2d", "indices-values",
         lambda x: F.adaptive_max_pool2d(x, (2, 3), return_indices=True)[0],
         lambda x: np_adaptive_max(x, (2, 3)), rn(2, 2, 5, 7))


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Every mode and option against PyTorch autograd, in float64 and float32 (where the
    source positions are computed in float32: the same indices, or the values would differ
    by far more than the tolerance)."""
    TF = torch.nn.functional
    rng = np.random.default_rng(3738)
    rn = partial(helpers.rn, rng)

    def case(op, label, fn, torch_fn, x):
        add(op, label, fn, torch_fn, x, dtypes=(np.float64, np.float32))

    for mode, shape in [("nearest", (2, 3, 7)), ("linear", (2, 3, 7)),
                        ("nearest", (2, 2, 5, 7)), ("bilinear", (2, 2, 5, 7))]:
        corners = (None,) if mode == "nearest" else (False, True)
        n = len(shape) - 2
        for ac in corners:
            for kw in (dict(size=(11,) * n), dict(size=(3,) * n), dict(scale_factor=1.5),
                       dict(scale_factor=0.5), dict(scale_factor=1.7),
                       dict(scale_factor=2.5, recompute_scale_factor=True)):
                label = f"{mode}-{n}d-{'-'.join(f'{k}={v}' for k, v in kw.items())}-ac={ac}"
                case("interpolate", label,
                     lambda a, m=mode, ac=ac, kw=kw: F.interpolate(a, mode=m, align_corners=ac,
                                                                   **kw),
                     lambda a, m=mode, ac=ac, kw=kw: TF.interpolate(a, mode=m, align_corners=ac,
                                                                    **kw),
                     rn(*shape))
    for size in (1, 3, 4, 5, 9):
        case("adaptive_avg_pool1d", f"size={size}", lambda a, s=size: F.adaptive_avg_pool1d(a, s),
             lambda a, s=size: TF.adaptive_avg_pool1d(a, s), rn(2, 3, 7))
    for size in (1, (3, 2), (4, 5), (None, 3), (9, 11)):
        case("adaptive_avg_pool2d", f"size={size}",
             lambda a, s=size: F.adaptive_avg_pool2d(a, s),
             lambda a, s=size: TF.adaptive_avg_pool2d(a, s), rn(2, 3, 7, 6))
        case("adaptive_max_pool2d", f"size={size}",
             lambda a, s=size: F.adaptive_max_pool2d(a, s),
             lambda a, s=size: TF.adaptive_max_pool2d(a, s), rn(2, 3, 7, 6))
