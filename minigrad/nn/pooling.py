"""Pooling and resizing layers, without parameters: ``MaxPool1d``, ``MaxPool2d``,
``AvgPool1d``, ``AvgPool2d``, ``AdaptiveAvgPool1d``, ``AdaptiveAvgPool2d``,
``AdaptiveMaxPool2d``, ``MaxUnpool2d`` and ``Upsample``, with PyTorch's constructor
arguments, each over its ``F`` function.

The constructors check their arguments (a wrong type TypeError, a wrong value ValueError,
naming the layer), so that a bad layer fails where it is built; what depends on the input
(a kernel larger than it, an output too large) is the op's to refuse.
"""
from __future__ import annotations

from typing import Any

from .. import checks
from .. import functional as F
from ..checks import int_tuple
from ..tensor import Tensor
from .args import real_input
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "MaxUnpool2d", "Upsample"]

IntOrPair = int | tuple[int, int]


class _Pool(Module):
    """The arguments every pooling layer shares, checked as the ops check them."""

    n = 2  # spatial axes

    def __init__(self, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = self._tuple(kernel_size, "kernel_size", 1)
        self.stride = self.kernel_size if stride is None else self._tuple(stride, "stride", 1)
        self.padding = self._tuple(padding, "padding", 0)
        self.ceil_mode = checks.boolean("ceil_mode", ceil_mode, owner=name)
        if any(2 * p > k for p, k in zip(self._all(self.padding), self._all(self.kernel_size),
                                         strict=True)):
            raise ValueError(f"{name} padding: got {padding} for kernel_size {kernel_size}; "
                             "expected at most half the kernel size")

    def _tuple(self, value: Any, arg: str, low: int) -> Any:
        t = int_tuple(value, self.n, type(self).__name__, arg, low)
        return t[0] if self.n == 1 else t

    def _all(self, value: Any) -> tuple:
        return value if isinstance(value, tuple) else (value,)

    def _input(self, x: Any) -> Any:
        shape = "(B, C, L) or (C, L)" if self.n == 1 else "(B, C, H, W) or (C, H, W)"
        return real_input(type(self).__name__, x, shape)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, ceil_mode={self.ceil_mode}")


class MaxPool2d(_Pool):
    """y = ``F.max_pool2d(x, ...)``: the maximum of each (dilated) window, as
    ``torch.nn.MaxPool2d``; with ``return_indices`` also their flat indices (for
    ``MaxUnpool2d``). x (B, C, H, W) or (C, H, W)."""

    def __init__(self, kernel_size: IntOrPair, stride: IntOrPair | None = None,
                 padding: IntOrPair = 0, dilation: IntOrPair = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.dilation = self._tuple(dilation, "dilation", 1)
        self.return_indices = checks.boolean("return_indices", return_indices,
                                             owner=type(self).__name__)

    def forward(self, x: Tensor) -> Any:
        pool = F.max_pool1d if self.n == 1 else F.max_pool2d
        return pool(self._input(x), self.kernel_size, self.stride, self.padding, self.dilation,
                    self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"{super().extra_repr()}, dilation={self.dilation}, "
                f"return_indices={self.return_indices}")


class MaxPool1d(MaxPool2d):
    """y = ``F.max_pool1d(x, ...)``, as ``torch.nn.MaxPool1d``. x (B, C, L) or (C, L)."""

    n = 1

    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0,
                 dilation: int = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, stride, padding, dilation, return_indices, ceil_mode)


class AvgPool2d(_Pool):
    """y = ``F.avg_pool2d(x, ...)``: the mean of each window, as ``torch.nn.AvgPool2d``
    (``count_include_pad``, ``divisor_override``). x (B, C, H, W) or (C, H, W)."""

    def __init__(self, kernel_size: IntOrPair, stride: IntOrPair | None = None,
                 padding: IntOrPair = 0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode)
        name = type(self).__name__
        self.count_include_pad = checks.boolean("count_include_pad", count_include_pad,
                                                owner=name)
        if divisor_override is not None:
            divisor_override = checks.integer("divisor_override", divisor_override,
                                              low=-2**53, high=2**53, owner=name)
            if divisor_override == 0:
                raise ValueError(f"{name} divisor_override: got 0; expected a nonzero integer "
                                 "or None")
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(self._input(x), self.kernel_size, self.stride, self.padding,
                            self.count_include_pad, ceil_mode=self.ceil_mode,
                            divisor_override=self.divisor_override)

    def extra_repr(self) -> str:
        return (f"{super().extra_repr()}, count_include_pad={self.count_include_pad}, "
                f"divisor_override={self.divisor_override}")


class AvgPool1d(_Pool):
    """y = ``F.avg_pool1d(x, ...)``, as ``torch.nn.AvgPool1d``. x (B, C, L) or (C, L)."""

    n = 1

    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad = checks.boolean("count_include_pad", count_include_pad,
                                                owner="AvgPool1d")

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool1d(self._input(x), self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, count_include_pad={self.count_include_pad}"


class AdaptiveAvgPool2d(Module):
    """y = ``F.adaptive_avg_pool2d(x, output_size)``: (B, C, H, W) -> (B, C, Ho, Wo), each
    output the mean of its window [floor(p·H/Ho), ceil((p+1)·H/Ho)) (columns alike), as
    ``torch.nn.AdaptiveAvgPool2d``; an entry None keeps that size."""

    n = 2

    def __init__(self, output_size: int | tuple[int | None, int | None]) -> None:
        super().__init__()
        name = type(self).__name__
        items = tuple(output_size) if isinstance(output_size, (tuple, list)) \
            else (output_size,) * self.n
        if len(items) != self.n:
            raise ValueError(f"{name} output_size: got {checks.shown(output_size)}; expected "
                             f"an int >= 1 or a tuple of {self.n} of them")
        for v in items:
            if v is not None:
                checks.integer("output_size", v, low=1, owner=name)
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        pool = F.adaptive_avg_pool1d if self.n == 1 else F.adaptive_avg_pool2d
        return pool(real_input(type(self).__name__, x, "(B, C, ...)"), self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    """y = ``F.adaptive_avg_pool1d(x, output_size)``: (B, C, L) -> (B, C, Lo), as
    ``torch.nn.AdaptiveAvgPool1d``."""

    n = 1

    def __init__(self, output_size: int) -> None:
        super().__init__(output_size)


class AdaptiveMaxPool2d(AdaptiveAvgPool2d):
    """y = ``F.adaptive_max_pool2d(x, output_size, return_indices)``: the maximum of each
    adaptive window, as ``torch.nn.AdaptiveMaxPool2d``."""

    def __init__(self, output_size: int | tuple[int | None, int | None],
                 return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = checks.boolean("return_indices", return_indices,
                                             owner="AdaptiveMaxPool2d")

    def forward(self, x: Tensor) -> Any:
        return F.adaptive_max_pool2d(real_input("AdaptiveMaxPool2d", x, "(B, C, H, W)"),
                                     self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, return_indices={self.return_indices}"


class MaxUnpool2d(Module):
    """y = ``F.max_unpool2d(x, indices, ...)``: each x element written at its index (from
    ``MaxPool2d(..., return_indices=True)``) into zeros, as ``torch.nn.MaxUnpool2d``;
    ``forward(x, indices, output_size=None)``."""

    def __init__(self, kernel_size: IntOrPair, stride: IntOrPair | None = None,
                 padding: IntOrPair = 0) -> None:
        super().__init__()
        self.kernel_size = int_tuple(kernel_size, 2, "MaxUnpool2d", "kernel_size", 1)
        self.stride = self.kernel_size if stride is None else \
            int_tuple(stride, 2, "MaxUnpool2d", "stride", 1)
        self.padding = int_tuple(padding, 2, "MaxUnpool2d", "padding", 0)

    def forward(self, x: Tensor, indices: Any, output_size: Any = None) -> Tensor:
        if isinstance(indices, Tensor):
            indices = indices.data
        return F.max_unpool2d(real_input("MaxUnpool2d", x, "(B, C, H, W)"), indices,
                              self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class Upsample(Module):
    """y = ``F.interpolate(x, size, scale_factor, mode, align_corners)``, as
    ``torch.nn.Upsample``: (N, C, L) with mode 'nearest' or 'linear', (N, C, H, W) with
    'nearest' or 'bilinear'; exactly one of ``size`` and ``scale_factor``."""

    def __init__(self, size: int | tuple[int, ...] | None = None,
                 scale_factor: float | tuple[float, ...] | None = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        name = "Upsample"
        self.mode = checks.choice("mode", mode, ("nearest", "linear", "bilinear"), owner=name)
        if (size is None) == (scale_factor is None):
            raise ValueError(f"{name}: got size={checks.shown(size)} and scale_factor="
                             f"{checks.shown(scale_factor)}; expected exactly one of them")
        for v in (size if isinstance(size, (tuple, list)) else (size,)):
            if size is not None:
                checks.integer("size", v, low=1, owner=name)
        for f in (scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,)):
            if scale_factor is not None:
                checks.real("scale_factor", f, low=0, low_open=True, owner=name)
        for arg, flag in (("align_corners", align_corners),
                          ("recompute_scale_factor", recompute_scale_factor)):
            if flag is not None:
                checks.boolean(arg, flag, owner=name)
        if align_corners is not None and self.mode == "nearest":
            raise ValueError(f"{name} align_corners: got {align_corners} with mode 'nearest'; "
                             "expected None (only the linear modes align corners)")
        self.size, self.scale_factor = size, scale_factor
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(real_input("Upsample", x, "(N, C, L) or (N, C, H, W)"), self.size,
                             self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self) -> str:
        shown = f"size={self.size}" if self.size is not None else \
            f"scale_factor={self.scale_factor}"
        return f"{shown}, mode={self.mode!r}"
