"""A training checkpoint for any TinyViT, consistent enough for ``vit.checkpoint``'s schema:
options that describe the model, and the state of the optimizer and schedule they build."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from vit.model.normalizer import Normalizer
from vit.train.checkpoint import save_checkpoint
from vit.train.optimizer import build_optimizer
from vit.train.options import TrainOptions


def save_training_checkpoint(path, model, normalizer: Normalizer, epoch: int = 1) -> None:
    """Write ``model`` as the checkpoint of a run after ``epoch`` epochs of one step each."""
    c = model.config
    options = TrainOptions(patch_size=c["patch_size"], dim=c["dim"], heads=c["num_heads"],
                           mlp_dim=c["mlp_dim"], depth=c.get("depth", 1),
                           no_pos_emb=not c["use_pos_emb"],
                           epochs=max(epoch, 1), dtype=model.dtype.name)
    optimizer, schedule = build_optimizer(options, model, steps_per_epoch=1)
    save_checkpoint(path, model=model, options=asdict(options), epoch=epoch,
                    normalizer=normalizer, rng=np.random.default_rng(0), optimizer=optimizer,
                    scheduler=schedule)
