"""Check hand-written VJPs against finite differences, and say exactly what is wrong.

For ``fn`` with output y and a random non-uniform cotangent v (an all-ones cotangent would
hide a wrong reduction), the scalar L(x) = <fn(x), v> has gradient x̄ = VJP(v), which the
engine computes with one backward pass. Finite differences estimate it element by element:

    numeric[j] = (L(x + eps e_j) - L(x - eps e_j)) / (2 eps)        (error O(eps²))

and an element passes when |analytic - numeric| <= atol + rtol |numeric|.
The defaults (eps=1e-6, atol=1e-6, rtol=1e-6) follow from the error of that quotient in
float64, about eps² M3 / 6 + 2⁻⁵³ S / eps (M3 a bound on L's third derivative,
S = Σ|y v| the size of the terms of L): ~1e-10 for a well-scaled L. A relative error r in a
gradient element g is caught when r > rtol + atol / |g| (1e-4 on an element of size 0.01;
larger errors hide in elements much smaller than that). For large outputs or forwards that
lose digits, raise atol; docs/backward.md, "What gradcheck can and cannot see", derives it.
Fast mode checks directional derivatives <x̄, u> for random directions u (one backward, two
forwards per direction and input), falling back element-wise on a failing input.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..checks import positive_int, real
from ..gradmode import no_grad
from ..graph import Node, backward_many, toposort
from ..tensor import Tensor

__all__ = ["gradcheck", "GradcheckError", "GradcheckReport", "InputReport", "compare",
           "note_direction", "taylor_check", "TaylorReport"]


class GradcheckError(AssertionError):
    """Raised by :func:`gradcheck` when a gradient is wrong; ``.report`` holds the details."""

    def __init__(self, report: Any) -> None:  # a GradcheckReport, or gradcheck_ops' report
        super().__init__(str(report))
        self.report = report


@dataclass
class InputReport:
    """The comparison for one checked input (``index`` is its position in ``inputs``)."""

    index: int
    shape: tuple
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    worst_index: tuple | None = None
    analytic: float = float("nan")
    numeric: float = float("nan")
    ok: bool = True
    mode: str = "elementwise"

    def row(self) -> str:
        flag = "ok" if self.ok else "FAIL"
        worst = "-" if self.worst_index is None else str(self.worst_index)
        return (f"{self.index:>5}  {self.shape!s:<16} {self.mode:<11} {self.max_abs_err:>10.3e} "
                f"{self.max_rel_err:>10.3e}  {worst:<14} {self.analytic:>+13.6e} "
                f"{self.numeric:>+13.6e}  {flag}")


@dataclass
class GradcheckReport:
    """Per-input results plus the whole-graph checks (zero cotangent, repeatability)."""

    inputs: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and all(r.ok for r in self.inputs)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        head = (f"{'input':>5}  {'shape':<16} {'mode':<11} {'max abs err':>10} {'max rel err':>10}"
                f"  {'worst index':<14} {'analytic':>13} {'numeric':>13}  result")
        lines = ["gradcheck " + ("passed" if self.ok else "FAILED"), head]
        lines += [r.row() for r in self.inputs]
        lines += [f"problem: {p}" for p in self.problems]
        return "\n".join(lines)


def _seed(value: Any) -> None:
    try:
        np.random.default_rng(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"gradcheck seed: got {value!r}; expected a non-negative integer or "
                        f"None ({e})") from None


def _prepare(inputs: Any) -> tuple[list, list]:
    """Tensors to pass to fn, and the positions of those to check (as float64)."""
    if isinstance(inputs, (Tensor, np.ndarray)):
        inputs = [inputs]
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"gradcheck inputs: got {type(inputs).__name__}; expected a Tensor, an "
                        "array, or a list/tuple of them")
    args, checked = [], []
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor):
            if x.requires_grad and x._node is not None:
                # a non-leaf: its .grad is not kept, and backward would run into (and
                # release) the graph that made it; check it as a leaf with the same values
                x = Tensor(x.data, requires_grad=True)
            if x.requires_grad:
                if x.dtype != np.float64:
                    warnings.warn(
                        f"gradcheck: input {i} is {x.dtype}; finite differences in it are too "
                        "coarse to mean anything, so it is checked in float64", stacklevel=3)
                checked.append(i)
            args.append(x)
        elif isinstance(x, np.ndarray) and x.dtype.kind == "f":
            if x.dtype != np.float64:
                warnings.warn(f"gradcheck: input {i} is {x.dtype}; checking it in float64",
                              stacklevel=3)
            args.append(Tensor(x.astype(np.float64), requires_grad=True))
            checked.append(i)
        else:
            args.append(x)
    if not checked:
        raise ValueError("gradcheck inputs: none requires grad; expected at least one floating "
                         "Tensor with requires_grad=True (or a floating array)")
    for i in checked:  # finite differences at NaN or inf compare nothing
        data = args[i].data
        if not np.all(np.isfinite(data)):
            bad = tuple(int(j) for j in np.argwhere(~np.isfinite(data))[0])
            raise ValueError(f"gradcheck inputs[{i}]: got {data[bad]} at index {bad}; expected "
                             "finite values (finite differences are meaningless at NaN or inf)")
    return args, checked


def _leaves(outs: tuple) -> list[Tensor]:
    """The leaf tensors the graphs of ``outs`` would give a gradient to."""
    nodes = [out._node for out in outs if out._node is not None]
    if not nodes:
        return []
    found: dict[int, Tensor] = {}
    for node in toposort(nodes):
        for parent, _ in node.edges:
            if type(parent) is not Node:
                found.setdefault(id(parent), parent)
    return list(found.values())


class _Check:
    """State of one gradcheck run: the float64 inputs, the cotangent, and fn's scalarization.

    ``fn`` may return a Tensor or a tuple of Tensors (an op with several outputs): ``v`` is
    then one random cotangent per floating output, L = Σ_k <out_k, v_k>, and one backward
    pass runs from all outputs at once. Non-floating outputs (indices) are left out of L.
    """

    def __init__(self, fn, args, checked, seed):
        self.fn, self.args, self.checked = fn, args, checked
        self.rng = np.random.default_rng(seed)
        self.saved = {i: (args[i].data, args[i].grad) for i in checked}
        for i in checked:  # checked tensors are swapped to float64 copies for the duration
            args[i].data = args[i].data.astype(np.float64, copy=True)
            args[i].grad = None
        try:
            with no_grad():
                out = self.output()
        except BaseException:
            self.restore()
            raise
        self.v = tuple(self.rng.standard_normal(o.shape) for o in out)

    def restore(self):
        for i, (data, grad) in self.saved.items():
            self.args[i].data, self.args[i].grad = data, grad

    def output(self) -> tuple:
        """fn's floating outputs, as a tuple (of one Tensor for a single output)."""
        out = self.fn(*self.args)
        outs = out if type(out) is tuple else (out,)
        if not outs or not all(isinstance(o, Tensor) for o in outs):
            if type(out) is not tuple:
                got = type(out).__name__
            else:
                got = f"a tuple of ({', '.join(type(o).__name__ for o in outs)})"
            raise TypeError(f"gradcheck fn: returned {got}; expected a Tensor or a tuple of "
                            "Tensors")
        return tuple(o for o in outs if o.dtype.kind == "f")

    def loss(self) -> float:
        with no_grad():
            return float(sum(np.sum(o.data.astype(np.float64) * v)
                             for o, v in zip(self.output(), self.v, strict=True)))

    def analytic(self, v=None, retain=False):
        for i in self.checked:
            self.args[i].grad = None
        outs = self.output()
        v = self.v if v is None else v
        pairs = [(o, vk) for o, vk in zip(outs, v, strict=True) if o.requires_grad]
        if not pairs:
            return False, [np.zeros_like(self.args[i].data) for i in self.checked]
        # Other leaves that fn reaches (a closure's parameters) would get .grad, or have theirs
        # added into in place: clear them for the pass and give back what they held.
        checked = {id(self.args[i]) for i in self.checked}
        others = [(t, t.grad) for t in _leaves(outs) if id(t) not in checked]
        for t, _ in others:
            t.grad = None
        try:
            backward_many([o for o, _ in pairs], [vk.astype(o.dtype) for o, vk in pairs],
                          retain_graph=retain)
        finally:
            for t, grad in others:
                t.grad = grad
        grads = [self.args[i].grad for i in self.checked]
        grads = [np.zeros_like(self.args[i].data) if g is None else g for g in grads]
        return True, grads

    def numeric_elementwise(self, i, eps):
        x = self.args[i].data
        num = np.empty_like(x)
        for j in np.ndindex(x.shape):
            orig = x[j]
            x[j] = orig + eps
            hi = self.loss()
            x[j] = orig - eps
            lo = self.loss()
            x[j] = orig
            num[j] = (hi - lo) / (2 * eps)
        return num

    def numeric_directional(self, i, u, eps):
        x0 = self.args[i].data
        self.args[i].data = x0 + eps * u
        hi = self.loss()
        self.args[i].data = x0 - eps * u
        lo = self.loss()
        self.args[i].data = x0
        return (hi - lo) / (2 * eps)


