"""minigrad.checks: one rule for every argument check (wrong type: TypeError; wrong value:
ValueError), and messages that name the argument, the value and what was expected."""
import math

import numpy as np
import pytest

from minigrad import checks


@pytest.mark.parametrize("value", [True, False, 2.0, "2", None, np.float64(3.0)])
def test_integer_refuses_non_integers_with_type_error(value):
    with pytest.raises(TypeError, match=r"^n: got .*; expected an integer$"):
        checks.integer("n", value)


@pytest.mark.parametrize("value", [3, np.int64(3), np.uint8(3)])
def test_integer_accepts_python_and_numpy_ints_as_int(value):
    out = checks.integer("n", value, low=1, high=3)
    assert out == 3 and type(out) is int


@pytest.mark.parametrize("value, low, high, expected", [
    (0, 1, None, "an integer >= 1"), (5, None, 4, "an integer <= 4"), (9, 1, 4, r"an integer in \[1, 4\]"),
])
def test_integer_out_of_range_is_value_error(value, low, high, expected):
    with pytest.raises(ValueError, match=rf"^Layer n: got {value}; expected {expected}$"):
        checks.integer("n", value, low=low, high=high, owner="Layer")


def test_positive_int():
    assert checks.positive_int("heads", 2) == 2
    with pytest.raises(ValueError, match="heads: got 0"):
        checks.positive_int("heads", 0)
    with pytest.raises(TypeError, match="heads: got '2'"):
        checks.positive_int("heads", "2")


@pytest.mark.parametrize("value", [True, "0.1", None, 1j])
def test_real_refuses_non_reals_with_type_error(value):
    with pytest.raises(TypeError, match="expected a real number"):
        checks.real("lr", value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float32("nan")])
def test_real_refuses_nan_and_infinities(value):
    with pytest.raises(ValueError, match="lr: got"):
        checks.real("lr", value)


def test_real_bounds_open_and_closed():
    assert checks.real("p", 0.0, low=0.0, high=1.0) == 0.0
    assert type(checks.real("p", np.float32(0.5), low=0.0, high=1.0)) is float
    with pytest.raises(ValueError, match=r"expected a number in \(0, 1\]"):
        checks.real("p", 0.0, low=0.0, high=1.0, low_open=True)
    with pytest.raises(ValueError, match=r"expected a number in \[0, 1\)"):
        checks.real("p", 1.0, low=0.0, high=1.0, high_open=True)
    with pytest.raises(ValueError, match="expected a finite number > 0"):
        checks.real("eps", -1.0, low=0.0, low_open=True)


@pytest.mark.parametrize("value", [0, 1, "True", None])
def test_boolean_refuses_non_bools(value):
    with pytest.raises(TypeError, match="expected True or False"):
        checks.boolean("full", value)
    assert checks.boolean("full", np.bool_(True)) is True


def test_choice():
    assert checks.choice("reduction", "sum", ("mean", "sum")) == "sum"
    with pytest.raises(ValueError, match="reduction: got 'max'; expected one of 'mean', 'sum'"):
        checks.choice("reduction", "max", ("mean", "sum"))
    with pytest.raises(TypeError):
        checks.choice("reduction", 1, ("mean", "sum"))


def test_floating_dtype():
    assert checks.floating_dtype("dtype", "float32") == np.float32
    for bad in (np.int32, "int8", object(), bool):
        with pytest.raises(TypeError, match="expected a floating dtype"):
            checks.floating_dtype("dtype", bad)


def test_state_keys_error_is_key_and_value_error_and_lists_both_sides():
    with pytest.raises(checks.StateDictKeyError) as info:
        checks.state_keys("SGD", {"a": 1, "z": 2}, {"a", "b"})
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    assert str(info.value).startswith("SGD.load_state_dict: missing keys ['b'], unexpected keys ['z']")
    checks.state_keys("SGD", {"a": 1}, {"a"})  # exact match passes


def test_state_mapping_refuses_non_mappings():
    with pytest.raises(TypeError, match="SGD.load_state_dict state: got list"):
        checks.state_mapping("SGD", [1, 2])
    checks.state_mapping("SGD", {})
