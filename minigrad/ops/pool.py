"""Pooling (PyTorch's ``max_pool1d/2d``, ``avg_pool1d/2d`` and ``max_unpool2d``, NCHW),
differentiable.

The pools read the windows as kh·kw strided views of the (padded) input, one per kernel
offset, and send the gradient back with one strided add per offset; docs/backward.md §17
derives them and §38 the additions (``ceil_mode``, dilation, indices, unpooling, the
divisor). A 1-D pool is the 2-D one over a (B, C, 1, L) view.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..checks import boolean, int_tuple, integer
from ..defop import op
from . import bounds
from .conv import out_size

__all__ = ["max_pool2d", "avg_pool2d", "max_pool1d", "avg_pool1d", "max_unpool2d"]


class _Geometry(NamedTuple):
    kernel: tuple
    stride: tuple
    padding: tuple
    dilation: tuple
    size: tuple  # the output's (Ho, Wo)
    extra: tuple  # padding past the right/bottom edge that ceil_mode's last window reads


def _as_4d(x, nd, op_name):
    """x as (B, C, H, W): an unbatched input gets a batch axis, a 1-D one a row axis."""
    if x.ndim not in (nd + 1, nd + 2):
        shape = "(B, C, H, W) or (C, H, W)" if nd == 2 else "(B, C, L) or (C, L)"
        raise ValueError(f"{op_name} x: got shape {x.shape}; expected {shape}")
    x = x[None] if x.ndim == nd + 1 else x
    return x[:, :, None, :] if nd == 1 else x


def _pool_args(x, kernel_size, stride, padding, op_name, nd=2, dilation=1, ceil_mode=False):
    """x as (B, C, H, W) and the window geometry; PyTorch's limits: padding at most half the
    kernel; with ``ceil_mode`` a last, partial window when it starts inside the input or its
    left padding."""
    x4 = _as_4d(x, nd, op_name)
    kernel = int_tuple(kernel_size, nd, op_name, "kernel_size", 1)
    stride = kernel if stride is None else int_tuple(stride, nd, op_name, "stride", 1)
    padding = int_tuple(padding, nd, op_name, "padding", 0)
    dilation = int_tuple(dilation, nd, op_name, "dilation", 1)
    ceil_mode = boolean("ceil_mode", ceil_mode, owner=op_name)
    if any(2 * p > k for p, k in zip(padding, kernel, strict=True)):
        raise ValueError(f"{op_name} padding: got {padding} for kernel_size {kernel}; expected "
                         "at most half the kernel size (so that no window is all padding)")
    if nd == 1:
        kernel, stride, dilation = ((1,) + t for t in (kernel, stride, dilation))
        padding = (0,) + padding
    size = out_size(op_name, x4.shape[2:], [(p, p) for p in padding], kernel, dilation, stride)
    extra = (0, 0)
    if ceil_mode:
        size, extra = zip(*(_ceil_size(n, k, s, p, d, floor) for n, k, s, p, d, floor in zip(
            x4.shape[2:], kernel, stride, padding, dilation, size, strict=True)), strict=True)
    return x4, _Geometry(kernel, stride, padding, dilation, tuple(size), tuple(extra))


def _ceil_size(n, k, s, p, d, floor):
    """(m, extra): one more window than floor mode's when the remainder leaves a partial
    window starting before n + p; extra = how far the last window reads past n + 2p."""
    span = d * (k - 1) + 1
    m = floor + (1 if (n + 2 * p - span) % s else 0)
    if (m - 1) * s >= n + p:
        m -= 1
    return m, max(0, (m - 1) * s + span - (n + 2 * p))


def _offset(a, i, j, g):
    """The (i, j)-th kernel offset of every window of the padded array ``a``: (B, C, Ho, Wo)."""
    (sh, sw), (dh, dw), (Ho, Wo) = g.stride, g.dilation, g.size
    return a[:, :, i * dh:i * dh + sh * (Ho - 1) + 1:sh, j * dw:j * dw + sw * (Wo - 1) + 1:sw]


def _padded(x4, g, value):
    (ph, pw), (eh, ew) = g.padding, g.extra
    if not (ph or pw or eh or ew):
        return x4
    return np.pad(x4, ((0, 0), (0, 0), (ph, ph + eh), (pw, pw + ew)), constant_values=value)


def _scatter_back(parts, shape, dtype, g):
    """Σ over kernel offsets (i, j) of parts(i, j, out), each (B, C, Ho, Wo), added onto the
    padded input's positions (p·sh + i·dh, q·sw + j·dw); the padding cropped off. Where no
    two windows share an element (stride >= the dilated kernel), each offset writes its own
    positions: parts(i, j, out) writes into the strided slice ``out``, no temporary, no add."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = g.kernel, g.stride, g.padding, g.dilation
    B, C, H, W = shape
    gxp = np.zeros((B, C, H + 2 * ph + g.extra[0], W + 2 * pw + g.extra[1]), dtype=dtype)
    disjoint = sh >= dh * (kh - 1) + 1 and sw >= dw * (kw - 1) + 1
    for i in range(kh):
        for j in range(kw):
            dest = _offset(gxp, i, j, g)
            if disjoint:
                parts(i, j, dest)
            else:
                dest += parts(i, j, None)
    if ph or pw or g.extra != (0, 0):
        return gxp[:, :, ph:ph + H, pw:pw + W]
    return gxp


