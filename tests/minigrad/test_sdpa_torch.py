"""scaled_dot_product_attention and self_attention(is_causal) against PyTorch autograd.

Every mask kind (none, bool, additive float constant, additive float that requires grad,
broadcast over leading dimensions), L != S both ways, causal (upper-left aligned) for
L < S, L = S and L > S, fully masked rows (bool all False, float all -inf: torch 2.13's
CPU math backend returns zeros and zero gradients there), float64 and float32 with
dtype-derived tolerances. Skipped without torch.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(3233)
#: The public ops this file compares with torch (for test_ops_torch.py's coverage check).
TORCH_COVERED = {"scaled_dot_product_attention", "self_attention"}


def rn(*shape):
    return np.asarray(rng.standard_normal(shape))


def tolerance(dtype, scale=1.0):
    """A few hundred ulps of the dtype, times the size of the values compared."""
    return 256 * np.finfo(dtype).eps * max(1.0, scale)


_keep = rng.random((2, 1, 3, 5)) > 0.5
_keep[..., 0] = True
_dead = _keep.copy()
_dead[0, 0, 1] = False  # one fully masked row in the first batch
_dead[1, 0, 2] = False
_neg_inf = np.where(_dead, rn(2, 1, 3, 5), -np.inf)

CASES = {  # label: (q, k, v, mask or None, mask differentiated, keywords)
    "plain-L3-S5": (rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2), None, False, {}),
    "plain-L5-S2-scale": (rn(2, 5, 3), rn(2, 2, 3), rn(2, 2, 4), None, False, {"scale": 0.4}),
    "heads-bcast-kv": (rn(2, 2, 4, 3), rn(1, 2, 3, 3), rn(2, 1, 3, 5), None, False, {}),
    "bool": (rn(2, 2, 3, 4), rn(2, 2, 5, 4), rn(2, 2, 5, 3), _keep, False, {}),
    "bool-dead-rows": (rn(2, 2, 3, 4), rn(2, 2, 5, 4), rn(2, 2, 5, 3), _dead, False, {}),
    "float-const": (rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2), rn(3, 5), False, {}),
    "float-grad": (rn(2, 3, 4), rn(2, 5, 4), rn(2, 5, 2), rn(3, 5), True, {}),
    "float-grad-bcast": (rn(2, 2, 4, 3), rn(2, 2, 2, 3), rn(2, 2, 2, 3), rn(2, 1, 1, 2), True,
                         {}),
    "float-neg-inf-dead-rows": (rn(2, 2, 3, 4), rn(2, 2, 5, 4), rn(2, 2, 5, 3), _neg_inf, False,
                                {}),
    "causal-L4-S4": (rn(2, 4, 3), rn(2, 4, 3), rn(2, 4, 2), None, False, {"is_causal": True}),
    "causal-L3-S5": (rn(2, 3, 3), rn(2, 5, 3), rn(2, 5, 2), None, False, {"is_causal": True}),
    "causal-L5-S2": (rn(2, 5, 3), rn(2, 2, 3), rn(2, 2, 2), None, False, {"is_causal": True}),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("label", list(CASES))
def test_sdpa_matches_torch(label, dtype):
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
    pairs = list(zip(mts, tts)) + ([(m_mask, t_mask)] if mask_grad else [])
    for m, t in pairs:
        assert m.grad.dtype == dtype and m.grad.shape == tuple(t.grad.shape)
        tol = tolerance(dtype, np.abs(t.grad.numpy()).max())
        np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=tol, atol=tol)


def test_fully_masked_rows_are_zero_in_torch_and_here():
    """The documented rule, checked on its own: a query with no key gets output 0 and sends
    no gradient, in torch and in minigrad alike."""
    q, k, v = rn(1, 2, 3), rn(1, 4, 3), rn(1, 4, 2)
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
    B, T, width = qkv.shape
    D = width // 3
    q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, T, num_heads, -1).transpose(1, 2)
               for i in range(3))
    o = TF.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=is_causal)
    return o.transpose(1, 2).reshape(B, T, D)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("B,T,D,H,scale", [(2, 4, 6, 2, None), (3, 5, 6, 3, 0.3), (1, 1, 4, 2, None)])
def test_causal_self_attention_matches_torch(B, T, D, H, scale, dtype):
    x0 = rn(B, T, 3 * D).astype(dtype)
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
