"""sort, argsort, topk: the rules at ties and NaN, the result types, the refusals
(docs/backward.md §35). Values and gradients in general are the op table's
(op_cases/sort.py); here the points where an order has to be chosen."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.ops.sort import TopK

TIES = np.array([2.0, 1.0, 2.0, 0.5, 1.0, 2.0, -0.0, 0.0])
NANS = np.array([1.0, np.nan, 3.0, 3.0, np.nan, 0.0])


def _stable_descending(a):
    """The stable descending order by its definition: a key that ranks larger values first
    and, among equal ones, the lower position first (NaN the largest)."""
    key = [(0 if np.isnan(v) else 1, -v if not np.isnan(v) else 0, i) for i, v in enumerate(a)]
    return np.array([i for *_, i in sorted(key)])


@pytest.mark.parametrize("a", [TIES, NANS, np.array([3, 1, 3, 0, 1], np.uint8),
                               np.array([True, False, True])], ids=["ties", "nan", "uint8", "bool"])
def test_argsort_is_numpy_stable_order_both_ways(a):
    np.testing.assert_array_equal(F.argsort(a), np.argsort(a, kind="stable"))
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(F.argsort(a, descending=True), _stable_descending(a))
    else:  # integers: the definition with Python ints (no overflow in the negation)
        keyed = sorted(range(a.size), key=lambda i: (-int(a[i]), i))
        np.testing.assert_array_equal(F.argsort(a, descending=True), keyed)


def test_argsort_is_a_plain_int64_array_along_any_axis():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 0.0, -1.0]])
    for axis in (0, 1, -1, None):
        got = F.argsort(mg.Tensor(x, requires_grad=True), axis=axis)
        assert type(got) is np.ndarray and got.dtype == np.int64
        np.testing.assert_array_equal(got, np.argsort(x, axis=axis, kind="stable"))
    assert F.argsort(np.array(2.0)).shape == ()


def test_sort_values_put_nan_last_ascending_and_first_descending():
    np.testing.assert_array_equal(F.sort(NANS).data, [0.0, 1.0, 3.0, 3.0, np.nan, np.nan])
    np.testing.assert_array_equal(F.sort(NANS, descending=True).data,
                                  [np.nan, np.nan, 3.0, 3.0, 1.0, 0.0])


def test_sort_gradient_at_ties_follows_the_stable_permutation():
    """x = (2, 1, 2, 2): ascending positions (1, 0, 2, 3), descending (0, 2, 3, 1); each
    slot's cotangent lands on the element the stable order put there."""
    g = np.array([10.0, 20.0, 30.0, 40.0])
    x = mg.Tensor(np.array([2.0, 1.0, 2.0, 2.0]), requires_grad=True)
    F.sort(x).backward(g)
    np.testing.assert_array_equal(x.grad, [20.0, 10.0, 30.0, 40.0])
    x.grad = None
    F.sort(x, descending=True).backward(g)
    np.testing.assert_array_equal(x.grad, [10.0, 40.0, 20.0, 30.0])


def test_ties_agree_with_torch_stable_sort():
    torch = pytest.importorskip("torch")
    for a in (TIES, NANS):
        for desc in (False, True):
            want = torch.sort(torch.tensor(a), descending=desc, stable=True).indices.numpy()
            np.testing.assert_array_equal(F.argsort(a, descending=desc), want)
            np.testing.assert_array_equal(F.sort(a, descending=desc).data, a[want])


def test_topk_ties_take_the_lower_index_and_the_gradient_follows():
    x = mg.Tensor(np.array([1.0, 3.0, 3.0, 3.0, 2.0]), requires_grad=True)
    values, indices = F.topk(x, 2)
    np.testing.assert_array_equal(indices, [1, 2])
    values.backward(np.array([5.0, 7.0]))
    np.testing.assert_array_equal(x.grad, [0.0, 5.0, 7.0, 0.0, 0.0])
    _, smallest = F.topk(np.array([2.0, 0.0, 1.0, 0.0]), 3, largest=False)
    np.testing.assert_array_equal(smallest, [1, 3, 2])


