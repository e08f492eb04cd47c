"""Tests of minigrad.optim: update rules against their formulas (and torch), checkpoints,
schedules."""
from __future__ import annotations

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import Parameter
from minigrad.optim import SGD, AdamW, OneCycle, WarmupCosine

SHAPES = [(3, 4), (5,)]
STEPS = 6


def make_problem(seed: int = 0, dtype=np.float64):
    """Initial parameter values and a gradient for every step and parameter."""
    rng = np.random.default_rng(seed)
    initial = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    return initial, grads


def run(optimizer_cls, initial, grads, **kwargs):
    """Parameter values after each step of a minigrad optimizer."""
    params = [Parameter(x) for x in initial]
    opt = optimizer_cls(params, **kwargs)
    history = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = g.copy()
        opt.step()
        history.append([p.data.copy() for p in params])
    return history


def reference_sgd(initial, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                  nesterov=False):
    params = [x.copy() for x in initial]
    buffers = [None] * len(params)
    history = []
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            d = g + weight_decay * params[i]
            if momentum:
                if buffers[i] is None:
                    buffers[i] = d
                else:
                    buffers[i] = momentum * buffers[i] + (1 - dampening) * d
                d = d + momentum * buffers[i] if nesterov else buffers[i]
            params[i] = params[i] - lr * d
        history.append([p.copy() for p in params])
    return history


def reference_adamw(initial, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    b1, b2 = betas
    params = [x.copy() for x in initial]
    m = [np.zeros_like(x) for x in initial]
    v = [np.zeros_like(x) for x in initial]
    history = []
    for t, step_grads in enumerate(grads, start=1):
        for i, g in enumerate(step_grads):
            params[i] = params[i] * (1 - lr * weight_decay)
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            m_hat = m[i] / (1 - b1 ** t)
            v_hat = v[i] / (1 - b2 ** t)
            params[i] = params[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
        history.append([p.copy() for p in params])
    return history


def assert_histories_close(actual, expected, rtol=1e-12, atol=1e-14):
    for step, (got, want) in enumerate(zip(actual, expected)):
        for i, (a, b) in enumerate(zip(got, want)):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol,
                                       err_msg=f"step {step + 1}, parameter {i}")


SGD_CONFIGS = {
    "plain": dict(lr=0.1),
    "momentum": dict(lr=0.1, momentum=0.9),
    "dampening": dict(lr=0.05, momentum=0.8, dampening=0.3),
    "nesterov": dict(lr=0.1, momentum=0.9, nesterov=True),
    "weight_decay": dict(lr=0.1, weight_decay=0.05),
    "all": dict(lr=0.03, momentum=0.7, weight_decay=0.1, nesterov=True),
}
ADAMW_CONFIGS = {
    "default": dict(),
    "decay": dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1),
    "no_decay": dict(lr=0.01, weight_decay=0.0),
}


# ---- update rules against their formulas -------------------------------------------------
@pytest.mark.parametrize("config", SGD_CONFIGS.values(), ids=SGD_CONFIGS.keys())
def test_sgd_matches_its_formula(config):
    initial, grads = make_problem()
    assert_histories_close(run(SGD, initial, grads, **config),
                           reference_sgd(initial, grads, **config))


@pytest.mark.parametrize("config", ADAMW_CONFIGS.values(), ids=ADAMW_CONFIGS.keys())
def test_adamw_matches_its_formula(config):
    initial, grads = make_problem(1)
    assert_histories_close(run(AdamW, initial, grads, **config),
                           reference_adamw(initial, grads, **config))


