"""PyTorch's keyword names where minigrad takes NumPy's: ``dim=`` for ``axis=`` and
``keepdim=`` for ``keepdims=`` are a TypeError that names the NumPy keyword, for every op
that takes ``axis`` (through the op wrapper, or a plain function of ``F``) and every Tensor
method that does."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

AXIS_HINT = r"minigrad follows NumPy: use axis="
KEEPDIMS_HINT = r"minigrad follows NumPy: use keepdims="


def t(*shape):
    return mg.tensor(np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 1.0,
                     requires_grad=True)


@pytest.mark.parametrize("call", [
    lambda x: x.sum(dim=0),
    lambda x: x.mean(dim=1),
    lambda x: x.max(dim=0),
    lambda x: x.argmax(dim=0),
    lambda x: x.cumsum(dim=0),
    lambda x: x.flip(dim=0),
    lambda x: F.softmax(x, dim=-1),
    lambda x: F.log_softmax(x, dim=-1),
    lambda x: F.sum(x, dim=0),
    lambda x: F.logsumexp(x, dim=1),
    lambda x: F.concatenate([x, x], dim=0),
    lambda x: F.stack([x, x], dim=0),
    lambda x: F.argmax(x, dim=0),
], ids=["sum", "mean", "max", "argmax", "cumsum", "flip", "F.softmax", "F.log_softmax",
        "F.sum", "F.logsumexp", "F.concatenate", "F.stack", "F.argmax"])
def test_dim_is_refused_naming_axis(call):
    with pytest.raises(TypeError, match=AXIS_HINT):
        call(t(2, 3))


@pytest.mark.parametrize("call", [
    lambda x: x.sum(axis=0, keepdim=True),
    lambda x: F.mean(x, axis=1, keepdim=True),
    lambda x: F.logsumexp(x, axis=1, keepdim=True),
], ids=["sum", "F.mean", "F.logsumexp"])
def test_keepdim_is_refused_naming_keepdims(call):
    with pytest.raises(TypeError, match=KEEPDIMS_HINT):
        call(t(2, 3))


def test_the_numpy_keywords_still_work():
    x = t(2, 3)
    np.testing.assert_array_equal(x.sum(axis=0).data, x.data.sum(axis=0))
    np.testing.assert_array_equal(F.sum(x, axis=1, keepdims=True).data,
                                  x.data.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(F.concatenate([x, x], axis=1).data,
                                  np.concatenate([x.data, x.data], axis=1))


def test_an_op_without_axis_keeps_pythons_own_message():
    with pytest.raises(TypeError, match="unexpected keyword argument 'dim'"):
        F.exp(t(2), dim=0)


def test_every_public_function_taking_axis_refuses_dim():
    """Found by signature, so a new op that takes axis is covered without a list here."""
    x = t(2, 3)
    for name in dir(F):
        f = getattr(F, name)
        if name.startswith("_") or not callable(f):
            continue
        try:
            params = inspect.signature(getattr(f, "forward", f)).parameters
        except (TypeError, ValueError):
            continue
        if "axis" not in params:
            continue
        with pytest.raises(TypeError, match=AXIS_HINT):
            f([x, x] if name in ("concatenate", "stack") else x, dim=0)
