"""The argument types of ``python -m vit``: each parses one option's text or raises
``argparse.ArgumentTypeError`` saying what it got and what was expected (argparse then
prints one line and exits with status 2)."""
from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from ..model.modelfile import Explicit

__all__ = ["number_type", "positive_int", "natural", "positive", "nonnegative", "fraction",
           "degrees", "seed_list", "number_list", "add_preprocessing_options", "explicit_of"]


def number_type(kind: type, test: Callable[[float], bool],
                expected: str) -> Callable[[str], float]:
    """A type that parses text as ``kind`` (int or float) and accepts it if finite and
    ``test(value)``; ``expected`` says in words what it accepts."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"got {text!r}; expected {expected}") from None
        if not (np.isfinite(value) and test(value)):
            raise argparse.ArgumentTypeError(f"got {text}; expected {expected}")
        return value
    parse.__name__ = expected  # argparse names the type in some messages
    return parse


positive_int = number_type(int, lambda v: v > 0, "a positive integer")
natural = number_type(int, lambda v: v >= 0, "an integer >= 0")
positive = number_type(float, lambda v: v > 0, "a positive number")
nonnegative = number_type(float, lambda v: v >= 0, "a number >= 0")
fraction = number_type(float, lambda v: 0 <= v < 1, "a number in [0, 1)")


def seed_list(text: str) -> list[int]:
    """``0,1,2`` -> [0, 1, 2]: distinct integers >= 0, at most 100."""
    try:
        seeds = [int(part) for part in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds) or len(seeds) > 100:
        raise argparse.ArgumentTypeError(f"got {text!r}; expected distinct integers >= 0 "
                                         "separated by commas, e.g. 0,1,2 (at most 100)")
    return seeds


seed_list.__name__ = "comma-separated seeds"
degrees = number_type(float, lambda v: 0 <= v <= 180, "a number of degrees in [0, 180]")


def number_list(text: str) -> list[float]:
    """``0.5`` or ``0.5,1,2`` -> finite numbers, one per channel (at most 4096)."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or len(values) > 4096 or not all(np.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"got {text[:40]!r}; expected finite numbers separated "
                                         "by commas, one per channel (e.g. 4.88 or 0.48,0.46,0.41)")
    return values


number_list.__name__ = "comma-separated numbers"


def add_preprocessing_options(p: argparse.ArgumentParser) -> None:
    """``--mean``, ``--std``, ``--normalize none``: the preprocessing of a model file that does
    not state its own (saved before model files did, or a timm model trained elsewhere)."""
    p.add_argument("--mean", type=number_list, default=None, metavar="M[,M...]",
                   help="per-channel mean of the training pixels, for a model file that does "
                   "not hold its statistics (with --std)")
    p.add_argument("--std", type=number_list, default=None, metavar="S[,S...]",
                   help="per-channel standard deviation, with --mean")
    p.add_argument("--normalize", choices=["none"], default=None,
                   help="none: the model takes its inputs as given (for a model file that "
                   "does not say)")


def explicit_of(args: argparse.Namespace) -> Explicit:
    """The command line's explicit preprocessing (``vit.model.modelfile.Explicit``)."""
    return Explicit(getattr(args, "mean", None), getattr(args, "std", None),
                    getattr(args, "normalize", None))
