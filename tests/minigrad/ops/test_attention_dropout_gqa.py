"""scaled_dot_product_attention's dropout_p and enable_gqa (docs/backward.md §39): the mask is
reproducible from its seed and the backward pass uses its own forward's mask, p = 0 is the
plain call bit for bit, dropout is unbiased; grouped heads equal the repeated heads; the
errors; then against PyTorch (skipped without torch): enable_gqa with torch's own, and
dropout through a composed torch reference fed the same mask. The op table's cases
(op_cases/attention.py) add the NumPy loop references and float64 gradchecks."""
from __future__ import annotations

from functools import partial

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import F

rng = np.random.default_rng(3941)
rn = partial(helpers.rn, rng)
sdpa = F.scaled_dot_product_attention


def _grads(call, arrays, cot):
    ts = [mg.Tensor(a.copy(), requires_grad=True) for a in arrays]
    out = call(*ts)
    out.backward(cot)
    return [out.data] + [t.grad for t in ts]


def test_the_same_seed_gives_the_same_mask_and_a_generator_advances():
    q, k, v = rn(2, 3, 4), rn(2, 6, 4), rn(2, 6, 3)
    a, b = (sdpa(q, k, v, dropout_p=0.5, rng=4).data for _ in range(2))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, sdpa(q, k, v, dropout_p=0.5, rng=5).data)
    gen = np.random.default_rng(4)
    first, second = (sdpa(q, k, v, dropout_p=0.5, rng=gen).data for _ in range(2))
    np.testing.assert_array_equal(first, a)  # a generator seeded 4 draws what the seed 4 does
    assert not np.array_equal(first, second)


def test_the_backward_pass_uses_the_mask_of_its_own_forward():
    q, k, v = rn(2, 2, 3, 4), rn(2, 2, 5, 4), rn(2, 2, 5, 3)
    cot = rn(2, 2, 3, 3)
    gen = np.random.default_rng(9)
    ts = [mg.Tensor(a.copy(), requires_grad=True) for a in (q, k, v)]
    out = sdpa(*ts, dropout_p=0.4, rng=gen)
    sdpa(q, k, v, dropout_p=0.4, rng=gen)  # draws another mask before the backward pass
    out.backward(cot)
    want = _grads(lambda *t: sdpa(*t, dropout_p=0.4, rng=9), (q, k, v), cot)
    for got, expected in zip([out.data] + [t.grad for t in ts], want, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_the_kept_weights_are_scaled_and_the_dropped_ones_pass_nothing_to_v():
    """One query, identity values: the output row is the weights after dropout, so the
    dropped ones are 0, the kept ones A/(1 - p); V's gradient is zero at dropped keys."""
    q, k = rn(1, 1, 4), rn(1, 8, 4)
    v = np.eye(8)[None]
    plain = sdpa(q, k, v).data
    vt = mg.Tensor(v.copy(), requires_grad=True)
    out = sdpa(q, k, vt, dropout_p=0.5, rng=2)
    kept = np.random.default_rng(2).random((1, 1, 8)) >= 0.5
    assert 0 < kept.sum() < 8
    np.testing.assert_allclose(out.data, np.where(kept, plain / 0.5, 0.0), rtol=1e-15, atol=0)
    out.backward(np.ones(out.shape))
    np.testing.assert_array_equal(vt.grad[0][~kept[0, 0]], 0.0)


def test_dropout_is_unbiased_over_many_masks():
    q, k, v = rn(1, 2, 3), rn(1, 4, 3), rn(1, 4, 2)
    p, n = 0.3, 4000
    gen = np.random.default_rng(17)
    mean = sum(sdpa(q, k, v, dropout_p=p, rng=gen).data for _ in range(n)) / n
    a = np.exp(q @ k.swapaxes(-1, -2) / np.sqrt(3))
    a /= a.sum(-1, keepdims=True)
    # the variance of one draw: sum_j a_j² v_j² p/(1-p); 5 standard errors (seeded: no flake)
    sd = np.sqrt((a[..., None] ** 2 * v[:, None] ** 2).sum(-2) * p / (1 - p) / n)
    assert np.all(np.abs(mean - a @ v) < 5 * sd), (mean, a @ v, sd)


@pytest.mark.parametrize("kw", [dict(dropout_p=0.0), dict(dropout_p=0), dict(rng=3),
                                dict(enable_gqa=False, dropout_p=0.0, rng=None)])
def test_no_dropout_is_the_plain_call_bit_for_bit(kw):
    q, k, v, m = rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 3), rn(3, 5)
    cot = rn(2, 3, 3)
    want = _grads(lambda *t: sdpa(*t, is_causal=True), (q, k, v, m), cot)
    got = _grads(lambda *t: sdpa(*t, is_causal=True, **kw), (q, k, v, m), cot)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_grouped_heads_equal_the_repeated_heads_and_sum_their_gradients():
    """K and V with H_q/H_k and H_q/H_v copies of each head (np.repeat along the heads) give
    the same output; the gradient of each shared head is the sum over its copies."""
    q, k, v = rn(2, 6, 3, 4), rn(2, 3, 5, 4), rn(2, 2, 5, 3)
    cot = rn(2, 6, 3, 3)
    got = _grads(lambda *t: sdpa(*t, enable_gqa=True), (q, k, v), cot)
    kr, vr = np.repeat(k, 2, axis=1), np.repeat(v, 3, axis=1)
    want = _grads(sdpa, (q, kr, vr), cot)
    tol = 64 * np.finfo(np.float64).eps
    np.testing.assert_allclose(got[0], want[0], rtol=tol, atol=tol)
    np.testing.assert_allclose(got[1], want[1], rtol=tol, atol=tol)
    np.testing.assert_allclose(got[2], want[2].reshape(2, 3, 2, 5, 4).sum(2), rtol=tol, atol=tol)
    np.testing.assert_allclose(got[3], want[3].reshape(2, 2, 3, 5, 3).sum(2), rtol=tol, atol=tol)


