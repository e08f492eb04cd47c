"""scaled_dot_product_attention's rules and errors, and self_attention's is_causal: causal
self_attention against SDPA on the split heads, bool masks against the equivalent additive
ones, bit-identical results across thread counts (docs/backward.md §12, §31); then both
against PyTorch autograd for every mask kind (those tests skip without torch). self_attention
against the same function composed from primitive ops (values and gradients, float64, to
~1e-12), and attention_weights as the softmax it uses."""
from __future__ import annotations

from functools import partial

import helpers
import numpy as np
import pytest
import scipy.special as sp
from helpers import assert_same_function, c_self_attention

import minigrad as mg
from minigrad import F
from minigrad.ops.attention import attention_weights
from minigrad.runtime import parallel

rng = np.random.default_rng(3234)
rn = partial(helpers.rn, rng)


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
def test_causal_self_attention_matches_one_thread_bit_for_bit(threads, monkeypatch, dtype):
    monkeypatch.setattr(parallel, "PARALLEL_ELEMENTS", 1 << 15)
    x0 = (2 * rn(5, 97, 3 * 24)).astype(dtype)
    cot = rn(5, 97, 24).astype(dtype)
    results = []
    for n in (1, 2, 3):
        threads(n)  # the fixture restores the thread count after the test
        x = mg.Tensor(x0.copy(), requires_grad=True)
        y = F.self_attention(x, 2, is_causal=True)
        y.backward(cot)
        results.append((y.data, x.grad))
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
    for a, b in zip(*grads, strict=True):
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


@pytest.mark.parametrize("L, S", [(4, 4), (3, 5), (5, 3)])
def test_a_mask_and_is_causal_apply_both(L, S):
    """Query i reads key j where the mask keeps it AND j <= i: the bool mask is ANDed with
    the causal one, a float mask is added to the scores the causal mask leaves (a causally
    hidden key stays hidden whatever its mask value), as torch 2.13's CPU flash kernel
    computes it."""
    gen = np.random.default_rng(11)
    q, k, v = gen.standard_normal((2, L, 3)), gen.standard_normal((2, S, 3)), gen.standard_normal((2, S, 2))
    causal = np.tri(L, S, dtype=bool)
    keep = gen.random((2, L, S)) > 0.4
    keep[0, 0, 0] = False  # query 0 of batch 0 reads nothing: key 0 is its only causal key
    both = F.scaled_dot_product_attention(q, k, v, keep, is_causal=True)
    np.testing.assert_array_equal(both.data,
                                  F.scaled_dot_product_attention(q, k, v, keep & causal).data)
    np.testing.assert_array_equal(both.data[0, 0], 0.0)
    bias = gen.standard_normal((L, S))
    bias[0, -1] = np.inf  # hidden by the causal mask (S > 1 > 0): no effect, no nan
    both = F.scaled_dot_product_attention(q, k, v, bias, is_causal=True)
    alone = F.scaled_dot_product_attention(q, k, v, np.where(causal, bias, -np.inf))
    np.testing.assert_allclose(both.data, alone.data, rtol=1e-15, atol=1e-15)
    bias[0, -1] = 0.5
    report = mg.gradcheck(
        lambda *t: F.scaled_dot_product_attention(*t, is_causal=True), [q, k, v, bias])
    assert report.ok and len(report.inputs) == 4


