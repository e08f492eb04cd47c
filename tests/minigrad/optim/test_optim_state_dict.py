"""Optimizer and schedule checkpoints: state_dict() and load_state_dict().

A run resumed from a saved state (through np.savez and np.load) ends bit-identical to one that
never stopped; state_dict() is a copy; load_state_dict() refuses a state of other shapes,
keys or parameters, values that would give NaN or a crash at the next step, and schedule
values the constructor would refuse. It reads every number of a (possibly hostile) state dict
strictly: a string such as ``"0.5"`` is not an lr, ``centered="False"`` (or 2.5) is not a
flag, ``num_groups=2.7`` / ``group.0.size=1.5`` are not truncated to match, and a
non-numeric lr is refused naming its key rather than with NumPy's bare "could not convert
string to float"; a refused load changes nothing."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import ADAMW_CONFIGS, OPTIM_STEPS, SGD_CONFIGS, optimizer_history, optimizer_problem

import minigrad as mg
from minigrad.nn import Parameter
from minigrad.optim import SGD, Adam, AdamW, OneCycle, RMSprop, WarmupCosine


# ---- resuming ---------------------------------------------------------------------------------
@pytest.mark.parametrize("optimizer_cls, config", [(SGD, SGD_CONFIGS["all"]),
                                                   (SGD, SGD_CONFIGS["plain"]),
                                                   (AdamW, ADAMW_CONFIGS["decay"])])
def test_state_dict_resumes_bit_identically(tmp_path, optimizer_cls, config):
    initial, grads = optimizer_problem(6)
    straight = optimizer_history(optimizer_cls, initial, grads, **config)[-1]

    half = OPTIM_STEPS // 2
    params = [Parameter(x) for x in initial]
    opt = optimizer_cls(params, **config)
    for step_grads in grads[:half]:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = g
        opt.step()
    np.savez(tmp_path / "opt.npz", **opt.state_dict())
    saved_params = [p.data.copy() for p in params]

    resumed = [Parameter(x) for x in saved_params]
    fresh = optimizer_cls(resumed, lr=123.0)  # the checkpoint restores the hyperparameters
    with np.load(tmp_path / "opt.npz", allow_pickle=False) as state:
        fresh.load_state_dict(state)
    assert fresh.lr == config["lr"] and fresh.step_count == half
    for step_grads in grads[half:]:
        for p, g in zip(resumed, step_grads, strict=True):
            p.grad = g
        fresh.step()
    for a, b in zip(resumed, straight, strict=True):
        np.testing.assert_array_equal(a.data, b)


def test_optimizer_state_dict_is_a_copy():
    initial, grads = optimizer_problem(7)
    params = [Parameter(x) for x in initial]
    opt = AdamW(params)
    for p, g in zip(params, grads[0], strict=True):
        p.grad = g
    opt.step()
    state = opt.state_dict()
    saved = {k: v.copy() for k, v in state.items()}
    opt.step()
    for k in state:
        np.testing.assert_array_equal(state[k], saved[k])


def test_optimizer_load_state_dict_rejects_mismatches():
    initial, grads = optimizer_problem(8)
    params = [Parameter(x) for x in initial]
    opt = SGD(params, lr=0.1, momentum=0.9)
    for p, g in zip(params, grads[0], strict=True):
        p.grad = g
    opt.step()
    state = opt.state_dict()
    wrong_shape = dict(state, **{"state.0.momentum_buffer": np.zeros((4, 3))})
    with pytest.raises(ValueError, match=r"state\.0\.momentum_buffer.*\(4, 3\)"):
        opt.load_state_dict(wrong_shape)
    with pytest.raises(KeyError, match="bogus"):
        opt.load_state_dict(dict(state, bogus=np.zeros(1)))
    with pytest.raises(KeyError, match="step_count"):
        opt.load_state_dict({k: v for k, v in state.items() if k != "step_count"})
    with pytest.raises(ValueError, match="num_params"):
        SGD([Parameter(initial[0])], lr=0.1).load_state_dict(
            {k: v for k, v in state.items() if not k.startswith("state.1")})


# ---- values that would give NaN or a crash later -------------------------------------------------
def stepped_adamw():
    p = Parameter(np.ones(3))
    opt = AdamW([p], lr=1e-3)
    p.grad = np.ones(3)
    opt.step()
    return p, opt


@pytest.mark.parametrize("key, value, words", [
    ("state.0.exp_avg_sq", -np.ones(3), "exp_avg_sq.*negative"),
    ("state.0.exp_avg", np.full(3, np.nan), "exp_avg.*finite"),
    ("state.0.step", np.array(0), "step.*positive"),
    ("eps", np.array(0.0), "eps"),
    ("group.0.eps", np.array(0.0), "eps"),
    ("lr", np.array(np.nan), "lr"),
    ("step_count", np.array(-1), "step_count"),
])
def test_adamw_load_state_dict_refuses_values_that_would_break_the_next_step(key, value, words):
    p, opt = stepped_adamw()
    state = opt.state_dict()
    state[key] = value
    q = Parameter(np.ones(3))
    fresh = AdamW([q], lr=1e-3)
    with pytest.raises(ValueError, match=words):
        fresh.load_state_dict(state)
    assert fresh.step_count == 0 and not fresh.state[0]


@pytest.mark.parametrize("cls, args, key, value", [
    (WarmupCosine, dict(warmup_steps=2, total_steps=10), "warmup_steps", 10),
    (WarmupCosine, dict(warmup_steps=2, total_steps=10), "total_steps", 0),
    (WarmupCosine, dict(warmup_steps=2, total_steps=10), "base_lr", np.nan),
    (WarmupCosine, dict(warmup_steps=2, total_steps=10), "last_step", -3),
    (OneCycle, dict(max_lr=0.1, total_steps=10), "div_factor", 0.0),
    (OneCycle, dict(max_lr=0.1, total_steps=10), "pct_start", 2.0),
    (OneCycle, dict(max_lr=0.1, total_steps=10), "last_step", 11),
])
def test_schedule_load_state_dict_checks_like_the_constructor(cls, args, key, value):
    opt = SGD([Parameter(np.ones(2))], lr=0.1)
    sched = cls(opt, **args)
    state = sched.state_dict()
    state[key] = np.array(value)
    other = cls(SGD([Parameter(np.ones(2))], lr=0.1), **args)
    lr_before = other.optimizer.lr
    with pytest.raises(ValueError, match=key):
        other.load_state_dict(state)
    assert other.optimizer.lr == lr_before and other.last_step == 0


# ---- every number read strictly ----------------------------------------------------------------
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