def _starts(m, s, p):
    """Where each of m windows starts, padding included: i·s - p (a stride past a C long
    leaves one window, and never reaches NumPy)."""
    return np.arange(m) * (s if m > 1 else 0) - p


def _as_shape(gx, shape):
    """gx itself when it has the shape (the engine keeps a returned array that owns its data
    as the gradient, where it would copy a view)."""
    return gx if gx.shape == shape else gx.reshape(shape)


def _max_pool(x, g, x4, return_indices, unbatch):
    """(output(s), vjp) of a max pool over the (B, C, H, W) array ``x4``; ``unbatch`` maps a
    (B, C, Ho, Wo) result back to the caller's layout, ``x.ndim`` its input's."""
    (kh, kw), (ph, pw) = g.kernel, g.padding
    H, W = x4.shape[2:]
    low = -np.inf if x4.dtype.kind == "f" else (
        False if x4.dtype.kind == "b" else np.iinfo(x4.dtype).min)
    xp = _padded(x4, g, low)
    def part(k):  # the k-th kernel offset of every window, row-major
        i, j = divmod(k, kw)
        return _offset(xp, i, j, g)

    out = part(0).copy()
    for k in range(1, kh * kw):
        np.maximum(out, part(k), out=out)  # NaN wins, as in PyTorch's scan
    # Where the gradient goes, by PyTorch's rule (its scan replaces the running maximum only
    # by a larger element or a NaN): the first offset equal to the maximum, row-major, so
    # ties keep the first; a window with NaN (its output is NaN) ends on its last NaN.
    idx = np.zeros(out.shape, dtype=np.uint8 if kh * kw < 256 else np.intp)
    found = np.zeros(out.shape, dtype=bool)
    rows0 = _starts(g.size[0], g.stride[0], ph)  # each window's first row in x4
    cols0 = _starts(g.size[1], g.stride[1], pw)
    padded = xp is not x4
    for k in range(kh * kw):
        hit = part(k) == out
        if padded:  # a padded -inf never takes the gradient, even from a window of -inf
            i, j = divmod(k, kw)
            rows = (rows0 + i * g.dilation[0] >= 0) & (rows0 + i * g.dilation[0] < H)
            cols = (cols0 + j * g.dilation[1] >= 0) & (cols0 + j * g.dilation[1] < W)
            hit &= rows[:, None] & cols
        hit &= ~found
        found |= hit
        if k:
            idx += hit * idx.dtype.type(k)
    if x4.dtype.kind == "f" and not found.all():  # windows whose maximum is NaN
        for k in range(kh * kw):
            nan_here = np.isnan(part(k)) & ~found
            idx[nan_here] = k  # later NaNs overwrite: the last one stays
    shape = x4.shape

    def vjp(gy):
        gy = gy[0] if return_indices else gy
        g4 = gy.reshape(out.shape)
        def parts(i, j, dest):  # g where offset (i, j) holds the window's maximum, else 0
            return np.multiply(g4, idx == i * kw + j, out=dest)

        return _as_shape(_scatter_back(parts, shape, gy.dtype, g), x.shape)

    if not return_indices:
        return unbatch(out), vjp
    i, j = np.divmod(idx.astype(np.int64), kw)  # flat indices into each (H, W) plane
    flat = ((rows0[:, None] + i * g.dilation[0]) * W + cols0 + j * g.dilation[1])
    return (unbatch(out), unbatch(flat)), vjp


def _unbatch(x, nd):
    def shaped(a):
        a = a[:, :, 0] if nd == 1 else a
        return a if x.ndim == nd + 2 else a[0]
    return shaped


