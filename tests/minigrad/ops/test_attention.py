"""scaled_dot_product_attention's rules and errors, and self_attention's is_causal, without
torch: causal self_attention against SDPA on the split heads, bool masks against the
equivalent additive ones, bit-identical results across thread counts (docs/backward.md
§12, §32)."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, parallel
from minigrad.ops.attention import attention_weights

rng = np.random.default_rng(3234)


def rn(*shape):
    return rng.standard_normal(shape)


def _heads(x, H):
    """(B, T, 3D) -> three (B, H, T, d) Tensors, composed from primitive ops."""
    B, T, width = x.shape
    D = width // 3
    return [F.transpose(F.reshape(x[:, :, i * D:(i + 1) * D], (B, T, H, D // H)), (0, 2, 1, 3))
            for i in range(3)]


@pytest.mark.parametrize("B,T,D,H,scale", [(2, 5, 6, 2, None), (1, 4, 6, 3, 0.7)])
def test_causal_self_attention_is_sdpa_with_is_causal(B, T, D, H, scale):
    x0 = rn(B, T, 3 * D)
    cot = rn(B, T, D)
    x = mg.Tensor(x0.copy(), requires_grad=True)
    y = F.self_attention(x, H, scale=scale, is_causal=True)
    y.backward(cot)
    x2 = mg.Tensor(x0.copy(), requires_grad=True)
    o = F.scaled_dot_product_attention(*_heads(x2, H), is_causal=True, scale=scale)
    y2 = F.reshape(F.transpose(o, (0, 2, 1, 3)), (B, T, D))
    y2.backward(cot)
    tol = 64 * np.finfo(np.float64).eps
    np.testing.assert_allclose(y.data, y2.data, rtol=tol, atol=tol)
    np.testing.assert_allclose(x.grad, x2.grad, rtol=tol, atol=tol)
    # causal: the first query reads only the first key, so its output is v_0 itself
    v0 = x0[:, 0, 2 * D:]
    np.testing.assert_allclose(y.data[:, 0], v0, rtol=tol, atol=tol)


def test_non_causal_self_attention_is_unchanged_bit_for_bit():
    x = rn(3, 6, 12)
    np.testing.assert_array_equal(F.self_attention(x, 2).data,
                                  F.self_attention(x, 2, is_causal=False).data)
    w = attention_weights(x, 2)
    assert np.all(w > 0)


def test_causal_attention_weights_are_lower_triangular_rows_of_one():
    w = attention_weights(rn(2, 5, 12), 2, is_causal=True)
    upper = np.triu(np.ones((5, 5), bool), 1)
    assert np.all(w[..., upper] == 0) and np.all(w[..., ~upper] > 0)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_causal_self_attention_matches_one_thread_bit_for_bit(monkeypatch, dtype):
    monkeypatch.setattr(parallel, "PARALLEL_ELEMENTS", 1 << 15)
    before = parallel.get_num_threads()
    x0 = (2 * rn(5, 97, 3 * 24)).astype(dtype)
    cot = rn(5, 97, 24).astype(dtype)
    results = []
    try:
        for n in (1, 2, 3):
            parallel.set_num_threads(n)
            x = mg.Tensor(x0.copy(), requires_grad=True)
            y = F.self_attention(x, 2, is_causal=True)
            y.backward(cot)
            results.append((y.data, x.grad))
    finally:
        parallel.set_num_threads(before)
    for y, g in results[1:]:
        np.testing.assert_array_equal(y, results[0][0])
        np.testing.assert_array_equal(g, results[0][1])


def test_bool_mask_equals_the_additive_mask_of_zeros_and_minus_infinity():
    q, k, v = rn(2, 3, 4), rn(2, 6, 4), rn(2, 6, 3)
    keep = rng.random((2, 3, 6)) > 0.5
    keep[:, :, 2] = True
    cot = rn(2, 3, 3)
    grads = []
    for mask in (keep, np.where(keep, 0.0, -np.inf)):
        ts = [mg.Tensor(a.copy(), requires_grad=True) for a in (q, k, v)]
        out = F.scaled_dot_product_attention(*ts, mask)
        out.backward(cot)
        grads.append([out.data] + [t.grad for t in ts])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-15, atol=1e-15)


def test_additive_mask_gradient_is_zero_at_minus_infinity_and_sums_over_broadcast():
    q, k, v = rn(3, 2, 4), rn(3, 5, 4), rn(3, 5, 2)
    m0 = rn(1, 5)
    m0[0, 3] = -np.inf
    m = mg.Tensor(m0, requires_grad=True)
    out = F.scaled_dot_product_attention(q, k, v, m)
    out.backward(rn(*out.shape))
    assert m.grad.shape == (1, 5) and m.grad[0, 3] == 0.0
    # the weights of every row sum to 1, so the mask's gradient sums to 0 over the keys
    assert abs(m.grad.sum()) < 1e-13


def test_float32_inputs_with_a_float64_mask_stay_float32():
    q, k, v = (mg.Tensor(rn(2, 3, 4).astype(np.float32), requires_grad=True) for _ in range(3))
    mask = mg.Tensor(rn(3, 3), requires_grad=True)
    out = F.scaled_dot_product_attention(q, k, v, mask)
    assert out.dtype == np.float32
    out.backward(np.ones(out.shape, np.float32))
    assert q.grad.dtype == np.float32 and mask.grad.dtype == np.float64


def test_attn_mask_is_torchs_name_for_mask():
    q, k, v = rn(2, 4), rn(3, 4), rn(3, 2)
    keep = np.array([[True, False, True]] * 2)
    np.testing.assert_array_equal(F.scaled_dot_product_attention(q, k, v, keep).data,
                                  F.scaled_dot_product_attention(q, k, v, attn_mask=keep).data)


def test_integer_inputs_compute_in_float64():
    out = F.scaled_dot_product_attention(np.ones((2, 3), int), np.ones((4, 3), int),
                                         np.arange(8).reshape(4, 2))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.data, [[3.0, 4.0]] * 2, rtol=1e-15)


@pytest.mark.parametrize("call,error,match", [
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, np.ones((3, 5), bool),
                                                    is_causal=True),
     ValueError, "is_causal: got True with a mask"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, np.ones((3, 5), bool),
                                                    attn_mask=np.ones((3, 5), bool)),
     TypeError, "both mask and attn_mask"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, np.ones((3, 5), int)),
     TypeError, "mask: got dtype int64"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, np.ones((3, 4), bool)),
     ValueError, "mask: got shape \\(3, 4\\)"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, np.ones((3, 3, 5), bool)),
     ValueError, "mask: got shape \\(3, 3, 5\\)"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k[..., :3], v),
     ValueError, "expected \\(..., L, E\\), \\(..., S, E\\)"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v[:, :4]),
     ValueError, "expected \\(..., L, E\\), \\(..., S, E\\)"),
    (lambda q, k, v: F.scaled_dot_product_attention(q[0, 0], k, v),
     ValueError, "q: got shape \\(4,\\)"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k[:1].repeat(3, 0), v),
     ValueError, "leading dimensions that broadcast"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=float("nan")),
     ValueError, "scale: got nan"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=1),
     TypeError, "is_causal: got 1"),
    (lambda q, k, v: F.self_attention(np.zeros((1, 2, 6)), 1, is_causal="yes"),
     TypeError, "self_attention is_causal"),
])
def test_bad_arguments_name_themselves(call, error, match):
    with pytest.raises(error, match=match):
        call(rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2))
