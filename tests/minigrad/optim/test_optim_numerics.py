"""Optimizer numbers that would silently go wrong: float16 AdamW, hyperparameters a dtype
cannot hold (also a group's eps changed after construction), partial updates when one
parameter cannot be updated, a step that overflows (refused, all or nothing, naming the
parameter), and 0-d parameters updated like one-element ones. (Checkpoints whose values
would give NaN or a crash later: test_optim_state_dict.py.)"""
from __future__ import annotations

import copy

import numpy as np
import pytest

from minigrad.nn import Parameter
from minigrad.optim import SGD, AdamW

RNG = np.random.default_rng(7)


def adamw_reference(p, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    """torch.optim.AdamW's formulas, in float64."""
    p = p.astype(np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    b1, b2 = betas
    for t, g in enumerate(grads, start=1):
        g = g.astype(np.float64)
        p = p * (1 - lr * weight_decay)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p


# ---- float16 AdamW -----------------------------------------------------------------------------
def test_float16_adamw_with_default_eps_gives_the_float64_update():
    # zero gradients (v = 0, where eps = 1e-8 rounded to float16 is 0: 0/0) and small ones
    # (g² (1 - β2) underflows float16: v = 0 and the step becomes lr m / eps)
    p0 = RNG.standard_normal(6).astype(np.float16)
    grads = [np.array([0.0, 1e-4, -1e-3, 0.5, -2.0, 0.0], np.float16) for _ in range(3)]
    p = Parameter(p0)
    opt = AdamW([p], lr=1e-2)
    for g in grads:
        p.grad = g.copy()
        opt.step()
    assert p.dtype == np.float16
    assert np.all(np.isfinite(p.data))
    expected = adamw_reference(p0, grads, lr=1e-2)
    # each step rounds once to float16; allow a few float16 ulps at the values' magnitude
    tol = 4 * 3 * np.finfo(np.float16).eps * np.maximum(np.abs(expected), 1.0)
    np.testing.assert_array_less(np.abs(p.data.astype(np.float64) - expected), tol)


def test_float16_adamw_state_is_float32_and_survives_a_checkpoint():
    p = Parameter(np.ones(3, np.float16))
    opt = AdamW([p], lr=1e-3)
    p.grad = np.full(3, 1e-3, np.float16)
    opt.step()
    state = opt.state_dict()
    assert state["state.0.exp_avg"].dtype == np.float32
    assert state["state.0.exp_avg_sq"].dtype == np.float32
    q = Parameter(p.data)
    again = AdamW([q], lr=1e-3)
    again.load_state_dict(state)
    p.grad = q.grad = np.full(3, -2e-3, np.float16)
    opt.step()
    again.step()
    np.testing.assert_array_equal(p.data, q.data)


@pytest.mark.parametrize("eps", [0.0, -1e-8])
def test_adamw_eps_must_be_positive(eps):
    with pytest.raises(ValueError, match=r"eps: got .*expected a finite number > 0"):
        AdamW([Parameter(np.ones(2))], eps=eps)
    with pytest.raises(ValueError, match="eps"):
        AdamW([{"params": [Parameter(np.ones(2))], "eps": eps}])


def test_adamw_eps_that_rounds_to_zero_in_the_dtype_is_refused():
    with pytest.raises(ValueError) as e:
        AdamW([Parameter(np.ones(2, np.float32))], eps=1e-50)
    msg = str(e.value)
    assert "eps" in msg and "float32" in msg and str(np.finfo(np.float32).tiny) in msg
    AdamW([Parameter(np.ones(2))], eps=1e-50)  # float64 holds it


def test_rmsprop_eps_that_rounds_to_zero_in_the_dtype_is_refused_at_the_step():
    from minigrad.optim import RMSprop
    p = Parameter(np.ones(2, np.float32))
    p.grad = np.ones(2, np.float32)
    opt = RMSprop([p], eps=1e-50)
    with pytest.raises(ValueError, match=r"eps: got 1e-50.*float32"):
        opt.step()
    np.testing.assert_array_equal(p.data, np.ones(2, np.float32))  # nothing moved
    q = Parameter(np.ones(2))  # float64 holds it
    q.grad = np.ones(2)
    RMSprop([q], eps=1e-50).step()


def test_lr_that_overflows_the_parameter_dtype_is_refused_before_any_update():
    a = Parameter(np.ones(2))
    b = Parameter(np.ones(2, np.float16))
    opt = SGD([a, b], lr=1.0)
    opt.lr = 1e6  # above float16's max 65504: every update would be inf
    a.grad, b.grad = np.ones(2), np.ones(2, np.float16)
    with pytest.raises(ValueError, match=r"lr: got 1000000.0.*float16.*parameter 1"):
        opt.step()
    np.testing.assert_array_equal(a.data, np.ones(2))
    assert opt.step_count == 0


# ---- all or nothing ------------------------------------------------------------------------
def make_pair(opt_cls, **kwargs):
    a = Parameter(RNG.standard_normal(3))
    b = Parameter(RNG.standard_normal(2))
    opt = opt_cls([a, b], lr=0.1, **kwargs)
    a.grad, b.grad = RNG.standard_normal(3), RNG.standard_normal(2)
    return a, b, opt


OPTIMIZERS = [(SGD, {}), (SGD, {"momentum": 0.9}), (AdamW, {}), (AdamW, {"weight_decay": 0.0})]


@pytest.mark.parametrize("opt_cls, kwargs", OPTIMIZERS)
def test_read_only_parameter_fails_the_step_before_any_update(opt_cls, kwargs):
    a, b, opt = make_pair(opt_cls, **kwargs)
    before = a.data.copy()
    b.data.flags.writeable = False
    with pytest.raises(ValueError, match=r"parameter 1 .*read-only"):
        opt.step()
    np.testing.assert_array_equal(a.data, before)
    assert opt.step_count == 0 and all(not s for s in opt.state)
    assert a.version == 0
    b.data.flags.writeable = True
    opt.step()  # and the step then works
    assert opt.step_count == 1 and a.version == 1 and b.version == 1


@pytest.mark.parametrize("opt_cls, kwargs", [(SGD, {"momentum": 0.9}), (AdamW, {})])
def test_state_that_no_longer_fits_the_parameter_fails_before_any_update(opt_cls, kwargs):
    a, b, opt = make_pair(opt_cls, **kwargs)
    opt.step()
    b.data = np.zeros(5)  # replaced by hand: its buffers have shape (2,)
    b.grad = np.ones(5)
    before = a.data.copy()
    saved = {k: v.copy() for k, v in opt.state[0].items() if isinstance(v, np.ndarray)}
    with pytest.raises(ValueError, match=r"parameter 1 .*shape \(2,\).*\(5,\)"):
        opt.step()
    np.testing.assert_array_equal(a.data, before)
    for k, v in saved.items():
        np.testing.assert_array_equal(opt.state[0][k], v)
    assert opt.step_count == 1


def test_parameter_whose_data_became_an_integer_array_is_refused():
    a, b, opt = make_pair(SGD)
    b.data = np.array([1, 2])
    b.grad = np.ones(2)
    with pytest.raises(TypeError, match=r"parameter 1 .*int64"):
        opt.step()


def test_step_bumps_the_version_of_updated_parameters_only():
    a, b, opt = make_pair(AdamW)
    b.grad = None
    opt.step()
    assert (a.version, b.version) == (1, 0)


# ---- a group's eps changed after construction ----------------------------------------------------
def test_a_group_eps_set_to_zero_after_construction_is_refused_at_the_step():
    p = Parameter(np.ones(2, np.float32))
    opt = AdamW([p])
    opt.param_groups[0]["eps"] = 0.0
    p.grad = np.ones(2, np.float32)
    with pytest.raises(ValueError, match=r"eps: got 0.0.*float32.*parameter 0"):
        opt.step()
    np.testing.assert_array_equal(p.data, np.ones(2, np.float32))
    assert p.version == 0 and not opt.state[0]


# ---- a step that overflows is refused, all or nothing ---------------------------------------
def overflow_cases():
    def sgd32():
        a, b = Parameter(np.ones(4, np.float32)), Parameter(np.ones((2, 3), np.float32))
        a.grad, b.grad = np.ones(4, np.float32), np.full((2, 3), 10, np.float32)
        return [a, b], SGD([a, b], lr=1e38), 1, "(2, 3)"

    def adamw16():
        a, b = Parameter(np.ones(4, np.float16)), Parameter(np.ones(5, np.float16))
        a.grad, b.grad = np.ones(4, np.float16), np.ones(5, np.float16)
        return [a, b], AdamW([a, b], lr=1e5), 0, "(4,)"

    def sgd_momentum_buffer():
        # the parameter update stays finite but the momentum buffer (state) overflows
        a = Parameter(np.zeros(2, np.float32))
        a.grad = np.full(2, 3e38, np.float32)
        opt = SGD([a], lr=1e-30, momentum=0.9, weight_decay=0.0)
        opt.step()
        a.grad = np.full(2, 3e38, np.float32)  # 0.9 * 3e38 + 3e38 overflows float32
        return [a], opt, 0, "(2,)"
    return [sgd32, adamw16, sgd_momentum_buffer]


@pytest.mark.parametrize("make", overflow_cases())
def test_a_step_that_overflows_raises_and_changes_nothing(make):
    params, opt, bad, shape = make()
    data = [p.data.copy() for p in params]
    versions = [p.version for p in params]
    state = copy.deepcopy(opt.state)
    steps = opt.step_count
    with pytest.raises(ValueError) as info:
        opt.step()
    msg = str(info.value)
    assert f"parameter {bad}" in msg and shape in msg and "lr" in msg, msg
    assert "nothing was changed" in msg, msg
    for p, d, v in zip(params, data, versions, strict=True):
        np.testing.assert_array_equal(p.data, d)
        assert p.version == v
    assert opt.step_count == steps
    for before, after in zip(state, opt.state, strict=True):
        assert before.keys() == after.keys()
        for k in before:
            np.testing.assert_array_equal(np.asarray(before[k]), np.asarray(after[k]))


def test_a_non_finite_gradient_still_propagates_as_in_pytorch():
    # The step only refuses what it overflows itself: a NaN already in the gradient or the
    # parameter goes through (a training loop sees it in the loss, as with torch.optim).
    p = Parameter(np.array([1.0, np.inf, 2.0]))
    p.grad = np.array([np.nan, 1.0, 1.0])
    SGD([p], lr=0.5).step()
    assert np.isnan(p.data[0]) and p.data[1] == np.inf and p.data[2] == 1.5


def test_a_finite_step_with_a_huge_intermediate_sum_is_applied():
    # elements near the dtype's max: their sum overflows, every element stays finite
    big = np.finfo(np.float32).max / 2
    p = Parameter(np.full(4, big, np.float32))
    p.grad = np.zeros(4, np.float32)
    SGD([p], lr=0.1).step()
    np.testing.assert_array_equal(p.data, np.full(4, big, np.float32))
    assert p.version == 1


def test_a_zero_d_parameter_that_overflows_is_named():
    p = Parameter(np.array(1.0, np.float32))
    p.grad = np.array(10.0, np.float32)
    with pytest.raises(ValueError, match=r"parameter 0 \(shape \(\), float32\).*lr 1e\+38"):
        SGD([p], lr=1e38).step()
    assert p.data == 1.0 and p.version == 0


@pytest.mark.parametrize("make", [
    lambda p: AdamW([p], lr=0.1),
    lambda p: SGD([p], lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=True),
    lambda p: SGD([p], lr=0.1, momentum=0.9, dampening=0.5, weight_decay=0.1),
])
def test_a_zero_d_parameter_is_updated_like_a_one_element_one(make):
    # NumPy gives scalars for 0-d arithmetic: the update must still produce arrays
    scalar, vector = Parameter(np.array(1.5)), Parameter(np.array([1.5]))
    o_s, o_v = make(scalar), make(vector)
    for g in (0.5, -0.25, 2.0):
        scalar.grad, vector.grad = np.array(g), np.array([g])
        o_s.step()
        o_v.step()
        assert type(scalar.data) is np.ndarray and scalar.shape == ()
        assert scalar.data == vector.data[0]
    for k, v in o_s.state[0].items():
        assert np.shape(v) == () and np.asarray(v) == np.asarray(o_v.state[0][k]).ravel()[0]
