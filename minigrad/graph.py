"""The tape: graph nodes and the iterative reverse-mode sweep (grad mode: ``gradmode.py``).

A result of a differentiable op carries a :class:`Node`: the op's name, its output's shape
and dtype, and its *edges*, one ``(parent, vjp)`` pair per input that requires grad, where
the parent is that input's Node, or the input Tensor itself for a leaf. The graph holds
nodes, not intermediate tensors: an intermediate result's array lives only as long as the
user keeps it or a VJP saved it. ``vjp(g)`` maps the gradient of the output to the gradient
of that input, possibly in the output's (broadcast) shape; ``gradients.unbroadcast`` sums it
back to the input's shape, the one place where the engine undoes broadcasting for every op.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .gradients import conform, unshared

if TYPE_CHECKING:  # pragma: no cover
    from .tensor import Tensor

__all__ = ["Node", "ConstantInput", "Joint", "backward", "backward_many", "note_write",
           "toposort", "input_position"]


# Every in-place write through the Tensor API draws the next stamp from this counter and
# stores it in the written tensor's version cell ``[stamp of its last write, writes]``; a
# node remembers the stamp current when it was recorded. So an input was written after
# the op ran iff its cell's stamp is greater, and when no write happened since (the stamp
# is unchanged), backward skips the check of the node's inputs entirely.
_stamp = [0]


def note_write(cell: list) -> None:
    """Count an in-place write into the tensor (and views) owning version ``cell``."""
    _stamp[0] += 1
    cell[0] = _stamp[0]
    cell[1] += 1


class ConstantInput(NamedTuple):
    """A Tensor input of a recorded op without an edge (it does not require grad, or the op
    has no VJP for it): where it was, and what the check against in-place writes needs."""

    position: int  # among the op's inputs
    cell: list  # its version cell
    shape: tuple
    dtype: np.dtype


class Joint(NamedTuple):
    """The VJPs of an op's inputs as one function (a ``JointVJP``): ``gradients(g, needed)``
    returns one gradient per positional parameter; ``needed[i]`` tells whether input i's
    gradient reaches a leaf."""

    gradients: Callable
    needed: tuple


class Node:
    """One recorded op: its name, its output's ``shape`` and ``dtype``, and the edges
    ``((parent, vjp), ...)`` to the inputs needing grad, in input order. ``parent`` is the
    input's Node, or the input Tensor itself for a leaf; ``vjp`` maps the output's gradient
    to that input's, or is None where the node has no function per edge (``joint``, and the
    node of one output of a multi-output op). ``positions`` is None when edge k is input k,
    else the input position of each edge.

    For the check against in-place writes: ``cell`` is the version cell of the output (see
    ``Tensor``), ``stamp`` the write stamp when the op ran (see ``note_write``); an edge's
    input is checked through its parent's cell, and ``constants`` lists the Tensor inputs
    without an edge (:class:`ConstantInput`).

    An op with several outputs has one Node whose ``specs`` is ``((shape, dtype), ...)``, one
    per output (its ``shape``, ``dtype`` and ``cell`` are tuples too, one item per output);
    output k's own Node has ``index = k`` and the one edge ``(that node, None)``.

    An op whose VJPs are one ``JointVJP`` has ``joint``, a :class:`Joint`: edge k's gradient
    is item ``positions[k]`` (or k) of ``joint.gradients(g, joint.needed)``.

    ``edges`` (and ``joint``) are set to None when the graph is released after ``backward``;
    the VJP closures, and the arrays they saved, are freed with them. ``retained`` is a weak
    reference to the tensor whose ``.grad`` backward should fill (``Tensor.retain_grad``), or
    None.
    """

    __slots__ = ("op", "edges", "shape", "dtype", "retained", "cell", "stamp", "positions",
                 "constants", "specs", "index", "joint")
    # An np.dtype and a version cell (a list), or for the node of a multi-output op a tuple
    # of each, one per output; ``record`` sets them right after making the node.
    dtype: Any
    cell: Any

    def __init__(self, op: str, edges: tuple, shape: tuple, dtype: np.dtype | tuple | None,
                 cell: list | tuple | None = None, positions: tuple | None = None,
                 constants: tuple = (), specs: tuple | None = None,
                 index: int | None = None, joint: Joint | None = None) -> None:
        self.op = op
        self.edges = edges
        self.shape = shape
        self.dtype = dtype
        self.retained: weakref.ref | None = None
        self.cell = cell
        self.stamp = _stamp[0]
        self.positions = positions
        self.constants = constants
        self.specs = specs
        self.index = index
        self.joint = joint


def toposort(roots: Node | Sequence[Node], released_ok: bool = False) -> list:
    """Nodes reachable from ``roots``, inputs before results, the first input's branch first
    (iterative DFS, no recursion limit). A node already released by ``backward()``, or one
    whose inputs were written in place since it was recorded, is an error; with
    ``released_ok`` (for ``graph_summary``) neither is checked, and a released node is
    listed without its inputs."""
    order = []
    seen = set()
    stack = [(roots, False)] if isinstance(roots, Node) else [(r, False) for r in reversed(roots)]
    stamp = _stamp[0]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in seen:  # nodes hash by identity
            continue
        seen.add(node)
        edges = node.edges
        if not released_ok:
            if edges is None:
                raise RuntimeError(
                    f"backward through the graph a second time: the graph of op '{node.op}' "
                    "was released by the first backward(); pass retain_graph=True to the first "
                    "call to backward through it again"
                )
            if node.stamp != stamp:  # something was written in place since the op ran
                _check_versions(node)
        stack.append((node, True))
        for parent, _ in reversed(edges or ()):
            if type(parent) is Node and parent not in seen:
                stack.append((parent, False))
    return order


def _check_versions(node: Node) -> None:
    """Raise if an input or output of ``node`` was written in place after it was recorded."""
    if node.index is not None:  # one output of a multi-output op: its op's node checks it
        return
    stamp = node.stamp
    specs = node.specs
    cells = (node.cell,) if specs is None else node.cell
    for k, cell in enumerate(cells):
        if cell is not None and cell[0] > stamp:
            shape, dtype = (node.shape, node.dtype) if specs is None else specs[k]
            raise _modified(node, "its output" if specs is None else f"its output {k}",
                            shape, dtype, cell)
    for k, (parent, _) in enumerate(node.edges):
        cell = parent.cell if type(parent) is Node else parent._version
        if cell[0] > stamp:
            raise _modified(node, f"input {input_position(node, k)}", *_shape_of(parent), cell)
    for constant in node.constants:
        if constant.cell[0] > stamp:
            raise _modified(node, f"input {constant.position}", constant.shape, constant.dtype,
                            constant.cell)


def input_position(node: Node, edge: int) -> int:
    """The position among ``node``'s op's inputs of the input of edge ``edge``."""
    return edge if node.positions is None else node.positions[edge]


def _shape_of(parent: Node | Tensor) -> tuple[tuple, Any]:
    return (parent.shape, parent.dtype) if isinstance(parent, Node) else \
        (parent.data.shape, parent.data.dtype)


def _modified(node: Node, what: str, shape: tuple, dtype: Any, cell: list) -> RuntimeError:
    return RuntimeError(
        f"backward through op '{node.op}': {what} (shape {shape}, {dtype}) was modified in "
        f"place after the op recorded it (its version is now {cell[1]}): an optimizer.step(), "
        "t[idx] = v or t += v between forward and backward? Run the forward pass again after "
        "changing the data (writes through .data are not tracked)"
    )


def backward(root: Tensor, grad: np.ndarray, retain_graph: bool = False,
             leaf_grads: dict | None = None) -> None:
    """Accumulate d(root)/d(leaf), contracted with ``grad``, into every reachable leaf's ``.grad``.

    Walks the graph once in reverse topological order. A node used several times receives
    the sum of its gradients; the node of an op with several outputs gathers one cotangent
    per output (zeros for an output that did not reach ``root``) and calls each VJP once
    with the tuple. Each intermediate gradient is dropped once its node has passed it on,
    and, unless ``retain_graph``, each node's VJPs (with the arrays they saved) are
    released right after they run.

    Before any gradient is computed, every node is checked against in-place writes: if a
    Tensor input or output of a recorded op was written through the Tensor API since the
    op ran (its version moved), this raises a RuntimeError naming the op and the input,
    and no ``.grad`` changes. Writes straight into ``.data`` are not seen.

    ``leaf_grads``: a dict that receives the leaves' gradients (leaf -> an array of its own)
    instead of their ``.grad``, so that threads sharing the leaves (``minigrad.data_parallel``'s
    shards) can each run a sweep and the sums can be taken in a fixed order afterwards.
    """
    if root._node is None:  # a leaf: d(root)/d(root) is the identity
        if leaf_grads is None:
            _accumulate_leaf(root, grad, owned=False)
        else:
            leaf_grads[root] = np.array(grad, dtype=root.data.dtype)
        return
    _sweep(toposort(root._node), {root._node: grad}, retain_graph, leaf_grads)


def backward_many(roots: Sequence[Tensor], grads: Sequence[np.ndarray],
                  retain_graph: bool = False) -> None:
    """``backward`` of several tensors at once, as of Σ_k <roots[k], grads[k]>: one sweep,
    each node's VJPs called once (``torch.autograd.backward`` with several tensors).
    ``grads[k]`` has the shape and dtype of ``roots[k]``; leaf roots get it added to ``.grad``."""
    nodes: list[Node] = []
    start: dict[Node, np.ndarray] = {}
    for root, grad in zip(roots, grads, strict=True):
        if root._node is None:
            continue
        key = root._node
        if key in start:
            start[key] = start[key] + grad
        else:
            nodes.append(root._node)
            start[key] = grad
    order = toposort(nodes) if nodes else []
    for root, grad in zip(roots, grads, strict=True):
        if root._node is None:  # a leaf: d(root)/d(root) is the identity
            _accumulate_leaf(root, grad, owned=False)
    _sweep(order, start, retain_graph)


def _sweep(order: list, grads: dict, retain_graph: bool, leaf_grads: dict | None = None) -> None:
    """Run ``order``'s VJPs, results first; ``grads`` maps a node to its gradient so far;
    leaves' gradients go to their ``.grad``, or to ``leaf_grads`` when one is given."""
    owned = set()  # nodes whose buffer in ``grads`` this sweep allocated, so may update in place
    for node in reversed(order):
        g = grads.pop(node)
        if node.retained is not None:
            t = node.retained()
            if t is not None:
                _accumulate_leaf(t, g, owned=False)
        index = node.index
        if index is not None:  # output ``index`` of a multi-output op: hand g to its node
            multi = node.edges[0][0]
            slots = grads.get(multi)
            if slots is None:
                slots = grads[multi] = [None] * len(multi.specs)
            slots[index] = g  # every node runs once, so each slot is filled once
            if not retain_graph:
                node.edges = None
            continue
        specs = node.specs
        if specs is not None:
            g = tuple(np.zeros(shape, dtype) if gk is None else gk
                      for gk, (shape, dtype) in zip(g, specs, strict=True))
        joint = node.joint
        if joint is not None:
            results = _joint_results(node, joint, g)
            positions = node.positions
        for k, (parent, vjp) in enumerate(node.edges):
            if joint is None:
                gp = vjp(g)
            else:  # (the list lets go of it: the array may become a gradient buffer)
                i = k if positions is None else positions[k]
                gp, results[i] = results[i], None
            leaf = type(parent) is not Node
            if leaf:
                shape, dtype = parent.data.shape, parent.data.dtype
            else:
                shape, dtype = parent.shape, parent.dtype
            # The common case, a plain array of the input's shape and dtype (builtin dtypes
            # are singletons), needs none of conform's checks and conversions.
            if type(gp) is np.ndarray and gp.dtype is dtype and gp.shape == shape:
                made = False
            else:
                conformed = conform(gp, shape, dtype, node.op, input_position(node, k))
                made = conformed is not gp  # a sum, cast or copy made here: ours alone
                gp = conformed
            # From here ``gp`` is a plain ndarray. Whether the VJP's own array is unshared
            # (so may be kept and written into) is asked only where it matters, for an
            # input's first gradient; and in this frame, where ``unshared``'s reference
            # count was calibrated (so not inside a call that also holds ``gp``).
            if leaf:
                if leaf_grads is None:
                    if parent.grad is None:
                        parent.grad = gp if made or unshared(gp) else gp.copy()
                    else:
                        parent.grad += gp
                elif parent in leaf_grads:
                    leaf_grads[parent] += gp  # (an array the first visit made ours)
                else:
                    leaf_grads[parent] = gp if made or unshared(gp) else gp.copy()
                continue
            prev = grads.get(parent)
            if prev is None:
                if made or unshared(gp):  # (before the dict holds a second reference)
                    owned.add(parent)
                grads[parent] = gp
            elif parent in owned:
                prev += gp
                grads[parent] = prev  # (an owned gradient is an ndarray: += wrote into it)
            else:  # prev may alias another node's gradient: never write into it
                grads[parent] = prev + gp
                owned.add(parent)
        if not retain_graph:
            node.edges = node.joint = None


def _joint_results(node: Node, joint: Joint, g) -> list:
    """The gradients of a JointVJP node's inputs, as a list (one entry per input)."""
    gradients, needed = joint
    results = gradients(g, needed)
    if not isinstance(results, (list, tuple)) or len(results) < len(needed):
        got = f"{len(results)} gradients" if isinstance(results, (list, tuple)) else \
            f"a {type(results).__name__}"
        raise TypeError(f"backward through op '{node.op}': its JointVJP returned {got}; "
                        f"expected a list or tuple of {len(needed)} or more, one per "
                        "positional parameter")
    return list(results)


def _accumulate_leaf(t: Tensor, g: np.ndarray, owned: bool) -> None:
    if type(g) is not np.ndarray:
        g = np.asarray(g)
    if t.grad is None:
        t.grad = g if owned else g.copy()
    else:
        t.grad += g
