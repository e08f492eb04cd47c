"""Adam/AdamW ``amsgrad``, ``maximize`` in every optimizer, and ``Adagrad``: against NumPy
written from torch.optim's documented update rules, against torch.optim itself over 25 steps
with two parameter groups, and their checkpoints (the new state entries ``max_exp_avg_sq`` and
``sum``, loaded all or nothing; the layout of an optimizer at its defaults unchanged)."""
import copy

import numpy as np
import pytest
from helpers import assert_close

from minigrad.checks import StateDictKeyError
from minigrad.nn import Parameter
from minigrad.optim import SGD, Adagrad, Adam, AdamW, RMSprop

STEPS = 25


def draws(seed, shapes, steps=STEPS):
    """Starting values and ``steps`` gradients for parameters of ``shapes``."""
    rng = np.random.default_rng(seed)
    return ([rng.standard_normal(s) for s in shapes],
            [[rng.standard_normal(s) for s in shapes] for _ in range(steps)])


def run(cls, xs, grads, groups=None, **kwargs):
    ps = [Parameter(x) for x in xs]
    opt = cls([{"params": [p], **g} for p, g in zip(ps, groups, strict=True)]
              if groups else ps, **kwargs)
    for gs in grads:
        for p, g in zip(ps, gs, strict=True):
            p.grad = g
        opt.step()
    return [p.data for p in ps], opt


# ---- NumPy references, from torch.optim's documented algorithms ------------------------------
def adam_reference(x, grads, lr, betas, eps, weight_decay, decoupled, amsgrad, maximize):
    m, v, vmax, p = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x), x.copy()
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        vmax = np.maximum(vmax, v)
        denom = np.sqrt((vmax if amsgrad else v) / (1 - betas[1] ** t)) + eps
        p = p - lr / (1 - betas[0] ** t) * m / denom
    return p


def adagrad_reference(x, grads, lr, lr_decay, weight_decay, initial, eps, maximize):
    s, p = np.full_like(x, initial), x.copy()
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        g = g + weight_decay * p
        s = s + g * g
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s) + eps)
    return p


ADAM_CASES = [
    (Adam, dict(lr=0.02, amsgrad=True)),
    (Adam, dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, amsgrad=True,
                maximize=True)),
    (AdamW, dict(lr=0.02, amsgrad=True)),
    (AdamW, dict(lr=0.01, weight_decay=0.2, amsgrad=True, maximize=True)),
    (AdamW, dict(lr=0.01, maximize=True)),
]
ADAGRAD_CASES = [dict(), dict(lr=0.1, lr_decay=0.05), dict(lr=0.05, weight_decay=0.1, eps=1e-6),
                 dict(lr=0.2, initial_accumulator_value=0.3, maximize=True)]


@pytest.mark.parametrize("cls, kwargs", ADAM_CASES)
def test_adam_amsgrad_and_maximize_match_numpy(cls, kwargs):
    (x,), grads = draws(1, [(3, 4)])
    full = dict(lr=kwargs["lr"], betas=kwargs.get("betas", (0.9, 0.999)),
                eps=kwargs.get("eps", 1e-8), amsgrad=kwargs.get("amsgrad", False),
                weight_decay=kwargs.get("weight_decay", 0.0 if cls is Adam else 1e-2),
                maximize=kwargs.get("maximize", False), decoupled=cls is AdamW)
    ref = adam_reference(x, [g for g, in grads], **full)
    (ours,), _ = run(cls, [x], grads, **kwargs)
    assert_close(ours, ref, np.float64)
    if full["amsgrad"]:  # v_max differs from v at some step, so the comparison means something
        plain = adam_reference(x, [g for g, in grads], **{**full, "amsgrad": False})
        assert np.abs(plain - ref).max() > 1e-6


