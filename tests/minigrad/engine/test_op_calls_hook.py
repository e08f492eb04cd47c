"""Checking mode (``minigrad.opcalls``): the op wrapper shows each call to the observer, only
inside ``observing_op_calls`` and only in the context that entered it."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.opcalls import observing_op_calls, op_calls_observed


@mg.op(arrays=1)
def scale(x, factor, *, shift=0.0):
    """y = factor x + shift.   x̄ = factor ȳ."""
    return factor * x + shift, lambda g: factor * g


def test_each_call_shows_the_op_its_forward_and_what_it_was_given_and_returned():
    seen = []
    x = mg.Tensor(np.arange(3.0), requires_grad=True)
    with observing_op_calls(seen.append):
        assert op_calls_observed()
        y = scale(x, np.float64(2.0), shift=1.0)
    assert len(seen) == 1
    call = seen[0]
    assert call.op is scale and call.name == "scale" and call.forward is scale.forward
    assert call.params == ("x", "factor")
    assert call.args[0] is x and call.raw[0] is x.data
    assert type(call.raw[1]) is float and call.raw[1] == 2.0  # as the forward received it
    assert call.kwargs == {"shift": 1.0}
    assert call.result is y
    np.testing.assert_array_equal(y.data, [1.0, 3.0, 5.0])


def test_nothing_is_observed_outside_the_block_or_in_another_thread():
    seen = []
    x = mg.Tensor(np.ones(2), requires_grad=True)
    F.exp(x)
    with observing_op_calls(seen.append):
        worker = threading.Thread(target=lambda: F.tanh(x))
        worker.start()
        worker.join()
        F.sin(x)
    F.cos(x)
    assert not op_calls_observed()
    assert [c.name for c in seen] == ["sin"]


def test_the_previous_observer_is_restored_also_after_an_error():
    outer, inner = [], []
    x = mg.Tensor(np.ones(2))
    with observing_op_calls(outer.append):
        with pytest.raises(RuntimeError):
            with observing_op_calls(inner.append):
                F.exp(x)
                raise RuntimeError("stop")
        F.log(x)
    assert [c.name for c in inner] == ["exp"] and [c.name for c in outer] == ["log"]
    with pytest.raises(TypeError, match="observer"):
        with observing_op_calls(None):
            pass
