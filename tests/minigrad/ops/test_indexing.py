"""The documented rules of the issue-14 indexing and shape ops, with hand-derived values:
scatter-add in take_along_axis, last-write-wins in put_along_axis (values and gradients),
tile/repeat sums, one_hot, and the errors for bad arguments (docs/backward.md §29, §30). An
offset past the array is an empty diagonal (or a full / empty triangle) in diagonal, trace,
tril and triu, as NumPy gives for any offset it can hold; 10**30 must not leak NumPy's
OverflowError ("Python int too large to convert to C long")."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.ops.indexing import IndexRangeError


def _grad(fn, *arrays, cot):
    ts = [mg.Tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(np.asarray(cot, dtype=np.float64))
    return out, [t.grad for t in ts]


def test_take_along_axis_repeated_indices_add_up():
    a = np.arange(6.0).reshape(2, 3)
    idx = np.array([[2, 2, 0], [1, 1, 1]])
    out, (g,) = _grad(lambda t: F.take_along_axis(t, idx, 1), a, cot=[[1, 2, 4], [1, 10, 100]])
    np.testing.assert_array_equal(out.data, [[2, 2, 0], [4, 4, 4]])
    np.testing.assert_array_equal(g, [[4, 0, 3], [0, 111, 0]])


def test_put_along_axis_last_write_wins_in_value_and_gradient():
    """Row 0 writes 10, 20, 30 to columns 1, 1, 3: column 1 keeps 20 (the later write), so
    value 10 gets no gradient; column 1 and 3 of a lose theirs."""
    a = np.arange(8.0).reshape(2, 4)
    idx = np.array([[1, 1, 3], [0, 2, 0]])
    values = np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])
    cot = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    out, (ga, gv) = _grad(lambda t, v: F.put_along_axis(t, idx, v, 1), a, values, cot=cot)
    np.testing.assert_array_equal(out.data, [[0, 20, 2, 30], [60, 5, 50, 7]])
    np.testing.assert_array_equal(ga, [[1, 0, 3, 0], [0, 6, 0, 8]])
    np.testing.assert_array_equal(gv, [[0, 2, 4], [0, 7, 5]])
    # the NumPy function it follows (in place) agrees on the value
    expected = a.copy()
    np.put_along_axis(expected, idx, values, 1)
    np.testing.assert_array_equal(out.data, expected)
    np.testing.assert_array_equal(a, np.arange(8.0).reshape(2, 4))  # a itself is untouched


def test_put_along_axis_broadcast_value_collects_only_surviving_writes():
    a = np.zeros((1, 3))
    idx = np.array([[0, 0, 2, 0]])  # the value is written 4 times; 2 writes survive
    out, (ga, gv) = _grad(lambda t, v: F.put_along_axis(t, idx, v, 1), a, [[7.0]],
                          cot=[[1.0, 2.0, 4.0]])
    np.testing.assert_array_equal(out.data, [[7, 0, 7]])
    np.testing.assert_array_equal(gv, [[1.0 + 4.0]])
    np.testing.assert_array_equal(ga, [[0, 2, 0]])


def test_a_vjp_that_credits_every_write_is_caught():
    """The check that guards the rule can fail: a values-VJP that sends ḡ to every write,
    overwritten ones included (what torch.scatter's backward does), fails gradcheck on
    repeated indices."""
    idx = np.array([[1, 1, 3]])

    @mg.op
    def every_write(a, v):
        out = F.put_along_axis(a, idx, v, 1).data
        return out, (None, lambda g: np.take_along_axis(g, idx, 1))

    x = np.random.default_rng(0).standard_normal((1, 3))
    with pytest.raises(mg.GradcheckError):
        mg.gradcheck(lambda v: every_write(np.zeros((1, 4)), v), [x])
    mg.gradcheck(lambda v: F.put_along_axis(np.zeros((1, 4)), idx, v, 1), [x])


def test_put_along_axis_keeps_float32_with_a_python_number():
    a = mg.Tensor(np.ones((2, 3), np.float32), requires_grad=True)
    out = F.put_along_axis(a, np.array([[0], [2]]), 0.5, 1)
    assert out.dtype == np.float32
    out.backward(np.ones((2, 3), np.float32))
    assert a.grad.dtype == np.float32


@pytest.mark.parametrize("fn", [
    lambda a: F.take_along_axis(a, np.array([[0, 3]]), 1),
    lambda a: F.take_along_axis(a, np.array([[0, -4]]), 1),
    lambda a: F.put_along_axis(a, np.array([[3]]), 1.0, 1),
])
def test_out_of_range_indices_are_refused_by_name(fn):
    with pytest.raises(IndexRangeError, match="indices: got (3|-4) along an axis of length 3"):
        fn(np.zeros((2, 3)))
    assert issubclass(IndexRangeError, IndexError) and issubclass(IndexRangeError, ValueError)


def test_take_along_axis_bad_indices_and_axis():
    a = np.zeros((2, 3))
    with pytest.raises(TypeError, match="take_along_axis indices: got float64"):
        F.take_along_axis(a, np.array([[0.0]]), 1)
    with pytest.raises(ValueError, match="take_along_axis indices: got 1 dimensions"):
        F.take_along_axis(a, np.array([0]), 1)
    with pytest.raises(np.exceptions.AxisError, match="take_along_axis axis: got 2"):
        F.take_along_axis(a, np.array([[0]]), 2)
    with pytest.raises(TypeError, match="take_along_axis axis"):
        F.take_along_axis(a, np.array([[0]]), 1.0)
    with pytest.raises(ValueError, match="put_along_axis values: got shape \\(3,\\)"):
        F.put_along_axis(a, np.array([[0], [1]]), np.ones(3), 1)


def test_tile_and_repeat_gradients_sum_the_copies():
    _, (g,) = _grad(lambda t: F.tile(t, (2, 3)), [[1.0, 2.0]], cot=np.arange(12.0).reshape(2, 6))
    # copy (r, c) of element j sits at column 2c + j of row r
    np.testing.assert_array_equal(g, [[0 + 2 + 4 + 6 + 8 + 10, 1 + 3 + 5 + 7 + 9 + 11]])
    _, (g,) = _grad(lambda t: F.repeat(t, np.array([0, 3, 1])), [5.0, 6.0, 7.0],
                    cot=[1.0, 2.0, 4.0, 8.0])
    np.testing.assert_array_equal(g, [0.0, 7.0, 8.0])


@pytest.mark.parametrize("call,error,match", [
    (lambda a: F.repeat(a, -1), ValueError, "repeat repeats: got -1"),
    (lambda a: F.repeat(a, np.array([1, 2]), 1), ValueError, "got 2 counts for an axis of length 3"),
    (lambda a: F.repeat(a, np.array([1.5]), 0), TypeError, "repeat repeats"),
    (lambda a: F.tile(a, (2, -1)), ValueError, "tile reps: got -1"),
    (lambda a: F.roll(a, 1.5, 0), TypeError, "roll shift"),
    (lambda a: F.roll(a, (1, 2), None), ValueError, "roll shift: got \\(1, 2\\) with axis=None"),
    (lambda a: F.roll(a, (1, 2, 3), (0, 1)), ValueError, "one shift per axis"),
    (lambda a: F.flip(a, 2), np.exceptions.AxisError, "flip axis: got 2"),
    (lambda a: F.flip(a, (0, 0)), ValueError, "repeated axes"),
    (lambda a: F.moveaxis(a, (0, 1), 0), ValueError, "as many destinations as sources"),
    (lambda a: F.tril(a[0], 0), ValueError, "tril a: got shape \\(3,\\)"),
    (lambda a: F.triu(a, 0.5), TypeError, "triu k"),
    (lambda a: F.diagonal(a, 0, 1, -1), ValueError, "diagonal axis1, axis2: got 1 and -1"),
    (lambda a: F.trace(a[0]), ValueError, "trace a: got shape \\(3,\\)"),
])
def test_bad_arguments_name_themselves(call, error, match):
    with pytest.raises(error, match=match):
        call(mg.Tensor(np.zeros((2, 3)), requires_grad=True))


def test_swapaxes_refuses_an_axis_out_of_range():
    with pytest.raises(np.exceptions.AxisError):
        F.swapaxes(np.zeros((2, 3)), 0, 2)


def test_one_hot_values_dtype_and_no_graph():
    labels = np.array([[2, 0], [1, 2]])
    out = F.one_hot(labels)
    assert out.dtype == np.int64 and out.shape == (2, 2, 3) and not out.requires_grad
    np.testing.assert_array_equal(out.data, np.eye(3, dtype=np.int64)[labels])
    f32 = F.one_hot(mg.Tensor(labels), 4, dtype=np.float32)
    assert f32.dtype == np.float32 and f32.shape == (2, 2, 4)
    np.testing.assert_array_equal(f32.data.argmax(-1), labels)
    np.testing.assert_array_equal(F.one_hot([1, 0], 2).data, [[0, 1], [1, 0]])


@pytest.mark.parametrize("labels,kw,error,match", [
    (np.array([0, 3]), {"num_classes": 3}, IndexRangeError, "labels: got 3; expected labels in \\[0, 3\\)"),
    (np.array([0, -1]), {}, IndexRangeError, "labels: got -1"),
    (np.array([0.0, 1.0]), {}, TypeError, "one_hot labels: got float64"),
    (np.array([True]), {}, TypeError, "one_hot labels: got bool"),
    (np.array([], dtype=int), {}, ValueError, "num_classes: got -1 with no labels"),
    (np.array([1]), {"num_classes": 0}, ValueError, "num_classes: got 0"),
    (np.array([1]), {"num_classes": -2}, ValueError, "num_classes: got -2"),
    (np.array([1]), {"num_classes": 2.0}, TypeError, "num_classes"),
    (np.array([1]), {"dtype": "U3"}, TypeError, "one_hot dtype"),
    (np.zeros(2 ** 10, dtype=int), {"num_classes": 2 ** 19}, ValueError, "at most"),
])
def test_one_hot_refuses_bad_labels(labels, kw, error, match):
    with pytest.raises(error, match=match):
        F.one_hot(labels, **kw)


@pytest.mark.parametrize("labels,num_classes", [(np.array([0, 3, 1, 3]), -1),
                                                (np.array([[2, 0], [1, 1]]), 5),
                                                (np.array(2), 3)])
def test_one_hot_matches_torch(labels, num_classes):
    torch = pytest.importorskip("torch")
    got = F.one_hot(labels, num_classes)
    want = torch.nn.functional.one_hot(torch.as_tensor(labels), num_classes).numpy()
    assert got.dtype == want.dtype == np.int64 and not got.requires_grad
    np.testing.assert_array_equal(got.data, want)


# ---- sizes checked before the data is scanned -------------------------------------------
def _huge_view(shape, bad):
    """A broadcast view of ``shape`` (far more elements than the size bound) holding one
    out-of-range value: refused for its size, before anything scans it for the value."""
    base = np.zeros((1,) * len(shape), np.intp)
    base[...] = bad
    return np.broadcast_to(base, shape)


@pytest.mark.parametrize("call", [
    lambda: F.take_along_axis(mg.tensor(np.ones((2, 3))), _huge_view((1, 2**29), 9),
                              axis=1),
    lambda: F.put_along_axis(mg.tensor(np.ones((2, 3))), _huge_view((1, 2**29), 9), 1.0,
                             axis=1),
], ids=["take_along_axis", "put_along_axis"])
def test_along_axis_checks_the_broadcast_size_before_scanning_indices(call):
    with pytest.raises(ValueError, match="indices.*elements to allocate"):
        call()


def test_one_hot_checks_the_size_before_scanning_labels():
    with pytest.raises(ValueError, match="num_classes.*elements"):
        F.one_hot(_huge_view((2**29,), -1), 2)
    with pytest.raises(ValueError, match="num_classes.*elements"):
        F.one_hot(np.array([0, 1]), 2**40)  # neither scans nor allocates


def test_a_long_transpose_error_is_shown_short():
    with pytest.raises(ValueError) as info:
        F.transpose(mg.tensor(np.ones((2, 3))), tuple(range(10**6)))
    assert "1000000 axes" in str(info.value) and len(str(info.value)) < 400


# ---- offsets past the array -----------------------------------------------------------------
A = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("k", [10**30, -10**30, 2**63, -(2**63) - 1, 4, -3, 5, -4])
def test_a_huge_offset_acts_as_one_just_past_the_array(k):
    near = 5 if k > 0 else -4  # any offset past the 3 x 4 array behaves the same
    np.testing.assert_array_equal(F.diagonal(A, k).data, np.diagonal(A, near))
    np.testing.assert_array_equal(F.trace(A, k).data, np.trace(A, near))
    np.testing.assert_array_equal(F.tril(A, k).data, np.tril(A, near))
    np.testing.assert_array_equal(F.triu(A, k).data, np.triu(A, near))
    t = mg.Tensor(A.copy(), requires_grad=True)
    F.sum(F.tril(t, k)).backward()
    np.testing.assert_array_equal(t.grad, np.tril(np.ones_like(A), near))