@pytest.mark.parametrize("kwargs", ADAGRAD_CASES)
def test_adagrad_matches_numpy(kwargs):
    (x,), grads = draws(2, [(5,)])
    full = dict(lr=kwargs.get("lr", 1e-2), lr_decay=kwargs.get("lr_decay", 0.0),
                weight_decay=kwargs.get("weight_decay", 0.0), eps=kwargs.get("eps", 1e-10),
                initial=kwargs.get("initial_accumulator_value", 0.0),
                maximize=kwargs.get("maximize", False))
    (ours,), _ = run(Adagrad, [x], grads, **kwargs)
    assert_close(ours, adagrad_reference(x, [g for g, in grads], **full), np.float64)


TORCH_CASES = [(cls, cls.__name__, kw) for cls, kw in ADAM_CASES] + [
    (Adagrad, "Adagrad", kw) for kw in ADAGRAD_CASES] + [
    (SGD, "SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1, maximize=True)),
    (SGD, "SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    (RMSprop, "RMSprop", dict(lr=0.01, momentum=0.5, centered=True, maximize=True)),
]
#: the second group overrides settings, as torch's groups may
GROUP_OVERRIDES = {"Adam": {"lr": 0.03, "amsgrad": False}, "AdamW": {"weight_decay": 0.0},
                   "Adagrad": {"lr_decay": 0.1, "maximize": True}, "SGD": {"momentum": 0.5},
                   "RMSprop": {"alpha": 0.9, "maximize": False}}


@pytest.mark.parametrize("ours, theirs, kwargs", TORCH_CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(TORCH_CASES)])
def test_matches_torch_over_many_steps_with_groups(ours, theirs, kwargs):
    torch = pytest.importorskip("torch")
    xs, grads = draws(3, [(3, 4), (6,)])
    groups = [{}, GROUP_OVERRIDES[theirs]]
    ps = [Parameter(x) for x in xs]
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    opt = ours([{"params": [p], **g} for p, g in zip(ps, groups, strict=True)], **kwargs)
    topt = getattr(torch.optim, theirs)(
        [{"params": [t], **g} for t, g in zip(ts, groups, strict=True)], **kwargs)
    for gs in grads:
        for p, t, g in zip(ps, ts, gs, strict=True):
            p.grad, t.grad = g, torch.tensor(g)
        opt.step()
        topt.step()
        for p, t in zip(ps, ts, strict=True):  # every step, not only the last
            assert_close(p.data, t.detach().numpy(), np.float64)
    for i, t in enumerate(ts):  # the state entries are torch's, by name and by value
        for name, value in topt.state[t].items():
            if name != "step":
                assert_close(opt.state[i][name], value.numpy(), np.float64)


@pytest.mark.parametrize("cls, kwargs", [
    (SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.1)), (Adam, dict(lr=0.01, amsgrad=True)),
    (AdamW, dict(lr=0.01)), (RMSprop, dict(lr=0.01, centered=True)),
    (Adagrad, dict(lr=0.1, weight_decay=0.1))])
def test_maximize_is_minimizing_the_negated_gradient(cls, kwargs):
    (x,), grads = draws(4, [(2, 3)], steps=6)
    (up,), _ = run(cls, [x], grads, maximize=True, **kwargs)
    (down,), _ = run(cls, [x], [[-g] for g, in grads], **kwargs)
    np.testing.assert_array_equal(up, down)  # negating g first is the whole difference
    (plain,), _ = run(cls, [x], grads, **kwargs)
    assert np.abs(plain - up).max() > 1e-3


def test_maximize_leaves_the_gradient_unchanged():
    p = Parameter(np.ones(3))
    g = np.array([1.0, -2.0, 3.0])
    p.grad = g
    Adagrad([p], maximize=True).step()
    np.testing.assert_array_equal(p.grad, [1.0, -2.0, 3.0])
    assert p.data[0] > 1  # ascended


