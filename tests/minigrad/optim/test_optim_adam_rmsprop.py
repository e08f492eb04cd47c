"""optim.Adam (coupled L2 weight decay) and optim.RMSprop (alpha, eps, weight_decay, momentum,
centered): values against torch.optim where installed and against NumPy written from
PyTorch's documented update rules otherwise; checkpoints; argument checks."""
import numpy as np
import pytest
from helpers import assert_close

from minigrad.nn import Parameter
from minigrad.optim import SGD, Adam, AdamW, RMSprop

STEPS = 6


def gradients(seed, shape, steps=STEPS):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), [rng.standard_normal(shape) for _ in range(steps)]


# ---- NumPy references, written from torch.optim's documented algorithms -----------------
def adam_reference(x, grads, lr, betas, eps, weight_decay):
    m, v, p = np.zeros_like(x), np.zeros_like(x), x.copy()
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        m_hat, v_hat = m / (1 - betas[0] ** t), v / (1 - betas[1] ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


def rmsprop_reference(x, grads, lr, alpha, eps, weight_decay, momentum, centered):
    v, avg, buf, p = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x), x.copy()
    for g in grads:
        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            avg = alpha * avg + (1 - alpha) * g
            denom = np.sqrt(v - avg * avg) + eps
        else:
            denom = np.sqrt(v) + eps
        if momentum > 0:
            buf = momentum * buf + g / denom
            p = p - lr * buf
        else:
            p = p - lr * g / denom
    return p


