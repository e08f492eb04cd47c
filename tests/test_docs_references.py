"""Every reference the docs make into the repository resolves (a stale reference is a bug).

For each markdown page (README.md, docs/*.md, benchmarks/README.md, vit/data/README.md):
- a relative link ``[text](path#anchor)`` names a file or folder that exists, and its anchor
  matches a heading of the target page (GitHub's slug rules);
- a backticked repository path (``minigrad/...``, ``vit/...``, ``tests/...``, ``benchmarks/...``,
  ``scripts/...``, ``docs/...``) exists; ``file.py::name`` also names a ``def``/``class`` (or a
  module-level assignment) of that file; ``{a,b}`` expands, ``*`` must match at least one file;
- a backticked dotted name ``minigrad.x.y`` / ``vit.x.y`` (or ``mg.x``, ``F.x``, ``Tensor.x``,
  ``TinyViT.x``, ``TrainOptions.x``) imports, or is an attribute of what does;
- no page cites an old home that still resolves only for compatibility (``RETIRED``).
Each failure is reported as ``page:line: what is wrong``.
"""
from __future__ import annotations

import functools
import importlib
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    {ROOT / "README.md", ROOT / "benchmarks" / "README.md", ROOT / "vit" / "data" / "README.md"}
    | set((ROOT / "docs").glob("*.md"))
)
PAGE_IDS = [p.relative_to(ROOT).as_posix() for p in PAGES]

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)
ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
ROOTS = "minigrad|vit|tests|benchmarks|scripts|docs"
PATH_TOKEN = re.compile(
    rf"(?<![\w./~-])(?:(?P<path>(?:{ROOTS})/(?:[\w.*-]|/|\{{[\w.,-]*\}})*)"
    r"|(?P<bare>[A-Za-z_][\w-]*\.py)(?![\w/])|(?=::))"
    r"(?P<names>(?:::[A-Za-z_]\w*(?:\[[^\]]*\])?)*)"
)
# The short names the docs use for minigrad's and vit's objects (`mg.op`, `F.linear`,
# `TinyViT.predict`); `nn.` is left out: the docs also speak of torch's `nn.Linear`.
ALIASES = {"mg": "minigrad", "F": "minigrad.functional", "Tensor": "minigrad.Tensor",
           "TinyViT": "vit.model.tinyvit.TinyViT", "TrainOptions": "vit.train.options.TrainOptions"}
DOTTED = re.compile(
    r"(?<![\w./-])(?:minigrad|vit|" + "|".join(ALIASES) + r")(?:\.[A-Za-z_]\w*)+(?![\w/-])"
)


# ----------------------------------------------------------------- reading markdown

def lines_of(text: str) -> list[tuple[int, str, bool]]:
    """(line number, line, inside a fenced code block) for each line, except those of a
    ```text block: a program's recorded output (a profile names the files of its day)."""
    out, fence, recorded = [], None, False
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m and (fence is None or m.group(1) == fence):
            fence = m.group(1) if fence is None else None
            recorded = fence is not None and line.strip()[len(fence):].strip() == "text"
            continue
        if not recorded:
            out.append((number, line, fence is not None))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: rendered text, lowercased, punctuation but - and _
    dropped, each space a -."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a page offers: heading slugs (duplicates get -1, -2, ...) and <a name>."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    previous = ""
    for _, line, in_code in lines_of(text):
        if in_code:
            previous = ""
            continue
        heading = None
        if m := ATX.match(line):
            heading = m.group(2)
        elif re.fullmatch(r"\s{0,3}(=+|-+)\s*", line) and previous.strip() and "|" not in previous:
            heading = previous.strip()  # setext heading: text underlined by === or ---
        if heading is not None:
            base = slug(heading)
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
        found.update(HTML_ANCHOR.findall(line))
        previous = line
    return found


def code_spans(line: str) -> list[str]:
    return [m.group(2) for m in CODE_SPAN.finditer(line)]


# ----------------------------------------------------------------- the three checks

def link_problems(page: Path, text: str) -> list[str]:
    problems = []
    for number, line, in_code in lines_of(text):
        if in_code:
            continue
        prose = CODE_SPAN.sub("", line)
        targets = LINK.findall(prose) + REF_LINK.findall(prose)
        for target in targets:
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, https:, mailto: ... are not ours to check offline
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve()
            where = f"{page.relative_to(ROOT).as_posix()}:{number}"
            if path and not dest.exists():
                problems.append(f"{where}: link target {target!r} does not exist")
            elif anchor and (not path or dest.suffix == ".md") and anchor not in anchors(
                dest.read_text(encoding="utf-8") if path else text
            ):
                problems.append(f"{where}: link {target!r}: no heading with anchor #{anchor}")
    return problems


