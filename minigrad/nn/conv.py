"""Convolution layers beside ``Conv2d`` (``layers.py``): ``Conv1d``, ``ConvTranspose1d`` and
``ConvTranspose2d``, with PyTorch's constructor arguments, weight layouts and initialization,
so that a ``state_dict`` holds the same arrays as torch's (copied across, the layers compute
the same function).

Initialization, as torch's ``reset_parameters``: W and b ~ U(-1/√fan_in, 1/√fan_in), with
fan_in = ``weight.shape[1]`` · the kernel's size: C_in/groups · k for a convolution,
C_out/groups · k for a transposed one (torch reads the weight's second axis in both).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import checks
from .. import functional as F
from ..checks import generator, int_tuple
from ..tensor import Tensor
from .args import in_dtype, real_input
from .module import Module
from .parameter import Parameter

__all__ = ["Conv1d", "ConvTranspose1d", "ConvTranspose2d"]

IntOrTuple = int | tuple[int, ...]


class _ConvNd(Module):
    """The arguments, parameters and input checks shared by the three layers."""

    spatial = 1
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple, padding: IntOrTuple | str, dilation: IntOrTuple,
                 groups: int, bias: bool, padding_mode: str, output_padding: IntOrTuple,
                 dtype: Any, rng: Any) -> None:
        super().__init__()
        owner, n = type(self).__name__, self.spatial
        self.in_channels = checks.positive_int("in_channels", in_channels, owner=owner)
        self.out_channels = checks.positive_int("out_channels", out_channels, owner=owner)
        self.kernel_size = int_tuple(kernel_size, n, owner, "kernel_size", 1)
        self.stride = int_tuple(stride, n, owner, "stride", 1)
        self.dilation = int_tuple(dilation, n, owner, "dilation", 1)
        if isinstance(padding, str) and not self.transposed:
            checks.choice("padding", padding, ("valid", "same"), owner=owner)
            self.padding: tuple[int, ...] | str = padding
        else:
            self.padding = int_tuple(padding, n, owner, "padding", 0)
        self.output_padding = int_tuple(output_padding, n, owner, "output_padding", 0)
        for op_, s, d in zip(self.output_padding, self.stride, self.dilation, strict=True):
            if op_ >= s and op_ >= d:
                raise ValueError(f"{owner} output_padding: got {output_padding} with stride "
                                 f"{stride} and dilation {dilation}; expected each smaller "
                                 "than its stride or its dilation (as torch requires)")
        self.groups = checks.positive_int("groups", groups, owner=owner)
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"{owner} groups: got {groups} for {in_channels} input and "
                             f"{out_channels} output channels; expected a divisor of both")
        checks.boolean("bias", bias, owner=owner)
        # torch's other modes pad by reflection, replication or wrapping; not here (yet)
        self.padding_mode = checks.choice("padding_mode", padding_mode, ("zeros",), owner=owner)
        dtype = checks.floating_dtype("dtype", dtype, owner=owner)
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        bound = 1.0 / math.sqrt(math.prod(shape[1:]))
        rng = generator(rng, owner)
        self.weight = Parameter(rng.uniform(-bound, bound, shape), dtype=dtype)
        self.bias = Parameter(rng.uniform(-bound, bound, self.out_channels), dtype=dtype) \
            if bias else None

    def _input(self, x: Any) -> Any:
        owner, C = type(self).__name__, self.in_channels
        axes = ("L",) if self.spatial == 1 else ("H", "W")
        names = ", ".join(axes)
        x = real_input(owner, x, f"(B, {C}, {names})")
        if x.ndim not in (self.spatial + 1, self.spatial + 2) or x.shape[-self.spatial - 1] != C:
            raise ValueError(f"{owner}: got input of shape {x.shape}; expected (B, {C}, {names})"
                             f" or ({C}, {names})")
        return in_dtype(x, self.weight.dtype)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")
        if self.transposed:
            text += f", output_padding={self.output_padding}"
        return text + (f", dilation={self.dilation}, groups={self.groups}, "
                       f"bias={self.bias is not None}")


class Conv1d(_ConvNd):
    """y = conv1d(x, W, b): PyTorch's ``nn.Conv1d`` (a cross-correlation) over ``F.conv1d``.

    x (B, C_in, L) or (C_in, L) -> (B, C_out, Lo), Lo = (L + 2p - d (k - 1) - 1) // s + 1;
    W (C_out, C_in/groups, k), b (C_out,). ``padding`` is an int, 'valid' or 'same'; only
    ``padding_mode='zeros'``. Initialization: W, b ~ U(-1/√fan_in, 1/√fan_in), fan_in =
    C_in/groups · k (torch's).
    """

    spatial = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple | str = 0,
                 dilation: IntOrTuple = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", *, dtype: Any = np.float64,
                 rng: np.random.Generator | int | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, 0, dtype, rng)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, C_in, L) or (C_in, L) -> (B, C_out, Lo) or (C_out, Lo)."""
        padding = self.padding if isinstance(self.padding, str) else self.padding[0]
        return F.conv1d(self._input(x), self.weight, self.bias, stride=self.stride[0],
                        padding=padding, dilation=self.dilation[0], groups=self.groups)


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                 output_padding: IntOrTuple = 0, groups: int = 1, bias: bool = True,
                 dilation: IntOrTuple = 1, padding_mode: str = "zeros", *,
                 dtype: Any = np.float64, rng: np.random.Generator | int | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, dtype, rng)

    def _output_padding(self, x: Any, output_size: Sequence[int] | None) -> tuple[int, ...]:
        """torch's rule: ``output_size`` (the spatial sizes, or with the batch and channel
        axes before them) picks the output_padding that reaches it, from 0 to stride - 1."""
        if output_size is None:
            return self.output_padding
        owner, n = type(self).__name__, self.spatial
        sizes = int_tuple(tuple(output_size), len(tuple(output_size)), owner, "output_size", 1)
        if len(sizes) in (n + 1, n + 2):
            sizes = sizes[-n:]
        if len(sizes) != n:
            raise ValueError(f"{owner} output_size: got {output_size}; expected {n} spatial "
                             "sizes (or the whole output shape)")
        assert not isinstance(self.padding, str)  # a transposed layer's is a tuple
        pads = []
        for size, m, k, s, p, d in zip(sizes, x.shape[-n:], self.kernel_size, self.stride,
                                       self.padding, self.dilation, strict=True):
            low = (m - 1) * s - 2 * p + d * (k - 1) + 1
            if not low <= size <= low + s - 1:
                raise ValueError(f"{owner} output_size: got {output_size} for an input of "
                                 f"shape {x.shape}; expected sizes from {low} to {low + s - 1}"
                                 " along each spatial axis")
            pads.append(size - low)
        return tuple(pads)


