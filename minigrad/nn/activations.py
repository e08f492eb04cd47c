"""Layers without parameters: activations (``ReLU``, ``GELU``, ``Tanh``, ``Sigmoid``,
``SiLU``, ``Softmax``; and ``Mish``, ``Hardswish``, ``Hardsigmoid``, ``CELU``, ``Softsign``,
``LeakyReLU``, ``ELU``, ``SELU``, ``Softplus``, ``LogSigmoid``, ``Hardtanh``, ``LogSoftmax``,
``Softmin``, each its ``F`` function with torch's arguments), ``Flatten``, ``Dropout``,
``Identity``.

Each calls its ``F`` function inside ``forward``, so a layer whose function another part of
minigrad adds later (``F.gelu``, ``F.silu``) works as soon as it exists, and says so clearly
before.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import checks
from .. import functional as F
from ..checks import generator
from ..tensor import Tensor
from .args import real_input
from .module import Module

__all__ = ["ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "Softmax", "Flatten", "Dropout", "Mish",
           "Hardswish", "Hardsigmoid", "CELU", "Softsign", "LeakyReLU", "ELU", "SELU",
           "Softplus", "LogSigmoid", "Hardtanh", "LogSoftmax", "Softmin", "Identity"]


def lookup_op(name: str, layer: str) -> Callable[..., Tensor]:
    """``F.<name>``, looked up when the layer runs (NotImplementedError if F has none)."""
    fn = getattr(F, name, None)
    if fn is None:
        raise NotImplementedError(f"{layer}: minigrad.functional has no {name}() yet; "
                                  "expected it in F")
    return fn


class ReLU(Module):
    """y = max(x, 0), elementwise (``F.relu``): any shape to the same shape."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class Tanh(Module):
    """y = tanh(x), elementwise (``F.tanh``)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    """y = 1 / (1 + exp(-x)), elementwise (``F.sigmoid``)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class SiLU(Module):
    """y = x · sigmoid(x), elementwise (``F.silu``)."""

    def forward(self, x: Tensor) -> Tensor:
        return lookup_op("silu", "SiLU")(x)


class GELU(Module):
    """GELU, elementwise, as PyTorch's ``nn.GELU(approximate=...)``.

    ``approximate="none"``: y = x Φ(x) = x (1 + erf(x / √2)) / 2 (``F.gelu``);
    ``approximate="tanh"``: y = x (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2 (``F.gelu_tanh``).
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = checks.choice("approximate", approximate, ("none", "tanh"),
                                         owner="GELU")

    def forward(self, x: Tensor) -> Tensor:
        if self.approximate == "tanh":
            return F.gelu_tanh(x)
        return lookup_op("gelu", "GELU")(x)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """y_i = exp(x_i) / Σ_j exp(x_j) along axis ``dim`` (``F.softmax``); shape kept."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = checks.integer("dim", dim, owner="Softmax")

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, axis=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Flatten(Module):
    """Merge axes ``start_dim`` .. ``end_dim`` (inclusive, negative counts from the end) into
    one, as ``torch.nn.Flatten``: (B, C, H, W) -> (B, C·H·W) with the defaults (1, -1)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = checks.integer("start_dim", start_dim, owner="Flatten")
        self.end_dim = checks.integer("end_dim", end_dim, owner="Flatten")

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        n = max(len(shape), 1)  # a 0-d input flattens as if it were (1,) shaped, as torch
        start, end = (d + n if d < 0 else d for d in (self.start_dim, self.end_dim))
        if not (0 <= start < n and 0 <= end < n):
            raise ValueError(f"Flatten: start_dim={self.start_dim}, end_dim={self.end_dim} for "
                             f"an input of shape {shape}; expected axes in [{-n}, {n})")
        if start > end:
            raise ValueError(f"Flatten: start_dim={self.start_dim} comes after end_dim="
                             f"{self.end_dim} for an input of shape {shape}")
        if not shape:
            return F.reshape(x, (1,))
        merged = int(np.prod(shape[start:end + 1], dtype=np.int64))
        return F.reshape(x, shape[:start] + (merged,) + shape[end + 1:])

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """Inverted dropout, as ``torch.nn.Dropout``: in training, y = x · m / (1 - p) with
    m_i ~ Bernoulli(1 - p) drawn from ``rng`` for every call (y = 0 if p = 1); in eval
    (``module.eval()``), y = x. Any shape to the same shape; the gradient is g · m / (1 - p).

    ``rng`` is a ``np.random.Generator`` or a seed: the same seed gives the same masks.
    """

    def __init__(self, p: float = 0.5, *, rng: np.random.Generator | int | None = None) -> None:
        super().__init__()
        self.p = checks.real("p", p, low=0.0, high=1.0, owner="Dropout")
        self.rng = generator(rng, "Dropout")

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        x = real_input("Dropout", x, "(...)")
        dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
        keep = self.rng.random(x.shape) >= self.p
        # where, not mask * (1 / (1 - p)): that factor overflows float16 past p ~ 0.99998,
        # and 0 * inf would make every dropped element NaN instead of 0
        with np.errstate(over="ignore"):
            factor = dtype.type(0.0) if self.p == 1.0 else dtype.type(1.0 / (1.0 - self.p))
        scale = np.where(keep, factor, dtype.type(0.0))
        return F.mul(x, scale)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Identity(Module):
    """y = x: the input itself, as ``torch.nn.Identity`` (a placeholder where a layer is
    optional, e.g. a head or a norm switched off). Any arguments are accepted and ignored,
    as torch's are."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, x: Any) -> Any:
        return x


