"""MyGrad's chain-rule cases (rsokl/MyGrad: tests/tensor_base/test_chainrule.py): scalar graphs
with fan-out, repeated inputs and dangling branches, each node a variable or a constant, with
the gradients worked by hand. Our own code; the graphs are theirs.

MyGrad marks a node constant with ``constant=True``; here a constant leaf has
``requires_grad=False`` and a constant intermediate is ``.detach()``-ed, which is what MyGrad's
flag does to the gradient flow. Differences, by design (documented in Tensor.backward):
backward() from a tensor that requires no grad raises instead of doing nothing, and
intermediate tensors keep ``.grad`` only after ``retain_grad()``.
"""
from __future__ import annotations

import itertools

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import minigrad as mg

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)
FLAGS = list(itertools.product([False, True], repeat=3))


def scalar_leaf(v, constant):
    return mg.Tensor(np.array(float(v)), requires_grad=not constant)


def node(t, constant):
    """An intermediate, cut from the graph when ``constant`` (MyGrad's constant=True)."""
    if constant:
        return t.detach()
    t.retain_grad()
    return t


def grad_value(t):
    return None if t.grad is None else float(t.grad)


def close(a, b):
    assert (a is None) == (b is None), (a, b)
    if a is not None:
        np.testing.assert_allclose(a, b, rtol=64 * np.finfo(np.float64).eps, atol=1e-300)


@SETTINGS
@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "const-" + "".join("xyz"[i] for i in range(3) if f[i]))
@given(x=st.floats(-1e3, 1e3), y=st.floats(-1e3, 1e3), z=st.floats(-1e3, 1e3),
       side_effects=st.booleans())
def test_chainrule_scalar(flags, x, y, z, side_effects):
    """f = x y + z, g = x + z f²: dg/dx = 1 + 2 z f y, dg/dy = 2 z f x, dg/dz = f² + 2 z f."""
    X, Y, Z = (scalar_leaf(v, c) for v, c in zip((x, y, z), flags, strict=True))
    f = X * Y + Z
    g = X + Z * f * f
    if side_effects:  # branches that backward must ignore
        _unused, _w = 2 * g - f, 1 * f
    if all(flags):
        assert not g.requires_grad
        with pytest.raises(RuntimeError, match="does not require grad"):
            g.backward()
        return
    if f.requires_grad:
        f.retain_grad()
    g.backward()
    fv = x * y + z
    close(grad_value(f), 2 * z * fv if f.requires_grad else None)
    close(grad_value(X), None if flags[0] else 1 + 2 * z * fv * y)
    close(grad_value(Y), None if flags[1] else 2 * z * fv * x)
    close(grad_value(Z), None if flags[2] else fv ** 2 + 2 * z * fv)


def test_identical_inputs():
    v1 = scalar_leaf(2.0, False)
    v2 = v1 + v1
    v3 = v2 + v2
    v3.backward(np.array(1.0))
    assert v3.item() == 8.0 and v1.grad == 4.0


@pytest.mark.parametrize("grad", [None, -3.0, 0.0, 2.5])
def test_non_broadcastable_chain(grad):
    """v3 = tanh(exp(v1)) (MyGrad uses cos, which minigrad lacks), backward(grad) or default 1."""
    v1 = scalar_leaf(0.7, False)
    v2 = node(v1.exp(), False)
    v3 = node(v2.tanh(), False)
    v3.backward(None if grad is None else np.array(grad))
    g = 1.0 if grad is None else grad
    close(grad_value(v3), g)
    close(grad_value(v2), g * (1 - np.tanh(np.exp(0.7)) ** 2))
    close(grad_value(v1), g * (1 - np.tanh(np.exp(0.7)) ** 2) * np.exp(0.7))


@pytest.mark.parametrize("c", list(itertools.product([False, True], repeat=4)),
                         ids=lambda c: "const-" + "".join(str(i + 1) for i in range(4) if c[i]) or "none")
