"""batch_norm, instance_norm, group_norm: PyTorch's normalizations of (N, C, *) input by
statistics over some of its axes, with a scale and shift per channel (axis 1).

All three are one computation over different axes (docs/backward.md §32): x̂ = (x - μ) · r with
μ, σ² the mean and *population* variance over the axes A and r = 1/√(σ² + eps), then
y = x̂ ⊙ w + b per channel; batch_norm takes A = every axis but 1, instance_norm the axes
after 1, group_norm the channels of a group and the axes after 1.

The ops never modify their inputs: where PyTorch's ``F.batch_norm(..., training=True)``
updates ``running_mean`` and ``running_var`` in place, these refuse running statistics in
training mode, and ``nn.BatchNorm1d/2d`` / ``nn.InstanceNorm1d/2d`` update the buffers they
own (minigrad/nn/normalization.py). Integer and bool input is computed in float64.
"""
from __future__ import annotations

import math

import numpy as np

from ..checks import boolean, integer, real
from ..defop import op

__all__ = ["batch_norm", "instance_norm", "group_norm"]


def _dtype(x, *params):
    """The dtype computed in: x's (float64 for integers and bools), widened by the params'."""
    floating = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    return np.result_type(floating, *(p for p in params if p is not None))


def _channel_params(owner, x, params, min_ndim):
    """The per-channel arrays checked: each None or of shape (C,), C = x.shape[1]."""
    if x.ndim < min_ndim:
        raise ValueError(f"{owner} x: got shape {x.shape}; expected (N, C, ...) with at "
                         f"least {min_ndim} axes")
    C = x.shape[1]
    for name, p in params:
        if p is None:
            continue
        if p.dtype.kind not in "biuf":
            raise TypeError(f"{owner} {name}: got dtype {p.dtype}; expected numbers")
        if p.shape != (C,):
            raise ValueError(f"{owner} {name}: got shape {p.shape}; expected ({C},), the "
                             f"channels (axis 1) of x {x.shape}")


def _per_channel(p, ndim, dtype):
    """(C,) -> (1, C, 1, ...) broadcasting against x, in ``dtype``."""
    return None if p is None else p.astype(dtype, copy=False).reshape((1, -1) + (1,) * (ndim - 2))


def _normalized(x, axes, eps):
    """x̂ = (x - μ) · r over ``axes`` and r (keepdims), computed in two passes."""
    xc = x - np.mean(x, axis=axes, keepdims=True)
    r = np.mean(xc * xc, axis=axes, keepdims=True)
    r += eps
    np.sqrt(r, out=r)
    np.divide(1.0, r, out=r)
    xc *= r
    return xc, r


def _vjp_normalized(gh, xh, r, axes):
    """x̄ = r · (ĝ - mean(ĝ) - x̂ ⊙ mean(ĝ ⊙ x̂)) over ``axes`` (docs/backward.md §9, §32)."""
    out = gh - np.mean(gh, axis=axes, keepdims=True)
    out -= xh * np.mean(gh * xh, axis=axes, keepdims=True)
    out *= r
    return out


def _affine(xh, weight, bias, ndim, dtype):
    """y = x̂ ⊙ w + b per channel, and ĝ from g (g ⊙ w, or g)."""
    w, b = _per_channel(weight, ndim, dtype), _per_channel(bias, ndim, dtype)
    y = xh if w is None else xh * w
    if b is not None:
        y = y + b
    return y, (lambda g: g if w is None else g * w)


def _by_channel(a, ndim):
    """Σ over every axis but the channel axis 1: (N, C, *) -> (C,)."""
    return np.sum(a, axis=(0, *range(2, ndim)))


def _with_stats(x, axes, weight, bias, eps, dtype, shape=None):
    """The shared forward and VJPs: normalize over ``axes`` of x (reshaped to ``shape`` for
    the statistics if given), then the per-channel scale and shift."""
    xs = x.astype(dtype, copy=False)
    xh, r = _normalized(xs if shape is None else xs.reshape(shape), axes, eps)
    xh = xh.reshape(x.shape)
    y, scaled = _affine(xh, weight, bias, x.ndim, dtype)

    def vjp_x(g):
        gh = scaled(g)
        if shape is None:
            return _vjp_normalized(gh, xh, r, axes)
        return _vjp_normalized(gh.reshape(shape), xh.reshape(shape), r, axes).reshape(x.shape)

    return y, vjp_x, (lambda g: _by_channel(g * xh, x.ndim)), (lambda g: _by_channel(g, x.ndim))


def _with_running(x, mean, var, weight, bias, eps, dtype):
    """Normalized by given statistics: y = (x - m) · r ⊙ w + b, linear in x."""
    m, v = _per_channel(mean, x.ndim, dtype), _per_channel(var, x.ndim, dtype)
    r = 1.0 / np.sqrt(v + eps)
    xh = (x.astype(dtype, copy=False) - m) * r
    y, scaled = _affine(xh, weight, bias, x.ndim, dtype)
    return y, (lambda g: scaled(g) * r), (lambda g: _by_channel(g * xh, x.ndim)), \
        (lambda g: _by_channel(g, x.ndim))


