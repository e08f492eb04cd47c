"""One hop from an op to its derivation and its tests, for every op family in minigrad/ops/.

Each op's docstring closes with ``Derivation: docs/backward.md §N. Tests: <files>.``: the
sections exist (an op without a gradient may say ``Derivation: none``), every file exists and
names the op, and an op with cases in the table (tests/minigrad/op_cases/) points first to the
family modules that hold them. The comparisons (``minigrad.ops.COMPARISONS``, made from NumPy's
ufuncs, bool results) have no derivation to point to; ``bounds`` is not a family."""
import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from op_cases.base import CASE_MODULES  # filled as the case table imports (conftest.py)

import minigrad.ops
from minigrad.ops import COMPARISONS, INDEX_REDUCTIONS, PUBLIC_OPS

ROOT = Path(__file__).resolve().parents[3]
SECTIONS = set(re.findall(r"^## (\d+)\. ", (ROOT / "docs" / "backward.md").read_text(), re.M))
FAMILIES = [importlib.import_module(f"minigrad.ops.{m.name}")
            for m in pkgutil.iter_modules(minigrad.ops.__path__) if m.name != "bounds"]
OPS = [(m, name) for m in FAMILIES for name in m.__all__
       if callable(getattr(m, name)) and not isinstance(getattr(m, name), type)
       and name not in COMPARISONS]


def test_every_public_op_is_checked():
    checked = {name for _, name in OPS}
    assert set(PUBLIC_OPS) | set(INDEX_REDUCTIONS) | {"one_hot"} <= checked
    assert set(CASE_MODULES) == set(PUBLIC_OPS)  # the ops with a gradient have cases


@pytest.mark.parametrize("module, name", OPS, ids=[n for _, n in OPS])
def test_op_docstring_points_to_its_derivation_and_tests(module, name):
    doc = getattr(module, name).__doc__
    assert "Derivation:" in doc and "Tests:" in doc, name
    tail = doc[doc.index("Derivation:"):]  # the pointers close the docstring
    assert tail.rstrip().endswith(".py."), (name, tail)
    derivation, tests = tail.split("Tests:")
    sections = re.findall(r"§(\d+)", derivation)
    assert set(sections) <= SECTIONS, (name, sections)
    assert sections or (derivation.startswith("Derivation: none") and name not in PUBLIC_OPS), name
    files = re.findall(r"tests/[\w/]+\.py", tests)
    assert files, name
    cases = [f"tests/minigrad/op_cases/{family}.py" for family in CASE_MODULES.get(name, [])]
    assert sorted(files[:len(cases)]) == sorted(cases), (name, files, cases)
    for f in files:
        assert (ROOT / f).is_file(), f
        assert re.search(rf"\b{name}\b", (ROOT / f).read_text()), (name, f)
