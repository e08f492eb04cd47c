"""The README is a landing page: its Python examples, and those of the docs pages it sends
readers to, run as written (a stale example is a bug); it stays under 10 KB; and every
relative link of the README and the docs leads to a file that exists (and, for ``#anchor``,
to a heading of it)."""
import re
from pathlib import Path

import pytest
from test_docs_references import link_problems

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_README_BYTES = 10_240
# The pages whose ```python blocks run here (```py blocks are shown, not run: they need a
# trained run folder, torch or timm).
EXAMPLE_PAGES = [README, *(ROOT / "docs" / name for name in ("minigrad.md", "ops.md", "numpy.md"))]
# Every page a reader reaches from the README, for the link check.
LINKED_PAGES = sorted(
    {README, *(ROOT / "docs").glob("*.md")}
    | {p for p in (ROOT / name for name in ("CONTRIBUTING.md", "CHANGELOG.md")) if p.exists()}
    | {p for p in [ROOT / "benchmarks" / "results" / "HISTORY.md"] if p.exists()}
)


def blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


BLOCKS = [(page, code) for page in EXAMPLE_PAGES for code in blocks(page)]


def test_readme_has_examples():
    assert len(blocks(README)) >= 1
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("page, code", BLOCKS, ids=[
    f"{page.relative_to(ROOT).as_posix()}-block{i}" for i, (page, _) in enumerate(BLOCKS)])
def test_readme_example_runs(page, code, capsys):
    exec(compile(code, str(page), "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    assert "FAILED" not in out


def test_readme_is_a_landing_page_of_at_most_10_kb():
    size = README.stat().st_size
    assert size <= MAX_README_BYTES, (
        f"README.md is {size:,} bytes; expected at most {MAX_README_BYTES:,}: move the details "
        "to a page under docs/ and link it")


@pytest.mark.parametrize("page", LINKED_PAGES, ids=[p.relative_to(ROOT).as_posix()
                                                    for p in LINKED_PAGES])
def test_relative_links_lead_to_existing_files_and_headings(page):
    problems = link_problems(page, page.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)