def _check_stats_args(owner, flag_name, flag, x, running_mean, running_var, weight, bias,
                      momentum, eps, min_ndim):
    flag = boolean(flag_name, flag, owner=owner)
    if momentum is not None:
        real("momentum", momentum, low=0.0, high=1.0, owner=owner)
    eps = real("eps", eps, low=0.0, low_open=True, owner=owner)
    arrays = (("running_mean", running_mean), ("running_var", running_var),
              ("weight", weight), ("bias", bias))
    _channel_params(owner, x, [(n, None if p is None else np.asarray(p)) for n, p in arrays],
                    min_ndim)
    if flag and (running_mean is not None or running_var is not None):
        raise ValueError(
            f"{owner}: got running_mean or running_var with {flag_name}=True; minigrad's ops "
            "never modify their inputs, so they are not updated here: pass None for both and "
            "update them from the batch (the modules nn.BatchNorm1d/2d and nn.InstanceNorm1d/2d "
            "own and update theirs: new = (1 - momentum)·old + momentum·batch statistic, with "
            "the unbiased variance)")
    if not flag and (running_mean is None or running_var is None):
        raise ValueError(f"{owner}: got {flag_name}=False without running_mean and "
                         "running_var; expected both (the statistics to normalize by)")
    return flag, eps


def _count_check(owner, x, axes):
    count = int(np.prod([x.shape[a] for a in axes]))
    if count <= 1:
        raise ValueError(f"{owner}: got x of shape {x.shape}; expected more than 1 value per "
                         "channel to take statistics over (the batch statistics of one "
                         "value are that value, and its variance 0)")


@op(arrays=5)
def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """y = (x - μ) / √(σ² + eps) ⊙ w + b per channel, μ, σ² over every axis but axis 1.

    x (N, C), (N, C, L) or (N, C, H, W) (any (N, C, *)); running_mean, running_var, weight,
    bias (C,), each optional. ``training=True``: μ and σ² (population variance) of the batch,
    running statistics refused (the op never updates them; nn.BatchNorm1d/2d does);
    ``training=False``: the given running statistics. ``momentum`` is PyTorch's argument,
    checked and kept for its argument order; the modules read it. VJP (training), ĝ = g ⊙ w:
        x̄ = r · (ĝ - mean(ĝ) - x̂ ⊙ mean(ĝ ⊙ x̂)),  means over (0, 2, ...);  in eval x̄ = ĝ · r.
    w̄ = Σ g ⊙ x̂, b̄ = Σ g over every axis but 1. The running statistics get no gradient.
    Derivation: docs/backward.md §32. Tests: tests/minigrad/op_cases/channel_norm.py,
    tests/minigrad/ops/test_normalization_more.py.
    """
    training, eps = _check_stats_args("batch_norm", "training", training, x, running_mean,
                                      running_var, weight, bias, momentum, eps, 2)
    dtype = _dtype(x, weight, bias)
    if training:
        axes = (0, *range(2, x.ndim))
        _count_check("batch_norm", x, axes)
        y, vx, vw, vb = _with_stats(x, axes, weight, bias, eps, dtype)
    else:
        y, vx, vw, vb = _with_running(x, running_mean, running_var, weight, bias, eps, dtype)
    return y, (vx, None, None, vw, vb)


@op(arrays=5)
def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """y = (x - μ) / √(σ² + eps) ⊙ w + b, μ, σ² per sample and channel over the axes after 1.

    x (N, C, L) or (N, C, H, W) (any (N, C, *)); running_mean, running_var, weight, bias
    (C,), each optional. ``use_input_stats=True``: each instance's own statistics, running
    statistics refused (nn.InstanceNorm1d/2d updates its own); ``False``: the given ones.
    VJP as batch_norm's, the means over (2, ...) instead.
    Derivation: docs/backward.md §32. Tests: tests/minigrad/op_cases/channel_norm.py,
    tests/minigrad/ops/test_normalization_more.py.
    """
    use, eps = _check_stats_args("instance_norm", "use_input_stats", use_input_stats, x,
                                 running_mean, running_var, weight, bias, momentum, eps, 3)
    dtype = _dtype(x, weight, bias)
    if use:
        axes = tuple(range(2, x.ndim))
        _count_check("instance_norm", x, axes)
        y, vx, vw, vb = _with_stats(x, axes, weight, bias, eps, dtype)
    else:
        y, vx, vw, vb = _with_running(x, running_mean, running_var, weight, bias, eps, dtype)
    return y, (vx, None, None, vw, vb)


@op(arrays=1)
def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """y = (x - μ) / √(σ² + eps) ⊙ w + b, μ, σ² per sample over each group of C/G channels.

    x (N, C, *) with C divisible by ``num_groups`` G; weight, bias (C,), optional. The
    statistics of a group span its C/G channels and every axis after 1; the scale and shift
    are per channel. VJP as batch_norm's, the means over each (sample, group).
    Derivation: docs/backward.md §32. Tests: tests/minigrad/op_cases/channel_norm.py,
    tests/minigrad/ops/test_normalization_more.py.
    """
    G = integer("num_groups", num_groups, low=1, owner="group_norm")
    eps = real("eps", eps, low=0.0, low_open=True, owner="group_norm")
    params = [(n, None if p is None else np.asarray(p)) for n, p in (("weight", weight),
                                                                      ("bias", bias))]
    _channel_params("group_norm", x, params, 2)
    weight, bias = params[0][1], params[1][1]
    if x.shape[1] % G:
        raise ValueError(f"group_norm num_groups: got {G} for {x.shape[1]} channels of x "
                         f"{x.shape}; expected a divisor of the channels")
    dtype = _dtype(x, weight, bias)
    shape = (x.shape[0], G, x.shape[1] // G * math.prod(x.shape[2:]))
    y, vx, vw, vb = _with_stats(x, (2,), weight, bias, eps, dtype, shape)
    return y, (vx, None, vw, vb)
