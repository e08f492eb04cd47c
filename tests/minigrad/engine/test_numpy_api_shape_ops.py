"""NumPy's shape and indexing functions on Tensors (np.flip, np.roll, np.tile, np.repeat,
np.trace, np.pad, np.tril, np.take_along_axis, ...): recorded through the F ops of
ops/shape.py and ops/indexing.py with NumPy's argument names and defaults. Their values
against NumPy's on the raw arrays and their recording are in test_numpy_api.py's CASES; here
their gradients against finite differences (mg.gradcheck, float64), the options that stay
unsupported (a TypeError naming the function and the option) and NumPy's own refusals (a
ValueError, as NumPy gives)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import minigrad as mg

RNG = np.random.default_rng(1111)
IDX = RNG.integers(0, 3, (5, 4))

GRADCHECK = [
    ("flip", lambda a: np.flip(a, axis=(0, 2)), [(2, 3, 4)]),
    ("flip-all", lambda a: np.flip(a), [(3, 2)]),
    ("fliplr", np.fliplr, [(3, 4)]), ("flipud", np.flipud, [(3, 4)]),
    ("roll", lambda a: np.roll(a, shift=(2, -1), axis=(1, 0)), [(3, 4)]),
    ("roll-flat", lambda a: np.roll(a, -5), [(3, 4)]),
    ("tile", lambda a: np.tile(a, reps=(2, 1, 2)), [(2, 3)]),
    ("repeat", lambda a: np.repeat(a, repeats=[2, 0, 1], axis=1), [(2, 3)]),
    ("repeat-flat", lambda a: np.repeat(a, 3), [(2, 2)]),
    ("moveaxis", lambda a: np.moveaxis(a, source=[0, 1], destination=[-1, 0]), [(2, 3, 4)]),
    ("tril", lambda a: np.tril(a, k=1), [(3, 4)]), ("triu-1d", lambda a: np.triu(a), [(4,)]),
    ("trace", lambda a: np.trace(a, offset=-1, axis1=2, axis2=0), [(4, 2, 3)]),
    ("diagonal", lambda a: np.diagonal(a, offset=1, axis1=0, axis2=1), [(3, 4, 2)]),
    ("take_along_axis", lambda a: np.take_along_axis(a, IDX, axis=0), [(3, 4)]),
    ("pad-constant", lambda a: np.pad(a, ((1, 2), (0, 1)), constant_values=-3.0), [(3, 4)]),
    ("pad-reflect", lambda a: np.pad(a, 2, mode="reflect", reflect_type="even"), [(3, 4)]),
    ("pad-edge", lambda a: np.pad(a, ((0, 2), (3, 1)), mode="edge"), [(3, 4)]),
    ("cumulative_sum", lambda a: np.cumulative_sum(a, axis=0), [(3, 4)]),
    ("cumulative_prod", lambda a: np.cumulative_prod(a), [(5,)]),
    ("matrix_transpose", np.matrix_transpose, [(2, 3, 4)]),
    ("linalg.trace", lambda a: np.linalg.trace(a, offset=1), [(2, 3, 4)]),
    ("linalg.diagonal", lambda a: np.linalg.diagonal(a, offset=-1), [(2, 4, 3)]),
    ("linalg.outer", np.linalg.outer, [(3,), (4,)]),
    ("linalg.tensordot", lambda a, b: np.linalg.tensordot(a, b, axes=1), [(2, 3), (3, 4)]),
    ("linalg.matmul", np.linalg.matmul, [(2, 3, 4), (4, 2)]),
    ("around-then-mul", lambda a: np.around(a, 1) * a, [(3, 4)]),
]


@pytest.mark.parametrize("fn, shapes", [g[1:] for g in GRADCHECK], ids=[g[0] for g in GRADCHECK])
def test_numpy_spelling_gradcheck_float64(fn, shapes):
    inputs = [RNG.standard_normal(shape) for shape in shapes]
    before = [x.copy() for x in inputs]
    report = mg.gradcheck(fn, inputs, atol=1e-7, rtol=1e-6)
    assert report.ok and len(report.inputs) == len(inputs)
    for x, b in zip(inputs, before):
        np.testing.assert_array_equal(x, b)


def test_the_result_is_a_tensor_in_the_graph_not_an_array():
    t = mg.Tensor(RNG.standard_normal((3, 3)), requires_grad=True)
    for out in (np.flip(t), np.roll(t, 1), np.tile(t, 2), np.repeat(t, 2), np.trace(t),
                np.pad(t, 1), np.tril(t), np.diagonal(t), np.moveaxis(t, 0, 1)):
        assert isinstance(out, mg.Tensor) and out.requires_grad, type(out)


@pytest.mark.parametrize("call, name, arg", [
    (lambda t: np.trace(t, out=np.empty(())), "np.trace", "out="),
    (lambda t: np.pad(t, 1, mode="wrap"), "np.pad", "mode='wrap'"),
    (lambda t: np.pad(t, 1, mode="symmetric"), "np.pad", "mode='symmetric'"),
    (lambda t: np.pad(t, 1, mode=lambda *a: None), "np.pad", "mode="),
    (lambda t: np.pad(t, 1, constant_values=(1.0, 2.0)), "np.pad", "constant_values="),
    (lambda t: np.pad(t, 1, constant_values=mg.Tensor(1.0, requires_grad=True)), "np.pad",
     "constant_values=Tensor"),
    (lambda t: np.pad(t, 1, mode="reflect", reflect_type="odd"), "np.pad", "reflect_type='odd'"),
    (lambda t: np.pad(t, 1, mode="edge", constant_values=1.0), "np.pad", "constant_values="),
    (lambda t: np.pad(t, 1, stat_length=2), "np.pad", "stat_length=2"),
    (lambda t: np.cumulative_sum(t, axis=0, include_initial=True), "np.cumulative_sum",
     "include_initial=True"),
    (lambda t: np.cumulative_prod(t, axis=0, out=np.empty((3, 3))), "np.cumulative_prod",
     "out="),
    (lambda t: np.astype(t, np.float32, device="gpu"), "np.astype", "device='gpu'"),
], ids=["trace-out", "pad-wrap", "pad-symmetric", "pad-callable", "pad-pair-values",
        "pad-tensor-value", "pad-odd", "pad-edge-values", "pad-stat_length",
        "cumulative_sum-initial", "cumulative_prod-out", "astype-device"])
def test_unsupported_options_are_a_type_error_naming_function_and_option(call, name, arg):
    t = mg.Tensor(RNG.standard_normal((3, 3)), requires_grad=True)
    with pytest.raises(TypeError, match=re.escape(name) + r".*" + re.escape(arg)) as info:
        call(t)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("call, match", [
    (lambda t: np.cumulative_sum(t), r"np\.cumulative_sum: got axis=None for a 2-d input"),
    (lambda t: np.matrix_transpose(t[0]), r"np\.matrix_transpose: got shape \(3,\)"),
    (lambda t: np.linalg.outer(t, t[0]), r"np\.linalg\.outer: got shapes \(3, 3\) and \(3,\)"),
], ids=["cumulative_sum-axis-None-2d", "matrix_transpose-1d", "linalg.outer-2d"])
def test_what_numpy_refuses_is_a_value_error_here_too(call, match):
    x = RNG.standard_normal((3, 3))
    with pytest.raises(ValueError):  # NumPy's own answer on the raw array
        call(x)
    with pytest.raises(ValueError, match=match):
        call(mg.Tensor(x, requires_grad=True))


def test_put_along_axis_stays_refused_pointing_at_the_op():
    t = mg.Tensor(RNG.standard_normal((3, 3)), requires_grad=True)
    with pytest.raises(TypeError, match=r"np\.put_along_axis is not differentiable.*"
                                        r"F\.put_along_axis") as info:
        np.put_along_axis(t, np.zeros((1, 3), int), 1.0, axis=0)
    assert "t.data" in str(info.value)
