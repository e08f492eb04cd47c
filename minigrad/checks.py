"""Argument checks shared by minigrad and by code built on it (``vit`` uses them too).

One rule everywhere: a value of the wrong *type* raises ``TypeError``; a value of the right
type outside what is allowed raises ``ValueError``. Every message names the argument, says
what it got and what was expected, e.g. ``ValueError("Linear in_features: got 0; expected
an integer >= 1")``.

``bool`` is a subclass of ``int`` in Python, but ``True`` passed as a size or a rate is a
mistake, not a 1: every numeric check here refuses bools.

A message shows the value through :func:`shown`, which caps its length: a hostile value (a
million-element list, an int of a million digits) gives a short message, never its whole repr.
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
import reprlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

__all__ = [
    "TORCH_KEYWORDS", "refuse_torch_keywords", "numpy_keywords",
    "integer", "positive_int", "int_tuple", "real", "boolean", "choice", "floating_dtype",
    "generator", "state_mapping", "state_keys", "StateDictKeyError", "shown", "int_beyond_c_long",
]

#: Values shown in messages: strings and other reprs cut to about 60 characters, containers
#: to their first few items (``[0, 1, 2, 3, 4, 5, ...]``).
class _Repr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        return _int_text(x)


_REPR = _Repr()  # (keyword arguments only from Python 3.12)
for _attr, _n in (("maxlevel", 2), ("maxlist", 6), ("maxtuple", 6), ("maxset", 6),
                  ("maxfrozenset", 6), ("maxdict", 4), ("maxdeque", 6), ("maxarray", 6),
                  ("maxstring", 60), ("maxother", 60)):
    setattr(_REPR, _attr, _n)
_BIG_INT = 10**30  # wider ints are shown by magnitude (str() of 4,300+ digits even raises)


def _int_text(value: int) -> str:
    if -_BIG_INT < value < _BIG_INT:
        return repr(int(value))
    return f"an integer of about {'-' if value < 0 else ''}10**{int(math.log10(abs(value)))}"


def shown(value: Any) -> str:
    """``repr(value)`` for a message, at most about 60 characters (a repr that raises is
    named by its type)."""
    if type(value) is int:
        return _int_text(value)
    try:
        return _REPR.repr(value)
    except Exception:  # a broken __repr__ must not replace the error being reported
        return f"<{type(value).__name__} object>"


def _label(name: str, owner: str | None) -> str:
    return f"{owner} {name}" if owner else name


def integer(name: str, value: Any, *, low: int | None = None, high: int | None = None,
            owner: str | None = None) -> int:
    """``value`` as a Python int, checked to lie in ``[low, high]`` (either bound optional).

    Accepts ``int`` and NumPy integer scalars; refuses bools, floats (even ``2.0``) and
    strings with TypeError.
    """
    if (type(value) is int and (low is None or value >= low)
            and (high is None or value <= high)):
        return value  # the common case, checked without building the message
    label = _label(name, owner)
    if type(value) is not int and (isinstance(value, bool)
                                   or not isinstance(value, numbers.Integral)):
        raise TypeError(f"{label}: got {shown(value)}; expected an integer")
    if type(value) is not int:
        value = _converted(int, value, label, "an integer")  # NumPy ints and the like
    if (low is not None and value < low) or (high is not None and value > high):
        if high is None:
            expected = f"an integer >= {low}"
        elif low is None:
            expected = f"an integer <= {high}"
        else:
            expected = f"an integer in [{low}, {high}]"
        raise ValueError(f"{label}: got {_int_text(value)}; expected {expected}")
    return value


def positive_int(name: str, value: Any, *, owner: str | None = None) -> int:
    """``value`` as a Python int >= 1 (a size, a count, a number of heads)."""
    return integer(name, value, low=1, owner=owner)


def int_tuple(value: Any, n: int, owner: str, name: str, minimum: int) -> tuple[int, ...]:
    """``value`` (an int, or a tuple/list of ``n`` ints) as a tuple of ``n`` ints >= minimum;
    otherwise a TypeError or ValueError naming ``owner`` and the argument ``name`` (a kernel
    size, a stride, a padding of a convolution or a pooling)."""
    what = f"an int >= {minimum}" + (f" or a tuple of {n} of them" if n > 1 else "")
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(items) != n:
        raise ValueError(f"{owner} {name}: got {value!r} ({type(value).__name__}); "
                         f"expected {what}")
    try:  # checks.integer decides TypeError or ValueError; the message shows the whole value
        return tuple(integer(name, v, low=minimum) for v in items)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{owner} {name}: got {value!r} ({type(value).__name__}); "
                      f"expected {what}") from None


def generator(value: Any, owner: str) -> np.random.Generator:
    """``np.random.default_rng(value)`` (a Generator is used as is, a seed makes one, None a
    fresh one), with a TypeError naming the argument ``rng`` of ``owner``."""
    try:
        return np.random.default_rng(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{owner} rng: got {shown(value)}; expected a np.random.Generator, a "
                        f"non-negative integer seed or None ({e})") from None


def real(name: str, value: Any, *, low: float = -math.inf, high: float = math.inf,
         low_open: bool = False, high_open: bool = False, finite: bool = True,
         owner: str | None = None) -> float:
    """``value`` as a Python float, checked to lie in the interval from ``low`` to ``high``.

    The bounds are closed unless ``low_open`` / ``high_open``; NaN and infinities are
    refused unless ``finite=False`` (a fill value such as ``-inf`` padding; the bounds are
    then not checked either). Returning a Python float keeps float32 arrays float32 when the
    value is mixed into them. Any ``numbers.Real`` is accepted (int, Fraction, NumPy numbers);
    ``Decimal`` is not one and is refused. A number beyond float64's range (``10**400``, a
    long double ``1e4000``) is a ValueError, whatever the bounds.
    """
    if type(value) is float and (not finite or (
            (value > low if low_open else value >= low)
            and (value < high if high_open else value <= high) and math.isfinite(value))):
        return value  # the common case, checked without building the message
    label = _label(name, owner)
    if type(value) is not float and (isinstance(value, bool)
                                     or not isinstance(value, numbers.Real)):
        raise TypeError(f"{label}: got {shown(value)}; expected a real number")
    expected = "a finite number" if not finite else _interval(low, high, low_open, high_open)
    given = value
    try:
        value = _converted(float, value, label, "a real number")
        if math.isinf(value) and isinstance(given, np.floating) and np.isfinite(given):
            raise OverflowError  # a long double past float64's range turns into inf
    except OverflowError:  # an int or Fraction past 1.8e308
        raise ValueError(f"{label}: got {shown(given)}; expected {expected} (it is too large "
                         "for a float)") from None
    if not finite:
        return value
    above = value > low if low_open else value >= low
    below = value < high if high_open else value <= high
    if not (above and below and math.isfinite(value)):
        raise ValueError(f"{label}: got {value}; expected {expected}")
    return value


def _interval(low: float, high: float, low_open: bool, high_open: bool) -> str:
    if low == -math.inf and high == math.inf:
        return "a finite number"
    if high == math.inf:
        return f"a finite number {'>' if low_open else '>='} {low:g}"
    if low == -math.inf:
        return f"a finite number {'<' if high_open else '<='} {high:g}"
    return f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def _converted(kind: type, value: Any, label: str, expected: str) -> Any:
    """``kind(value)`` of a registered number; a TypeError if its ``__int__``/``__float__``
    raises or returns something else (``float``'s OverflowError passes through: the value is
    a number, but too large)."""
    try:
        converted = kind(value)
    except OverflowError:
        if kind is float:
            raise
        converted = None  # int() never overflows: its __int__ is broken
    except Exception as e:  # user code: any exception means it is not usable as a number
        raise TypeError(f"{label}: got {shown(value)}; expected {expected} ({kind.__name__}() "
                        f"of it raised {type(e).__name__})") from None
    if type(converted) is not kind:
        raise TypeError(f"{label}: got {shown(value)}; expected {expected} ({kind.__name__}() "
                        f"of it gave {type(converted).__name__})")
    return converted


def boolean(name: str, value: Any, *, owner: str | None = None) -> bool:
    """``value`` if it is ``True`` or ``False`` (or a NumPy bool); anything else is a TypeError
    (``"False"`` and ``0`` are not accepted as flags)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{_label(name, owner)}: got {shown(value)}; expected True or False")
    return bool(value)


