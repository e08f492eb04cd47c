"""Holes a review found after the version counter and the all-or-nothing optimizer step:
writes through the module API, hyperparameters changed after construction, steps that
overflow, copy/pickle of tensors, tensors sharing an array, 0-d dtype promotion, and VJPs
that return something other than an array."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import Linear, Parameter
from minigrad.optim import SGD, AdamW

RNG = np.random.default_rng(23)


# ---- S1: Module.load_state_dict between forward and backward -----------------------------
def test_load_state_dict_between_forward_and_backward_is_refused():
    m = Linear(2, 2, rng=0)
    other = Linear(2, 2, rng=1).state_dict()
    x = mg.Tensor(RNG.standard_normal((3, 2)))
    y = (m(x) ** 2).sum()
    before = {name: p.version for name, p in m.named_parameters()}
    m.load_state_dict(other)
    for name, p in m.named_parameters():
        assert p.version == before[name] + 1, name
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()
    assert m.weight.grad is None and m.bias.grad is None


def test_load_state_dict_strict_false_bumps_only_what_it_wrote():
    m = Linear(2, 2, rng=0)
    m.load_state_dict({"weight": np.zeros((2, 2))}, strict=False)
    assert m.weight.version == 1 and m.bias.version == 0


# ---- S2: hyperparameters changed after construction are checked at step() --------------
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


# ---- S3: a step that overflows is refused, all or nothing --------------------------------
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
    for p, d, v in zip(params, data, versions):
        np.testing.assert_array_equal(p.data, d)
        assert p.version == v
    assert opt.step_count == steps
    for before, after in zip(state, opt.state):
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


# ---- S6 + E8: deepcopy and pickle ---------------------------------------------------------
def test_deepcopy_of_a_non_leaf_is_refused():
    t = mg.Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(t * 2)


def test_deepcopy_of_a_leaf_copies_data_grad_and_requires_grad():
    t = mg.Tensor(np.arange(3.0), requires_grad=True)
    t.grad = np.ones(3)
    c = copy.deepcopy(t)
    assert c is not t and c.requires_grad and c.is_leaf and c.version == 0
    np.testing.assert_array_equal(c.data, t.data)
    np.testing.assert_array_equal(c.grad, t.grad)
    assert not np.shares_memory(c.data, t.data) and not np.shares_memory(c.grad, t.grad)
    (c * c).sum().backward()
    np.testing.assert_array_equal(t.grad, np.ones(3))  # the original is not touched


def test_deepcopy_of_a_module_still_works():
    m = Linear(2, 3, rng=0)
    c = copy.deepcopy(m)
    assert c.weight is not m.weight and type(c.weight) is Parameter
    assert type(pickle.loads(pickle.dumps(m.weight))) is Parameter
    np.testing.assert_array_equal(c.weight.data, m.weight.data)
    assert not np.shares_memory(c.weight.data, m.weight.data)


def test_pickle_of_a_non_leaf_is_refused_in_our_words():
    t = mg.Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(TypeError, match=r"non-leaf.*detach\(\)"):
        pickle.dumps(t * 2)


def test_pickle_of_a_leaf_keeps_data_and_requires_grad_not_grad():
    t = mg.Tensor(np.arange(3, dtype=np.float32), requires_grad=True)
    t.grad = np.ones(3, np.float32)
    u = pickle.loads(pickle.dumps(t))
    assert isinstance(u, mg.Tensor) and u.requires_grad and u.is_leaf and u.grad is None
    assert u.dtype == np.float32
    np.testing.assert_array_equal(u.data, t.data)
    v = pickle.loads(pickle.dumps(mg.Tensor(np.ones(2, np.int64))))
    assert not v.requires_grad and v.dtype == np.int64


def test_shallow_copy_shares_data_and_graph():
    t = mg.Tensor(np.ones(3), requires_grad=True)
    y = t * 2
    c = copy.copy(y)
    assert c.data is y.data and c.op == "mul"
    c.sum().backward()
    np.testing.assert_array_equal(t.grad, np.full(3, 2.0))


# ---- S5: two Tensors made separately from one ndarray -------------------------------------
def test_two_tensors_on_one_array_have_separate_counters_as_documented():
    arr = np.ones(3)
    a = mg.Tensor(arr, requires_grad=True)
    b = mg.Tensor(arr)
    y = (a * a).sum()
    b[0] = 100.0
    assert b.version == 1 and a.version == 0  # not shared: the write is not seen through a
    y.backward()
    assert a.grad[0] == 200.0  # the new value: the documented limit
    assert "torch.from_numpy" in mg.Tensor.__doc__ and "separately" in mg.Tensor.__doc__


# ---- S9: 0-d x 0-d dtype promotion, as PyTorch --------------------------------------------
def test_zero_d_float32_times_zero_d_float64_follows_array_promotion():
    x32 = mg.Tensor(np.ones(3, np.float32))
    assert (x32.sum() * mg.Tensor(0.5)).dtype == np.float64
    assert (x32.sum() * np.float64(0.5)).dtype == np.float32  # a NumPy scalar is a number
    assert (x32.sum() * 0.5).dtype == np.float32


def test_zero_d_promotion_matches_torch():
    torch = pytest.importorskip("torch")
    a = torch.tensor(1.0, dtype=torch.float32) * torch.tensor(0.5, dtype=torch.float64)
    ours = mg.Tensor(np.float32(1.0)) * mg.Tensor(np.float64(0.5))
    assert str(a.dtype).removeprefix("torch.") == ours.dtype.name


def test_numpy_doc_states_the_zero_d_case():
    from pathlib import Path
    page = (Path(__file__).resolve().parents[3] / "docs" / "numpy.md").read_text()
    table = page.split("## Dtype rules", 1)[1].split("\n## ", 1)[0]
    assert "np.float64(0.5)" in table and "x32.sum() * mg.Tensor(0.5)" in table


# ---- E7: a VJP returning something other than an array ------------------------------------
def make_op(result, name):
    @mg.op(name=name)
    def bad(x, w):
        return x * w, (lambda g: g * w, lambda g: result(g))
    return bad


@pytest.mark.parametrize("result, words", [
    (lambda g: [1.0, 2.0, 3.0], "a list"),
    (lambda g: None, "None"),
    (lambda g: 1.5, "a float"),
    (lambda g: g.astype(np.complex128), "complex128"),
    (lambda g: g.astype(object), "object"),
    (lambda g: mg.Tensor(g), "a Tensor"),
])
@pytest.mark.parametrize("x_needs_grad", [True, False])  # False: w is the only edge
def test_a_vjp_returning_a_non_array_names_the_op_and_input(result, words, x_needs_grad):
    x = mg.Tensor(np.ones(3), requires_grad=x_needs_grad)
    w = mg.Tensor(np.full(3, 2.0), requires_grad=True)
    y = make_op(result, "badvjp")(x, w)
    with pytest.raises(TypeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "'badvjp'" in msg and "input 1" in msg and words in msg, msg
    assert "expected" in msg


def test_a_vjp_returning_a_numpy_scalar_or_ints_still_works():
    @mg.op(name="ok")
    def ok(x):
        return x.sum(), lambda g: np.broadcast_to(np.float64(g), x.shape).astype(np.int64)
    x = mg.Tensor(np.ones(3), requires_grad=True)
    ok(x).backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad, np.ones(3))


def test_a_group_params_list_edited_after_construction_is_refused_at_step():
    a, b = Parameter(np.ones(2)), Parameter(np.ones(2))
    opt = SGD([a], lr=0.1)
    opt.param_groups[0]["params"].append(b)  # would be silently ignored
    a.grad = b.grad = np.ones(2)
    with pytest.raises(ValueError, match=r"param_groups\[0\]\['params'\] was changed"):
        opt.step()
    np.testing.assert_array_equal(a.data, np.ones(2))


def test_shallow_copy_of_a_parameter_is_a_parameter_on_the_same_array():
    w = Parameter(np.ones(2))
    c = copy.copy(w)
    assert type(c) is Parameter and c.data is w.data
    c.bump_version()
    assert w.version == 1  # one counter: a write through the copy is a write to w


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