def test_topk_where_torch_picks_other_tied_positions():
    """Same values as torch.topk; at ties torch's selection need not take the lowest
    index (torch 2.13 takes positions 1 and 3 here), so neither need the gradient."""
    torch = pytest.importorskip("torch")
    a = np.array([1.0, 3.0, 3.0, 3.0, 2.0])
    theirs = torch.topk(torch.tensor(a), 2)
    ours = F.topk(a, 2)
    np.testing.assert_array_equal(ours.values.data, theirs.values.numpy())
    np.testing.assert_array_equal(a[ours.indices], a[theirs.indices.numpy()])


def test_topk_result_is_a_named_tuple_of_a_tensor_and_int64_indices():
    x = mg.Tensor(np.array([[0.5, 2.0, -1.0], [4.0, 3.0, 5.0]]), requires_grad=True)
    result = F.topk(x, 2, axis=0)
    assert isinstance(result, TopK)
    assert result._fields == ("values", "indices")
    assert isinstance(result.values, mg.Tensor) and result.values.requires_grad
    assert type(result.indices) is np.ndarray and result.indices.dtype == np.int64
    np.testing.assert_array_equal(result.indices, [[1, 1, 1], [0, 0, 0]])
    unsorted = F.topk(np.array([1.0, 5.0, 2.0, 4.0]), 2, sorted=False)
    np.testing.assert_array_equal(unsorted.indices, [1, 3])  # the order of the positions
    np.testing.assert_array_equal(unsorted.values.data, [5.0, 4.0])


def test_empty_axes_and_k_zero():
    x = mg.Tensor(np.zeros((2, 0, 3)), requires_grad=True)
    out = F.sort(x, axis=1)
    assert out.shape == (2, 0, 3)
    out.backward(np.zeros((2, 0, 3)))
    assert x.grad.shape == (2, 0, 3)
    y = mg.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    values, indices = F.topk(y, 0)
    assert values.shape == (2, 0) and indices.shape == (2, 0)
    values.backward(np.zeros((2, 0)))
    np.testing.assert_array_equal(y.grad, np.zeros((2, 3)))


def test_integer_input_sorts_without_a_gradient():
    out = F.sort(np.array([3, -1, 2], np.int32))
    assert out.dtype == np.int32 and not out.requires_grad
    np.testing.assert_array_equal(out.data, [-1, 2, 3])


@pytest.mark.parametrize("call, exc, words", [
    (lambda x: F.sort(x, axis=2), np.exceptions.AxisError, ("sort axis", "2")),
    (lambda x: F.sort(x, axis=1.0), TypeError, ("sort axis",)),
    (lambda x: F.sort(x, descending=1), TypeError, ("sort descending",)),
    (lambda x: F.sort(x, dim=0), TypeError, ("sort", "axis=")),
    (lambda x: F.argsort(x, dim=0), TypeError, ("argsort", "axis=")),
    (lambda x: F.argsort(None), TypeError, ("argsort x", "None")),
    (lambda x: F.topk(x, 4), ValueError, ("topk k", "4", "[0, 3]")),
    (lambda x: F.topk(x, -1), ValueError, ("topk k", "-1")),
    (lambda x: F.topk(x, 2.0), TypeError, ("topk k",)),
    (lambda x: F.topk(x, 1, axis=None), TypeError, ("topk axis", "None")),
    (lambda x: F.topk(x, 1, dim=0), TypeError, ("topk", "axis=")),
    (lambda x: F.topk(x, 1, largest="yes"), TypeError, ("topk largest",)),
    (lambda x: F.topk(np.array(1.0), 0), ValueError, ("topk k", "[1, 1]")),
])
def test_bad_arguments_are_named_and_change_nothing(call, exc, words):
    data = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    x = mg.Tensor(data.copy(), requires_grad=True)
    with pytest.raises(exc) as info:
        call(x)
    for w in words:
        assert w in str(info.value), str(info.value)
    np.testing.assert_array_equal(x.data, data)


