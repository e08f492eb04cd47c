"""Look at a recorded graph: which ops ran, and what each saved for its backward pass."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tensor import Tensor

__all__ = ["graph_summary", "GraphSummary"]


def _saved_arrays(node) -> dict:
    """Arrays the node's VJP closures hold, by id of the memory they own (views count their base)."""
    found = {}
    for _, vjp in node.edges or ():
        cells = getattr(vjp, "__closure__", None) or ()
        stack = [c.cell_contents for c in cells if _filled(c)]
        while stack:
            obj = stack.pop()
            if isinstance(obj, np.ndarray):
                owner = obj
                while isinstance(owner.base, np.ndarray):
                    owner = owner.base
                found[id(owner)] = owner
            elif callable(obj) and getattr(obj, "__closure__", None):  # helper closures
                stack.extend(c.cell_contents for c in obj.__closure__ if _filled(c))
    return found


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


@dataclass
class GraphSummary:
    """One row per recorded op, in execution order: (op, shape, dtype, bytes saved)."""

    rows: list
    total_saved_bytes: int

    def __str__(self) -> str:
        lines = [f"{'#':>4}  {'op':<14} {'output shape':<20} {'dtype':<8} {'saved for backward':>18}"]
        for k, (name, shape, dtype, nbytes) in enumerate(self.rows):
            lines.append(f"{k:>4}  {name:<14} {str(shape):<20} {str(dtype):<8} {_human(nbytes):>18}")
        lines.append(f"{len(self.rows)} ops; saved for backward in all (shared arrays once): "
                     f"{_human(self.total_saved_bytes)}")
        return "\n".join(lines)


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def graph_summary(t: Tensor) -> GraphSummary:
    """Summarize the graph that produced ``t``: each op with its output's shape and dtype and
    the bytes its VJPs keep alive (arrays captured by the closures; an array shared by several
    ops counts once in the total). Call before ``backward()``, which releases the graph."""
    if not isinstance(t, Tensor):
        raise TypeError(f"graph_summary: got {type(t).__name__}; expected a Tensor")
    from .graph import _toposort

    if t._node is None:
        return GraphSummary([], 0)
    rows, everything = [], {}
    for u in _toposort(t):
        saved = _saved_arrays(u._node)
        everything.update(saved)
        rows.append((u._node.op, u.shape, u.dtype, sum(a.nbytes for a in saved.values())))
    return GraphSummary(rows, sum(a.nbytes for a in everything.values()))
