"""Resizing (PyTorch's ``interpolate`` in its nearest and (bi)linear modes) and adaptive
average pooling, differentiable.

Both are separable: along each spatial axis an output element is a weighted sum of a few
input elements, ``y[o] = Σ_t w_t[o] · x[i_t[o]]``, with index arrays ``i_t`` that never
decrease in ``o``. The forward gathers along one axis after the other; the VJP is the
transpose, a scatter-add of the weighted cotangent, done per index array as one
``np.add.reduceat`` over its runs of equal indices, along the axis where it lies (no
``np.add.at``, no moved axes). The source indices
follow PyTorch's CPU kernels to the bit, their float32 arithmetic included: docs/backward.md
§37 (interpolate) and §38 (adaptive pooling).
"""
from __future__ import annotations

import math

import numpy as np

from .. import checks
from ..defop import as_floating, op
from . import bounds

__all__ = ["interpolate", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d"]

_MODES = {3: ("nearest", "linear"), 4: ("nearest", "bilinear")}


def _sizes(value, n, op_name, name, *, none_ok=False):
    """An int or a tuple of ``n`` ints >= 1 (None entries kept where ``none_ok``)."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(items) != n:
        raise ValueError(f"{op_name} {name}: got {checks.shown(value)}; expected an int >= 1 "
                         f"or a tuple of {n} of them")
    return tuple(v if v is None and none_ok else checks.integer(name, v, low=1, owner=op_name)
                 for v in items)


def _bounded(op_name, name, lead, out_sizes):
    """ValueError before anything is allocated when the output would pass the bound."""
    n = bounds.elements(lead + tuple(out_sizes))
    bounds.check_output(op_name, name, n, f"an output of shape {lead + tuple(out_sizes)}")


def _scale_value(n_in, n_out, scale, dtype):
    """PyTorch's ``compute_scales_value``: 1/scale_factor where one is used, else in/out,
    in the arithmetic of ``dtype``."""
    if scale is not None:
        return dtype.type(1.0 / scale)
    return dtype.type(n_in) / dtype.type(n_out)


def _nearest_plan(n_in, n_out, scale):
    """[(i, None)]: i[o] = min(floor(o · s), n_in - 1), s in float32 as PyTorch's
    ``nearest_idx`` (which copies for n_out == n_in and halves for n_out == 2 n_in)."""
    o = np.arange(n_out)
    if n_out == n_in:
        return [(o, None)]
    if n_out == 2 * n_in:
        return [(o >> 1, None)]
    s = _scale_value(n_in, n_out, scale, np.dtype(np.float32))
    src = np.floor(o.astype(np.float32) * s).astype(np.intp)
    return [(np.minimum(src, n_in - 1), None)]


def _linear_plan(n_in, n_out, align_corners, scale, dtype):
    """[(i0, λ0), (i1, λ1)]: the two neighbours of each output's source position and their
    weights, as PyTorch's ``area_pixel_compute_source_index`` and ``guard_index_and_lambda``
    compute them in the arithmetic of ``dtype`` (the floor of the position taken in float32,
    as its ``floorf``)."""
    o = np.arange(n_out).astype(dtype)
    if align_corners:
        s = dtype.type(n_in - 1) / dtype.type(n_out - 1) if n_out > 1 else dtype.type(0)
        src = s * o
    else:
        s = _scale_value(n_in, n_out, scale, dtype)
        src = np.maximum(s * (o + dtype.type(0.5)) - dtype.type(0.5), dtype.type(0))
    i0 = np.minimum(np.floor(src.astype(np.float32)).astype(np.intp), n_in - 1)
    lam = np.clip(src - i0.astype(dtype), 0, 1).astype(dtype)
    i1 = i0 + (i0 < n_in - 1)
    return [(i0, (1 - lam).astype(dtype)), (i1, lam)]


def _gather(x, plan, axis):
    """y = Σ_t w_t · x[i_t] along ``axis`` (weights broadcast along that axis)."""
    shape = [1] * x.ndim
    shape[axis] = -1
    out = None
    for idx, w in plan:
        part = np.take(x, idx, axis=axis)
        if w is not None:
            part = part * w.reshape(shape)
        out = part if out is None else out + part
    return out


def _scatter(g, plan, axis, n_in):
    """The transpose of ``_gather``: x̄[i] = Σ_t Σ_{o: i_t[o] = i} w_t[o] · g[o] along
    ``axis``. Each i_t never decreases, so the outputs reading input i form one run, and
    one ``np.add.reduceat`` at the runs' starts sums them all, in place along the axis (an
    input no output reads gets 0)."""
    shape = [1] * g.ndim
    shape[axis] = -1
    gx = None
    for idx, w in plan:
        part = g if w is None else g * w.reshape(shape)
        k = int(idx[-1]) + 1  # inputs past the last one read get nothing
        first = np.searchsorted(idx, np.arange(k))  # where each input's run starts
        read = np.diff(np.append(first, len(idx))) > 0
        sums = np.add.reduceat(part, first, axis=axis)
        if not read.all():  # reduceat gives an empty run its start's element: 0 instead
            sums = np.where(read.reshape(shape), sums, 0)
        if k < n_in:
            widths = [(0, 0)] * g.ndim
            widths[axis] = (0, n_in - k)
            sums = np.pad(sums, widths)
        if gx is None:
            gx = sums
        else:
            gx += sums
    return gx


def _separable(x, plans):
    """(y, vjp) applying one plan per trailing spatial axis (the first plan on axis 2)."""
    axes = tuple(range(2, 2 + len(plans)))
    in_sizes = x.shape[2:]
    y = x
    for axis, plan in zip(axes, plans, strict=True):
        y = _gather(y, plan, axis)

    def vjp(g):
        for axis, plan, n in reversed(tuple(zip(axes, plans, in_sizes, strict=True))):
            g = _scatter(g, plan, axis, n)
        return g

    return y, vjp


@op(arrays=1)
def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None):
    """y[o] = Σ_t w_t[o] · x[i_t[o]] along each spatial axis (nearest: one index, weight 1).

    x (N, C, L) with mode 'nearest' or 'linear', or (N, C, H, W) with 'nearest' or
    'bilinear'. Exactly one of ``size`` (an int or one per spatial axis) and
    ``scale_factor`` (a positive number or one per axis; output floor(in · factor)) is given.
    PyTorch's source positions: nearest i = min(floor(o · s), in - 1) in float32; linear
    src = s·(o + ½) - ½ clamped at 0, or s·o with ``align_corners`` (s = (in-1)/(out-1)),
    where s = 1/scale_factor when a factor is given (``recompute_scale_factor`` None or
    False) and in/out otherwise. VJP: x̄ = the transpose, Σ_o w_t[o] · g[o] added at
    i_t[o]. Derivation: docs/backward.md §37. Tests: tests/minigrad/op_cases/resize.py.
    """
    name = "interpolate"
    if x.ndim not in _MODES:
        raise ValueError(f"{name} x: got shape {x.shape}; expected (N, C, L) or (N, C, H, W)")
    mode = checks.choice("mode", mode, ("nearest", "linear", "bilinear"), owner=name)
    if mode not in _MODES[x.ndim]:
        raise ValueError(f"{name} mode: got {mode!r} for an input of shape {x.shape}; "
                         f"expected one of {_MODES[x.ndim]} for a {x.ndim}-D input")
    if align_corners is not None:
        align_corners = checks.boolean("align_corners", align_corners, owner=name)
        if mode == "nearest":
            raise ValueError(f"{name} align_corners: got {align_corners} with mode 'nearest'; "
                             "expected None (only the linear modes align corners)")
    if recompute_scale_factor is not None:
        recompute_scale_factor = checks.boolean("recompute_scale_factor",
                                                recompute_scale_factor, owner=name)
    n = x.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{name}: got size={checks.shown(size)} and scale_factor="
                         f"{checks.shown(scale_factor)}; expected exactly one of them")
    if any(s == 0 for s in x.shape[2:]):
        raise ValueError(f"{name} x: got shape {x.shape}; expected spatial sizes >= 1")
    scales: tuple = (None,) * n
    if size is not None:
        if recompute_scale_factor:
            raise ValueError(f"{name} recompute_scale_factor: got True with a size; expected "
                             "None or False (it only applies to a scale_factor)")
        out = _sizes(size, n, name, "size")
        _bounded(name, "size", x.shape[:2], out)
    else:
        items = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) \
            else (scale_factor,) * n
        if len(items) != n:
            raise ValueError(f"{name} scale_factor: got {checks.shown(scale_factor)}; expected "
                             f"a number > 0 or a tuple of {n} of them")
        factors = tuple(checks.real("scale_factor", f, low=0, low_open=True, owner=name)
                        for f in items)
        out = tuple(math.floor(s * f) for s, f in zip(x.shape[2:], factors, strict=True))
        if min(out) < 1:
            raise ValueError(f"{name} scale_factor: got {checks.shown(scale_factor)} for spatial "
                             f"sizes {x.shape[2:]}, an output of {out}; expected sizes >= 1")
        _bounded(name, "scale_factor", x.shape[:2], out)
        scales = (None,) * n if recompute_scale_factor else factors
    if mode == "nearest":
        plans = [_nearest_plan(i, o, s) for i, o, s in zip(x.shape[2:], out, scales, strict=True)]
        return _separable(x, plans)
    x = as_floating(x)
    # PyTorch's opmath: positions in float64 for float64 data, in float32 otherwise
    at = np.dtype(np.float64 if x.dtype.itemsize >= 8 else np.float32)
    plans = [[(i, w.astype(x.dtype.type))
              for i, w in _linear_plan(n_in, o, bool(align_corners), s, at)]
             for n_in, o, s in zip(x.shape[2:], out, scales, strict=True)]
    return _separable(x, plans)


def _adaptive_plan(n_in, n_out, dtype):
    """[(i_k, m_k)] for k < the widest window: window o spans [floor(o·in/out),
    ceil((o+1)·in/out)), PyTorch's start and end; i_k = its k-th index (clipped to the input),
    m_k = 1/len where the window has a k-th element, else 0."""
    o = np.arange(n_out)
    start = (o * n_in) // n_out
    end = ((o + 1) * n_in + n_out - 1) // n_out
    length = end - start
    share = (1 / length).astype(dtype)
    return [(np.minimum(start + k, n_in - 1), np.where(k < length, share, dtype.type(0)))
            for k in range(int(length.max()))]


def _adaptive(x, output_size, n, name):
    """The common body of the adaptive average pools over the last ``n`` axes."""
    if x.ndim not in (n + 1, n + 2):
        shape = "(N, C, L) or (C, L)" if n == 1 else "(N, C, H, W) or (C, H, W)"
        raise ValueError(f"{name} x: got shape {x.shape}; expected {shape}")
    sizes = _sizes(output_size, n, name, "output_size", none_ok=True)
    x4 = as_floating(x if x.ndim == n + 2 else x[None])
    if any(s == 0 for s in x4.shape[2:]):
        raise ValueError(f"{name} x: got shape {x.shape}; expected spatial sizes >= 1")
    out = tuple(i if o is None else o for i, o in zip(x4.shape[2:], sizes, strict=True))
    _bounded(name, "output_size", x4.shape[:2], out)
    plans = [_adaptive_plan(n_in, n_out, np.dtype(x4.dtype.type))
             for n_in, n_out in zip(x4.shape[2:], out, strict=True)]
    y = x4
    for axis, plan in zip(range(2, 2 + n), plans, strict=True):
        y = _masked_gather(y, plan, axis)

    def vjp(g):
        g4 = g if x.ndim == n + 2 else g[None]
        for axis, plan, n_in in reversed(tuple(zip(range(2, 2 + n), plans, x4.shape[2:],
                                                    strict=True))):
            g4 = _scatter(g4, plan, axis, n_in)
        return g4 if x.ndim == n + 2 else g4[0]

    return (y if x.ndim == n + 2 else y[0]), vjp


def _masked_gather(x, plan, axis):
    """As ``_gather``, but a weight 0 (past a window's end) drops its element, even an inf or
    a NaN (a multiplication by 0 would turn those into NaN)."""
    shape = [1] * x.ndim
    shape[axis] = -1
    out = None
    for idx, w in plan:
        wb = w.reshape(shape)
        part = np.where(wb != 0, np.take(x, idx, axis=axis) * wb, 0)
        out = part if out is None else out + part
    return out


@op(arrays=1)
def adaptive_avg_pool1d(x, output_size):
    """y[n, c, o] = mean of x[n, c, floor(o·L/Lo) : ceil((o+1)·L/Lo)].

    x (N, C, L) or (C, L); ``output_size`` Lo an int >= 1 (or None: L). VJP: each x̄ element
    gets g/len from every window that holds it. Derivation: docs/backward.md §38.
    Tests: tests/minigrad/op_cases/resize.py.
    """
    return _adaptive(x, output_size, 1, "adaptive_avg_pool1d")


@op(arrays=1)
def adaptive_avg_pool2d(x, output_size):
    """y[n, c, p, q] = mean of x over rows [floor(p·H/Ho), ceil((p+1)·H/Ho)), columns alike.

    x (N, C, H, W) or (C, H, W); ``output_size`` an int or a pair (Ho, Wo), an entry None
    keeping that size. VJP: each x̄ element gets g/(rows·cols) from every window holding it.
    Derivation: docs/backward.md §38. Tests: tests/minigrad/op_cases/resize.py.
    """
    return _adaptive(x, output_size, 2, "adaptive_avg_pool2d")


def _windows(n_in, n_out):
    """PyTorch's adaptive windows along an axis: (start, length) of each output."""
    o = np.arange(n_out)
    start = (o * n_in) // n_out
    return start, ((o + 1) * n_in + n_out - 1) // n_out - start


@op(arrays=1)
def adaptive_max_pool2d(x, output_size, return_indices=False):
    """y[n, c, p, q] = max of x over rows [floor(p·H/Ho), ceil((p+1)·H/Ho)), columns alike.

    x (N, C, H, W) or (C, H, W); ``output_size`` as ``adaptive_avg_pool2d``'s. Ties go to
    the window's first maximum in row-major order, a window holding NaN to its last NaN (as
    ``max_pool2d`` and PyTorch); ``return_indices``: also those positions, flat into each
    (H, W) plane. VJP: x̄ gets g at each window's argmax, summed where windows overlap.
    Derivation: docs/backward.md §38. Tests: tests/minigrad/op_cases/resize.py.
    """
    name = "adaptive_max_pool2d"
    if x.ndim not in (3, 4):
        raise ValueError(f"{name} x: got shape {x.shape}; expected (N, C, H, W) or (C, H, W)")
    sizes = _sizes(output_size, 2, name, "output_size", none_ok=True)
    return_indices = checks.boolean("return_indices", return_indices, owner=name)
    x4 = x if x.ndim == 4 else x[None]
    B, C, H, W = x4.shape
    if H == 0 or W == 0:
        raise ValueError(f"{name} x: got shape {x.shape}; expected spatial sizes >= 1")
    out = tuple(i if o is None else o for i, o in zip((H, W), sizes, strict=True))
    _bounded(name, "output_size", (B, C), out)
    (r0, rn), (c0, cn) = _windows(H, out[0]), _windows(W, out[1])
    # offset (0, 0) is inside every window: the running maximum starts there
    best = x4[:, :, r0[:, None], c0]
    flat = np.broadcast_to(r0[:, None] * W + c0, best.shape)
    for a in range(int(rn.max())):  # offsets in row-major order: PyTorch's scan
        for b in range(int(cn.max())):
            if a == b == 0:
                continue
            rows, cols = np.minimum(r0 + a, H - 1), np.minimum(c0 + b, W - 1)
            inside = (a < rn)[:, None] & (b < cn)
            v = x4[:, :, rows[:, None], cols]
            # a larger element, or a NaN, replaces the running maximum (the last NaN wins)
            take = inside & ((v > best) | (np.isnan(v) if v.dtype.kind == "f" else False))
            best = np.where(take, v, best)
            flat = np.where(take, rows[:, None] * W + cols, flat)
    y = best if x.ndim == 4 else best[0]
    flat = flat.astype(np.int64)

    def vjp(g):
        g = g[0] if return_indices else g
        g4 = g.reshape(best.shape)
        planes = np.arange(B * C).reshape(B, C, 1, 1) * (H * W)
        gx = np.bincount((planes + flat).ravel(), weights=g4.ravel(), minlength=B * C * H * W)
        return gx.astype(g.dtype, copy=False).reshape(x.shape)

    if not return_indices:
        return y, vjp
    return (y, flat if x.ndim == 4 else flat[0]), vjp
