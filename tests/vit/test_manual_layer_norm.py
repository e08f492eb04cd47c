"""vit/model/manual.py's LayerNorm against minigrad's F.layer_norm, and on constant rows.

A constant row has x - μ = 0 exactly when μ is the row's sum divided by D and that sum is
exact; a mean taken as x @ (1/D, ..., 1/D) rounds 1/D first and left bias + 1e-12-sized
residues even then (found by an attack on the fused ops: D = 12 or 24, values 1.0 or 7.25).
A value whose sum rounds (-3.1) leaves a residue on any formula: LayerNorm of a constant row
divides it by √eps.
"""
import numpy as np
import pytest
from ulps import assert_close_ulps

from minigrad import F
from vit.model import manual


@pytest.mark.parametrize("D", [12, 16, 24, 64])
@pytest.mark.parametrize("value", [1.0, 7.25, -3.0])  # sums exact in the dtype
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_constant_rows_give_the_bias_exactly(D, value, dtype):
    x = np.full((3, D), value, dtype=dtype)
    w = (1 + np.arange(D) / 10).astype(dtype)
    b = (np.arange(D) / 5).astype(dtype)
    y, _ = manual.layer_norm_forward(x, w, b)
    np.testing.assert_array_equal(y, np.broadcast_to(b, y.shape))
    np.testing.assert_array_equal(F.layer_norm(x, w, b).data, y)  # as minigrad's


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_forward_and_backward_agree_with_minigrad(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 24)).astype(dtype) * 3 + 1
    w, b = rng.standard_normal(24).astype(dtype), rng.standard_normal(24).astype(dtype)
    g = rng.standard_normal((40, 24)).astype(dtype)
    y, cache = manual.layer_norm_forward(x, w, b)
    dx, dw, db = manual.layer_norm_backward(g, cache)
    from minigrad import Tensor
    xt, wt, bt = (Tensor(a, requires_grad=True) for a in (x, w, b))
    out = F.layer_norm(xt, wt, bt)
    out.backward(g)
    assert_close_ulps(y, out.data, dtype=dtype)
    for got, want in ((dx, xt.grad), (dw, wt.grad), (db, bt.grad)):
        assert_close_ulps(got, want, dtype=dtype)
