"""Look at a recorded graph: which ops ran, what each saved for its backward pass, and the
formula of each (the first line of its docstring), so that a printed graph reads as the chain
of formulas its backward applies."""
from __future__ import annotations

import functools
import inspect
import types
from dataclasses import dataclass, field

import numpy as np

from .. import ops as builtin_ops
from ..graph import Node, toposort
from ..opcalls import ops_named
from ..tensor import Tensor

__all__ = ["graph_summary", "GraphSummary", "formula"]


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


def _first_line(fn) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.strip().splitlines()[0].strip() if doc.strip() else ""


def formula(node: Node) -> str:
    """The first line of the docstring of the op that recorded ``node`` (its formula), found
    by the node's name among the ops declared with ``mg.op`` (``opcalls.ops_named``), else
    among the built-in ops (those that call ``record`` themselves); "" when none is found.

    The node keeps only the name (nothing is added to every node for this). When several live
    ops share it with different first lines, the one whose VJPs were written inside its
    forward (their code's qualified name starts with the forward's) is taken; failing that
    the answer says the name is ambiguous."""
    candidates = ops_named(node.op)
    if not candidates:
        fn = getattr(builtin_ops, node.op, None)
        return _first_line(fn) if callable(fn) else ""
    lines = {_first_line(c) for c in candidates}
    if len(lines) == 1:
        return lines.pop()
    vjps = [vjp for _, vjp in node.edges or () if vjp is not None]
    if node.joint is not None:
        vjps.append(node.joint.gradients)
    written = [(v.__code__.co_filename, v.__qualname__) for v in vjps
               if hasattr(v, "__code__") and hasattr(v, "__qualname__")]

    def wrote(c) -> bool:  # were these VJPs written inside op c's forward?
        home = getattr(c.forward, "__code__", None)
        return home is not None and any(
            filename == home.co_filename
            and qualname.startswith(c.forward.__qualname__ + ".<locals>")
            for filename, qualname in written)

    mine = [c for c in candidates if wrote(c)]
    if len({_first_line(c) for c in mine}) == 1:
        return _first_line(mine[0])
    return f"(one of {len(candidates)} ops named {node.op})"


@dataclass
class GraphSummary:
    """One row per recorded op, inputs before results: (op, shape, dtype, bytes saved); an
    op with several outputs has one row, its shape and dtype the tuples of its outputs'.
    ``formulas[k]`` is row k's op's formula (:func:`formula`), printed beside its bytes."""

    rows: list
    total_saved_bytes: int
    formulas: list = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{'#':>4}  {'op':<14} {'output shape':<20} {'dtype':<8} "
                 f"{'saved for backward':>18}  formula"]
        formulas = self.formulas or [""] * len(self.rows)
        rows = zip(self.rows, formulas, strict=True)
        for k, ((name, shape, dtype, nbytes), text) in enumerate(rows):
            if type(dtype) is tuple:  # an op with several outputs
                shape = ", ".join(map(str, shape))
                dtype = ", ".join(map(str, dtype))
            lines.append(f"{k:>4}  {name:<14} {shape!s:<20} {dtype!s:<8} "
                         f"{_human(nbytes):>18}  {text}".rstrip())
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
    output's shape and dtype, the bytes its VJPs keep alive (arrays captured by the
    closures; an array shared by several ops counts once in the total) and its formula.
    After ``backward()`` without ``retain_graph`` the graph is released: only ``t``'s own op
    is left, saving 0 bytes.
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"graph_summary: got {type(t).__name__}; expected a Tensor")
    if t._node is None:
        return GraphSummary([], 0)
    rows, everything, formulas = [], {}, []
    for node in toposort(t._node, released_ok=True):
        if node.index is not None:  # one output of a multi-output op: listed with the op
            continue
        saved = _saved_arrays(node)
        everything.update(saved)
        rows.append((node.op, node.shape, node.dtype, sum(a.nbytes for a in saved.values())))
        formulas.append(formula(node))
    return GraphSummary(rows, sum(a.nbytes for a in everything.values()), formulas)