def compare(i: int, shape: tuple, analytic: np.ndarray, numeric: np.ndarray, atol: float,
            rtol: float) -> InputReport:
    """Input ``i``'s analytic gradient against its numeric one, element by element:
    |analytic - numeric| <= atol + rtol |numeric|, the worst element named."""
    rep = InputReport(index=i, shape=shape)
    if analytic.size == 0:
        return rep
    err = np.abs(analytic - numeric)
    rep.max_abs_err = float(err.max())
    rep.max_rel_err = float((err / np.maximum(np.abs(numeric), np.finfo(np.float64).tiny)).max())
    excess = err / (atol + rtol * np.abs(numeric))
    excess = np.where(np.isnan(excess), np.inf, excess)
    worst = np.unravel_index(int(np.argmax(excess)), shape)
    rep.worst_index = tuple(int(w) for w in worst)
    rep.analytic, rep.numeric = float(analytic[worst]), float(numeric[worst])
    rep.ok = bool(np.all(excess <= 1))
    return rep


def gradcheck(fn: Callable[..., Tensor | tuple], inputs: Any, *, eps: float = 1e-6,
              atol: float = 1e-6,
              rtol: float = 1e-6, fast: bool = False, directions: int = 2, seed: int = 0,
              raise_exception: bool = True) -> GradcheckReport:
    """Compare ``fn``'s VJPs with central finite differences, in float64.

    ``inputs``: Tensors (those with ``requires_grad`` are checked; ``fn`` may also use them
    by closure, e.g. a model's parameters) or arrays (floating ones become checked float64
    Tensors; others are passed through). ``fn(*inputs)`` must return a Tensor of any shape,
    or a tuple of Tensors (each floating one gets its own random cotangent).
    Checked inputs are evaluated in float64 and restored afterwards, ``.grad`` included;
    other tensors ``fn`` reaches (by closure) keep their ``.grad`` as it was.
    Also checks that a zero cotangent gives zero gradients and that two backward passes
    give identical gradients. Raises :class:`GradcheckError` (an ``AssertionError``) with
    the per-input table, or returns the :class:`GradcheckReport` if ``raise_exception=False``.
    """
    if not callable(fn):
        raise TypeError(f"gradcheck fn: got {type(fn).__name__}; expected a callable")
    real("eps", eps, low=0.0, low_open=True, owner="gradcheck")
    real("atol", atol, low=0.0, owner="gradcheck")
    real("rtol", rtol, low=0.0, owner="gradcheck")
    if fast:
        positive_int("directions", directions, owner="gradcheck")
    _seed(seed)
    args, checked = _prepare(inputs)
    check = _Check(fn, args, checked, seed)
    report = GradcheckReport()
    try:
        recorded, grads = check.analytic(retain=True)
        if recorded:
            _, again = check.analytic()
            for i, g1, g2 in zip(checked, grads, again, strict=True):
                if not np.array_equal(g1, g2, equal_nan=True):
                    report.problems.append(f"input {i}: two backward passes differ")
            _, zeros = check.analytic(v=tuple(np.zeros(v.shape) for v in check.v))
            for i, gz in zip(checked, zeros, strict=True):
                if np.any(gz != 0):
                    report.problems.append(f"input {i}: a zero cotangent gave a nonzero gradient")
        for i, g in zip(checked, grads, strict=True):
            shape = check.args[i].shape
            if g.shape != shape:
                report.problems.append(f"input {i}: gradient shape {g.shape}, expected {shape}")
                continue
            rep = None
            if fast:
                rep = _fast_input(check, i, g, eps, atol, rtol, directions)
            if rep is None or not rep.ok:  # element-wise names the element
                rep = compare(i, shape, g, check.numeric_elementwise(i, eps), atol, rtol)
            report.inputs.append(rep)
    finally:
        check.restore()
    if raise_exception and not report.ok:
        raise GradcheckError(report)
    return report


