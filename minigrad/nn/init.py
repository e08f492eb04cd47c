"""``nn.init``: fill a Tensor (a Parameter) in place, as ``torch.nn.init``, and return it.

Every function writes into ``tensor.data`` (in its dtype, no graph recorded) and bumps the
tensor's version, as torch's in-place ``no_grad`` fills do; the random ones draw from
``generator`` (a ``np.random.Generator``, a seed, or None for a fresh one), in float64 and
then rounded to the tensor's dtype.

Fans (``calculate_fan_in_and_fan_out``), for ``xavier_*`` and ``kaiming_*``: minigrad's
``nn.Linear.weight`` is (in_features, out_features), transposed from torch's (out, in), so
a 2-d tensor is read as (fan_in, fan_out) by default (``layout="minigrad"``);
``layout="torch"`` reads it as torch does, (fan_out, fan_in), for a weight kept in torch's
layout. A tensor of 3 or more axes is (out, in, *kernel) in both, as ``nn.Conv2d.weight``
(O, C/groups, kH, kW) is in both: fan_in = C·kH·kW, fan_out = O·kH·kW. (An
``nn.Embedding.weight`` (num_embeddings, dim) is read as (in, out); torch reads it as
(out, in), but initializes it N(0, 1), which needs no fan.)
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special as sp

from .. import checks
from ..tensor import Tensor

__all__ = ["calculate_gain", "calculate_fan_in_and_fan_out", "uniform_", "normal_",
           "trunc_normal_", "constant_", "zeros_", "ones_", "xavier_uniform_",
           "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def _target(owner: str, tensor: Any, floating: bool = True) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{owner} tensor: got {type(tensor).__name__}; expected a "
                        "Tensor (a Parameter)")
    data = tensor.data
    if data.dtype.kind not in ("f" if floating else "biuf"):
        raise TypeError(f"nn.init.{owner} tensor: got dtype {data.dtype}; expected "
                        f"{'a floating' if floating else 'a real'} dtype")
    if not data.flags.writeable:
        raise ValueError(f"nn.init.{owner} tensor: its array is read-only; expected a "
                         "writeable array")
    return tensor


def _rng(owner: str, generator: Any) -> np.random.Generator:
    try:
        return checks.generator(generator, f"nn.init.{owner}")
    except TypeError as e:  # the argument is named generator here, as in torch
        raise TypeError(str(e).replace(" rng: ", " generator: ", 1)) from None


def _fill(tensor: Tensor, values: Any) -> Tensor:
    tensor.data[...] = values
    tensor.bump_version()
    return tensor


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain of ``nonlinearity``, as torch's: 1 for linear, the convolutions
    and sigmoid; 5/3 for tanh; √2 for relu; √(2 / (1 + slope²)) for leaky_relu (slope
    ``param``, default 0.01); 3/4 for selu."""
    checks.choice("nonlinearity", nonlinearity,
                  (*_LINEAR, "tanh", "relu", "leaky_relu", "selu"), owner="calculate_gain")
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "selu":
        return 3.0 / 4
    slope = 0.01 if param is None else checks.real("param", param, owner="calculate_gain")
    return math.sqrt(2.0 / (1 + slope ** 2))


