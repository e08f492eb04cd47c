"""Layers with parameters: ``Linear``, ``LayerNorm``, ``Conv2d``, ``Embedding``.

Unlike PyTorch, ``Linear.weight`` has shape (in_features, out_features) and the layer
computes ``x @ W + b``: no transpose in the forward pass. Weights are initialised
N(0, 1/fan_in) and biases 0 (the project's rule, not PyTorch's uniform bounds).
Every layer computes in its ``dtype``: any other input is cast to it first.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import checks
from .. import functional as F
from ..checks import generator, int_tuple
from ..tensor import Tensor
from .args import features_input, in_dtype, real_input
from .module import Module
from .parameter import Parameter

__all__ = ["Linear", "LayerNorm", "Conv2d", "Embedding"]


class Linear(Module):
    """y = x @ W + b, with W of shape (in_features, out_features) and b of shape (out_features,).

    Initialization: W ~ N(0, 1/in_features) (``rng.standard_normal / sqrt(in_features)``),
    b = 0. It computes in its ``dtype``: any other input (integers, another float width) is
    cast to it first. ``rng`` is a ``np.random.Generator`` or a seed (a fresh generator if None).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 dtype: Any = np.float64, rng: np.random.Generator | int | None = None) -> None:
        super().__init__()
        self.in_features = checks.positive_int("in_features", in_features, owner="Linear")
        self.out_features = checks.positive_int("out_features", out_features, owner="Linear")
        dtype = checks.floating_dtype("dtype", dtype, owner="Linear")
        rng = generator(rng, "Linear")
        weight = rng.standard_normal((self.in_features, self.out_features))
        weight /= math.sqrt(self.in_features)
        self.weight = Parameter(weight, dtype=dtype)
        self.bias = Parameter(np.zeros(self.out_features, dtype=dtype)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        """x (..., in_features) -> (..., out_features)."""
        x = in_dtype(features_input("Linear", x, self.in_features), self.weight.dtype)
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, dtype={self.weight.dtype}")


class LayerNorm(Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last axis (D features), or
    over the trailing axes of ``normalized_dim`` given as a tuple (PyTorch's
    ``normalized_shape``), normalized together.

    ``var`` is the population variance. weight = 1 and bias = 0 initially, both of the
    normalized shape; without ``elementwise_affine`` there are neither, and ``bias=False``
    (PyTorch's keyword) keeps the weight only. It computes in its ``dtype`` (with or without
    weights): any other input is cast to it first.
    """

    def __init__(self, normalized_dim: int | tuple[int, ...], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, *,
                 dtype: Any = np.float64) -> None:
        super().__init__()
        if isinstance(normalized_dim, (tuple, list)):
            if not normalized_dim:
                raise ValueError(f"LayerNorm normalized_dim: got {normalized_dim!r}; expected "
                                 "an int or a non-empty tuple of ints")
            shape = tuple(checks.positive_int("normalized_dim", n, owner="LayerNorm")
                          for n in normalized_dim)
        else:
            shape = (checks.positive_int("normalized_dim", normalized_dim, owner="LayerNorm"),)
        self.normalized_shape = shape
        # the int of the one-axis layer, as before; the tuple otherwise
        self.normalized_dim = shape[0] if len(shape) == 1 and \
            not isinstance(normalized_dim, (tuple, list)) else shape
        self.eps = checks.real("eps", eps, low=0.0, low_open=True, owner="LayerNorm")
        checks.boolean("elementwise_affine", elementwise_affine, owner="LayerNorm")
        checks.boolean("bias", bias, owner="LayerNorm")
        # the dtype it computes in, weights or not
        self.dtype = dtype = checks.floating_dtype("dtype", dtype, owner="LayerNorm")
        self.weight: Parameter | None
        self.bias: Parameter | None
        if elementwise_affine:
            self.weight = Parameter(np.ones(shape, dtype=dtype))
            self.bias = Parameter(np.zeros(shape, dtype=dtype)) if bias else None
        else:
            self.weight = None
            self.bias = None

    def forward(self, x: Tensor) -> Tensor:
        """x (..., *normalized_shape) -> the same shape, normalized per row of those axes."""
        shape = self.normalized_shape
        if len(shape) == 1:  # the last-axis path, unchanged
            x = in_dtype(features_input("LayerNorm", x, shape[0]), self.dtype)
            return F.layer_norm(x, self.weight, self.bias, eps=self.eps)
        x = real_input("LayerNorm", x, f"(..., {', '.join(map(str, shape))})")
        if x.shape[max(x.ndim - len(shape), 0):] != shape:
            raise ValueError(f"LayerNorm: got input of shape {x.shape}; expected shape "
                             f"(..., {', '.join(map(str, shape))})")
        return F.layer_norm(in_dtype(x, self.dtype), self.weight, self.bias, eps=self.eps,
                            normalized_shape=shape)

    def extra_repr(self) -> str:
        return (f"{self.normalized_dim}, eps={self.eps}, "
                f"elementwise_affine={self.weight is not None}, bias={self.bias is not None}")


class Conv2d(Module):
    """y = conv2d(x, W, b): PyTorch's ``nn.Conv2d`` (a cross-correlation, NCHW) over
    ``F.conv2d``.

    x (B, C, H, W) or (C, H, W) -> (B, O, Ho, Wo) with Ho = (H + 2 ph - dh (kh - 1) - 1) // sh
    + 1 (Wo alike); W (O, C/groups, kh, kw), b (O,). ``padding`` is an int, a pair, 'valid'
    or 'same'. Initialization (the project's rule, as ``Linear``; PyTorch draws both from
    U(-1/√fan_in, 1/√fan_in) instead): W ~ N(0, 1/fan_in) with fan_in = C/groups · kh · kw,
    b = 0.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int],
                 stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] | str = 0,
                 dilation: int | tuple[int, int] = 1, groups: int = 1, bias: bool = True, *,
                 dtype: Any = np.float64, rng: np.random.Generator | int | None = None) -> None:
        super().__init__()
        owner = "Conv2d"
        self.in_channels = checks.positive_int("in_channels", in_channels, owner=owner)
        self.out_channels = checks.positive_int("out_channels", out_channels, owner=owner)
        self.kernel_size = int_tuple(kernel_size, 2, owner, "kernel_size", 1)
        self.stride = int_tuple(stride, 2, owner, "stride", 1)
        self.dilation = int_tuple(dilation, 2, owner, "dilation", 1)
        self.padding = padding if isinstance(padding, str) else \
            int_tuple(padding, 2, owner, "padding", 0)
        if isinstance(padding, str):
            checks.choice("padding", padding, ("valid", "same"), owner=owner)
        self.groups = checks.positive_int("groups", groups, owner=owner)
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"Conv2d groups: got {groups} for {in_channels} input and "
                             f"{out_channels} output channels; expected a divisor of both")
        checks.boolean("bias", bias, owner=owner)
        dtype = checks.floating_dtype("dtype", dtype, owner=owner)
        shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        fan_in = shape[1] * shape[2] * shape[3]
        weight = generator(rng, owner).standard_normal(shape) / math.sqrt(fan_in)
        self.weight = Parameter(weight, dtype=dtype)
        self.bias = Parameter(np.zeros(self.out_channels, dtype=dtype)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        """x (B, C, H, W) or (C, H, W) -> (B, O, Ho, Wo) or (O, Ho, Wo)."""
        x = real_input("Conv2d", x, f"(B, {self.in_channels}, H, W)")
        if x.ndim not in (3, 4) or x.shape[-3] != self.in_channels:
            raise ValueError(f"Conv2d: got input of shape {x.shape}; expected (B, "
                             f"{self.in_channels}, H, W) or ({self.in_channels}, H, W)")
        x = in_dtype(x, self.weight.dtype)
        return F.conv2d(x, self.weight, self.bias, stride=self.stride, padding=self.padding,
                        dilation=self.dilation, groups=self.groups)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
                f"groups={self.groups}, bias={self.bias is not None}")


