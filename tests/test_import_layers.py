"""Imports point one way: down the layers that docs/architecture.md names, with no cycle.

Every ``import`` and ``from ... import`` in every module of ``minigrad`` and ``vit`` counts,
including those inside functions and classes (an import placed in a function to dodge a cycle
is still a cycle). Only imports under ``if TYPE_CHECKING:`` are left out: they never run.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The layers, bottom first: a module may import its own layer and the layers before it.
#: Each entry is a module or a package (every module under it). The order is the one
#: docs/architecture.md draws.
LAYERS = [
    ["minigrad.checks", "minigrad.arrays"],
    ["minigrad.runtime"],
    ["minigrad.gradmode", "minigrad.gradients", "minigrad.graph", "minigrad.tensor",
     "minigrad.inplace", "minigrad.opcalls", "minigrad.defop", "minigrad.shards"],
    ["minigrad.ops"],
    ["minigrad.methods", "minigrad.numpy_api", "minigrad.numpy_options", "minigrad.functional"],
    ["minigrad.nn", "minigrad.optim"],
    ["minigrad.tools"],
    ["minigrad"],
    ["vit.io"],
    ["vit.model"],
    ["vit.train"],
    ["vit.cli"],
    ["vit"],
]


def _modules() -> dict[str, Path]:
    found = {}
    for package in ("minigrad", "vit"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _type_checking_only(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _imports(name: str, path: Path) -> set[str]:
    """The project modules ``name`` imports (a name imported from a package counts as the
    submodule when there is one, else as the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            base = here[:len(here) - node.level + 1] if node.level else []
            prefix = ".".join(base + ([node.module] if node.module else []))
            candidates = [f"{prefix}.{alias.name}" for alias in node.names] + [prefix]
        for candidate in candidates:
            while candidate and candidate not in MODULES:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                targets.add(candidate)
                break
    return targets


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def layer_of(module: str) -> int:
    """The index in LAYERS of the most specific entry that holds ``module``."""
    best, depth = None, -1
    for index, entries in enumerate(LAYERS):
        for entry in entries:
            if (module == entry or module.startswith(entry + ".")) and entry.count(".") > depth:
                best, depth = index, entry.count(".")
    if best is None:
        raise AssertionError(f"{module} is in no layer of LAYERS: add it where it belongs")
    return best


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_import_points_up_the_layers():
    upward = [f"{m} (layer {layer_of(m)}) imports {t} (layer {layer_of(t)})"
              for m, targets in sorted(GRAPH.items()) for t in sorted(targets)
              if layer_of(t) > layer_of(m)]
    assert not upward, "imports pointing up the layers:\n" + "\n".join(upward)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycles():
    cycles = _cycles(GRAPH)
    assert not cycles, "modules importing each other in a circle:\n" + "\n".join(map(str, cycles))


@pytest.mark.parametrize("graph,expected", [
    ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert _cycles(graph) == expected


def test_imports_inside_functions_are_counted(tmp_path, monkeypatch):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from vit.train import loop\n"
                      "if TYPE_CHECKING:\n    from vit.cli import main\n", encoding="utf-8")
    assert _imports("vit.io.m", source) == {"vit.train.loop"}
