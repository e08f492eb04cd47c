"""minigrad.optim's schedules, WarmupCosine and OneCycle: the learning rate at every step
against their formulas and against torch.optim.lr_scheduler.OneCycleLR, and a schedule's
state_dict resuming mid-schedule."""
from __future__ import annotations

import math

import numpy as np
import pytest

from minigrad.nn import Parameter
from minigrad.optim import SGD, OneCycle, WarmupCosine


def lr_sequence(scheduler, optimizer, steps):
    """optimizer.lr at construction and after each of ``steps`` scheduler steps."""
    lrs = [optimizer.lr]
    for _ in range(steps):
        scheduler.step()
        lrs.append(optimizer.lr)
    return lrs


@pytest.mark.parametrize("warmup, total, min_lr", [(4, 20, 0.01), (0, 7, 0.0), (1, 3, 0.05)])
def test_warmup_cosine_follows_its_formula(warmup, total, min_lr):
    base = 0.5
    opt = SGD([Parameter(np.zeros(2))], lr=base)
    sched = WarmupCosine(opt, warmup, total, min_lr=min_lr)
    got = lr_sequence(sched, opt, total + 3)
    want = []
    for s in range(total + 4):
        if s < warmup:
            want.append(base * (s + 1) / warmup)
        else:
            p = min(1.0, (s - warmup) / (total - warmup))
            want.append(min_lr + 0.5 * (base - min_lr) * (1 + math.cos(math.pi * p)))
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-16)
    assert got[0] > 0 and max(got) == pytest.approx(base)
    assert got[total] == pytest.approx(min_lr) and got[-1] == pytest.approx(min_lr)


def test_one_cycle_follows_its_formula():
    max_lr, total, pct, div, final_div = 0.4, 20, 0.25, 10.0, 100.0
    opt = SGD([Parameter(np.zeros(2))], lr=123.0)
    sched = OneCycle(opt, max_lr, total, pct_start=pct, div_factor=div, final_div_factor=final_div)
    got = lr_sequence(sched, opt, total - 1)
    start, low = max_lr / div, max_lr / div / final_div
    peak = pct * total - 1  # the step at which lr = max_lr
    want = []
    for s in range(total):
        if s <= peak:
            x, a, b = s / peak, start, max_lr
        else:
            x, a, b = (s - peak) / (total - 1 - peak), max_lr, low
        want.append(b + (a - b) * (1 + math.cos(math.pi * x)) / 2)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert got[0] == pytest.approx(start) and got[int(peak)] == pytest.approx(max_lr)
    assert got[-1] == pytest.approx(low)
    sched.step()  # step total_steps is still allowed, as in torch
    with pytest.raises(ValueError, match="total_steps"):
        sched.step()


@pytest.mark.parametrize("make", [lambda opt: WarmupCosine(opt, 3, 12, min_lr=0.001),
                                  lambda opt: OneCycle(opt, 0.3, 12)])
def test_scheduler_state_dict_resumes(make):
    opt = SGD([Parameter(np.zeros(2))], lr=0.2)
    sched = make(opt)
    straight = lr_sequence(sched, opt, 10)
    opt2 = SGD([Parameter(np.zeros(2))], lr=0.2)
    sched2 = make(opt2)
    for _ in range(4):
        sched2.step()
    state = {k: np.asarray(v) for k, v in sched2.state_dict().items()}
    opt3 = SGD([Parameter(np.zeros(2))], lr=0.2)
    sched3 = make(opt3)
    sched3.load_state_dict(state)
    assert opt3.lr == straight[4] == sched3.lr
    assert lr_sequence(sched3, opt3, 6) == straight[4:]


@pytest.mark.parametrize("total, pct, div, final_div", [
    (30, 0.3, 25.0, 1e4), (17, 0.5, 10.0, 100.0), (10, 0.0, 25.0, 1e4), (8, 1.0, 5.0, 10.0)])
def test_one_cycle_matches_torch(total, pct, div, final_div):
    torch = pytest.importorskip("torch")
    max_lr = 0.7
    opt = SGD([Parameter(np.zeros(2))], lr=0.01)
    ours = lr_sequence(OneCycle(opt, max_lr, total, pct_start=pct, div_factor=div,
                                final_div_factor=final_div), opt, total - 1)
    tparam = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    topt = torch.optim.SGD([tparam], lr=0.01)
    tsched = torch.optim.lr_scheduler.OneCycleLR(
        topt, max_lr=max_lr, total_steps=total, pct_start=pct, div_factor=div,
        final_div_factor=final_div, anneal_strategy="cos", three_phase=False,
        cycle_momentum=False)
    theirs = [topt.param_groups[0]["lr"]]
    for _ in range(total - 1):
        topt.step()
        tsched.step()
        theirs.append(topt.param_groups[0]["lr"])
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)