def test_median_is_the_lower_middle_element_and_its_gradient_goes_to_one_element():
    x = mg.Tensor(np.array([4.0, 1.0, 3.0, 2.0]), requires_grad=True)  # middle ones 2 and 3
    out = F.median(x)
    assert out.item() == 2.0  # np.median would say 2.5
    out.backward(np.array(5.0))
    np.testing.assert_array_equal(x.grad, [0.0, 0.0, 0.0, 5.0])
    # ties: the element the stable sort puts at (n - 1) // 2 (sorted 0, 1, 3, 3, 3: the 3 at
    # position 1, the first of them)
    t = mg.Tensor(np.array([1.0, 3.0, 3.0, 3.0, 0.0]), requires_grad=True)
    F.median(t).backward()
    np.testing.assert_array_equal(t.grad, [0.0, 1.0, 0.0, 0.0, 0.0])


def test_median_ties_over_all_elements_where_torch_shares_evenly():
    """torch.median(x) without a dim shares the gradient among tied medians; with a dim it
    takes the index it returns, which is ours."""
    torch = pytest.importorskip("torch")
    a = np.array([1.0, 3.0, 3.0, 3.0, 0.0])
    tx = torch.tensor(a, requires_grad=True)
    torch.median(tx).backward()
    np.testing.assert_allclose(tx.grad.numpy(), [0, 1 / 3, 1 / 3, 1 / 3, 0], rtol=1e-6)
    assert torch.median(torch.tensor(a)[None], dim=1).indices.item() == 1


def test_median_and_quantile_of_a_slice_with_nan_are_nan_with_the_gradient_on_its_first_nan():
    x = mg.Tensor(np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 2.0, 3.0, 1.0]]),
                  requires_grad=True)
    m = F.median(x, axis=1)
    np.testing.assert_array_equal(m.data, [np.nan, 2.0])
    m.backward(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(x.grad, [[0, 1, 0, 0], [0, 1, 0, 0]])
    x.grad = None
    q = F.quantile(x, np.array([0.3, 0.9]), axis=1)
    np.testing.assert_array_equal(q.data[:, 0], [np.nan, np.nan])
    np.testing.assert_allclose(q.data[:, 1], np.quantile(x.data[1], [0.3, 0.9]), rtol=1e-15)
    q.backward(np.array([[1.0, 0.0], [2.0, 0.0]]))
    np.testing.assert_array_equal(x.grad[0], [0.0, 3.0, 0.0, 0.0])


def test_quantile_gradient_splits_between_the_two_neighbours():
    """n = 5, q = 0.3: h = 1.2, so 0.8 of ḡ to the element sorted second, 0.2 to the third."""
    x = mg.Tensor(np.array([5.0, 1.0, 4.0, 2.0, 3.0]), requires_grad=True)
    out = F.quantile(x, 0.3)
    assert out.item() == pytest.approx(2.2, rel=1e-15)
    out.backward(np.array(10.0))
    np.testing.assert_allclose(x.grad, [0.0, 0.0, 0.0, 8.0, 2.0], rtol=1e-14)


@pytest.mark.parametrize("call, exc, words", [
    (lambda x: F.median(np.zeros((2, 0)), axis=1), ValueError, ("median x", "empty")),
    (lambda x: F.median(x, axis=(0, 1)), TypeError, ("median axis",)),
    (lambda x: F.median(x, dim=0), TypeError, ("median", "axis=")),
    (lambda x: F.quantile(x, 1.5), ValueError, ("quantile q", "1.5", "[0, 1]")),
    (lambda x: F.quantile(x, np.array([0.5, np.nan])), ValueError, ("quantile q", "nan")),
    (lambda x: F.quantile(x, np.ones((2, 2)) / 2), TypeError, ("quantile q", "(2, 2)")),
    (lambda x: F.quantile(x, None), TypeError, ("quantile q", "None")),
    (lambda x: F.quantile(x, 0.5, keepdims=1), TypeError, ("quantile keepdims",)),
    (lambda x: F.quantile(np.broadcast_to(0.0, (2**15, 2**15, 1)), np.full(2**6, 0.5),
                          axis=2), ValueError, ("quantile q", "at most")),
])
def test_bad_order_statistic_arguments_are_named(call, exc, words):
    x = mg.Tensor(np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]]), requires_grad=True)
    with pytest.raises(exc) as info:
        call(x)
    for w in words:
        assert w in str(info.value), str(info.value)
