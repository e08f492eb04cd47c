"""log_softmax and cross_entropy give the same bits as their plain NumPy formulas.

The row path of ``fused.log_softmax_array`` takes the row max by ``rowwise.row_max`` and
the sum by ``np.add.reduce``, and cross_entropy gathers the picked log-probabilities by plain
indexing: claimed bit-identical to ``x - np.max(x, initial=-inf)`` then ``np.log(np.sum(
np.exp(.)))``, and to ``np.take_along_axis``, which is what they replaced (the max and the
gather are exact, and ``np.sum`` is ``np.add.reduce``). Checked here bit for bit, values and
gradients, on every float dtype, NaN, ±inf, huge values, empty and strided arrays, 1-D to
3-D logits, and each cross_entropy option."""
import itertools

import numpy as np
import pytest

from minigrad import F, Tensor


def plain_log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    if not shifted.size:
        return shifted
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def plain_cross_entropy(x, labels):
    """The plain path (labels, no weight, nothing ignored, no smoothing), mean."""
    lsm = plain_log_softmax(x, -1)
    picked = np.take_along_axis(lsm, labels[..., None], axis=-1)[..., 0]
    return np.sum(-picked) / picked.size


def _logits(shape, dtype, kind, seed):
    x = np.random.default_rng(seed).standard_normal(shape) * 3
    if x.size:
        if kind == "nan":
            x.flat[0] = np.nan
        elif kind == "inf":
            x.flat[x.size // 2] = np.inf
        elif kind == "-inf":
            x[..., 0] = -np.inf
        elif kind == "huge":
            x *= float(np.finfo(dtype).max) / (2 * np.abs(x[np.isfinite(x)]).max())
    return x.astype(dtype)


SHAPES = [(4, 3), (7, 40), (2, 5, 3), (1, 1), (6, 32), (3, 33), (5,), (0, 3), (2, 0, 4)]
KINDS = ["plain", "nan", "inf", "-inf", "huge"]


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape, kind", list(itertools.product(SHAPES, KINDS)))
def test_log_softmax_is_the_plain_formula_bit_for_bit(shape, kind, dtype):
    x = _logits(shape, dtype, kind, len(shape))
    for axis in range(-len(shape), len(shape)):
        with np.errstate(all="ignore"):
            got = F.log_softmax(Tensor(x), axis=axis).data
            want = plain_log_softmax(x, axis)
        _same_bits(got, want)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("view", ["contiguous", "strided", "transposed"])
@pytest.mark.parametrize("kind", KINDS)
def test_cross_entropy_and_its_gradient_are_the_plain_formulas_bit_for_bit(kind, view, dtype):
    base = _logits((4, 6, 10), dtype, kind, 7)
    x = {"contiguous": base, "strided": base[:, :, ::2],
         "transposed": base.transpose(1, 0, 2)}[view]
    labels = np.random.default_rng(8).integers(0, x.shape[-1], x.shape[:-1])
    xt = Tensor(x, requires_grad=True)
    with np.errstate(all="ignore"):
        loss = F.cross_entropy(xt, labels)
        loss.backward()
        want = plain_cross_entropy(x, labels)
        # softmax - onehot, over the number of rows: the plain path's gradient (section 11)
        p = np.exp(plain_log_softmax(x, -1))
        np.put_along_axis(p, labels[..., None],
                          np.take_along_axis(p, labels[..., None], -1) - 1.0, -1)
        p = p * (1.0 / labels.size)
    _same_bits(loss.data, np.asarray(want).astype(dtype))
    assert xt.grad.dtype == dtype
    np.testing.assert_array_equal(xt.grad, p.astype(dtype))


@pytest.mark.parametrize("label_dtype", [np.int64, np.uint8, np.uint64, np.int32])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 10), (3, 5, 7), (1, 1), (9,)])
def test_the_plain_case_shortcut_gives_the_general_paths_bits(shape, dtype, label_dtype):
    # cross_entropy answers integer labels, mean, no weight and nothing ignored in a shortcut;
    # a NumPy integer ignore_index (the same value) takes the general path
    x = _logits(shape, dtype, "plain", 11)
    labels = np.random.default_rng(12).integers(0, shape[-1], shape[:-1]).astype(label_dtype)
    results = []
    for ignore_index in (-100, np.int64(-100)):
        xt = Tensor(x, requires_grad=True)
        loss = F.cross_entropy(xt, labels, ignore_index=ignore_index)
        loss.backward(np.asarray(0.37, dtype=dtype))  # a cotangent other than 1
        results.append((loss.data, xt.grad))
    (v1, g1), (v2, g2) = results
    _same_bits(v1, v2)
    _same_bits(g1, g2)
