"""Transposed convolutions (PyTorch's ``conv_transpose1d``/``conv_transpose2d``, NCHW),
differentiable.

A transposed convolution is the VJP of a convolution with respect to its input: every input
pixel spreads its value, weighted by the kernel, over the window a convolution would have
read it from, and overlapping windows add. The forward is one GEMM per group and a col2im
(``conv.col2im``); the backward is the convolution itself (``conv._conv``: its output is x̄,
its weight VJP applied to x is w̄). docs/backward.md §34 derives both.
"""
from __future__ import annotations

import numpy as np

from ..checks import int_tuple, integer
from ..defop import JointVJP, op
from .bounds import check_output, elements
from .conv import _conv, col2im

__all__ = ["conv_transpose1d", "conv_transpose2d"]


def _check_args(x, weight, bias, groups, spatial, op_name):
    """x (B, C_in, *S) or unbatched, weight (C_in, C_out/groups, *k), bias (C_out,): the
    group count divides C_in; returns groups as an int."""
    names = {1: "(B, C_in, L) or (C_in, L)", 2: "(B, C_in, H, W) or (C_in, H, W)"}[spatial]
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(f"{op_name} x: got shape {x.shape}; expected {names}")
    wname = {1: "(C_in, C_out/groups, k)", 2: "(C_in, C_out/groups, kh, kw)"}[spatial]
    if weight.ndim != spatial + 2:
        raise ValueError(f"{op_name} weight: got shape {weight.shape}; expected {wname}")
    groups = integer("groups", groups, owner=op_name)
    C = x.shape[-spatial - 1]
    if groups < 1 or C % groups:
        raise ValueError(f"{op_name} groups: got {groups} for {C} input channels; expected "
                         "a positive divisor of them")
    if weight.shape[0] != C:
        raise ValueError(f"{op_name} weight: got shape {weight.shape} for x of shape {x.shape}; "
                         f"expected {wname} with C_in = {C}")
    O = weight.shape[1] * groups
    if bias is not None and np.shape(bias) != (O,):
        raise ValueError(f"{op_name} bias: got shape {np.shape(bias)}; expected ({O},), one "
                         "per output channel")
    if any(n == 0 for n in x.shape[-spatial:]):
        # torch refuses them too; an empty window grid would leave the kernel nowhere to sit
        raise ValueError(f"{op_name} x: got shape {x.shape}; expected no empty spatial axis "
                         "(an empty batch or channel axis is fine)")
    return groups


def _sizes(op_name, x_shape, kernel, stride, padding, output_padding, dilation, out_channels):
    """(Ho, Wo) = ((H - 1)·s - 2·p + d·(k - 1) + output_padding + 1, ...), checked: each
    output_padding below its stride or its dilation (torch's rule), an output of at least
    one pixel, and the uncropped output (Ho + 2·p, ...) within the allocation bound."""
    for op_, s, d in zip(output_padding, stride, dilation, strict=True):
        if op_ >= s and op_ >= d:
            raise ValueError(f"{op_name} output_padding: got {output_padding} with stride "
                             f"{stride} and dilation {dilation}; expected each smaller than "
                             "its stride or its dilation (as torch requires)")
    full = tuple((n - 1) * s + d * (k - 1) + op_ + 1 for n, k, s, op_, d in zip(
        x_shape[-2:], kernel, stride, output_padding, dilation, strict=True))
    size = tuple(f - 2 * p for f, p in zip(full, padding, strict=True))
    if any(n < 1 for n in size):
        raise ValueError(f"{op_name} padding: got {padding} for an input of spatial size "
                         f"{x_shape[-2:]}, kernel {kernel}, stride {stride}, dilation "
                         f"{dilation}: an output of size {size}; expected at least 1 (a "
                         "smaller padding)")
    check_output(op_name, "stride, dilation and output_padding",
                 elements(x_shape[:-3]) * out_channels * elements(full),
                 f"stride {stride}, padding {padding}, dilation {dilation}, output_padding "
                 f"{output_padding} for an input of shape {x_shape}: an uncropped output of "
                 f"spatial size {full}")
    return size


def _conv_transpose(x, weight, bias, stride, padding, output_padding, dilation, groups,
                    op_name):
    """The 2-D transposed convolution behind both ops: x (B, C, H, W), weight (C, Og, kh, kw).

    Returns out (B, G·Og, Ho, Wo) and gradients(g, needed) -> [x̄, w̄, b̄]. Output channel
    r·Og + o belongs to group r, whose input channels are r·Cg ... (r + 1)·Cg - 1.
    """
    B, C, H, W = x.shape
    _, Og, kh, kw = weight.shape
    G, Cg = groups, C // groups
    O = G * Og
    (ph, pw), (oph, opw) = padding, output_padding
    Ho, Wo = _sizes(op_name, x.shape, (kh, kw), stride, padding, output_padding, dilation, O)
    w3 = weight.reshape(G, Cg, Og * kh * kw)
    rows = x.reshape(B, G, Cg, H * W).transpose(1, 2, 0, 3).reshape(G, Cg, B * H * W)
    cols = np.matmul(w3.transpose(0, 2, 1), rows)  # (G, Og·kh·kw, B·H·W)
    full = col2im(cols.reshape(O, kh, kw, B, H, W), (Ho + 2 * ph, Wo + 2 * pw), stride,
                  dilation)
    out = np.ascontiguousarray(full[:, :, ph:ph + Ho, pw:pw + Wo].transpose(1, 0, 2, 3))
    if bias is not None:
        b = np.reshape(bias, (O, 1, 1))
        if np.result_type(out, b) == out.dtype:
            out += b
        else:  # e.g. integer data with a float bias
            out = out + b

    def gradients(g, needed):
        gb = np.sum(g, axis=(0, 2, 3)) if needed[2] else None
        if not (needed[0] or needed[1]):
            return [None, None, gb]
        # The forward's conv reads the padded g at rows p·s + i·d <= (H - 1)·s + d·(k - 1):
        # the last output_padding rows beyond the padding are never read, so the bottom
        # padding shrinks by output_padding (and g is cropped where it would go negative).
        pads, gc = [], g
        for axis, (p, op_) in enumerate(((ph, oph), (pw, opw)), start=2):
            after = p - op_
            if after < 0:
                gc = gc[(slice(None),) * axis + (slice(0, gc.shape[axis] + after),)]
            pads.append((p, max(after, 0)))
        gx, (_, vjp_w, _) = _conv(gc, weight, None, stride, tuple(pads), dilation, G, op_name)
        return [gx, vjp_w(x) if needed[1] else None, gb]

    return out, gradients


