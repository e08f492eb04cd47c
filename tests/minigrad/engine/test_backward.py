"""The backward sweep: order, accumulation, graph release, errors, aliasing. (Grad mode:
test_grad_mode.py.)

Expected gradients are derived by hand in each test (or come from PyTorch as an oracle).
"""
from __future__ import annotations

import gc
import weakref
from functools import partial

import helpers
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(3)
leaf = partial(helpers.leaf, RNG, within=(0.5, 1.5))  # away from 0


# ---- order and accumulation --------------------------------------------------------------
@pytest.mark.slow  # fast: test_summary.py::test_leaves_deep_chains_and_bad_arguments
def test_100k_op_chain_needs_no_recursion():
    x = mg.tensor(0.5, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    y.backward()
    assert x.grad == 1.0
    z = x
    for _ in range(100_000):
        z = z * 1.0
    del z  # dropping a deep unreleased graph must not overflow the C stack either
    gc.collect()


def test_diamond_accumulates():
    x0 = np.array([-1.0, 0.5, 2.0])
    x = mg.Tensor(x0, requires_grad=True)
    (x * x + x).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * x0 + 1)


def test_shared_non_leaf_used_many_times():
    x0 = np.array([0.3, -0.7])
    x = mg.Tensor(x0, requires_grad=True)
    h = x.exp()  # used by four ops below
    y = (h * h + h / 2.0 - h.tanh() + h.sum()).sum()
    y.backward()
    e = np.exp(x0)
    want = (2 * e + 0.5 - (1 - np.tanh(e) ** 2) + 2) * e
    np.testing.assert_allclose(x.grad, want, rtol=1e-12)


def test_zero_dim_intermediate_used_three_times():
    # 0-d ops give NumPy scalars, which += cannot update in place
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    s = x.sum()
    (s * s * s).backward()
    np.testing.assert_allclose(x.grad, [27.0, 27.0])  # d(s^3)/dx_i = 3 s^2
    w = mg.tensor(np.float32(1.5), requires_grad=True)
    v = w * 2.0  # float32 0-d, used by two float64 products (their grads are cast back)
    (v * np.array(3.0) + v * np.array(5.0) + v * np.array(7.0)).backward()
    assert w.grad.dtype == np.float32 and w.grad == pytest.approx(2 * 15)


def test_broadcasting_is_undone():
    a, b, c = leaf(3, 1), leaf(4), leaf()
    ((a + b) * c).sum().backward()
    np.testing.assert_allclose(a.grad, np.full((3, 1), 4 * c.data))
    np.testing.assert_allclose(b.grad, np.full(4, 3 * c.data))
    np.testing.assert_allclose(c.grad, (a.data + b.data).sum())


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_broadcast_gradients_match_torch(data):
    torch = pytest.importorskip("torch")
    out = data.draw(st.lists(st.integers(1, 3), min_size=0, max_size=4), label="out shape")

    def operand(label):  # a suffix of ``out`` with some axes set to 1
        k = data.draw(st.integers(0, len(out)), label=label + " ndim")
        return tuple(1 if data.draw(st.booleans()) else n for n in out[len(out) - k:])

    sa, sb = operand("a"), operand("b")
    a0, b0 = RNG.standard_normal(sa), RNG.standard_normal(sb)
    g = RNG.standard_normal(np.broadcast_shapes(sa, sb))
    a, b = mg.Tensor(a0, requires_grad=True), mg.Tensor(b0, requires_grad=True)
    (a * b - a / (b * b + 1.0)).backward(g)
    ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    (ta * tb - ta / (tb * tb + 1.0)).backward(torch.tensor(g))
    assert a.grad.shape == sa and b.grad.shape == sb
    np.testing.assert_allclose(a.grad, ta.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b.grad, tb.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_against_torch_on_a_composite_graph():
    torch = pytest.importorskip("torch")
    x0, w0, b0 = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    x, w, b = (mg.Tensor(v, requires_grad=True) for v in (x0, w0, b0))
    h = (x @ w + b).tanh()
    (F.softmax(h * h + h, axis=-1) * h).sum().backward()
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x0, w0, b0))
    th = torch.tanh(tx @ tw + tb)
    (torch.softmax(th * th + th, dim=-1) * th).sum().backward()
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


# ---- accumulation across calls, clearing, retain_graph -----------------------------------
def test_grads_accumulate_across_calls_until_cleared():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad, [6.0, 6.0])
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 3.0])
    x.zero_grad()
    assert x.grad is None


def test_graph_released_and_second_backward_raises():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    z = y.sum()
    z.backward()
    assert z._node.edges is None and y._node.edges is None
    with pytest.raises(RuntimeError, match="retain_graph"):
        z.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        (y * 2).sum().backward()  # reaches the released node of y


def test_retain_graph_allows_a_second_backward_that_doubles():
    x0 = np.array([0.5, -1.0])
    x = mg.Tensor(x0, requires_grad=True)
    z = (x.exp() * x).sum()
    z.backward(retain_graph=True)
    assert z._node.edges is not None
    z.backward()
    np.testing.assert_allclose(x.grad, 2 * np.exp(x0) * (1 + x0))


def test_saved_arrays_freed_after_backward():
    saved = []

    @mg.op
    def double(x):
        tmp = np.full_like(x, 2.0)  # held only by the VJP
        saved.append(weakref.ref(tmp))
        return x * tmp, lambda g: g * tmp

    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = double(x).sum()
    gc.collect()
    assert saved[0]() is not None
    y.backward(retain_graph=True)
    gc.collect()
    assert saved[0]() is not None
    y.backward()
    gc.collect()
    assert saved[0]() is None
    assert mg.graph_summary(y).total_saved_bytes == 0