@pytest.mark.parametrize("call,error,match", [
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


# ---- against PyTorch autograd (skipped without torch) ----------------------------------------
# Every mask kind (none, bool, additive float constant, additive float that requires grad,
# broadcast over leading dimensions), L != S both ways, causal (upper-left aligned) for
# L < S, L = S and L > S, fully masked rows (bool all False, float all -inf: torch 2.13's
# CPU math backend returns zeros and zero gradients there), float64 and float32 with
# dtype-derived tolerances.
_trng = np.random.default_rng(3233)


def _trn(*shape):
    return np.asarray(_trng.standard_normal(shape))


def _torch():
    """torch and torch.nn.functional, or a skip: the tests above run without torch."""
    torch = pytest.importorskip("torch")
    return torch, torch.nn.functional


def tolerance(dtype, scale=1.0):
    """A few hundred ulps of the dtype, times the size of the values compared."""
    return 256 * np.finfo(dtype).eps * max(1.0, scale)


_keep = _trng.random((2, 1, 3, 5)) > 0.5
_keep[..., 0] = True
_dead = _keep.copy()
_dead[0, 0, 1] = False  # one fully masked row in the first batch
_dead[1, 0, 2] = False
_neg_inf = np.where(_dead, _trn(2, 1, 3, 5), -np.inf)

CASES = {  # label: (q, k, v, mask or None, mask differentiated, keywords)
    "plain-L3-S5": (_trn(2, 3, 4), _trn(2, 5, 4), _trn(2, 5, 2), None, False, {}),
    "plain-L5-S2-scale": (_trn(2, 5, 3), _trn(2, 2, 3), _trn(2, 2, 4), None, False,
                          {"scale": 0.4}),
    "heads-bcast-kv": (_trn(2, 2, 4, 3), _trn(1, 2, 3, 3), _trn(2, 1, 3, 5), None, False, {}),
    "bool": (_trn(2, 2, 3, 4), _trn(2, 2, 5, 4), _trn(2, 2, 5, 3), _keep, False, {}),
    "bool-dead-rows": (_trn(2, 2, 3, 4), _trn(2, 2, 5, 4), _trn(2, 2, 5, 3), _dead, False, {}),
    "float-const": (_trn(2, 3, 4), _trn(2, 5, 4), _trn(2, 5, 2), _trn(3, 5), False, {}),
    "float-grad": (_trn(2, 3, 4), _trn(2, 5, 4), _trn(2, 5, 2), _trn(3, 5), True, {}),
    "float-grad-bcast": (_trn(2, 2, 4, 3), _trn(2, 2, 2, 3), _trn(2, 2, 2, 3), _trn(2, 1, 1, 2),
                         True, {}),
    "float-neg-inf-dead-rows": (_trn(2, 2, 3, 4), _trn(2, 2, 5, 4), _trn(2, 2, 5, 3), _neg_inf,
                                False, {}),
    "causal-L4-S4": (_trn(2, 4, 3), _trn(2, 4, 3), _trn(2, 4, 2), None, False, {"is_causal": True}),
    "causal-L3-S5": (_trn(2, 3, 3), _trn(2, 5, 3), _trn(2, 5, 2), None, False, {"is_causal": True}),
    "causal-L5-S2": (_trn(2, 5, 3), _trn(2, 2, 3), _trn(2, 2, 2), None, False, {"is_causal": True}),
    # a mask with is_causal: torch 2.13 applies both in its CPU flash kernel, which it takes for
    # 4-d inputs with E = Ev and a mask that needs no gradient (its math kernel refuses)
    "bool-and-causal-L4-S4": (_trn(2, 2, 4, 3), _trn(2, 2, 4, 3), _trn(2, 2, 4, 3),
                              _trng.random((2, 1, 4, 4)) > 0.4, False, {"is_causal": True}),
    "bool-and-causal-L3-S5": (_trn(2, 2, 3, 4), _trn(2, 2, 5, 4), _trn(2, 2, 5, 4),
                              _trng.random((3, 5)) > 0.4, False, {"is_causal": True}),
    "float-and-causal-L5-S3": (_trn(2, 2, 5, 4), _trn(2, 2, 3, 4), _trn(2, 2, 3, 4), _trn(5, 3),
                               False, {"is_causal": True}),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("label", list(CASES))
def test_sdpa_matches_torch(label, dtype):
    torch, TF = _torch()
    q, k, v, mask, mask_grad, kw = CASES[label]
    q, k, v = (x.astype(dtype) for x in (q, k, v))
    if mask is not None and mask.dtype.kind == "f":
        mask = mask.astype(dtype)
    mts = [mg.Tensor(x.copy(), requires_grad=True) for x in (q, k, v)]
    tts = [torch.tensor(x, requires_grad=True) for x in (q, k, v)]
    m_mask = t_mask = None
    if mask is not None:
        m_mask = mg.Tensor(mask.copy(), requires_grad=True) if mask_grad else mask
        t_mask = torch.tensor(mask, requires_grad=mask_grad)
    out = F.scaled_dot_product_attention(*mts, m_mask, **kw)
    tout = TF.scaled_dot_product_attention(*tts, attn_mask=t_mask, **kw)
    assert out.shape == tuple(tout.shape) and out.dtype == dtype
    want = tout.detach().numpy()
    assert np.all(np.isfinite(want))  # the torch version compared gives zeros, not NaN
    tol = tolerance(dtype, np.abs(want).max())
    np.testing.assert_allclose(out.data, want, rtol=tol, atol=tol)
    cot = np.random.default_rng(7).standard_normal(out.shape).astype(dtype)
    out.backward(cot)
    tout.backward(torch.from_numpy(cot))
    pairs = list(zip(mts, tts, strict=True)) + ([(m_mask, t_mask)] if mask_grad else [])
    for m, t in pairs:
        assert m.grad.dtype == dtype and m.grad.shape == tuple(t.grad.shape)
        tol = tolerance(dtype, np.abs(t.grad.numpy()).max())
        np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=tol, atol=tol)


def test_fully_masked_rows_are_zero_in_torch_and_here():
    """The documented rule, checked on its own: a query with no key gets output 0 and sends
    no gradient, in torch and in minigrad alike."""
    torch, TF = _torch()
    q, k, v = _trn(1, 2, 3), _trn(1, 4, 3), _trn(1, 4, 2)
    mask = np.array([[True, False, True, True], [False] * 4])
    t_out = TF.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v),
                                            attn_mask=torch.tensor(mask))
    assert torch.all(t_out[0, 1] == 0)
    qt = mg.Tensor(q, requires_grad=True)
    out = F.scaled_dot_product_attention(qt, k, v, mask)
    np.testing.assert_array_equal(out.data[0, 1], 0.0)
    out.backward(np.ones(out.shape))
    np.testing.assert_array_equal(qt.grad[0, 1], 0.0)


