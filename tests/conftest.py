"""Shared test helpers live in tests/ (``ulps.py``) and the op case tables in
tests/minigrad/op_cases/ (``from op_cases.catalogs import slot_catalog`` in
tests/reliability too): put both folders on sys.path for every test folder, whatever
pytest's import mode."""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
for _path in (_HERE, str(Path(_HERE) / "minigrad")):
    if _path not in sys.path:
        sys.path.insert(0, _path)
