"""Convolutions (PyTorch's ``conv1d``/``conv2d``, NCHW) and NumPy's ``pad``, differentiable.

A convolution here is a cross-correlation, as in PyTorch: the kernel is not flipped. The
forward copies the input's windows into one column matrix (im2col, read through a strided
view) and multiplies it by the weight, one GEMM per group; the backward multiplies back
and scatter-adds the column gradient onto the input (col2im) in one pass per kernel offset.
docs/backward.md §16 derives both; §18 derives ``pad``.

``out_size`` is shared with the pooling ops (``pool.py``); ``windows``, ``col2im`` and ``_conv``
with the transposed convolutions (``conv_transpose.py``).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..checks import int_tuple, integer, real
from ..defop import op
from .bounds import check_output, elements

__all__ = ["conv1d", "conv2d", "pad"]


def windows(xp: np.ndarray, kernel, stride, dilation) -> np.ndarray:
    """A read-only view (B, C, Ho, Wo, kh, kw) of the windows of xp (B, C, Hp, Wp):
    ``view[b, c, p, q, i, j] = xp[b, c, p·sh + i·dh, q·sw + j·dw]``; no copy."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    view = sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    return view[:, :, ::sh, ::sw, ::dh, ::dw]


def col2im(cols: np.ndarray, padded, stride, dilation) -> np.ndarray:
    """The adjoint of ``windows``: cols (C, kh, kw, B, Ho, Wo) added back onto zeros
    (C, B, Hp, Wp) at the positions the windows read, ``out[c, b, p·sh + i·dh, q·sw + j·dw]
    += cols[c, i, j, b, p, q]``. In the columns' own (C, B) order, so each add reads its
    block in memory order (faster than adding transposed blocks into a (B, C) array)."""
    C, kh, kw, B, Ho, Wo = cols.shape
    out = np.zeros((C, B) + tuple(padded), dtype=cols.dtype)
    (sh, sw), (dh, dw) = stride, dilation
    for i in range(kh):  # each kernel offset adds its columns back, strided
        for j in range(kw):
            out[:, :, i * dh:i * dh + sh * (Ho - 1) + 1:sh,
                j * dw:j * dw + sw * (Wo - 1) + 1:sw] += cols[:, i, j]
    return out


