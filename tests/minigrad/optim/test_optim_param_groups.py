"""Parameter groups of minigrad.optim: each group is updated by its own settings (exactly as an
optimizer of those settings alone, and as torch.optim), its state_dict resumes and checks the
groups, and a bad group is named with its setting. Per-group learning rates: a group dict may
carry its own "lr"; schedules scale each group's base lr ("initial_lr") as PyTorch's
schedulers do; state_dict round-trips the group lrs and keeps the old layout for optimizers
whose groups all follow optimizer.lr. Hyperparameters and params lists changed after
construction are checked at step()."""
import numpy as np
import pytest
from helpers import assert_close, assert_histories_close, optimizer_history, optimizer_problem

import minigrad as mg
from minigrad.checks import StateDictKeyError
from minigrad.nn import Parameter
from minigrad.optim import SGD, AdamW, OneCycle, RMSprop, WarmupCosine


def two_groups(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(3), rng.standard_normal((2, 2))


def grads(seed, steps, shapes):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s) for s in shapes] for _ in range(steps)]


# ---- each group by its own settings -----------------------------------------------------------
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
        for p, g in zip(params, step_grads, strict=True):
            p.grad = g.copy() if isinstance(g, np.ndarray) else g
        opt.step()
        history.append([np.array(p.data if isinstance(p, mg.Tensor) else p.detach().numpy())
                        for p in params])
    return history


@pytest.mark.parametrize("case", GROUP_CASES.values(), ids=GROUP_CASES.keys())
def test_param_groups_update_each_group_by_its_own_settings(case):
    """Each parameter moves exactly as it would in an optimizer of its group's settings."""
    optimizer_cls, defaults, overrides = case
    initial, grads = optimizer_problem(21)
    got = run_groups(lambda xs: [Parameter(x) for x in xs], optimizer_cls, initial, grads,
                     defaults, overrides)
    alone = [optimizer_history(optimizer_cls, [initial[i]], [[g[i]] for g in grads],
                 **{**defaults, **(overrides if i else {})}) for i in range(2)]
    for step, values in enumerate(got):
        for i in range(2):
            np.testing.assert_array_equal(values[i], alone[i][step][0])


@pytest.mark.parametrize("case", GROUP_CASES.values(), ids=GROUP_CASES.keys())
def test_param_groups_match_torch(case):
    torch = pytest.importorskip("torch")
    optimizer_cls, defaults, overrides = case
    torch_cls = {AdamW: torch.optim.AdamW, SGD: torch.optim.SGD}[optimizer_cls]
    initial, grads = optimizer_problem(22)
    ours = run_groups(lambda xs: [Parameter(x) for x in xs], optimizer_cls, initial, grads,
                      defaults, overrides)
    torch_grads = [[torch.from_numpy(g.copy()) for g in step] for step in grads]
    theirs = run_groups(
        lambda xs: [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs],
        torch_cls, initial, torch_grads, defaults, overrides)
    assert_histories_close(ours, theirs)


def test_param_groups_state_dict_resumes_and_checks_the_groups():
    initial, grads = optimizer_problem(23)
    make = lambda params: AdamW([{"params": params[:1]},  # noqa: E731
                                 {"params": params[1:], "weight_decay": 0.0}], lr=0.01)
    params = [Parameter(x) for x in initial]
    opt = make(params)
    for step_grads in grads[:3]:
        for p, g in zip(params, step_grads, strict=True):
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
            for p, g in zip(ps, step_grads, strict=True):
                p.grad = g.copy()
        opt.step()
        resumed.step()
    for a, b in zip(params, twin, strict=True):
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


# ---- per-group learning rates -------------------------------------------------------------------
def test_a_group_lr_is_used_for_that_group_only():
    a, b = Parameter(np.ones(2)), Parameter(np.ones(2))
    opt = SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad, b.grad = np.ones(2), np.ones(2)
    opt.step()
    np.testing.assert_array_equal(a.data, [0.9, 0.9])  # 1 - 0.1
    np.testing.assert_array_equal(b.data, [0.5, 0.5])  # 1 - 0.5
    assert opt.group_lr(0) == 0.1 and opt.group_lr(1) == 0.5


@pytest.mark.parametrize("ours, theirs, kwargs", [
    (SGD, "SGD", dict(momentum=0.9, weight_decay=0.01)),
    (AdamW, "AdamW", dict(weight_decay=0.1)),
    (RMSprop, "RMSprop", dict(momentum=0.5)),
])
def test_group_lrs_match_torch(ours, theirs, kwargs):
    torch = pytest.importorskip("torch")
    x, y = two_groups()
    p, q = Parameter(x), Parameter(y)
    tp, tq = (torch.tensor(v, requires_grad=True) for v in (x, y))
    opt = ours([{"params": [p], "lr": 0.03}, {"params": [q]}], lr=0.01, **kwargs)
    topt = getattr(torch.optim, theirs)([{"params": [tp], "lr": 0.03}, {"params": [tq]}],
                                        lr=0.01, **kwargs)
    for gx, gy in grads(1, 5, (x.shape, y.shape)):
        p.grad, q.grad = gx, gy
        tp.grad, tq.grad = torch.tensor(gx), torch.tensor(gy)
        opt.step()
        topt.step()
    assert_close(p.data, tp.detach().numpy())
    assert_close(q.data, tq.detach().numpy())


