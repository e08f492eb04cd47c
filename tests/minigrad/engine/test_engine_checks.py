"""The engine's argument checks go through minigrad.checks: wrong type TypeError, wrong value
ValueError, the argument named."""
import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, checks
from minigrad.runtime import parallel
from minigrad.runtime.heap import keep_heap


def test_real_with_finite_false_passes_infinities_and_nan_through():
    assert checks.real("value", -math.inf, finite=False) == -math.inf
    assert math.isnan(checks.real("value", math.nan, finite=False))
    with pytest.raises(TypeError, match="value: got '0'"):
        checks.real("value", "0", finite=False)


def test_pad_keeps_accepting_an_infinite_fill_value():
    out = F.pad(np.zeros((1, 2)), 1, value=-np.inf)
    assert out.shape == (3, 4) and out.data[0, 0] == -np.inf and out.data[1, 1] == 0


@pytest.mark.parametrize("call, error, words", [
    (lambda: mg.gradcheck(F.exp, [np.ones(2)], fast=True, directions=1.5), TypeError,
     ["gradcheck directions", "1.5"]),
    (lambda: mg.gradcheck(F.exp, [np.ones(2)], eps=True), TypeError, ["gradcheck eps", "True"]),
    (lambda: mg.gradcheck(F.exp, [np.ones(2)], eps=0.0), ValueError, ["gradcheck eps", "0.0"]),
    (lambda: F.layer_norm(np.ones((2, 3)), eps=np.inf), ValueError, ["layer_norm eps", "inf"]),
    (lambda: F.layer_norm(np.ones((2, 3)), eps=True), TypeError, ["layer_norm eps", "True"]),
    (lambda: F.conv2d(np.ones((1, 1, 3, 3)), np.ones((1, 1, 1, 1)), stride=(1, 1.0)), TypeError,
     ["conv2d stride", "(1, 1.0)"]),
    (lambda: F.avg_pool2d(np.ones((1, 1, 2, 2)), 2, count_include_pad=1), TypeError,
     ["count_include_pad", "1"]),
    (lambda: keep_heap(mmap_threshold="1"), TypeError, ["keep_heap mmap_threshold"]),
    (lambda: parallel.set_num_threads(parallel.MAX_THREADS + 1), ValueError,
     ["set_num_threads n", f"[1, {parallel.MAX_THREADS}]"]),
])
def test_bad_engine_arguments_follow_the_one_rule(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value)
