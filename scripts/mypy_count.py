"""mypy over the modules not yet held clean, against a count of errors that may only go down.

``mypy`` alone checks what pyproject.toml's ``[tool.mypy]`` names (``files`` less ``exclude``:
minigrad's core and vit), which must have no error. This script checks every other module
of minigrad and vit, with the same settings, and compares its number of errors with the one
in ``.mypy-baseline``: above it fails, naming the errors; below it, it says so and
``--write`` records the lower number (it never records a higher one).

    python scripts/mypy_count.py            # CI: fail above the baseline
    python scripts/mypy_count.py --write    # after fixing some: record the new count
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: mypy itself depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".mypy-baseline"
PACKAGES = ("minigrad", "vit")
ERROR = re.compile(r"^(?P<path>[^:\n]+\.py):\d+(?::\d+)?: error: ", re.MULTILINE)


def clean_files() -> set[str]:
    """The files ``mypy`` checks by itself: [tool.mypy] files, directories expanded, less
    those its exclude patterns match (as mypy applies them: to the path, with / separators)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    excluded = [re.compile(p) for p in config.get("exclude", [])]
    found = set()
    for entry in config["files"]:
        path = ROOT / entry
        paths = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for p in paths:
            rel = p.relative_to(ROOT).as_posix()
            if not any(x.search(rel) for x in excluded):
                found.add(rel)
    return found


def counted_files() -> list[str]:
    """Every module of the packages that ``mypy`` alone does not check."""
    clean = clean_files()
    every = {p.relative_to(ROOT).as_posix() for package in PACKAGES
             for p in (ROOT / package).rglob("*.py")}
    return sorted(every - clean)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="record the count in .mypy-baseline when it went down")
    args = parser.parse_args(argv)
    files = counted_files()
    # (mypy exits 1 when it finds errors, 2 when it could not check)
    done = subprocess.run([sys.executable, "-m", "mypy", *files], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode not in (0, 1):
        print(done.stdout + done.stderr, file=sys.stderr)
        print(f"mypy_count: mypy failed (exit status {done.returncode})", file=sys.stderr)
        return 2
    per_file = Counter(m.group("path") for m in ERROR.finditer(done.stdout))
    count = sum(per_file.values())
    baseline = int(BASELINE.read_text(encoding="utf-8").strip())
    for path, n in sorted(per_file.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{n:5d}  {path}")
    print(f"mypy_count: {count} errors in the {len(files)} counted modules "
          f"(.mypy-baseline: {baseline})")
    if count > baseline:
        print(done.stdout, end="")
        print(f"mypy_count: {count - baseline} more than .mypy-baseline allows: fix the new "
              "ones (above); the count may only go down", file=sys.stderr)
        return 1
    if count < baseline:
        if args.write:
            BASELINE.write_text(f"{count}\n", encoding="utf-8")
            print(f"mypy_count: .mypy-baseline lowered from {baseline} to {count}")
        else:
            print(f"mypy_count: down from {baseline} to {count}: record it with "
                  "python scripts/mypy_count.py --write")
    return 0


if __name__ == "__main__":
    sys.exit(main())
