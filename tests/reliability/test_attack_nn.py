"""Attack review of minigrad.nn: names that would silently change a model, inputs never
modified by clipping, modes and buffers through checkpoints."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn.utils import clip_grad_norm_, clip_grad_value_


@pytest.mark.parametrize("name", ["forward", "training", "state_dict", "a.b", "", ".x"])
def test_a_module_name_that_would_shadow_or_split_is_refused(name):
    # Sequential(OrderedDict(forward=Linear, relu=ReLU)) used to register "forward" as an
    # instance attribute, so seq(x) ran the Linear alone and skipped the ReLU; "a.b" made
    # the state_dict key "a.b.weight" of a module "a.b", read back as module "a", child "b"
    with pytest.raises(ValueError, match=repr(name).replace(".", r"\.")):
        nn.Sequential(OrderedDict([(name, nn.Linear(2, 3, rng=0)), ("relu", nn.ReLU())]))


def test_add_module_needs_a_string_name():
    with pytest.raises(TypeError, match="add_module name"):
        nn.Module().add_module(3, nn.ReLU())


def test_a_registered_module_may_still_be_replaced_by_name():
    seq = nn.Sequential(nn.Linear(2, 3, rng=0), nn.ReLU())
    tanh = nn.Tanh()
    seq.add_module("1", tanh)
    assert list(seq.children())[1] is tanh
    x = mg.Tensor(np.array([[1.0, -2.0]]))
    lin = list(seq.children())[0]
    np.testing.assert_array_equal(seq(x).data, np.tanh(lin(x).data))


def test_sequential_with_named_layers_runs_every_layer():
    lin = nn.Linear(2, 3, rng=0)
    seq = nn.Sequential(OrderedDict([("proj", lin), ("act", nn.ReLU())]))
    x = mg.Tensor(np.array([[1.0, -2.0], [-3.0, 0.5]]))
    np.testing.assert_array_equal(seq(x).data, np.maximum(lin(x).data, 0))


@pytest.mark.parametrize("fn", ["norm", "value"])
def test_clipping_never_writes_into_the_old_gradient_arrays(fn):
    rng = np.random.default_rng(3)
    params = [mg.Tensor(rng.standard_normal(s).astype(dt), requires_grad=True)
              for s, dt in (((3,), np.float32), ((2, 2), np.float64), ((4,), np.float16))]
    for p in params:
        p.grad = (10 * rng.standard_normal(p.shape)).astype(p.dtype)
    params.append(mg.Tensor(np.ones(2), requires_grad=True))  # grad None: skipped
    old = [p.grad for p in params]
    copies = [None if g is None else g.copy() for g in old]
    if fn == "norm":
        total = clip_grad_norm_(params, 1.0)
        want = np.sqrt(sum(np.sum(c.astype(np.float64) ** 2) for c in copies if c is not None))
        assert total == pytest.approx(want, rel=1e-12)
    else:
        clip_grad_value_(params, 0.5)
    for g, c in zip(old, copies):
        if c is not None:
            np.testing.assert_array_equal(g, c)  # the old arrays are untouched
    for p, c in zip(params, copies):
        if c is None:
            assert p.grad is None
        else:
            assert p.grad.dtype == c.dtype  # each gradient keeps its dtype


def test_eval_mode_survives_a_state_dict_load():
    torch = pytest.importorskip("torch")
    model = nn.Sequential(nn.Linear(4, 4, rng=1), nn.Dropout(0.5, rng=2))
    other = nn.Sequential(nn.Linear(4, 4, rng=3), nn.Dropout(0.5, rng=4))
    other.eval()
    other.load_state_dict(model.state_dict())
    assert all(not m.training for m in other.modules())
    x = np.arange(8.0).reshape(2, 4)
    lin = list(model.children())[0]
    np.testing.assert_array_equal(other(mg.Tensor(x)).data, lin(mg.Tensor(x)).data)
    # torch agrees that load_state_dict leaves the mode alone
    t = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).eval()
    t.load_state_dict(t.state_dict())
    assert not t.training



@pytest.mark.parametrize("p", [0.99999, 0.999999])
def test_dropout_in_float16_drops_to_zero_when_its_scale_overflows(p):
    # 1 / (1 - p) > 65504 is inf in float16: the mask times inf made every dropped element
    # 0 * inf = NaN; torch drops them to 0
    d = nn.Dropout(p, rng=0)
    x = mg.Tensor(np.ones(64, np.float16), requires_grad=True)
    y = d(x)
    keep = y.data != 0
    assert not np.isnan(y.data).any()
    assert y.dtype == np.float16
    y.backward(np.ones(64, np.float16))
    assert not np.isnan(x.grad).any()
    np.testing.assert_array_equal(x.grad[~keep], 0)
    torch = pytest.importorskip("torch")
    t = torch.nn.functional.dropout(torch.ones(64, dtype=torch.float16), p=p)
    assert not torch.isnan(t).any()


def test_clip_grad_norm_scales_float16_gradients_by_the_exact_factor():
    # the factor max_norm / N was rounded to float16 first: 1e-8 is 0 there (below its
    # smallest subnormal, 6e-8), so a gradient of 1e4 clipped to max_norm 1e-4 became 0,
    # not 1e-4 (a normal float16 number)
    p = mg.Tensor(np.zeros(1, np.float16), requires_grad=True)
    p.grad = np.array([1e4], np.float16)
    clip_grad_norm_([p], max_norm=1e-4)
    want = np.float16(1e4 * 1e-4 / (1e4 + 1e-6))  # rounded once, from float64
    assert p.grad.dtype == np.float16
    np.testing.assert_array_equal(p.grad, [want])
