"""binary_cross_entropy (on probabilities) where finite differences cannot look: exactly at
p = 0 and 1 and below e^-100, where torch floors each log at -100 and the input gradient's
denominator p (1 - p) at 1e-12 (torch 2.13's values, written by hand here); the target
gradient there (the floored loss's own, where torch's is ±inf); bad probabilities named.
And binary_cross_entropy_with_logits' weight and pos_weight as differentiable inputs, by
hand. Against PyTorch on random inputs: op_cases/losses.py (ops/test_all_ops_torch.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import grad_of

import minigrad as mg
from minigrad import F

F32, F64 = np.float32, np.float64
EPS12 = float(np.float32(1e-12))  # torch's EPSILON: a float constant, also in float64


def test_the_logs_are_floored_at_minus_100():
    p = np.array([0.0, 1.0, 0.0, 1.0, 1e-50])
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0])
    loss = F.binary_cross_entropy(p, y, reduction="none").data
    assert loss.tolist() == [100.0, 100.0, 0.0, 0.0, 100.0]
    assert F.binary_cross_entropy(np.array([1e-40]), np.array([1.0])).item() == pytest.approx(
        40 * math.log(10), rel=1e-15)  # above the floor: the log itself


def test_input_gradient_at_0_and_1_is_torchs_floored_quotient():
    # (p - y) / max(p (1 - p), 1e-12): -1e12 for p = 0 and y = 1, 1e12 for p = 1 and y = 0,
    # 0 where p = y exactly, and for p = 0 and a soft y, -y / 1e-12
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1e-50, 0.25])
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.3, 1.0, 0.75])
    _, g = grad_of(lambda t: F.binary_cross_entropy(t, y, reduction="sum"), p)
    assert g.tolist() == [-1 / EPS12, 1 / EPS12, 0.0, 0.0, -0.3 / EPS12, (1e-50 - 1) / EPS12,
                          (0.25 - 0.75) / (0.25 * 0.75)]


def test_target_gradient_is_the_floored_losss_own():
    # ȳ = max(log(1 - p), -100) - max(log p, -100): finite at 0 and 1 (torch: ±inf there, and
    # the unfloored 115.1 at p = 1e-50), so a soft-target pipeline never sees an inf
    p = np.array([0.0, 1.0, 1e-50, 0.5, 0.2])
    y = mg.Tensor(np.array([0.4, 0.6, 1.0, 0.1, 0.5]), requires_grad=True)
    F.binary_cross_entropy(p, y, reduction="sum").backward()
    assert y.grad.tolist() == [100.0, -100.0, 100.0, 0.0, math.log(0.8) - math.log(0.2)]


def test_weight_scales_the_loss_and_is_differentiated():
    p, y = np.array([[0.2, 0.7], [0.9, 0.4]]), np.array([[1.0, 0.0], [1.0, 1.0]])
    w = mg.Tensor(np.array([2.0, 0.5]), requires_grad=True)
    out = F.binary_cross_entropy(p, y, weight=w, reduction="sum")
    per = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert out.item() == pytest.approx((per * [2.0, 0.5]).sum(), rel=1e-15)
    out.backward()
    np.testing.assert_allclose(w.grad, per.sum(axis=0), rtol=1e-15)


def test_float32_kept_and_no_warning_at_0_and_1():
    with np.errstate(all="raise"):
        v, g = grad_of(lambda t: F.binary_cross_entropy(t, np.ones(3, F32)),
                       np.array([0.0, 0.5, 1.0]), dtype=F32)
    assert v.dtype == F32 and g.dtype == F32 and np.isfinite(g).all()


@pytest.mark.parametrize("bad", [1.5, -1e-300, float("nan"), float("inf")])
def test_probabilities_outside_0_1_are_refused(bad):
    with pytest.raises(ValueError, match=r"binary_cross_entropy input: got .* expected every "):
        F.binary_cross_entropy(np.array([0.5, bad]), np.array([1.0, 0.0]))


@pytest.mark.parametrize("call, err, words", [
    (lambda: F.binary_cross_entropy(np.full(3, 0.5), np.ones(4)), ValueError,
     "binary_cross_entropy target: got shape"),
    (lambda: F.binary_cross_entropy(np.full(3, 0.5), np.ones(3), weight=np.ones(4)), ValueError,
     "binary_cross_entropy weight: got shape"),
    (lambda: F.binary_cross_entropy(np.full(3, 0.5), np.ones(3), reduction="avg"), ValueError,
     "binary_cross_entropy reduction"),
    (lambda: F.binary_cross_entropy(np.full(3, 0.5), np.ones(3), weight="w"), TypeError,
     "binary_cross_entropy weight"),
    (lambda: F.binary_cross_entropy(np.full(3, 0.5), np.ones(3), dim=0), TypeError,
     "binary_cross_entropy"),
])
def test_bad_arguments_are_named(call, err, words):
    with pytest.raises(err, match=words):
        call()


def test_inputs_are_not_modified():
    p, y, w = np.array([0.0, 0.3, 1.0]), np.array([1.0, 0.5, 0.0]), np.array([1.0, 2.0, 3.0])
    kept = [a.copy() for a in (p, y, w)]
    tp, ty, tw = (mg.Tensor(a, requires_grad=True) for a in (p, y, w))
    F.binary_cross_entropy(tp, ty, weight=tw, reduction="none").backward(np.ones(3))
    for a, b in zip((p, y, w), kept, strict=True):
        np.testing.assert_array_equal(a, b)


# ---- binary_cross_entropy_with_logits: weight and pos_weight differentiated -------------------
def test_bce_with_logits_weight_and_pos_weight_gradients_by_hand():
    x, y = np.array([[0.5, -1.0], [2.0, 0.0]]), np.array([[1.0, 0.0], [0.3, 1.0]])
    w = mg.Tensor(np.array([[2.0], [0.5]]), requires_grad=True)
    p = mg.Tensor(np.array([1.5, 3.0]), requires_grad=True)
    F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=p, reduction="sum").backward()
    spx, spnx = np.log1p(np.exp(x)), np.log1p(np.exp(-x))
    per = p.data * y * spnx + (1 - y) * spx
    np.testing.assert_allclose(w.grad, per.sum(axis=1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(p.grad, (w.data * y * spnx).sum(axis=0), rtol=1e-14)


def test_bce_with_logits_weights_that_do_not_require_grad_stay_constants():
    x = mg.Tensor(np.array([0.5, -1.0]), requires_grad=True)
    w = mg.Tensor(np.array([2.0, 0.5]))
    F.binary_cross_entropy_with_logits(x, np.array([1.0, 0.0]), weight=w, pos_weight=w).backward()
    assert w.grad is None and x.grad is not None
