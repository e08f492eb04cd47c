"""scatter, scatter_add, scatter_reduce, index_add: the rules where writes collide, ties,
zeros, and the refusals (docs/backward.md §36). General values and gradients are the op
table's (op_cases/scatter.py); here hand-derived numbers at the points that need a rule."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.ops.scatter import ScatterIndexError


def _grads(fn, x, src, g):
    tx = mg.Tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
    ts = mg.Tensor(np.asarray(src, dtype=np.float64), requires_grad=True)
    out = fn(tx, ts)
    out.backward(np.asarray(g, dtype=np.float64))
    return out.data, tx.grad, ts.grad


def test_scatter_add_counts_every_duplicate():
    out, gx, gs = _grads(lambda x, s: F.scatter_add(x, 0, np.array([2, 0, 2, 2]), s),
                         [1.0, 1.0, 1.0], [10.0, 20.0, 30.0, 40.0], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out, [21.0, 1.0, 81.0])
    np.testing.assert_array_equal(gx, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(gs, [3.0, 1.0, 3.0, 3.0])


def test_index_add_counts_every_duplicate_and_scales_by_alpha():
    out, gx, gs = _grads(lambda x, s: F.index_add(x, 1, np.array([1, 1, 0]), s, alpha=2.0),
                         np.zeros((2, 2)), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
                         [[1.0, 10.0], [100.0, 1000.0]])
    np.testing.assert_array_equal(out, [[6.0, 6.0], [12.0, 18.0]])
    np.testing.assert_array_equal(gx, [[1.0, 10.0], [100.0, 1000.0]])
    np.testing.assert_array_equal(gs, [[20.0, 20.0, 2.0], [2000.0, 2000.0, 200.0]])


def test_scatter_keeps_the_last_write_and_only_it_gets_a_gradient():
    out, gx, gs = _grads(lambda x, s: F.scatter(x, 0, np.array([1, 1, 3, 1]), s),
                         [0.5, 0.5, 0.5, 0.5], [10.0, 20.0, 30.0, 40.0], [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(out, [0.5, 40.0, 0.5, 30.0])
    np.testing.assert_array_equal(gx, [1.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(gs, [0.0, 0.0, 4.0, 2.0])


def test_scatter_of_a_0d_tensor_collects_the_surviving_writes():
    x = mg.Tensor(np.zeros(4), requires_grad=True)
    v = mg.Tensor(np.array(2.0), requires_grad=True)
    out = F.scatter(x, 0, np.array([3, 0, 3]), v)
    out.backward(np.array([1.0, 2.0, 4.0, 8.0]))
    np.testing.assert_array_equal(out.data, [2.0, 0.0, 0.0, 2.0])
    assert v.grad.shape == () and v.grad == 1.0 + 8.0


@pytest.mark.parametrize("reduce, sign", [("amax", 1.0), ("amin", -1.0)])
def test_amax_amin_ties_share_evenly_among_the_winners(reduce, sign):
    """Element 0: x and two writes tie at the extreme (a third each); element 1: one write
    wins alone over x."""
    x, s = sign * np.array([3.0, 1.0]), sign * np.array([3.0, 3.0, 2.0, -1.0])
    idx = np.array([0, 0, 1, 0])
    out, gx, gs = _grads(lambda a, b: F.scatter_reduce(a, 0, idx, b, reduce), x, s, [6.0, 5.0])
    np.testing.assert_array_equal(out, sign * np.array([3.0, 2.0]))
    np.testing.assert_array_equal(gx, [2.0, 0.0])
    np.testing.assert_array_equal(gs, [2.0, 2.0, 5.0, 0.0])


def test_amax_without_self_counts_only_the_writes_where_torch_counts_x_too():
    """x = (2, 0), s = (2, 1) both to element 0, include_self=False: y_0 = max(s_0, s_1), so
    dy_0/ds_0 = 1. torch 2.13 counts x_0 = 2 among the winners and gives 1/2."""
    idx = np.array([0, 0])
    out, gx, gs = _grads(lambda a, b: F.scatter_reduce(a, 0, idx, b, "amax", include_self=False),
                         [2.0, 0.0], [2.0, 1.0], [1.0, 1.0])
    np.testing.assert_array_equal(out, [2.0, 0.0])
    np.testing.assert_array_equal(gx, [0.0, 1.0])
    np.testing.assert_array_equal(gs, [1.0, 0.0])
    step = 1e-6  # the finite difference agrees with 1, not 1/2
    up = F.scatter_reduce(np.array([2.0, 0.0]), 0, idx, np.array([2.0 + step, 1.0]), "amax",
                          include_self=False)
    assert (up.data[0] - 2.0) / step == pytest.approx(1.0)
    torch = pytest.importorskip("torch")
    ts = torch.tensor([2.0, 1.0], dtype=torch.float64, requires_grad=True)
    torch.tensor([2.0, 0.0], dtype=torch.float64).scatter_reduce(
        0, torch.tensor(idx), ts, "amax", include_self=False).sum().backward()
    assert ts.grad.tolist() == [0.5, 0.0]  # if this changes, torch fixed it: see §36


def test_prod_partials_with_zeros_are_exact():
    """Group of element 0: x = 2 and writes (0, 3, 5): the zero gets 2·3·5 = 30, the others
    0. Group of element 1: x = 0 and writes (0, 4): two zeros, every partial 0. Element 2:
    x = 0 and one write 7: x gets 7, the write gets 0."""
    idx = np.array([0, 0, 0, 1, 1, 2])
    s = [0.0, 3.0, 5.0, 0.0, 4.0, 7.0]
    out, gx, gs = _grads(lambda a, b: F.scatter_reduce(a, 0, idx, b, "prod"), [2.0, 0.0, 0.0],
                         s, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(out, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(gx, [0.0, 0.0, 7.0])
    np.testing.assert_array_equal(gs, [30.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    # without x: element 2's single write 7 has partial 1, element 1's zero has partial 4
    out, gx, gs = _grads(lambda a, b: F.scatter_reduce(a, 0, idx, b, "prod",
                                                       include_self=False), [2.0, 0.0, 0.0],
                         s, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(out, [0.0, 0.0, 7.0])
    np.testing.assert_array_equal(gx, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(gs, [15.0, 0.0, 0.0, 4.0, 0.0, 1.0])


def test_mean_counts_x_only_with_include_self_and_keeps_unwritten_elements():
    idx = np.array([0, 0, 2])
    for inc, want, gx_want, gs_want in [
            (True, [3.0, 5.0, 4.0], [1 / 3, 1.0, 0.5], [1 / 3, 1 / 3, 0.5]),
            (False, [4.0, 5.0, 2.0], [0.0, 1.0, 0.0], [0.5, 0.5, 1.0])]:
        out, gx, gs = _grads(lambda a, b, inc=inc: F.scatter_reduce(a, 0, idx, b, "mean",
                                                                    include_self=inc),
                             [1.0, 5.0, 6.0], [3.0, 5.0, 2.0], [1.0, 1.0, 1.0])
        np.testing.assert_allclose(out, want, rtol=1e-15)
        np.testing.assert_allclose(gx, gx_want, rtol=1e-15)
        np.testing.assert_allclose(gs, gs_want, rtol=1e-15)


def test_integer_data_keeps_its_dtype_and_mean_floors_as_torch():
    x = np.array([1, 5, 6], np.int64)
    out = F.scatter_reduce(x, 0, np.array([0, 0]), np.array([2, 4], np.int64), "mean")
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.data, [2, 5, 6])  # (1 + 2 + 4) // 3
    torch = pytest.importorskip("torch")
    want = torch.tensor(x).scatter_reduce(0, torch.tensor([0, 0]), torch.tensor([2, 4]), "mean")
    np.testing.assert_array_equal(out.data, want.numpy())


def test_inputs_are_not_written_and_an_empty_index_copies_x():
    x, s = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    before = x.copy()
    for f in (F.scatter, F.scatter_add):
        out = f(x, 1, np.zeros((2, 0), np.int64), s)
        np.testing.assert_array_equal(out.data, before)
    F.scatter_reduce(x, 1, np.array([[0, 0]]), s, "prod")
    np.testing.assert_array_equal(x, before)



ZERO_D = {  # torch's 0-d forms (its OpInfo samples hold them): x, index and src all 0-d
    "scatter_add": (lambda x, i, s: F.scatter_add(x, 0, i, s),
                    lambda t, x, i, s: t.scatter_add(x, 0, i, s)),
    "scatter": (lambda x, i, s: F.scatter(x, 0, i, s), lambda t, x, i, s: t.scatter(x, 0, i, s)),
    **{f"scatter_reduce-{r}-{inc}": (
        lambda x, i, s, r=r, inc=inc: F.scatter_reduce(x, 0, i, s, r, include_self=inc),
        lambda t, x, i, s, r=r, inc=inc: t.scatter_reduce(x, 0, i, s, r, include_self=inc))
       for r in ("sum", "prod", "mean", "amax") for inc in (True, False)},
    "index_add": (lambda x, i, s: F.index_add(x, 0, i, s, alpha=2.0),
                  lambda t, x, i, s: t.index_add(x, 0, i, s, alpha=2.0)),
}


@pytest.mark.parametrize("name", sorted(ZERO_D))
def test_0d_inputs_as_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = ZERO_D[name]
    for index in (np.array(0), np.array([0])):  # a 0-d x takes a 0-d or one-element index
        x, s = mg.Tensor(np.array(2.0), requires_grad=True), mg.Tensor(np.array(3.0),
                                                                      requires_grad=True)
        tx, ts = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (2.0, 3.0))
        out, want = ours(x, index, s), theirs(torch, tx, torch.as_tensor(index), ts)
        assert out.shape == () and out.item() == want.item()
        out.backward(np.array(0.7))
        want.backward(torch.tensor(0.7, dtype=torch.float64))
        assert x.grad.shape == () and x.grad == pytest.approx(tx.grad.item(), rel=1e-15)
        assert s.grad.shape == () and s.grad == pytest.approx(ts.grad.item(), rel=1e-15)

IDX = np.array([[0, 2], [1, 1]])


@pytest.mark.parametrize("call, exc, words", [
    (lambda x: F.scatter_add(x, 1, np.array([[0, 3], [1, 1]]), x), ScatterIndexError,
     ("scatter_add index", "3", "[0, 3)")),
    (lambda x: F.scatter(x, 1, np.array([[0, -1], [1, 1]]), x), ScatterIndexError,
     ("scatter index", "-1", "negative")),
    (lambda x: F.index_add(x, 0, np.array([2]), np.ones((1, 3))), IndexError,
     ("index_add index", "2")),
    (lambda x: F.scatter_add(x, 1, IDX.astype(float), x), TypeError, ("scatter_add index",)),
    (lambda x: F.scatter_add(x, 1, IDX.astype(bool), x), TypeError, ("scatter_add index",)),
    (lambda x: F.scatter_add(x, 1, IDX[0], x), ValueError, ("scatter_add index",
                                                            "dimensions")),
    (lambda x: F.scatter_add(x, 1, np.zeros((3, 1), np.int64), x), ValueError,
     ("scatter_add index", "(3, 1)")),
    (lambda x: F.scatter_add(x, 1, IDX, np.ones((2, 1))), ValueError, ("scatter_add index",
                                                                       "src")),
    (lambda x: F.scatter_add(x, 1, IDX, np.ones(3)), ValueError, ("scatter_add src",)),
    (lambda x: F.scatter_add(x, 2, IDX, x), ValueError, ("scatter_add axis", "2")),
    (lambda x: F.scatter_add(x, dim=1, index=IDX, src=x), TypeError, ("axis=",)),
    (lambda x: F.scatter_reduce(x, 1, IDX, x, "max"), ValueError, ("scatter_reduce reduce",
                                                                   "'amax'")),
    (lambda x: F.scatter_reduce(x, 1, IDX, x, "sum", include_self=0), TypeError,
     ("include_self",)),
    (lambda x: F.scatter(x, 1, IDX, x, reduce="sum"), ValueError, ("scatter reduce", "'add'")),
    (lambda x: F.scatter_add(x, 1, IDX, None), TypeError, ("scatter_add src", "None")),
    (lambda x: F.scatter_add(x, 1, IDX, IDX.astype(bool)), TypeError, ("scatter_add src",
                                                                       "bool")),
    (lambda x: F.index_add(x, 0, IDX, np.ones((2, 3))), ValueError, ("index_add index",
                                                                    "1 dimension")),
    (lambda x: F.index_add(x, 0, np.array([0]), np.ones((2, 3))), ValueError,
     ("index_add source", "(1, 3)")),
    (lambda x: F.index_add(x, 0, np.array([0]), np.ones((1, 3)), alpha="2"), TypeError,
     ("index_add alpha",)),
    (lambda x: F.scatter_add(x, 1, np.broadcast_to(np.int64(0), (2, 10**9)), x), ValueError,
     ("scatter_add index", "at most")),
])
def test_bad_arguments_are_named_and_change_nothing(call, exc, words):
    data = np.arange(1.0, 7.0).reshape(2, 3)
    x = mg.Tensor(data.copy(), requires_grad=True)
    with pytest.raises(exc) as info:
        call(x)
    for w in words:
        assert w in str(info.value), str(info.value)
    np.testing.assert_array_equal(x.data, data)
