"""The timm files, ``DIR/model.safetensors`` and ``DIR/config.json`` (docs/export.md), read
and written with safetensors' NumPy API (the optional extra ``minigrad-vit[export]``)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..io.atomic import write_atomic
from ..io.files import open_regular
from ..io.npz import load_npz
from ..model.normalizer import Normalizer
from ..model.timm_convert import from_timm, to_timm
from ..model.tinyvit import TinyViT
from ..train.checkpoint import load_checkpoint

__all__ = ["export_timm", "read_timm", "import_timm", "load_model", "WEIGHTS", "CONFIG"]

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


def load_model(path: str | os.PathLike) -> tuple[TinyViT, Normalizer | None]:
    """A training checkpoint (it has a ``format`` entry) or a model saved by ``TinyViT.save``,
    with the checkpoint's normalizer (None for a saved model)."""

    if "format" in load_npz(path):
        ck = load_checkpoint(path)
        return ck.model, ck.normalizer
    return TinyViT.load(path), None


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


def _write(folder: Path, name: str, data: bytes) -> None:
    write_atomic(folder / name, lambda f: f.write(data))


def export_timm(source: str | os.PathLike, out: str | os.PathLike) -> tuple[TinyViT, Path]:
    """Write ``out/model.safetensors`` and ``out/config.json`` for the model in ``source``."""
    st = _safetensors()
    model, normalizer = load_model(source)
    state, config = to_timm(model, normalizer)
    folder = _out_dir(out)
    _write(folder, WEIGHTS, st.save(state, metadata={"format": "pt"}))
    _write(folder, CONFIG, (json.dumps(config, indent=2, allow_nan=False) + "\n").encode())
    return model, folder


def _read_bounded(path: Path, limit: int, what: str) -> bytes:
    with open_regular(path, what) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: larger than {limit:,} bytes; expected a {what} that fits")
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
    try:
        state = st.load(data)
    except Exception as e:  # SafetensorError and friends: a corrupt or foreign file
        raise ValueError(f"{weights}: not a readable safetensors file ({e})") from None
    return state, config


def import_timm(folder: str | os.PathLike, out: str | os.PathLike) -> TinyViT:
    """Read the two files of ``folder``, build the TinyViT and save it to ``out`` (``.npz``)."""
    model = from_timm(*read_timm(folder))
    model.save(out)
    return model
