"""The timm folder, ``DIR/model.safetensors`` and ``DIR/config.json`` (docs/export.md): what
``timm.create_model("local-dir:DIR", pretrained=True)`` loads, read and written with
safetensors' NumPy API (the optional extra ``minigrad-vit[export]``). The pair is written all
or nothing, and config.json names the SHA-256 of the weights it was written with, so a
reader refuses a pair from two exports."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from ..io.atomic import write_atomic_group
from ..io.files import open_regular
from ..model.modelfile import Explicit
from ..model.timm_config import BLOCK
from ..model.timm_convert import from_timm, to_timm
from ..model.tinyvit import TinyViT
from ..train.loading import open_model
from ..train.runfolder import RunLock

__all__ = ["export_timm", "read_timm", "import_timm", "WEIGHTS", "CONFIG"]

WEIGHTS, CONFIG = "model.safetensors", "config.json"
MAX_CONFIG_BYTES = 1 << 20
MAX_WEIGHTS_BYTES = 4 << 30


def _safetensors():
    try:
        import safetensors.numpy
    except ImportError:
        raise ImportError("timm export/import needs the safetensors package: pip install "
                          "'minigrad-vit[export]'") from None
    return safetensors.numpy


def _out_dir(path: str | os.PathLike) -> Path:
    out = Path(path)
    if out.is_symlink():
        raise ValueError(f"--out {out}: a symbolic link; expected a real folder (writes never "
                         "follow links)")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: exists and is not a folder; expected a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # under a file, or no permission
        raise ValueError(f"--out {out}: not a writable folder ({e.strerror})") from None
    for name in (WEIGHTS, CONFIG):
        if (out / name).is_dir() and not (out / name).is_symlink():
            raise ValueError(f"--out {out}: {name} there is a folder; expected a file or nothing")
    return out


def export_timm(source: str | os.PathLike, out: str | os.PathLike,
                explicit: Explicit = Explicit()) -> tuple[TinyViT, Path]:
    """Write ``out/model.safetensors`` and ``out/config.json`` (all or nothing) for the model
    in ``source``: a checkpoint, a model file or a run folder (``vit.train.loading``)."""
    st = _safetensors()
    model = open_model(source, explicit=explicit, what="CHECKPOINT").model
    state, config = to_timm(model)
    weights = st.save(state, metadata={"format": "pt"})
    config[BLOCK]["weights_sha256"] = hashlib.sha256(weights).hexdigest()
    folder = _out_dir(out)
    text = json.dumps(config, indent=2, allow_nan=False) + "\n"
    with RunLock(folder):  # the lock of every folder a command writes: one writer at a time
        write_atomic_group(folder, [(WEIGHTS, weights), (CONFIG, text.encode())])
    return model, folder


def _read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, read by its size: asking the
    OS for ``limit`` up front fails under an address-space cap, and a file that yields more
    than its size (a /proc or /sys file) is refused after ``size + 1`` bytes."""
    with open_regular(path, what) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise ValueError(f"{path}: {size:,} bytes; expected a {what} of at most {limit:,}")
        data = f.read(size + 1)
    if len(data) > size:
        raise ValueError(f"{path}: holds more than the {size:,} bytes its size says; expected a "
                         f"{what} that fits")
    return data


def _read_config(path: Path) -> dict:
    text = _read_bounded(path, MAX_CONFIG_BYTES, "timm config (a small JSON object)")

    def refuse(constant: str):
        raise ValueError(f"{constant} is not a number")
    try:
        config = json.loads(text, parse_constant=refuse)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path}: a JSON {type(config).__name__}; expected an object")
    return config


def read_timm(folder: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """(state dict, config) from ``folder/model.safetensors`` and ``folder/config.json``."""
    st = _safetensors()
    folder = Path(folder)
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is not a folder"
        raise (FileNotFoundError if not folder.exists() else ValueError)(
            f"{folder} {what}; expected a folder with {WEIGHTS} and {CONFIG}")
    for name in (WEIGHTS, CONFIG):
        if not (folder / name).exists():  # anything else there is refused when it is read
            raise FileNotFoundError(f"{folder / name}: no such file; expected {WEIGHTS} and "
                                    f"{CONFIG} as `vit export --to timm` writes")
    config = _read_config(folder / CONFIG)
    weights = folder / WEIGHTS
    data = _read_bounded(weights, MAX_WEIGHTS_BYTES, "safetensors file")
    block = config.get(BLOCK)
    if isinstance(block, dict) and "weights_sha256" in block:
        block = config[BLOCK] = dict(block)
        if block.pop("weights_sha256") != hashlib.sha256(data).hexdigest():
            raise ValueError(f"{folder}: {CONFIG} was written with other weights than "
                             f"{WEIGHTS} holds (its {BLOCK}.weights_sha256 differs); expected "
                             "the pair of one export (export again)")
    try:
        state = st.load(data)
    except Exception as e:  # SafetensorError and friends: a corrupt or foreign file
        raise ValueError(f"{weights}: not a readable safetensors file ({e})") from None
    return state, config


def import_timm(folder: str | os.PathLike, out: str | os.PathLike,
                explicit: Explicit = Explicit()) -> TinyViT:
    """Read the two files of ``folder``, build the TinyViT with the preprocessing config.json
    states (or ``explicit``'s, for a config that states none) and save it to ``out`` as a
    model file (``.npz``)."""
    state, config = read_timm(folder)
    model = from_timm(state, config, mean=explicit.mean, std=explicit.std,
                      normalize=explicit.normalize)
    model.save(out)
    return model
