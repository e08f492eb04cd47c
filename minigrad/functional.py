"""``minigrad.functional`` (imported as ``F``): every differentiable op as a function.

``F.softmax(x, axis=-1)``, ``F.layer_norm(x, w, b)``, ``F.cross_entropy(logits, y)``, ...
The same functions back the Tensor methods and operators.
"""
import inspect as _inspect

from . import ops as _ops
from .checks import numpy_keywords as _numpy_keywords
from .ops import *  # noqa: F403
from .ops import PUBLIC_OPS

__all__ = list(PUBLIC_OPS)


def _with_numpy_keywords() -> None:
    """The functions here that take ``axis`` but are not built by ``minigrad.op`` (which checks
    its keywords itself: ``concatenate``, ``stack``, ``split``, ``argmax``, ...) refuse a
    PyTorch ``dim=`` naming ``axis=``, as the ops do."""
    for name in (*_ops.PUBLIC_OPS, *_ops.INDEX_REDUCTIONS, "one_hot"):
        f = getattr(_ops, name)
        if callable(f) and not getattr(f, "is_op", False) and \
                "axis" in _inspect.signature(f).parameters:
            globals()[name] = _numpy_keywords(f, name)


_with_numpy_keywords()
