"""Shared test helpers live in tests/ (``helpers.py``: one copy of each helper that more than
one test file uses, drawing inputs from a generator the caller passes; ``ulps.py``: the dtype
tolerances), in tests/minigrad/ (the op case tables, ``op_cases``: tests/reliability uses
``op_cases.catalogs`` too) and beside the tests that use them (``reliability_util``,
``hostile_util``, ``peer_util``, ``vit_reference``): put those folders on sys.path for every
test folder, so that any import mode finds them (``--import-mode=importlib`` does not add a
test's own folder)."""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
for _path in (_HERE, *(str(Path(_HERE) / d) for d in ("minigrad", "reliability", "peers", "vit"))):
    if _path not in sys.path:
        sys.path.insert(0, _path)
