"""torch's schedulers by name (StepLR, CosineAnnealingLR, LinearLR, LambdaLR): every group's
lr at every step against torch.optim.lr_scheduler (two groups: one following optimizer.lr,
one with its own lr), against their closed forms, state_dict round trips (a resumed
schedule gives the uninterrupted one's lrs), and their checks."""
from __future__ import annotations

import math

import numpy as np
import pytest

from minigrad.nn import Parameter
from minigrad.optim import (
    SGD,
    CosineAnnealingLR,
    LambdaLR,
    LinearLR,
    OneCycle,
    StepLR,
)

EPS = np.finfo(np.float64).eps


def grouped_sgd(lr=0.1, own=0.3):
    """Group 0 follows optimizer.lr; group 1 has its own lr (its own base)."""
    return SGD([{"params": [Parameter(np.zeros(2))]},
                {"params": [Parameter(np.zeros(3))], "lr": own}], lr=lr)


def run(make, opt, steps):
    """``get_last_lr()`` at construction and after each of ``steps`` steps (with the
    optimizer stepping first, as in training), and the schedule."""
    sched = make(opt)
    out = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr())
    return np.array(out), sched


def torch_run(make, steps, lr=0.1, own=0.3):
    torch = pytest.importorskip("torch")
    opt = torch.optim.SGD([{"params": [torch.zeros(2, requires_grad=True)]},
                           {"params": [torch.zeros(3, requires_grad=True)], "lr": own}], lr=lr)
    sched = make(torch.optim.lr_scheduler, opt)
    out = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr())
    return np.array(out)


def steps_of_torch_recursion(n, every=1):
    """How many multiplications torch's recursive form has chained by each step."""
    return np.arange(n + 1)[:, None] // every


COSINES = [(50, 0.001, 600), (7, 0.0, 300), (1, 0.02, 40), (200, 0.0, 450)]


@pytest.mark.parametrize("T_max, eta_min, steps", COSINES)
def test_cosine_annealing_matches_torch_every_step(T_max, eta_min, steps):
    want = torch_run(lambda s, o: s.CosineAnnealingLR(o, T_max, eta_min), steps)
    got, _ = run(lambda o: CosineAnnealingLR(o, T_max, eta_min), grouped_sgd(), steps)
    np.testing.assert_allclose(got, want, rtol=2 * EPS, atol=0)


def test_cosine_annealing_is_torch_recursion_not_the_closed_form():
    """torch's recursive values drift from the closed form by far more than 2 ulps over
    hundreds of steps: the form matters for the comparison above."""
    T, eta, steps = 50, 0.001, 600
    want = torch_run(lambda s, o: s.CosineAnnealingLR(o, T, eta), steps)
    closed = np.array([[eta + (b - eta) * (1 + math.cos(math.pi * s / T)) / 2 for b in (0.1, 0.3)]
                       for s in range(steps + 1)])
    assert np.max(np.abs(closed - want) / want) > 100 * EPS  # measured: 256 ulps
    np.testing.assert_allclose(closed, want, rtol=1e-12)  # yet the same curve


