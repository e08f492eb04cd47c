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


def _since2(*paths):
    """A skip mark unless this NumPy has every ``np.<path>`` (the Array API names of NumPy
    2.0; cumulative_sum and cumulative_prod: 2.1), which numpy_api registers only then."""
    missing = [p for p in paths if getattr(np.linalg if p.startswith("linalg.") else np,
                                           p.rpartition(".")[2], None) is None]
    return pytest.mark.skipif(bool(missing), reason=f"NumPy {np.__version__} lacks {missing}")


def _row(label, *values, needs=()):
    return pytest.param(*values, id=label, marks=_since2(*needs))


GRADCHECK = [
    _row("flip", lambda a: np.flip(a, axis=(0, 2)), [(2, 3, 4)]),
    _row("flip-all", lambda a: np.flip(a), [(3, 2)]),
    _row("fliplr", np.fliplr, [(3, 4)]), _row("flipud", np.flipud, [(3, 4)]),
    _row("roll", lambda a: np.roll(a, shift=(2, -1), axis=(1, 0)), [(3, 4)]),
    _row("roll-flat", lambda a: np.roll(a, -5), [(3, 4)]),
    _row("tile", lambda a: np.tile(a, reps=(2, 1, 2)), [(2, 3)]),
    _row("repeat", lambda a: np.repeat(a, repeats=[2, 0, 1], axis=1), [(2, 3)]),
    _row("repeat-flat", lambda a: np.repeat(a, 3), [(2, 2)]),
    _row("moveaxis", lambda a: np.moveaxis(a, source=[0, 1], destination=[-1, 0]), [(2, 3, 4)]),
    _row("tril", lambda a: np.tril(a, k=1), [(3, 4)]),
    _row("triu-1d", lambda a: np.triu(a), [(4,)]),
    _row("trace", lambda a: np.trace(a, offset=-1, axis1=2, axis2=0), [(4, 2, 3)]),
    _row("diagonal", lambda a: np.diagonal(a, offset=1, axis1=0, axis2=1), [(3, 4, 2)]),
    _row("take_along_axis", lambda a: np.take_along_axis(a, IDX, axis=0), [(3, 4)]),
    _row("pad-constant", lambda a: np.pad(a, ((1, 2), (0, 1)), constant_values=-3.0), [(3, 4)]),
    _row("pad-reflect", lambda a: np.pad(a, 2, mode="reflect", reflect_type="even"), [(3, 4)]),
    _row("pad-edge", lambda a: np.pad(a, ((0, 2), (3, 1)), mode="edge"), [(3, 4)]),
    _row("around-then-mul", lambda a: np.around(a, 1) * a, [(3, 4)]),
    _row("cumulative_sum", lambda a: np.cumulative_sum(a, axis=0), [(3, 4)],
         needs=["cumulative_sum"]),
    _row("cumulative_prod", lambda a: np.cumulative_prod(a), [(5,)], needs=["cumulative_prod"]),
    _row("matrix_transpose", lambda a: np.matrix_transpose(a), [(2, 3, 4)],
         needs=["matrix_transpose"]),
    _row("linalg.trace", lambda a: np.linalg.trace(a, offset=1), [(2, 3, 4)],
         needs=["linalg.trace"]),
    _row("linalg.diagonal", lambda a: np.linalg.diagonal(a, offset=-1), [(2, 4, 3)],
         needs=["linalg.diagonal"]),
    _row("linalg.outer", lambda a, b: np.linalg.outer(a, b), [(3,), (4,)],
         needs=["linalg.outer"]),
    _row("linalg.tensordot", lambda a, b: np.linalg.tensordot(a, b, axes=1), [(2, 3), (3, 4)],
         needs=["linalg.tensordot"]),
    _row("linalg.matmul", lambda a, b: np.linalg.matmul(a, b), [(2, 3, 4), (4, 2)],
         needs=["linalg.matmul"]),
]


@pytest.mark.parametrize("fn, shapes", GRADCHECK)
def test_numpy_spelling_gradcheck_float64(fn, shapes):
    inputs = [RNG.standard_normal(shape) for shape in shapes]
    before = [x.copy() for x in inputs]
    report = mg.gradcheck(fn, inputs, atol=1e-7, rtol=1e-6)
    assert report.ok and len(report.inputs) == len(inputs)
    for x, b in zip(inputs, before, strict=True):
        np.testing.assert_array_equal(x, b)


def test_the_result_is_a_tensor_in_the_graph_not_an_array():
    t = mg.Tensor(RNG.standard_normal((3, 3)), requires_grad=True)
    for out in (np.flip(t), np.roll(t, 1), np.tile(t, 2), np.repeat(t, 2), np.trace(t),
                np.pad(t, 1), np.tril(t), np.diagonal(t), np.moveaxis(t, 0, 1)):
        assert isinstance(out, mg.Tensor) and out.requires_grad, type(out)


@pytest.mark.parametrize("call, name, arg", [
    _row("trace-out", lambda t: np.trace(t, out=np.empty(())), "np.trace", "out="),
    _row("pad-wrap", lambda t: np.pad(t, 1, mode="wrap"), "np.pad", "mode='wrap'"),
    _row("pad-symmetric", lambda t: np.pad(t, 1, mode="symmetric"), "np.pad",
         "mode='symmetric'"),
    _row("pad-callable", lambda t: np.pad(t, 1, mode=lambda *a: None), "np.pad", "mode="),
    _row("pad-pair-values", lambda t: np.pad(t, 1, constant_values=(1.0, 2.0)), "np.pad",
         "constant_values="),
    _row("pad-tensor-value",
         lambda t: np.pad(t, 1, constant_values=mg.Tensor(1.0, requires_grad=True)), "np.pad",
         "constant_values=Tensor"),
    _row("pad-odd", lambda t: np.pad(t, 1, mode="reflect", reflect_type="odd"), "np.pad",
         "reflect_type='odd'"),
    _row("pad-edge-values", lambda t: np.pad(t, 1, mode="edge", constant_values=1.0),
         "np.pad", "constant_values="),
    _row("pad-stat_length", lambda t: np.pad(t, 1, stat_length=2), "np.pad", "stat_length=2"),
    _row("cumulative_sum-initial", lambda t: np.cumulative_sum(t, axis=0, include_initial=True),
         "np.cumulative_sum", "include_initial=True", needs=["cumulative_sum"]),
    _row("cumulative_prod-out", lambda t: np.cumulative_prod(t, axis=0, out=np.empty((3, 3))),
         "np.cumulative_prod", "out=", needs=["cumulative_prod"]),
    _row("astype-device", lambda t: np.astype(t, np.float32, device="gpu"), "np.astype",
         "device='gpu'", needs=["astype"]),
])
def test_unsupported_options_are_a_type_error_naming_function_and_option(call, name, arg):
    t = mg.Tensor(RNG.standard_normal((3, 3)), requires_grad=True)
    with pytest.raises(TypeError, match=re.escape(name) + r".*" + re.escape(arg)) as info:
        call(t)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("call, match", [
    _row("cumulative_sum-axis-None-2d", lambda t: np.cumulative_sum(t),
         r"np\.cumulative_sum: got axis=None for a 2-d input", needs=["cumulative_sum"]),
    _row("matrix_transpose-1d", lambda t: np.matrix_transpose(t[0]),
         r"np\.matrix_transpose: got shape \(3,\)", needs=["matrix_transpose"]),
    _row("linalg.outer-2d", lambda t: np.linalg.outer(t, t[0]),
         r"np\.linalg\.outer: got shapes \(3, 3\) and \(3,\)", needs=["linalg.outer"]),
])
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
