"""train_step.py --json writes a complete, self-consistent record, and report.py renders it
into docs/performance.md's marked region (and only there). No timing is asserted."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- train_step:begin -->", "<!-- train_step:end -->"
EPS = np.finfo(np.float64).eps


def _run(script, *args, cwd=ROOT):
    return subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script), *args],
                          capture_output=True, text=True, timeout=600, cwd=cwd)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One --quick run of the tiniest config (A), as JSON: (path, record)."""
    path = tmp_path_factory.mktemp("bench") / "run.json"
    proc = _run("train_step.py", "--quick", "--configs", "A", "--rounds", "1",
                "--impls", "minigrad32,manual,torch", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    with open(path) as f:
        return path, json.load(f)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@pytest.mark.slow  # runs train_step.py --quick --json (the run fixture)
def test_record_describes_the_machine_and_commit(run):
    _, rec = run
    assert rec["benchmark"] == "train_step" and rec["schema"] == 1
    m = rec["machine"]
    assert isinstance(m["cpu"], str) and m["cpu"]
    assert isinstance(m["logical_cpus"], int) and m["logical_cpus"] >= 1
    assert m["usable_cores"] == sorted(os.sched_getaffinity(0))
    assert isinstance(m["numpy"], str) and m["numpy"] == np.__version__
    assert isinstance(m["minigrad_threads"], int) and m["minigrad_threads"] >= 1
    assert isinstance(m["blas"], list) and m["blas"]
    assert all("internal_api" in b and "num_threads" in b for b in m["blas"])
    if m["torch"] is not None:
        assert isinstance(m["torch"]["version"], str)
        assert isinstance(m["torch"]["num_threads"], int)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=ROOT).stdout.strip()
    assert rec["commit"]["head"] == head
    assert isinstance(rec["commit"]["dirty"], bool)
    assert isinstance(rec["commit"]["dirty_engine"], bool)
    for key in ("load_average_start", "load_average_end"):
        assert len(rec[key]) == 3 and all(_is_number(v) for v in rec[key])
    assert rec["settings"]["quick"] is True and rec["settings"]["rounds"] == 1


@pytest.mark.slow  # the run fixture
def test_record_holds_every_median_min_and_ratio(run):
    _, rec = run
    assert [c["key"] for c in rec["configs"]] == ["A"]
    (c,) = rec["configs"]
    assert c["shape"]["batch"] >= 1 and c["timed_steps"] >= 1
    impls = {"minigrad32", "manual"} | ({"torch"} if rec["machine"]["torch"] else set())
    assert set(c["results"]) == impls
    for impl, r in c["results"].items():
        for key in ("median_ms", "min_ms", "gflops", "peak_fraction", "faults_per_step"):
            assert _is_number(r[key]) and r[key] >= 0, (impl, key)
        assert 0 < r["min_ms"] <= r["median_ms"]
        assert (r["peak_mb"] is None) == (impl == "torch")  # tracemalloc cannot see torch
    assert set(c["ratios"]) == {f"minigrad32/{i}" for i in impls - {"minigrad32"}}
    base = c["results"]["minigrad32"]
    for name, q in c["ratios"].items():
        other = c["results"][name.split("/")[1]]
        for what in ("median", "min"):
            want = base[f"{what}_ms"] / other[f"{what}_ms"]
            assert math.isclose(q[what], want, rel_tol=16 * EPS), (name, what)


@pytest.mark.slow  # the run fixture
def test_report_renders_the_run(run):
    path, rec = run
    proc = _run("report.py", str(path), "--print")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.count(BEGIN) == 1 and out.count(END) == 1
    (c,) = rec["configs"]
    assert c["name"] in out and rec["commit"]["head"][:7] in out
    for impl, r in c["results"].items():
        assert impl in out and f"{r['median_ms']:.2f}" in out
    q = c["ratios"]["minigrad32/manual"]
    assert f"{q['median']:.2f} / {q['min']:.2f}" in out