def test_float32_stays_float32_with_dropout_and_groups():
    q, k, v = (mg.Tensor(rn(*s).astype(np.float32), requires_grad=True)
               for s in ((2, 4, 3, 4), (2, 2, 5, 4), (2, 1, 5, 3)))
    out = sdpa(q, k, v, enable_gqa=True, dropout_p=0.2, rng=1)
    assert out.dtype == np.float32
    out.backward(np.ones(out.shape, np.float32))
    assert all(t.grad.dtype == np.float32 for t in (q, k, v))


@pytest.mark.parametrize("kw, shapes, error, words", [
    (dict(dropout_p=1.0), None, ValueError, ["dropout_p", "1.0", "[0, 1)"]),
    (dict(dropout_p=-0.1), None, ValueError, ["dropout_p", "-0.1"]),
    (dict(dropout_p=float("nan")), None, ValueError, ["dropout_p", "nan"]),
    (dict(dropout_p="0.1"), None, TypeError, ["dropout_p", "'0.1'"]),
    (dict(dropout_p=True), None, TypeError, ["dropout_p", "True"]),
    (dict(dropout_p=0.1, rng="seed"), None, TypeError, ["rng", "'seed'"]),
    (dict(dropout_p=0.1, rng=-1), None, TypeError, ["rng", "-1"]),
    (dict(rng=1.5), None, TypeError, ["rng", "1.5"]),
    (dict(enable_gqa=1), None, TypeError, ["enable_gqa", "1"]),
    (dict(enable_gqa=True), ((2, 3, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)), ValueError,
     ["3 query heads", "2 and 2 key and value heads", "divide"]),
    (dict(enable_gqa=True), ((2, 4, 3, 4), (2, 4, 5, 4), (2, 3, 5, 3)), ValueError,
     ["4 query heads", "4 and 3"]),
    (dict(enable_gqa=True), ((2, 2, 3, 4), (2, 4, 5, 4), (2, 4, 5, 3)), ValueError,
     ["2 query heads", "4 and 4"]),
    (dict(enable_gqa=True), ((3, 4), (5, 4), (5, 3)), ValueError,
     ["q: got shape (3, 4)", "at least 3 dimensions", "enable_gqa"]),
    (dict(enable_gqa=True), ((3, 4, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)), ValueError,
     ["leading dimensions that broadcast"]),
    (dict(enable_gqa=True, mask=np.ones((2, 3, 5), bool)), ((1, 4, 3, 4), (1, 2, 5, 4),
                                                           (1, 2, 5, 3)), ValueError,
     ["mask: got shape (2, 3, 5)", "(1, 4, 3, 5)"]),
])
def test_bad_arguments_name_themselves_and_change_nothing(kw, shapes, error, words):
    arrays = [rn(*s) for s in shapes or ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3))]
    copies = [a.copy() for a in arrays]
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    kw = dict(kw, rng=kw.get("rng", gen))
    with pytest.raises(error) as info:
        sdpa(*arrays, **kw)
    message = str(info.value)
    assert "scaled_dot_product_attention" in message
    assert all(w in message for w in words), message
    for a, b in zip(arrays, copies, strict=True):
        np.testing.assert_array_equal(a, b)
    assert gen.bit_generator.state == state  # nothing drawn before the arguments were checked