def _torch_self_attention(qkv, num_heads, scale=None, is_causal=False):
    torch, TF = _torch()
    B, T, width = qkv.shape
    D = width // 3
    q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, T, num_heads, -1).transpose(1, 2)
               for i in range(3))
    o = TF.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=is_causal)
    return o.transpose(1, 2).reshape(B, T, D)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("B,T,D,H,scale", [(2, 4, 6, 2, None), (3, 5, 6, 3, 0.3), (1, 1, 4, 2, None)])
def test_causal_self_attention_matches_torch(B, T, D, H, scale, dtype):
    torch, TF = _torch()
    x0 = _trn(B, T, 3 * D).astype(dtype)
    x, xt = mg.Tensor(x0.copy(), requires_grad=True), torch.tensor(x0, requires_grad=True)
    out = F.self_attention(x, H, scale=scale, is_causal=True)
    tout = _torch_self_attention(xt, H, scale, is_causal=True)
    want = tout.detach().numpy()
    tol = tolerance(dtype, np.abs(want).max())
    np.testing.assert_allclose(out.data, want, rtol=tol, atol=tol)
    cot = np.random.default_rng(11).standard_normal(out.shape).astype(dtype)
    out.backward(cot)
    tout.backward(torch.from_numpy(cot))
    tol = tolerance(dtype, np.abs(xt.grad.numpy()).max())
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=tol, atol=tol)


# ---- self_attention against its composition -------------------------------------------------
@pytest.mark.parametrize("B,T,D,H,scale", [(2, 5, 8, 2, None), (3, 7, 12, 3, 0.25),
                                         (1, 1, 4, 4, None), (40, 9, 16, 4, None)])
def test_self_attention_equals_composition(B, T, D, H, scale):
    # (40, 9, 16, 4): several batch blocks in the fused kernel
    x = rn(B, T, 3 * D) * 2
    assert_same_function(lambda t: F.self_attention(t, H, scale=scale),
                         lambda t: c_self_attention(t, H, scale), [x])


def test_self_attention_weights_are_the_softmax_it_uses():
    from minigrad.ops.attention import attention_weights
    x = rn(3, 6, 3 * 8)
    a = attention_weights(x, 2)
    q, k = (x[:, :, i * 8:(i + 1) * 8].reshape(3, 6, 2, 4).transpose(0, 2, 1, 3)
            for i in range(2))
    np.testing.assert_allclose(a, sp.softmax(q @ k.swapaxes(-1, -2) / 2.0, axis=-1),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a.sum(axis=-1), 1.0, rtol=1e-12)
