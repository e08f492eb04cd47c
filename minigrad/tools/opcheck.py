"""Check every op of a computation at its own inputs: which op's backward formula is wrong.

``gradcheck`` says which element of which input of a whole function has a wrong gradient;
when that function is a model, the wrong VJP may be any of hundreds of ops. ``gradcheck_ops``
runs ``fn`` once in checking mode (``minigrad.opcalls``), which keeps, for each op call, what
its forward was given and what it returned; then, in the order the ops ran, it checks each
op's VJPs against central differences of *that op's own forward* at *its own recorded inputs*:

    L(x_0, x_1, ...) = Σ_k <forward(x_0, x_1, ...)_k, v_k>        (v_k random, non-uniform)
    VJP_i(v) ≈ (L(.., x_i + eps e_j, ..) - L(.., x_i - eps e_j, ..)) / (2 eps),  every j

in float64 (copies of the recorded inputs), with ``gradcheck``'s tolerances and comparison.
An op whose check fails is named with where it was called from (the first frame outside
minigrad), where its forward is defined, and the input (position and parameter name), the
worst element and analytic vs numeric there. An op that cannot be checked is listed as
unchecked with the reason, never passed: one recorded by a direct call to ``record`` (no
forward is known; the built-in ops with a list of inputs, ``concatenate``, ``stack`` and
``einsum``, show their forward through ``ops.variadic``), one whose forward called again
at its recorded inputs gives other values (random, or reading state that changed), one with
no floating array input that has a VJP, one whose output is not floating (no gradient), one
whose forward gives a lower precision than float64 for float64 inputs.
"""
from __future__ import annotations

import inspect
import linecache
import os
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..checks import positive_int, real
from ..defop import JointVJP
from ..gradients import conform
from ..gradmode import enable_grad
from ..graph import Node, toposort
from ..opcalls import OpCall, observing_op_calls
from ..tensor import Tensor
from .gradcheck import GradcheckError, InputReport, compare, note_direction
from .opreport import OpcheckReport, OpInput, OpReport