# ---- against PyTorch (skipped without torch) -----------------------------------------------
def _torch_composed(torch, q, k, v, kept, p, mask=None, is_causal=False):
    """torch's documented SDPA reference, heads repeated, with the given dropout mask."""
    k = k.repeat_interleave(q.shape[-3] // k.shape[-3], -3)
    v = v.repeat_interleave(q.shape[-3] // v.shape[-3], -3)
    scores = q @ k.transpose(-1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + mask if mask.dtype != torch.bool else \
            scores.masked_fill(~mask, float("-inf"))
    if is_causal:
        scores = scores.masked_fill(~torch.ones(scores.shape[-2:]).tril().bool(), float("-inf"))
    return torch.softmax(scores, -1) * torch.as_tensor(kept, dtype=q.dtype) / (1 - p) @ v


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mask_kind", ["none", "bool", "float-grad"])
def test_dropout_and_groups_match_a_composed_torch_reference(dtype, mask_kind):
    torch = pytest.importorskip("torch")
    gen = np.random.default_rng(3942)
    q, k, v = (gen.standard_normal(s).astype(dtype)
               for s in ((2, 4, 5, 3), (2, 2, 5, 3), (1, 1, 5, 2)))
    mask = None if mask_kind == "none" else gen.standard_normal((4, 1, 5)).astype(dtype)
    if mask_kind == "bool":
        mask = gen.random((5, 5)) > 0.3
        mask[:, 0] = True
    kept = np.random.default_rng(8).random((2, 4, 5, 5)) >= 0.35
    arrays = [q, k, v] + ([mask] if mask_kind == "float-grad" else [])
    ms = [mg.Tensor(a.copy(), requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    const = {"bool": mask, "none": None}.get(mask_kind)
    out = sdpa(*ms[:3], ms[3] if len(ms) > 3 else const, is_causal=True, enable_gqa=True,
               dropout_p=0.35, rng=8)
    t_mask = ts[3] if len(ts) > 3 else None if const is None else torch.tensor(const)
    tout = _torch_composed(torch, *ts[:3], kept, 0.35, t_mask, is_causal=True)
    cot = gen.standard_normal(out.shape).astype(dtype)
    out.backward(cot)
    tout.backward(torch.from_numpy(cot))
    tol = partial(helpers.assert_close, dtype=dtype, ulps=256)
    tol(out.data, tout.detach().numpy())
    for m, t in zip(ms, ts, strict=True):
        assert m.grad.dtype == dtype
        tol(m.grad, t.grad.numpy())