def cosine_lrs(base, min_lr, warmup, total, steps):
    """WarmupCosine's formula, written out for one base lr."""
    out = []
    for s in range(steps):
        if s < warmup:
            out.append(base * (s + 1) / warmup)
        else:
            p = (min(s, total) - warmup) / (total - warmup)
            out.append(min_lr + (base - min_lr) * (1 + np.cos(np.pi * p)) / 2)
    return out


def test_warmup_cosine_scales_each_groups_base_lr():
    p, q = Parameter(np.ones(2)), Parameter(np.ones(2))
    opt = SGD([{"params": [p]}, {"params": [q], "lr": 0.4}], lr=0.1)
    sched = WarmupCosine(opt, warmup_steps=3, total_steps=10, min_lr=0.01)
    seen = [[], []]
    for _ in range(12):
        seen[0].append(opt.group_lr(0))
        seen[1].append(opt.group_lr(1))
        sched.step()
    assert_close(seen[0], cosine_lrs(0.1, 0.01, 3, 10, 12))
    assert_close(seen[1], cosine_lrs(0.4, 0.01, 3, 10, 12))
    assert opt.param_groups[1]["initial_lr"] == 0.4 and opt.param_groups[0]["initial_lr"] == 0.1


def test_cosine_without_warmup_matches_torch_cosine_annealing_per_group():
    torch = pytest.importorskip("torch")
    p, q = Parameter(np.ones(2)), Parameter(np.ones(2))
    opt = SGD([{"params": [p], "lr": 0.3}, {"params": [q]}], lr=0.1)
    sched = WarmupCosine(opt, warmup_steps=0, total_steps=8, min_lr=0.02)
    tp, tq = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    topt = torch.optim.SGD([{"params": [tp], "lr": 0.3}, {"params": [tq]}], lr=0.1)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=8, eta_min=0.02)
    for _ in range(8):
        assert_close([opt.group_lr(0), opt.group_lr(1)], [g["lr"] for g in topt.param_groups])
        topt.step()
        sched.step()
        tsched.step()


def test_one_cycle_matches_torch_for_every_group():
    torch = pytest.importorskip("torch")
    p, q = Parameter(np.ones(2)), Parameter(np.ones(2))
    opt = SGD([{"params": [p], "lr": 0.3}, {"params": [q]}], lr=0.1)
    sched = OneCycle(opt, max_lr=0.5, total_steps=10, pct_start=0.3)
    tp, tq = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    topt = torch.optim.SGD([{"params": [tp], "lr": 0.3}, {"params": [tq]}], lr=0.1)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=0.5, total_steps=10,
                                                 pct_start=0.3, cycle_momentum=False)
    for _ in range(10):
        assert_close([opt.group_lr(0), opt.group_lr(1)], [g["lr"] for g in topt.param_groups])
        assert_close([g["initial_lr"] for g in opt.param_groups],
                     [g["initial_lr"] for g in topt.param_groups])
        topt.step()
        sched.step()
        tsched.step()


ONE_LR_ADAMW_KEYS = {  # the layout vit/train/checkpoint.py validates (written before group lrs)
    "num_params", "step_count", "lr", "betas", "eps", "weight_decay", "num_groups",
    "group.0.size", "group.0.betas", "group.0.eps", "group.0.weight_decay",
    "group.1.size", "group.1.betas", "group.1.eps", "group.1.weight_decay",
    "state.0.step", "state.0.exp_avg", "state.0.exp_avg_sq",
    "state.1.step", "state.1.exp_avg", "state.1.exp_avg_sq",
}


def test_one_lr_layout_is_unchanged_also_under_a_schedule():
    p, q = Parameter(np.ones(2)), Parameter(np.ones(3))
    opt = AdamW([{"params": [p]}, {"params": [q], "weight_decay": 0.0}], lr=0.1)
    OneCycle(opt, max_lr=0.1, total_steps=5).step()
    p.grad, q.grad = np.ones(2), np.ones(3)
    opt.step()
    assert set(opt.state_dict()) == ONE_LR_ADAMW_KEYS


def make_scheduled(x, y):
    p, q = Parameter(x), Parameter(y)
    opt = AdamW([{"params": [p], "lr": 0.02}, {"params": [q]}], lr=0.005)
    return (p, q), opt, WarmupCosine(opt, warmup_steps=2, total_steps=9)


