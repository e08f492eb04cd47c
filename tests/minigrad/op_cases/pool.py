"""Cases for minigrad/ops/pool.py's options beyond op_cases/conv.py's basic pools: ceil_mode
(a last window that is partial), dilation, divisor_override, 1-D pooling and max_unpool2d.
References visit every window element by element from its definition."""
from __future__ import annotations

import math
from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import add_case, torch_table

_rng = np.random.default_rng(3838)  # this family's own inputs (see base.py)
rn = partial(helpers.rn, _rng)


def _pair(v):
    return tuple(v) if isinstance(v, tuple) else (v, v)


def _n_windows(n, k, s, p, d, ceil_mode):
    """PyTorch's output length: floor or ceil of (n + 2p - span)/s, plus one; in ceil mode a
    window starting at or past n + p (right padding only) is dropped."""
    span = d * (k - 1) + 1
    rounding = math.ceil if ceil_mode else math.floor
    m = rounding((n + 2 * p - span) / s) + 1
    return m - 1 if ceil_mode and (m - 1) * s >= n + p else m


def np_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, kind="max",
              count_include_pad=True, divisor=None):
    """Each window in turn over the elements it reads inside the input: their max, or their
    sum over the divisor (the window's size within the padded input, its real elements, or
    ``divisor``)."""
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    (kh, kw), (dh, dw), (ph, pw) = _pair(kernel_size), _pair(dilation), _pair(padding)
    sh, sw = _pair(kernel_size if stride is None else stride)
    B, C, H, W = x.shape
    Ho = _n_windows(H, kh, sh, ph, dh, ceil_mode)
    Wo = _n_windows(W, kw, sw, pw, dw, ceil_mode)
    out = np.zeros((B, C, Ho, Wo))
    for p in range(Ho):
        for q in range(Wo):
            r0, c0 = p * sh - ph, q * sw - pw
            rows = [r0 + i * dh for i in range(kh) if 0 <= r0 + i * dh < H]
            cols = [c0 + j * dw for j in range(kw) if 0 <= c0 + j * dw < W]
            block = x[:, :, rows][:, :, :, cols]
            if kind == "max":
                out[:, :, p, q] = block.max(axis=(2, 3))
                continue
            in_padded = (min(r0 + kh, H + ph) - r0) * (min(c0 + kw, W + pw) - c0)
            n = divisor or (in_padded if count_include_pad else len(rows) * len(cols))
            out[:, :, p, q] = block.sum(axis=(2, 3)) / n
    return out[0] if unbatched else out


def np_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, kind="max",
              count_include_pad=True):
    """The 2-D reference over a single row."""
    out = np_pool2d(x[..., None, :], (1, kernel_size),
                    (1, kernel_size if stride is None else stride),
                    (0, padding), (1, dilation), ceil_mode, kind, count_include_pad)
    return out[..., 0, :]


def np_unpool(x, indices, size):
    """Zeros of ``size`` per plane, each x element written at its flat index."""
    out = np.zeros(x.shape[:-2] + (size[0] * size[1],))
    for plane in np.ndindex(*x.shape[:-2]):
        for value, at in zip(x[plane].ravel(), indices[plane].ravel(), strict=True):
            out[plane + (at,)] = value
    return out.reshape(x.shape[:-2] + tuple(size))


def _indices(shape, size):
    """Distinct flat indices into planes of ``size``, one per element of ``shape``."""
    count = shape[-1] * shape[-2]
    planes = [_rng.permutation(size[0] * size[1])[:count] for _ in np.ndindex(*shape[:-2])]
    return np.array(planes).reshape(shape)


