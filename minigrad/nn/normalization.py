"""Normalization layers: ``BatchNorm1d``, ``BatchNorm2d``, ``InstanceNorm1d``,
``InstanceNorm2d``, ``GroupNorm``, ``RMSNorm`` (``LayerNorm`` is in layers.py).

The batch and instance norms own their running statistics as buffers named as PyTorch's
(``running_mean``, ``running_var``, ``num_batches_tracked``, saved in ``state_dict``). The ops
(``F.batch_norm``, ``F.instance_norm``) never modify their inputs, so a layer in training
mode normalizes by the batch through the op and then updates its own buffers, in place and
outside the graph, by PyTorch's rules: ``new = (1 - momentum)·old + momentum·batch
statistic`` with the *unbiased* batch variance; ``momentum=None`` is a cumulative average
(factor 1/t for the t-th batch, counted in ``num_batches_tracked``). Every layer computes in
its ``dtype``: any other input is cast to it first. Weights are 1 and biases 0 initially.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import checks
from .. import functional as F
from ..tensor import Tensor
from .args import in_dtype, real_input
from .module import Module
from .parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "InstanceNorm1d", "InstanceNorm2d", "GroupNorm",
           "RMSNorm"]


def _shape_tuple(value: Any, owner: str) -> tuple[int, ...]:
    items = value if isinstance(value, (tuple, list)) else (value,)
    if not items:
        raise ValueError(f"{owner} normalized_shape: got {value!r}; expected an int or a "
                         "non-empty tuple of ints")
    return tuple(checks.positive_int("normalized_shape", n, owner=owner) for n in items)


def _array(x: Any) -> np.ndarray:
    """The input's array, read outside the graph (for the running statistics)."""
    return x.data if isinstance(x, Tensor) else np.asarray(x)


