"""Look at a recorded graph: which ops ran, and what each saved for its backward pass."""
from __future__ import annotations

import functools
import types
from dataclasses import dataclass

import numpy as np

from ..graph import toposort
from ..tensor import Tensor

__all__ = ["graph_summary", "GraphSummary"]


def _saved_arrays(node) -> dict:
    """Arrays the node's VJPs hold, by id of the memory they own (views count their base).

    Follows closure cells and default arguments into helper closures, tuples/lists/dicts (an
    index tuple of arrays), ``functools.partial`` objects and small VJP classes (their
    ``__dict__``), each object once.
    """
    found, seen = {}, set()
    stack = [vjp for _, vjp in node.edges or ()]
    if node.joint is not None:  # (its edges hold no function: the joint one is here)
        stack.append(node.joint.gradients)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            owner = obj
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            found[id(owner)] = owner
        elif isinstance(obj, (tuple, list)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, functools.partial):
            stack.extend((obj.func, obj.args, obj.keywords))
        elif isinstance(obj, types.MethodType):
            stack.append(obj.__self__)
        elif isinstance(obj, types.FunctionType):
            stack.extend(c.cell_contents for c in obj.__closure__ or () if _filled(c))
            stack.extend((obj.__defaults__ or (), obj.__kwdefaults__ or {}))
        elif callable(obj) and isinstance(getattr(obj, "__dict__", None), dict) \
                and not isinstance(obj, type):
            stack.extend(vars(obj).values())  # a VJP written as a small class
    return found


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (reading an empty cell raises ValueError)
    except ValueError:
        return False
    return True


@dataclass
class GraphSummary:
    """One row per recorded op, inputs before results: (op, shape, dtype, bytes saved); an
    op with several outputs has one row, its shape and dtype the tuples of its outputs'."""

    rows: list
    total_saved_bytes: int

    def __str__(self) -> str:
        lines = [f"{'#':>4}  {'op':<14} {'output shape':<20} {'dtype':<8} "
                 f"{'saved for backward':>18}"]
        for k, (name, shape, dtype, nbytes) in enumerate(self.rows):
            if type(dtype) is tuple:  # an op with several outputs
                shape = ", ".join(map(str, shape))
                dtype = ", ".join(map(str, dtype))
            lines.append(f"{k:>4}  {name:<14} {shape!s:<20} {dtype!s:<8} {_human(nbytes):>18}")
        lines.append(f"{len(self.rows)} ops; saved for backward in all (shared arrays once): "
                     f"{_human(self.total_saved_bytes)}")
        return "\n".join(lines)


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def graph_summary(t: Tensor) -> GraphSummary:
    """Summarize the graph that produced ``t``: each op (inputs before results) with its
    output's shape and dtype and the bytes its VJPs keep alive (arrays captured by the
    closures; an array shared by several ops counts once in the total). After ``backward()``
    without ``retain_graph`` the graph is released: only ``t``'s own op is left, saving 0 bytes.
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"graph_summary: got {type(t).__name__}; expected a Tensor")
    if t._node is None:
        return GraphSummary([], 0)
    rows, everything = [], {}
    for node in toposort(t._node, released_ok=True):
        if node.index is not None:  # one output of a multi-output op: listed with the op
            continue
        saved = _saved_arrays(node)
        everything.update(saved)
        rows.append((node.op, node.shape, node.dtype, sum(a.nbytes for a in saved.values())))
    return GraphSummary(rows, sum(a.nbytes for a in everything.values()))