def expand_braces(path: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    out = []
    for choice in m.group(1).split(","):
        out += expand_braces(path[: m.start()] + choice + path[m.end():])
    return out


def defines(source: str, name: str) -> bool:
    return re.search(
        rf"^\s*(?:async\s+def|def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*[:=]",
        source, re.M,
    ) is not None


@functools.lru_cache(maxsize=1)
def files_by_name() -> dict[str, list[Path]]:
    """Every file of the repository by its base name (for a bare ``x.py`` in prose)."""
    skip = {".git", "__pycache__", ".hypothesis", ".pytest_cache", "runs", "build", "dist",
            ".venv"}
    out: dict[str, list[Path]] = {}
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = sorted(d for d in subfolders if d not in skip)
        for name in files:
            out.setdefault(name, []).append(Path(folder) / name)
    return out


def path_problems(page: Path, text: str) -> list[str]:
    problems = []
    last: list[Path] = []  # the files a bare ``::name`` continues (e.g. a table cell's list)
    for number, line, in_code in lines_of(text):
        where = f"{page.relative_to(ROOT).as_posix()}:{number}"
        chunks = [line] if in_code else code_spans(line)
        for chunk in chunks:
            for m in PATH_TOKEN.finditer(chunk):
                names = [re.sub(r"\[.*\]$", "", n) for n in m.group("names").split("::") if n]
                if m.group("path"):
                    path = m.group("path").rstrip(".,;:")
                    if "..." in path or "<" in path:
                        continue  # a pattern for the reader, not a path
                    files = []
                    for one in expand_braces(path):
                        matches = sorted(ROOT.glob(one)) if "*" in one else [ROOT / one]
                        if not matches or not matches[0].exists():
                            problems.append(f"{where}: `{one}` does not exist")
                        elif one.endswith("/") and not matches[0].is_dir():
                            problems.append(f"{where}: `{one}` is not a folder")
                        else:
                            files += [f for f in matches if f.is_file()]
                elif m.group("bare"):
                    if in_code:
                        continue  # `python x.py` in a shell block runs from some folder
                    files = files_by_name().get(m.group("bare"), [])
                    if not files:
                        problems.append(f"{where}: no file `{m.group('bare')}` in the repository")
                else:
                    files = last  # `::test_b` after `tests/x.py::test_a`
                if files:
                    last = files
                for name in names:
                    if files and not any(defines(f.read_text(encoding="utf-8"), name) for f in files):
                        shown = ", ".join(f.relative_to(ROOT).as_posix() for f in files)
                        problems.append(f"{where}: `{shown}` defines no `{name}`")
    return problems


def resolve(dotted: str) -> str | None:
    """None if ``dotted`` names a module or an attribute reachable from one, else why not."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name is not None and module_name.startswith(e.name):
                continue  # that prefix is not a module: try a shorter one
            return f"importing {module_name} fails: {e}"
        except Exception as e:
            return f"importing {module_name} fails: {type(e).__name__}: {e}"
        for i, attr in enumerate(parts[cut:], cut):
            fields = getattr(obj, "__dataclass_fields__", {})
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
            elif attr in fields and i == len(parts) - 1:
                return None  # a dataclass field without a class-level default
            else:
                return f"{'.'.join(parts[:i])} has no attribute {attr!r}"
        return None
    return f"no module {parts[0]}"


def name_problems(page: Path, text: str) -> list[str]:
    problems = []
    for number, line, in_code in lines_of(text):
        if in_code:
            continue
        for span in code_spans(line):
            for dotted in DOTTED.findall(span):
                head, _, rest = dotted.partition(".")
                why = resolve(f"{ALIASES[head]}.{rest}" if head in ALIASES else dotted)
                if why:
                    where = f"{page.relative_to(ROOT).as_posix()}:{number}"
                    problems.append(f"{where}: `{dotted}`: {why}")
    return problems


# Old homes that still resolve (a compatibility re-export, or a file that stayed for another
# job) but that the docs must no longer cite: old reference -> where it lives now.
RETIRED = {
    "tests/minigrad/conftest.py": "tests/minigrad/op_cases/ (the op case table)",
}
RETIRED_TOKEN = re.compile(
    r"(?<![\w./-])(" + "|".join(re.escape(k) for k in RETIRED) + r")(?![\w/-])"
)


def retired_problems(page: Path, text: str) -> list[str]:
    problems = []
    for number, line, in_code in lines_of(text):
        chunks = [line] if in_code else code_spans(line) + [
            (page.parent / t.partition("#")[0]).resolve().relative_to(ROOT).as_posix()
            for t in LINK.findall(CODE_SPAN.sub("", line))
            if t and not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)
            and (page.parent / t.partition("#")[0]).resolve().is_relative_to(ROOT)
        ]
        where = f"{page.relative_to(ROOT).as_posix()}:{number}"
        for old in sorted({old for chunk in chunks for old in RETIRED_TOKEN.findall(chunk)}):
            problems.append(f"{where}: `{old}` moved: cite `{RETIRED[old]}`")
    return problems


# ----------------------------------------------------------------- the tests

def test_pages_found():
    assert {"README.md", "docs/reliability.md", "benchmarks/README.md"} <= set(PAGE_IDS)


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_links_resolve(page):
    problems = link_problems(page, page.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_backticked_paths_exist(page):
    problems = path_problems(page, page.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_backticked_dotted_names_resolve(page):
    problems = name_problems(page, page.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_no_retired_references(page):
    problems = retired_problems(page, page.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------- the checker itself can fail

def test_slug_follows_github_rules():
    assert slug("15. In-place writes: the version check") == "15-in-place-writes-the-version-check"
    assert slug("28. `nll_loss` and `cross_entropy`'s weight") == "28-nll_loss-and-cross_entropys-weight"
    assert slug("What [gradcheck](x.md) can *not* see") == "what-gradcheck-can-not-see"
    assert anchors("# A\n## A\n```\n# not a heading\n```\nB\n---\n") == {"a", "a-1", "b"}


def test_checker_reports_stale_references():
    page = ROOT / "docs" / "probe.md"  # never written: only its folder matters
    text = (
        "# Title\n"
        "[ok](reliability.md) [gone](nowhere.md) [bad anchor](#no-such) [good](#title)\n"
        "`minigrad/blocks.py` `minigrad/ops/{reduce,nosuch}.py` `tests/test_docs_references.py`\n"
        "`tests/test_docs_references.py::test_slug_follows_github_rules` "
        "`tests/test_docs_references.py::test_missing`, `::test_pages_found`, `::test_gone`; "
        "`test_docs_references.py::test_slug_follows_github_rules` `no_such_module.py`\n"
        "`minigrad.checks.integer` `minigrad.blocks.set_num_threads` `vit.model.NoSuch`\n"
        "`mg.gradcheck` `F.no_such_op(x)` `TinyViT.predict` `tests/minigrad/conftest.py`\n"
        "```\npython benchmarks/nosuch.py\n```\n"
        "```text\n  0.5  minigrad/ops/gone.py:12(forward)\n```\n"  # recorded output: skipped
    )
    links, paths, names = (f(page, text) for f in (link_problems, path_problems, name_problems))
    assert [p.split(": ", 1)[1] for p in links] == [
        "link target 'nowhere.md' does not exist",
        "link '#no-such': no heading with anchor #no-such",
    ]
    assert [p.split(": ", 1)[1] for p in paths] == [
        "`minigrad/blocks.py` does not exist",
        "`minigrad/ops/nosuch.py` does not exist",
        "`tests/test_docs_references.py` defines no `test_missing`",
        "`tests/test_docs_references.py` defines no `test_gone`",
        "no file `no_such_module.py` in the repository",
        "`benchmarks/nosuch.py` does not exist",
    ]
    assert [p.split(": ", 1)[0].rsplit(":", 1)[1] for p in names] == ["5", "5", "6"]
    assert "minigrad.blocks" in names[0] and "NoSuch" in names[1] and "no_such_op" in names[2]
    assert retired_problems(page, text) == [
        "docs/probe.md:6: `tests/minigrad/conftest.py` moved: cite `tests/minigrad/op_cases/ "
        "(the op case table)`"]


def test_backward_sections_are_numbered_without_gaps():
    """docs/backward.md's sections are cited by number (§N) from the ops' docstrings: 1, 2, ...
    in order, none missing or repeated."""
    text = (ROOT / "docs" / "backward.md").read_text(encoding="utf-8")
    numbers = [int(n) for n in re.findall(r"^## (\d+)\. ", text, re.M)]
    assert numbers == list(range(1, len(numbers) + 1)), numbers
