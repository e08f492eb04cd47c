"""``minigrad.functional`` (imported as ``F``): every differentiable op as a function.

``F.softmax(x, axis=-1)``, ``F.layer_norm(x, w, b)``, ``F.cross_entropy(logits, y)``, ...
The same functions back the Tensor methods and operators.
"""
from .ops import *  # noqa: F403
from .ops import PUBLIC_OPS

__all__ = list(PUBLIC_OPS)
