"""The optimizer and learning-rate schedule of a training run, and the weight-decay rule.

The rule (:func:`decays`) is the one place that says which parameters weight decay applies
to; ``build_optimizer`` groups by it and the checkpoint reader checks a saved optimizer's
groups by it.
"""
from __future__ import annotations

from minigrad.optim import SGD, AdamW, OneCycle, WarmupCosine

from ..model.tinyvit import TinyViT
from .options import TrainOptions

__all__ = ["NO_DECAY_NAMES", "decays", "decay_groups", "build_optimizer"]

#: Parameters that ``no_decay_norm_bias`` exempts from weight decay besides every 1-D one
#: (biases, LayerNorm gains and shifts): the timm convention.
NO_DECAY_NAMES = ("cls_token", "pos_embed")


def decays(name: str, shape: tuple) -> bool:
    """Whether ``no_decay_norm_bias`` decays the parameter ``name`` of ``shape``: every weight
    matrix does; biases, LayerNorm parameters (1-D), ``cls_token`` and ``pos_embed`` do not."""
    return len(shape) > 1 and name not in NO_DECAY_NAMES


def decay_groups(model: TinyViT) -> tuple[list, list]:
    """(decayed, not decayed) parameters of ``model``, in its order, by :func:`decays`."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if decays(name, p.data.shape) else no_decay).append(p)
    return decay, no_decay


def build_optimizer(options: TrainOptions, model: TinyViT, steps_per_epoch: int):
    """(optimizer, schedule) over ``options.epochs * steps_per_epoch`` steps. With ``probe``
    the optimizer only carries the scheduled lr for ``TinyViT.train_step``."""
    o = options.resolved()
    if o.no_decay_norm_bias and o.optimizer != "adamw":
        raise ValueError("--no-decay-norm-bias applies to --optimizer adamw only")
    params = list(model.head.parameters()) if o.probe else list(model.parameters())
    if o.probe or o.optimizer == "sgd":
        optimizer = SGD(params, lr=o.lr, momentum=0.0 if o.probe else o.momentum,
                        weight_decay=0.0 if o.probe else o.weight_decay)
    elif o.no_decay_norm_bias:
        decay, no_decay = decay_groups(model)
        optimizer = AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=o.lr, weight_decay=o.weight_decay)
    else:
        optimizer = AdamW(params, lr=o.lr, weight_decay=o.weight_decay)
    total = o.epochs * steps_per_epoch
    warmup = min(round(o.warmup * total), total - 1)
    if o.schedule == "onecycle":
        schedule = OneCycle(optimizer, max_lr=o.lr, total_steps=total, pct_start=o.warmup)
    else:  # a cosine to lr itself is a constant lr after the warmup
        schedule = WarmupCosine(optimizer, warmup_steps=warmup, total_steps=total,
                                min_lr=o.lr if o.schedule == "constant" else 0.0)
    return optimizer, schedule