def test_group_lrs_round_trip_and_resume_mid_schedule():
    x, y = two_groups(5)
    steps = grads(6, 7, (x.shape, y.shape))
    (p, q), opt, sched = make_scheduled(x, y)
    for gx, gy in steps:
        p.grad, q.grad = gx, gy
        opt.step()
        sched.step()
    (p2, q2), opt2, sched2 = make_scheduled(x, y)
    for gx, gy in steps[:4]:
        p2.grad, q2.grad = gx, gy
        opt2.step()
        sched2.step()
    saved_opt = {k: v.copy() for k, v in opt2.state_dict().items()}
    saved_sched = {k: v.copy() for k, v in sched2.state_dict().items()}
    assert {"group.0.lr", "group.0.initial_lr"} <= set(saved_opt)
    assert "group.1.lr" not in saved_opt  # group 1 follows optimizer.lr
    (p3, q3), opt3, sched3 = make_scheduled(p2.data, q2.data)
    opt3.load_state_dict(saved_opt)
    sched3.load_state_dict(saved_sched)
    assert opt3.group_lr(0) == opt2.group_lr(0) and opt3.group_lr(1) == opt2.group_lr(1)
    for gx, gy in steps[4:]:
        p3.grad, q3.grad = gx, gy
        opt3.step()
        sched3.step()
    np.testing.assert_array_equal(p3.data, p.data)
    np.testing.assert_array_equal(q3.data, q.data)


def test_group_lr_state_loads_only_into_an_optimizer_with_that_group_lr():
    x, y = two_groups(7)
    _, opt, _ = make_scheduled(x, y)
    state = opt.state_dict()
    same_lr = AdamW([{"params": [Parameter(x)]}, {"params": [Parameter(y)]}], lr=0.005)
    with pytest.raises(StateDictKeyError, match="unexpected keys .*group.0.lr"):
        same_lr.load_state_dict(state)
    state["group.0.lr"] = np.array(-1.0)
    _, fresh, _ = make_scheduled(x, y)
    before = fresh.group_lr(0)
    with pytest.raises(ValueError, match="group.0.lr"):
        fresh.load_state_dict(state)
    assert fresh.group_lr(0) == before == 0.01  # nothing changed (warmup step 0: 0.02 / 2)


# ---- hyperparameters changed after construction are checked at step() -----------------------
BAD_GROUP_VALUES = [
    (SGD, dict(lr=0.1, momentum=0.9), "weight_decay", float("nan"), "weight_decay"),
    (SGD, dict(lr=0.1, momentum=0.9), "momentum", float("nan"), "momentum"),
    (SGD, dict(lr=0.1, momentum=0.9), "momentum", -1.0, "momentum"),
    (SGD, dict(lr=0.1, momentum=0.9), "dampening", 2.0, "dampening"),
    (SGD, dict(lr=0.1, momentum=0.9, nesterov=True), "dampening", 0.5, "nesterov"),
    (SGD, dict(lr=0.1), "nesterov", True, "nesterov"),
    (AdamW, dict(lr=0.1), "betas", (2.0, 0.9), r"betas\[0\]"),
    (AdamW, dict(lr=0.1), "betas", (0.9,), "betas"),
    (AdamW, dict(lr=0.1), "weight_decay", float("nan"), "weight_decay"),
    (AdamW, dict(lr=0.1), "weight_decay", "0.1", "weight_decay"),
    (AdamW, dict(lr=0.1), "lr", -0.5, "lr"),  # a group lr is checked as the constructor does
]


@pytest.mark.parametrize("cls, kwargs, key, value, words", BAD_GROUP_VALUES)
def test_group_hyperparameters_changed_after_construction_are_checked_at_step(
        cls, kwargs, key, value, words):
    p = Parameter(np.ones(3, np.float32))
    opt = cls([p], **kwargs)
    opt.param_groups[0][key] = value
    p.grad = np.ones(3, np.float32)
    with pytest.raises((ValueError, TypeError), match=words):
        opt.step()
    np.testing.assert_array_equal(p.data, np.ones(3, np.float32))
    assert p.version == 0 and not opt.state[0] and opt.step_count == 0


def test_lr_set_negative_after_construction_is_refused_at_step():
    p = Parameter(np.ones(3))
    opt = SGD([p], lr=0.1)
    opt.lr = -1.0
    p.grad = np.ones(3)
    with pytest.raises(ValueError, match="lr"):
        opt.step()
    np.testing.assert_array_equal(p.data, np.ones(3))


def test_a_valid_change_after_construction_is_used():
    p = Parameter(np.ones(3))
    opt = SGD([p], lr=0.5)
    opt.param_groups[0]["weight_decay"] = 1  # an int is a real number: accepted
    p.grad = np.zeros(3)
    opt.step()
    np.testing.assert_array_equal(p.data, np.full(3, 0.5))  # 1 - 0.5 * (0 + 1 * 1)


def test_a_group_params_list_edited_after_construction_is_refused_at_step():
    a, b = Parameter(np.ones(2)), Parameter(np.ones(2))
    opt = SGD([a], lr=0.1)
    opt.param_groups[0]["params"].append(b)  # would be silently ignored
    a.grad = b.grad = np.ones(2)
    with pytest.raises(ValueError, match=r"param_groups\[0\]\['params'\] was changed"):
        opt.step()
    np.testing.assert_array_equal(a.data, np.ones(2))
