"""The holes a review found after issue 10: each a crafted file or option that got past the
bounds and the schema (a hang, a gigabyte, a traceback), now refused in one line."""
from __future__ import annotations

import io
import json
import struct
import zipfile

import numpy as np
import pytest

from hostile_util import run_limited, small_checkpoint
from reliability_util import run_cli


def _one_line_refusal(status, err, *words):
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], f"{lines[0]!r} does not name {w!r}"
    return lines[0]


# ---- R1: degenerate RNG states ----------------------------------------------------------------
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
    _one_line_refusal(status, err, "rng", "zero")


# ---- R2: JSON text bounded before it is decoded -----------------------------------------------
def _npz_with_text(path, base, entry: str, chunks, chars: int):
    """``base``'s entries, with ``entry`` a 0-d '<U{chars}' member streamed from ``chunks``."""
    from vit.io.npz import load_npz
    arrays = load_npz(base)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in arrays.items():
            if k != entry:
                buf = io.BytesIO()
                np.lib.format.write_array(buf, v)
                zf.writestr(f"{k}.npy", buf.getvalue())
        with zf.open(f"{entry}.npy", "w", force_zip64=True) as f:
            head = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                head, {"descr": f"<U{chars}", "fortran_order": False, "shape": ()})
            f.write(head.getvalue())
            for chunk in chunks:
                f.write(chunk.encode("utf-32-le"))
    return path


def _json_bomb(n: int):
    yield "["
    for start in range(0, n - 1, 1 << 18):
        yield "{}," * min(1 << 18, n - 1 - start)
    yield "{}]"


@pytest.mark.parametrize("entry", ["options", "config", "rng"])
def test_a_long_json_entry_is_refused_before_it_is_decoded(tmp_path, entry):
    from vit.train.checkpoint import load_checkpoint
    from vit.io.npz import MAX_TEXT_CHARS
    base = small_checkpoint(tmp_path / "base.npz")
    n = (MAX_TEXT_CHARS // 3) + 2  # just over the bound
    path = _npz_with_text(tmp_path / "long.npz", base, entry, _json_bomb(n), 3 * n)
    with pytest.raises(ValueError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert f"{entry}.npy" in message or repr(entry) in message, message
    assert f"{3 * n:,}" in message and f"{MAX_TEXT_CHARS:,}" in message, message


def test_a_json_bomb_takes_no_memory(tmp_path):
    """The reviewer's case: 6e7 characters of '{},' (240 MB of UTF-32, 1.8 GB once parsed)
    in a file of a few hundred KB."""
    base = small_checkpoint(tmp_path / "base.npz")
    n = 20_000_000
    path = _npz_with_text(tmp_path / "bomb.npz", base, "options", _json_bomb(n), 3 * n)
    result, rss = run_limited(f"from vit.train.checkpoint import load_checkpoint\n"
                              f"load_checkpoint({str(path)!r})")
    assert result.startswith("ValueError") and "characters" in result, result
    assert rss < 250_000, rss


def test_the_largest_rng_state_fits_the_text_bound():
    from vit.train.rngstate import rng_to_array
    from vit.io.npz import MAX_TEXT_CHARS
    text = str(rng_to_array(np.random.Generator(np.random.MT19937(2**127 - 1))))
    assert 4 * len(text) < MAX_TEXT_CHARS  # headroom for options and configs


# ---- R4: member dtypes of itemsize 0, or not a kind the project writes ------------------------
def _npz_member(path, descr, shape, data: bytes = b""):
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": descr, "fortran_order": False,
                                                "shape": shape})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("x.npy", head.getvalue() + data)
    return path


@pytest.mark.parametrize("descr, words", [
    ("|S0", ["|S0", "itemsize 0"]), ("<U0", ["<U0", "itemsize 0"]),
    ("|V0", ["|V0", "itemsize 0"]), ([("a", "|V0")], ["itemsize 0"]),
])
def test_an_itemsize_0_member_is_refused_before_allocation(tmp_path, descr, words):
    path = _npz_member(tmp_path / "z.npz", descr, (10**16,))
    result, rss = run_limited(f"from vit.io.npz import load_npz\nload_npz({str(path)!r})")
    assert result.startswith("ValueError"), result
    for w in words:
        assert w in result, result
    assert rss < 250_000, rss


