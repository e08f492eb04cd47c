"""2-D pooling (PyTorch's ``max_pool2d`` and ``avg_pool2d``, NCHW), differentiable.

Both read the windows as kh·kw strided views of the (padded) input, one per kernel offset,
and send the gradient back with one strided add per offset; docs/backward.md §17 derives
them.
"""
from __future__ import annotations

import numpy as np

from ..checks import boolean, int_tuple
from ..defop import op
from .conv import out_size

__all__ = ["max_pool2d", "avg_pool2d"]


def _pool_args(x, kernel_size, stride, padding, op_name):
    """x as (B, C, H, W) (an unbatched (C, H, W) gets a batch axis), and the kernel, stride
    and padding as pairs; PyTorch's limits: padding at most half the kernel."""
    if x.ndim not in (3, 4):
        raise ValueError(f"{op_name} x: got shape {x.shape}; expected (B, C, H, W) or (C, H, W)")
    kernel = int_tuple(kernel_size, 2, op_name, "kernel_size", 1)
    stride = kernel if stride is None else int_tuple(stride, 2, op_name, "stride", 1)
    padding = int_tuple(padding, 2, op_name, "padding", 0)
    if any(2 * p > k for p, k in zip(padding, kernel, strict=True)):
        raise ValueError(f"{op_name} padding: got {padding} for kernel_size {kernel}; expected "
                         "at most half the kernel size (so that no window is all padding)")
    x4 = x[None] if x.ndim == 3 else x
    size = out_size(op_name, x4.shape[2:], [(p, p) for p in padding], kernel, (1, 1), stride)
    return x4, kernel, stride, padding, size


def _scatter_back(parts, shape, dtype, kernel, stride, padding, size):
    """Σ over kernel offsets (i, j) of parts(i, j, out), each (B, C, Ho, Wo), added onto the
    padded input's positions (p·sh + i, q·sw + j); the padding cropped off. Where windows
    do not overlap (stride >= kernel), each offset writes its own positions: parts(i, j,
    out) writes into the strided slice ``out`` itself, with no temporary and no add."""
    (kh, kw), (sh, sw), (ph, pw), (Ho, Wo) = kernel, stride, padding, size
    B, C, H, W = shape
    gxp = np.zeros((B, C, H + 2 * ph, W + 2 * pw), dtype=dtype)
    disjoint = sh >= kh and sw >= kw
    for i in range(kh):
        for j in range(kw):
            dest = gxp[:, :, i:i + sh * (Ho - 1) + 1:sh, j:j + sw * (Wo - 1) + 1:sw]
            if disjoint:
                parts(i, j, dest)
            else:
                dest += parts(i, j, None)
    return gxp[:, :, ph:ph + H, pw:pw + W] if ph or pw else gxp


