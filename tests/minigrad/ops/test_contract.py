"""einsum's grammar (NumPy's), its VJP on the cases the derivation singles out
(docs/backward.md §20: repeated labels, a label summed out of one operand only, broadcast
labels), and tensordot/outer/inner against their NumPy spellings."""
from __future__ import annotations

from functools import partial

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import F

rng = np.random.default_rng(1406)
rn = partial(helpers.rn, rng)


GRAMMAR = [  # (subscripts, shapes): values and shapes must be NumPy's
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ji", [(2, 3)]),
    ("Ab", [(2, 3)]), ("bA", [(2, 3)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("iji->j", [(2, 3, 2)]), ("iij", [(2, 2, 3)]), ("i,i->", [(4,), (4,)]), ("i,j", [(2,), (3,)]),
    ("...ii->...i", [(2, 3, 3)]), ("...,...", [(2, 3), (3,)]), ("i...,i...", [(2, 3), (2, 1)]),
    ("...ij,jk", [(2, 1, 3, 4), (4, 2)]), ("ij...,jk...->ik...", [(2, 3, 5), (3, 4, 5)]),
    ("ij,jk,kl", [(2, 3), (3, 4), (4, 2)]), ("i,i,i", [(3,), (3,), (3,)]), ("ij->", [(2, 3)]),
    ("", [()]), (",", [(), ()]), ("i", [(3,)]), ("ij,ij->ij", [(1, 3), (2, 1)]),
    ("ab,bc->", [(2, 3), (3, 4)]), ("a b , b c -> c a", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("sub, shapes", GRAMMAR, ids=[repr(g[0]) for g in GRAMMAR])
def test_values_and_shapes_are_numpys(sub, shapes):
    xs = [rn(*s) for s in shapes]
    ts = [mg.Tensor(x, requires_grad=True) for x in xs]
    out = F.einsum(sub, *ts)
    want = np.einsum(sub, *xs)
    assert out.shape == np.shape(want)
    np.testing.assert_allclose(out.data, want, rtol=1e-13, atol=1e-14)
    out.backward(rn(*out.shape))
    for t, x in zip(ts, xs, strict=True):
        assert t.grad.shape == x.shape


@pytest.mark.parametrize("sub, shapes", GRAMMAR, ids=[repr(g[0]) for g in GRAMMAR])
def test_gradients_match_finite_differences(sub, shapes):
    mg.gradcheck(lambda *ts: F.einsum(sub, *ts), [rn(*s) for s in shapes])


def _grads(sub, xs, g):
    ts = [mg.Tensor(np.asarray(x, float), requires_grad=True) for x in xs]
    F.einsum(sub, *ts).backward(np.asarray(g, float))
    return [t.grad for t in ts]


def test_repeated_label_gradients_land_on_the_diagonal():
    a = np.arange(9.0).reshape(3, 3)
    (g,) = _grads("ii->i", [a], [1.0, 2.0, 3.0])  # the diagonal: ā = diag(ḡ)
    np.testing.assert_array_equal(g, np.diag([1.0, 2.0, 3.0]))
    (g,) = _grads("ii", [a], 2.5)  # the trace: ā = ḡ I
    np.testing.assert_array_equal(g, 2.5 * np.eye(3))
    b = np.arange(12.0).reshape(2, 3, 2)  # out_j = Σ_i b_iji: ā_iji = ḡ_j, 0 off the diagonal
    (g,) = _grads("iji->j", [b], [1.0, 2.0, 3.0])
    expected = np.zeros((2, 3, 2))
    for i in range(2):
        expected[i, :, i] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(g, expected)


def test_a_label_summed_out_of_one_operand_only():
    """out_j = Σ_i a_ij b_j: ā_ij = ḡ_j b_j for every i (constant along i), b̄_j = ḡ_j Σ_i a_ij."""
    a, b, g = np.arange(6.0).reshape(2, 3), np.array([1.0, -2.0, 0.5]), np.array([3.0, 1.0, 2.0])
    ga, gb = _grads("ij,j->j", [a, b], g)
    np.testing.assert_array_equal(ga, np.broadcast_to(g * b, (2, 3)))
    np.testing.assert_array_equal(gb, g * a.sum(axis=0))
    ga, gb = _grads("ij,kl->", [a, np.ones((2, 2))], 1.0)  # both summed on their own
    np.testing.assert_array_equal(ga, np.full((2, 3), 4.0))
    np.testing.assert_array_equal(gb, np.full((2, 2), 15.0))


def test_a_broadcast_label_gets_its_gradient_summed():
    """'ij,ij->ij' with a of shape (3, 1): a is broadcast along j, so ā_i0 = Σ_j ḡ_ij b_ij."""
    a, b, g = rn(3, 1), rn(3, 4), rn(3, 4)
    ga, gb = _grads("ij,ij->ij", [a, b], g)
    np.testing.assert_allclose(ga, np.sum(g * b, axis=1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(gb, g * a, rtol=1e-15)


SIZE_ONE_LABELS = [  # a label of size 1 in one operand, larger in another (NumPy broadcasts)
    ("ij,ij->i", [(3, 1), (3, 5)]), ("ij,ij->i", [(3, 5), (3, 1)]),
    ("ijk,ijk->ij", [(3, 4, 1), (3, 4, 5)]), ("ij,jk->ik", [(3, 1), (4, 5)]),
    ("ij,jk->ik", [(3, 4), (1, 5)]), ("i,i->", [(1,), (4,)]), ("i,i", [(4,), (1,)]),
    ("ij,jk,kl->il", [(2, 1), (3, 4), (1, 2)]), ("ij,ij->", [(1, 4), (3, 1)]),
    ("ii,i->i", [(1, 1), (3,)]), ("bij,bj->bi", [(2, 3, 1), (1, 4)]),
]


@pytest.mark.parametrize("sub, shapes", SIZE_ONE_LABELS, ids=[f"{s}-{shapes}" for s, shapes in
                                                             SIZE_ONE_LABELS])
def test_a_label_broadcast_from_size_one_is_summed_back_and_spread_out(sub, shapes):
    """A label of size 1 in operand A and n in operand B: A's gradient is summed back over the
    n (A's one element meets all of them), and B's, computed from A's size-1 axis, is constant
    along it and spread out to B's n. Both shapes are the operands'."""
    gen = np.random.default_rng(1407)
    xs = [gen.standard_normal(s) for s in shapes]
    ts = [mg.Tensor(x, requires_grad=True) for x in xs]
    out = F.einsum(sub, *ts)
    np.testing.assert_allclose(out.data, np.einsum(sub, *xs), rtol=1e-13, atol=1e-14)
    out.backward(gen.standard_normal(out.shape))
    assert [t.grad.shape for t in ts] == [x.shape for x in xs]
    mg.gradcheck(lambda *a: F.einsum(sub, *a), xs)


def test_a_size_one_label_of_the_other_operand_gives_a_constant_gradient():
    """'ij,ij->i', a (3, 1), b (3, 5): out_i = a_i0 Σ_j b_ij, so b̄_ij = ḡ_i a_i0 for every j
    and ā_i0 = ḡ_i Σ_j b_ij."""
    a, b, g = np.array([[2.0], [-1.0], [0.5]]), np.arange(15.0).reshape(3, 5), np.array([1.0, 3.0, -2.0])
    ga, gb = _grads("ij,ij->i", [a, b], g)
    np.testing.assert_array_equal(gb, np.broadcast_to(g[:, None] * a, (3, 5)))
    np.testing.assert_array_equal(ga, (g * b.sum(axis=1))[:, None])


def test_the_same_tensor_twice_accumulates():
    x = mg.Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    F.einsum("i,i", x, x).backward()  # Σ x_i²: 2x
    np.testing.assert_array_equal(x.grad, [2.0, 4.0, 6.0])


def test_float32_stays_float32_and_mixed_follows_numpy():
    a32, b32 = (mg.Tensor(rn(2, 3).astype(np.float32), requires_grad=True) for _ in range(2))
    out = F.einsum("ij,ij->i", a32, b32)
    assert out.dtype == np.float32
    out.backward(np.ones(2, np.float32))
    assert a32.grad.dtype == np.float32
    mixed = F.einsum("ij,ij->i", a32, rn(2, 3))
    assert mixed.dtype == np.einsum("ij,ij->i", a32.data, rn(2, 3)).dtype


def test_integer_operands_give_a_result_without_gradient():
    out = F.einsum("ij->j", np.arange(6).reshape(2, 3))
    assert out.dtype.kind == "i" and not out.requires_grad
    np.testing.assert_array_equal(out.data, [3, 5, 7])


def test_optimize_gives_the_same_values_and_gradients():
    xs = [rn(3, 4), rn(4, 5), rn(5, 2)]
    for optimize in (False, True, "greedy", "optimal"):
        ts = [mg.Tensor(x, requires_grad=True) for x in xs]
        out = F.einsum("ij,jk,kl->il", *ts, optimize=optimize)
        out.backward(np.ones((3, 2)))
        np.testing.assert_allclose(out.data, xs[0] @ xs[1] @ xs[2], rtol=1e-13)
        np.testing.assert_allclose(ts[0].grad, np.ones((3, 2)) @ (xs[1] @ xs[2]).T, rtol=1e-13)


def test_tensordot_outer_inner_values_are_numpys():
    a, b = rn(3, 4, 5), rn(4, 5, 2)
    for axes in (2, ([1, 2], [0, 1]), ([2, 1], [1, 0]), ([-1], [1])):
        np.testing.assert_allclose(F.tensordot(a, b, axes).data, np.tensordot(a, b, axes),
                                   rtol=1e-13)
    np.testing.assert_allclose(F.outer(a, b).data, np.outer(a, b), rtol=1e-15)
    c = rn(2, 5)
    np.testing.assert_allclose(F.inner(a, c).data, np.inner(a, c), rtol=1e-13)
    mg.gradcheck(lambda x, y: F.tensordot(x, y, ([2, 1], [1, 0])), [a, b])