# ceil_mode: 7 with kernel 2, stride 2 leaves a last window of one element (and of two with
# padding 1: the last starts inside); 6 with kernel 3, stride 2 has one starting at 5.
for label, shape, args in [
        ("ceil-partial-last", (2, 2, 7, 7), dict(kernel_size=2, ceil_mode=True)),
        ("ceil-pad1", (1, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
        ("ceil-k3s2-pair", (2, 2, 6, 5), dict(kernel_size=(3, 2), stride=(2, 3),
                                              ceil_mode=True)),
        ("ceil-unbatched", (3, 5, 8), dict(kernel_size=2, stride=3, ceil_mode=True))]:
    add_case("max_pool2d", label, lambda x, a=args: F.max_pool2d(x, **a),
             lambda x, a=args: np_pool2d(x, kind="max", **a), rn(*shape))
    add_case("avg_pool2d", label, lambda x, a=args: F.avg_pool2d(x, **a),
             lambda x, a=args: np_pool2d(x, kind="avg", **a), rn(*shape))
for label, shape, args in [
        ("dilation2", (2, 2, 7, 7), dict(kernel_size=2, stride=1, dilation=2)),
        ("dilation-pair-pad", (1, 2, 8, 7), dict(kernel_size=3, stride=2, padding=1,
                                                 dilation=(2, 1))),
        ("dilation-ceil", (2, 1, 9, 8), dict(kernel_size=2, stride=3, dilation=3,
                                             ceil_mode=True))]:
    add_case("max_pool2d", label, lambda x, a=args: F.max_pool2d(x, **a),
             lambda x, a=args: np_pool2d(x, kind="max", **a), rn(*shape))
add_case("max_pool2d", "return-indices-values",
         lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True)[0],
         lambda x: np_pool2d(x, 3, 2, 1), rn(2, 2, 7, 6))
for label, shape, args in [
        ("divisor-override", (2, 2, 6, 6), dict(kernel_size=3, stride=2, padding=1,
                                                divisor_override=4)),
        ("divisor-negative-ceil", (1, 2, 7, 5), dict(kernel_size=2, ceil_mode=True,
                                                     divisor_override=-3)),
        ("exclude-pad-ceil", (2, 2, 7, 8), dict(kernel_size=3, stride=2, padding=1,
                                                count_include_pad=False, ceil_mode=True))]:
    add_case("avg_pool2d", label, lambda x, a=args: F.avg_pool2d(x, **a),
             lambda x, a=args: np_pool2d(x, kind="avg", divisor=a.get("divisor_override"),
                                         **{k: v for k, v in a.items()
                                            if k != "divisor_override"}), rn(*shape))

for label, shape, args in [
        ("k2", (2, 3, 8), dict(kernel_size=2)), ("k3s2p1", (2, 2, 9), dict(kernel_size=3,
                                                                            stride=2, padding=1)),
        ("ceil", (1, 3, 7), dict(kernel_size=2, stride=2, ceil_mode=True)),
        ("unbatched", (3, 10), dict(kernel_size=3, stride=1))]:
    add_case("max_pool1d", label, lambda x, a=args: F.max_pool1d(x, **a),
             lambda x, a=args: np_pool1d(x, kind="max", **a), rn(*shape))
    add_case("avg_pool1d", label, lambda x, a=args: F.avg_pool1d(x, **a),
             lambda x, a=args: np_pool1d(x, kind="avg", **a), rn(*shape))
add_case("max_pool1d", "dilation", lambda x: F.max_pool1d(x, 3, 1, 1, dilation=2),
         lambda x: np_pool1d(x, 3, 1, 1, dilation=2), rn(2, 2, 9))
add_case("avg_pool1d", "exclude-pad", lambda x: F.avg_pool1d(x, 4, 3, 2, count_include_pad=False),
         lambda x: np_pool1d(x, 4, 3, 2, kind="avg", count_include_pad=False), rn(2, 2, 9))

for label, shape, args, size in [
        ("k2", (2, 2, 3, 3), dict(kernel_size=2), (6, 6)),
        ("k3s2p1", (1, 3, 4, 3), dict(kernel_size=3, stride=2, padding=1), (7, 5)),
        ("output-size", (2, 1, 3, 4), dict(kernel_size=2, output_size=(7, 9)), (7, 9)),
        ("unbatched", (2, 3, 2), dict(kernel_size=(2, 3), stride=(3, 2)), (8, 5))]:
    idx = _indices(shape, size)
    add_case("max_unpool2d", label, lambda x, i, a=args: F.max_unpool2d(x, i, **a),
             lambda x, i, s=size: np_unpool(x, i, s), rn(*shape), idx)


# ---- against PyTorch autograd (built only by ops/test_all_ops_torch.py) -------------------------
@torch_table
def _torch_references(torch, add):
    """Every new option against PyTorch autograd, float64 and float32 (the indices and the
    tie rules: ops/test_pool_options.py)."""
    TF = torch.nn.functional
    rng = np.random.default_rng(3839)
    rn = partial(helpers.rn, rng)

    def case(op, label, fn, torch_fn, *inputs):
        add(op, label, fn, torch_fn, *inputs, dtypes=(np.float64, np.float32))

    for k, s, p, d in [(2, 2, 0, 1), (3, 2, 1, 1), (2, 3, 1, 2), (3, 2, 1, 2)]:
        label = f"k{k}-s{s}-p{p}-d{d}-ceil"
        case("max_pool2d", label, lambda a, k=k, s=s, p=p, d=d: F.max_pool2d(a, k, s, p, d, True),
             lambda a, k=k, s=s, p=p, d=d: TF.max_pool2d(a, k, s, p, d, True), rn(2, 2, 8, 7))
        case("max_pool1d", label, lambda a, k=k, s=s, p=p, d=d: F.max_pool1d(a, k, s, p, d, True),
             lambda a, k=k, s=s, p=p, d=d: TF.max_pool1d(a, k, s, p, d, True), rn(2, 3, 9))
    for k, s, p, include in [(2, 2, 0, True), (3, 2, 1, True), (3, 2, 1, False), (2, 3, 1, True)]:
        label = f"k{k}-s{s}-p{p}-include={include}-ceil"
        case("avg_pool2d", label,
             lambda a, k=k, s=s, p=p, c=include: F.avg_pool2d(a, k, s, p, c, ceil_mode=True),
             lambda a, k=k, s=s, p=p, c=include: TF.avg_pool2d(a, k, s, p, True, c),
             rn(2, 2, 7, 8))
        case("avg_pool1d", label, lambda a, k=k, s=s, p=p, c=include: F.avg_pool1d(a, k, s, p,
                                                                                    True, c),
             lambda a, k=k, s=s, p=p, c=include: TF.avg_pool1d(a, k, s, p, True, c), rn(2, 3, 9))
    case("avg_pool2d", "divisor-override", lambda a: F.avg_pool2d(a, 3, 2, 1, divisor_override=5),
         lambda a: TF.avg_pool2d(a, 3, 2, 1, divisor_override=5), rn(2, 2, 7, 7))
    x = rn(2, 3, 7, 9)
    _, indices = TF.max_pool2d(torch.tensor(x), 2, 2, 0, 1, True, True)
    case("max_unpool2d", "from-max-pool-ceil",
         lambda a: F.max_unpool2d(a, indices.numpy(), 2, output_size=(7, 9)),
         lambda a: TF.max_unpool2d(a, indices, 2, output_size=(7, 9)), rn(2, 3, 4, 5))