@pytest.mark.parametrize("step_size, gamma", [(3, 0.7), (1, 0.99), (10, 0.5)])
def test_step_lr_matches_torch_and_its_closed_form(step_size, gamma):
    n = 300
    want = torch_run(lambda s, o: s.StepLR(o, step_size, gamma), n)
    got, _ = run(lambda o: StepLR(o, step_size, gamma), grouped_sgd(), n)
    closed = np.array([[b * gamma ** (s // step_size) for b in (0.1, 0.3)] for s in range(n + 1)])
    np.testing.assert_array_equal(got, closed)
    # torch multiplies k times: at most about one rounding each
    tol = 4 * (steps_of_torch_recursion(n, step_size) + 1) * EPS
    assert np.all(np.abs(got - want) <= tol * np.abs(want))


@pytest.mark.parametrize("start, end, total", [(0.25, 0.9, 400), (1.0, 0.1, 10), (1 / 3, 1.0, 5)])
def test_linear_lr_matches_torch_and_its_closed_form(start, end, total):
    n = 450
    want = torch_run(lambda s, o: s.LinearLR(o, start, end, total), n)
    got, _ = run(lambda o: LinearLR(o, start, end, total), grouped_sgd(), n)
    closed = np.array([[b * (start + (end - start) * min(s, total) / total) for b in (0.1, 0.3)]
                       for s in range(n + 1)])
    np.testing.assert_allclose(got, closed, rtol=4 * EPS)
    tol = 4 * (np.minimum(steps_of_torch_recursion(n), total) + 1) * EPS
    assert np.all(np.abs(got - want) <= tol * np.abs(want))


def test_lambda_lr_with_a_function_per_group_matches_torch():
    fs = [lambda s: 0.95 ** s, lambda s: 1.0 / (s + 1)]
    want = torch_run(lambda s, o: s.LambdaLR(o, fs), 60)
    got, _ = run(lambda o: LambdaLR(o, fs), grouped_sgd(), 60)
    np.testing.assert_allclose(got, want, rtol=EPS, atol=0)
    both = [lambda s: 0.5 if s >= 3 else 1.0] * 2  # one function for both groups
    got, _ = run(lambda o: LambdaLR(o, both[0]), grouped_sgd(), 5)
    np.testing.assert_allclose(got, torch_run(lambda s, o: s.LambdaLR(o, both[0]), 5), rtol=EPS)


def test_lambda_lr_gives_groups_that_follow_optimizer_lr_their_own_function():
    opt = SGD([{"params": [Parameter(np.zeros(1))]}, {"params": [Parameter(np.zeros(1))]}],
              lr=1.0)
    sched = LambdaLR(opt, [lambda s: 2.0 ** -s, lambda s: 3.0 ** -s])
    sched.step()
    sched.step()
    assert sched.get_last_lr() == [0.25, 1 / 9] and opt.lr == 0.25


SCHEDULES = [
    ("StepLR", lambda o: StepLR(o, 4, 0.5)),
    ("CosineAnnealingLR", lambda o: CosineAnnealingLR(o, 13, 0.01)),
    ("LinearLR", lambda o: LinearLR(o, 0.2, 1.0, 30)),
    ("LambdaLR", lambda o: LambdaLR(o, [lambda s: 1 / (1 + s), lambda s: 0.9 ** s])),
]


@pytest.mark.parametrize("name, make", SCHEDULES, ids=[s[0] for s in SCHEDULES])
def test_a_resumed_schedule_gives_the_uninterrupted_lrs(name, make):
    full, _ = run(make, grouped_sgd(), 100)
    for cut in (1, 37, 60):
        opt = grouped_sgd()
        _, sched = run(make, opt, cut)
        saved_opt = {k: v.copy() for k, v in opt.state_dict().items()}
        saved = {k: v.copy() for k, v in sched.state_dict().items()}
        assert all(isinstance(v, np.ndarray) and v.dtype.kind in "iuf" for v in saved.values())
        fresh = grouped_sgd()
        again = make(fresh)
        fresh.load_state_dict(saved_opt)
        again.load_state_dict(saved)
        lrs = [again.get_last_lr()]
        for _ in range(100 - cut):
            fresh.step()
            again.step()
            lrs.append(again.get_last_lr())
        np.testing.assert_array_equal(np.array(lrs), full[cut:])  # same operations in order


def test_lambda_lr_state_dict_saves_no_function():
    opt = grouped_sgd()
    sched = LambdaLR(opt, lambda s: 0.5 ** s)
    assert set(sched.state_dict()) == {"last_step", "base_lr"}


def test_cosine_loaded_far_into_its_periods_matches_torch():
    T, steps = 9, 400
    want = torch_run(lambda s, o: s.CosineAnnealingLR(o, T, 0.003), steps)
    got, sched = run(lambda o: CosineAnnealingLR(o, T, 0.003), grouped_sgd(), 5)
    sched.load_state_dict({**sched.state_dict(), "last_step": np.array(steps)})
    np.testing.assert_allclose(sched.get_last_lr(), want[-1], rtol=2 * EPS)


def test_a_bad_lambda_value_raises_and_changes_no_lr():
    opt = grouped_sgd()
    sched = LambdaLR(opt, [lambda s: 1.0, lambda s: 1.0 if s < 2 else -1.0])
    sched.step()
    before = sched.get_last_lr()
    with pytest.raises(ValueError, match=r"lr_lambda\[1\]\(2\)"):
        sched.step()
    assert [g["lr"] for g in opt.param_groups] == before and opt.lr == before[0]
    assert sched.last_step == 1


def test_step_lr_that_overflows_raises():
    sched = StepLR(grouped_sgd(), 1, gamma=1e300)
    sched.step()  # 0.1 * 1e300: still finite
    before = sched.get_last_lr()
    with pytest.raises(ValueError, match="overflows"):
        sched.step()
    assert sched.last_step == 1 and sched.get_last_lr() == before


@pytest.mark.parametrize("make, error, words", [
    (lambda o: StepLR(o, 0), ValueError, "step_size"),
    (lambda o: StepLR(o, 2, gamma=-0.1), ValueError, "gamma"),
    (lambda o: CosineAnnealingLR(o, 0), ValueError, "T_max"),
    (lambda o: CosineAnnealingLR(o, 2.5), TypeError, "T_max"),
    (lambda o: CosineAnnealingLR(o, 10, eta_min=math.nan), ValueError, "eta_min"),
    (lambda o: LinearLR(o, start_factor=0.0), ValueError, "start_factor"),
    (lambda o: LinearLR(o, end_factor=1.5), ValueError, "end_factor"),
    (lambda o: LinearLR(o, total_iters=0), ValueError, "total_iters"),
    (lambda o: LambdaLR(o, [lambda s: 1.0]), ValueError, "one function per parameter group"),
    (lambda o: LambdaLR(o, [lambda s: 1.0, 3]), TypeError, r"lr_lambda\[1\]"),
    (lambda o: LambdaLR(o, 0.5), TypeError, "lr_lambda"),
    (lambda o: LambdaLR(o, lambda s: "x"), TypeError, r"lr_lambda\[0\]\(0\)"),
    (lambda o: StepLR(object(), 2), TypeError, "optimizer"),
])
def test_arguments_are_checked(make, error, words):
    with pytest.raises(error, match=words):
        make(grouped_sgd())


def test_a_bad_state_dict_is_refused_and_changes_nothing():
    opt = grouped_sgd()
    sched = CosineAnnealingLR(opt, 10)
    sched.step()
    before = sched.get_last_lr()
    for bad in ({"last_step": np.array(3), "base_lr": np.array(0.1), "T_max": np.array(0),
                 "eta_min": np.array(0.0)},
                {"last_step": np.array(-1), "base_lr": np.array(0.1), "T_max": np.array(10),
                 "eta_min": np.array(0.0)}):
        with pytest.raises(ValueError):
            sched.load_state_dict(bad)
        assert sched.get_last_lr() == before and sched.T_max == 10 and sched.last_step == 1


def test_one_cycle_still_refuses_a_step_past_its_end_on_load():
    sched = OneCycle(grouped_sgd(), max_lr=0.1, total_steps=5)
    with pytest.raises(ValueError, match="last_step"):
        sched.load_state_dict({**sched.state_dict(), "last_step": np.array(9)})
