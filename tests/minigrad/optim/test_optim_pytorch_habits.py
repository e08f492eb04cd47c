"""What a PyTorch user types first works as in torch.optim: every group holds every
hyperparameter (``param_groups[i]["lr"]`` included), ``step(closure)`` returns the closure's
loss, ``print(optimizer)`` shows the groups as torch does, and schedules have
``get_last_lr()``."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import Parameter
from minigrad.optim import SGD, Adam, AdamW, OneCycle, RMSprop, WarmupCosine

OPTIMIZERS = [(SGD, "SGD", dict(lr=0.1, momentum=0.9)), (Adam, "Adam", {}),
              (AdamW, "AdamW", {}), (RMSprop, "RMSprop", dict(momentum=0.5))]


def params(seed=0):
    rng = np.random.default_rng(seed)
    return [Parameter(rng.standard_normal(3)), Parameter(rng.standard_normal((2, 2)))]


@pytest.mark.parametrize("ours, theirs, kwargs", OPTIMIZERS, ids=[o[1] for o in OPTIMIZERS])
def test_every_group_holds_every_hyperparameter_as_torch(ours, theirs, kwargs):
    torch = pytest.importorskip("torch")
    p, q = params()
    opt = ours([{"params": [p]}, {"params": [q], "weight_decay": 0.25}], **kwargs)
    tp, tq = torch.zeros(3, requires_grad=True), torch.zeros(2, 2, requires_grad=True)
    topt = getattr(torch.optim, theirs)([{"params": [tp]}, {"params": [tq], "weight_decay": 0.25}],
                                        **kwargs)
    for group, tgroup in zip(opt.param_groups, topt.param_groups, strict=True):
        keys = set(group) - {"params"}
        assert "lr" in keys and keys <= set(tgroup), sorted(keys - set(tgroup))
        for key in keys:
            value = tuple(group[key]) if isinstance(group[key], tuple) else group[key]
            assert value == tgroup[key], key


def test_a_group_lr_written_in_param_groups_is_used_at_the_next_step():
    p, q = params()
    opt = SGD([p, q], lr=0.1)
    opt.param_groups[0]["lr"] = 0.5  # torch's way of setting a learning rate by hand
    before = p.data.copy()
    p.grad, q.grad = np.ones(3), np.ones((2, 2))
    opt.step()
    np.testing.assert_array_equal(p.data, before - 0.5)
    assert opt.group_lr(0) == 0.5


def test_optimizer_lr_still_moves_the_groups_that_follow_it():
    p, q = params()
    opt = SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=0.1)
    opt.lr = 0.2
    assert [g["lr"] for g in opt.param_groups] == [0.2, 0.3]


@pytest.mark.parametrize("ours, theirs, kwargs", OPTIMIZERS, ids=[o[1] for o in OPTIMIZERS])
def test_schedules_write_each_groups_lr_as_torch(ours, theirs, kwargs):
    torch = pytest.importorskip("torch")
    p, q = params()
    opt = ours([{"params": [p], "lr": 0.3}, {"params": [q]}], **{**kwargs, "lr": 0.1})
    sched = OneCycle(opt, max_lr=0.5, total_steps=6, pct_start=0.3)
    tp, tq = torch.zeros(3, requires_grad=True), torch.zeros(2, 2, requires_grad=True)
    topt = getattr(torch.optim, theirs)([{"params": [tp], "lr": 0.3}, {"params": [tq]}],
                                        **{**kwargs, "lr": 0.1})
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=0.5, total_steps=6, pct_start=0.3,
                                                 cycle_momentum=False)
    for _ in range(6):
        ours_lr = [g["lr"] for g in opt.param_groups]
        np.testing.assert_allclose(ours_lr, [g["lr"] for g in topt.param_groups],
                                   rtol=16 * np.finfo(np.float64).eps)
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(),
                                   rtol=16 * np.finfo(np.float64).eps)
        topt.step()
        sched.step()
        tsched.step()


def test_get_last_lr_is_one_lr_per_group_after_each_step():
    p, q = params()
    opt = AdamW([{"params": [p]}, {"params": [q], "lr": 0.4}], lr=0.1)
    sched = WarmupCosine(opt, warmup_steps=2, total_steps=5)
    assert sched.get_last_lr() == [0.05, 0.2]  # warmup step 0: base * 1 / 2
    sched.step()
    assert sched.get_last_lr() == [0.1, 0.4]


@pytest.mark.parametrize("ours, theirs, kwargs", OPTIMIZERS, ids=[o[1] for o in OPTIMIZERS])
def test_step_with_a_closure_returns_its_loss_and_matches_torch(ours, theirs, kwargs):
    torch = pytest.importorskip("torch")
    x0 = np.random.default_rng(1).standard_normal(4)
    p = Parameter(x0.copy())
    tp = torch.tensor(x0, requires_grad=True)
    opt, topt = ours([p], **kwargs), getattr(torch.optim, theirs)([tp], **kwargs)
    target = np.arange(4.0)

    def closure():
        opt.zero_grad()
        loss = ((p - target) ** 2).sum()
        loss.backward()
        return loss

    def tclosure():
        topt.zero_grad()
        loss = ((tp - torch.from_numpy(target)) ** 2).sum()
        loss.backward()
        return loss

    for _ in range(3):
        with mg.no_grad():  # the closure records its graph even so, as torch's enable_grad
            loss = opt.step(closure)
        tloss = topt.step(tclosure)
        assert isinstance(loss, mg.Tensor)
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=64 * np.finfo(float).eps)
    np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=64 * np.finfo(float).eps)


def test_step_without_a_closure_returns_none_and_a_non_callable_is_refused():
    p, = params()[:1]
    opt = SGD([p], lr=0.1)
    p.grad = np.ones(3)
    assert opt.step() is None
    with pytest.raises(TypeError, match="closure: got int; expected a function"):
        opt.step(3)


def test_printing_an_optimizer_shows_its_groups_as_torch():
    p, q = params()
    opt = AdamW([{"params": [p]}, {"params": [q], "weight_decay": 0.0, "lr": 0.5}], lr=1e-3)
    assert str(opt) == repr(opt) == (
        "AdamW (\n"
        "Parameter Group 0\n"
        "    amsgrad: False\n"
        "    betas: (0.9, 0.999)\n"
        "    eps: 1e-08\n"
        "    lr: 0.001\n"
        "    maximize: False\n"
        "    weight_decay: 0.01\n"
        "\n"
        "Parameter Group 1\n"
        "    amsgrad: False\n"
        "    betas: (0.9, 0.999)\n"
        "    eps: 1e-08\n"
        "    lr: 0.5\n"
        "    maximize: False\n"
        "    weight_decay: 0.0\n"
        ")")