def _joint(gradients) -> JointVJP:
    """x̄, w̄, b̄ from ``gradients``; the five argument positions after them take none."""
    return JointVJP(lambda g, needed: list(gradients(g, needed)) + [None] * 5)


def _parse(x, weight, bias, stride, padding, output_padding, groups, dilation, spatial,
           op_name):
    groups = _check_args(x, weight, bias, groups, spatial, op_name)
    lead = (1,) * (2 - spatial)  # conv_transpose1d is 2-D on a height-1 image
    zeros = (0,) * (2 - spatial)
    stride = lead + int_tuple(stride, spatial, op_name, "stride", 1)
    padding = zeros + int_tuple(padding, spatial, op_name, "padding", 0)
    output_padding = zeros + int_tuple(output_padding, spatial, op_name, "output_padding", 0)
    dilation = lead + int_tuple(dilation, spatial, op_name, "dilation", 1)
    return stride, padding, output_padding, dilation, groups


@op(arrays=3)
def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """out[b,o,u,v] = β[o] + Σ x[b,c,h,w]·w[c,o,i,j] over h·sh+i·dh = u+ph, w·sw+j·dw = v+pw

    One group written (with groups, output channel r·Og + o sums input channels r·Cg + c).
    PyTorch's conv_transpose2d, NCHW: x (B, C_in, H, W) or unbatched (C_in, H, W), weight
    (C_in, C_out/groups, kh, kw), bias (C_out,) or None; ``stride``, ``padding``,
    ``output_padding`` and ``dilation`` are ints or pairs (torch's order: groups before
    dilation). Output (B, C_out, Ho, Wo), Ho = (H - 1)·sh - 2·ph + dh·(kh - 1) + oph + 1;
    output_padding (rows added after, each below its stride or its dilation) picks which
    input size of the matching conv2d this inverts. It is conv2d's VJP with respect to its
    input. VJP: x̄ = conv2d(g, w, stride, padding, dilation, groups), w̄ = the correlation of
    x with the padded g, b̄ = Σ_{b,u,v} g.
    Derivation: docs/backward.md §34. Tests: tests/minigrad/op_cases/conv_transpose.py,
    tests/minigrad/nn/test_conv_layers.py.
    """
    stride, padding, output_padding, dilation, groups = _parse(
        x, weight, bias, stride, padding, output_padding, groups, dilation, 2,
        "conv_transpose2d")
    unbatched = x.ndim == 3
    out, grads = _conv_transpose(x[None] if unbatched else x, weight, bias, stride, padding,
                                 output_padding, dilation, groups, "conv_transpose2d")
    if not unbatched:
        return out, _joint(grads)

    def gradients(g, needed):
        gx, gw, gb = grads(g[None], needed)
        return [None if gx is None else gx[0], gw, gb]

    return out[0], _joint(gradients)


@op(arrays=3)
def conv_transpose1d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """out[b, o, u] = β[o] + Σ_{c,t,i} x[b, c, t] · w[c, o, i] over t·s + i·d = u + p

    One group written (with groups, output channel r·Og + o sums input channels r·Cg + c).
    PyTorch's conv_transpose1d: x (B, C_in, L) or unbatched (C_in, L), weight
    (C_in, C_out/groups, k), bias (C_out,) or None; ``stride``, ``padding``,
    ``output_padding`` and ``dilation`` are ints. Output length
    (L - 1)·s - 2·p + d·(k - 1) + output_padding + 1. It is conv_transpose2d on a height-1
    image. VJP: as conv_transpose2d's (x̄ a conv1d of g, w̄ a correlation, b̄ = Σ_{b,u} g).
    Derivation: docs/backward.md §34. Tests: tests/minigrad/op_cases/conv_transpose.py,
    tests/minigrad/nn/test_conv_layers.py.
    """
    stride, padding, output_padding, dilation, groups = _parse(
        x, weight, bias, stride, padding, output_padding, groups, dilation, 1,
        "conv_transpose1d")
    x4 = x[:, :, None] if x.ndim == 3 else x[None, :, None]
    out, grads = _conv_transpose(x4, weight[:, :, None], bias, stride, padding,
                                 output_padding, dilation, groups, "conv_transpose1d")
    lead = (slice(None),) if x.ndim == 3 else (0,)

    def gradients(g, needed):
        gx, gw, gb = grads(g[:, :, None] if x.ndim == 3 else g[None, :, None], needed)
        return [None if gx is None else gx[lead + (slice(None), 0)],
                None if gw is None else gw[:, :, 0], gb]

    return out[lead + (slice(None), 0)], _joint(gradients)