# ---- errors -----------------------------------------------------------------------------
def test_backward_errors():
    x = mg.tensor([[1.0, 2.0]], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"shape \(1, 2\)"):
        y.backward()
    with pytest.raises(ValueError, match="expected the tensor's shape"):
        y.backward(np.ones(2))
    with pytest.raises(RuntimeError, match="does not require grad"):
        (mg.tensor([1.0]) * 2).backward()
    with mg.no_grad():
        z = x * 2
    with pytest.raises(RuntimeError, match="does not require grad"):
        z.sum().backward()


def test_vjp_returning_a_wrong_shape_is_named():
    @mg.op
    def bad(x):
        return x * 1.0, lambda g: g.T  # (2, 3) for a (3, 2) input: must not be reshaped

    with pytest.raises(ValueError, match="'bad'.*shape"):
        bad(leaf(3, 2)).backward(np.ones((3, 2)))


def test_a_leaf_root_gets_the_cotangent():
    x = leaf(3)
    g = np.array([1.0, 2.0, 3.0])
    x.backward(g)
    np.testing.assert_array_equal(x.grad, g)
    assert x.grad is not g


# ---- only needed VJPs run ----------------------------------------------------------------
def test_no_vjp_runs_for_inputs_that_do_not_need_grad():
    calls = []

    @mg.op
    def mix(a, b):
        def va(g):
            calls.append("a")
            return g * b

        def vb(g):
            calls.append("b")
            raise AssertionError("VJP of an input that needs no grad was called")

        return a * b, (va, vb)

    a, b = leaf(3), mg.tensor([1.0, 2.0, 3.0])
    mix(a, b).sum().backward()
    mix(a, b.data).sum().backward()  # a plain array is a constant too
    assert calls == ["a", "a"]
    with mg.no_grad():
        y = mix(a, a)
    assert not y.requires_grad and y._node is None


# ---- aliasing and immutability ------------------------------------------------------------
def test_leaf_grads_are_independent_arrays():
    a, b = leaf(3), leaf(3)
    (a + b).sum().backward()
    assert not np.shares_memory(a.grad, b.grad)
    a.grad += 10
    np.testing.assert_array_equal(b.grad, np.ones(3))
    h = a * 1.0
    h.retain_grad()
    c = h + b
    c.backward(np.ones(3))
    assert not np.shares_memory(h.grad, b.grad) and not np.shares_memory(h.grad, a.grad)


def test_user_grad_and_input_data_never_modified():
    x0, w0 = RNG.standard_normal((4, 3)), RNG.standard_normal((3, 3))
    x, w = mg.Tensor(x0.copy(), requires_grad=True), mg.Tensor(w0.copy(), requires_grad=True)
    h = x @ w
    h.retain_grad()
    y = F.softmax(h + h * 2, axis=-1) + h.reshape(4, 3) + x[:, ::-1]
    g = RNG.standard_normal((4, 3))
    g_copy = g.copy()
    y.backward(g)
    np.testing.assert_array_equal(g, g_copy)
    np.testing.assert_array_equal(x.data, x0)
    np.testing.assert_array_equal(w.data, w0)
    assert not np.shares_memory(h.grad, g) and not np.shares_memory(x.grad, g)


def test_an_unshared_vjp_result_is_adopted_and_a_shared_one_is_copied():
    """A VJP's fresh result becomes the leaf's .grad as it is (no copy); one the VJP also
    keeps (a saved array, a cache) is copied, so writing into .grad cannot corrupt it."""
    made = []
    saved = np.arange(3.0)

    @mg.op
    def fresh(x):
        def vjp(g):
            out = g * 2.0
            made.append(weakref.ref(out))  # a weak reference does not count as a user
            return out
        return x * 2.0, vjp

    @mg.op
    def returns_saved(x):
        return x.sum(), lambda g: saved  # wrong math on purpose: the VJP returns its own array

    a = leaf(3)
    fresh(a).backward(np.ones(3))
    assert made[0]() is a.grad
    b = leaf(3)
    returns_saved(b).backward()
    assert not np.shares_memory(b.grad, saved)
    b.grad += 1
    np.testing.assert_array_equal(saved, np.arange(3.0))
    c = leaf(3)  # a second contribution is added into the adopted buffer, not into saved
    (returns_saved(c) + fresh(c).sum()).backward()
    np.testing.assert_array_equal(saved, np.arange(3.0))
    np.testing.assert_array_equal(c.grad, np.arange(3.0) + 2.0)


def test_an_adopted_gradient_is_never_shared_between_parents():
    """``add`` hands its cotangent to both inputs: each leaf gets its own array."""
    a, b = leaf(4), leaf(4)
    y = F.gelu_tanh(a * 1.0)  # gelu's VJP result is fresh and flows to the add's inputs
    (y + b).sum().backward()
    assert not np.shares_memory(a.grad, b.grad)


def test_float32_root_with_float64_grad_is_cast():
    x = leaf(3, dtype=np.float32)
    y = x * 2
    y.backward(np.array([1.0, 2.0, 3.0], dtype=np.float64))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, np.array([2, 4, 6], np.float32))


def test_the_graph_keeps_no_intermediate_result_that_no_vjp_saved():
    # Ten adds save nothing for their backward; once the user drops the intermediate
    # tensors, only the last result's array is alive (the graph holds nodes, not tensors).
    import tracemalloc

    x = mg.Tensor(np.zeros(250_000), requires_grad=True)  # 2 MB
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        y = x
        for _ in range(10):
            y = y + 1.0
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert held < 2 * x.data.nbytes  # one result array (plus small change), not ten
    y.backward(np.ones(y.shape))
    np.testing.assert_array_equal(x.grad, np.ones(x.shape))
