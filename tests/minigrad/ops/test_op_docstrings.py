"""One hop from an op to its derivation and its tests (issue 13 item 1): each op's docstring
ends with ``Derivation: docs/backward.md §N`` and ``Tests: <files>``, and both exist."""
import re
from pathlib import Path

import pytest

from minigrad.ops import conv, elementwise, linalg, normalization, pool

ROOT = Path(__file__).resolve().parents[3]
SECTIONS = set(re.findall(r"^## (\d+)\. ", (ROOT / "docs" / "backward.md").read_text(), re.M))
# the engine's families (the others: tests/minigrad/ops/test_all_ops_docstrings.py)
OPS = [(m, name) for m in (elementwise, linalg, normalization, conv, pool) for name in m.__all__
       if getattr(getattr(m, name), "is_op", False) and name != "cross_entropy"
       and not name.startswith(("less", "greater", "equal", "not_equal"))]


def test_the_families_have_ops():
    assert len(OPS) >= 20  # elementwise, linalg, layer_norm, conv, pool


@pytest.mark.parametrize("module, name", OPS, ids=[n for _, n in OPS])
def test_op_docstring_points_to_its_derivation_and_tests(module, name):
    doc = getattr(module, name).__doc__
    tail = doc[doc.index("Derivation:"):]  # the pointers close the docstring
    sections = re.findall(r"§(\d+)", tail.split("Tests:")[0])
    assert sections and set(sections) <= SECTIONS, (name, sections)
    files = re.findall(r"tests/[\w/]+\.py", tail.split("Tests:")[1])
    family = f"tests/minigrad/op_cases/{module.__name__.rsplit('.', 1)[1]}.py"
    if module is pool:  # pooling's cases sit with the convolutions'
        family = "tests/minigrad/op_cases/conv.py"
    assert files[0] == family, (name, files)
    for f in files:
        assert (ROOT / f).is_file(), f
        assert name in (ROOT / f).read_text(), (name, f)
