"""A file never chooses code to run, and every checkpoint entry is validated against a schema
before anything is built.

Each crafted checkpoint is refused by ``load_checkpoint`` with a one-line ValueError naming the
file, the entry, what it held and what was expected; through ``vit eval`` it is exit status 2
and one line on stderr. That includes a random generator's state no generator can have (an
all-zero MT19937 key, whose resume would hang; an even PCG64 increment), an entry of the
wrong shape, and counters, buffers and statistics that disagree with each other or, on
``--resume``, with the data (a crafted schedule length or step count would silently replace
the run's schedule)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from helpers import one_line_refusal
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


# ---- degenerate RNG states ------------------------------------------------------------------
MT_ZERO = {"bit_generator": "MT19937", "state": {"key": [0] * 624, "pos": 624}}


#: only the top bit of key[0] is part of MT19937's state: this one is all-zero too
MT_LOW_BITS = {"bit_generator": "MT19937", "state": {"key": [0x7FFFFFFF] + [0] * 623,
                                                     "pos": 624}}


PCG_ZERO = {"bit_generator": "PCG64", "state": {"state": 0, "inc": 0}, "has_uint32": 0,
            "uinteger": 0}


PCG_EVEN = {**PCG_ZERO, "state": {"state": 5, "inc": 2}}


@pytest.mark.parametrize("state, words", [
    (MT_ZERO, ["key", "zero"]), (MT_LOW_BITS, ["key", "zero"]),
    (PCG_ZERO, ["inc", "odd"]), (PCG_EVEN, ["inc", "odd", "2"]),
    ({**PCG_ZERO, "bit_generator": "PCG64DXSM"}, ["inc", "odd"])], ids=[
    "mt-zero", "mt-low-bits", "pcg-zero", "pcg-even", "pcgdxsm-zero"])
def test_a_degenerate_rng_state_is_refused(tmp_path, state, words):
    from vit.train.checkpoint import load_checkpoint
    path = small_checkpoint(tmp_path / "ck.npz", rng=json.dumps(state))
    with pytest.raises(ValueError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert "\n" not in message and "entry rng" in message and "expected" in message, message
    for w in words:
        assert w in message, message


def test_seeded_generators_of_every_kind_still_load(tmp_path):
    from vit.train.checkpoint import load_checkpoint
    from vit.train.rngstate import BIT_GENERATORS, rng_to_array
    for name, make in BIT_GENERATORS.items():
        rng = np.random.Generator(make(12345))
        rng.random(7)
        path = small_checkpoint(tmp_path / f"{name}.npz", rng=str(rng_to_array(rng)))
        assert load_checkpoint(path).rng.random() == rng.random()


def test_resume_from_an_all_zero_mt_state_is_refused_not_a_hang(tmp_path, capsys):
    small_checkpoint(tmp_path / "checkpoint.npz", rng=json.dumps(MT_ZERO))
    status, _, err = run_cli(["eval", tmp_path / "checkpoint.npz"], capsys)
    one_line_refusal(status, err, "rng", "zero")


# ---- an entry of the wrong shape ------------------------------------------------------------
def test_a_shape_1_entry_names_its_shape(tmp_path):
    from vit.train.checkpoint import load_checkpoint
    path = small_checkpoint(tmp_path / "ck.npz", optim__num_params=np.array([18]))
    with pytest.raises(ValueError, match=r"shape \(1,\)"):
        load_checkpoint(path)


# ---- counters, buffers and statistics that agree with each other and with the data ----------
def _consistent(tmp_path, **change):
    """small_checkpoint with a schedule of 2 epochs x 1 step, after epoch 1: every counter
    says one step (``change`` applied on top)."""
    return small_checkpoint(tmp_path / "ck.npz", **{"sched/total_steps": np.array(2), **change})


def test_a_consistent_checkpoint_loads(tmp_path):
    from vit.train.checkpoint import check_progress, load_checkpoint
    ck = load_checkpoint(_consistent(tmp_path))
    check_progress(ck, steps_per_epoch=1, where="ck")
    with pytest.raises(ValueError, match=r"sched/total_steps.*2.*3 steps per epoch"):
        check_progress(ck, steps_per_epoch=3, where="ck")


PROGRESS_CASES = {
    "total-for-other-data": (dict(sched__total_steps=np.array(10)), ["total_steps", "10",
                                                                      "2 x 1"]),
    "last-step-behind": (dict(sched__last_step=np.array(0)), ["last_step", "0", "1 x 1"]),
    "steps-ahead-of-epoch": (dict(epoch=np.array(0)), ["last_step", "1", "0 x 1"]),
    "optimizer-behind": ({}, ["step_count", "0", "last_step"]),  # step_count set below
}


@pytest.mark.parametrize("case", list(PROGRESS_CASES))
def test_counters_that_disagree_with_the_data_are_refused_before_resuming(tmp_path, case):
    """Only the data tells the steps per epoch: ``vit.train`` checks them before it loads
    the state (``check_progress``); the checkpoint alone loads."""
    from vit.train.checkpoint import check_progress, load_checkpoint
    change, words = PROGRESS_CASES[case]
    ck = load_checkpoint(_consistent(tmp_path, **change))
    if case == "optimizer-behind":  # in the file, the per-parameter steps would differ first
        ck.optim["step_count"] = np.array(0)
    with pytest.raises(ValueError) as info:
        check_progress(ck, steps_per_epoch=1, where="ck")
    message = str(info.value)
    for w in words:
        assert w in message, f"{message!r} does not name {w!r}"


INCONSISTENT = {
    "param-step-behind": ({"optim/state.0.step": np.array(0)}, ["state.0.step", "0"]),
    "uint64-huge": (dict(sched__total_steps=np.array(2**64 - 2, np.uint64)),
                    ["total_steps", "2**63"]),
    "exp-avg-sq-negative": ({"optim/state.0.exp_avg_sq": -np.ones((1, 1, 8), np.float32)},
                            ["exp_avg_sq", ">= 0"]),
    "norm-std-tiny": (dict(norm__std=np.array([1e-300])), ["norm/std", "1e-300"]),
    "norm-mean-huge": (dict(norm__mean=np.array([1e39])), ["norm/mean", "1e+39"]),
}


@pytest.mark.parametrize("case", list(INCONSISTENT))
def test_inconsistent_counters_or_statistics_are_refused(tmp_path, case):
    from vit.train.checkpoint import load_checkpoint
    change, words = INCONSISTENT[case]
    path = _consistent(tmp_path, **change)
    with pytest.raises(ValueError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert "\n" not in message and "expected" in message, message
    for w in words:
        assert w in message, f"{message!r} does not name {w!r}"


@pytest.mark.parametrize("entry, value", [("sched/total_steps", 1000), ("sched/last_step", 5),
                                          ("optim/step_count", 7)])
def test_resume_refuses_counters_that_do_not_fit_the_run(tmp_path, capsys, entry, value):
    """A crafted schedule length or step count would silently replace the run's schedule on
    --resume: the counters are checked against the data before any state is loaded."""
    run = tmp_path / "run"
    tiny = ["--dim", 8, "--heads", 2, "--mlp-dim", 8, "--batch-size", 512, "--epochs", 3,
            "--quiet"]
    assert run_cli(["train", "--out", run, *tiny, "--stop-after", 1], capsys)[0] == 0
    path = run / "checkpoint.npz"
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    arrays[entry] = np.array(value, dtype=arrays[entry].dtype)
    np.savez(path, **arrays)
    before = path.read_bytes()
    code, out, err = run_cli(["train", "--out", run, "--resume", "--quiet"], capsys)
    assert code == 2 and err.count("\n") == 1 and entry in err, err
    assert path.read_bytes() == before