@op(arrays=1)
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """out[b, c, p, q] = max_{i,j} xpad[b, c, p·sh + i·dh, q·sw + j·dw], xpad padded with -inf.

    x (B, C, H, W) or (C, H, W); ``kernel_size``, ``stride`` (default: the kernel size),
    ``padding`` (at most half the kernel) and ``dilation`` are ints or pairs. Output Ho =
    (H + 2·ph - dh·(kh - 1) - 1) // sh + 1, rounded up instead with ``ceil_mode`` (a last,
    partial window, if it starts inside the input or its left padding). VJP: x̄ gets g at
    each window's argmax, summed where windows overlap. Ties go to the first maximum of the
    window in row-major order, and a window holding NaN to its last NaN (its output is NaN):
    where PyTorch's CPU kernel sends them. ``return_indices``: also those argmaxes, as flat
    int64 indices into each (H, W) plane (``max_unpool2d``'s input).
    Derivation: docs/backward.md §17, §38. Tests: tests/minigrad/op_cases/conv.py,
    tests/minigrad/op_cases/pool.py, tests/minigrad/ops/test_pool.py.
    """
    x4, g = _pool_args(x, kernel_size, stride, padding, "max_pool2d", 2, dilation, ceil_mode)
    return_indices = boolean("return_indices", return_indices, owner="max_pool2d")
    return _max_pool(x, g, x4, return_indices, _unbatch(x, 2))


@op(arrays=1)
def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """out[b, c, p] = max_i xpad[b, c, p·s + i·d], xpad padded with -inf.

    x (B, C, L) or (C, L); arguments, ties, NaN and indices (into L) as ``max_pool2d``'s,
    ints or 1-tuples. VJP: x̄ gets g at each window's argmax, summed where windows overlap.
    Derivation: docs/backward.md §17, §38. Tests: tests/minigrad/op_cases/pool.py.
    """
    x4, g = _pool_args(x, kernel_size, stride, padding, "max_pool1d", 1, dilation, ceil_mode)
    return_indices = boolean("return_indices", return_indices, owner="max_pool1d")
    return _max_pool(x, g, x4, return_indices, _unbatch(x, 1))


def _avg_pool(x, g, x4, count_include_pad, divisor, unbatch):
    """(output, vjp) of an average pool over the (B, C, H, W) array ``x4``."""
    (kh, kw), (Ho, Wo) = g.kernel, g.size
    if x4.dtype.kind != "f":
        x4 = x4.astype(np.float64)  # as mean does
    xp = _padded(x4, g, 0)
    total = np.zeros(x4.shape[:2] + (Ho, Wo), dtype=x4.dtype)
    for i in range(kh):  # the window sum, offset by offset (no (..., kh, kw) copy)
        for j in range(kw):
            total += _offset(xp, i, j, g)

    def counts(n, k, s, p, m, real):  # per axis: elements of each window, PyTorch's count
        start = _starts(m, s, p)
        if real:
            return np.minimum(start + k, n) - np.maximum(start, 0)
        return np.minimum(start + k, n + p) - start  # the padding counted, not past it

    if divisor is not None:
        n = divisor
    elif count_include_pad and g.extra == (0, 0):
        n = kh * kw
    else:
        n = np.outer(*(counts(*a, not count_include_pad) for a in zip(
            x4.shape[2:], g.kernel, g.stride, g.padding, g.size, strict=True))).astype(x4.dtype)
    out = total / n
    shape = x4.shape

    def vjp(gy):
        share = gy.reshape(out.shape) / n
        def part(i, j, dest):
            return share if dest is None else np.copyto(dest, share)

        return _as_shape(_scatter_back(part, shape, share.dtype, g), x.shape)

    return unbatch(out), vjp


@op(arrays=1)
def avg_pool2d(x, kernel_size, stride=None, padding=0, count_include_pad=True, *,
               ceil_mode=False, divisor_override=None):
    """out[b, c, p, q] = (1/n) Σ_{i,j} xpad[b, c, p·sh + i, q·sw + j], xpad zero-padded.

    Arguments as ``max_pool2d``'s (no dilation); ``ceil_mode`` and ``divisor_override`` are
    keyword-only (``count_include_pad`` keeps its place). n = kh·kw, the padding zeros
    counted (``count_include_pad=True``, PyTorch's default; a ``ceil_mode`` window's part
    past the padding is not counted); with False, n is the number of real elements in the
    window; ``divisor_override`` (a nonzero int) replaces n. VJP: x̄ = Σ over the windows
    holding an element of g / n. Derivation: docs/backward.md §17, §38.
    Tests: tests/minigrad/op_cases/conv.py, tests/minigrad/op_cases/pool.py,
    tests/minigrad/ops/test_pool.py.
    """
    x4, g = _pool_args(x, kernel_size, stride, padding, "avg_pool2d", 2, 1, ceil_mode)
    count_include_pad = boolean("count_include_pad", count_include_pad, owner="avg_pool2d")
    if divisor_override is not None:
        divisor_override = integer("divisor_override", divisor_override, low=-2**53,
                                   high=2**53, owner="avg_pool2d")
        if divisor_override == 0:
            raise ValueError("avg_pool2d divisor_override: got 0; expected a nonzero integer "
                             "or None")
    return _avg_pool(x, g, x4, count_include_pad, divisor_override, _unbatch(x, 2))