CONFIGS = [
    ("adam", dict(lr=0.01)),
    ("adam", dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    ("rmsprop", dict(lr=0.01)),
    ("rmsprop", dict(lr=0.02, alpha=0.9, eps=1e-6, weight_decay=0.05)),
    ("rmsprop", dict(lr=0.01, momentum=0.9)),
    ("rmsprop", dict(lr=0.01, centered=True)),
    ("rmsprop", dict(lr=0.003, alpha=0.95, weight_decay=0.2, momentum=0.5, centered=True)),
]
OURS = {"adam": Adam, "rmsprop": RMSprop}


def run_ours(kind, kwargs, x, grads):
    p = Parameter(x)
    opt = OURS[kind]([p], **kwargs)
    for g in grads:
        p.grad = g
        opt.step()
    return p.data


@pytest.mark.parametrize("kind, kwargs", CONFIGS)
def test_matches_numpy_reference(kind, kwargs):
    x, grads = gradients(1, (3, 4))
    if kind == "adam":
        full = dict(lr=kwargs["lr"], betas=kwargs.get("betas", (0.9, 0.999)),
                    eps=kwargs.get("eps", 1e-8), weight_decay=kwargs.get("weight_decay", 0.0))
        ref = adam_reference(x, grads, **full)
    else:
        full = dict(lr=kwargs["lr"], alpha=kwargs.get("alpha", 0.99), eps=kwargs.get("eps", 1e-8),
                    weight_decay=kwargs.get("weight_decay", 0.0),
                    momentum=kwargs.get("momentum", 0.0), centered=kwargs.get("centered", False))
        ref = rmsprop_reference(x, grads, **full)
    assert_close(run_ours(kind, kwargs, x, grads), ref, np.float64)
    assert not np.allclose(ref, x)  # the reference moved: the comparison means something


@pytest.mark.parametrize("kind, kwargs", CONFIGS)
def test_matches_torch_over_several_steps(kind, kwargs):
    torch = pytest.importorskip("torch")
    x, grads = gradients(2, (5,))
    t = torch.tensor(x, requires_grad=True)
    topt = {"adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}[kind]([t], **kwargs)
    for g in grads:
        t.grad = torch.tensor(g)
        topt.step()
    assert_close(run_ours(kind, kwargs, x, grads), t.detach().numpy(), np.float64)


def test_adam_weight_decay_is_coupled_unlike_adamw():
    x, grads = gradients(3, (4,))
    adam = run_ours("adam", dict(lr=0.01, weight_decay=0.5), x, grads)
    p = Parameter(x)
    opt = AdamW([p], lr=0.01, weight_decay=0.5)
    for g in grads:
        p.grad = g
        opt.step()
    assert np.abs(adam - p.data).max() > 1e-4  # the two decay rules give different results
    assert_close(adam, adam_reference(x, grads, 0.01, (0.9, 0.999), 1e-8, 0.5), np.float64)


@pytest.mark.parametrize("cls, kwargs", [(Adam, dict(lr=0.01, weight_decay=0.1)),
                                         (RMSprop, dict(lr=0.01, momentum=0.9, centered=True))])
def test_state_dict_resumes_exactly(cls, kwargs):
    x, grads = gradients(4, (2, 3))
    full = run_ours("adam" if cls is Adam else "rmsprop", kwargs, x, grads)
    p = Parameter(x)
    opt = cls([p], **kwargs)
    for g in grads[:3]:
        p.grad = g
        opt.step()
    state = {k: v.copy() for k, v in opt.state_dict().items()}
    q = Parameter(p.data)
    resumed = cls([q], **kwargs)
    resumed.load_state_dict(state)
    for g in grads[3:]:
        q.grad = g
        resumed.step()
    np.testing.assert_array_equal(q.data, full)  # same operations in the same order


def test_rmsprop_state_keys_are_fixed_whatever_the_settings():
    p = Parameter(np.ones(2))
    opt = RMSprop([p], lr=0.1)
    p.grad = np.ones(2)
    opt.step()
    keys = {k for k in opt.state_dict() if k.startswith("state.")}
    assert keys == {"state.0.step", "state.0.square_avg", "state.0.grad_avg",
                    "state.0.momentum_buffer"}


def test_rmsprop_refuses_a_negative_square_average_on_load():
    p = Parameter(np.ones(2))
    opt = RMSprop([p], lr=0.1)
    p.grad = np.ones(2)
    opt.step()
    state = opt.state_dict()
    state["state.0.square_avg"] = np.array([-1.0, 1.0])
    with pytest.raises(ValueError, match="square_avg.*negative"):
        RMSprop([Parameter(np.ones(2))], lr=0.1).load_state_dict(state)


def test_float16_parameters_update_in_float32_state():
    p = Parameter(np.ones(3, np.float16))
    opt = RMSprop([p], lr=0.01)
    p.grad = np.full(3, 0.5, np.float16)
    opt.step()
    assert p.data.dtype == np.float16 and opt.state[0]["square_avg"].dtype == np.float32
    # v = 0.01 * 0.25, step = 0.5 / (sqrt(v) + eps) = 10, p = 1 - 0.01 * 10 = 0.9
    np.testing.assert_allclose(p.data, 0.9, atol=np.finfo(np.float16).eps)


@pytest.mark.parametrize("make, error, words", [
    (lambda p: RMSprop([p], lr=0.1, alpha=1.5), ValueError, ["alpha", "1.5"]),
    (lambda p: RMSprop([p], lr=0.1, alpha="0.9"), TypeError, ["alpha", "'0.9'"]),
    (lambda p: RMSprop([p], lr=0.1, eps=0.0), ValueError, ["eps", "0.0"]),
    (lambda p: RMSprop([p], lr=0.1, momentum=-0.1), ValueError, ["momentum", "-0.1"]),
    (lambda p: RMSprop([p], lr=0.1, centered="yes"), TypeError, ["centered", "'yes'"]),
    (lambda p: Adam([p], lr=-1.0), ValueError, ["lr", "-1.0"]),
    (lambda p: Adam([p], betas=(0.9, 1.0)), ValueError, ["betas[1]", "1.0"]),
    (lambda p: Adam([p], weight_decay=None), TypeError, ["weight_decay", "None"]),
    (lambda p: SGD([p], lr=0.1, nesterov="no"), TypeError, ["nesterov", "'no'"]),
])
def test_arguments_are_checked(make, error, words):
    with pytest.raises(error) as info:
        make(Parameter(np.ones(2)))
    assert all(w in str(info.value) for w in words), str(info.value)
