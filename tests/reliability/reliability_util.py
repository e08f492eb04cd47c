"""Shared helpers of tests/reliability: the bad-input case table and its checker, the CLI
runner, and the tiny training settings the fault, memory and determinism tests use."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_util import run_cli  # noqa: F401  (re-exported: one helper for every test folder)

ROOT = Path(__file__).resolve().parents[2]

#: ``python -m vit train`` options of a tiny run: 3 epochs of the digits in about a second.
TINY = ["--dim", "8", "--heads", "2", "--mlp-dim", "8", "--batch-size", "256", "--quiet"]


@dataclass
class Bad:
    """One bad call: ``call()`` must raise ``exc`` with every string of ``words`` in its message,
    and leave every array of ``keep`` exactly as it was (same dtype, shape and bits).

    ``numpy=True`` marks a message accepted as it stands (mostly NumPy's own, which names the
    shapes or values); otherwise the message must also say what was ``expected``. ``xfail``
    holds the reason for a known problem the test documents (an op the lead is to fix)."""

    id: str
    call: Callable[[], Any]
    exc: Any = (ValueError, TypeError)
    words: tuple = ()
    keep: tuple = ()
    numpy: bool = False
    xfail: str | None = None
    extra: Callable[[], None] | None = field(default=None, repr=False)  # more checks after


def bad(id, call, exc=(ValueError, TypeError), *words, keep=(), numpy=False, xfail=None,
        extra=None) -> Bad:
    return Bad(id, call, exc, tuple(words), tuple(keep), numpy, xfail, extra)


def params(cases: list[Bad]) -> list:
    """pytest params of ``cases``, ids unique, known problems marked xfail(strict=True)."""
    ids = [c.id for c in cases]
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, f"duplicate case ids {sorted(dupes)}"
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=c.xfail)]
                         if c.xfail else []) for c in cases]


def snapshot(arrays) -> list:
    return [(a, a.copy()) for a in arrays]


def assert_unchanged(snap) -> None:
    for now, before in snap:
        assert now.dtype == before.dtype and now.shape == before.shape
        assert np.array_equal(now, before, equal_nan=now.dtype.kind in "fc"), "input modified"


def check_bad(case: Bad) -> str:
    """Run one case; returns the message (for the tests that look further)."""
    snap = snapshot(case.keep)
    exc = case.exc if isinstance(case.exc, tuple) else (case.exc,)
    allowed = (ValueError, TypeError, IndexError, KeyError, OSError)
    assert all(issubclass(e, allowed) for e in exc)
    with pytest.raises(exc) as info:
        case.call()
    message = str(info.value)
    # a tuple among the words: any one of its alternatives will do
    missing = [w for w in case.words
               if not any(alt in message for alt in (w if isinstance(w, tuple) else (w,)))]
    assert not missing, f"{type(info.value).__name__}: {message!r} does not name {missing}"
    if not case.numpy:
        assert "expected" in message.lower() or "expect" in message.lower(), \
            f"{message!r} does not say what was expected"
    assert_unchanged(snap)
    if case.extra is not None:
        case.extra()
    return message




def python_m_vit(args, cwd=None, timeout=300, **kw) -> subprocess.CompletedProcess:
    """``python -m vit ARGS`` in a fresh process (BLAS on one thread, as the CLI defaults)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    return subprocess.run([sys.executable, "-m", "vit", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, **kw)