def _fast_input(check, i, g, eps, atol, rtol, directions) -> InputReport:
    """Directional derivatives <x̄, u> against (L(x + eps u) - L(x - eps u)) / 2 eps."""
    rep = InputReport(index=i, shape=g.shape, mode="fast")
    for _ in range(directions):
        u = check.rng.standard_normal(g.shape)
        note_direction(rep, g, u, check.numeric_directional(i, u, eps), atol, rtol)
    return rep


def note_direction(rep: InputReport, g: np.ndarray, u: np.ndarray, numeric: float, atol: float,
                   rtol: float) -> None:
    """Note in ``rep``: <x̄, u> against ``numeric``, within Σ |u_j| (atol + rtol |x̄_j|)."""
    analytic = float(np.sum(g * u))
    tol = float(np.sum(np.abs(u) * (atol + rtol * np.abs(g))))
    err = abs(analytic - numeric)
    if err >= rep.max_abs_err:
        rep.max_abs_err, rep.analytic, rep.numeric = err, analytic, numeric
        rep.max_rel_err = err / max(abs(numeric), np.finfo(np.float64).tiny)
    rep.ok = rep.ok and err <= tol


@dataclass
class TaylorReport:
    """Remainders |L(x + h u) - L(x) - h <x̄, u>| for decreasing h, and their fitted order."""

    steps: np.ndarray
    remainders: np.ndarray
    order: float
    ok: bool

    def __str__(self) -> str:
        rows = "\n".join(f"  h={h:.1e}  remainder={r:.3e}"
                         for h, r in zip(self.steps, self.remainders, strict=True))
        verdict = "passed" if self.ok else "FAILED"
        return f"taylor check {verdict}: remainder shrinks as h^{self.order:.2f}\n{rows}"


