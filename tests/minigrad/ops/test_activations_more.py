"""mish, hardswish, hardsigmoid, celu, softsign (ops/activations.py) and erf, erfc
(ops/unary.py) where finite differences cannot look: the gradient exactly at the kinks (a
convention: torch 2.13's, measured and written down here by hand), large inputs without a
floating-point warning, float32 kept, and bad arguments named. Against PyTorch for random and
kink inputs: op_cases/activations.py and op_cases/unary.py (ops/test_all_ops_torch.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import grad_of

import minigrad as mg
from minigrad import F

F32, F64 = np.float32, np.float64


def test_hardswish_gradient_at_its_kinks_is_torchs():
    # torch 2.13: 0 for x <= -3, x/3 + 1/2 strictly between, 1 for x >= 3 (so neither side's
    # limit at -3 from the right, -1/2, nor at 3 from the left, 3/2)
    x = np.array([-4.0, -3.0, -1.5, 0.0, 1.5, 3.0, 4.0])
    y, g = grad_of(F.hardswish, x)
    assert g.tolist() == [0.0, 0.0, 0.0, 0.5, 1.0, 1.0, 1.0]
    assert y.tolist() == [0.0, 0.0, -1.5 * 1.5 / 6, 0.0, 1.5 * 4.5 / 6, 3.0, 4.0]


def test_hardsigmoid_gradient_is_zero_at_both_kinks():
    x = np.array([-4.0, -3.0, 0.0, 3.0, 4.0])
    y, g = grad_of(F.hardsigmoid, x)
    assert g.tolist() == [0.0, 0.0, 1 / 6, 0.0, 0.0]
    assert y.tolist() == [0.0, 0.0, 0.5, 1.0, 1.0]


def test_celu_gradient_at_zero_is_one_for_every_alpha():
    x = np.array([-1.0, -0.0, 0.0, 1.0])
    for alpha in (0.5, 1.0, 3.0, -2.0):
        y, g = grad_of(lambda t, a=alpha: F.celu(t, a), x)
        assert g.tolist() == [math.exp(-1 / alpha), 1.0, 1.0, 1.0], alpha
        assert y[3] == 1.0 and y[1] == 0.0


def test_softsign_and_mish_at_zero_and_far_out():
    x = np.array([-1e300, -1e10, 0.0, 1e10, 1e300])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        y, g = grad_of(F.softsign, x)
    assert y[2] == 0.0 and g[2] == 1.0 and y[0] == -1.0 and y[4] == 1.0
    assert g[0] == 0.0 and g[4] == 0.0 and 0 < g[1] < 1e-19
    with np.errstate(over="raise", invalid="raise"):
        y, g = grad_of(F.mish, np.array([-800.0, 0.0, 800.0]))
    assert y.tolist() == [0.0 * -800.0, 0.0, 800.0] and g.tolist()[1:] == [0.6, 1.0]


@pytest.mark.parametrize("name", ["mish", "hardswish", "hardsigmoid", "celu", "softsign",
                                  "erf", "erfc"])
def test_float32_stays_float32_and_integers_become_float64(name):
    fn = getattr(F, name)
    _, g = grad_of(fn, np.array([-1.0, 0.5, 2.0]), dtype=F32)
    assert g.dtype == F32 and fn(mg.Tensor(np.array([-1.0], F32))).dtype == F32
    assert fn(mg.Tensor(np.array([-1, 2]))).dtype == F64


def test_erf_and_erfc_keep_their_tails():
    x = np.array([-6.0, 0.0, 6.0, 10.0, 20.0])
    y, g = grad_of(F.erfc, x)
    assert y[3] == pytest.approx(2.088487583762545e-45, rel=1e-14)  # 1 - erf(10) is 0
    assert y[2] > 0 and y[4] > 0 and g[4] == -2 / math.sqrt(math.pi) * math.exp(-400.0)
    y, g = grad_of(F.erf, x)
    assert y.tolist()[:3] == [-1.0, 0.0, 1.0] and g[1] == 2 / math.sqrt(math.pi)


def test_bad_alpha_is_named():
    x = mg.Tensor(np.ones(3))
    with pytest.raises(ValueError, match="celu alpha: got 0.0"):
        F.celu(x, 0.0)
    for bad in ("1", None, float("nan")):
        with pytest.raises((TypeError, ValueError), match="celu alpha"):
            F.celu(x, bad)
    with pytest.raises(TypeError, match="celu"):
        F.celu(x, dim=0)
