"""The peak memory of every hostile case of test_bounds.py, each in a fresh child process
(VmHWM, the peak resident set of the child's own image), as a markdown table.

    python tests/reliability/hostile_memory.py                     # this checkout
    python tests/reliability/hostile_memory.py --root OLD --limit-mb 6000   # another one

``--root`` is the source tree the children import (a checkout before the fix, to measure
"before"); ``--limit-mb`` caps each child's address space so a case that would take more
stops with a MemoryError at the cap instead of taking the machine.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_util import (
    ROOT,
    idx_gz,
    npz_long_header,
    npz_trailing_zeros,
    run_limited,
    small_checkpoint,
)

GB = 1 << 30
TINY = ["--dim", "8", "--heads", "2", "--mlp-dim", "8", "--batch-size", "256", "--quiet"]


def cases(d: Path) -> list[tuple[str, str, str]]:
    """(class, case, Python body run in the child)."""
    out = [("baseline", "importing vit.cli and vit.checkpoint only",
            "import vit.cli.main, vit.train.checkpoint")]
    p = npz_trailing_zeros(d / "trailing.npz", GB)
    out.append(("npz", f"member + 1 GiB of zeros ({p.stat().st_size >> 10} kB file)",
                f"from vit.io.npz import load_npz\nload_npz({str(p)!r})"))
    p = npz_long_header(d / "header.npz", GB // 2)
    out.append(("npz", f".npy v2 header declaring 512 MiB ({p.stat().st_size >> 10} kB file)",
                f"from vit.io.npz import load_npz\nload_npz({str(p)!r})"))
    folder = d / "idx-trailing"
    folder.mkdir()
    idx_gz(folder / "train-images-idx3-ubyte.gz", (20, 4, 4))
    p = idx_gz(folder / "train-labels-idx1-ubyte.gz", (20,), extra=GB)
    out.append(("IDX", f"labels .gz + 1 GiB after the data ({p.stat().st_size >> 10} kB)",
                f"from vit.train.data import load_data\nload_data({str(folder)!r})"))
    p = idx_gz(d / "train-images-idx3-ubyte.gz", (1 << 20, 32, 32))
    out.append(("IDX", f".gz declaring 1 GiB of images, holding them ({p.stat().st_size >> 10} kB)",
                f"from vit.train.data import read_idx\nread_idx({str(p)!r})"))
    for name, change in (("img_size=4096, patch_size=1", dict(img_size=4096, patch_size=1)),
                         ("dim=10**6", dict(dim=10**6))):
        p = small_checkpoint(d / f"ck-{len(out)}.npz", config=change)
        out.append(("checkpoint config", name,
                    f"from vit.train.checkpoint import load_checkpoint\nload_checkpoint({str(p)!r})"))
    pcg = np.random.default_rng(0).bit_generator.state
    for name, change in (("rng bit_generator 'test'", dict(rng=json.dumps(
            {**pcg, "bit_generator": "test"}))),
                         ("options batch_size=0", dict(options={"batch_size": 0}))):
        p = small_checkpoint(d / f"ck-{len(out)}.npz", **change)
        out.append(("checkpoint entry", name,
                    f"from vit.train.checkpoint import load_checkpoint\nload_checkpoint({str(p)!r})"))
    y = np.arange(40) % 2
    y[0] = 10**10
    p = d / "label.npz"
    np.savez(p, x=np.zeros((40, 8, 8), np.float32) + np.arange(40)[:, None, None], y=y)
    for name, args in (("--dim 1000000", ["--dim", "1000000", "--heads", "1"]),
                       ("--data with one label 10**10", ["--data", str(p)])):
        out.append(("CLI train", name, "from vit.cli.main import main\nimport sys\n"
                    f"status = main(['train', '--out', {str(d / 'run')!r}, *{TINY!r}, "
                    f"*{args!r}])\nassert status == 2, status"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("--limit-mb", type=int, default=6000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        print("| class | case | outcome | peak RSS |")
        print("|---|---|---|---:|")
        for kind, name, body in cases(Path(d)):
            result, rss = run_limited(body, args.limit_mb, root=args.root, timeout=900)
            word = result.split()[0]
            outcome = {"ValueError": "refused (ValueError)", "AssertionError": "status != 2",
                       "ok": "exit 2, one line" if kind == "CLI train" else "ok"}.get(word, word)
            print(f"| {kind} | {name} | {outcome} | {rss / 1024:,.0f} MB |", flush=True)


if __name__ == "__main__":
    main()
