"""minigrad.checks at the edges: huge ints, NaN and infinities, NumPy scalars, bools,
Fraction and Decimal, numbers whose ``__float__`` / ``__int__`` raise or return junk, and
values with enormous reprs. Every one is a TypeError or a ValueError naming the argument
(never an OverflowError or a traceback from inside a conversion), and no message embeds a
value's whole repr."""
from __future__ import annotations

import decimal
import fractions
import math
import numbers
import re

import numpy as np
import pytest

from minigrad import checks

#: The longest message any check may give for one value (a label, the shown value and what
#: is expected fit easily; a million-character repr does not).
MAX_MESSAGE = 400


def _message(excinfo) -> str:
    message = str(excinfo.value)
    assert len(message) <= MAX_MESSAGE, (len(message), message[:200])
    assert "\n" not in message
    return message


# ---- real ----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [10**400, -10**400, 10**5000, fractions.Fraction(10**400, 3),
                                   np.longdouble("1e4000") if np.finfo(np.longdouble).maxexp
                                   > 1024 else 10**309],
                         ids=["1e400", "-1e400", "1e5000", "Fraction", "longdouble"])
def test_real_of_a_number_too_big_for_a_float_is_a_value_error_naming_the_bound(value):
    with pytest.raises(ValueError) as info:
        checks.real("lr", value, low=0.0, high=10.0)
    message = _message(info)
    assert message.startswith("lr: got "), message
    assert "expected a number in [0, 10]" in message and "too large" in message, message


@pytest.mark.parametrize("finite", [True, False])
def test_real_of_a_huge_int_without_bounds_is_a_value_error(finite):
    with pytest.raises(ValueError, match=r"^x: got .*; expected a finite number") as info:
        checks.real("x", 10**400, finite=finite)
    _message(info)


def test_real_of_a_huge_int_names_its_size_not_its_digits():
    with pytest.raises(ValueError) as info:
        checks.real("lr", 10**400)
    message = _message(info)
    assert "10**400" in message and "0" * 50 not in message, message


@pytest.mark.parametrize("value, want", [
    (fractions.Fraction(1, 4), 0.25), (np.float32(0.5), 0.5), (np.int64(3), 3.0),
    (np.uint8(7), 7.0), (10**20, 1e20), (fractions.Fraction(1, 10**400), 0.0),
])
def test_real_accepts_every_real_number_that_fits_a_float(value, want):
    out = checks.real("x", value)
    assert type(out) is float and out == want


@pytest.mark.parametrize("value", [math.nan, np.float64("nan"), np.float16("inf"),
                                   -math.inf, np.longdouble("nan")])
def test_real_refuses_nan_and_inf_of_every_float_type_naming_the_argument(value):
    with pytest.raises(ValueError, match=r"^p: got -?(nan|inf); expected a number in \[0, 1\]$"):
        checks.real("p", value, low=0.0, high=1.0)


@pytest.mark.parametrize("value", [True, np.True_, decimal.Decimal("0.1"), 1j,
                                   np.complex128(1), "1e-3", [0.1], np.array([0.1])])
def test_real_refuses_non_reals_with_a_type_error(value):
    with pytest.raises(TypeError, match=r"^lr: got .*; expected a real number$") as info:
        checks.real("lr", value)
    _message(info)


class _BadReal(numbers.Real):
    """A registered Real whose conversion to float misbehaves (how is up to ``float_``)."""

    def __init__(self, float_):
        self.float_ = float_

    def __float__(self):
        return self.float_()

    def __repr__(self):
        return "BadReal()"

    # the abstract methods of numbers.Real, none of them used by the checks
    __abs__ = __add__ = __ceil__ = __eq__ = __floor__ = __floordiv__ = __le__ = __lt__ = \
        __mod__ = __mul__ = __neg__ = __pos__ = __pow__ = __radd__ = __rfloordiv__ = \
        __rmod__ = __rmul__ = __round__ = __rpow__ = __rtruediv__ = __truediv__ = \
        __trunc__ = lambda *a: NotImplemented
    __hash__ = object.__hash__


def _raise(kind):
    def fail():
        raise kind("broken __float__")
    return fail


@pytest.mark.parametrize("float_", [_raise(RuntimeError), _raise(ZeroDivisionError),
                                    _raise(ValueError), lambda: "0.5", lambda: None])
def test_real_of_a_number_whose_float_conversion_fails_is_a_type_error(float_):
    with pytest.raises(TypeError, match=r"^lr: got BadReal\(\); expected a real number") as info:
        checks.real("lr", _BadReal(float_))
    _message(info)


def test_real_of_a_number_whose_float_overflows_is_a_value_error():
    with pytest.raises(ValueError, match=r"^lr: got BadReal\(\); expected a finite number"):
        checks.real("lr", _BadReal(_raise(OverflowError)))


# ---- integer -------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [10**400, 10**5000, -10**100_000],
                         ids=["1e400", "1e5000", "-1e100000"])
