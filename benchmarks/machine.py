"""What a benchmark records about the run besides its times: the machine, the libraries and
their threads, the load, and the commit; and how it writes a JSON result file.

Shared by train_step.py, scaling.py and busy.py so that their JSON files describe the machine
the same way (``machine_info()``, ``git_commit()``, ``write_json()``).
"""
from __future__ import annotations

import datetime
import importlib.util
import json
import os
import platform
import re
import subprocess
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


#: A free-form entry of a record (a CPU's name, a library's version) that Markdown does not
#: act on: tables show only what matches it.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._/+()@,:-]{0,79}")


def safe_name(value) -> str:
    """A free-form entry the tables only mention: shown if harmless (:data:`NAME`), else '?'."""
    value = str(value)
    return value if NAME.fullmatch(value) else "?"


def available(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what platform reports."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def usable_cores() -> list[int]:
    """The cores this process may run on (its affinity mask; all of them off Linux)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, or None where the OS has none."""
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


def blas_info() -> list[dict]:
    """Every BLAS/OpenMP pool threadpoolctl sees (library, version, threads), or NumPy's
    build configuration (no thread count) without threadpoolctl."""
    if available("threadpoolctl"):
        from threadpoolctl import threadpool_info
        keep = ("user_api", "internal_api", "prefix", "version", "num_threads", "architecture",
                "threading_layer")
        return [{k: i.get(k) for k in keep if k in i} for i in threadpool_info()]
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return [{"user_api": "blas", "internal_api": blas.get("name"),
             "version": blas.get("version"), "num_threads": None}]


def machine_info() -> dict:
    """The machine and libraries, as the JSON result files record them."""
    from minigrad.runtime import parallel
    info = {"cpu": cpu_model(), "logical_cpus": os.cpu_count(), "usable_cores": usable_cores(),
            "platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "blas": blas_info(),
            "minigrad_threads": parallel.get_num_threads(), "torch": None}
    if available("torch"):
        import torch
        info["torch"] = {"version": torch.__version__, "num_threads": torch.get_num_threads(),
                         "num_interop_threads": torch.get_num_interop_threads()}
    return info


def machine_line(info: dict) -> str:
    """One printable line summarizing ``machine_info()``."""
    blas = ", ".join(f"{b.get('internal_api')} {b.get('version')} {b.get('num_threads')} threads"
                     for b in info["blas"]) or "no BLAS pool found"
    line = (f"{info['cpu']}, {info['logical_cpus']} CPUs ({len(info['usable_cores'])} usable), "
            f"Python {info['python']}, NumPy {info['numpy']} ({blas}), "
            f"minigrad {info['minigrad_threads']} threads")
    if info["torch"]:
        line += f", torch {info['torch']['version']} ({info['torch']['num_threads']} threads)"
    return line


def git_commit() -> dict:
    """HEAD's hash and whether the working tree differs from it (read-only git calls):
    ``dirty`` for any tracked file, ``dirty_engine`` for minigrad/ or vit/ (what is timed)."""
    def git(*cmd):
        return subprocess.run(["git", *cmd], capture_output=True, text=True, cwd=ROOT,
                              timeout=30)
    try:
        head = git("rev-parse", "HEAD").stdout.strip() or None
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").stdout.strip())
        engine = git("diff", "--quiet", "HEAD", "--", "minigrad", "vit").returncode == 1
    except (OSError, subprocess.SubprocessError):
        return {"head": None, "dirty": None, "dirty_engine": None}
    return {"head": head, "dirty": dirty, "dirty_engine": engine}


def commit_line(commit: dict) -> str:
    head = (commit["head"] or "?")[:7]
    if commit["dirty_engine"]:
        return head + " + uncommitted changes in minigrad/ or vit/"
    return head + (" + uncommitted changes outside minigrad/ and vit/" if commit["dirty"] else "")


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def check_output_path(path: str, option: str = "--json") -> str:
    """Reject, before a long run, a path the result could not be written to safely."""
    if os.path.islink(path):
        raise ValueError(f"{option}: got {path!r}, a symbolic link; expected a plain file path "
                         "(results are never written through a link)")
    if os.path.isdir(path):
        raise ValueError(f"{option}: got {path!r}, a directory; expected a file path")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"{option}: got {path!r}; its directory {parent!r} does not exist")
    return path


def write_json(path: str, data: dict) -> None:
    """Write ``data`` as JSON atomically (see :func:`write_text`); NaN is refused."""
    write_text(path, json.dumps(data, indent=1, allow_nan=False) + "\n")


def write_text(path: str, text: str, option: str = "--json") -> None:
    """Write ``text`` atomically: a temporary file in the same directory, then a rename over
    ``path`` (never through a symbolic link: one is refused)."""
    check_output_path(path, option)
    parent = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if os.path.exists(path):  # keep the file's permissions (mkstemp makes it 0600)
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
