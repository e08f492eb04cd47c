"""The op case table: ``OP_CASES`` maps every public op to its cases (:class:`OpCase`).

One module per op family, named as the family's module in ``minigrad/ops/``: the cases of
``minigrad/ops/normalization.py``'s ``layer_norm`` are in ``op_cases/normalization.py``. A new family adds
a module here; it is found without being listed. The known families are imported first, in
a fixed order, because every family draws its inputs from one seeded generator.

A family's PyTorch references sit in the same module, in a builder registered with
``@torch_table`` that seeds its own generator; ``torch_cases(torch)`` builds them all for
the one torch runner (tests/minigrad/ops/test_all_ops_torch.py), so that this package
imports without torch. Three modules are not families: ``base`` (OpCase, TorchCase),
``catalogs`` (the shared per-op catalogs) and ``numpy_spellings`` (numpy_api's table).
"""
from __future__ import annotations

import importlib
import pkgutil

from .base import OP_CASES, OpCase, TorchCase, torch_cases  # noqa: F401

NOT_FAMILIES = ("base", "catalogs", "numpy_spellings")
_FIRST = ("elementwise", "reduce", "shape", "linalg", "normalization", "conv")
for _name in _FIRST + tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)
                                   if m.name not in _FIRST + NOT_FAMILIES)):
    importlib.import_module(f"{__name__}.{_name}")

ALL_CASES = [c for cases in OP_CASES.values() for c in cases]
