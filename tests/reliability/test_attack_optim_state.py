"""Attack review: ``load_state_dict`` reads every number of a (possibly hostile) state dict
strictly. Before the fix a string ``"0.5"`` loaded as lr 0.5, ``centered="False"`` (or 2.5)
loaded as True, ``num_groups=2.7`` / ``group.0.size=1.5`` were truncated to match, and a
non-numeric lr raised NumPy's bare "could not convert string to float"."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad.optim import SGD, Adam, AdamW, RMSprop


def _optimizer(cls, **kw):
    a = mg.Tensor(np.ones(3), requires_grad=True)
    b = mg.Tensor(np.ones(2), requires_grad=True)
    opt = cls([{"params": [a]}, {"params": [b], "lr": 0.1}], lr=0.01, **kw)
    a.grad, b.grad = np.full(3, 0.5), np.full(2, -0.25)
    opt.step()
    return opt


def _snapshot(opt):
    return (opt.state_dict(), [dict((k, v) for k, v in g.items() if k != "params")
                               for g in opt.param_groups])


BAD = [
    ("lr", np.array("0.5")),                 # a string that parses as a number
    ("group.1.lr", np.array("0.5")),
    ("group.1.lr", np.array("abc")),
    ("group.1.lr", np.array(True)),          # a bool is not a rate
    ("group.1.lr", np.array([0.1, 0.2])),    # not a scalar
    ("group.1.lr", np.array(1 + 0j)),
    ("num_groups", np.array(2.7)),           # counts are integers, not truncated floats
    ("num_groups", np.array("2")),
    ("num_groups", np.array([2, 2])),
    ("num_params", np.array(2.9)),
    ("group.0.size", np.array(1.5)),
    ("betas", np.array(["0.9", "0.99"])),
    ("group.0.betas", np.array([True, False])),
]


@pytest.mark.parametrize("key, value", BAD, ids=[f"{k}={v!r}" for k, v in BAD])
def test_a_malformed_number_is_refused_naming_its_key(key, value):
    opt = _optimizer(Adam)
    state, groups = _snapshot(opt)
    hostile = {**state, key: value}
    target = _optimizer(Adam)
    before = _snapshot(target)
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        target.load_state_dict(hostile)
    after = _snapshot(target)  # nothing changed
    assert after[1] == before[1]
    assert all(np.array_equal(after[0][k], before[0][k]) for k in before[0])


@pytest.mark.parametrize("key", ["centered", "group.0.centered", "group.1.centered"])
@pytest.mark.parametrize("value", [np.array("False"), np.array(2.5), np.array(1)])
def test_a_flag_must_be_a_bool(key, value):
    opt = _optimizer(RMSprop)
    hostile = {**opt.state_dict(), key: value}
    target = _optimizer(RMSprop)
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        target.load_state_dict(hostile)
    assert target.centered is False
    assert all(g["centered"] is False for g in target.param_groups)


@pytest.mark.parametrize("cls", [SGD, Adam, AdamW, RMSprop])
def test_a_saved_state_still_round_trips_through_npz(cls, tmp_path):
    # the strict reader must accept what state_dict() writes, also after np.savez / np.load
    opt = _optimizer(cls)
    np.savez(tmp_path / "opt.npz", **opt.state_dict())
    with np.load(tmp_path / "opt.npz", allow_pickle=False) as f:
        loaded = dict(f)
    target = _optimizer(cls)
    target.lr = 0.5
    target.param_groups[1]["lr"] = 0.7
    target.load_state_dict(loaded)
    assert target.lr == opt.lr and target.param_groups[1]["lr"] == opt.param_groups[1]["lr"]
    assert _snapshot(target)[1] == _snapshot(opt)[1]