@op(arrays=1)
def max_pool2d(x, kernel_size, stride=None, padding=0):
    """out[b, c, p, q] = max_{i,j} xpad[b, c, p·sh + i, q·sw + j], xpad padded with -inf.

    x (B, C, H, W) or (C, H, W); ``kernel_size``, ``stride`` (default: the kernel size) and
    ``padding`` (at most half the kernel) are ints or pairs. Output Ho = (H + 2·ph - kh) //
    sh + 1. VJP: x̄ gets g at each window's argmax, summed where windows overlap. Ties go
    to the first maximum of the window in row-major order, and a window holding NaN to its
    last NaN (its output is NaN): where PyTorch's CPU kernel sends them.
    Derivation: docs/backward.md §17. Tests: tests/minigrad/op_cases/conv.py,
    tests/minigrad/ops/test_pool.py.
    """
    x4, kernel, stride, padding, (Ho, Wo) = _pool_args(x, kernel_size, stride, padding,
                                                       "max_pool2d")
    (kh, kw), (ph, pw) = kernel, padding
    if ph or pw:
        low = -np.inf if x4.dtype.kind == "f" else (
            False if x4.dtype.kind == "b" else np.iinfo(x4.dtype).min)
        x4 = np.pad(x4, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=low)
    (sh, sw) = stride
    def part(k):  # the k-th kernel offset of every window, row-major: (B, C, Ho, Wo)
        i, j = divmod(k, kw)
        return x4[:, :, i:i + sh * (Ho - 1) + 1:sh, j:j + sw * (Wo - 1) + 1:sw]

    out = part(0).copy()
    for k in range(1, kh * kw):
        np.maximum(out, part(k), out=out)  # NaN wins, as in PyTorch's scan
    # Where the gradient goes, by PyTorch's rule (its scan replaces the running maximum only
    # by a larger element or a NaN): the first offset equal to the maximum, row-major, so
    # ties keep the first; a window with NaN (its output is NaN) ends on its last NaN.
    idx = np.zeros(out.shape, dtype=np.uint8 if kh * kw < 256 else np.intp)
    found = np.zeros(out.shape, dtype=bool)
    H, W = x4.shape[2] - 2 * ph, x4.shape[3] - 2 * pw
    for k in range(kh * kw):
        hit = part(k) == out
        if ph or pw:  # a padded -inf never takes the gradient, even from a window of -inf
            i, j = divmod(k, kw)
            rows = (np.arange(Ho) * sh + i >= ph) & (np.arange(Ho) * sh + i < ph + H)
            cols = (np.arange(Wo) * sw + j >= pw) & (np.arange(Wo) * sw + j < pw + W)
            hit &= rows[:, None] & cols
        hit &= ~found
        found |= hit
        if k:
            idx += hit * idx.dtype.type(k)
    if x4.dtype.kind == "f" and not found.all():  # windows whose maximum is NaN
        for k in range(kh * kw):
            nan_here = np.isnan(part(k)) & ~found
            idx[nan_here] = k  # later NaNs overwrite: the last one stays
    shape = x.shape if x.ndim == 4 else (1,) + x.shape

    def vjp(g):
        g4 = g if g.ndim == 4 else g[None]
        def part(i, j, out):  # g where offset (i, j) holds the window's maximum, else 0
            return np.multiply(g4, idx == i * kw + j, out=out)

        gx = _scatter_back(part, shape, g.dtype, kernel, stride, padding, (Ho, Wo))
        return gx if x.ndim == 4 else gx[0]

    return (out if x.ndim == 4 else out[0]), vjp


@op(arrays=1)
def avg_pool2d(x, kernel_size, stride=None, padding=0, count_include_pad=True):
    """out[b, c, p, q] = (1/n) Σ_{i,j} xpad[b, c, p·sh + i, q·sw + j], xpad zero-padded.

    Arguments as ``max_pool2d``'s. n = kh·kw, the padding zeros counted
    (``count_include_pad=True``, PyTorch's default); with False, n is the number of real
    elements in the window. VJP: x̄ = Σ over the windows holding an element of g / n.
    Derivation: docs/backward.md §17. Tests: tests/minigrad/op_cases/conv.py,
    tests/minigrad/ops/test_pool.py.
    """
    x4, kernel, stride, padding, (Ho, Wo) = _pool_args(x, kernel_size, stride, padding,
                                                       "avg_pool2d")
    count_include_pad = boolean("count_include_pad", count_include_pad, owner="avg_pool2d")
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    if x4.dtype.kind != "f":
        x4 = x4.astype(np.float64)  # as mean does
    xp = np.pad(x4, ((0, 0), (0, 0), (ph, ph), (pw, pw))) if ph or pw else x4
    total = np.zeros(x4.shape[:2] + (Ho, Wo), dtype=x4.dtype)
    for i in range(kh):  # the window sum, offset by offset (no (..., kh, kw) copy)
        for j in range(kw):
            total += xp[:, :, i:i + sh * (Ho - 1) + 1:sh, j:j + sw * (Wo - 1) + 1:sw]
    if count_include_pad:
        n = kh * kw
    else:  # real elements per window: a product of the per-axis counts
        def counts(size, k, s, p, m):
            start = np.arange(m) * s - p
            return np.minimum(start + k, size) - np.maximum(start, 0)
        n = np.outer(counts(x4.shape[2], kh, sh, ph, Ho),
                     counts(x4.shape[3], kw, sw, pw, Wo)).astype(x4.dtype)
    out = total / n
    shape = x4.shape

    def vjp(g):
        g4 = g if g.ndim == 4 else g[None]
        share = g4 / n
        def part(i, j, out):
            return share if out is None else np.copyto(out, share)

        gx = _scatter_back(part, shape, share.dtype, kernel, stride, padding, (Ho, Wo))
        return gx if x.ndim == 4 else gx[0]

    return (out if x.ndim == 4 else out[0]), vjp
