"""The op table of docs/ops.md (scripts/op_table.py) lists every public op with the backward.md
section that derives it, and is in step with the ops' docstrings."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("op_table", ROOT / "scripts" / "op_table.py")
op_table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(op_table)


def test_ops_page_table_is_the_generated_one():
    text = (ROOT / "docs" / "ops.md").read_text(encoding="utf-8")
    assert op_table.page_with_table(text) == text, (
        "docs/ops.md's op table is stale: run python scripts/op_table.py --write")


def test_every_public_op_links_an_existing_derivation():
    anchors = op_table.sections()
    missing = [name for _, name, _, n in op_table.rows() if n not in anchors]
    assert not missing, f"ops whose docstring names no existing docs/backward.md section: {missing}"


def test_every_public_op_is_in_the_table_once():
    from minigrad.ops import PUBLIC_OPS
    table = op_table.table()
    for name in PUBLIC_OPS:
        assert table.count(f"`F.{name}`") == 1, name
