"""A training step in shards (minigrad.data_parallel): the shards come from the model's shape,
and the run's bits do not depend on the thread count that runs them."""
from __future__ import annotations

import numpy as np
import pytest

from minigrad.runtime import parallel
from vit.model.tinyvit import TinyViT
from vit.train.checkpoint import load_checkpoint
from vit.train.loop import step_shards, train
from vit.train.options import TrainOptions
from vit.train.runfolder import read_metrics

# T = 17 tokens of dim 64, batch 128: about 1.8M activation elements, so two shards
SHARDED = dict(patch_size=2, dim=64, heads=4, mlp_dim=128, batch_size=128, epochs=1)


def test_the_shards_follow_the_steps_activations():
    model = TinyViT(8, 2, 1, 64, 4, 128, 10, seed=0)
    assert step_shards(model, 128) == 2
    assert step_shards(model, 16) == 1
    assert step_shards(TinyViT(8, 4, 1, 64, 4, 128, 10, seed=0), 64) == 1  # the default run
    assert step_shards(object(), 128) == 1


@pytest.fixture
def pool_threads():
    before = parallel.get_num_threads()
    yield parallel.set_num_threads
    parallel.set_num_threads(before)


def test_a_sharded_run_has_the_same_bits_for_any_thread_count(tmp_path, pool_threads):
    quiet = dict(quiet=True, log=lambda _: None)
    for n in (1, 2):
        pool_threads(n)
        train(TrainOptions(**SHARDED), tmp_path / str(n), **quiet)
    one, two = (load_checkpoint(tmp_path / str(n) / "checkpoint.npz") for n in (1, 2))
    a, b = one.model.state_dict(), two.model.state_dict()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    drop = {"seconds"}
    rows = [[{k: v for k, v in r.items() if k not in drop}
             for r in read_metrics(tmp_path / str(n) / "metrics.jsonl")] for n in (1, 2)]
    assert rows[0] == rows[1]