class ConvTranspose1d(_ConvTransposeNd):
    """y = conv_transpose1d(x, W, b): PyTorch's ``nn.ConvTranspose1d`` over
    ``F.conv_transpose1d`` (the gradient of a conv1d with respect to its input).

    x (B, C_in, L) or (C_in, L) -> (B, C_out, Lo), Lo = (L - 1) s - 2p + d (k - 1) +
    output_padding + 1; W (C_in, C_out/groups, k), b (C_out,); torch's argument order
    (groups before dilation). ``forward(x, output_size)`` may ask for a length instead of
    ``output_padding``. Initialization: W, b ~ U(-1/√fan_in, 1/√fan_in), fan_in =
    C_out/groups · k (torch's).
    """

    spatial = 1

    def forward(self, x: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """x (B, C_in, L) or (C_in, L) -> (B, C_out, Lo) or (C_out, Lo)."""
        x = self._input(x)
        assert not isinstance(self.padding, str)
        return F.conv_transpose1d(x, self.weight, self.bias, self.stride[0], self.padding[0],
                                  self._output_padding(x, output_size)[0], self.groups,
                                  self.dilation[0])


class ConvTranspose2d(_ConvTransposeNd):
    """y = conv_transpose2d(x, W, b): PyTorch's ``nn.ConvTranspose2d`` over
    ``F.conv_transpose2d`` (the gradient of a conv2d with respect to its input).

    x (B, C_in, H, W) or (C_in, H, W) -> (B, C_out, Ho, Wo), Ho = (H - 1) sh - 2 ph +
    dh (kh - 1) + oph + 1; W (C_in, C_out/groups, kh, kw), b (C_out,); torch's argument order
    (groups before dilation). ``forward(x, output_size)`` may ask for a size instead of
    ``output_padding``. Initialization: W, b ~ U(-1/√fan_in, 1/√fan_in), fan_in =
    C_out/groups · kh · kw (torch's).
    """

    spatial = 2

    def forward(self, x: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """x (B, C_in, H, W) or (C_in, H, W) -> (B, C_out, Ho, Wo) or (C_out, Ho, Wo)."""
        x = self._input(x)
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(x, output_size), self.groups,
                                  self.dilation)
