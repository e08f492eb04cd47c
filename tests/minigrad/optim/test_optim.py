"""minigrad.optim's SGD and AdamW: update rules against their formulas and against torch.optim,
float32 kept, parameters without a gradient untouched, each parameter's own bias correction,
a training run that learns, and the constructors' argument checks. (Checkpoints:
test_optim_state_dict.py; schedules: test_optim_schedules.py; parameter groups:
test_optim_param_groups.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    ADAMW_CONFIGS,
    SGD_CONFIGS,
    assert_histories_close,
    optimizer_history,
    optimizer_problem,
)

import minigrad as mg
from minigrad.nn import Parameter
from minigrad.optim import SGD, AdamW, OneCycle, WarmupCosine


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


# ---- update rules against their formulas -------------------------------------------------
@pytest.mark.parametrize("config", SGD_CONFIGS.values(), ids=SGD_CONFIGS.keys())
def test_sgd_matches_its_formula(config):
    initial, grads = optimizer_problem()
    assert_histories_close(optimizer_history(SGD, initial, grads, **config),
                           reference_sgd(initial, grads, **config))


@pytest.mark.parametrize("config", ADAMW_CONFIGS.values(), ids=ADAMW_CONFIGS.keys())
def test_adamw_matches_its_formula(config):
    initial, grads = optimizer_problem(1)
    assert_histories_close(optimizer_history(AdamW, initial, grads, **config),
                           reference_adamw(initial, grads, **config))


@pytest.mark.parametrize("optimizer_cls, config, reference", [
    (SGD, SGD_CONFIGS["all"], reference_sgd),
    (SGD, SGD_CONFIGS["dampening"], reference_sgd),
    (AdamW, ADAMW_CONFIGS["decay"], reference_adamw),
])
def test_float32_parameters_stay_float32(optimizer_cls, config, reference):
    initial, grads = optimizer_problem(2, np.float32)
    params = [Parameter(x) for x in initial]
    opt = optimizer_cls(params, **config)
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = g
        opt.step()
    assert all(p.dtype == np.float32 for p in params)
    assert all(v.dtype == np.float32 for k, v in opt.state_dict().items() if k.startswith("state.")
               and v.ndim > 0)
    want = reference([x.astype(np.float64) for x in initial],
                     [[g.astype(np.float64) for g in s] for s in grads], **config)[-1]
    for p, w in zip(params, want, strict=True):
        np.testing.assert_allclose(p.data, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("optimizer_cls, config", [(SGD, SGD_CONFIGS["all"]),
                                                   (AdamW, ADAMW_CONFIGS["decay"])])
def test_params_without_grad_are_untouched_and_grads_are_not_modified(optimizer_cls, config):
    initial, grads = optimizer_problem(3)
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
    initial, grads = optimizer_problem(4)
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


# ---- argument checks ------------------------------------------------------------------------
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


# ---- against PyTorch (skipped when torch is not installed) -------------------------------
def run_torch(torch, optimizer_cls, initial, grads, **kwargs):
    params = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in initial]
    opt = optimizer_cls(params, **kwargs)
    history = []
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = torch.from_numpy(g.copy())
        opt.step()
        history.append([p.detach().numpy().copy() for p in params])
    return history


@pytest.mark.parametrize("config", SGD_CONFIGS.values(), ids=SGD_CONFIGS.keys())
def test_sgd_matches_torch(config):
    torch = pytest.importorskip("torch")
    initial, grads = optimizer_problem(9)
    assert_histories_close(optimizer_history(SGD, initial, grads, **config),
                           run_torch(torch, torch.optim.SGD, initial, grads, **config))


@pytest.mark.parametrize("config", ADAMW_CONFIGS.values(), ids=ADAMW_CONFIGS.keys())
def test_adamw_matches_torch(config):
    torch = pytest.importorskip("torch")
    initial, grads = optimizer_problem(10)
    assert_histories_close(optimizer_history(AdamW, initial, grads, **config),
                           run_torch(torch, torch.optim.AdamW, initial, grads, **config))
