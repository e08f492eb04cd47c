"""Regenerate docs/performance.md's training-step tables from `train_step.py --json` files.

    python benchmarks/train_step.py --json default.json
    python benchmarks/train_step.py --threads 1 --json one.json
    python benchmarks/report.py default.json one.json          # rewrites the marked region
    python benchmarks/report.py default.json --print           # prints it instead

Only the text between ``<!-- train_step:begin -->`` and ``<!-- train_step:end -->`` changes;
the rest of the document, prose included, is left as it is. Each JSON file becomes one
block: a line naming the run (threads, commit, date, CPU, load average at start and end,
matmul peak), a table of median ms per implementation, and a table of ratios.

Given one ``scaling.py --json`` record instead, it re-renders the ``<!-- scaling:begin -->``
region of docs/scaling.md (the default ``--doc`` for such a record).

The files are read as data, checked entry by entry (sizes bounded, names restricted to a
safe alphabet, every number finite), and the document is rewritten atomically.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import NAME, ROOT, safe_name, write_text
from report_scaling import scaling_figure, scaling_markdown

BEGIN, END = "<!-- train_step:begin -->", "<!-- train_step:end -->"
MAX_BYTES = 4 << 20  # a train_step record is a few KB
ORDER = ("minigrad32", "minigrad64", "manual", "torch", "autograd")
SCALING_LABELS = {"tokens28": "tokens T (28x28x1, patch 14..1)",
                  "tokens32": "tokens T (32x32x3, patch 16..1)", "batch": "batch B",
                  "width": "width D", "depth": "depth (blocks)", "image": "image side (patch 8)"}


class ReportError(ValueError):
    """A JSON file or the document is not what the report can render."""


# ---- reading and checking a record ----------------------------------------------------------
def load_record(path: str) -> dict:
    """The train_step record in ``path``, checked: a ReportError names the wrong entry."""
    record = load_json(path)
    check_record(record, path)
    return record


def load_json(path: str):
    """The JSON value in ``path`` (at most MAX_BYTES, no NaN or infinities)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ReportError(f"{path}: cannot read ({e.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise ReportError(f"{path}: larger than {MAX_BYTES >> 20} MB; expected a train_step.py "
                          "--json file of a few KB")

    def no_constant(name):
        raise ReportError(f"{path}: got {name}; expected finite numbers only")
    try:
        record = json.loads(raw.decode("utf-8"), parse_constant=no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReportError(f"{path}: not JSON ({e})") from None
    return record


def _get(obj, key, kind, where):
    if not isinstance(obj, dict) or key not in obj:
        raise ReportError(f"{where}: missing entry {key!r}")
    value = obj[key]
    if kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
            math.isfinite(value) and value >= 0
        want = "a finite non-negative number"
    elif kind == "name":
        ok = isinstance(value, str) and NAME.fullmatch(value) is not None
        want = "a name of at most 80 letters, digits, spaces and ._/+()@,:-"
    else:
        ok = isinstance(value, kind) and not isinstance(value, bool)
        want = f"a {kind.__name__}" if isinstance(kind, type) else "a " + \
            " or ".join(k.__name__ for k in kind)
    if not ok:
        shown = repr(value) if len(repr(value)) < 60 else repr(value)[:57] + "..."
        raise ReportError(f"{where}.{key}: got {shown}; expected {want}")
    return value


def check_record(record, where: str) -> None:
    """Raise ReportError unless ``record`` has every entry the report reads, of the right type."""
    if not isinstance(record, dict):
        raise ReportError(f"{where}: got a JSON {type(record).__name__}; expected an object")
    if record.get("benchmark") != "train_step" or record.get("schema") != 1:
        raise ReportError(f"{where}: benchmark {record.get('benchmark')!r} schema "
                          f"{record.get('schema')!r}; expected a train_step.py --json file "
                          "(schema 1)")
    settings = _get(record, "settings", dict, where)
    threads = settings.get("threads")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool)
                                or not 1 <= threads <= 256):
        raise ReportError(f"{where}.settings.threads: got {threads!r}; expected null or 1-256")
    machine = _get(record, "machine", dict, where)
    _get(machine, "cpu", "name", where + ".machine")
    _get(machine, "logical_cpus", int, where + ".machine")
    commit = _get(record, "commit", dict, where)
    head = commit.get("head")
    if head is not None and not (isinstance(head, str) and re.fullmatch(r"[0-9a-f]{7,64}", head)):
        raise ReportError(f"{where}.commit.head: got {head!r}; expected a hex commit hash")
    started = _get(record, "started", str, where)
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d[0-9:.+Z-]{0,20}", started):
        raise ReportError(f"{where}.started: got {started[:40]!r}; expected an ISO 8601 time")
    for key in ("load_average_start", "load_average_end"):
        load = record.get(key)
        if load is not None and not (isinstance(load, list) and 1 <= len(load) <= 3 and all(
                isinstance(v, (int, float)) and math.isfinite(v) for v in load)):
            raise ReportError(f"{where}.{key}: got {load!r}; expected null or 1-3 numbers")
    _get(_get(record, "matmul_peak_gflops", dict, where), "best", "number", where)
    configs = _get(record, "configs", list, where)
    if not 1 <= len(configs) <= 26:
        raise ReportError(f"{where}.configs: got {len(configs)} entries; expected 1 to 26")
    for i, c in enumerate(configs):
        at = f"{where}.configs[{i}]"
        _get(c, "key", "name", at)
        _get(c, "name", "name", at)
        _get(c, "timed_steps", int, at)
        results = _get(c, "results", dict, at)
        if not 1 <= len(results) <= 16:
            raise ReportError(f"{at}.results: got {len(results)} entries; expected 1 to 16")
        for impl, r in results.items():
            if NAME.fullmatch(impl) is None:
                raise ReportError(f"{at}.results: got implementation name {impl[:40]!r}; "
                                  "expected letters, digits and ._-")
            for key in ("median_ms", "min_ms", "gflops", "peak_fraction"):
                _get(r, key, "number", f"{at}.results.{impl}")
            if r.get("peak_mb") is not None:
                _get(r, "peak_mb", "number", f"{at}.results.{impl}")
        for name, ratio in _get(c, "ratios", dict, at).items():
            if NAME.fullmatch(name) is None:
                raise ReportError(f"{at}.ratios: got name {name[:40]!r}; expected impl/impl")
            for key in ("median", "min"):
                _get(ratio, key, "number", f"{at}.ratios.{name}")


