"""``Tensor``: an ``np.ndarray`` with a gradient and a place in the recorded graph."""
from __future__ import annotations

import copy
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np

from . import graph
from .arrays import as_data, check_dtype
from .checks import boolean
from .graph import Node

if TYPE_CHECKING:
    # The operators and NumPy-named methods are attached to Tensor by minigrad/methods.py,
    # which sits above the ops and so cannot be imported here; to a type checker they are
    # Tensor's base class, so that ``t + u`` and ``t.sum()`` are checked.
    from .methods import TensorMethods as _Methods
else:
    _Methods = object

__all__ = ["Tensor", "tensor", "as_tensor"]


class Tensor(_Methods):
    """An n-dimensional array that records the ops applied to it, for reverse-mode autodiff.

    ``Tensor(data)`` wraps ``np.asarray(data)`` without copying it (as ``np.asarray`` and
    ``torch.from_numpy`` do) and keeps its dtype; ops never write into ``data``. Only
    floating tensors may ``requires_grad``. After ``backward()``, ``.grad`` holds an
    ``np.ndarray`` of the same shape and dtype as ``data``; gradients *accumulate* there
    across uses and across calls until cleared (``t.grad = None`` or ``Module.zero_grad()``).

    In-place writes and the version counter, as in PyTorch: ``version`` counts the in-place
    writes made through the Tensor API (``t[idx] = v``, ``t += v`` and the other in-place
    operators, an optimizer's ``step()``); a view made by an op (``reshape``, ``t[:2]``,
    ``detach()``, ``Tensor(t)``) shares the counter of the tensor it views. Every recorded
    op notes the versions of its Tensor inputs and of its output, and ``backward()``
    refuses, naming the op and the input, if one changed since. Writes into ``t.data``
    itself (``t.data[0] = 1``, NumPy functions with ``out=t.data``) bypass the counter, as
    in PyTorch; call
    ``bump_version()`` after such a write to have it checked. Two Tensors made separately
    from one ndarray (``Tensor(arr)`` twice) do not share a counter, as two
    ``torch.from_numpy(arr)`` calls do not: a write through one is not seen by a graph that
    recorded the other.

    ``copy.deepcopy(t)`` and ``pickle`` work on leaves only, as in PyTorch: a deep copy has its
    own ``data``, ``grad`` and counter; a pickle keeps ``data`` and ``requires_grad`` (not
    ``grad``). For the result of an op both refuse (copy or pickle ``t.detach()``);
    ``copy.copy(t)`` is a second handle on the same data, graph node and counter.

    ==========================================  ==========================================
    ``t[idx] = v``, ``t += v`` (also ``-= *= /= **= @=``) on ...
    ==========================================  ==========================================
    a tensor, when nothing requires grad        writes into ``t.data``, bumps the version
    anything, inside ``no_grad()``              writes into ``t.data``, bumps the version
    a leaf that requires grad                   RuntimeError (as PyTorch): write it under
                                                ``no_grad()``
    a non-leaf, or ``v`` requires grad          ``t[idx] = v``: RuntimeError (build the
                                                tensor out of place: ``F.where``,
                                                ``F.concatenate``); ``t += v``: recorded
                                                out of place as ``t = t + v`` (a new
                                                tensor; the old one is left as it was)
    ==========================================  ==========================================

    Its arithmetic and comparison operators, indexing, in-place operators and NumPy-named
    methods (``t + u``, ``t[i]``, ``t += u``, ``t.sum()``) are ops, attached to the class by
    ``minigrad/methods.py``; NumPy's protocols (``np.exp(t)``) by ``minigrad/numpy_api.py``.
    Both sit above the ops, which need this class: so the core never imports an op.
    """

    __slots__ = ("data", "grad", "requires_grad", "_node", "_version", "__weakref__")
    data: np.ndarray
    grad: np.ndarray | None
    requires_grad: bool
    _node: Node | None
    _version: list  # [write stamp of the last in-place write, writes], shared with views
    # NumPy's protocols (np.exp(t), np.asarray(t)), attached by minigrad/numpy_api.py
    __array_ufunc__: Callable[..., Any]
    __array_function__: Callable[..., Any]
    __array__: Callable[..., np.ndarray]

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None) -> None:
        original = data if isinstance(data, Tensor) else None
        given = data.data if original is not None else data
        data = as_data(given, dtype, copy=False)
        check_dtype(data, boolean("requires_grad", requires_grad), given)
        self.data = data
        self.grad = None
        self.requires_grad = bool(requires_grad)
        self._node = None
        # one cell, shared with the views ops make of this tensor (and Tensor(t), t's data)
        if original is not None and isinstance(given, np.ndarray) and data is given:
            self._version = original._version
        else:
            self._version = [0, 0]

    @staticmethod
    def _make(data: np.ndarray, node: Node | None = None, version: list | None = None) -> Tensor:
        """Fast constructor for op results: no validation, ``data`` is already an ndarray;
        ``version`` is the cell to share (a view's), None for a new one."""
        t = object.__new__(Tensor)
        t.data = data
        t.grad = None
        t.requires_grad = node is not None
        t._node = node
        # [write stamp of the last in-place write, writes]
        t._version = [0, 0] if version is None else version
        return t

    # ---- array attributes -------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    def __len__(self) -> int:
        return len(self.data)

    @property
    def is_leaf(self) -> bool:
        """True for tensors created by the user (not by a recorded op)."""
        return self._node is None

    @property
    def op(self) -> str | None:
        """Name of the op that produced this tensor, or None for a leaf."""
        return None if self._node is None else self._node.op

    def item(self) -> float | int | bool:
        """The single element as a Python number (holds no reference to the graph)."""
        self._check_one_element("item()")
        return self.data.item()

    def __float__(self) -> float:
        self._check_one_element("float()")
        return float(self.data.item())

    def __int__(self) -> int:
        self._check_one_element("int()")
        return int(self.data.item())

    def _check_one_element(self, what: str) -> None:
        if self.data.size != 1:
            raise ValueError(f"{what}: got a tensor of shape {self.shape} ({self.data.size} "
                             "elements); expected a tensor with exactly one element")

    def __bool__(self) -> bool:
        return bool(self.data)

    def numpy(self) -> np.ndarray:
        """The underlying array (shared, not copied)."""
        return self.data

    def detach(self) -> Tensor:
        """A tensor sharing ``data`` (and so the version counter) that is cut from the graph
        and does not require grad."""
        t = Tensor._make(self.data)
        t._version = self._version
        return t

    # ---- copy and pickle (as PyTorch: only leaves; a graph is never copied or pickled) -----
    def __copy__(self) -> Tensor:
        """A second handle on the same data, grad, graph node and version counter."""
        t = object.__new__(type(self))
        for name in ("data", "grad", "requires_grad", "_node", "_version"):
            setattr(t, name, getattr(self, name))
        return t

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A leaf's copy: its own ``data``, ``grad`` and version counter, same
        ``requires_grad``. A non-leaf refuses: copying it would copy its whole graph,
        leaves included, and a backward through the copy would fill the copies' ``.grad``."""
        if self._node is not None:
            raise RuntimeError(
                f"deepcopy of the result of op '{self._node.op}': only Tensors created "
                "explicitly by the user (graph leaves) support the deepcopy protocol, as in "
                "PyTorch; deepcopy t.detach() for its values"
            )
        t = object.__new__(type(self))  # a Parameter stays a Parameter
        memo[id(self)] = t
        t.data = copy.deepcopy(self.data, memo)
        t.grad = copy.deepcopy(self.grad, memo)
        t.requires_grad = self.requires_grad
        t._node = None
        t._version = [0, 0]
        return t

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple:
        """A leaf pickles as ``Tensor(data, requires_grad)``; ``.grad`` is not kept, as in
        PyTorch. A non-leaf refuses (its graph holds functions that cannot be pickled)."""
        if self._node is not None:
            raise TypeError(
                f"pickle of the result of op '{self._node.op}': a non-leaf Tensor cannot be "
                "pickled (its graph would be lost); pickle t.detach() or t.data instead"
            )
        if type(self) is not Tensor:  # a subclass (Parameter) is rebuilt from its data
            return (type(self), (self.data,))
        return (Tensor, (self.data, self.requires_grad))

    @property
    def version(self) -> int:
        """How many in-place writes the Tensor API made into ``data`` (or a view sharing it)."""
        return self._version[1]

    def bump_version(self) -> None:
        """Count an in-place write made through ``.data``, so that ``backward()`` through an op
        that recorded this tensor before the write refuses instead of using the new values."""
        graph.note_write(self._version)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` on a leaf in place; returns self."""
        if self._node is not None and not requires_grad:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor: use detach()")
        check_dtype(self.data, requires_grad)
        self.requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor during ``backward`` (leaves always keep it)."""
        if self.requires_grad and self._node is not None:
            self._node.retained = weakref.ref(self)

    def zero_grad(self) -> None:
        self.grad = None

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", prefix="Tensor(", threshold=20)
        extra = f"shape={self.shape}, dtype={self.dtype}"
        if self._node is not None:
            extra += f", op={self._node.op}"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"Tensor({body}, {extra})"

    __hash__ = object.__hash__

    # ---- autodiff ---------------------------------------------------------------------
    def backward(self, grad: Any = None, retain_graph: bool = False) -> None:
        """Accumulate the gradient of this tensor into ``.grad`` of every leaf it depends on.

        ``grad`` is the cotangent (same shape as this tensor); it may be omitted only for a
        tensor with one element, where it defaults to 1. The graph is released afterwards
        (its saved arrays freed) unless ``retain_graph=True``.

        VJPs keep references to the arrays they need, not copies. So an in-place write made
        through the Tensor API between the forward pass and ``backward`` into an input or
        output of a recorded op (an optimizer ``step()``, ``t[idx] = v``, ``t += v``) makes
        this raise a RuntimeError naming the op and the input, before any ``.grad`` changes.
        A write straight into ``t.data`` is not tracked (as in PyTorch) and changes the
        gradients that come out, unless followed by ``t.bump_version()``.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward() on a tensor that does not require grad: no input of the ops that "
                "made it has requires_grad=True (or it was computed under no_grad())"
            )
        if grad is None:
            if self.data.size != 1:
                raise _GradRequired(
                    f"backward() without grad on a tensor of shape {self.shape}: an implicit "
                    "gradient exists only for one-element outputs; pass grad= of that shape"
                )
            g = np.empty_like(self.data)  # np.ones_like, in two C calls
            g.fill(1)
        else:
            g = np.asarray(grad.data if isinstance(grad, Tensor) else grad)
            if g.dtype.kind not in "biuf":
                raise TypeError(f"backward(grad): got dtype {g.dtype}; expected real numbers "
                                f"(the tensor is {self.dtype})")
            if g.shape != self.shape:
                raise ValueError(
                    f"backward(grad): got shape {g.shape}; expected the tensor's shape {self.shape}"
                )
            if g.dtype != self.dtype:
                g = g.astype(self.dtype)
        graph.backward(self, g, retain_graph=retain_graph)


class _GradRequired(RuntimeError, ValueError):
    """backward() of a many-element tensor without ``grad``: a missing argument (ValueError),
    and a RuntimeError as in PyTorch."""


def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> Tensor:
    """A new Tensor holding a *copy* of ``data`` (as ``torch.tensor``)."""
    if isinstance(data, Tensor):
        data = data.data
    array = as_data(data, dtype, copy=True)
    check_dtype(array, boolean("requires_grad", requires_grad), data)
    return Tensor(array, requires_grad=requires_grad)


def as_tensor(x: Any) -> Tensor:
    """``x`` itself if it is a Tensor, else a Tensor wrapping ``np.asarray(x)`` (no copy)."""
    return x if isinstance(x, Tensor) else Tensor(x)