def out_size(op_name: str, size, pads, kernel, dilation, stride) -> tuple[int, int]:
    """(Ho, Wo) = ((H + pads - d·(k - 1) - 1) // s + 1, ...), or a ValueError if a kernel
    (dilated) is bigger than the padded input."""
    padded = tuple(n + p0 + p1 for n, (p0, p1) in zip(size, pads, strict=True))
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))
    if any(e > n for e, n in zip(span, padded, strict=True)):
        raise ValueError(f"{op_name}: got a kernel spanning {span} (kernel {kernel}, dilation "
                         f"{dilation}) over a padded input of size {padded} (input {size}); "
                         "expected the kernel to fit inside the padded input")
    return tuple((n - e) // s + 1 for n, e, s in zip(padded, span, stride, strict=True))


def _conv_padding(padding, kernel, dilation, stride, op_name):
    """((top, bottom), (left, right)) from an int, a tuple, 'valid' or 'same' (PyTorch's:
    output size = input size for stride 1; an odd total puts the extra pixel after)."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op_name} padding: got 'same' with stride {stride}; expected "
                                 "stride 1 (PyTorch's rule) or a number for padding")
            total = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
            return tuple((t // 2, t - t // 2) for t in total)
        raise ValueError(f"{op_name} padding: got {padding!r}; expected 'valid', 'same', "
                         "an int >= 0 or a tuple of them")
    return tuple((p, p) for p in int_tuple(padding, n, op_name, "padding", 0))


def _check_padded(op_name: str, padding, x_shape: tuple, pads: tuple) -> None:
    """The padded input is built before anything else: bounded as ``pad`` bounds the same
    padding (from the shapes, before NumPy is asked for it)."""
    spatial = len(pads)
    padded = elements(x_shape[:-spatial]) * elements(
        n + b + a for n, (b, a) in zip(x_shape[-spatial:], pads, strict=True))
    check_output(op_name, "padding", padded, f"{padding!r} for an input of shape {x_shape}")


def _check_conv(x, weight, bias, groups, spatial, op_name):
    names = {1: "(B, C, L) or (C, L)", 2: "(B, C, H, W) or (C, H, W)"}[spatial]
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(f"{op_name} x: got shape {x.shape}; expected {names}")
    wname = {1: "(O, C/groups, k)", 2: "(O, C/groups, kh, kw)"}[spatial]
    if weight.ndim != spatial + 2:
        raise ValueError(f"{op_name} weight: got shape {weight.shape}; expected {wname}")
    groups = integer("groups", groups, owner=op_name)
    C, O = x.shape[-spatial - 1], weight.shape[0]
    if groups < 1 or C % groups or O % groups:
        raise ValueError(f"{op_name} groups: got {groups} for {C} input and {O} output "
                         "channels; expected a positive divisor of both")
    if weight.shape[1] != C // groups:
        raise ValueError(f"{op_name} weight: got shape {weight.shape} for x of shape {x.shape} "
                         f"and groups={groups}; expected {wname} with C/groups = {C // groups}")
    if bias is not None and np.shape(bias) != (O,):
        raise ValueError(f"{op_name} bias: got shape {np.shape(bias)}; expected ({O},), one "
                         "per output channel")


def _conv(x, weight, bias, stride, pads, dilation, groups, op_name):
    """The 2-D correlation behind conv1d and conv2d: x (B, C, H, W), weight (O, C/G, kh, kw).

    Returns out (B, O, Ho, Wo) and the three VJPs. The columns are laid out group-major,
    (G, Cg·kh·kw, B·Ho·Wo), so each group is one GEMM over the whole batch.
    """
    B, C, H, W = x.shape
    O, Cg, kh, kw = weight.shape
    G, Og, K = groups, O // groups, Cg * kh * kw
    Ho, Wo = out_size(op_name, (H, W), pads, (kh, kw), dilation, stride)
    (pt, pb), (pl, pr) = pads
    xp = x
    if pt + pb + pl + pr:  # zeros and one copy: faster than np.pad
        xp = np.zeros((B, C, H + pt + pb, W + pl + pr), dtype=x.dtype)
        xp[:, :, pt:pt + H, pl:pl + W] = x
    win = windows(xp, (kh, kw), stride, dilation).reshape(B, G, Cg, Ho, Wo, kh, kw)
    cols = np.ascontiguousarray(win.transpose(1, 2, 5, 6, 0, 3, 4)).reshape(G, K, B * Ho * Wo)
    w3 = weight.reshape(G, Og, K)
    out = np.matmul(w3, cols)  # (G, Og, B·Ho·Wo)
    out = np.ascontiguousarray(out.reshape(O, B, Ho, Wo).transpose(1, 0, 2, 3))
    if bias is not None:
        b = np.reshape(bias, (O, 1, 1))
        if np.result_type(out, b) == out.dtype:
            out += b
        else:  # e.g. integer data with a float bias
            out = out + b

    def grad_rows(g):  # g (B, O, Ho, Wo) -> (G, Og, B·Ho·Wo), the layout of the product
        return g.transpose(1, 0, 2, 3).reshape(G, Og, B * Ho * Wo)

    def vjp_x(g):
        dcols = np.matmul(w3.transpose(0, 2, 1), grad_rows(g))  # (G, K, B·Ho·Wo)
        gxp = col2im(dcols.reshape(C, kh, kw, B, Ho, Wo), xp.shape[2:], stride, dilation)
        return gxp[:, :, pt:pt + H, pl:pl + W].transpose(1, 0, 2, 3)  # a transposed view

    def vjp_w(g):  # (cols @ gᵀ)ᵀ: this orientation of the GEMM runs faster than g @ colsᵀ
        gw = np.matmul(cols, grad_rows(g).transpose(0, 2, 1))  # (G, K, Og)
        return np.ascontiguousarray(gw.transpose(0, 2, 1)).reshape(weight.shape)

    def vjp_b(g):
        return np.sum(g, axis=(0, 2, 3))

    return out, (vjp_x, vjp_w, vjp_b)


@op(arrays=3)
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """out[b,o,p,q] = bias[o] + Σ_{c,i,j} w[o,c,i,j] · xpad[b, g·Cg + c, p·sh + i·dh, q·sw + j·dw]

    PyTorch's conv2d (a cross-correlation), NCHW: x (B, C, H, W) or unbatched (C, H, W),
    weight (O, C/groups, kh, kw), bias (O,) or None, g = o // (O/groups) the group of
    output channel o and Cg = C/groups; xpad is x zero-padded by ``padding`` (an int, a
    pair, 'valid' or 'same'); ``stride`` and ``dilation`` are ints or pairs. Output
    (B, O, Ho, Wo) with Ho = (H + 2·ph - dh·(kh - 1) - 1) // sh + 1 (and Wo alike).
    VJP: x̄ = the transposed convolution of g with w (col2im of wᵀ g), w̄ = the correlation
    of xpad with g, b̄ = Σ_{b,p,q} g.
    Derivation: docs/backward.md §16. Tests: tests/minigrad/op_cases/conv.py,
    tests/minigrad/ops/test_conv.py.
    """
    _check_conv(x, weight, bias, groups, 2, "conv2d")
    stride = int_tuple(stride, 2, "conv2d", "stride", 1)
    dilation = int_tuple(dilation, 2, "conv2d", "dilation", 1)
    pads = _conv_padding(padding, weight.shape[2:], dilation, stride, "conv2d")
    _check_padded("conv2d", padding, x.shape, pads)
    unbatched = x.ndim == 3
    out, (vx, vw, vb) = _conv(x[None] if unbatched else x, weight, bias, stride, pads,
                              dilation, int(groups), "conv2d")
    if unbatched:
        return out[0], (lambda g: vx(g[None])[0], lambda g: vw(g[None]),
                        lambda g: vb(g[None]))
    return out, (vx, vw, vb)


@op(arrays=3)
def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """out[b, o, t] = bias[o] + Σ_{c,i} w[o, c, i] · xpad[b, g·Cg + c, t·s + i·d]

    PyTorch's conv1d: x (B, C, L) or unbatched (C, L), weight (O, C/groups, k), bias (O,)
    or None; ``stride``, ``padding`` (or 'valid', 'same') and ``dilation`` are ints. It is
    conv2d on a height-1 image. VJP: as conv2d's (x̄ a transposed convolution, w̄ a
    correlation, b̄ = Σ_{b,t} g).
    Derivation: docs/backward.md §16. Tests: tests/minigrad/op_cases/conv.py,
    tests/minigrad/ops/test_conv.py.
    """
    _check_conv(x, weight, bias, groups, 1, "conv1d")
    stride = (1,) + int_tuple(stride, 1, "conv1d", "stride", 1)
    dilation = (1,) + int_tuple(dilation, 1, "conv1d", "dilation", 1)
    pads = ((0, 0),) + _conv_padding(padding, weight.shape[2:], dilation[1:], stride[1:],
                                     "conv1d")
    _check_padded("conv1d", padding, x.shape, pads[1:])
    x4 = x[:, :, None] if x.ndim == 3 else x[None, :, None]
    out, (vx, vw, vb) = _conv(x4, weight[:, :, None], bias, stride, pads, dilation,
                              int(groups), "conv1d")
    lead = (slice(None),) if x.ndim == 3 else (0,)

    def g4(g):
        return g[:, :, None] if x.ndim == 3 else g[None, :, None]

    return out[lead + (slice(None), 0)], (lambda g: vx(g4(g))[lead + (slice(None), 0)],
                                          lambda g: vw(g4(g))[:, :, 0],
                                          lambda g: vb(g4(g)))


# ---- pad --------------------------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "edge", "circular")
#: Other spellings of a mode: NumPy's name of torch's 'circular' (the canonical name here)
_PAD_SPELLINGS = {"wrap": "circular"}


def _pad_pairs(pad_width, shape):
    """NumPy's pad_width (an int, a pair, or one pair per axis) as ((before, after), ...); a
    negative width crops."""
    arr = np.asarray(pad_width) if not isinstance(pad_width, np.ndarray) else pad_width
    if arr.dtype.kind not in "iu":
        raise TypeError(f"pad pad_width: got {pad_width!r}; expected integers: an int, a pair "
                        "(before, after) or one pair per axis")
    try:
        pairs = np.broadcast_to(arr, (len(shape), 2))
    except ValueError:
        raise ValueError(f"pad pad_width: got {pad_width!r} for an array of shape {shape}; "
                         f"expected an int, a pair or {len(shape)} pairs") from None
    return [(int(b), int(a)) for b, a in pairs]


def _pad_mode(mode) -> str:
    if isinstance(mode, str) and mode in _PAD_SPELLINGS:
        return _PAD_SPELLINGS[mode]
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        raise (ValueError if isinstance(mode, str) else TypeError)(
            f"pad mode: got {mode!r}; expected one of {', '.join(_PAD_MODES)} ('wrap', "
            "NumPy's name, is 'circular')")
    return mode


def _check_pad_axis(axis: int, n: int, pair: tuple, mode: str) -> None:
    """The widths one axis of length n takes: what is cropped must exist, and what is padded
    must have something to copy (reflect: at most n - 1; circular: at most what is left after
    cropping, so that it wraps at most once)."""
    b, a = pair
    crop = max(-b, 0) + max(-a, 0)
    grow = (max(b, 0), max(a, 0))
    if n + b + a < 0 or (mode == "circular" and crop > n):
        raise ValueError(f"pad pad_width: got {pair} for axis {axis} of length {n}; expected "
                         f"negative widths that crop at most the {n} elements there")
    if not any(grow):
        return
    if mode == "circular" and max(grow) > n - crop:
        raise ValueError(f"pad pad_width: got {pair} for axis {axis} of length {n} with mode "
                         f"'circular'; expected widths of at most {n - crop} (the length left "
                         "after cropping: the padding wraps around at most once, as in torch)")
    if mode in ("reflect", "edge") and n == 0:
        raise ValueError(f"pad pad_width: got {pair} for empty axis {axis} with mode {mode!r}; "
                         "expected 0 (there is nothing to copy)")
    if mode == "reflect" and max(grow) >= n:
        # the mirror without its edge holds n - 1 elements a side; np.pad would reflect
        # the padding itself again, torch refuses (its rule: each width < n)
        raise ValueError(f"pad pad_width: got {pair} for axis {axis} of length {n} "
                         f"with mode 'reflect'; expected widths of at most {n - 1} (the "
                         "mirror leaves out the edge element, as torch requires; mode "
                         "'edge' or 'constant' pads further)")


def _unpad(g, grow, shape, np_mode):
    """The VJP of ``np.pad(x, grow, np_mode)`` (non-negative widths) for x of ``shape``: the
    slice at x's place plus, outside 'constant', each padded position's cotangent added onto
    the element it copies, axis by axis."""
    for axis, (n, (b, a)) in enumerate(zip(shape, grow, strict=True)):
        if b + a == 0:
            continue
        lead = (slice(None),) * axis
        inner = g[lead + (slice(b, b + n),)]
        if np_mode == "constant":
            g = inner
            continue
        # the source index of every output position along this axis, by NumPy's own rule
        src = np.pad(np.arange(n), (b, a), mode=np_mode)
        outside = np.r_[0:b, b + n:b + n + a]
        g_axis = inner.copy()
        index: Any = lead + (src[outside],)  # (mypy: a tuple index is fine for add.at)
        np.add.at(g_axis, index, np.take(g, outside, axis=axis))
        g = g_axis
    return g


@op(arrays=1)
def pad(x, pad_width, mode="constant", value=0.0):
    """y = x padded as ``np.pad(x, pad_width, mode)``: 'constant' (with ``value``),
    'reflect' (mirrored without repeating the edge, PyTorch's 'reflect'; each width less
    than its axis' length, as torch requires), 'edge' (PyTorch's 'replicate') or 'circular'
    (PyTorch's name, canonical; NumPy's 'wrap' is accepted for it).
    ``pad_width`` follows NumPy, not torch's F.pad: an int, a pair (before, after) for every
    axis, or one pair per axis, first axis first. A negative width crops, as in torch:
    'circular' crops first and wraps what is left, the other modes pad, then crop. A 0-d x
    has no axis to pad: only zero widths are taken (it is returned as it is).
    VJP: x̄ = the slice of g at x's place, plus (reflect, edge, circular) each padded
    position's g added back onto the element it copies; 0 on the cropped elements.
    Derivation: docs/backward.md §18. Tests: tests/minigrad/op_cases/conv.py,
    tests/minigrad/ops/test_pool.py, tests/minigrad/ops/test_pad_modes.py.
    """
    mode = _pad_mode(mode)
    value = real("value", value, finite=False, owner="pad")  # -inf padding is meaningful
    if mode != "constant" and value != 0:
        raise ValueError(f"pad value: got {value!r} with mode {mode!r}; expected value only "
                         "with mode 'constant'")
    pairs = _pad_pairs(pad_width, x.shape)
    if not x.ndim:  # np.pad would broadcast the widths to no pairs and pad nothing
        if np.any(np.asarray(pad_width) != 0):
            raise ValueError(f"pad pad_width: got {pad_width!r} for a 0-d x; expected zero "
                             "widths (a 0-d array has no axis to pad: np.pad returns it "
                             "unchanged, torch refuses)")
        return x.copy(), lambda g: g
    for axis, (n, pair) in enumerate(zip(x.shape, pairs, strict=True)):
        _check_pad_axis(axis, n, pair, mode)
    grow = [(max(b, 0), max(a, 0)) for b, a in pairs]
    crop = [(max(-b, 0), max(-a, 0)) for b, a in pairs]
    check_output("pad", "pad_width",  # what np.pad allocates, before any cropping
                 elements(n + b + a for n, (b, a) in zip(x.shape, grow, strict=True)),
                 f"{pairs} around shape {x.shape}")
    kw = {"constant_values": value} if mode == "constant" else {}
    np_mode: Any = "wrap" if mode == "circular" else mode  # (mypy: np.pad's mode Literal)
    shape = x.shape
    cropped = any(b or a for b, a in crop)
    if mode == "circular":  # torch's order: crop, then wrap what is left
        core = x[tuple(slice(b, n - a) for n, (b, a) in zip(shape, crop, strict=True))]
        y = np.pad(core, grow, mode="wrap")
        core_shape = core.shape

        def vjp_circular(g):
            g = _unpad(g, grow, core_shape, "wrap")
            return np.pad(g, crop) if cropped else g  # the cropped elements: no gradient

        return y, vjp_circular
    y = np.pad(x, grow, mode=np_mode, **kw)
    if cropped:  # pad, then crop (torch's order for these modes)
        y = np.ascontiguousarray(y[tuple(slice(b, m - a) for m, (b, a)
                                         in zip(y.shape, crop, strict=True))])

    def vjp(g):
        if cropped:  # the cropped positions of the padded array get no cotangent
            g = np.pad(g, crop)
        return _unpad(g, grow, shape, np_mode)

    return y, vjp
