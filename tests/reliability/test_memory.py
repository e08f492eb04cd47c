"""Memory: 2,000 training steps of a tiny TinyViT with the graph released every step keep
the traced Python/NumPy memory (tracemalloc) and the resident set size (/proc/self/statm)
flat; a graph kept alive by mistake (the user's leak: losses kept as Tensors, never
backpropagated) grows with every step; ``.item()`` and ``float()`` keep no graph.

``python tests/reliability/test_memory.py`` prints the figures docs/reliability.md quotes.
"""
from __future__ import annotations

import gc
import os
import sys
import time
import tracemalloc
import weakref

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, Tensor
from minigrad.optim import AdamW
from vit import TinyViT

PAGE = os.sysconf("SC_PAGE_SIZE")
STEPS, WARMUP = 2000, 200


def rss() -> int:
    """Resident set size in bytes (/proc/self/statm, second field)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def setup(seed=0):
    model = TinyViT(img_size=8, patch_size=4, dim=8, num_heads=2, mlp_dim=16, num_classes=10,
                    dtype=np.float32, seed=seed)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((16, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, 16)
    return model, AdamW(list(model.parameters()), lr=1e-3), x, y


def measure(mode: str = "train", steps: int = STEPS, warmup: int = WARMUP) -> dict:
    """Run ``steps`` steps; memory after ``warmup`` steps against the end.

    mode: "train" (the right loop, the loss kept as ``loss.item()``); "keep-tensor" (the
    backpropagated loss Tensor appended to a list: its graph is released by backward, only
    the small Tensor stays); "leak" (each step also computes a loss with grad enabled that
    is never backpropagated and appends the Tensor: every step's whole graph stays alive).
    """
    model, opt, x, y = setup()
    history = []
    t0 = time.perf_counter()
    for step in range(steps):
        if step == warmup:  # trace from here: what is still traced at the end is the growth
            gc.collect()
            rss0 = rss()
            tracemalloc.start()
            traced0 = tracemalloc.get_traced_memory()[0]
        loss = F.cross_entropy(model(Tensor(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if mode == "train":
            history.append(loss.item())
        elif mode == "keep-tensor":
            history.append(loss)
        else:  # "leak": a monitoring loss computed with the graph on, kept as a Tensor
            history.append(F.cross_entropy(model(Tensor(x[:8])), y[:8]))
    seconds = time.perf_counter() - t0
    gc.collect()
    traced1, peak = tracemalloc.get_traced_memory()
    rss1 = rss()
    tracemalloc.stop()
    n = steps - warmup
    return dict(mode=mode, steps=steps, warmup=warmup, seconds=seconds,
                traced_growth=traced1 - traced0,
                per_step=(traced1 - traced0) / n, peak_above_warm=peak - traced0,
                rss_warm=rss0, rss_end=rss1, rss_growth=rss1 - rss0)


@pytest.mark.slow
def test_two_thousand_steps_keep_memory_flat():
    m = measure("train")
    # the loss floats themselves: 2,000 Python floats and the list, about 64 kB
    assert m["traced_growth"] < 256 * 1024, m
    assert m["rss_growth"] < 16 * 2**20, m
    assert m["peak_above_warm"] < 4 * 2**20, m  # one step's graph at a time


@pytest.mark.slow
def test_a_graph_kept_alive_by_the_user_grows_every_step():
    steps = 400
    leak = measure("leak", steps=steps, warmup=100)
    kept = measure("keep-tensor", steps=steps, warmup=100)
    right = measure("train", steps=steps, warmup=100)
    assert leak["per_step"] > 20_000, leak  # a whole forward graph per step
    assert leak["traced_growth"] > 20 * kept["traced_growth"], (leak, kept)
    assert kept["per_step"] < 2_000, kept  # backward released it: the Tensor is ~0.5 kB
    assert right["per_step"] < 200, right


def test_item_and_float_of_a_loss_hold_no_graph():
    """The number from ``.item()``/``float()`` is a plain float; once the loss Tensor goes,
    every tensor of its graph goes too, freed by reference counting alone (no cycles)."""
    model, _, x, y = setup()
    gc.disable()
    try:
        logits = model(Tensor(x))
        hidden = logits * 2.0
        loss = F.cross_entropy(hidden, y)
        refs = [weakref.ref(t) for t in (logits, hidden, loss)]
        value, number = loss.item(), float(loss)
        assert type(value) is float and type(number) is float and value == number
        del logits, hidden, loss
        assert all(r() is None for r in refs)  # without backward: nothing kept the graph
        logits = model(Tensor(x))
        loss = F.cross_entropy(logits, y)
        kept = weakref.ref(logits)
        del logits
        assert kept() is None  # the graph holds nodes and saved arrays, never the tensors
        node = loss._node.edges[0][0]  # cross_entropy's input: the logits' node
        assert node.edges is not None  # its VJPs and what they saved live until backward
        loss.backward()
        assert node.edges is None
        value = loss.item()
        assert type(value) is float
    finally:
        gc.enable()


def test_the_previous_steps_graph_is_gone_after_the_next_step():
    model, opt, x, y = setup()
    refs = []
    for _ in range(3):
        logits = model(Tensor(x))
        loss = F.cross_entropy(logits, y)
        refs.append((weakref.ref(logits), weakref.ref(loss)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert logits._node.edges is None  # released by backward
    del logits, loss
    assert all(a() is None and b() is None for a, b in refs)
    with mg.no_grad():  # and an evaluation forward records nothing at all
        assert model(Tensor(x))._node is None


if __name__ == "__main__":
    rows = [measure("train"), measure("keep-tensor", 400, 100), measure("leak", 400, 100)]
    print("| loop | steps (warm-up) | seconds | traced growth | per step | peak above "
          "warm-up | RSS after warm-up | RSS at end | RSS growth |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in rows:
        kb = lambda v: f"{v / 1024:,.1f} kB"  # noqa: E731
        mb = lambda v: f"{v / 2**20:,.2f} MB"  # noqa: E731
        print(f"| {m['mode']} | {m['steps']} ({m['warmup']}) | {m['seconds']:.1f} | "
              f"{kb(m['traced_growth'])} | {m['per_step']:,.0f} B | "
              f"{kb(m['peak_above_warm'])} | {mb(m['rss_warm'])} | {mb(m['rss_end'])} | "
              f"{mb(m['rss_growth'])} |")
    sys.exit(0)
