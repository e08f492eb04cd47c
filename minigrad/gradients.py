"""What a VJP returns, made into its input's gradient: broadcasting undone (``unbroadcast``, the
one place for every op), anything but a plain array of the input's shape and dtype checked and
converted (``conform``), and whether the result may become a gradient buffer as it is
(``unshared``)."""
from __future__ import annotations

import sys

import numpy as np

__all__ = ["unbroadcast", "conform", "unshared"]


def unbroadcast(g: np.ndarray | np.generic, shape: tuple) -> np.ndarray | np.generic:
    """Sum ``g`` over the axes that broadcasting added or stretched, giving an array of ``shape``.

    If ``x`` of shape ``shape`` was broadcast to ``g.shape`` in the forward pass, every copy of
    an element received its own gradient, and the element's gradient is their sum:
    leading axes that broadcasting prepended are summed away, and axes where ``shape`` has 1
    are summed with ``keepdims``.
    """
    lead = g.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"unbroadcast: shape {g.shape} has fewer axes than {shape}")
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1
    )
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    if g.shape[lead:] != shape:  # not a broadcast of ``shape``: never reshape silently
        raise ValueError(f"unbroadcast: shape {g.shape} is not a broadcast of {shape}")
    return g.reshape(shape)


def _references_seen_by_unshared(a: object) -> int:
    return sys.getrefcount(a)  # the same call depth as in ``unshared``


def _calibrate() -> int:
    a = np.empty(0)  # held by this one local name, as a VJP's result is in ``backward``
    return _references_seen_by_unshared(a)


_UNIQUE = _calibrate()


def unshared(a: object) -> bool:
    """True when ``a`` is an array no one else can see: it owns its memory (not a view), is
    writeable, and the caller's name for it is its only reference (a VJP that returns its
    cotangent or a saved array, or keeps its result, leaves more). Such a VJP result becomes
    a gradient buffer as it is, so gradients accumulate into it in place and a leaf adopts
    it as its ``.grad`` without a copy. (NumPy elides temporaries by the same test.) The
    count a lone array shows is measured at import through the same calls, since it differs
    between Python versions."""
    return (_ADOPT and type(a) is np.ndarray and a.base is None
            and sys.getrefcount(a) <= _UNIQUE and a.flags.writeable)


def _adoption_works() -> bool:
    """Import-time self-test of the count: a lone array passes, a shared one does not."""
    lone = np.empty(1)
    shared = np.empty(1)
    keep = [shared]  # noqa: F841 - the second reference
    return unshared(lone) and not unshared(shared)


_ADOPT = True
_ADOPT = _adoption_works()


def _bad_vjp_result(op: str, i: int, gp: object) -> TypeError:
    """The error for a VJP that returned something other than a real array, naming the op
    and the input."""
    got = f"an array of dtype {gp.dtype}" if isinstance(gp, (np.ndarray, np.generic)) else \
        "None" if gp is None else f"a {type(gp).__name__}"
    return TypeError(
        f"backward through op '{op}': its VJP for input {i} returned {got}; expected "
        "an np.ndarray of real numbers (a gradient with the input's shape, or one that "
        "broadcasts from it)"
    )


def conform(gp: object, shape: tuple, dtype: np.dtype, op: str, i: int) -> np.ndarray:
    """A VJP result that is not a plain array of its input's shape and dtype: checked, then
    summed back over broadcast axes and cast to ``dtype``. A list, None, a Python number, a
    Tensor or a complex or object array is a TypeError; a shape that is not a broadcast of
    the input's, a ValueError (both naming the op ``op`` and input ``i``). The result is a plain
    ndarray: a NumPy scalar (what arithmetic on 0-d arrays returns) or an ndarray subclass
    becomes a new one."""
    if not isinstance(gp, (np.ndarray, np.generic)):
        raise _bad_vjp_result(op, i, gp)
    cast = gp.dtype != dtype
    if cast and gp.dtype.kind not in "biuf":  # complex, object, ...
        raise _bad_vjp_result(op, i, gp)
    if gp.shape != shape:
        gp = _unbroadcast_checked(gp, shape, op)
        cast = gp.dtype != dtype
    if cast:
        gp = gp.astype(dtype)
    return gp if type(gp) is np.ndarray else np.array(gp)


def _unbroadcast_checked(g: np.ndarray | np.generic, shape: tuple,
                         op: str) -> np.ndarray | np.generic:
    """``unbroadcast``, with an error naming the op when its VJP returned a wrong shape."""
    try:
        return unbroadcast(g, shape)
    except ValueError:
        raise ValueError(
            f"backward through op '{op}': its VJP returned a gradient of shape {g.shape}; "
            f"expected the input's shape {shape}, or a shape that {shape} broadcasts to (such "
            "as the op's output shape, when the forward broadcast the input), which the engine "
            "sums back"
        ) from None