def calculate_fan_in_and_fan_out(tensor: Any, *, layout: str = "minigrad") -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of 2 or more axes: see the module's docstring for the
    layouts (torch's ``_calculate_fan_in_and_fan_out`` is ``layout="torch"``)."""
    layout = checks.choice("layout", layout, ("minigrad", "torch"),
                           owner="calculate_fan_in_and_fan_out")
    shape = tuple(np.shape(tensor.data if isinstance(tensor, Tensor) else tensor))
    if len(shape) < 2:
        raise ValueError(f"calculate_fan_in_and_fan_out: got a tensor of shape {shape}; "
                         "expected 2 or more axes (fans are not defined for fewer)")
    if len(shape) == 2:
        return (shape[0], shape[1]) if layout == "minigrad" else (shape[1], shape[0])
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Any = None) -> Tensor:
    """Fill with U(a, b)."""
    tensor = _target("uniform_", tensor)
    a = checks.real("a", a, owner="nn.init.uniform_")
    b = checks.real("b", b, owner="nn.init.uniform_")
    if a > b:
        raise ValueError(f"nn.init.uniform_: got a={a} > b={b}; expected a <= b")
    return _fill(tensor, _rng("uniform_", generator).uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Any = None) -> Tensor:
    """Fill with N(mean, std²)."""
    tensor = _target("normal_", tensor)
    mean = checks.real("mean", mean, owner="nn.init.normal_")
    std = checks.real("std", std, low=0.0, owner="nn.init.normal_")
    return _fill(tensor, _rng("normal_", generator).normal(mean, std, tensor.shape))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Any = None) -> Tensor:
    """Fill with N(mean, std²) truncated to [a, b] (a and b are values, not multiples of
    std, as in torch), by the inverse CDF of a uniform draw between the CDF's values at a
    and b (computed on the side of the lower tail, where the CDF keeps its digits)."""
    owner = "nn.init.trunc_normal_"
    tensor = _target("trunc_normal_", tensor)
    mean = checks.real("mean", mean, owner=owner)
    std = checks.real("std", std, low=0.0, low_open=True, owner=owner)
    a = checks.real("a", a, owner=owner)
    b = checks.real("b", b, owner=owner)
    if not a < b:
        raise ValueError(f"{owner}: got a={a}, b={b}; expected a < b")
    lo, hi = (a - mean) / std, (b - mean) / std
    flip = lo > 0  # both bounds in the upper tail: draw the mirror image in the lower one
    if flip:
        lo, hi = -hi, -lo
    cdf_lo, cdf_hi = sp.ndtr(lo), sp.ndtr(hi)
    if not cdf_hi > cdf_lo:
        raise ValueError(f"{owner}: [a, b] = [{a}, {b}] lies too far in a tail of N({mean}, "
                         f"{std}²) to draw from in float64; expected bounds nearer the mean")
    z = sp.ndtri(_rng("trunc_normal_", generator).uniform(cdf_lo, cdf_hi, tensor.shape))
    values = mean + std * (-z if flip else z)
    return _fill(tensor, np.clip(values, a, b))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    tensor = _target("constant_", tensor, floating=False)
    return _fill(tensor, checks.real("val", val, finite=False, owner="nn.init.constant_"))


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return _fill(_target("zeros_", tensor, floating=False), 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return _fill(_target("ones_", tensor, floating=False), 1)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None, *,
                    layout: str = "minigrad") -> Tensor:
    """Fill with U(-c, c), c = gain √(6 / (fan_in + fan_out)) (Glorot and Bengio)."""
    tensor = _target("xavier_uniform_", tensor)
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor, layout=layout)
    gain = checks.real("gain", gain, low=0.0, owner="nn.init.xavier_uniform_")
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return _fill(tensor, _rng("xavier_uniform_", generator).uniform(-bound, bound,
                                                                     tensor.shape))


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None, *,
                   layout: str = "minigrad") -> Tensor:
    """Fill with N(0, std²), std = gain √(2 / (fan_in + fan_out))."""
    tensor = _target("xavier_normal_", tensor)
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor, layout=layout)
    gain = checks.real("gain", gain, low=0.0, owner="nn.init.xavier_normal_")
    std = gain * math.sqrt(2.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return _fill(tensor, _rng("xavier_normal_", generator).normal(0.0, std, tensor.shape))


def _kaiming_std(owner: str, tensor: Tensor, a: float, mode: str, nonlinearity: str,
                 layout: str) -> float:
    mode = checks.choice("mode", mode, ("fan_in", "fan_out"), owner=f"nn.init.{owner}")
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor, layout=layout)
    fan = fan_in if mode == "fan_in" else fan_out
    gain = calculate_gain(nonlinearity, a)
    return gain / math.sqrt(fan) if fan else 0.0


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: Any = None, *,
                     layout: str = "minigrad") -> Tensor:
    """Fill with U(-c, c), c = √3 gain / √fan (He et al.): ``mode`` picks fan_in (keeps
    the forward pass's variance) or fan_out (the backward pass's); ``a`` is leaky_relu's
    negative slope."""
    tensor = _target("kaiming_uniform_", tensor)
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity,
                                          layout)
    return _fill(tensor, _rng("kaiming_uniform_", generator).uniform(-bound, bound,
                                                                      tensor.shape))


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: Any = None, *,
                    layout: str = "minigrad") -> Tensor:
    """Fill with N(0, std²), std = gain / √fan (see ``kaiming_uniform_``)."""
    tensor = _target("kaiming_normal_", tensor)
    std = _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity, layout)
    return _fill(tensor, _rng("kaiming_normal_", generator).normal(0.0, std, tensor.shape))