# ---- rendering ----------------------------------------------------------------------------
def _ms(v: float) -> str:
    return f"{v:.2f}"


def _load(load) -> str:
    return "?" if not load else f"{load[0]:.1f}"


def render(record: dict) -> str:
    """One run as Markdown: a heading line and two tables."""
    s, m, c = record["settings"], record["machine"], record["commit"]
    threads = "the default threads" if s["threads"] is None else \
        f"`--threads {s['threads']}` (one setting for BLAS, torch and minigrad)"
    head = "?" if c.get("head") is None else c["head"][:7]
    dirty = " + uncommitted changes in minigrad/ or vit/" if c.get("dirty_engine") else ""
    mt = m.get("torch") or {}
    torch = f", torch {safe_name(mt.get('version'))} {safe_name(mt.get('num_threads'))} threads" \
        if isinstance(mt, dict) and mt else ""
    blas = ", ".join(f"{safe_name(b.get('internal_api'))} {safe_name(b.get('num_threads'))} threads"
                     for b in m.get("blas", []) if isinstance(b, dict)
                     and b.get("user_api") == "blas")
    configs = record["configs"]
    impls = [i for i in ORDER if any(i in x["results"] for x in configs)]
    impls += sorted({i for x in configs for i in x["results"]} - set(impls))
    lines = [f"**{threads[0].upper() + threads[1:]}**, commit `{head}`{dirty}, "
             f"{record['started'][:16].replace('T', ' ')} UTC, {m['cpu']} "
             f"({m['logical_cpus']} CPUs; {blas or 'BLAS ?'}{torch}, minigrad "
             f"{safe_name(m.get('minigrad_threads'))} threads); load average "
             f"{_load(record.get('load_average_start'))} at start, "
             f"{_load(record.get('load_average_end'))} at end; float32 matmul peak "
             f"{record['matmul_peak_gflops']['best']:.0f} GFLOP/s"
             + ("; `--quick` run, few repetitions" if s.get("quick") else "") + ".", "",
             "Median ms per step:", "",
             "| config | " + " | ".join(impls) + " | % of matmul peak (mg32 / torch) |",
             "|---|" + "---:|" * (len(impls) + 1)]
    for x in configs:
        r = x["results"]
        cells = [_ms(r[i]["median_ms"]) if i in r else "" for i in impls]
        peak = " / ".join(f"{100 * r[i]['peak_fraction']:.0f}" if i in r else "-"
                          for i in ("minigrad32", "torch"))
        lines.append(f"| {x['name']} | " + " | ".join(cells) + f" | {peak} |")
    names = [n for n in configs[0]["ratios"]]
    mem_impls = [i for i in impls if any(x["results"].get(i, {}).get("peak_mb") is not None
                                         for x in configs)]
    lines += ["", "Ratios of minigrad32's time to the others' (median / min; > 1: minigrad32 "
              "is slower), and tracemalloc's peak MB over one step:", "",
              "| config | " + " | ".join(f"{n} (median / min)" for n in names)
              + f" | peak MB ({' / '.join(mem_impls)}) | timed steps |",
              "|---|" + "---:|" * len(names) + "---|---:|"]
    for x in configs:
        cells = []
        for n in names:
            q = x["ratios"].get(n)
            cells.append("" if q is None else f"{q['median']:.2f} / {q['min']:.2f}")
        mem = " / ".join("-" if x["results"].get(i, {}).get("peak_mb") is None
                         else f"{x['results'][i]['peak_mb']:.1f}" for i in mem_impls)
        lines.append(f"| {x['key']} | " + " | ".join(cells) + f" | {mem} | "
                     f"{x['timed_steps']} |")
    return "\n".join(lines)