@pytest.mark.parametrize("v1_val, grad", [(-2.0, 1.0), (0.0, -2.0), (1.5, 2.0)])
def test_linear_graph(c, v1_val, grad):
    """v1 -> v2 = v1² -> v3 = e^v2 -> v4 = 2 v3."""
    v1 = scalar_leaf(v1_val, c[0])
    v2 = node(v1 ** 2, c[1])
    v3 = node(v2.exp(), c[2])
    v4 = node(v3 * 2.0, c[3])
    assert (v2.item(), v3.item(), v4.item()) == (v1_val ** 2, np.exp(v1_val ** 2), 2 * np.exp(v1_val ** 2))
    if not v4.requires_grad:
        with pytest.raises(RuntimeError):
            v4.backward(np.array(grad))
        return
    v4.backward(np.array(grad))
    close(grad_value(v4), grad)
    close(grad_value(v3), grad * 2 if v3.requires_grad else None)
    close(grad_value(v2), grad * 2 * np.exp(v1_val ** 2) if v2.requires_grad else None)
    close(grad_value(v1), grad * 2 * np.exp(v1_val ** 2) * 2 * v1_val if v1.requires_grad else None)


@pytest.mark.parametrize("c", list(itertools.product([False, True], repeat=4)),
                         ids=lambda c: "const-" + "".join(str(i + 2) for i in range(4) if c[i]) or "none")
def test_fanout_graph(c):
    """v1 feeds v2 = v1², v3 = e^v1, v4 = 2 v1; v5 = v2 v3 v4."""
    x, g = 1.5, -2.0
    v1 = scalar_leaf(x, False)
    v2, v3, v4 = node(v1 ** 2, c[0]), node(v1.exp(), c[1]), node(v1 * 2.0, c[2])
    v5 = node(v2 * v3 * v4, c[3])
    if not v5.requires_grad:
        return
    v5.backward(np.array(g))
    a, b, d = x ** 2, np.exp(x), 2 * x
    close(grad_value(v4), g * a * b if v4.requires_grad else None)
    close(grad_value(v3), g * a * d if v3.requires_grad else None)
    close(grad_value(v2), g * b * d if v2.requires_grad else None)
    want = sum(term for term, live in [(g * b * d * 2 * x, not c[0]), (g * a * d * b, not c[1]),
                                       (g * a * b * 2, not c[2])] if live)
    close(grad_value(v1), want if any(not k for k in c[:3]) else None)


@pytest.mark.parametrize("dangling", ["v1", "v2", "v3", "v4", "v5"])
@pytest.mark.parametrize("v1_val, v2_val", [(-2.0, 1.0), (1.0, 2.0), (0.5, -1.5)])
def test_interesting_graph_with_dangling_branch(dangling, v1_val, v2_val):
    """v3 = v1 v1, v4 = v1 v2 v3, v5 = v1 v3 v4, plus a dead branch 3·(one of them) that must
    change nothing (MyGrad's test_dynamic_interesting_graph)."""
    v1, v2 = scalar_leaf(v1_val, False), scalar_leaf(v2_val, False)
    v3 = node(v1 * v1, False)
    v4 = node(v1 * v2 * v3, False)
    v5 = node(v1 * v3 * v4, False)
    dead = {"v1": v1, "v2": v2, "v3": v3, "v4": v4, "v5": v5}[dangling] * 3.0
    g = 1.5
    v5.backward(np.array(g))
    # v5 = v1 · v1² · (v1 · v2 · v1²) = v1⁶ v2
    close(grad_value(v1), g * 6 * v1_val ** 5 * v2_val)
    close(grad_value(v2), g * v1_val ** 6)
    close(grad_value(v4), g * v1_val ** 3)
    close(grad_value(v3), g * v1_val * (v1_val * v2_val * v1_val ** 2) + g * v1_val ** 4 * v2_val)
    assert dead.grad is None and dead.requires_grad
    with pytest.raises(RuntimeError, match="retain_graph"):  # the graph was released
        v5.backward(np.array(g))
