"""The tape: grad mode, graph nodes, and the iterative reverse-mode sweep.

A result of a differentiable op carries a :class:`Node`: the op's name and its *edges*, one
``(parent, vjp)`` pair per parent that requires grad. ``vjp(g)`` maps the gradient of the
output to the gradient of that parent, possibly in the output's (broadcast) shape;
:func:`unbroadcast` sums it back to the parent's shape. This is the only place broadcasting
is undone.
"""
from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .tensor import Tensor

__all__ = ["no_grad", "enable_grad", "is_grad_enabled", "Node", "backward", "unbroadcast"]


class _GradMode(threading.local):
    enabled = True


_mode = _GradMode()


def is_grad_enabled() -> bool:
    """True when ops record the graph (the default), False inside ``no_grad``."""
    return _mode.enabled


class _SetGradMode:
    """Context manager and decorator that sets grad mode and restores the previous one."""

    __slots__ = ("_enabled", "_prev")

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(_mode.enabled)
        _mode.enabled = self._enabled

    def __exit__(self, *exc: object) -> None:
        _mode.enabled = self._prev.pop()

    def __call__(self, fn: Callable) -> Callable:
        enabled = self._enabled

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _SetGradMode(enabled):
                return fn(*args, **kwargs)

        return wrapper


def no_grad(fn: Callable | None = None):
    """``with no_grad():``, ``@no_grad()`` or ``@no_grad``: ops inside record nothing."""
    return _SetGradMode(False) if fn is None else _SetGradMode(False)(fn)


def enable_grad(fn: Callable | None = None):
    """Re-enable recording inside a ``no_grad`` region (same three forms as ``no_grad``)."""
    return _SetGradMode(True) if fn is None else _SetGradMode(True)(fn)


class Node:
    """One recorded op: its name and the edges ``((parent, vjp), ...)`` to parents needing grad.

    ``edges`` is set to None when the graph is released after ``backward``; the VJP closures,
    and the arrays they saved, are freed with it.
    """

    __slots__ = ("op", "edges")

    def __init__(self, op: str, edges: tuple) -> None:
        self.op = op
        self.edges = edges


def unbroadcast(g: np.ndarray, shape: tuple) -> np.ndarray:
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


def _toposort(root: Tensor) -> list:
    """Tensors with a node reachable from ``root``, parents before children (iterative DFS)."""
    order = []
    seen = set()
    stack = [(root, False)]
    while stack:
        t, expanded = stack.pop()
        if expanded:
            order.append(t)
            continue
        if id(t) in seen:
            continue
        seen.add(id(t))
        edges = t._node.edges
        if edges is None:
            raise RuntimeError(
                f"backward through the graph a second time: the graph of op '{t._node.op}' was "
                "released by the first backward(); pass retain_graph=True to the first call "
                "to backward through it again"
            )
        stack.append((t, True))
        for parent, _ in edges:
            if parent._node is not None and id(parent) not in seen:
                stack.append((parent, False))
    return order


def backward(root: Tensor, grad: np.ndarray, retain_graph: bool = False) -> None:
    """Accumulate d(root)/d(leaf), contracted with ``grad``, into every reachable leaf's ``.grad``.

    Walks the graph once in reverse topological order. A tensor used several times receives
    the sum of its gradients. Intermediate gradients are freed as soon as they are consumed,
    and, unless ``retain_graph``, so is every node (with the arrays its VJPs saved).
    """
    if root._node is None:  # a leaf: d(root)/d(root) is the identity
        _accumulate_leaf(root, grad, owned=False)
        return
    order = _toposort(root)
    grads = {id(root): grad}
    owned = set()  # ids whose buffer in ``grads`` this sweep allocated, so may update in place
    for t in reversed(order):
        g = grads.pop(id(t))
        if t._retain:
            _accumulate_leaf(t, g, owned=id(t) in owned)
        node = t._node
        for parent, vjp in node.edges:
            gp = vjp(g)
            fresh = False
            if gp.shape != parent.data.shape:
                gp = _unbroadcast_checked(gp, parent.data.shape, node.op)
                fresh = True
            if gp.dtype != parent.data.dtype:
                gp = gp.astype(parent.data.dtype)
                fresh = True
            if parent._node is None:
                _accumulate_leaf(parent, gp, owned=fresh)
                continue
            key = id(parent)
            prev = grads.get(key)
            if prev is None:
                grads[key] = gp
                if fresh:
                    owned.add(key)
            elif key in owned:
                prev += gp
                grads[key] = prev  # a NumPy scalar (the result of 0-d ops) is rebound by +=
            else:  # prev may alias another tensor's gradient: never write into it
                grads[key] = prev + gp
                owned.add(key)
        if not retain_graph:
            node.edges = None
    # Nodes only reachable through released parents keep nothing: ``order`` covers them all.


def _unbroadcast_checked(g: np.ndarray, shape: tuple, op: str) -> np.ndarray:
    """``unbroadcast``, with an error naming the op when its VJP returned a wrong shape."""
    try:
        return unbroadcast(g, shape)
    except ValueError:
        raise ValueError(
            f"backward through op '{op}': its VJP returned a gradient of shape {g.shape}; "
            f"expected the input's shape {shape} (or a shape that broadcasts to it)"
        ) from None


def _accumulate_leaf(t: Tensor, g: np.ndarray, owned: bool) -> None:
    if type(g) is not np.ndarray:
        g = np.asarray(g)
    if t.grad is None:
        t.grad = g if owned else g.copy()
    else:
        t.grad += g