__all__ = ["gradcheck_ops"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


@dataclass
class _Call:
    """An op call as recorded for the check: copies of its inputs and outputs."""

    name: str
    forward: Callable | None
    params: tuple
    raw: list
    kwargs: dict
    outputs: tuple
    site: str | None
    nodes: tuple  # the graph nodes the call made (to find the ops recorded without it)


def _copy(a: Any) -> Any:
    return a.copy() if isinstance(a, np.ndarray) else a


def _short(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _caller() -> str | None:
    """file:line of the first frame outside minigrad (the user's code that called the op)."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    return None if frame is None else f"{_short(frame.f_code.co_filename)}:{frame.f_lineno}"


def _definition(forward: Callable | None) -> str | None:
    """file:line of the ``def`` of ``forward`` (past its decorators), when it has code."""
    code = getattr(inspect.unwrap(forward), "__code__", None) if forward else None
    if code is None:
        return None
    line = code.co_firstlineno
    for k in range(line, line + 20):  # a decorated function's first line is its decorator's
        if linecache.getline(code.co_filename, k).lstrip().startswith(("def ", "async def ")):
            line = k
            break
    return f"{_short(code.co_filename)}:{line}"


class _Recorder:
    """The observer of checking mode: copies what each op call was given and returned."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []

    def __call__(self, call: OpCall) -> None:
        results = call.result if type(call.result) is tuple else (call.result,)
        nodes = []
        for t in results:
            node = t._node
            if node is not None:
                nodes.append(node)
                if node.index is not None:  # one output of several: its op's node too
                    nodes.append(node.edges[0][0])
        self.calls.append(_Call(call.name, call.forward, call.params,
                                [_copy(a) for a in call.raw], dict(call.kwargs),
                                tuple(t.data.copy() for t in results), _caller(),
                                tuple(nodes)))


def _tensors(value: Any) -> list:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _in_run_order(calls: list, out: Any) -> list:
    """``calls`` and, in between, the ops of the graph that no call made (recorded by a direct
    call to ``record``), each right after the last call that made one of its inputs."""
    known = {node: k for k, call in enumerate(calls) for node in call.nodes}
    roots = [t._node for t in _tensors(out) if t._node is not None]
    roots += [node for call in calls for node in call.nodes]
    keyed = [((k, 0, 0), call) for k, call in enumerate(calls)]
    if not roots:
        return calls
    after: dict[Node, int] = {}
    for seq, node in enumerate(toposort(roots, released_ok=True)):
        parents = [p for p, _ in node.edges or () if type(p) is Node]
        last = max([known.get(p, after.get(p, -1)) for p in parents], default=-1)
        if node in known or node.index is not None:
            continue
        after[node] = last
        keyed.append(((last, 1, seq), _Call(node.op, None, (), [], {}, (), None, (node,))))
    return [call for _, call in sorted(keyed, key=lambda kc: kc[0])]


class _Settings(NamedTuple):
    eps: float
    atol: float
    rtol: float
    fast: bool
    directions: int


def gradcheck_ops(fn: Callable[..., Any], inputs: Sequence[Any] = (), *, eps: float = 1e-6,
                  atol: float = 1e-6, rtol: float = 1e-6, fast: bool = False,
                  directions: int = 2, seed: int = 0,
                  raise_exception: bool = True) -> OpcheckReport:
    """Check the VJPs of every op ``fn(*inputs)`` runs, each at its own recorded inputs.

    ``fn`` runs once, with grad mode on, in checking mode; what it returns is used only to
    find the ops recorded without the op wrapper. Then each op call, in the order they ran,
    is checked as the module docstring says: every floating array input with a VJP, element
    by element (``eps``, ``atol``, ``rtol`` as in :func:`gradcheck`), plus a zero cotangent
    giving zero gradients. Built-in ops, ``mg.op`` ops, ops with several outputs and
    ``JointVJP`` ops are all checked the same way. Returns the :class:`OpcheckReport`, or
    raises :class:`GradcheckError` (an ``AssertionError``) with it when an op failed and
    ``raise_exception``. The cost: two forward calls of each op per element of each checked
    input, on that op's inputs alone. ``fast`` checks instead ``directions`` directional
    derivatives per input (as ``gradcheck(fast=True)``), falling back to every element for
    an input that fails, so that the report still names its worst element.
    """
    if not callable(fn):
        raise TypeError(f"gradcheck_ops fn: got {type(fn).__name__}; expected a callable")
    if isinstance(inputs, (Tensor, np.ndarray)) or not isinstance(inputs, (list, tuple)):
        raise TypeError(f"gradcheck_ops inputs: got {type(inputs).__name__}; expected a list "
                        "or tuple of fn's arguments")
    real("eps", eps, low=0.0, low_open=True, owner="gradcheck_ops")
    real("atol", atol, low=0.0, owner="gradcheck_ops")
    real("rtol", rtol, low=0.0, owner="gradcheck_ops")
    if fast:
        positive_int("directions", directions, owner="gradcheck_ops")
    settings = _Settings(eps, atol, rtol, bool(fast), directions)
    rng = np.random.default_rng(seed)
    recorder = _Recorder()
    with enable_grad(), observing_op_calls(recorder):
        out = fn(*inputs)
    report = OpcheckReport()
    for number, call in enumerate(_in_run_order(recorder.calls, out)):
        report.ops.append(_check_call(number, call, rng, settings))
    if raise_exception and not report.ok:
        raise GradcheckError(report)
    return report


def _check_call(number: int, call: _Call, rng: np.random.Generator,
                settings: _Settings) -> OpReport:
    rep = OpReport(number, call.name, call.site, _definition(call.forward))
    reason = _uncheckable(call)
    if reason is None:
        _check_vjps(rep, call, rng, settings)
    else:
        rep.status, rep.reason = "unchecked", reason
    return rep


def _outputs(result: Any) -> tuple:
    return tuple(np.asarray(o) for o in (result if type(result) is tuple else (result,)))


def _vjp_positions(vjps: Any, n: int) -> tuple[Callable | None, list]:
    """(the JointVJP's function or None, one VJP or None per input position)."""
    if isinstance(vjps, JointVJP):
        return vjps.gradients, [True] * n
    if callable(vjps):
        vjps = (vjps,)
    return None, [vjps[i] if i < len(vjps) else None for i in range(n)]


def _uncheckable(call: _Call) -> str | None:
    """Why the call cannot be checked, or None when it can."""
    if call.forward is None:
        return ("recorded by a direct call to record, not through the op wrapper: its "
                "forward is not known")
    if not any(o.dtype.kind == "f" for o in call.outputs):
        return "its output is not floating: it has no gradient"
    floating = [i for i, a in enumerate(call.raw)
                if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    try:
        again, vjps = call.forward(*[_copy(a) for a in call.raw], **call.kwargs)
    except Exception as e:  # (the op ran once: it is its repetition that fails)
        return f"its forward, called again at its recorded inputs, raised {type(e).__name__}: {e}"
    again = _outputs(again)
    same = len(again) == len(call.outputs) and all(
        a.shape == o.shape and np.allclose(a, o, rtol=1e-5, atol=0, equal_nan=True)
        for a, o in zip(again, call.outputs, strict=True))
    if not same:
        return ("its forward is not a function of its recorded inputs: called again at them "
                "it returned other values (random, or state that changed since)")
    _, per_input = _vjp_positions(vjps, len(call.raw))
    if not any(per_input[i] is not None for i in floating):
        return ("no floating array input with a VJP" if not floating else
                "its floating inputs have no VJP")
    return None


def _check_vjps(rep: OpReport, call: _Call, rng: np.random.Generator,
                settings: _Settings) -> None:
    """Fill ``rep`` for a checkable call: the forward at float64 copies of its inputs, each
    VJP at a random cotangent (the same one for every VJP, as ``backward`` passes it) against
    central differences, and a zero cotangent. An input's array is perturbed in place, after
    every VJP has run (a VJP may hold the array it was given)."""
    forward = call.forward
    assert forward is not None  # (_uncheckable said so)
    x = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else _copy(a)
         for a in call.raw]
    result, vjps = forward(*x, **call.kwargs)
    outs = _outputs(result)
    if any(o.dtype.kind == "f" and o.dtype != np.float64 for o in outs):
        rep.status = "unchecked"
        rep.reason = ("with float64 inputs its forward returns "
                      f"{', '.join(str(o.dtype) for o in outs)}: finite differences in that "
                      "precision would mean nothing")
        return
    joint, per_input = _vjp_positions(vjps, len(x))
    checked = [i for i, a in enumerate(x) if per_input[i] is not None
               and isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    v = tuple(rng.standard_normal(o.shape) if o.dtype.kind == "f" else np.zeros(o.shape, o.dtype)
              for o in outs)
    several = type(result) is tuple
    analytic = _analytic(rep, call, x, v if several else v[0], joint, per_input, checked)
    zeros = tuple(np.zeros(o.shape, o.dtype) for o in outs)
    _, vjps0 = forward(*x, **call.kwargs)
    joint0, per_input0 = _vjp_positions(vjps0, len(x))
    scratch = OpReport(rep.number, rep.name, None, None)
    for i, g in _analytic(scratch, call, x, zeros if several else zeros[0], joint0, per_input0,
                          checked).items():
        if np.any(g != 0):
            rep.problems.append(f"input {i} ({_param(call, i)}): a zero cotangent gave a "
                                "nonzero gradient")

    def loss() -> float:
        out = _outputs(forward(*x, **call.kwargs)[0])
        return float(sum(np.sum(o * vk) for o, vk in zip(out, v, strict=True)
                         if o.dtype.kind == "f"))

    eps, atol, rtol = settings.eps, settings.atol, settings.rtol
    for i in checked:
        if i not in analytic:
            continue  # its problem is already in rep.inputs
        if settings.fast:
            quick = _directional(i, x, analytic[i], loss, rng, settings)
            if quick.ok:
                rep.inputs.append(OpInput(i, _param(call, i), report=quick))
                continue
        xi = x[i]
        num = np.empty_like(xi)
        for j in np.ndindex(xi.shape):
            orig = xi[j]
            xi[j] = orig + eps
            hi = loss()
            xi[j] = orig - eps
            lo = loss()
            xi[j] = orig
            num[j] = (hi - lo) / (2 * eps)
        rep.inputs.append(OpInput(i, _param(call, i),
                                  report=compare(i, xi.shape, analytic[i], num, atol, rtol)))
    rep.inputs.sort(key=lambda r: r.position)
    if rep.problems or rep.failures:
        rep.status = "FAILED"


def _directional(i: int, x: list, g: np.ndarray, loss: Callable[[], float],
                 rng: np.random.Generator, settings: _Settings) -> InputReport:
    """Input i's directional derivatives <x̄, u> along random u against (L(x + eps u) -
    L(x - eps u)) / 2 eps, with the element-wise tolerance summed along u."""
    rep = InputReport(index=i, shape=g.shape, mode="fast")
    x0 = x[i]
    for _ in range(settings.directions):
        u = rng.standard_normal(g.shape)
        x[i] = x0 + settings.eps * u
        hi = loss()
        x[i] = x0 - settings.eps * u
        lo = loss()
        x[i] = x0
        note_direction(rep, g, u, (hi - lo) / (2 * settings.eps), settings.atol, settings.rtol)
    return rep


def _param(call: _Call, i: int) -> str:
    return call.params[i] if i < len(call.params) else f"input {i}"


def _analytic(rep: OpReport, call: _Call, x: list, g: Any, joint: Callable | None,
              per_input: list, checked: list) -> dict:
    """Each checked input's VJP result, conformed as ``backward`` conforms it (broadcast axes
    summed, cast to float64), copied; a VJP that raises or returns a wrong shape becomes an
    input with a ``problem`` in ``rep``."""
    grads: dict[int, np.ndarray] = {}
    try:
        if joint is not None:
            needed = tuple(i in checked for i in range(max(len(x), len(call.params))))
            results = list(joint(g, needed))
        else:
            results = None
    except Exception as e:
        for i in checked:
            rep.inputs.append(OpInput(i, _param(call, i),
                                      problem=f"its JointVJP raised {type(e).__name__}: {e}"))
        return grads
    for i in checked:
        try:
            gi = results[i] if results is not None else per_input[i](g)
            gi = conform(gi, x[i].shape, np.dtype(np.float64), call.name, i)
        except Exception as e:
            rep.inputs.append(OpInput(i, _param(call, i),
                                      problem=f"its VJP raised {type(e).__name__}: {e}"))
            continue
        grads[i] = np.array(gi, dtype=np.float64, copy=True)
    return grads