def choice(name: str, value: Any, options: Iterable[str], *, owner: str | None = None) -> str:
    """``value`` if it is one of the string ``options``."""
    options = tuple(options)
    if type(value) is str and value in options:
        return value  # the common case, checked without building the message
    label = _label(name, owner)
    expected = ", ".join(map(repr, options))
    if not isinstance(value, str):
        raise TypeError(f"{label}: got {shown(value)}; expected one of {expected}")
    if value not in options:
        raise ValueError(f"{label}: got {shown(value)}; expected one of {expected}")
    return value


def floating_dtype(name: str, value: Any, *, owner: str | None = None) -> np.dtype:
    """``np.dtype(value)`` if it is a floating dtype (float16, float32, float64)."""
    try:
        dtype = np.dtype(value)
    except Exception:  # NumPy refuses what is no dtype with TypeError, ValueError, SyntaxError...
        dtype = None
    if dtype is None or dtype.kind != "f":
        raise TypeError(f"{_label(name, owner)}: got {shown(value)}; expected a floating dtype "
                        "(np.float32, np.float64)")
    return dtype


class StateDictKeyError(KeyError, ValueError):
    """A state dict's names do not match what its owner holds.

    Both a KeyError (it is a failed lookup) and a ValueError (a bad argument, which is what
    callers catching bad input expect); its message prints as written, where KeyError's own
    ``str`` would show the repr.
    """

    def __str__(self) -> str:
        return str(self.args[0])


