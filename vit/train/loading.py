"""``vit.load``: a trained model back in Python, with the preprocessing it was trained with,
from any file that holds one; and :func:`open_model`, the one loader behind it and behind
every command that takes a model (``vit eval``, ``predict``, ``gradcheck``, ``export``,
``plot``)."""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..io.files import fspath, shorten
from ..io.npz import load_npz
from ..model.modelfile import FORMAT as MODEL_FORMAT
from ..model.modelfile import Explicit, MissingEntryWarning
from ..model.tinyvit import TinyViT
from .checkpoint import FORMAT, Checkpoint, checkpoint_from_entries, entry_name_problem
from .runfolder import CHECKPOINT, METRICS

__all__ = ["load", "open_model", "Loaded", "KINDS"]

#: What a model path may be, in words (for errors: what a command wanted).
KINDS = ("a training checkpoint", "a model file", "a run folder")


@dataclass
class Loaded:
    """What :func:`open_model` read: the model (with ``normalizer`` and ``input_range``),
    ``kind`` ("checkpoint", "model file"), the file read (a run folder's checkpoint), the
    folder when a run folder was given, the checkpoint itself (None for a model file) and
    notes on what an older file lacks."""

    model: TinyViT
    kind: str
    path: Path
    run_dir: Path | None
    checkpoint: Checkpoint | None
    notes: tuple[str, ...]

    def describe(self) -> str:
        """E.g. "runs/digits/checkpoint.npz (checkpoint, epoch 150)"."""
        if self.checkpoint is not None:
            return f"{self.path} (checkpoint, epoch {self.checkpoint.epoch})"
        return f"{self.path} (model file)"


def open_model(path: str | os.PathLike, *, max_parameters: int | None = None,
               explicit: Explicit = Explicit(), what: str = "vit.load path") -> Loaded:
    """The model in ``path``: a training checkpoint (``format`` "vit-train/1"), a model file
    (``TinyViT.save``, ``vit import``: "vit-model/1", or no ``format`` when saved before it
    existed) or a run folder (its ``checkpoint.npz``). The file is decoded once
    (``load_npz``: bounded, never unpickled) and its kind told from its ``format`` entry;
    every entry is checked by the kind's own validator before the model is built.
    ``explicit`` preprocessing is for a model file that does not state its own (refused for
    any other). FileNotFoundError for a missing path; a ValueError naming the path, what it
    is and what was expected otherwise."""
    where = fspath(path, what)
    p = Path(where)
    if not p.exists():
        raise FileNotFoundError(f"{what}: {where} does not exist; expected "
                                f"{', '.join(KINDS[:-1])} or {KINDS[-1]}")
    run_dir = None
    if p.is_dir():
        if not (p / CHECKPOINT).exists():
            has = " (it has no " + CHECKPOINT + (", nor " + METRICS if not (p / METRICS).exists()
                                                  else "") + ")"
            raise ValueError(f"{what}: {where} is a folder but not a run folder{has}; expected "
                             f"{', '.join(KINDS[:-1])} or a run folder written by `vit train`")
        run_dir, p = p, p / CHECKPOINT
    # names first: an entry neither a checkpoint nor a model file has is never inflated
    arrays = load_npz(p, names=_entry_problem)
    fmt = arrays.get("format")
    kind = str(fmt) if fmt is not None and np.shape(fmt) == () and \
        np.asarray(fmt).dtype.kind == "U" else None
    if kind == FORMAT:
        if explicit.given:
            raise ValueError(f"checkpoint {p}: a training checkpoint, which holds its training "
                             "pixels' statistics; got mean/std/normalize as well; expected them "
                             "from one place (leave out --mean/--std/--normalize)")
        ck = checkpoint_from_entries(arrays, f"checkpoint {p}", max_parameters)
        return Loaded(ck.model, "checkpoint", p, run_dir, ck, ck.notes)
    if fmt is not None and kind != MODEL_FORMAT:
        raise ValueError(f"{p}: entry 'format' is {shorten(kind or np.asarray(fmt).dtype)}; "
                         f"expected {FORMAT!r} (a training checkpoint) or {MODEL_FORMAT!r} (a "
                         "model file)")
    if "config" not in arrays:
        raise ValueError(f"{p}: an .npz without 'format' or 'config' entries (entries "
                         f"{shorten(sorted(arrays)[:4])}); expected "
                         f"{', '.join(KINDS[:-1])} or {KINDS[-1]}")
    model, notes = TinyViT.from_entries(arrays, str(p), max_parameters, explicit)
    return Loaded(model, "model file", p, run_dir, None, tuple(notes))


def _entry_problem(name: str) -> str | None:
    """Why an entry named ``name`` cannot be in a model file or a checkpoint (None: it can)."""
    if entry_name_problem(name) is None:
        return None
    return (f"holds an entry {shorten(name)} that no model file or checkpoint has (an .npz "
            "without 'format' or 'config' entries, such as a data set, is something else); "
            f"expected {', '.join(KINDS[:-1])} or {KINDS[-1]}")


def load(path: str | os.PathLike, max_parameters: int | None = None, *, mean=None, std=None,
         normalize: str | None = None) -> TinyViT:
    """The model in ``path``, ready for :meth:`TinyViT.predict` on raw images: a training
    checkpoint (``runs/X/checkpoint.npz``), its run folder (``runs/X``), or a model file
    (``TinyViT.save``, ``vit import``).

    The model carries its file's preprocessing: ``model.normalizer`` (the training pixels'
    per-channel mean and std, as ``vit eval`` applies them; None for a model that takes its
    inputs as given) and ``model.input_range`` (the raw training pixels' lowest and highest
    value, for predict's scale warning; None if unknown). A model file that does not say
    how its inputs were normalized (saved before model files did) is refused unless
    ``mean=``/``std=`` (one number per channel) or ``normalize="none"`` say it. A file
    written before an entry existed loads with a :class:`MissingEntryWarning` saying what
    it lacks. At most ``max_parameters`` parameters (default: ``vit.model.config.limits``).
    FileNotFoundError for a missing path, ValueError naming the file and entry for anything
    wrong in it (see :func:`open_model`).
    """
    loaded = open_model(path, max_parameters=max_parameters,
                        explicit=Explicit(mean, std, normalize))
    for note in loaded.notes:
        warnings.warn(note, MissingEntryWarning, stacklevel=2)
    return loaded.model
