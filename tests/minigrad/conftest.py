"""Parametrizes ``mg_op_case`` over the op case table (``op_cases/``, one module per op
family) for every test under this folder (ops/, engine/, nn/, optim/ and this folder), and
gives them the ``threads`` fixture (the block pool's thread count, restored after).
This folder goes on sys.path so that ``from op_cases import OP_CASES`` works from every
subfolder in any import mode (tests/conftest.py adds it too, for tests/reliability)."""
import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from op_cases import ALL_CASES  # noqa: E402

from minigrad.runtime import parallel  # noqa: E402


def pytest_generate_tests(metafunc):
    if "mg_op_case" in metafunc.fixturenames:
        cases = ALL_CASES
        if metafunc.definition.get_closest_marker("dtype_keeping_cases"):
            cases = [c for c in ALL_CASES if c.keeps_dtype]  # the others cast on purpose
        metafunc.parametrize("mg_op_case", cases, ids=[c.id for c in cases])


@pytest.fixture
def threads():
    """``parallel.set_num_threads``, the block pool's thread count restored after the test."""
    before = parallel.get_num_threads()
    yield parallel.set_num_threads
    parallel.set_num_threads(before)