# ---- the other activations of F, one module each, with torch.nn's names and arguments --------
class _Elementwise(Module):
    """``F.<op>(x, **arguments)``: the arguments checked once, here, by calling the op on a
    0-d input (the op's own checks and messages), and shown by ``repr``."""

    op = ""

    def __init__(self, **arguments: float) -> None:
        super().__init__()
        self.arguments = arguments
        getattr(F, self.op)(np.zeros(()), **arguments)  # a bad argument fails here, named

    def forward(self, x: Tensor) -> Tensor:
        return getattr(F, self.op)(x, **self.arguments)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.arguments.items())


class Mish(_Elementwise):
    """y = x · tanh(softplus(x)) (``F.mish``)."""

    op = "mish"


class Hardswish(_Elementwise):
    """y = x · min(max(x + 3, 0), 6) / 6 (``F.hardswish``)."""

    op = "hardswish"


class Hardsigmoid(_Elementwise):
    """y = min(max(x / 6 + 1/2, 0), 1) (``F.hardsigmoid``)."""

    op = "hardsigmoid"


class Softsign(_Elementwise):
    """y = x / (1 + |x|) (``F.softsign``)."""

    op = "softsign"


class SELU(_Elementwise):
    """y = λ · elu(x, α) with torch's constants (``F.selu``)."""

    op = "selu"


class LogSigmoid(_Elementwise):
    """y = log σ(x) (``F.log_sigmoid``)."""

    op = "log_sigmoid"


class CELU(_Elementwise):
    """y = x where x > 0, else α (e^(x/α) - 1) (``F.celu``)."""

    op = "celu"

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__(alpha=alpha)


class LeakyReLU(_Elementwise):
    """y = x where x > 0, else negative_slope · x (``F.leaky_relu``)."""

    op = "leaky_relu"

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__(negative_slope=negative_slope)


class ELU(_Elementwise):
    """y = x where x > 0, else α (e^x - 1) (``F.elu``)."""

    op = "elu"

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__(alpha=alpha)


class Softplus(_Elementwise):
    """y = log(1 + e^(βx)) / β, x where βx > threshold (``F.softplus``)."""

    op = "softplus"

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__(beta=beta, threshold=threshold)


class Hardtanh(_Elementwise):
    """y = min(max(x, min_val), max_val) (``F.hardtanh``)."""

    op = "hardtanh"

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0) -> None:
        super().__init__(min_val=min_val, max_val=max_val)


class LogSoftmax(Module):
    """y = x - logsumexp(x) along axis ``dim`` (``F.log_softmax``); shape kept."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = checks.integer("dim", dim, owner="LogSoftmax")

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, axis=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Module):
    """y = softmax(-x) along axis ``dim`` (``F.softmin``); shape kept."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = checks.integer("dim", dim, owner="Softmin")

    def forward(self, x: Tensor) -> Tensor:
        return F.softmin(x, axis=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
