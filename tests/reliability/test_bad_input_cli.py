"""Bad input to every subcommand and option of ``python -m vit``: exit status 2, one line on
stderr naming the option and the value, no traceback, and no file written or changed.

The option cases are generated from the parser itself (every option of every subcommand gets
the bad values of its type, and a missing value), so an option added later is covered
automatically; the semantic cases (files, combinations found after parsing) are listed."""
from __future__ import annotations

import argparse
import os

import numpy as np
import pytest
from helpers import one_line_refusal
from reliability_util import python_m_vit, run_cli

from vit.cli.main import build_parser

#: the bad values of each argument type, by the name the CLI gives the type
BAD_VALUES = {
    "a positive integer": ["0", "-3", "2.5", "x"],
    "an integer >= 0": ["-1", "1e3"],
    "a positive number": ["0", "-1", "nan", "inf", "x"],
    "a number >= 0": ["-0.5", "nan"],
    "a number in [0, 1)": ["1", "-0.1", "inf"],
}
#: what a subcommand needs besides the bad option (its positionals)
NEEDS = {"train": [], "crossval": [], "eval": ["missing.npz"], "plot": ["missing-run"],
         "gradcheck": [], "export": ["missing.npz"], "import": ["missing-dir"],
         "predict": ["missing.npz", "missing.png"]}


def _subparsers():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, sub.choices


def _option_cases():
    parser, subs = _subparsers()
    cases = []
    where = [(None, parser)] + list(subs.items())
    for command, p in where:
        prefix = [] if command is None else [command, *NEEDS[command]]
        for action in p._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            opt = action.option_strings[-1]
            pre = prefix if command else []
            post = [] if command else ["gradcheck"]
            if isinstance(action, argparse._StoreTrueAction):
                cases.append((command, opt, "=1", pre + [f"{opt}=1"] + post))
                continue
            type_name = getattr(action.type, "__name__", "")
            values = (["bogus"] if action.choices else BAD_VALUES.get(type_name, []))
            for value in values:
                cases.append((command, opt, value, pre + [opt, value] + post))
            if not command:
                continue
            cases.append((command, opt, "(missing)", pre + [opt]))  # no value at all
    return cases


OPTION_CASES = _option_cases()


def test_every_option_of_every_subcommand_is_covered():
    parser, subs = _subparsers()
    covered = {(c, o) for c, o, _, _ in OPTION_CASES}
    for command, p in [(None, parser)] + list(subs.items()):
        for action in p._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                assert (command, action.option_strings[-1]) in covered


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A cwd with a few data files; afterwards no file may have appeared or changed."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.savez("mismatch.npz", x=rng.normal(size=(40, 2, 4, 4)), y=np.arange(40) % 2)
    np.savez("objects.npz", x=np.zeros((4, 4, 4)), y=np.array([0, 1, 0, None], dtype=object))
    with open("junk.npz", "wb") as f:
        f.write(b"junk, not a zip archive")
    os.mkdir("file-parent")
    with open("file-parent/file", "w") as f:
        f.write("a file, not a folder")
    os.mkdir("used-run")
    with open("used-run/checkpoint.npz", "wb") as f:
        f.write(b"stands for a run")
    before = _tree(tmp_path)
    yield tmp_path
    after = _tree(tmp_path)
    assert after == before, f"files appeared or changed: {set(after.items()) ^ set(before.items())}"


def _tree(root):
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = f.read()
    return out


def check_usage_error(args, capsys, *words):
    status, out, err = run_cli(args, capsys)
    assert status == 2, (status, out, err)
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err and err.startswith("vit"), err
    missing = [w for w in words if w not in err]
    assert not missing, f"{err!r} does not name {missing}"
    return err


@pytest.mark.parametrize("command, opt, value, args", OPTION_CASES,
                         ids=[f"{c or 'vit'} {o} {v}" for c, o, v, _ in OPTION_CASES])
def test_bad_option_value(command, opt, value, args, capsys, workdir):
    words = [opt] if value in ("=1", "(missing)") else [opt, value]
    check_usage_error(args, capsys, *words)


