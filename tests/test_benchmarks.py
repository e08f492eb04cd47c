"""The benchmark scripts run end to end (their --quick smoke mode); no timing is asserted."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(script, *args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script), *args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)


@pytest.mark.slow  # a benchmark run; fast: test_train_step_rejects_unknown_config
def test_train_step_quick():
    proc = _run("train_step.py", "--quick")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "median ms" in out and "min ms" in out and "% peak" in out
    assert "A tiny" in out and "B digits" in out
    for impl in ("minigrad32", "minigrad64", "manual"):
        assert impl in out
    assert "ratios of median times" in out


@pytest.mark.slow  # a benchmark run
def test_train_step_config_selection():
    proc = _run("train_step.py", "--quick", "--configs", "a", "--impls", "minigrad32,manual")
    assert proc.returncode == 0, proc.stderr
    assert "A tiny" in proc.stdout and "B digits" not in proc.stdout


def test_train_step_rejects_unknown_config():
    proc = _run("train_step.py", "--configs", "Z")
    assert proc.returncode == 2 and "--configs" in proc.stderr


@pytest.mark.slow
def test_gradcheck_quick():
    proc = _run("gradcheck.py", "--quick")
    assert proc.returncode == 0, proc.stderr
    assert "elementwise" in proc.stdout and "fast" in proc.stdout
    assert "FAILED" not in proc.stdout


@pytest.mark.slow  # a benchmark run; fast: test_step_ab_refuses_bad_options
def test_step_ab_times_two_trees_in_turns():
    proc = _run("step_ab.py", "--against", ROOT, "--turns", "2", "--steps", "2", "--warmup",
                "0", "--impls", "minigrad32,manual")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "this:minigrad32" in out and "this:manual" in out
    assert out.count("paired median") == 3  # every worker against the first


@pytest.mark.parametrize("args, words", [
    (("--against", "/nonexistent-tree"), ("--against", "minigrad/__init__.py")),
    (("--impls", "minigrad32,jax"), ("--impls", "jax")),
    (("--turns", "0"), ("--turns", "got 0")),
])
def test_step_ab_refuses_bad_options(args, words):
    proc = _run("step_ab.py", *args)
    assert proc.returncode == 2
    assert all(w in proc.stderr for w in words), proc.stderr


@pytest.mark.parametrize("args, words", [
    (("--train", "0"), ("--train", "got 0")),
    (("--pairs", "-5"), ("--pairs", "got -5")),
    (("--configs", "A,Z"), ("--configs", "A,Z")),
    (("--budget", "0"), ("--budget", "got 0")),
])
def test_fused_block_refuses_bad_options(args, words):
    proc = _run("fused_block.py", *args)
    assert proc.returncode == 2
    assert all(w in proc.stderr for w in words), proc.stderr


def test_step_ab_refuses_an_unknown_implementation_for_the_other_trees():
    proc = _run("step_ab.py", "--their-impl", "jax")
    assert proc.returncode == 2 and "jax" in proc.stderr, proc.stderr


@pytest.mark.slow  # two short training runs; fast: test_train_run_refuses_bad_options
def test_train_run_times_both_jobs_idle():
    proc = _run("train_run.py", "--quick", "--no-busy")
    assert proc.returncode == 0, proc.stderr
    assert "idle  minigrad" in proc.stdout and "median wall seconds" in proc.stdout


def test_train_run_refuses_bad_options():
    proc = _run("train_run.py", "--epochs", "0")
    assert proc.returncode == 2 and "--epochs" in proc.stderr


@pytest.mark.slow  # a benchmark run; fast: test_parallel_ab_refuses_bad_options
def test_parallel_ab_times_every_variant():
    proc = _run("parallel_ab.py", "--configs", "B", "--rounds", "1", "--turn", "1",
                "--shards", "1")
    assert proc.returncode == 0, proc.stderr
    for variant in ("shards ", "shards 1", "ops", "blas", "1 thread", "manual"):
        assert f"\n{variant}" in proc.stdout


def test_parallel_ab_refuses_bad_options():
    proc = _run("parallel_ab.py", "--configs", "Z")
    assert proc.returncode == 2 and "--configs" in proc.stderr
