"""Hostile files for the bound, schema and not-a-file tests, and a child-process runner that
measures peak memory under an address-space limit.

Every builder streams what it writes, so a file that inflates to a gigabyte costs the test
process no more than a chunk. ``run_limited`` runs a snippet in a fresh ``python`` whose
address space is capped (``RLIMIT_AS``): a loader that inflates or allocates what a hostile
file declares dies with a MemoryError there instead of taking the machine's memory.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import resource
import struct
import subprocess
import sys
import zipfile
from dataclasses import asdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CHUNK = 1 << 20

#: Address space of a hostile-case child (importing vit needs about 110 MB of it). The child
#: runs in ``root`` (its current folder comes first on sys.path).
LIMIT_MB = 400


def _npy_header(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, np.lib.format.header_data_from_array_1_0(array))
    return buf.getvalue()


def npz_trailing_zeros(path, extra: int, name: str = "x") -> Path:
    """An .npz whose member holds a valid (4,) float64 array followed by ``extra`` zero bytes
    (deflated: a gigabyte takes about a megabyte)."""
    array = np.arange(4.0)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
            f.write(_npy_header(array) + array.tobytes())
            for start in range(0, extra, CHUNK):
                f.write(bytes(min(CHUNK, extra - start)))
    return Path(path)


def npz_long_header(path, header_len: int, version: int = 2) -> Path:
    """An .npz whose member is an .npy v2 (or v3) header declaring ``header_len`` bytes of
    header (spaces), deflated."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("x.npy", "w", force_zip64=True) as f:
            f.write(b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", header_len))
            f.write(b"{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }")
            left = header_len - 58
            for start in range(0, left, CHUNK):
                f.write(b" " * min(CHUNK, left - start))
    return Path(path)


def idx_gz(path, shape, code: int = 0x08, extra: int = 0, data: bool = True) -> Path:
    """A gzipped IDX file declaring ``shape``, holding the declared zeros (if ``data``) and
    then ``extra`` more zero bytes."""
    itemsize = {0x08: 1, 0x09: 1, 0x0B: 2, 0x0C: 4, 0x0D: 4, 0x0E: 8}[code]
    size = int(np.prod(shape, dtype=object)) * itemsize if data else 0
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(struct.pack(">HBB", 0, code, len(shape)) + struct.pack(f">{len(shape)}I", *shape))
        total = size + extra
        for start in range(0, total, CHUNK):
            f.write(bytes(min(CHUNK, total - start)))
    return Path(path)


def small_checkpoint(path, **change) -> Path:
    """A real training checkpoint of a tiny run (AdamW, OneCycle), then ``change`` applied:
    each value replaces an entry (a dict for ``config``/``options``/``rng`` is JSON-encoded and
    merged into the saved one; None removes the entry)."""
    from minigrad.optim import AdamW, OneCycle
    from vit.io.npz import load_npz
    from vit.model.normalizer import Normalizer
    from vit.model.tinyvit import TinyViT
    from vit.train.checkpoint import save_checkpoint
    from vit.train.options import TrainOptions

    model = TinyViT(dim=8, num_heads=2, mlp_dim=8, num_classes=10, dtype=np.float32, seed=0)
    opt = AdamW(list(model.parameters()), lr=1e-3)
    for p in model.parameters():
        p.grad = np.ones_like(p.data)
    opt.step()
    options = asdict(TrainOptions(dim=8, heads=2, mlp_dim=8, epochs=2))
    sched = OneCycle(opt, 1e-3, 10)
    sched.step()
    save_checkpoint(path, model=model, options=options, epoch=1,
                    normalizer=Normalizer(np.zeros(1), np.ones(1)),
                    rng=np.random.default_rng(0), optimizer=opt, scheduler=sched)
    if change:
        arrays = load_npz(path)
        for key, value in change.items():
            key = key.replace("__", "/")
            if value is None:
                arrays.pop(key)
            elif isinstance(value, dict) and key in ("config", "options", "rng"):
                merged = {**json.loads(str(arrays[key])), **value}
                arrays[key] = np.array(json.dumps(merged))
            elif isinstance(value, str) and key in ("config", "options", "rng"):
                arrays[key] = np.array(value)  # raw JSON text
            else:
                arrays[key] = np.asarray(value)
        np.savez(path, **arrays)
    return Path(path)


def _limit(mb: int):
    def preexec():
        limit = mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return preexec


CHILD = """
import sys
try:
{body}
    print("RESULT ok")
except Exception as e:
    print("RESULT", type(e).__name__, " ".join(str(e).split()))
# VmHWM, the peak RSS of this process image: ru_maxrss would carry over the parent's size
# from before the exec
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        print("MAXRSS", line.split()[1])
"""


def run_limited(body: str, limit_mb: int | None = LIMIT_MB, root: Path = ROOT, cwd=None,
                timeout: float = 300) -> tuple[str, int]:
    """Run ``body`` (Python statements) in a child whose address space is ``limit_mb`` MB
    (None: unlimited); returns (``"ok"`` or ``"<Exception> <message>"``, peak RSS in kB, the
    child's VmHWM)."""
    code = CHILD.format(body="\n".join("    " + line for line in body.strip().splitlines()))
    env = {**os.environ, "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=cwd or root, timeout=timeout,
                          preexec_fn=_limit(limit_mb) if limit_mb else None)
    lines = proc.stdout.splitlines()
    result = next((ln[len("RESULT "):] for ln in lines if ln.startswith("RESULT ")), None)
    rss = next((int(ln.split()[1]) for ln in lines if ln.startswith("MAXRSS ")), -1)
    if result is None:
        result = f"crashed (status {proc.returncode}): {proc.stderr.strip()[-300:]}"
    return result, rss
