"""Graph inspection: ``mg.graph_summary`` lists the ops and the memory their VJPs keep."""
from __future__ import annotations

import functools

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import F

RNG = np.random.default_rng(13)
leaf = functools.partial(helpers.leaf, RNG)


def test_rows_in_order_with_shapes_and_dtypes():
    x, w = leaf(4, 3, dtype=np.float32), leaf(3, 5, dtype=np.float32)
    y = ((x @ w).exp() * 2.0).sum(axis=0)
    s = mg.graph_summary(y)
    assert [r[0] for r in s.rows] == ["matmul", "exp", "mul", "sum"]
    assert [r[1] for r in s.rows] == [(4, 5), (4, 5), (4, 5), (5,)]
    assert all(r[2] == np.float32 for r in s.rows)


def test_branches_list_inputs_before_results_first_argument_first():
    x = leaf(3)
    a = x.exp()
    b = x.tanh()
    y = a * b
    names = [r[0] for r in mg.graph_summary(y).rows]
    assert names == ["exp", "tanh", "mul"]


def test_exp_saves_its_output_and_sum_saves_nothing():
    x = leaf(6, 7)
    y = x.exp()
    s = mg.graph_summary(y)
    assert s.rows == [("exp", (6, 7), np.dtype(np.float64), 6 * 7 * 8)]
    assert s.total_saved_bytes == y.data.nbytes == 336
    assert mg.graph_summary(x.sum()).rows[0][3] == 0


def test_shared_arrays_count_once_in_the_total():
    x = leaf(10, dtype=np.float32)
    y = x.exp()
    z = y * y  # mul saves y.data twice: one array
    s = mg.graph_summary(z)
    assert [r[3] for r in s.rows] == [40, 40]
    assert s.total_saved_bytes == 40


def test_views_count_their_base_and_containers_are_followed():
    big = np.ones((100, 10))

    @mg.op
    def take_row(x):
        view = big[3]  # a view keeps all of ``big`` alive
        return x * view, lambda g: g * view

    @mg.op
    def scaled(x):
        consts = (np.full(5, 2.0), {"k": np.zeros(7)})
        return x * consts[0], lambda g: g * consts[0] + consts[1]["k"][:5]

    class Vjp:  # a VJP written as a small class
        def __init__(self, saved):
            self.saved = saved

        def __call__(self, g):
            return g * self.saved

    @mg.op
    def with_class(x):
        return x * 3.0, Vjp(np.full(x.shape, 3.0))

    @mg.op
    def with_partial(x):
        return x * 2.0, functools.partial(np.multiply, np.full(x.shape, 2.0))

    assert mg.graph_summary(take_row(leaf(10))).rows[0][3] == big.nbytes
    assert mg.graph_summary(scaled(leaf(5))).rows[0][3] == 5 * 8 + 7 * 8
    assert mg.graph_summary(with_class(leaf(4))).rows[0][3] == 4 * 8
    assert mg.graph_summary(with_partial(leaf(4))).rows[0][3] == 4 * 8


def test_self_referencing_closure_does_not_hang():
    @mg.op
    def odd(x):
        def vjp(g, depth=0):
            return g if depth else vjp(g, 1) * 1.0  # refers to itself through its cell
        return x * 1.0, vjp

    assert mg.graph_summary(odd(leaf(3))).rows[0][3] == 0


def test_attention_scores_are_saved_by_softmax():
    N, H, T, D = 2, 3, 5, 4
    q, k, v = leaf(N, H, T, D), leaf(N, H, T, D), leaf(N, H, T, D)
    scores = (q * (1.0 / np.sqrt(D))) @ k.swapaxes(-1, -2)
    attn = F.softmax(scores, axis=-1)
    out = attn @ v
    s = mg.graph_summary(out)
    by_op = {r[0]: r for r in s.rows}
    assert by_op["softmax"][1] == (N, H, T, T)
    assert by_op["softmax"][3] == N * H * T * T * 8  # softmax keeps its output
    assert [r[0] for r in s.rows][-1] == "matmul" and s.rows[-1][1] == (N, H, T, D)
    # the final matmul keeps attn (N,H,T,T) and v: counted once with softmax's output
    assert s.rows[-1][3] == N * H * T * T * 8 + N * H * T * D * 8
    assert s.total_saved_bytes >= N * H * T * T * 8 + 3 * N * H * T * D * 8


def test_str_renders_a_table():
    x = leaf(2, 3)
    y = (x.exp() * x).sum()
    text = str(mg.graph_summary(y))
    lines = text.splitlines()
    assert len(lines) == 1 + 3 + 1
    assert "op" in lines[0] and "output shape" in lines[0] and "dtype" in lines[0]
    assert "exp" in lines[1] and "(2, 3)" in lines[1] and "48 B" in lines[1]
    assert "mul" in lines[2] and "96 B" in lines[2]
    assert "sum" in lines[3] and "()" in lines[3]
    assert lines[-1].startswith("3 ops") and "96 B" in lines[-1]
    big = mg.graph_summary(leaf(1024, 256).exp())
    assert "2.0 MiB" in str(big)


def test_released_graph_shows_nothing_saved_and_retained_graph_keeps_it():
    x = leaf(8)
    y = (x.exp() * x).sum()
    before = mg.graph_summary(y).total_saved_bytes
    y.backward(retain_graph=True)
    assert mg.graph_summary(y).total_saved_bytes == before > 0
    y.backward()
    s = mg.graph_summary(y)
    assert s.total_saved_bytes == 0 and [r[0] for r in s.rows] == ["sum"]


def test_leaves_deep_chains_and_bad_arguments():
    assert mg.graph_summary(leaf(3)).rows == []
    x = leaf(2)
    y = x
    for _ in range(20_000):
        y = y + 1.0
    assert len(mg.graph_summary(y).rows) == 20_000
    with pytest.raises(TypeError, match="expected a Tensor"):
        mg.graph_summary(np.ones(3))
