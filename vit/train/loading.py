"""``vit.load``: a trained model back in Python, with the preprocessing it was trained with."""
from __future__ import annotations

import os
import zipfile

from ..io.files import fspath, open_regular
from ..model.tinyvit import TinyViT
from .checkpoint import FORMAT, load_checkpoint

__all__ = ["load"]


def _is_checkpoint(path: str) -> bool:
    """Whether the zip at ``path`` has a ``format`` member (what only checkpoints hold): its
    central directory is read, no member is. Anything unreadable answers False, and the
    model loader then says what is wrong with the file."""
    try:
        with open_regular(path, "model or checkpoint file") as f, zipfile.ZipFile(f) as zf:
            return "format.npy" in zf.namelist()
    except (OSError, ValueError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError):
        return False


def load(path: str | os.PathLike, max_parameters: int | None = None) -> TinyViT:
    """The model in ``path``, a training checkpoint (``runs/X/checkpoint.npz``) or a model
    written by ``TinyViT.save``, ready for :meth:`TinyViT.predict` on raw images.

    ``model.normalizer`` is the checkpoint's :class:`vit.model.normalizer.Normalizer` (the training
    pixels' per-channel mean and std, as ``vit eval`` applies them), or None for a saved
    model, which holds no preprocessing: its inputs are used as given. Either file is read
    by its own validating loader (``vit.train.checkpoint.load_checkpoint``, ``TinyViT.load``):
    never unpickled, every entry checked, at most ``max_parameters`` parameters (default:
    ``vit.model.config.limits``). FileNotFoundError for a missing file, ValueError naming the file
    and entry for anything wrong in it.
    """
    where = fspath(path, "vit.load path")
    if not os.path.exists(where):
        raise FileNotFoundError(f"vit.load path: {where} does not exist; expected a training "
                                f"checkpoint ({FORMAT}) or a model saved by TinyViT.save")
    if _is_checkpoint(where):
        ck = load_checkpoint(where, max_parameters=max_parameters)
        model = ck.model
        model.normalizer = ck.normalizer
    else:
        model = TinyViT.load(where, max_parameters=max_parameters)
    return model
