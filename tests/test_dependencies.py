"""Every third-party module that minigrad and vit import when they are imported is a declared
dependency in pyproject.toml: `pip install -e .` (the README's first quickstart command) must
give a working `import minigrad, vit` and `python -m vit train`. (A missing SciPy once broke
the timm environment, which installs only the declared dependencies.)"""
import ast
import re
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
#: Imported only inside the functions that need them, each an optional extra.
OPTIONAL = {"matplotlib", "PIL", "safetensors", "torch", "timm", "sklearn"}


def module_level_imports(path: Path) -> set[str]:
    """Top-level package names imported at module level (not inside a def)."""
    names = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = []  # imports inside functions run on call, not on import
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_import_time_dependencies_are_declared():
    declared = {re.split(r"[<>=!~ \[]", d)[0].lower()
                for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                ["dependencies"]}
    used = set()
    for package in ("minigrad", "vit"):
        for path in (ROOT / package).rglob("*.py"):
            used |= module_level_imports(path)
    third_party = {n for n in used - set(sys.stdlib_module_names) - {"minigrad", "vit"}}
    missing = sorted(n for n in third_party - OPTIONAL if n.lower() not in declared)
    assert not missing, f"imported at module level but not in [project] dependencies: {missing}"
