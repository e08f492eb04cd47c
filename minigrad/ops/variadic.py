"""How the ops with a variable number of inputs (``concatenate``, ``stack``, ``einsum``) are
recorded: their inputs are a list, which the op wrapper (``mg.op``) does not unpack, so they
run their forward over the arrays themselves and call ``record``. Through this one helper
they are also shown to checking mode's observer (``minigrad.opcalls``) like any op, with
their forward, so the per-op gradient check checks them too."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..defop import record
from ..opcalls import OpCall, observer_of_op_calls

__all__: list[str] = []  # record_variadic is the ops' helper, imported by name; no op here


def record_variadic(op: Callable, forward: Callable, inputs: Sequence, arrays: Sequence,
                    name: str, params: Sequence[str], **kwargs: Any) -> Any:
    """``(out, vjps) = forward(*arrays, **kwargs)``, recorded for ``inputs`` (the Tensors or
    arrays as the user gave them, ``arrays`` their arrays) as ``record`` records it, and shown
    to the observer in checking mode as a call of ``op`` (``params`` names each input)."""
    out, vjps = forward(*arrays, **kwargs)
    result = record(out, inputs, vjps, name, params)
    observer = observer_of_op_calls()
    if observer is not None:
        observer(OpCall(op, name, forward, tuple(params), tuple(inputs), tuple(arrays), kwargs,
                        result))
    return result