@pytest.mark.parametrize("optimizer_cls, config, reference", [
    (SGD, SGD_CONFIGS["all"], reference_sgd),
    (SGD, SGD_CONFIGS["dampening"], reference_sgd),
    (AdamW, ADAMW_CONFIGS["decay"], reference_adamw),
])
def test_float32_parameters_stay_float32(optimizer_cls, config, reference):
    initial, grads = make_problem(2, np.float32)
    params = [Parameter(x) for x in initial]
    opt = optimizer_cls(params, **config)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = g
        opt.step()
    assert all(p.dtype == np.float32 for p in params)
    assert all(v.dtype == np.float32 for k, v in opt.state_dict().items() if k.startswith("state.")
               and v.ndim > 0)
    want = reference([x.astype(np.float64) for x in initial],
                     [[g.astype(np.float64) for g in s] for s in grads], **config)[-1]
    for p, w in zip(params, want):
        np.testing.assert_allclose(p.data, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("optimizer_cls, config", [(SGD, SGD_CONFIGS["all"]),
                                                   (AdamW, ADAMW_CONFIGS["decay"])])
def test_params_without_grad_are_untouched_and_grads_are_not_modified(optimizer_cls, config):
    initial, grads = make_problem(3)
    with_grad, without_grad = Parameter(initial[0]), Parameter(initial[1])
    opt = optimizer_cls([with_grad, without_grad], **config)
    for step_grads in grads[:3]:
        g = step_grads[0].copy()
        with_grad.grad = g
        opt.step()
        assert with_grad.grad is g
        np.testing.assert_array_equal(g, step_grads[0])
    np.testing.assert_array_equal(without_grad.data, initial[1])
    assert not any(k.startswith("state.1.") for k in opt.state_dict())
    assert not np.array_equal(with_grad.data, initial[0])


def test_adamw_bias_correction_counts_each_parameters_own_updates():
    initial, grads = make_problem(4)
    late = Parameter(initial[1])
    opt = AdamW([Parameter(initial[0]), late], lr=0.1)
    opt.params[0].grad = grads[0][0]
    opt.step()  # ``late`` has no gradient yet: its first update comes next
    late.grad = grads[1][1]
    opt.step()
    first_update = reference_adamw([initial[1]], [[grads[1][1]]], lr=0.1)[0][0]
    np.testing.assert_allclose(late.data, first_update, rtol=1e-13)


def test_training_a_linear_layer_reduces_the_loss():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3
    layer = mg.nn.Linear(3, 1, rng=rng)
    opt = SGD(layer.parameters(), lr=0.2, momentum=0.5)
    losses = []
    for _ in range(100):
        opt.zero_grad()
        diff = layer(mg.Tensor(x)) - mg.Tensor(y)
        loss = (diff * diff).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 1e-3 * losses[0]


# ---- checkpoints -------------------------------------------------------------------------
@pytest.mark.parametrize("optimizer_cls, config", [(SGD, SGD_CONFIGS["all"]),
                                                   (SGD, SGD_CONFIGS["plain"]),
                                                   (AdamW, ADAMW_CONFIGS["decay"])])
def test_state_dict_resumes_bit_identically(tmp_path, optimizer_cls, config):
    initial, grads = make_problem(6)
    straight = run(optimizer_cls, initial, grads, **config)[-1]

    half = STEPS // 2
    params = [Parameter(x) for x in initial]
    opt = optimizer_cls(params, **config)
    for step_grads in grads[:half]:
        for p, g in zip(params, step_grads):
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
        for p, g in zip(resumed, step_grads):
            p.grad = g
        fresh.step()
    for a, b in zip(resumed, straight):
        np.testing.assert_array_equal(a.data, b)


def test_optimizer_state_dict_is_a_copy():
    initial, grads = make_problem(7)
    params = [Parameter(x) for x in initial]
    opt = AdamW(params)
    for p, g in zip(params, grads[0]):
        p.grad = g
    opt.step()
    state = opt.state_dict()
    saved = {k: v.copy() for k, v in state.items()}
    opt.step()
    for k in state:
        np.testing.assert_array_equal(state[k], saved[k])


def test_optimizer_load_state_dict_rejects_mismatches():
    initial, grads = make_problem(8)
    params = [Parameter(x) for x in initial]
    opt = SGD(params, lr=0.1, momentum=0.9)
    for p, g in zip(params, grads[0]):
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


@pytest.mark.parametrize("make, error, words", [
    (lambda p: SGD(p, lr=-0.1), ValueError, ["lr", "-0.1"]),
    (lambda p: SGD(p, lr=0.1, momentum=-1), ValueError, ["momentum"]),
    (lambda p: SGD(p, lr=0.1, nesterov=True), ValueError, ["nesterov", "momentum"]),
    (lambda p: SGD(p, lr=0.1, momentum=0.9, dampening=0.5, nesterov=True), ValueError,
     ["dampening"]),
    (lambda p: AdamW(p, betas=(0.9, 1.0)), ValueError, ["betas[1]", "1.0"]),
    (lambda p: AdamW(p, betas=(-0.1, 0.9)), ValueError, ["betas[0]"]),
    (lambda p: AdamW(p, eps=-1e-8), ValueError, ["eps"]),
    (lambda p: AdamW(p, weight_decay=float("nan")), ValueError, ["weight_decay"]),
    (lambda p: SGD([], lr=0.1), ValueError, ["empty"]),
    (lambda p: SGD([np.zeros(2)], lr=0.1), TypeError, ["params[0]", "ndarray"]),
    (lambda p: SGD([mg.tensor([1.0])], lr=0.1), ValueError, ["params[0]", "require grad"]),
    (lambda p: SGD(p + p, lr=0.1), ValueError, ["twice"]),
    (lambda p: WarmupCosine(SGD(p, lr=0.1), 0, total_steps=0), ValueError, ["total_steps"]),
    (lambda p: WarmupCosine(SGD(p, lr=0.1), 10, total_steps=10), ValueError, ["warmup_steps"]),
    (lambda p: WarmupCosine(SGD(p, lr=0.1), 1, 10, min_lr=-1), ValueError, ["min_lr"]),
    (lambda p: OneCycle(SGD(p, lr=0.1), 1.0, total_steps=-5), ValueError, ["total_steps"]),
    (lambda p: OneCycle(SGD(p, lr=0.1), 1.0, 10, pct_start=1.5), ValueError, ["pct_start"]),
    (lambda p: OneCycle(SGD(p, lr=0.1), -1.0, 10), ValueError, ["max_lr"]),
    (lambda p: OneCycle("sgd", 1.0, 10), TypeError, ["optimizer", "str"]),
])
def test_arguments_are_checked(make, error, words):
    with pytest.raises(error) as info:
        make([Parameter(np.zeros(2))])
    assert all(word in str(info.value) for word in words), str(info.value)


# ---- schedules ---------------------------------------------------------------------------
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


# ---- against PyTorch (skipped when torch is not installed) -------------------------------
def run_torch(torch, optimizer_cls, initial, grads, **kwargs):
    params = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in initial]
    opt = optimizer_cls(params, **kwargs)
    history = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = torch.from_numpy(g.copy())
        opt.step()
        history.append([p.detach().numpy().copy() for p in params])
    return history


