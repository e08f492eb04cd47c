"""A ``np.random.Generator``'s state in a checkpoint: JSON in a 0-d string array, read back
only through an allow-list of bit generators and a schema of their states (types, ranges,
and no degenerate state that would make sampling run for ever)."""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..io.files import shorten
from ..io.npz import json_entry

__all__ = ["BIT_GENERATORS", "RNG_SCHEMA", "RNG_DEGENERATE", "rng_to_array", "rng_from_array"]


def _plain(value: Any) -> Any:
    """A bit generator's state in JSON types (arrays -> lists of ints)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    return int(value) if isinstance(value, np.integer) else value


#: The bit generators a checkpoint may name: an allow-list, so a name read from a file never
#: reaches ``getattr(np.random, ...)`` (``"test"`` would run NumPy's test runner).
BIT_GENERATORS = {"PCG64": np.random.PCG64, "PCG64DXSM": np.random.PCG64DXSM,
                  "Philox": np.random.Philox, "SFC64": np.random.SFC64,
                  "MT19937": np.random.MT19937}
_U32, _U64, _U128 = 2**32, 2**64, 2**128
_PCG = {"state": {"state": _U128, "inc": _U128}, "has_uint32": 2, "uinteger": _U32}
#: Each generator's state: key -> an exclusive bound of an integer, (count, bound) for a
#: list of integers (stored as uint32/uint64 arrays), or a nested dict.
RNG_SCHEMA = {
    "PCG64": _PCG, "PCG64DXSM": _PCG,
    "Philox": {"state": {"counter": (4, _U64), "key": (2, _U64)}, "buffer": (4, _U64),
               "buffer_pos": 5, "has_uint32": 2, "uinteger": _U32},
    "SFC64": {"state": {"state": (4, _U64)}, "has_uint32": 2, "uinteger": _U32},
    "MT19937": {"state": {"key": (624, _U32), "pos": 625}},
}


def _pcg_degenerate(state: dict) -> str | None:
    inc = state["state"]["inc"]
    if inc % 2 == 0:  # seeding always makes it odd; state 0, inc 0 stays 0 for ever
        return (f"rng.state.inc: got {shorten(inc)}; expected an odd integer (a seeded PCG "
                "generator's increment is odd: an even one can repeat one number for ever)")
    return None


def _mt_degenerate(state: dict) -> str | None:
    key = state["state"]["key"]
    # only the top bit of key[0] is part of the state (19937 = 32 * 624 - 31 bits)
    if not (key[0] & 0x80000000) and not key[1:].any():
        return ("rng.state.key: got an all-zero MT19937 state; expected a state some seed "
                "gives (from all zeros it outputs only zeros, and sampling never ends)")
    return None


#: Generator -> the check of a state in range but degenerate (a generator stuck for ever:
#: ``rng.beta`` then loops without end). Philox and SFC64 count, so no state is stuck.
RNG_DEGENERATE = {"PCG64": _pcg_degenerate, "PCG64DXSM": _pcg_degenerate,
                  "MT19937": _mt_degenerate}


def _bound(bound: int) -> str:
    return f"2**{bound.bit_length() - 1}" if bound > 1024 else str(bound)


def _checked_state(value: Any, schema: Any, name: str) -> Any:
    """``value`` checked against ``schema`` (see RNG_SCHEMA), lists converted to arrays."""
    if isinstance(schema, dict):
        if not isinstance(value, dict) or set(value) != set(schema):
            got = sorted(value) if isinstance(value, dict) else type(value).__name__
            raise ValueError(f"{name}: got {got}; expected an object with keys "
                             f"{sorted(schema)}")
        return {k: _checked_state(value[k], schema[k], f"{name}.{k}") for k in schema}
    count, bound = schema if isinstance(schema, tuple) else (None, schema)
    items = value if count is not None else [value]
    if count is not None and not (isinstance(value, list) and len(value) == count):
        shown = f"a list of {len(value)}" if isinstance(value, list) else repr(value)[:40]
        raise ValueError(f"{name}: got {shown}; expected a list of {count} integers in "
                         f"[0, {_bound(bound)})")
    for item in items:
        if type(item) is not int or not 0 <= item < bound:
            raise ValueError(f"{name}: got {repr(item)[:60]}; expected an integer in "
                             f"[0, {_bound(bound)})")
    if count is None:
        return value
    return np.array(value, np.uint32 if bound == _U32 else np.uint64)


def rng_to_array(rng: np.random.Generator) -> np.ndarray:
    """The generator's full state as JSON in a 0-d string array."""
    return np.array(json.dumps(_plain(rng.bit_generator.state), sort_keys=True))


def rng_from_array(value: np.ndarray) -> np.random.Generator:
    """A generator in exactly the state :func:`rng_to_array` saved. The bit generator must be
    one of ``BIT_GENERATORS``, its state match ``RNG_SCHEMA`` (types and ranges) and not be
    degenerate (``RNG_DEGENERATE``); a one-line ValueError naming the field otherwise."""
    state = json_entry(value, "rng")
    if not isinstance(state, dict):
        raise ValueError(f"rng: got a JSON {type(state).__name__}; expected an object with a "
                         "'bit_generator' name and its 'state'")
    name = state.get("bit_generator")
    if not isinstance(name, str) or name not in BIT_GENERATORS:
        raise ValueError(f"rng bit_generator: got {repr(name)[:60]}; expected one of "
                         f"{', '.join(BIT_GENERATORS)}")
    rest = {k: v for k, v in state.items() if k != "bit_generator"}
    checked = _checked_state(rest, RNG_SCHEMA[name], "rng")
    problem = RNG_DEGENERATE.get(name, lambda _: None)(checked)
    if problem:
        raise ValueError(problem)
    bit_generator = BIT_GENERATORS[name](0)
    bit_generator.state = {"bit_generator": name, **checked}
    return np.random.Generator(bit_generator)
