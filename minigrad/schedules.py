"""The learning-rate schedules, which live in ``minigrad.optim.schedules`` (kept importable
as ``minigrad.schedules``)."""
from .optim.schedules import LRScheduler, OneCycle, WarmupCosine

__all__ = ["LRScheduler", "WarmupCosine", "OneCycle"]