@pytest.mark.parametrize("descr, data", [
    ("<c16", bytes(16)), ("|S4", b"abcd"), ("<M8[s]", bytes(8)), ("<m8[s]", bytes(8)),
    ([("a", "<f8")], bytes(8))], ids=["complex", "bytes", "datetime", "timedelta", "struct"])
def test_a_dtype_the_project_never_writes_is_refused(tmp_path, descr, data):
    from vit.io.npz import load_npz
    path = _npz_member(tmp_path / "k.npz", descr, (1,), data)
    with pytest.raises(ValueError) as info:
        load_npz(path)
    assert "x.npy" in str(info.value) and "expected" in str(info.value), str(info.value)


def test_a_string_array_that_is_not_0d_is_refused(tmp_path):
    from vit.io.npz import load_npz
    path = _npz_member(tmp_path / "s.npz", "<U1", (3,), "abc".encode("utf-32-le"))
    with pytest.raises(ValueError, match=r"shape \(3,\).*0-d string"):
        load_npz(path)


def test_what_the_project_writes_still_loads(tmp_path):
    from vit.io.npz import load_npz
    arrays = {"b": np.array([True]), "i": np.arange(3, dtype=np.int8), "u": np.array(7, np.uint64),
              "f": np.ones((2, 2), np.float16), "g": np.zeros(2, ">f8"), "t": np.array("{}")}
    np.savez(tmp_path / "ok.npz", **arrays)
    got = load_npz(tmp_path / "ok.npz")
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and np.array_equal(got[k], v)


# ---- E1/E2: huge integers ---------------------------------------------------------------------
@pytest.mark.parametrize("field", ["epochs", "seed", "batch_size", "lr", "momentum", "mixup"])
def test_a_huge_integer_option_is_one_line_without_400_digits(field):
    from vit.train.options import TrainOptions
    with pytest.raises(ValueError) as info:
        TrainOptions.from_dict({field: 10**400})
    message = str(info.value)
    assert field in message and "expected" in message and "..." in message, message
    assert len(message) < 300, message


def test_a_huge_integer_in_a_checkpoint_is_exit_2(tmp_path, capsys):
    small_checkpoint(tmp_path / "checkpoint.npz", options=json.dumps(
        {**json.loads(str(np.load(small_checkpoint(tmp_path / "b.npz"))["options"])),
         "epochs": 10**400}))
    status, _, err = run_cli(["eval", tmp_path / "checkpoint.npz"], capsys)
    line = _one_line_refusal(status, err, "epochs")
    assert len(line) < 400, line


def test_a_metrics_row_with_a_huge_epoch_is_refused():
    from vit.train.runfolder import check_metrics_row
    row = {"epoch": 10**400, "train_loss": 1.0, "train_acc": 0.5, "test_loss": 1.0,
           "test_acc": 0.5, "lr": 0.1, "seconds": 1.0}
    problem = check_metrics_row(row)
    assert problem and "epoch" in problem and "..." in problem and len(problem) < 200, problem
    problem = check_metrics_row({**row, "epoch": 1, "seconds": 10**400})
    assert problem and "seconds" in problem and len(problem) < 200, problem


