"""Timing tiny steps: batches of steps with the garbage collector off, sized to a target
time, in interleaved rounds over the implementations so that drift of a shared machine hits
them alike (as ``timeit`` does for one statement)."""
from __future__ import annotations

import gc
import time

__all__ = ["run_case"]


def _time_batch(step, inner: int) -> float:
    """Seconds per step over one batch of ``inner`` steps, garbage collector off."""
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(inner):
            step()
        t1 = time.perf_counter()
    finally:
        if gc_was_on:
            gc.enable()
    return (t1 - t0) / inner


def _calibrate(step, target_s: float) -> int:
    """Steps per batch so that one batch takes about ``target_s`` seconds."""
    inner = 1
    while True:
        t = _time_batch(step, inner) * inner
        if t >= target_s / 4 or inner >= 1 << 20:
            return max(1, int(inner * target_s / max(t, 1e-9)))
        inner *= 4


def run_case(steps: dict, rounds: int, warmup_s: float, batch_s: float) -> dict:
    """Interleaved rounds over the implementations; returns name -> list of s/step."""
    names = list(steps)
    for name in names:  # warm-up: caches, allocator, lazy imports, torch dispatch tables
        t_end = time.perf_counter() + warmup_s
        while time.perf_counter() < t_end:
            steps[name]()
    inner = {name: _calibrate(steps[name], batch_s) for name in names}
    samples = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate who goes first
        for name in order:
            samples[name].append(_time_batch(steps[name], inner[name]))
        gc.collect()
    return samples
