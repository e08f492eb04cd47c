"""One hop from an op to its derivation and its tests, for the families of
ops/{unary,activations,reduce,scan,shape,indexing,contract,attention,losses,class_losses}.py: each op's
docstring closes with ``Derivation: docs/backward.md §N`` and ``Tests: <files>``; the
sections exist, the files exist and name the op, and an op with a gradient lists its case
module (tests/minigrad/op_cases/) first. The engine's families have the same check in
tests/minigrad/ops/test_op_docstrings.py."""
import re
from pathlib import Path

import pytest

from minigrad.ops import (activations, attention, class_losses, contract, indexing, losses,
                          reduce, scan, shape, unary)

ROOT = Path(__file__).resolve().parents[3]
SECTIONS = set(re.findall(r"^## (\d+)\. ", (ROOT / "docs" / "backward.md").read_text(), re.M))
MODULES = (unary, activations, reduce, scan, shape, indexing, contract, attention, losses,
           class_losses)
OPS = [(m, name) for m in MODULES for name in m.__all__
       if callable(getattr(m, name)) and not isinstance(getattr(m, name), type)]
NO_GRADIENT = {"argmax", "argmin", "any", "all", "one_hot", "attention_weights"}


def test_the_families_have_ops():
    assert len(OPS) >= 80


@pytest.mark.parametrize("module, name", OPS, ids=[n for _, n in OPS])
def test_op_docstring_points_to_its_derivation_and_tests(module, name):
    doc = getattr(module, name).__doc__
    assert "Derivation:" in doc and "Tests:" in doc, name
    tail = doc[doc.index("Derivation:"):]  # the pointers close the docstring
    assert tail.rstrip().endswith(".py."), (name, tail)
    sections = re.findall(r"§(\d+)", tail.split("Tests:")[0])
    assert set(sections) <= SECTIONS, (name, sections)
    assert sections or name == "one_hot", name  # one_hot: integer labels, no gradient
    files = re.findall(r"tests/[\w/]+\.py", tail.split("Tests:")[1])
    assert files, name
    if name not in NO_GRADIENT:
        assert files[0].startswith("tests/minigrad/op_cases/"), (name, files)
    for f in files:
        assert (ROOT / f).is_file(), f
        assert re.search(rf"\b{name}\b", (ROOT / f).read_text()), (name, f)
