"""``nn.utils``: gradient clipping, as ``torch.nn.utils.clip_grad_norm_`` / ``clip_grad_value_``.

Both act on the parameters' ``.grad`` arrays after ``backward()`` and before
``optimizer.step()``. Each clipped gradient is a new array assigned to ``p.grad``, in the
gradient's dtype: the old array is not written into, because the engine may share it (the
same convention as the optimizers, which never modify ``p.grad``).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from .. import checks
from ..tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _with_grads(parameters: Tensor | Iterable[Tensor],
                owner: str) -> list[tuple[Tensor, np.ndarray]]:
    """The parameters that have a gradient, each with it."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    try:
        params = list(parameters)
    except TypeError:
        raise TypeError(f"{owner} parameters: got {type(parameters).__name__}; expected a "
                        "Tensor or an iterable of Tensors (e.g. model.parameters())") from None
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{owner} parameters[{i}]: got {type(p).__name__}; expected a Tensor")
    return [(p, p.grad) for p in params if p.grad is not None]


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False) -> float:
    """Scale every gradient by c = min(1, max_norm / (N + 1e-6)), where N is the norm of all
    gradients together (as if concatenated into one vector)::

        N = (Σ_p Σ_i |g_pi|^q)^(1/q)      (q = norm_type > 0),      N = max_{p,i} |g_pi|  (q = inf)

    Returns N as a Python float (computed in float64; 0.0 if no parameter has a gradient).
    Parameters whose ``.grad`` is None are skipped. A NaN or inf N raises a ValueError with
    ``error_if_nonfinite``; otherwise the gradients are scaled by it, as torch does.
    """
    owner = "clip_grad_norm_"
    max_norm = checks.real("max_norm", max_norm, low=0.0, owner=owner)
    if isinstance(norm_type, (int, float, np.floating)) and not isinstance(norm_type, bool) \
            and norm_type == math.inf:
        q = math.inf
    else:
        q = checks.real("norm_type", norm_type, low=0.0, low_open=True, owner=owner)
    error_if_nonfinite = checks.boolean("error_if_nonfinite", error_if_nonfinite, owner=owner)
    params = _with_grads(parameters, owner)
    if not params:
        return 0.0
    norms = [np.linalg.norm(np.asarray(g, np.float64).ravel(), ord=q) for _, g in params]
    total = float(np.max(norms) if q == math.inf else np.linalg.norm(norms, ord=q))
    if error_if_nonfinite and not math.isfinite(total):
        raise ValueError(f"{owner}: the total norm of order {norm_type} of the gradients is "
                         f"{total}; expected a finite norm (or error_if_nonfinite=False)")
    coef = min(max_norm / (total + 1e-6), 1.0)
    if coef < 1.0 or not math.isfinite(total):
        with np.errstate(invalid="ignore"):  # inf * 0 = NaN, as torch gives
            for p, g in params:  # in float64, rounded once: c rounded to float16 first is 0
                # for c < 6e-8, and the clipped gradient 0 where it is a normal number
                p.grad = np.multiply(g, coef, dtype=np.float64).astype(g.dtype, copy=False)
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clip every gradient elementwise into [-clip_value, clip_value]:
    g ← min(max(g, -c), c). Parameters whose ``.grad`` is None are skipped."""
    owner = "clip_grad_value_"
    c = checks.real("clip_value", clip_value, low=0.0, owner=owner)
    for p, g in _with_grads(parameters, owner):
        p.grad = np.clip(g, -c, c).astype(g.dtype, copy=False)
