"""layer_norm (ops/normalization.py) against the same function composed from primitive ops:
values and gradients for a random cotangent (float64) agree to ~1e-12, with and without the
affine weight and bias, with another eps, with F.var in the composition, and at a large
offset and scale (1e4 ± 1e2). Against NumPy and finite differences: op_cases/normalization.py."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_same_function, c_layer_norm

from minigrad import F

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("shape", [(2, 3, 6), (4, 5), (7,)])
def test_layer_norm_equals_composition(affine, shape):
    D = shape[-1]
    x = RNG.standard_normal(shape) * 2 + 0.5
    w = 1 + RNG.standard_normal(D) / 3 if affine in ("weight", "both") else None
    b = RNG.standard_normal(D) if affine in ("bias", "both") else None
    arrays = [x] + [a for a in (w, b) if a is not None]

    def split(args):
        it = iter(args[1:])
        return args[0], (next(it) if w is not None else None), (next(it) if b is not None else None)

    assert_same_function(lambda *a: F.layer_norm(*split(a)), lambda *a: c_layer_norm(*split(a)),
                         arrays)
    assert_same_function(lambda *a: F.layer_norm(*split(a), eps=0.3),
                         lambda *a: c_layer_norm(*split(a), eps=0.3), arrays)


def test_layer_norm_equals_composition_with_var_op():
    x = RNG.standard_normal((3, 8))
    assert_same_function(
        F.layer_norm,
        lambda t: (t - F.mean(t, axis=-1, keepdims=True)) / F.sqrt(F.var(t, axis=-1, keepdims=True)
                                                                   + 1e-5), [x])


def test_layer_norm_large_offset_and_scale_stays_accurate():
    x = 1e4 + RNG.standard_normal((3, 6)) * 1e2
    assert_same_function(F.layer_norm, c_layer_norm, [x], rtol=1e-8, atol=1e-10)