def render_all(records: list[dict]) -> str:
    body = "\n\n".join(render(r) for r in records)
    return (f"{BEGIN}\n<!-- generated by benchmarks/report.py from train_step.py --json; "
            f"edit the JSON run, not this region -->\n{body}\n{END}")


def update_doc(path: str, region: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace the region between ``begin`` and ``end`` in the doc at ``path`` (atomically)."""
    with open(path, encoding="utf-8") as f:
        doc = f.read(MAX_BYTES + 1)
    write_text(path, replace_region(doc, region, f"--doc {path}", begin, end), "--doc")


def replace_region(doc: str, region: str, where: str, begin: str = BEGIN,
                   end: str = END) -> str:
    """``doc`` with the text from ``begin`` to ``end`` (markers included) replaced by
    ``region`` (which starts and ends with those markers)."""
    if doc.count(begin) != 1 or doc.count(end) != 1 or doc.index(begin) > doc.index(end):
        raise ReportError(f"{where}: expected one {begin} line followed by one {end} line, "
                          f"found {doc.count(begin)} and {doc.count(end)}")
    return doc[:doc.index(begin)] + region + doc[doc.index(end) + len(end):]


def _benchmark_of(path: str):
    try:
        return load_json(path).get("benchmark")
    except (ReportError, AttributeError):
        return None


def scaling_main(args) -> int:
    """Re-render the scaling region (and the figure) from a scaling.py --json record."""
    record = load_json(args.runs[0])
    try:
        for axis, a in record["axes"].items():
            if axis not in SCALING_LABELS:
                raise ReportError(f"{args.runs[0]}: axes: got {axis[:40]!r}; expected one of "
                                  f"{', '.join(SCALING_LABELS)}")
            a["label"] = SCALING_LABELS[axis]  # never text from the file
            for p in a["points"]:
                for v in [p["x"], *p["median_ms"].values(), *p["min_ms"].values()]:
                    if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                        raise ReportError(f"{args.runs[0]}: axes.{axis}: got {v!r}; expected "
                                          "positive numbers")
        region = scaling_markdown(record)
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        raise ReportError(f"{args.runs[0]}: benchmark 'scaling', but not a scaling.py record "
                          f"(missing or bad entry {e!r})") from None
    if args.print:
        print(region)
        return 0
    update_doc(args.doc, region, "<!-- scaling:begin -->", "<!-- scaling:end -->")
    if args.figure:
        scaling_figure(record, args.figure)
    print(f"rewrote the scaling region of {args.doc} from {args.runs[0]}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", metavar="RUN.json", help="train_step.py --json files")
    ap.add_argument("--doc", default=None,
                    help="the Markdown file whose marked region is replaced (default "
                         "docs/performance.md; docs/scaling.md for a scaling.py record)")
    ap.add_argument("--print", action="store_true", help="print the region, change nothing")
    ap.add_argument("--figure", metavar="PNG",
                    help="for a scaling.py record: also redraw the figure")
    args = ap.parse_args(argv)
    if len(args.runs) > 8:
        ap.error(f"RUN.json: got {len(args.runs)} files; expected at most 8")
    scaling = len(args.runs) == 1 and _benchmark_of(args.runs[0]) == "scaling"
    if args.doc is None:
        args.doc = os.path.join(ROOT, "docs", "scaling.md" if scaling else "performance.md")
    try:
        if scaling:
            return scaling_main(args)
        region = render_all([load_record(p) for p in args.runs])
        if args.print:
            print(region)
            return 0
        try:
            with open(args.doc, encoding="utf-8") as f:
                doc = f.read(MAX_BYTES + 1)
        except (OSError, UnicodeDecodeError) as e:
            raise ReportError(f"--doc {args.doc}: cannot read ({e})") from None
        if len(doc) > MAX_BYTES:
            raise ReportError(f"--doc {args.doc}: larger than {MAX_BYTES >> 20} MB")
        write_text(args.doc, replace_region(doc, region, f"--doc {args.doc}"), "--doc")
    except ValueError as e:  # ReportError, or write_text refusing a link
        print(f"report.py: {e}", file=sys.stderr)
        return 2
    print(f"rewrote the {BEGIN} region of {args.doc} from {', '.join(args.runs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
