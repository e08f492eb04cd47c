"""The op table of docs/ops.md, written from the ops themselves.

Every public op's docstring starts with its formula and names its derivation
(``docs/backward.md §N``); this prints one row per op with a link to that section, grouped by
the module that defines it. ``python scripts/op_table.py --write`` puts the table in
docs/ops.md between the ``op-table`` markers; ``tests/test_op_table.py`` fails when that page
and the ops disagree.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from minigrad import F  # noqa: E402
from minigrad.ops import PUBLIC_OPS  # noqa: E402

BACKWARD = ROOT / "docs" / "backward.md"
OPS_PAGE = ROOT / "docs" / "ops.md"
START, END = "<!-- op-table:start -->", "<!-- op-table:end -->"
SECTION = re.compile(r"§\s*(\d+)")


def sections() -> dict[int, str]:
    """Section number -> its GitHub anchor, from docs/backward.md's ``## N. title`` lines."""
    out = {}
    for line in BACKWARD.read_text(encoding="utf-8").splitlines():
        m = re.match(r"## (\d+)\. (.+)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", f"{m.group(1)}. {m.group(2)}".lower()).replace(" ", "-")
            out[int(m.group(1))] = slug
    return out


def rows() -> list[tuple[str, str, str, int | None]]:
    """(module, op, first docstring line, backward.md section or None) for every public op."""
    out = []
    for name in PUBLIC_OPS:
        fn = getattr(F, name)
        doc = (fn.__doc__ or "").strip()
        found = SECTION.search(doc)
        module = getattr(fn, "__module__", "") or ""
        out.append((module.rsplit(".", 1)[-1], name, doc.splitlines()[0] if doc else "",
                    int(found.group(1)) if found else None))
    return out


def table() -> str:
    anchors = sections()
    lines = ["| family | op | what it computes | backward |", "|---|---|---|---|"]
    for module, name, summary, n in sorted(rows(), key=lambda r: (r[0], PUBLIC_OPS.index(r[1]))):
        # (the link is relative to docs/, where the table is)
        link = f"[§{n}](backward.md#{anchors[n]})" if n in anchors else "(none)"
        summary = summary.replace("|", "\\|")
        lines.append(f"| `{module}` | `F.{name}` | {summary} | {link} |")
    return "\n".join(lines)


def page_with_table(text: str) -> str:
    """``text`` (docs/ops.md) with the region between the markers replaced by ``table()``."""
    head, start, rest = text.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise SystemExit(f"docs/ops.md: the markers {START} ... {END} are missing")
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update docs/ops.md in place")
    args = parser.parse_args(argv)
    if args.write:
        text = OPS_PAGE.read_text(encoding="utf-8")
        OPS_PAGE.write_text(page_with_table(text), encoding="utf-8")
    else:
        print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