# ---- checkpoints ----------------------------------------------------------------------------
def test_defaults_keep_the_older_layout_and_a_flag_adds_its_keys():
    (x, y), grads = draws(5, [(2,), (3,)], steps=2)
    _, plain = run(AdamW, [x, y], grads)
    assert not any(k.endswith(("amsgrad", "maximize", "max_exp_avg_sq")) for k in
                   plain.state_dict())
    _, flagged = run(AdamW, [x, y], grads, groups=[{}, {"amsgrad": True}])
    keys = set(flagged.state_dict())
    assert {"amsgrad", "group.0.amsgrad", "group.1.amsgrad", "state.1.max_exp_avg_sq"} <= keys
    assert "state.0.max_exp_avg_sq" not in keys and "maximize" not in keys


def test_a_state_without_flags_loads_them_as_false():
    (x,), grads = draws(6, [(4,)], steps=3)
    _, plain = run(SGD, [x], grads, lr=0.1, momentum=0.9)
    target = SGD([Parameter(x)], lr=0.1, momentum=0.9, maximize=True)
    target.load_state_dict(plain.state_dict())
    assert target.maximize is False and target.param_groups[0]["maximize"] is False


@pytest.mark.parametrize("cls, kwargs", [(Adam, dict(lr=0.01, amsgrad=True, maximize=True)),
                                         (Adagrad, dict(lr=0.1, lr_decay=0.01,
                                                        initial_accumulator_value=0.1))])
def test_state_dict_resumes_exactly(cls, kwargs):
    (x, y), grads = draws(7, [(2, 3), (4,)], steps=8)
    (full_x, full_y), _ = run(cls, [x, y], grads, groups=[{}, {"lr": 0.05}], **kwargs)
    (hx, hy), half = run(cls, [x, y], grads[:4], groups=[{}, {"lr": 0.05}], **kwargs)
    saved = {k: v.copy() for k, v in half.state_dict().items()}
    ps = [Parameter(hx), Parameter(hy)]
    resumed = cls([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}],
                  **{**kwargs, **({"amsgrad": False} if cls is Adam else {})})
    resumed.load_state_dict(saved)
    for gs in grads[4:]:
        for p, g in zip(ps, gs, strict=True):
            p.grad = g
        resumed.step()
    np.testing.assert_array_equal(ps[0].data, full_x)  # same operations in the same order
    np.testing.assert_array_equal(ps[1].data, full_y)


def torch_layout(topt) -> dict:
    """A torch optimizer's state_dict, its nested layout written as minigrad's flat one."""
    sd = topt.state_dict()
    (group,) = sd["param_groups"]
    flat = {"num_params": np.array(len(group["params"])), "step_count": np.array(STEPS),
            "num_groups": np.array(1), "group.0.size": np.array(len(group["params"]))}
    for key, value in group.items():
        if key in ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "lr_decay",
                   "initial_accumulator_value"):
            flat[key] = np.array(value)
            if key != "lr":
                flat[f"group.0.{key}"] = np.array(value)
    for i, entries in sd["state"].items():
        for name, value in entries.items():
            flat[f"state.{i}.{name}"] = np.array(int(value)) if name == "step" else \
                value.numpy()
    return flat