@pytest.mark.parametrize("config", SGD_CONFIGS.values(), ids=SGD_CONFIGS.keys())
def test_sgd_matches_torch(config):
    torch = pytest.importorskip("torch")
    initial, grads = make_problem(9)
    assert_histories_close(run(SGD, initial, grads, **config),
                           run_torch(torch, torch.optim.SGD, initial, grads, **config))


@pytest.mark.parametrize("config", ADAMW_CONFIGS.values(), ids=ADAMW_CONFIGS.keys())
def test_adamw_matches_torch(config):
    torch = pytest.importorskip("torch")
    initial, grads = make_problem(10)
    assert_histories_close(run(AdamW, initial, grads, **config),
                           run_torch(torch, torch.optim.AdamW, initial, grads, **config))


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


# ---- parameter groups -------------------------------------------------------------------------
GROUP_CASES = {  # optimizer, constructor defaults, the second group's overrides
    "adamw-decay": (AdamW, dict(lr=0.05, weight_decay=0.1), dict(weight_decay=0.0)),
    "adamw-betas-eps": (AdamW, dict(lr=0.02), dict(betas=(0.5, 0.9), eps=1e-4)),
    "sgd-momentum": (SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.05),
                     dict(momentum=0.0, weight_decay=0.0)),
    "sgd-nesterov": (SGD, dict(lr=0.1), dict(momentum=0.8, nesterov=True)),
}


def run_groups(make_params, optimizer_cls, initial, grads, defaults, overrides):
    """Histories with parameter 0 in a default group and parameter 1 in an overriding one."""
    params = make_params(initial)
    opt = optimizer_cls([{"params": [params[0]]}, {"params": [params[1]], **overrides}],
                        **defaults)
    history = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = g.copy() if isinstance(g, np.ndarray) else g
        opt.step()
        history.append([np.array(p.data if isinstance(p, mg.Tensor) else p.detach().numpy())
                        for p in params])
    return history


