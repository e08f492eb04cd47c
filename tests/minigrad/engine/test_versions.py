"""In-place writes into arrays a recorded op depends on are detected by backward (version
counters), and the in-place Tensor API (``t[idx] = v``, ``t += v``) follows PyTorch's rules."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.nn import Linear, Parameter
from minigrad.optim import SGD, AdamW

RNG = np.random.default_rng(5)


def param(shape, dtype=np.float64):
    return Parameter(RNG.standard_normal(shape).astype(dtype))


# ---- the version counter ------------------------------------------------------------------
def test_new_tensors_start_at_version_zero():
    assert mg.Tensor(np.zeros(3)).version == 0
    assert param((2,)).version == 0
    assert (param((2,)) * 2).version == 0


@pytest.mark.parametrize("opt_cls", [SGD, AdamW])
def test_optimizer_step_between_forward_and_backward_is_an_error(opt_cls):
    w = param((3, 2), np.float32)
    x = mg.Tensor(RNG.standard_normal((3, 2)).astype(np.float32))
    loss = (x * w).sum()
    w.grad = np.ones_like(w.data)
    opt = opt_cls([w], lr=0.1)
    opt.step()
    assert w.version == 1
    with pytest.raises(RuntimeError) as e:
        loss.backward()
    msg = str(e.value)
    assert "'mul'" in msg and "input 1" in msg and "(3, 2)" in msg and "float32" in msg
    assert "version is now 1" in msg and "optimizer.step()" in msg


def test_step_before_second_backward_of_retained_graph_is_an_error():
    w = param((4,))
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    SGD([w], lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_step_after_backward_is_fine_and_the_next_forward_sees_the_new_version():
    w = param((4,))
    opt = SGD([w], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        expected = 2 * w.data.copy()
        np.testing.assert_array_equal(w.grad, expected)
        opt.step()
    assert w.version == 3


def test_write_into_a_constant_input_is_detected():
    w = param((3,))
    c = mg.Tensor(np.array([1.0, 2.0, 3.0]))  # a constant the VJP of w saved
    y = (w * c).sum()
    c[1] = 10.0
    with pytest.raises(RuntimeError, match=r"'mul': input 1 .*version is now 1"):
        y.backward()


def test_write_into_a_saved_output_is_detected():
    # exp's VJP saves its output: a write into it under no_grad must not go unnoticed
    x = param((3,))
    y = F.exp(x)
    with mg.no_grad():
        y[0] = 0.0
    with pytest.raises(RuntimeError, match=r"'exp': its output .*modified in place"):
        y.sum().backward()


def test_write_through_a_view_is_detected():
    x = param((2, 3))
    y = x * 3.0
    v = y.reshape(6)  # a view of y's array: it shares y's version counter
    z = (y * y).sum()
    with mg.no_grad():
        v[0] = 5.0
    assert y.version == 1
    with pytest.raises(RuntimeError, match="modified in place"):
        z.backward()


def test_write_through_detach_is_detected():
    w = param((3,))
    y = (w * w).sum()
    w.detach()[0] = 7.0  # detach shares the data, and so the version
    assert w.version == 1
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_writes_through_data_bypass_the_check_as_in_pytorch():
    w = param((3,))
    y = (w * 2.0).sum()
    w.data[0] = 7.0  # documented escape hatch: no version bump
    assert w.version == 0
    y.backward()
    np.testing.assert_array_equal(w.grad, np.full(3, 2.0))


def test_bump_version_marks_a_write_through_data():
    w = param((3,))
    c = mg.Tensor(np.ones(3))
    y = (w * c).sum()
    c.data[:] = 2.0
    c.bump_version()
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_error_names_the_op_of_the_failing_node_in_a_deep_graph():
    w = param((2, 2))
    h = F.tanh(w @ w)
    loss = (h * h).sum()
    with mg.no_grad():
        w[0, 0] = 1.0
    with pytest.raises(RuntimeError, match=r"'matmul': input 0 \(shape \(2, 2\), float64\)"):
        loss.backward()


# ---- t[idx] = v ------------------------------------------------------------------------------
def test_setitem_writes_in_place_and_bumps_the_version():
    a = np.zeros((2, 3))
    t = mg.Tensor(a)
    t[0, 1] = 5.0
    t[1] = mg.Tensor(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(a, [[0, 5, 0], [1, 2, 3]])  # Tensor(a) shares a
    assert t.version == 2


def test_setitem_on_a_leaf_that_requires_grad_is_refused_outside_no_grad():
    w = param((3,))
    before = w.data.copy()
    with pytest.raises(RuntimeError, match="leaf .* requires grad.*no_grad"):
        w[0] = 1.0
    np.testing.assert_array_equal(w.data, before)
    assert w.version == 0
    with mg.no_grad():
        w[0] = 1.0
    assert w.data[0] == 1.0 and w.version == 1


def test_setitem_on_a_non_leaf_is_refused_in_grad_mode():
    w = param((3,))
    y = w * 2.0
    with pytest.raises(RuntimeError, match="'mul'.*out of place"):
        y[0] = 1.0
    assert y.version == 0


def test_setitem_of_a_value_that_requires_grad_into_a_constant_is_refused():
    # writing the values alone would lose value's gradient without a word
    t = mg.Tensor(np.zeros(3))
    w = param(())
    with pytest.raises(RuntimeError, match="value requires grad"):
        t[0] = w
    with mg.no_grad():
        t[0] = w
    assert t.data[0] == w.data


def test_setitem_errors_name_the_problem():
    t = mg.Tensor(np.zeros(3))
    with pytest.raises(IndexError):
        t[5] = 1.0
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        mg.Tensor(ro)[0] = 1.0
    with pytest.raises(TypeError, match="value"):
        t[0] = "abc"
    assert t.version == 0


# ---- in-place arithmetic -----------------------------------------------------------------
@pytest.mark.parametrize("op, expected", [("+=", 3.0), ("-=", -1.0), ("*=", 2.0), ("/=", 0.5)])
def test_inplace_arithmetic_on_a_constant_writes_in_place(op, expected):
    a = np.ones(3)
    t = mg.Tensor(a)
    alias = t
    if op == "+=":
        t += 2.0
    elif op == "-=":
        t -= 2.0
    elif op == "*=":
        t *= 2.0
    else:
        t /= 2.0
    assert t is alias and t.version == 1
    np.testing.assert_array_equal(a, np.full(3, expected))


def test_inplace_arithmetic_on_a_parameter_is_refused_outside_no_grad():
    w = param((3,))
    with pytest.raises(RuntimeError, match="leaf .* requires grad"):
        w += 1.0
    before = w.data.copy()
    alias = w
    with mg.no_grad():
        w -= 0.5
    assert w is alias and w.version == 1
    np.testing.assert_array_equal(w.data, before - 0.5)


def test_inplace_arithmetic_that_must_be_recorded_is_out_of_place():
    # h += b on an activation (or a constant += something requiring grad): a new tensor,
    # recorded like h = h + b, so the gradient is right; the old tensor is left unchanged
    w = param((3,))
    h = w * 2.0
    old = h
    h += w
    assert h is not old and h.op == "add"
    h.sum().backward()
    np.testing.assert_array_equal(w.grad, np.full(3, 3.0))
    total = mg.Tensor(np.array(0.0))
    total += (w * w).sum()
    assert total.requires_grad


def test_inplace_arithmetic_keeps_the_dtype_and_refuses_int_by_float():
    t = mg.Tensor(np.ones(3, np.float32))
    t += np.float64(1.5)
    assert t.dtype == np.float32
    i = mg.Tensor(np.ones(3, np.int64))
    with pytest.raises(TypeError, match="int64"):
        i += 0.5
    assert i.version == 0


# ---- which input, and nothing changes on error ------------------------------------------------
def test_inputs_after_constants_are_named_by_their_position():
    a, b = param((2, 3)), param((2, 3))
    cond = mg.Tensor(np.array([[True, False, True], [False, True, False]]))
    y = F.where(cond, a, b).sum()
    z = (0.5 * b).sum()  # mul(0.5, b): b is input 1
    with mg.no_grad():
        b[0, 0] = 1.0
    with pytest.raises(RuntimeError, match=r"'where': input 2 \(shape \(2, 3\), float64\)"):
        y.backward()
    with pytest.raises(RuntimeError, match=r"'mul': input 1 \(shape \(2, 3\), float64\)"):
        z.backward()
    out = F.where(cond, a, a).sum()
    cond[0, 1] = True  # a constant written: named with its own shape and dtype
    with pytest.raises(RuntimeError, match=r"'where': input 0 \(shape \(2, 3\), bool\)"):
        out.backward()


def test_a_failed_check_changes_no_gradient():
    w, u = param((3,)), param((3,))
    loss = (u * 2.0).sum() + (w * w).sum()
    u.grad = np.full(3, 5.0)
    with mg.no_grad():
        w[0] = 0.0
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()
    np.testing.assert_array_equal(u.grad, np.full(3, 5.0))
    assert w.grad is None


def test_writes_into_unrelated_tensors_do_not_trip_the_check():
    w = param((3,))
    other = mg.Tensor(np.zeros(3))
    loss = (w * w).sum()
    other += 1.0
    other[0] = 2.0
    loss.backward()
    np.testing.assert_array_equal(w.grad, 2 * w.data)


def test_tensor_of_a_tensor_shares_its_version():
    t = mg.Tensor(np.zeros(3))
    u = mg.Tensor(t)
    u[0] = 1.0
    assert t.version == 1 and t.data[0] == 1.0
    c = mg.tensor(t)  # a copy: its own counter
    c[0] = 2.0
    assert t.version == 1 and c.version == 1


def test_an_op_that_returns_its_input_array_shares_its_version():
    """astype to the same dtype needs no copy: a write through the result is a write into the
    input's array, and the ops that recorded the input must see it."""
    x = mg.Tensor(np.arange(3.0), requires_grad=True)
    w = mg.Tensor(np.ones(3), requires_grad=True)
    z = (x * w).sum()
    y = x.astype(x.dtype)
    assert np.shares_memory(y.data, x.data)
    with mg.no_grad():
        y[0] = 5.0
    with pytest.raises(RuntimeError, match="modified in place"):
        z.backward()


# ---- Module.load_state_dict between forward and backward ------------------------------------
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


# ---- two Tensors made separately from one ndarray -------------------------------------------
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