def state_mapping(owner: str, state: Any) -> None:
    """Refuse a ``load_state_dict`` argument that is not a mapping of names to arrays."""
    if not isinstance(state, Mapping) and not hasattr(state, "keys"):
        raise TypeError(f"{owner}.load_state_dict state: got {type(state).__name__}; expected "
                        "a mapping of names to arrays (a state_dict() or np.load of one)")


def state_keys(owner: str, state: Mapping[str, Any], expected: set) -> None:
    """Refuse a state dict whose keys are not exactly ``expected``, listing both differences
    (the first ``_KEYS_SHOWN`` of each, in order, strings before other keys)."""
    keys = set(state)
    missing, unexpected = _listed(expected - keys), _listed(keys - expected)
    if missing != "[]" or unexpected != "[]":
        raise StateDictKeyError(
            f"{owner}.load_state_dict: missing keys {missing}, unexpected keys {unexpected}; "
            "expected exactly the keys of its state_dict()"
        )


_KEYS_SHOWN = 10


def _listed(keys: set) -> str:
    """``['a', 'b']``, or ``['a', ..., 'j', ... and 990 more]``; keys of mixed types sort."""
    ordered = sorted(keys, key=lambda k: (not isinstance(k, str), k if isinstance(k, str)
                                          else type(k).__name__, shown(k)))
    items = [shown(k) for k in ordered[:_KEYS_SHOWN]]
    if len(ordered) > _KEYS_SHOWN:
        items.append(f"... and {len(ordered) - _KEYS_SHOWN:,} more")
    return f"[{', '.join(items)}]"


#: PyTorch's keyword -> NumPy's, where minigrad takes NumPy's (``x.sum(axis=0, keepdims=True)``
#: is PyTorch's ``x.sum(dim=0, keepdim=True)``).
TORCH_KEYWORDS = {"dim": "axis", "keepdim": "keepdims"}


def refuse_torch_keywords(kwargs: dict, owner: str, takes: Any) -> None:
    """A TypeError for a PyTorch keyword (``dim=``, ``keepdim=``) given to a function that takes
    the NumPy one instead (``takes``: its parameter names), naming the NumPy keyword. Called
    only when such a keyword is present: the NumPy names are the only ones minigrad accepts,
    so the habit gets a pointer instead of Python's bare "unexpected keyword argument"."""
    for theirs, ours in TORCH_KEYWORDS.items():
        if theirs in kwargs and ours in takes and theirs not in takes:
            raise TypeError(f"{owner}: got {theirs}={kwargs[theirs]!r}; minigrad follows NumPy: "
                            f"use {ours}= (PyTorch's {theirs}= is NumPy's {ours}=)")


def numpy_keywords(function: Callable, owner: str | None = None) -> Callable:
    """``function`` (a plain function or method taking ``axis``) wrapped so that a PyTorch
    keyword is refused by :func:`refuse_torch_keywords`; the ops built by ``minigrad.op``
    check this themselves (``minigrad/defop.py``)."""
    takes = tuple(inspect.signature(function).parameters)
    owner = owner or function.__name__

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs and ("dim" in kwargs or "keepdim" in kwargs):
            refuse_torch_keywords(kwargs, owner, takes)
        return function(*args, **kwargs)
    return call


_C_LONG = 2**63


def int_beyond_c_long(signature: inspect.Signature, args: tuple,
                      kwargs: dict) -> tuple[str, Any] | None:
    """(name, value) of the first argument holding an int beyond a C long (itself, or in a
    tuple or list, nested up to 3 deep), or None: what turned into NumPy's OverflowError."""
    def holds(value: Any, depth: int) -> bool:
        if type(value) is int:
            return not -_C_LONG <= value < _C_LONG
        if depth and isinstance(value, (tuple, list)):
            return any(holds(v, depth - 1) for v in value)
        return False
    try:
        bound = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return None
    for name, value in bound.items():
        if isinstance(value, dict):  # a forward's own **kwargs
            for k, v in value.items():
                if holds(v, 3):
                    return k, v
        elif holds(value, 3):
            return name, value
    return None