@pytest.mark.slow  # the run fixture
def test_report_replaces_only_the_marked_region(run, tmp_path):
    path, _ = run
    doc = tmp_path / "perf.md"
    before, after = "# Title\n\nprose before\n", "\nprose after\n## Another heading\n"
    doc.write_text(before + BEGIN + "\nold table\n" + END + after)
    proc = _run("report.py", str(path), str(path), "--doc", str(doc))
    assert proc.returncode == 0, proc.stderr
    text = doc.read_text()
    assert text.startswith(before) and text.endswith(after)
    assert "old table" not in text and text.count("Median ms per step") == 2
    # a second run over its own output is a fixed point
    assert _run("report.py", str(path), str(path), "--doc", str(doc)).returncode == 0
    assert doc.read_text() == text


def _bad(run, tmp_path, mutate):
    _, rec = run
    rec = json.loads(json.dumps(rec))
    mutate(rec)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rec))
    return _run("report.py", str(bad), "--print")


@pytest.mark.slow  # the run fixture; fast: test_report_rejects_nan_and_non_json
@pytest.mark.parametrize("mutate, entry", [
    (lambda r: r["configs"][0]["results"]["minigrad32"].update(median_ms="fast"), "median_ms"),
    (lambda r: r["configs"][0]["results"]["minigrad32"].update(median_ms=-1.0), "median_ms"),
    (lambda r: r["configs"][0].update(name="A | <script>"), "name"),
    (lambda r: r["configs"][0].pop("ratios"), "ratios"),
    (lambda r: r.update(benchmark="scaling"), "benchmark"),
    (lambda r: r["commit"].update(head="$(rm -rf /)"), "commit.head"),
    (lambda r: r.update(configs=[]), "configs"),
])
def test_report_rejects_a_bad_record_naming_the_entry(run, tmp_path, mutate, entry):
    proc = _bad(run, tmp_path, mutate)
    assert proc.returncode == 2 and proc.stdout == ""
    assert entry in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_report_rejects_nan_and_non_json(tmp_path):
    nan = tmp_path / "nan.json"
    nan.write_text('{"benchmark": "train_step", "schema": 1, "x": NaN}')
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"\xff\xfe not json")
    for path in (nan, junk, tmp_path / "missing.json"):
        proc = _run("report.py", str(path), "--print")
        assert proc.returncode == 2 and str(path) in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # the run fixture
def test_report_refuses_a_doc_without_markers_or_behind_a_link(run, tmp_path):
    path, _ = run
    doc = tmp_path / "perf.md"
    doc.write_text("no markers here\n")
    proc = _run("report.py", str(path), "--doc", str(doc))
    assert proc.returncode == 2 and "train_step:begin" in proc.stderr
    assert doc.read_text() == "no markers here\n"
    target = tmp_path / "target.md"
    target.write_text(BEGIN + "\n" + END + "\n")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    proc = _run("report.py", str(path), "--doc", str(link))
    assert proc.returncode == 2 and "link" in proc.stderr
    assert target.read_text() == BEGIN + "\n" + END + "\n" and link.is_symlink()


@pytest.mark.slow  # a child process
def test_train_step_checks_the_json_path_before_running(tmp_path):
    proc = _run("train_step.py", "--quick", "--json", str(tmp_path / "no" / "dir" / "x.json"))
    assert proc.returncode == 2 and "--json" in proc.stderr and "median" not in proc.stdout
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    proc = _run("train_step.py", "--quick", "--json", str(link))
    assert proc.returncode == 2 and "link" in proc.stderr
    assert not (tmp_path / "elsewhere.json").exists()