class Embedding(Module):
    """y = W[indices]: a lookup table of ``num_embeddings`` rows of ``embedding_dim``.

    indices: integers of any shape S (an array, a list, an int or an integer Tensor), each
    in [0, num_embeddings) -> y of shape S + (embedding_dim,). The gradient of a row is the
    sum of the output gradients of every position that picked it (repeated indices add up).
    Initialization W ~ N(0, 1), as PyTorch's.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, *, dtype: Any = np.float64,
                 rng: np.random.Generator | int | None = None) -> None:
        super().__init__()
        owner = "Embedding"
        self.num_embeddings = checks.positive_int("num_embeddings", num_embeddings, owner=owner)
        self.embedding_dim = checks.positive_int("embedding_dim", embedding_dim, owner=owner)
        dtype = checks.floating_dtype("dtype", dtype, owner=owner)
        weight = generator(rng, owner).standard_normal((self.num_embeddings, self.embedding_dim))
        self.weight = Parameter(weight, dtype=dtype)

    def forward(self, indices: Any) -> Tensor:
        """indices S (integers) -> S + (embedding_dim,)."""
        given = type(indices).__name__
        index = np.asarray(indices.data if isinstance(indices, Tensor) else indices)
        if index.dtype.kind not in "iu":
            raise TypeError(f"Embedding indices: got {given} of dtype {index.dtype}; expected "
                            "integers")
        if index.size and (index.min() < 0 or index.max() >= self.num_embeddings):
            bad = index.min() if index.min() < 0 else index.max()
            raise ValueError(f"Embedding indices: got {int(bad)}; expected integers in "
                             f"[0, {self.num_embeddings})")
        # an array index (also 0-d) makes getitem accumulate repeated rows with np.add.at
        return F.getitem(self.weight, index.astype(np.intp, copy=True))

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"
