"""A file never chooses code to run, and every checkpoint entry is validated against a schema
before anything is built (issue 10, items 1 and 3).

Each crafted checkpoint is refused by ``load_checkpoint`` with a one-line ValueError naming the
file, the entry, what it held and what was expected; through ``vit eval`` it is exit status 2
and one line on stderr."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from hostile_util import small_checkpoint
from reliability_util import run_cli

PCG = np.random.default_rng(0).bit_generator.state


def rng_state(**change):
    return json.dumps({**PCG, **change})


def pcg(**inner):
    return rng_state(state={**PCG["state"], **inner})


#: entry -> (replacement, words the error must contain). Dicts merge into JSON entries.
CASES = {
    "rng-test-runner": ("rng", rng_state(bit_generator="test"), ["'test'", "PCG64"]),
    "rng-seed": ("rng", rng_state(bit_generator="seed"), ["'seed'"]),
    "rng-dotted": ("rng", rng_state(bit_generator="os.system"), ["'os.system'"]),
    "rng-Generator": ("rng", rng_state(bit_generator="Generator"), ["'Generator'"]),
    "rng-state-minus-1": ("rng", pcg(state=-1), ["-1", "2**128"]),
    "rng-state-2-200": ("rng", pcg(state=2**200), [str(2**200)[:12], "2**128"]),
    "rng-inc-float": ("rng", pcg(inc=1.5), ["inc", "1.5"]),
    "rng-state-list": ("rng", "[1, 2]", ["list"]),
    "rng-missing-state": ("rng", json.dumps({"bit_generator": "PCG64"}), ["state"]),
    "rng-extra-key": ("rng", rng_state(evil=1), ["evil"]),
    "rng-has-uint32": ("rng", rng_state(has_uint32=7), ["has_uint32", "7"]),
    "rng-deep-json": ("rng", "[" * 100000 + "]" * 100000, ["rng"]),
    "options-list": ("options", "[1, 2]", ["'options'", "list"]),
    "options-batch-size-0": ("options", {"batch_size": 0}, ["batch_size", "0"]),
    "options-epochs-str": ("options", {"epochs": "3"}, ["epochs", "'3'"]),
    "options-optimizer": ("options", {"optimizer": "os.system"}, ["optimizer", "adamw"]),
    "options-schedule": ("options", {"schedule": "linear"}, ["schedule", "onecycle"]),
    "options-dtype": ("options", {"dtype": "object"}, ["dtype", "float32"]),
    "options-unknown": ("options", {"evil": 1}, ["evil"]),
    "options-lr-nan": ("options", '{"lr": NaN}', ["lr"]),
    "options-lr-inf": ("options", {"lr": 1e999}, ["lr", "inf"]),
    "options-mixup-negative": ("options", {"mixup": -1.0}, ["mixup", "-1"]),
    "options-bool-as-int": ("options", {"probe": 1}, ["probe"]),
    "config-list": ("config", "[1]", ["'config'", "list"]),
    "config-unknown-key": ("config", {"seed": 3}, ["seed"]),
    "config-dtype-object": ("config", {"dtype": "object"}, ["dtype", "float32"]),
    "config-dtype-longdouble": ("config", {"dtype": "float128"}, ["dtype"]),
    "config-dim-str": ("config", {"dim": "8"}, ["dim", "'8'"]),
    "config-dim-bool": ("config", {"dim": True}, ["dim", "True"]),
    "epoch-negative": ("epoch", np.array(-1), ["'epoch'", "-1"]),
    "epoch-beyond": ("epoch", np.array(3), ["'epoch'", "3"]),
    "epoch-float": ("epoch", np.array(1.5), ["'epoch'", "1.5"]),
    "epoch-vector": ("epoch", np.array([1, 1]), ["'epoch'", "(2,)"]),
    "epoch-string": ("epoch", np.array("1"), ["'epoch'"]),
    "norm-std-inf": ("norm/std", np.array([np.inf]), ["'norm/std'", "inf"]),
    "norm-std-zero": ("norm/std", np.array([0.0]), ["'norm/std'", "0"]),
    "norm-mean-nan": ("norm/mean", np.array([np.nan]), ["'norm/mean'", "nan"]),
    "norm-mean-int": ("norm/mean", np.array([1]), ["'norm/mean'", "int64"]),
    "num-params-vector": ("optim/num_params", np.array([18, 18]), ["'optim/num_params'", "(2,)"]),
    "num-params-wrong": ("optim/num_params", np.array(5), ["'optim/num_params'", "5", "18"]),
    "step-count-negative": ("optim/step_count", np.array(-2), ["'optim/step_count'", "-2"]),
    "optim-lr-nan": ("optim/lr", np.array(np.nan), ["'optim/lr'", "nan"]),
    "optim-eps-negative": ("optim/eps", np.array(-1.0), ["'optim/eps'", "-1"]),
    "optim-betas-1": ("optim/betas", np.array([0.9, 1.0]), ["'optim/betas'"]),
    "optim-buffer-inf": ("optim/state.0.exp_avg", np.full((1, 1, 8), np.inf, np.float32),
                         ["'optim/state.0.exp_avg'", "inf"]),
    "optim-buffer-shape": ("optim/state.0.exp_avg", np.zeros(3, np.float32),
                           ["'optim/state.0.exp_avg'", "(3,)", "(1, 1, 8)"]),
    "optim-buffer-dtype": ("optim/state.0.exp_avg", np.zeros((1, 1, 8)),
                           ["'optim/state.0.exp_avg'", "float64", "float32"]),
    "optim-state-index": ("optim/state.99.exp_avg", np.zeros(3, np.float32),
                          ["'optim/state.99.exp_avg'"]),
    "optim-unknown": ("optim/momentum", np.array(0.9), ["'optim/momentum'"]),
    "optim-string": ("optim/lr", np.array("0.1"), ["'optim/lr'"]),
    "sched-div-factor-0": ("sched/div_factor", np.array(0.0), ["'sched/div_factor'", "0"]),
    "sched-step-negative": ("sched/last_step", np.array(-1), ["'sched/last_step'", "-1"]),
    "sched-step-beyond": ("sched/last_step", np.array(11), ["'sched/last_step'", "11"]),
    "sched-total-0": ("sched/total_steps", np.array(0), ["'sched/total_steps'", "0"]),
    "sched-pct-start": ("sched/pct_start", np.array(1.5), ["'sched/pct_start'", "1.5"]),
    "sched-wrong-kind": ("sched/warmup_steps", np.array(3), ["'sched/warmup_steps'"]),
    "sched-missing": ("sched/max_lr", None, ["sched/max_lr"]),
    "param-nan": ("param/head.bias", np.full(10, np.nan, np.float32), ["'param/head.bias'", "nan"]),
    "param-shape": ("param/head.bias", np.zeros(3, np.float32), ["'param/head.bias'", "(3,)"]),
    "param-missing": ("param/head.bias", None, ["param/head.bias"]),
    "extra-entry": ("notes", np.array(1), ["'notes'"]),
    "extra-param": ("param/evil", np.zeros(1, np.float32), ["'param/evil'"]),
    "format-vector": ("format", np.array(["vit-train/1"]), ["'format'"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_crafted_entry_is_refused_with_one_line(tmp_path, case):
    from vit.train.checkpoint import load_checkpoint
    entry, value, words = CASES[case]
    path = small_checkpoint(tmp_path / "crafted.npz", **{entry: value})
    with pytest.raises(ValueError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert "\n" not in message
    assert "crafted.npz" in message and "expected" in message, message
    for w in words:
        assert w in message, f"{message!r} does not name {w!r}"


def test_the_unchanged_checkpoint_loads(tmp_path):
    from vit.train.checkpoint import load_checkpoint
    ck = load_checkpoint(small_checkpoint(tmp_path / "ck.npz"))
    assert ck.epoch == 1 and ck.options["epochs"] == 2
    assert ck.rng.bit_generator.state == PCG


@pytest.mark.parametrize("case", ["rng-test-runner", "options-batch-size-0", "epoch-negative"])
def test_cli_eval_of_a_crafted_checkpoint_is_one_line_exit_2(tmp_path, capsys, case):
    entry, value, _ = CASES[case]
    path = small_checkpoint(tmp_path / "crafted.npz", **{entry: value})
    status, _, err = run_cli(["eval", path], capsys)
    assert status == 2 and err.count("\n") == 1 and err.startswith("vit eval: error:"), err
    assert "Traceback" not in err


def test_a_generator_named_test_runs_no_code(tmp_path, monkeypatch):
    """NumPy's test runner would import this conftest.py from the current folder."""
    from vit.train.checkpoint import load_checkpoint
    marker = tmp_path / "ran"
    (tmp_path / "conftest.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    path = small_checkpoint(tmp_path / "ck.npz", rng=rng_state(bit_generator="test"))
    monkeypatch.chdir(tmp_path)
    called = []
    monkeypatch.setattr(np.random, "test", lambda *a, **k: called.append(a), raising=False)
    monkeypatch.setattr(np.random, "seed", lambda *a, **k: called.append(a))
    with pytest.raises(ValueError):
        load_checkpoint(path)
    path = small_checkpoint(tmp_path / "ck2.npz", rng=rng_state(bit_generator="seed"))
    with pytest.raises(ValueError):
        load_checkpoint(path)
    assert not called and not marker.exists()


@pytest.mark.parametrize("name", ["PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937"])
def test_every_allowed_bit_generator_round_trips(name):
    from vit.train.rngstate import rng_from_array, rng_to_array
    rng = np.random.Generator(getattr(np.random, name)(7))
    rng.random(3)
    back = rng_from_array(rng_to_array(rng))
    assert type(back.bit_generator).__name__ == name
    assert np.array_equal(back.random(5), rng.random(5))


@pytest.mark.parametrize("value", [-1, 2**200, "x", None, 1.0])
def test_rng_from_array_refuses_bad_states_in_one_line(value):
    from vit.train.rngstate import rng_from_array
    with pytest.raises(ValueError) as info:
        rng_from_array(np.array(pcg(state=value)))
    assert "\n" not in str(info.value) and "expected" in str(info.value)


def test_train_options_validate_their_fields_in_one_place():
    from vit.train.options import TrainOptions
    for bad, words in [(dict(batch_size=0), "batch_size"), (dict(epochs="3"), "epochs"),
                       (dict(optimizer="rmsprop"), "optimizer"), (dict(dtype="float16x"), "dtype"),
                       (dict(heads=3), "heads"), (dict(warmup=1.0), "warmup"),
                       (dict(lr=-1.0), "lr"), (dict(data=3), "data"),
                       (dict(task="imagenet"), "task"), (dict(seed=-1), "seed")]:
        with pytest.raises((ValueError, TypeError), match=words):
            TrainOptions(**bad)
    assert TrainOptions(epochs=3).epochs == 3
    with pytest.raises(ValueError, match="unknown"):
        TrainOptions.from_dict({"evil": 1})


def test_options_are_never_modified(tmp_path):
    """The loader validates a copy: loading twice gives equal options."""
    from vit.train.checkpoint import load_checkpoint
    path = small_checkpoint(tmp_path / "ck.npz")
    assert load_checkpoint(path).options == load_checkpoint(path).options
    assert os.path.exists(path)


@pytest.mark.parametrize("options", [
    dict(optimizer="sgd"), dict(probe=True), dict(schedule="cosine"), dict(schedule="constant"),
    dict(no_decay_norm_bias=True), dict(no_pos_emb=True, dtype="float64"),
    dict(optimizer="sgd", momentum=0.0, schedule="cosine", warmup=0.5)],
    ids=["sgd", "probe", "cosine", "constant", "no-decay", "no-pos-f64", "sgd-no-momentum"])
def test_every_kind_of_real_checkpoint_passes_the_schema(tmp_path, options):
    """The schema knows every optimizer, schedule and grouping a run can save."""
    from vit.train.checkpoint import load_checkpoint
    from vit.train.loop import train
    from vit.train.options import TrainOptions
    o = TrainOptions(dim=8, heads=2, mlp_dim=8, batch_size=512, epochs=2, **options)
    train(o, tmp_path / "run", quiet=True, log=lambda *_: None, stop_after=1)
    ck = load_checkpoint(tmp_path / "run" / "checkpoint.npz")
    assert ck.epoch == 1 and TrainOptions.from_dict(ck.options) == o