@pytest.mark.slow
def test_scaling_quick_writes_record_figure_and_doc(tmp_path):
    out, png, doc = tmp_path / "scaling.json", tmp_path / "scaling.png", tmp_path / "perf.md"
    doc.write_text("# P\n\n## Scaling\n<!-- scaling:begin -->\nold\n<!-- scaling:end -->\n"
                   "## Training in threads\nkept\n")
    proc = _run("scaling.py", "--quick", "--axes", "batch", "--json", str(out),
                "--figure", str(png), "--doc", str(doc))
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(out.read_text())
    assert rec["benchmark"] == "scaling" and list(rec["axes"]) == ["batch"]
    import inspect

    from vit.model.tinyvit import TinyViT
    has_depth = "depth" in inspect.signature(TinyViT).parameters
    assert rec["depth_axis"] is has_depth
    assert ("depth axis skipped" in proc.stdout) is not has_depth
    axis = rec["axes"]["batch"]
    xs = [p["x"] for p in axis["points"]]
    assert len(xs) >= 2 and xs == sorted(xs)
    for p in axis["points"]:
        assert p["config"]["batch"] == p["x"]
        med = p["median_ms"]
        assert {"minigrad32", "manual"} <= set(med)
        for impl, ms in med.items():
            assert _is_number(ms) and 0 < p["min_ms"][impl] <= ms
            mem = p["memory"][impl]
            assert _is_number(mem["rss_mb"])
            assert (mem["tracemalloc_mb"] is None) == (impl == "torch")
        for name, q in p["ratios"].items():
            want = med["minigrad32"] / med[name.split("/")[1]]
            assert math.isclose(q, want, rel_tol=16 * EPS)
        assert _is_number(p["attention_ms"]) and _is_number(p["projections_ms"])
        assert _is_number(p["attention_share"]) and _is_number(p["projections_share"])
    for impl in med:
        assert _is_number(axis["exponents"][impl])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = doc.read_text()
    assert "old" not in text and text.endswith("## Training in threads\nkept\n")
    assert text.count("<!-- scaling:begin -->") == 1 and "| batch |" in text
    # report.py re-renders the same region from the record alone
    again = _run("report.py", str(out), "--print")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == text[text.index("<!-- scaling:begin -->"):
                                        text.index("<!-- scaling:end -->") +
                                        len("<!-- scaling:end -->")].strip()
    rec["axes"] = {"| <b>x</b>": rec["axes"]["batch"]}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rec))
    proc = _run("report.py", str(bad), "--print")
    assert proc.returncode == 2 and "axes" in proc.stderr and proc.stdout == ""


def test_scaling_rejects_unknown_axis():
    proc = _run("scaling.py", "--quick", "--axes", "colour")
    assert proc.returncode == 2 and "--axes" in proc.stderr and "colour" in proc.stderr


@pytest.mark.slow  # seconds of timing; fast: test_busy_spinner_is_bounded_and_stopped
def test_busy_quick_reports_slowdowns(tmp_path):
    out, doc = tmp_path / "busy.json", tmp_path / "perf.md"
    doc.write_text("## A busy machine\n<!-- busy:begin -->\n<!-- busy:end -->\nafter\n")
    proc = _run("busy.py", "--quick", "--json", str(out), "--doc", str(doc))
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(out.read_text())
    assert rec["benchmark"] == "busy" and [c["key"] for c in rec["configs"]] == ["A"]
    (c,) = rec["configs"]
    want = {"minigrad32", "minigrad32 1 thread", "manual"}
    if rec["machine"]["torch"]:
        want |= {"torch", "torch 1 thread"}
    assert set(c["results"]) == want
    for v, r in c["results"].items():
        for key in ("idle_ms", "busy_ms", "idle_min_ms", "busy_min_ms"):
            assert _is_number(r[key]) and r[key] > 0, (v, key)
        assert math.isclose(r["slowdown"], r["busy_ms"] / r["idle_ms"], rel_tol=16 * EPS)
        phases = r["phase_medians_ms"]
        assert len(phases["idle"]) == 2 and len(phases["busy"]) == 2
        assert math.isclose(r["idle_ms"], min(phases["idle"]), rel_tol=16 * EPS)
        assert math.isclose(r["busy_ms"], min(phases["busy"]), rel_tol=16 * EPS)
        assert math.isclose(r["slowdown_min"], r["busy_min_ms"] / r["idle_min_ms"],
                            rel_tol=16 * EPS)
    assert len(c["load_average"]["idle"]) == 2 and len(c["load_average"]["busy"]) == 2
    text = doc.read_text()
    assert text.endswith("after\n") and "| A tiny |" in text and "minigrad32 1 thread" in text


def test_busy_spinner_is_bounded_and_stopped():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        from busy import Spinner
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))
    spinner = Spinner(600)
    assert spinner.proc.poll() is None  # spinning
    spinner.stop()
    assert spinner.proc.returncode is not None
    short = Spinner(0.2)  # ends by itself, however long nobody stops it
    assert short.proc.wait(timeout=60) == 0
    short.stop()  # stopping a finished spinner is harmless
