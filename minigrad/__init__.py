"""minigrad: reverse-mode automatic differentiation over NumPy arrays.

Public face::

    import minigrad as mg
    x = mg.tensor([[1.0, 2.0]], requires_grad=True)
    y = mg.F.softmax(x @ w).sum()
    y.backward()            # x.grad is an np.ndarray

Every op is a NumPy forward with a hand-written VJP beside it (``minigrad.op``);
``gradcheck`` verifies them against finite differences, ``gradcheck_ops`` op by op.

The concerns, bottom up (docs/architecture.md): argument checks (``checks``, ``arrays``); the
CPU runtime (``runtime/``: the block pool, BLAS threads, row-wise kernels, heap trimming); the
autograd core (``gradmode``, ``gradients``, ``graph``, ``tensor``, ``inplace``, ``defop``); the
ops (``ops/``); Tensor's array methods and the NumPy bridge (``methods``, ``numpy_api``,
``numpy_options``, ``functional``); modules and optimizers (``nn/``, ``optim/``); the tools
(``tools/``: ``gradcheck``, ``opcheck``, ``summary``).
"""
# First, for their effect: they attach Tensor's array methods (t + u, t.sum()) and NumPy's
# protocols (np.exp(t)) to the class, before anything below can use them.
from . import methods, numpy_api  # noqa: F401

# isort: split
from . import functional, nn, optim
from . import functional as F
from .defop import JointVJP, op, record
from .gradmode import enable_grad, is_grad_enabled, no_grad
from .runtime import heap
from .shards import data_parallel
from .tensor import Tensor, as_tensor, tensor
from .tools.gradcheck import GradcheckError, GradcheckReport, gradcheck, taylor_check
from .tools.opcheck import gradcheck_ops
from .tools.opreport import OpcheckReport
from .tools.summary import GraphSummary, graph_summary

__version__ = "0.1.0"

__all__ = [
    "Tensor", "tensor", "as_tensor", "no_grad", "enable_grad", "is_grad_enabled", "op", "record",
    "JointVJP",
    "functional", "F", "gradcheck", "GradcheckError", "GradcheckReport",
    "taylor_check", "gradcheck_ops", "OpcheckReport", "graph_summary", "GraphSummary", "nn",
    "optim", "heap", "data_parallel",
]