_TAYLOR_STEPS = tuple(0.1 * 0.5 ** k for k in range(11))  # 1e-1 down to about 1e-4


def taylor_check(fn: Callable[..., Tensor], inputs: Any, *, steps: Sequence[float] = _TAYLOR_STEPS,
                 seed: int = 0, min_order: float = 1.8,
                 raise_exception: bool = True) -> TaylorReport:
    """An eps-free check: with the true gradient, L(x + h u) - L(x) - h <x̄, u> = O(h²).

    A wrong gradient leaves an O(h) remainder e·h, which dominates c·h² only for h < e/c:
    a small error shows only at small steps. So the order is the least-squares slope of log
    remainder on log h over the smaller half of the steps (at least 3) whose remainder is
    above round-off. All checked inputs move together along a random direction u.
    Remainders at round-off level (a linear L) count as passing.
    """
    _seed(seed)
    args, checked = _prepare(inputs)
    check = _Check(fn, args, checked, seed)
    try:
        _, grads = check.analytic()
        us = [check.rng.standard_normal(g.shape) for g in grads]
        slope = sum(float(np.sum(g * u)) for g, u in zip(grads, us, strict=True))
        base = check.loss()
        x0 = [check.args[i].data for i in checked]
        rem = []
        for h in steps:
            for i, x, u in zip(checked, x0, us, strict=True):
                check.args[i].data = x + h * u
            rem.append(abs(check.loss() - base - h * slope))
        for i, x in zip(checked, x0, strict=True):
            check.args[i].data = x
    finally:
        check.restore()
    steps_arr, rem_arr = np.asarray(steps, float), np.asarray(rem)
    floor = 1e-10 * max(abs(base), 1.0)
    if np.count_nonzero(rem_arr > floor) < 2:  # round-off level (at most one step above it)
        order, ok = float("inf"), True
    else:
        keep = np.flatnonzero(rem_arr > floor)
        keep = keep[np.argsort(steps_arr[keep])][:max(3, (len(keep) + 1) // 2)]  # smallest h
        order = float(np.polyfit(np.log(steps_arr[keep]), np.log(rem_arr[keep]), 1)[0])
        ok = bool(order >= min_order)
    report = TaylorReport(steps_arr, rem_arr, order, ok)
    if raise_exception and not ok:
        raise AssertionError(str(report))
    return report