@pytest.mark.parametrize("case", GROUP_CASES.values(), ids=GROUP_CASES.keys())
def test_param_groups_update_each_group_by_its_own_settings(case):
    """Each parameter moves exactly as it would in an optimizer of its group's settings."""
    optimizer_cls, defaults, overrides = case
    initial, grads = make_problem(21)
    got = run_groups(lambda xs: [Parameter(x) for x in xs], optimizer_cls, initial, grads,
                     defaults, overrides)
    alone = [run(optimizer_cls, [initial[i]], [[g[i]] for g in grads],
                 **{**defaults, **(overrides if i else {})}) for i in range(2)]
    for step, values in enumerate(got):
        for i in range(2):
            np.testing.assert_array_equal(values[i], alone[i][step][0])


@pytest.mark.parametrize("case", GROUP_CASES.values(), ids=GROUP_CASES.keys())
def test_param_groups_match_torch(case):
    torch = pytest.importorskip("torch")
    optimizer_cls, defaults, overrides = case
    torch_cls = {AdamW: torch.optim.AdamW, SGD: torch.optim.SGD}[optimizer_cls]
    initial, grads = make_problem(22)
    ours = run_groups(lambda xs: [Parameter(x) for x in xs], optimizer_cls, initial, grads,
                      defaults, overrides)
    torch_grads = [[torch.from_numpy(g.copy()) for g in step] for step in grads]
    theirs = run_groups(
        lambda xs: [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs],
        torch_cls, initial, torch_grads, defaults, overrides)
    assert_histories_close(ours, theirs)


def test_param_groups_state_dict_resumes_and_checks_the_groups():
    initial, grads = make_problem(23)
    make = lambda params: AdamW([{"params": params[:1]},  # noqa: E731
                                 {"params": params[1:], "weight_decay": 0.0}], lr=0.01)
    params = [Parameter(x) for x in initial]
    opt = make(params)
    for step_grads in grads[:3]:
        for p, g in zip(params, step_grads):
            p.grad = g.copy()
        opt.step()
    state = opt.state_dict()
    assert float(state["group.1.weight_decay"]) == 0.0 and int(state["group.0.size"]) == 1
    twin = [Parameter(p.data.copy()) for p in params]
    resumed = make(twin)
    resumed.param_groups[1]["weight_decay"] = 0.5  # overwritten by the load
    resumed.load_state_dict(state)
    assert resumed.param_groups[1]["weight_decay"] == 0.0
    for step_grads in grads[3:]:
        for ps in (params, twin):
            for p, g in zip(ps, step_grads):
                p.grad = g.copy()
        opt.step()
        resumed.step()
    for a, b in zip(params, twin):
        np.testing.assert_array_equal(a.data, b.data)
    one_group = AdamW([Parameter(x.copy()) for x in initial], lr=0.01)
    with pytest.raises(ValueError, match="num_groups got 2; expected 1"):
        one_group.load_state_dict(state)
    regrouped = AdamW([{"params": [Parameter(x.copy()) for x in initial]}, {"params": []}],
                      lr=0.01)
    with pytest.raises(ValueError, match="group.0.size got 1; expected 2"):
        regrouped.load_state_dict(state)
    legacy = {k: v for k, v in one_group.state_dict().items() if not k.startswith(("group.",
                                                                                  "num_groups"))}
    one_group.load_state_dict(legacy)  # written before groups existed: still loads


@pytest.mark.parametrize("groups, error, words", [
    ([{"params": "P", "lr": -0.1}], ValueError, ("params[0] lr", "-0.1")),
    ([{"params": "P", "momentum": 0.9}], ValueError, ("unknown keys ['momentum']",)),
    ([{"params": "P", "weight_decay": -1.0}], ValueError, ("weight_decay", "-1.0")),
    ([{"params": "P", "betas": (0.9,)}], ValueError, ("betas", "pair")),
    ([{"weight_decay": 0.0}], TypeError, ("params[0]", "'params' list")),
    ([{"params": []}], ValueError, ("no parameter",)),
    ([{"params": "P"}, {"params": "P"}], ValueError, ("appears twice",)),
])
def test_param_group_errors_name_the_group_and_setting(groups, error, words):
    p = Parameter(np.ones(3))
    groups = [{k: ([p] if v == "P" else v) for k, v in g.items()} for g in groups]
    with pytest.raises(error) as info:
        AdamW(groups, lr=0.1)
    for word in words:
        assert word in str(info.value)
