"""minigrad.runtime.heap.keep_heap: glibc's malloc keeps freed memory; bad arguments are refused;
``mg.heap`` is reachable without an import of its own."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from minigrad.runtime.heap import keep_heap

ROOT = Path(__file__).resolve().parents[3]

CHILD = """
import resource, sys
import numpy as np
from minigrad.runtime.heap import keep_heap
if sys.argv[1] == "keep":
    assert keep_heap()
def step():
    arrays = [np.ones(300_000) for _ in range(20)]  # 2.4 MB each, all freed at the end
    return sum(float(a[0]) for a in arrays)
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
"""


def _faults_per_step(mode: str) -> float:
    proc = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return float(proc.stdout)


@pytest.mark.slow  # two child processes; fast: test_keep_heap_refuses_bad_sizes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_heap_stops_the_page_faults_of_repeated_steps():
    fresh, kept = _faults_per_step("fresh"), _faults_per_step("keep")
    assert fresh > 5000  # 20 arrays of 586 pages each, mapped afresh every step
    assert kept < fresh / 20


@pytest.mark.parametrize("kwargs, error", [
    (dict(mmap_threshold=0), ValueError), (dict(trim_threshold=-1), ValueError),
    (dict(mmap_threshold=2 ** 31), ValueError),
    # wrong types: TypeError since minigrad.checks (the one rule; ValueError before)
    (dict(trim_threshold=1.5), TypeError), (dict(mmap_threshold=True), TypeError)])
def test_keep_heap_refuses_bad_sizes(kwargs, error):
    name = next(iter(kwargs))
    with pytest.raises(error, match=f"keep_heap {name}"):
        keep_heap(**kwargs)


# ---- the package's attribute ----------------------------------------------------------------
def test_heap_is_reachable_from_the_package():
    code = "import minigrad as mg; print(mg.heap.keep_heap.__name__)"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "keep_heap"