SMALL = ["--dim", "8", "--heads", "2", "--mlp-dim", "8", "--epochs", "1", "--quiet"]
SEMANTIC = {  # id -> (args, words the one line must hold)
    "no-command": ([], ["COMMAND"]),
    "unknown-command": (["frobnicate"], ["frobnicate"]),
    "train-unknown-option": (["train", "--bogus"], ["--bogus"]),
    "train-data-missing": (["train", "--data", "nothing.npz", "--out", "r", *SMALL],
                           ["nothing.npz", "no such file"]),
    "train-data-junk": (["train", "--data", "junk.npz", "--out", "r", *SMALL],
                        ["junk.npz", "not an .npz"]),
    "train-data-pickled": (["train", "--data", "objects.npz", "--out", "r", *SMALL],
                           ["objects.npz", "pickled"]),
    "train-data-folder-without-idx": (["train", "--data", "file-parent", "--out", "r", *SMALL],
                                      ["file-parent", "train-images-idx3-ubyte"]),
    "train-position-with-data": (["train", "--task", "position", "--data", "junk.npz", "--out",
                                  "r", *SMALL], ["--data", "position"]),
    "train-heads-not-dividing-dim": (["train", "--dim", "8", "--heads", "3", "--out", "r",
                                      "--quiet"], ["--heads 3", "--dim 8"]),
    "train-patch-not-dividing-image": (["train", "--patch-size", "3", "--out", "r", *SMALL],
                                       ["--patch-size 3", "image size 8"]),
    "train-patch-bigger-than-image": (["train", "--patch-size", "16", "--out", "r", *SMALL],
                                      ["--patch-size 16"]),
    "train-out-under-a-file": (["train", "--out", "file-parent/file/run", *SMALL],
                               ["file-parent/file/run", "not a writable folder"]),
    "train-out-is-a-file": (["train", "--out", "file-parent/file", *SMALL],
                            ["file-parent/file", "not a writable folder"]),
    "train-out-used": (["train", "--out", "used-run", *SMALL], ["used-run", "--resume",
                                                               "--overwrite"]),
    "train-resume-nothing": (["train", "--out", "r", "--resume", "--quiet"],
                             ["--resume", "does not exist"]),
    "train-resume-corrupt": (["train", "--out", "used-run", "--resume", "--quiet"],
                             ["used-run/checkpoint.npz", "not an .npz"]),
    "eval-no-checkpoint-argument": (["eval"], ["MODEL"]),
    "eval-missing-checkpoint": (["eval", "nothing.npz"], ["nothing.npz"]),
    "eval-junk-checkpoint": (["eval", "junk.npz"], ["junk.npz", "not an .npz"]),
    "eval-data-is-not-a-checkpoint": (["eval", "mismatch.npz"], ["mismatch.npz",
                                                                 "expected a training checkpoint"]),
    "plot-no-run-argument": (["plot"], ["RUN"]),
    "plot-missing-run": (["plot", "nothing"], ["nothing", "metrics.jsonl"]),
    "gradcheck-heads-not-dividing-dim": (["gradcheck", "--dim", "8", "--heads", "3"],
                                         ["num_heads", "3"]),
    "gradcheck-depth-past-the-limit": (["gradcheck", "--depth", "100000"], ["depth", "100000"]),
    "gradcheck-patch-not-dividing-image": (["gradcheck", "--img-size", "6"], ["patch_size",
                                                                             "img_size = 6"]),
}
if "--no-decay-norm-bias" in _subparsers()[1]["train"].format_help():  # a newer option
    SEMANTIC["train-no-decay-with-sgd"] = (["train", "--optimizer", "sgd", "--no-decay-norm-bias",
                                            "--out", "r", *SMALL], ["--no-decay-norm-bias"])


@pytest.mark.parametrize("name", list(SEMANTIC))
def test_bad_combination_or_file(name, capsys, workdir):
    args, words = SEMANTIC[name]
    check_usage_error(args, capsys, *words)


def test_in_a_real_process_a_late_error_is_one_line(tmp_path):
    """The same through ``python -m vit``: status 2, one line, no traceback, nothing written."""
    done = python_m_vit(["train", "--dim", "8", "--heads", "3", "--out", tmp_path / "r"],
                        cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and "--heads 3" in done.stderr
    assert not any(files for _, _, files in os.walk(tmp_path))


# ---- --out that is a file -------------------------------------------------------------------
def test_out_that_is_a_file_says_so(tmp_path, capsys):
    f = tmp_path / "F"
    f.write_text("x")
    status, _, err = run_cli(["train", "--out", f, "--epochs", "1"], capsys)
    one_line_refusal(status, err, "is a file", "expected a folder")