@pytest.mark.parametrize("ours, theirs, kwargs", [
    (Adam, "Adam", dict(lr=0.02, amsgrad=True, maximize=True)),
    (Adagrad, "Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.2))])
def test_torch_state_written_flat_loads_and_continues_as_torch(ours, theirs, kwargs):
    torch = pytest.importorskip("torch")
    xs, grads = draws(8, [(3,), (2, 2)], steps=STEPS + 5)
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    topt = getattr(torch.optim, theirs)(ts, **kwargs)
    for k, gs in enumerate(grads):
        if k == STEPS:  # torch's state so far, loaded into a fresh minigrad optimizer
            ps = [Parameter(t.detach().numpy().copy()) for t in ts]
            opt = ours(ps)
            opt.load_state_dict(torch_layout(topt))
        if k >= STEPS:
            for p, g in zip(ps, gs, strict=True):
                p.grad = g
            opt.step()
        for t, g in zip(ts, gs, strict=True):
            t.grad = torch.tensor(g)
        topt.step()
    for p, t in zip(ps, ts, strict=True):
        assert_close(p.data, t.detach().numpy(), np.float64)


def stepped_adam(amsgrad=True):
    (x,), grads = draws(9, [(3,)], steps=3)
    _, opt = run(Adam, [x], grads, lr=0.01, amsgrad=amsgrad)
    return opt


@pytest.mark.parametrize("change, error, words", [
    (lambda s: s.pop("state.0.max_exp_avg_sq"), StateDictKeyError, "expected all of"),
    (lambda s: s.__setitem__("state.0.max_exp_avg_sq", -np.ones(3)), ValueError, "negative"),
    (lambda s: s.pop("group.0.amsgrad"), StateDictKeyError, "group.0.amsgrad"),
    (lambda s: s.__setitem__("group.0.amsgrad", np.array(0.5)), ValueError, "0-d bool"),
])
def test_a_bad_amsgrad_state_is_refused_and_changes_nothing(change, error, words):
    saved = stepped_adam().state_dict()
    change(saved)
    target = stepped_adam(amsgrad=False)
    before = copy.deepcopy((target.state, target.param_groups[0]["amsgrad"], target.amsgrad))
    with pytest.raises(error, match=words):
        target.load_state_dict(saved)
    after = (target.state, target.param_groups[0]["amsgrad"], target.amsgrad)
    assert after[1:] == before[1:] and after[0][0].keys() == before[0][0].keys()


def test_adagrad_refuses_a_negative_sum_on_load():
    (x,), grads = draws(10, [(2,)], steps=2)
    _, opt = run(Adagrad, [x], grads)
    state = opt.state_dict()
    state["state.0.sum"] = np.array([1.0, -1.0])
    with pytest.raises(ValueError, match="state.0.sum: holds a negative value"):
        Adagrad([Parameter(np.ones(2))]).load_state_dict(state)


def test_amsgrad_turned_off_drops_its_buffer_and_on_starts_it_at_v():
    p = Parameter(np.ones(2))
    opt = AdamW([p], betas=(0.9, 0.5), amsgrad=True)  # v halves: v_max stays above it
    for g in ([1.0, 2.0], [0.1, 0.1]):
        p.grad = np.array(g)
        opt.step()
    assert np.all(opt.state[0]["max_exp_avg_sq"] > opt.state[0]["exp_avg_sq"])
    opt.param_groups[0]["amsgrad"] = False
    opt.step()
    assert "max_exp_avg_sq" not in opt.state[0]
    opt.param_groups[0]["amsgrad"] = True
    opt.step()
    np.testing.assert_array_equal(opt.state[0]["max_exp_avg_sq"], opt.state[0]["exp_avg_sq"])


def test_an_adagrad_step_that_overflows_changes_nothing():
    p = Parameter(np.full(3, -3e38, np.float32))
    p.grad = np.ones(3, np.float32)  # a step of lr: -3e38 - 3e38 overflows float32
    opt = Adagrad([p], lr=3e38)
    with pytest.raises(ValueError, match="nothing was changed"):
        opt.step()
    np.testing.assert_array_equal(p.data, np.full(3, -3e38, np.float32))
    assert opt.state == [{}] and opt.step_count == 0


@pytest.mark.parametrize("make, error, words", [
    (lambda p: Adam(p, amsgrad="yes"), TypeError, "amsgrad"),
    (lambda p: SGD(p, lr=0.1, maximize=1), TypeError, "maximize"),
    (lambda p: Adagrad(p, lr_decay=-1.0), ValueError, "lr_decay"),
    (lambda p: Adagrad(p, initial_accumulator_value=-0.5), ValueError,
     "initial_accumulator_value"),
    (lambda p: Adagrad(p, eps=0.0), ValueError, "eps"),
    (lambda p: Adagrad(p, eps=1e-300), ValueError, "eps"),  # not a normal float32
    (lambda p: Adagrad([{"params": p, "maximize": "no"}]), TypeError, "maximize"),
])
def test_arguments_are_checked(make, error, words):
    with pytest.raises(error, match=words):
        make([Parameter(np.ones(2, np.float32))])
