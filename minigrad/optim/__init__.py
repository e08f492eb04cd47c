"""Optimizers (``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``) and learning-rate
schedules (``WarmupCosine``, ``OneCycle``; torch's ``StepLR``, ``CosineAnnealingLR``,
``LinearLR``, ``LambdaLR``).

The update rules follow PyTorch's ``torch.optim`` exactly (the tests compare them). Layout:
``optimizer.py`` (the base class: groups, checked all-or-nothing ``step``), ``state.py``
(its ``state_dict`` / ``load_state_dict``), one module per optimizer, ``schedules.py`` (the
schedule machinery, ``WarmupCosine``, ``OneCycle``), ``lr_scheduler.py`` (torch's by name).
"""
from ..checks import StateDictKeyError
from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .lr_scheduler import CosineAnnealingLR, LambdaLR, LinearLR, StepLR
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .schedules import LRScheduler, OneCycle, WarmupCosine
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LRScheduler", "WarmupCosine",
           "OneCycle", "StepLR", "CosineAnnealingLR", "LinearLR", "LambdaLR",
           "StateDictKeyError"]