class _StatsNorm(Module):
    """The batch and instance norms: per-channel weight and bias, optional running stats."""

    _ndims: tuple[int, ...] = ()  # the input ranks taken
    _layout = ""
    running_mean: np.ndarray | None
    running_var: np.ndarray | None
    num_batches_tracked: np.ndarray | None

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, *,
                 dtype: Any = np.float64) -> None:
        super().__init__()
        owner = type(self).__name__
        self.num_features = C = checks.positive_int("num_features", num_features, owner=owner)
        self.eps = checks.real("eps", eps, low=0.0, low_open=True, owner=owner)
        self.momentum = None if momentum is None else \
            checks.real("momentum", momentum, low=0.0, high=1.0, owner=owner)
        self.affine = checks.boolean("affine", affine, owner=owner)
        self.track_running_stats = checks.boolean("track_running_stats", track_running_stats,
                                                  owner=owner)
        self.dtype = dtype = checks.floating_dtype("dtype", dtype, owner=owner)
        self.weight: Parameter | None = Parameter(np.ones(C, dtype)) if affine else None
        self.bias: Parameter | None = Parameter(np.zeros(C, dtype)) if affine else None
        tracked = self.track_running_stats
        self.register_buffer("running_mean", np.zeros(C, dtype) if tracked else None)
        self.register_buffer("running_var", np.ones(C, dtype) if tracked else None)
        self.register_buffer("num_batches_tracked", np.array(0, np.int64) if tracked else None)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batch counted (in place)."""
        if self.track_running_stats:
            self._buffer("running_mean")[...] = 0
            self._buffer("running_var")[...] = 1
            self._buffer("num_batches_tracked")[...] = 0

    def _buffer(self, name: str) -> np.ndarray:
        """A running statistic's own array (there is one when track_running_stats)."""
        buf = self._buffers[name]
        if buf is None:
            raise AttributeError(f"{type(self).__name__}: no buffer '{name}' "
                                 "(track_running_stats=False)")
        return buf

    def _input(self, x: Any) -> Tensor:
        owner = type(self).__name__
        x = real_input(owner, x, self._layout.format(C=self.num_features))
        if x.ndim not in self._ndims or x.shape[self._channel_axis(x)] != self.num_features:
            raise ValueError(f"{owner}: got input of shape {x.shape}; expected "
                             + self._layout.format(C=self.num_features))
        return in_dtype(x, self.dtype)

    def _channel_axis(self, x: Tensor) -> int:
        return 1

    def _update(self, factor: float, mean: np.ndarray, var: np.ndarray, n: int) -> None:
        """running ← (1 - factor)·running + factor·batch, var unbiased (n/(n-1)), in place."""
        for name, batch in (("running_mean", mean), ("running_var", var * (n / (n - 1)))):
            buf = self._buffer(name)
            buf *= 1.0 - factor
            buf += factor * batch.astype(buf.dtype, copy=False)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_StatsNorm):
    """y = (x - μ) / √(σ² + eps) · weight + bias per channel (axis 1), μ and σ² over the
    batch and every axis after 1 in training mode (then the running statistics are updated),
    the running statistics in eval mode (the batch's again without track_running_stats)."""

    def forward(self, x: Any) -> Tensor:
        x = self._input(x)
        if not self.training and self.track_running_stats:
            return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                                training=False, eps=self.eps)
        y = F.batch_norm(x, None, None, self.weight, self.bias, training=True, eps=self.eps)
        if self.training and self.track_running_stats:
            count = self._buffer("num_batches_tracked")
            count += 1
            factor = 1.0 / float(count) if self.momentum is None else self.momentum
            axes = (0, *range(2, x.ndim))
            data = _array(x)
            mean = data.mean(axis=axes)
            var = data.var(axis=axes)
            self._update(factor, mean, var, data.size // self.num_features)
        return y


class BatchNorm1d(_BatchNorm):
    """PyTorch's ``nn.BatchNorm1d``: x (N, C) or (N, C, L) -> the same shape."""

    _ndims = (2, 3)
    _layout = "(N, {C}) or (N, {C}, L)"


class BatchNorm2d(_BatchNorm):
    """PyTorch's ``nn.BatchNorm2d``: x (N, C, H, W) -> the same shape."""

    _ndims = (4,)
    _layout = "(N, {C}, H, W)"


class _InstanceNorm(_StatsNorm):
    """y = (x - μ) / √(σ² + eps) · weight + bias, μ and σ² per sample and channel over the
    axes after the channel. Defaults as PyTorch's: ``affine=False``,
    ``track_running_stats=False``. With tracking, training mode updates the running
    statistics by the batch's average of the instances' statistics (as torch; ``momentum=None``
    leaves them as they are, as torch's factor 0 does, and ``num_batches_tracked`` is kept for
    torch's state_dict names but not counted), and eval mode normalizes by them. Unbatched
    input (C, *) is taken as a batch of one."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, *,
                 dtype: Any = np.float64) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype=dtype)

    def _channel_axis(self, x: Tensor) -> int:
        return 1 if x.ndim == max(self._ndims) else 0

    def forward(self, x: Any) -> Tensor:
        x = self._input(x)
        batched = x.ndim == max(self._ndims)
        xb = x if batched else F.expand_dims(x, 0)
        if not self.training and self.track_running_stats:
            y = F.instance_norm(xb, self.running_mean, self.running_var, self.weight, self.bias,
                                use_input_stats=False, eps=self.eps)
        else:
            y = F.instance_norm(xb, None, None, self.weight, self.bias, eps=self.eps)
            if self.training and self.track_running_stats:
                data = _array(xb)
                axes = tuple(range(2, data.ndim))
                factor = 0.0 if self.momentum is None else self.momentum
                n = data.size // (data.shape[0] * self.num_features)
                # var's mean over the batch is averaged from each instance's unbiased one
                self._update(factor, data.mean(axis=axes).mean(axis=0),
                             data.var(axis=axes).mean(axis=0), n)
        return y if batched else y[0]


class InstanceNorm1d(_InstanceNorm):
    """PyTorch's ``nn.InstanceNorm1d``: x (N, C, L) or (C, L) -> the same shape."""

    _ndims = (2, 3)
    _layout = "(N, {C}, L) or ({C}, L)"


class InstanceNorm2d(_InstanceNorm):
    """PyTorch's ``nn.InstanceNorm2d``: x (N, C, H, W) or (C, H, W) -> the same shape."""

    _ndims = (3, 4)
    _layout = "(N, {C}, H, W) or ({C}, H, W)"


class GroupNorm(Module):
    """PyTorch's ``nn.GroupNorm``: x (N, C, *) normalized per sample over each of
    ``num_groups`` groups of C/num_groups channels, then weight and bias per channel
    (``affine``). No running statistics: train and eval compute the same."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, *, dtype: Any = np.float64) -> None:
        super().__init__()
        owner = "GroupNorm"
        self.num_groups = checks.positive_int("num_groups", num_groups, owner=owner)
        self.num_channels = checks.positive_int("num_channels", num_channels, owner=owner)
        if self.num_channels % self.num_groups:
            raise ValueError(f"GroupNorm num_groups: got {num_groups} for {num_channels} "
                             "channels; expected a divisor of num_channels")
        self.eps = checks.real("eps", eps, low=0.0, low_open=True, owner=owner)
        self.affine = checks.boolean("affine", affine, owner=owner)
        self.dtype = dtype = checks.floating_dtype("dtype", dtype, owner=owner)
        C = self.num_channels
        self.weight: Parameter | None = Parameter(np.ones(C, dtype)) if affine else None
        self.bias: Parameter | None = Parameter(np.zeros(C, dtype)) if affine else None

    def forward(self, x: Any) -> Tensor:
        x = real_input("GroupNorm", x, f"(N, {self.num_channels}, *)")
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: got input of shape {x.shape}; expected "
                             f"(N, {self.num_channels}, *)")
        return F.group_norm(in_dtype(x, self.dtype), self.num_groups, self.weight, self.bias,
                            eps=self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """PyTorch's ``nn.RMSNorm``: y = x / √(mean(x²) + eps) · weight over the trailing
    ``normalized_shape`` (an int or a tuple); ``eps=None`` is the dtype's machine epsilon.
    weight (of ``normalized_shape``, 1 initially) with ``elementwise_affine``."""

    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float | None = None,
                 elementwise_affine: bool = True, *, dtype: Any = np.float64) -> None:
        super().__init__()
        owner = "RMSNorm"
        self.normalized_shape = _shape_tuple(normalized_shape, owner)
        self.eps = None if eps is None else checks.real("eps", eps, low=0.0, owner=owner)
        self.elementwise_affine = checks.boolean("elementwise_affine", elementwise_affine,
                                                 owner=owner)
        self.dtype = dtype = checks.floating_dtype("dtype", dtype, owner=owner)
        self.weight: Parameter | None = Parameter(np.ones(self.normalized_shape, dtype)) \
            if elementwise_affine else None

    def forward(self, x: Any) -> Tensor:
        k = len(self.normalized_shape)
        x = real_input("RMSNorm", x, f"(..., {', '.join(map(str, self.normalized_shape))})")
        if x.shape[max(x.ndim - k, 0):] != self.normalized_shape:
            raise ValueError(f"RMSNorm: got input of shape {x.shape}; expected its trailing "
                             f"shape to be {self.normalized_shape}")
        return F.rms_norm(in_dtype(x, self.dtype), self.normalized_shape, self.weight,
                          eps=self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