def test_integer_out_of_range_huge_int_message_is_short(value):
    with pytest.raises(ValueError, match=r"^n: got .*; expected an integer in \[1, 8\]$") as info:
        checks.integer("n", value, low=1, high=8)
    message = _message(info)
    assert "0" * 50 not in message and "10**" in message, message


def test_integer_accepts_a_huge_int_inside_open_bounds():
    assert checks.integer("seed", 10**400, low=0) == 10**400


@pytest.mark.parametrize("value", [np.True_, np.float64(2.0), fractions.Fraction(2, 1),
                                   decimal.Decimal(2), 2 + 0j, np.array(2)])
def test_integer_refuses_non_integers_of_every_kind(value):
    with pytest.raises(TypeError, match=r"^n: got .*; expected an integer$") as info:
        checks.integer("n", value)
    _message(info)


class _BadIntegral(numbers.Integral):
    """A registered Integral whose ``__int__`` misbehaves."""

    def __init__(self, int_):
        self.int_ = int_

    def __int__(self):
        return self.int_()

    def __repr__(self):
        return "BadIntegral()"

    __abs__ = __add__ = __and__ = __ceil__ = __eq__ = __floor__ = __floordiv__ = \
        __invert__ = __le__ = __lshift__ = __lt__ = __mod__ = __mul__ = __neg__ = __or__ = \
        __pos__ = __pow__ = __radd__ = __rand__ = __rfloordiv__ = __rlshift__ = __rmod__ = \
        __rmul__ = __ror__ = __round__ = __rpow__ = __rrshift__ = __rshift__ = \
        __rtruediv__ = __rxor__ = __truediv__ = __trunc__ = __xor__ = \
        lambda *a: NotImplemented
    __hash__ = object.__hash__


@pytest.mark.parametrize("int_", [_raise(RuntimeError), _raise(OverflowError),
                                  lambda: 2.5, lambda: "2"])
def test_integer_of_a_number_whose_int_conversion_fails_is_a_type_error(int_):
    with pytest.raises(TypeError, match=r"^n: got BadIntegral\(\); expected an integer") as info:
        checks.integer("n", _BadIntegral(int_), low=0)
    _message(info)


# ---- huge reprs: every check shortens the value it shows -------------------------------------
class _HugeRepr:
    def __repr__(self):
        return "H" * 1_000_000


class _BrokenRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


HUGE = [list(range(200_000)), "x" * 1_000_000, b"y" * 1_000_000, _HugeRepr(),
        {i: i for i in range(100_000)}, _BrokenRepr()]


@pytest.mark.parametrize("value", HUGE, ids=["list", "str", "bytes", "object", "dict", "broken"])
@pytest.mark.parametrize("check", [
    lambda v: checks.integer("n", v), lambda v: checks.positive_int("n", v),
    lambda v: checks.real("n", v), lambda v: checks.boolean("n", v),
    lambda v: checks.choice("n", v, ("a", "b")), lambda v: checks.floating_dtype("n", v),
], ids=["integer", "positive_int", "real", "boolean", "choice", "floating_dtype"])
def test_every_check_shortens_a_huge_repr(check, value, request):
    if isinstance(value, str) and "choice" in request.node.callspec.id:
        pytest.skip("a string is choice's type: the ValueError test below")
    with pytest.raises(TypeError, match=r"^n: got ") as info:
        check(value)
    message = _message(info)
    assert max(message.count(c) for c in "Hxy") <= 80, message


def test_choice_of_a_long_string_value_is_shortened_but_still_a_value_error():
    with pytest.raises(ValueError, match=r"^reduction: got 'xxx.*; expected one of 'mean', "
                                         r"'sum'$") as info:
        checks.choice("reduction", "x" * 1_000_000, ("mean", "sum"))
    _message(info)


def test_floating_dtype_of_a_value_numpy_refuses_with_value_error_is_a_type_error():
    for bad in ("f8,,", {"names": ["a"], "formats": ["f8", "f4"]}):
        with pytest.raises(TypeError, match=r"^dtype: got .*; expected a floating dtype"):
            checks.floating_dtype("dtype", bad)


# ---- state dict keys ---------------------------------------------------------------------------
def test_state_keys_with_unsortable_keys_still_lists_the_difference():
    with pytest.raises(checks.StateDictKeyError, match=r"missing keys \['b'\], unexpected keys "
                                                       r"\['z', 1\]"):
        checks.state_keys("SGD", {"a": 1, 1: 2, "z": 3}, {"a", "b"})


@pytest.mark.slow  # fast: the other state_keys tests
def test_state_keys_of_a_million_unexpected_names_is_a_short_message():
    state = {f"w{i}": 0 for i in range(1_000_000)}
    with pytest.raises(checks.StateDictKeyError) as info:
        checks.state_keys("SGD", state, {"a"})
    message = str(info.value)
    assert len(message) <= 1000, len(message)
    assert re.search(r"missing keys \['a'\], unexpected keys \['w0', 'w1', .*999,9\d\d more",
                     message), message