def test_plot_of_a_huge_epoch_is_exit_2(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    small_checkpoint(run / "checkpoint.npz")  # plot reads the run's checkpoint first
    row = {"epoch": 10**400, "train_loss": 1.0, "train_acc": 0.5, "test_loss": 1.0,
           "test_acc": 0.5, "lr": 0.1, "seconds": 1.0}
    (run / "metrics.jsonl").write_text(json.dumps(row) + "\n")
    status, _, err = run_cli(["plot", run, "--out", tmp_path / "p"], capsys)
    line = _one_line_refusal(status, err, "epoch")
    assert len(line) < 400, line


def test_shorten_cuts_long_values():
    from vit.io.files import shorten
    assert shorten(10**400).endswith("...") and len(shorten(10**400)) <= 43
    assert shorten(12) == "12" and shorten("ab") == "'ab'"


# ---- E9, E10, E15: messages -------------------------------------------------------------------
def test_out_that_is_a_file_says_so(tmp_path, capsys):
    f = tmp_path / "F"
    f.write_text("x")
    status, _, err = run_cli(["train", "--out", f, "--epochs", "1"], capsys)
    _one_line_refusal(status, err, "is a file", "expected a folder")


def test_a_shape_1_entry_names_its_shape(tmp_path):
    from vit.train.checkpoint import load_checkpoint
    path = small_checkpoint(tmp_path / "ck.npz", optim__num_params=np.array([18]))
    with pytest.raises(ValueError, match=r"shape \(1,\)"):
        load_checkpoint(path)


def test_a_non_zip_file_is_refused_without_echoing_it(tmp_path):
    from vit.io.npz import load_npz
    secret = tmp_path / "passwd"
    secret.write_bytes(b"root:x:0:0:secret")
    with pytest.raises(ValueError) as info:
        load_npz(secret)
    message = str(info.value)
    assert "root" not in message.replace(str(tmp_path), "") and "zip" in message, message


# ---- R3: what is built from a data file is bounded, not only the file --------------------------
def test_a_small_gz_of_many_zero_images_is_refused_before_float32(tmp_path):
    """259 KB of .gz: 340000 28x28 images of zeros, 256 MB decoded (under the floor), 1 GB as
    float32 and 4.4 GB through load_data + Normalizer before the fix."""
    from hostile_util import idx_gz
    folder = tmp_path / "idx"
    folder.mkdir()
    idx_gz(folder / "train-images-idx3-ubyte.gz", (340_000, 28, 28))
    idx_gz(folder / "train-labels-idx1-ubyte.gz", (340_000,))
    result, rss = run_limited(f"from vit.train.data import load_data\nload_data({str(folder)!r})",
                              limit_mb=900)
    assert result.startswith("ValueError") and "converted" in result, result
    assert "train-images-idx3-ubyte.gz" in result, result
    assert rss < 150_000, rss  # refused from the header: not even the 256 MB of uint8


def test_the_data_size_bound_is_in_float32_of_the_file_size(tmp_path):
    from vit.train.data import MAX_DATA_ELEMENTS, load_npz_dataset
    from vit.io.files import EXPANSION_FLOOR
    n = EXPANSION_FLOOR // 4 // 64 + 1  # 8x8 images, one more than the floor allows in float32
    np.savez_compressed(tmp_path / "z.npz", x=np.zeros((n, 8, 8), np.uint8),
                        y=np.arange(n) % 2)
    with pytest.raises(ValueError, match="float32") as info:
        load_npz_dataset(tmp_path / "z.npz")
    assert f"{64 * n:,} pixels" in str(info.value)
    assert MAX_DATA_ELEMENTS * 4 >= EXPANSION_FLOOR


def test_a_shape_the_model_does_not_take_is_refused_before_conversion(tmp_path):
    from vit.train.data import load_data
    np.savez(tmp_path / "d.npz", x=np.zeros((10, 6, 6), np.uint8), y=np.arange(10) % 2)
    with pytest.raises(ValueError, match=r"6x6.*expected 1x8x8"):
        load_data(tmp_path / "d.npz", image_shape=(1, 8, 8))
    assert load_data(tmp_path / "d.npz", image_shape=(1, 6, 6)).image_shape == (1, 6, 6)


def test_chunked_normalizing_equals_the_whole_array_in_float64():
    from vit.model import normalizer as vdata
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((37, 2, 5, 5)) * 1e3 + 5e3).astype(np.float32)
    whole = x.astype(np.float64)
    mean, std = whole.mean(axis=(0, 2, 3)), whole.std(axis=(0, 2, 3))
    expected = ((whole - mean[:, None, None]) / std[:, None, None]).astype(np.float32)
    old = vdata.CHUNK_ELEMENTS
    try:
        vdata.CHUNK_ELEMENTS = 3 * 50  # three images a chunk: 13 chunks
        norm = vdata.Normalizer.fit(x)
        got = norm(x)
    finally:
        vdata.CHUNK_ELEMENTS = old
    eps = np.finfo(np.float64).eps
    assert np.allclose(norm.mean, mean, rtol=64 * eps, atol=0)
    assert np.allclose(norm.std, std, rtol=64 * eps * 1e4, atol=0)  # cancellation of 5e3 +- 1e3
    assert np.allclose(got, expected, rtol=0, atol=4 * np.finfo(np.float32).eps * 4)