@op(arrays=1)
def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """out[b, c, p] = (1/n) Σ_i xpad[b, c, p·s + i], xpad zero-padded.

    x (B, C, L) or (C, L); arguments in PyTorch's order, counts as ``avg_pool2d``'s.
    VJP: x̄ = Σ over the windows holding an element of g / n.
    Derivation: docs/backward.md §17, §38. Tests: tests/minigrad/op_cases/pool.py.
    """
    x4, g = _pool_args(x, kernel_size, stride, padding, "avg_pool1d", 1, 1, ceil_mode)
    count_include_pad = boolean("count_include_pad", count_include_pad, owner="avg_pool1d")
    return _avg_pool(x, g, x4, count_include_pad, None, _unbatch(x, 1))


@op(arrays=1)
def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """out[b, c].flat[indices[b, c, p, q]] = x[b, c, p, q], zeros elsewhere.

    x and ``indices`` (B, C, Hi, Wi) or (C, Hi, Wi), the indices as ``max_pool2d`` returns
    them (flat into each output plane). Output (Ho, Wo) = ((Hi - 1)·sh - 2·ph + kh, ...), or
    ``output_size`` ((Ho, Wo), or a shape ending in them) within a stride of that, as
    PyTorch's rule. VJP: x̄[b, c, p, q] = g[b, c].flat[indices[b, c, p, q]] (a gather).
    Derivation: docs/backward.md §38. Tests: tests/minigrad/op_cases/pool.py.
    """
    name = "max_unpool2d"
    x4 = _as_4d(x, 2, name)
    kernel = int_tuple(kernel_size, 2, name, "kernel_size", 1)
    stride = kernel if stride is None else int_tuple(stride, 2, name, "stride", 1)
    padding = int_tuple(padding, 2, name, "padding", 0)
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(
        x4.shape[2:], stride, padding, kernel, strict=True))
    size = default
    if output_size is not None:
        given = tuple(output_size) if isinstance(output_size, (tuple, list)) else None
        if given is None or len(given) not in (2, 4 if x.ndim == 4 else 3):
            raise ValueError(f"{name} output_size: got {output_size!r}; expected (H, W) or a "
                             "shape ending in them")
        size = tuple(integer("output_size", v, low=1, owner=name) for v in given[-2:])
        if any(not d - s < n < d + s for n, d, s in zip(size, default, stride, strict=True)):
            raise ValueError(f"{name} output_size: got {size}; expected sizes within a stride "
                             f"{stride} of the default {default} (kernel_size {kernel}, "
                             f"stride {stride}, padding {padding})")
    if min(size) < 1:
        raise ValueError(f"{name} kernel_size, stride, padding: got {kernel}, {stride}, "
                         f"{padding}, an output of {size}; expected sizes >= 1")
    bounds.check_output(name, "kernel_size, stride, padding, output_size",
                        bounds.elements(x4.shape[:2] + size), f"an output of {size}")
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iu" or idx.shape != x.shape:
        raise TypeError(f"{name} indices: got {idx.dtype} of shape {idx.shape}; expected "
                        f"integers of x's shape {x.shape} (max_pool2d's indices)")
    plane = size[0] * size[1]
    if idx.size and (idx.min() < 0 or idx.max() >= plane):
        raise ValueError(f"{name} indices: got values in [{idx.min()}, {idx.max()}]; expected "
                         f"flat indices in [0, {plane}) of an output plane {size}")
    i4 = idx.reshape(x4.shape).reshape(x4.shape[0], x4.shape[1], -1).astype(np.intp)
    out = np.zeros(x4.shape[:2] + (plane,), dtype=x4.dtype)
    np.put_along_axis(out, i4, x4.reshape(i4.shape), axis=2)
    out = out.reshape(x4.shape[:2] + size)

    def vjp(g):
        g3 = g.reshape(x4.shape[:2] + (plane,))
        return np.take_along_axis(g3, i4, axis=2).reshape(x.shape)

    return (out if x.ndim == 4 else out[0]), vjp
