"""The report of ``gradcheck_ops`` (``opcheck.py``): one :class:`OpReport` per op call, in the
order the ops ran, each with its checked inputs (:class:`OpInput`), and the whole
:class:`OpcheckReport`, which prints one line per op kind and the failing and unchecked calls
in detail."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .gradcheck import InputReport

__all__ = ["OpcheckReport", "OpReport", "OpInput"]

@dataclass
class OpInput:
    """The check of one input of one op: ``report`` holds the element-wise comparison
    (``report.index`` is the input's position), ``problem`` what went wrong before any
    comparison (the VJP raised, or returned a shape that is no broadcast of the input's)."""

    position: int
    param: str
    report: InputReport | None = None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and self.report is not None and self.report.ok

    def describe(self) -> str:
        head = f"input {self.position} ({self.param})"
        r = self.report
        if self.problem is not None or r is None:
            return f"{head}: {self.problem or 'not compared'}"
        return (f"{head}, shape {r.shape}: max abs err {r.max_abs_err:.3e}, max rel err "
                f"{r.max_rel_err:.3e}; worst at {r.worst_index}: analytic {r.analytic:+.6e}, "
                f"numeric {r.numeric:+.6e}")


@dataclass
class OpReport:
    """One op call: ``status`` is "passed", "FAILED" or "unchecked" (then ``reason`` says
    why); ``site`` is where it was called from, ``defined`` where its forward is (both
    "file:line", or None when unknown); ``number`` its place in the order the ops ran."""

    number: int
    name: str
    site: str | None
    defined: str | None
    status: str = "passed"
    reason: str = ""
    inputs: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    @property
    def failures(self) -> list:
        """The failing inputs, as :class:`OpInput`."""
        return [r for r in self.inputs if not r.ok]

    def describe(self) -> str:
        where = f"\n  called at {self.site or 'an unknown place'}" + \
            (f"\n  defined at {self.defined}" if self.defined else "")
        if self.status == "unchecked":
            return f"unchecked op #{self.number} '{self.name}': {self.reason}{where}"
        lines = [f"{self.status} op #{self.number} '{self.name}'{where}"]
        lines += [f"  {r.describe()}" for r in self.failures]
        lines += [f"  problem: {p}" for p in self.problems]
        return "\n".join(lines)


@dataclass
class OpcheckReport:
    """Every op call of the checked computation, in the order they ran (:class:`OpReport`).
    True (``ok``) when no op failed; the unchecked ones are listed, not counted as passed."""

    ops: list = field(default_factory=list)

    @property
    def failed(self) -> list:
        return [o for o in self.ops if o.status == "FAILED"]

    @property
    def unchecked(self) -> list:
        return [o for o in self.ops if o.status == "unchecked"]

    @property
    def ok(self) -> bool:
        return not self.failed

    def __bool__(self) -> bool:
        return self.ok

    def kinds(self) -> list[tuple[str, int, int, int, int]]:
        """One row per op name, in order of first run: (name, ran, passed, failed,
        unchecked)."""
        counts: dict[str, Counter] = {}
        for o in self.ops:
            counts.setdefault(o.name, Counter())[o.status] += 1
        return [(name, sum(c.values()), c["passed"], c["FAILED"], c["unchecked"])
                for name, c in counts.items()]

    def __str__(self) -> str:
        n = len(self.ops)
        lines = [f"gradcheck_ops {'passed' if self.ok else 'FAILED'}: {n} op calls, "
                 f"{n - len(self.failed) - len(self.unchecked)} passed, {len(self.failed)} "
                 f"failed, {len(self.unchecked)} unchecked",
                 f"{'op':<28} {'ran':>5} {'passed':>7} {'failed':>7} {'unchecked':>10}"]
        lines += [f"{name:<28} {ran:>5} {ok:>7} {bad:>7} {skip:>10}"
                  for name, ran, ok, bad, skip in self.kinds()]
        lines += [o.describe() for o in self.failed + self.unchecked]
        return "\n".join(lines)