def test_normalizing_a_big_set_stays_near_its_float32_size():
    """60000 28x28 float32 images (188 MB): before, fit and normalize made two float64 copies
    (376 MB each)."""
    body = ("import numpy as np\nfrom vit.model.normalizer import Normalizer\n"
            "x = np.ones((60000, 1, 28, 28), np.float32)\n"
            "n = Normalizer.fit(x)\ny = n(x)\nassert y.dtype == np.float32")
    result, rss = run_limited(body, limit_mb=None)
    assert result == "ok", result
    assert rss < 110_000 + 2 * 188_000 + 100_000, rss  # import + x + y + chunks


# ---- E4, E5: sizes no array can have; memory a machine does not have --------------------------
def test_an_empty_idx_shape_too_big_for_any_array_names_the_file(tmp_path):
    from hostile_util import idx_gz
    from vit.train.data import read_idx
    path = idx_gz(tmp_path / "train-images-idx3-ubyte.gz", (0, 2**32 - 1, 2**32 - 1))
    with pytest.raises(ValueError) as info:
        read_idx(path)
    assert "train-images-idx3-ubyte.gz" in str(info.value), str(info.value)
    assert "expected" in str(info.value), str(info.value)


def test_an_empty_npz_shape_too_big_for_any_array_is_refused(tmp_path):
    from vit.io.npz import load_npz
    path = _npz_member(tmp_path / "e.npz", "<f8", (0, 2**40, 2**40))
    with pytest.raises(ValueError) as info:
        load_npz(path)
    assert "x.npy" in str(info.value) and "at most" in str(info.value), str(info.value)


def test_the_cli_reports_running_out_of_memory_in_one_line(tmp_path):
    """A model within a raised --max-parameters that the address space cannot hold."""
    from reliability_util import python_m_vit
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))
    proc = python_m_vit(["--max-parameters", "100000000000", "train", "--dim", "20000",
                         "--heads", "4", "--epochs", "1", "--out", tmp_path / "run"],
                        preexec_fn=cap)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "not enough memory" in lines[0] and "bytes" in lines[0], lines[0]


# ---- S4: the counters, buffers and statistics agree with each other ---------------------------
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


S4_CASES = {
    "param-step-behind": ({"optim/state.0.step": np.array(0)}, ["state.0.step", "0"]),
    "uint64-huge": (dict(sched__total_steps=np.array(2**64 - 2, np.uint64)),
                    ["total_steps", "2**63"]),
    "exp-avg-sq-negative": ({"optim/state.0.exp_avg_sq": -np.ones((1, 1, 8), np.float32)},
                            ["exp_avg_sq", ">= 0"]),
    "norm-std-tiny": (dict(norm__std=np.array([1e-300])), ["norm/std", "1e-300"]),
    "norm-mean-huge": (dict(norm__mean=np.array([1e39])), ["norm/mean", "1e+39"]),
}


@pytest.mark.parametrize("case", list(S4_CASES))
def test_inconsistent_counters_or_statistics_are_refused(tmp_path, case):
    from vit.train.checkpoint import load_checkpoint
    change, words = S4_CASES[case]
    path = _consistent(tmp_path, **change)
    with pytest.raises(ValueError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert "\n" not in message and "expected" in message, message
    for w in words:
        assert w in message, f"{message!r} does not name {w!r}"


def test_the_normalizer_refuses_what_would_overflow_normalized_inputs():
    from vit.model.normalizer import Normalizer
    with pytest.raises(ValueError, match="std"):
        Normalizer(np.zeros(1), np.array([1e-300]))
    with pytest.raises(ValueError, match="mean"):
        Normalizer(np.array([1e39]), np.ones(1))
    f32 = np.finfo(np.float32)
    Normalizer(np.array([float(f32.max)]), np.array([float(f32.tiny)]))  # the edges hold


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
