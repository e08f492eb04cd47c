"""Memory is bounded before anything is allocated.

Each hostile case runs in a child process whose address space is capped at
``hostile_util.LIMIT_MB``: a loader that inflates a bomb or builds the model a file declares
dies there with a MemoryError (the test fails), one that checks the bound first refuses the
file with a one-line ValueError and a small peak. The model's size is computed from its
config by one function, ``vit.model.config.parameter_count``, checked against a stated limit.
What a data file turns into is bounded too, not only the file: the float32 images a small
``.gz`` or ``.npz`` would become, and an IDX shape no array can have; a model the address
space cannot hold is one line (exit 1), not a traceback."""
from __future__ import annotations

import numpy as np
import pytest
from hostile_util import idx_gz, npz_long_header, npz_trailing_zeros, run_limited, small_checkpoint
from reliability_util import TINY, run_cli

GB = 1 << 30
#: A refused hostile case peaks far below the cap: the allocation the file asked for never
#: happened (importing vit takes about 40 MB of RSS).
SMALL_PEAK_KB = 160 << 10


def refused(result: str, *words: str) -> None:
    assert result.startswith("ValueError "), result
    for w in words:
        assert w in result, f"{result!r} does not name {w!r}"


# ---- .npz and .npy ---------------------------------------------------------------------------
@pytest.mark.slow
def test_npz_member_with_a_gigabyte_of_trailing_zeros_is_refused_without_inflating(tmp_path):
    path = npz_trailing_zeros(tmp_path / "trailing.npz", GB)
    assert path.stat().st_size < 2 << 20
    result, rss = run_limited(f"from vit.io.npz import load_npz\nload_npz({str(path)!r})")
    refused(result, "trailing.npz", "'x.npy'", "expected")
    assert rss < SMALL_PEAK_KB


def test_npz_member_with_trailing_bytes_is_refused_in_process(tmp_path):
    from vit.io.npz import load_npz
    path = npz_trailing_zeros(tmp_path / "t.npz", 10)
    with pytest.raises(ValueError, match="t.npz.*'x.npy'.*expected"):
        load_npz(path)


@pytest.mark.slow
@pytest.mark.parametrize("version", [2, 3])
def test_npy_header_declaring_a_gigabyte_is_refused_before_reading_it(tmp_path, version):
    path = npz_long_header(tmp_path / "header.npz", GB // 2, version)
    result, rss = run_limited(f"from vit.io.npz import load_npz\nload_npz({str(path)!r})")
    # version 3 (UTF-8 headers, which np.savez writes only for non-Latin-1 field names) is
    # refused by its version number before its length is read
    refused(result, "header.npz", *(["header", "expected at most"] if version == 2 else
                                     ["version (3, 0)", "expected 1.0 or 2.0"]))
    assert rss < SMALL_PEAK_KB


def test_npy_header_bound_in_process(tmp_path):
    from vit.io.npz import MAX_HEADER_BYTES, load_npz
    path = npz_long_header(tmp_path / "h.npz", MAX_HEADER_BYTES + 64)
    with pytest.raises(ValueError, match=f"expected at most {MAX_HEADER_BYTES:,}"):
        load_npz(path)


# ---- IDX -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_idx_gz_with_a_gigabyte_after_its_declared_data_is_refused(tmp_path):
    folder = tmp_path / "idx"
    folder.mkdir()
    idx_gz(folder / "train-images-idx3-ubyte.gz", (20, 4, 4))
    idx_gz(folder / "train-labels-idx1-ubyte.gz", (20,), extra=GB)
    result, rss = run_limited(f"from vit.train.data import load_data\nload_data({str(folder)!r})")
    refused(result, "train-labels-idx1-ubyte.gz", "expected")
    assert rss < SMALL_PEAK_KB


@pytest.mark.slow
def test_idx_gz_declaring_a_gigabyte_of_images_is_refused_before_allocating(tmp_path):
    path = idx_gz(tmp_path / "train-images-idx3-ubyte.gz", (1 << 20, 32, 32))  # 1 GiB of zeros
    assert path.stat().st_size < 8 << 20
    result, rss = run_limited(f"from vit.train.data import read_idx\nread_idx({str(path)!r})")
    refused(result, "train-images-idx3-ubyte.gz", "bytes", "expected at most")
    assert rss < SMALL_PEAK_KB


def test_idx_declared_size_beyond_the_limit_is_refused_without_data(tmp_path):
    from vit.train.data import read_idx
    path = idx_gz(tmp_path / "big.gz", (60000, 4096, 4096), data=False)
    with pytest.raises(ValueError, match="big.gz.*expected at most"):
        read_idx(path)


def test_idx_trailing_bytes_are_refused_uncompressed_too(tmp_path):
    import struct

    from vit.train.data import read_idx
    path = tmp_path / "labels-idx1-ubyte"
    path.write_bytes(struct.pack(">HBBI", 0, 8, 1, 3) + bytes(5))
    with pytest.raises(ValueError, match="labels-idx1-ubyte.*expected"):
        read_idx(path)


@pytest.mark.slow
def test_checkpoint_whose_data_is_an_idx_bomb_is_refused(tmp_path):
    folder = tmp_path / "idx"
    folder.mkdir()
    idx_gz(folder / "train-images-idx3-ubyte.gz", (20, 8, 8), extra=GB)
    idx_gz(folder / "train-labels-idx1-ubyte.gz", (20,))
    ck = small_checkpoint(tmp_path / "ck.npz", options={"data": str(folder)})
    body = f"""
import contextlib, io
from vit.cli.main import main
err = io.StringIO()
with contextlib.redirect_stderr(err):
    status = main(["eval", {str(ck)!r}])
assert status == 2 and err.getvalue().count(chr(10)) == 1, (status, err.getvalue())
assert "train-images-idx3-ubyte.gz" in err.getvalue(), err.getvalue()
"""
    result, rss = run_limited(body)
    assert result == "ok", result
    assert rss < SMALL_PEAK_KB


# ---- the model's size, from its config -------------------------------------------------------
CONFIGS = [dict(img_size=8, patch_size=4, in_chans=1, dim=16, num_heads=2, mlp_dim=32,
                num_classes=2, use_pos_emb=True),
           dict(img_size=12, patch_size=3, in_chans=3, dim=12, num_heads=3, mlp_dim=7,
                num_classes=5, use_pos_emb=False),
           dict(img_size=4, patch_size=4, in_chans=2, dim=4, num_heads=1, mlp_dim=1,
                num_classes=11, use_pos_emb=True)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c['img_size']}-{c['dim']}")
def test_parameter_count_and_shapes_match_the_built_model(config):
    from vit.model.config import parameter_count, parameter_shapes
    from vit.model.tinyvit import TinyViT
    model = TinyViT(**config)
    built = {name: p.shape for name, p in model.named_parameters()}
    assert parameter_shapes(config) == built
    assert parameter_count(config) == sum(int(np.prod(s)) for s in built.values())
    assert parameter_count(config) == model.num_parameters()


@pytest.mark.parametrize("change", [dict(img_size=4096, patch_size=1), dict(dim=10**6),
                                    dict(mlp_dim=10**9), dict(num_classes=10**10),
                                    dict(img_size=4096, patch_size=1, use_pos_emb=False)],
                         ids=["img4096-p1", "dim1e6", "mlp1e9", "classes1e10", "tokens-no-pos"])
def test_tinyvit_refuses_a_huge_config_before_building(change):
    from vit.model.tinyvit import TinyViT
    config = {**CONFIGS[0], **change}
    with pytest.raises(ValueError, match="expected at most") as info:
        TinyViT(**config)
    assert "\n" not in str(info.value)


def test_the_parameter_limit_can_be_raised_and_lowered():
    from vit.model.config import limits, parameter_count
    from vit.model.tinyvit import TinyViT
    n = parameter_count(CONFIGS[0])
    with pytest.raises(ValueError, match=f"{n:,} parameters"):
        TinyViT(**CONFIGS[0], max_parameters=n - 1)
    TinyViT(**CONFIGS[0], max_parameters=n)
    with limits(max_parameters=n - 1):
        with pytest.raises(ValueError, match="max_parameters"):
            TinyViT(**CONFIGS[0])
    TinyViT(**CONFIGS[0])  # the context restored the default


@pytest.mark.slow
@pytest.mark.parametrize("change", [dict(img_size=4096, patch_size=1), dict(dim=10**6)],
                         ids=["img4096-p1", "dim1e6"])
@pytest.mark.parametrize("loader", ["checkpoint", "model"])
def test_a_file_with_a_huge_config_is_refused_before_building(tmp_path, change, loader):
    path = small_checkpoint(tmp_path / "ck.npz", config=change)
    call = (f"from vit.train.checkpoint import load_checkpoint\nload_checkpoint({str(path)!r})"
            if loader == "checkpoint" else
            f"from vit.model.tinyvit import TinyViT\nTinyViT.load({str(path)!r})")
    if loader == "model":  # a saved model: config and parameters only
        from vit.io.npz import load_npz
        arrays = {k: v for k, v in load_npz(path).items() if k == "config" or
                  k.startswith("param/")}
        np.savez(path, **arrays)
    result, rss = run_limited(call)
    refused(result, "ck.npz", "config", "parameters", "expected at most")
    assert rss < SMALL_PEAK_KB


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--dim", "1000000", "--heads", "1"],
                                  ["--mlp-dim", "1000000000"]], ids=["dim", "mlp-dim"])
def test_cli_refuses_a_huge_model_before_building(tmp_path, args):
    body = f"""
import contextlib, io
from vit.cli.main import main
err = io.StringIO()
with contextlib.redirect_stderr(err):
    status = main(["train", "--out", {str(tmp_path / 'run')!r}, *{TINY!r}, *{args!r}])
assert status == 2 and err.getvalue().count(chr(10)) == 1, (status, err.getvalue())
assert {args[0]!r} in err.getvalue() and "max-parameters" in err.getvalue(), err.getvalue()
"""
    result, rss = run_limited(body)
    assert result == "ok", result
    assert rss < SMALL_PEAK_KB


@pytest.mark.slow
def test_cli_refuses_data_whose_labels_make_a_huge_head(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "huge-label.npz"
    y = np.arange(40) % 2
    y[0] = 10**10
    np.savez(path, x=rng.normal(size=(40, 8, 8)).astype(np.float32), y=y)
    body = f"""
import contextlib, io
from vit.cli.main import main
err = io.StringIO()
with contextlib.redirect_stderr(err):
    status = main(["train", "--data", {str(path)!r}, "--out", {str(tmp_path / 'run')!r},
                   *{TINY!r}])
assert status == 2 and err.getvalue().count(chr(10)) == 1, (status, err.getvalue())
assert "10000000000" in err.getvalue(), err.getvalue()
"""
    result, rss = run_limited(body)
    assert result == "ok", result
    assert rss < SMALL_PEAK_KB


def test_cli_max_parameters_option_raises_and_lowers_the_limit(tmp_path, capsys):
    status, _, err = run_cli(["--max-parameters", "100", "train", "--out", tmp_path / "r",
                              *TINY, "--epochs", "1"], capsys)
    assert status == 2 and err.count("\n") == 1 and "--max-parameters" in err, err
    assert "Traceback" not in err
    status, out, err = run_cli(["--max-parameters", "100000", "train", "--out",
                                tmp_path / "r2", *TINY, "--epochs", "1"], capsys)
    assert status == 0, err


def test_checkpoint_config_inconsistent_with_its_options_is_refused(tmp_path):
    from vit.train.checkpoint import load_checkpoint
    path = small_checkpoint(tmp_path / "ck.npz", config={"mlp_dim": 16})
    with pytest.raises(ValueError, match="mlp_dim"):
        load_checkpoint(path)


def test_limit_in_docs_matches_the_code():
    from hostile_util import ROOT

    from vit.io.files import MAX_DECODED_BYTES
    from vit.model.config import MAX_ACTIVATION_BYTES, MAX_PARAMETERS
    doc = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert f"{MAX_PARAMETERS:,}" in doc
    assert f"{MAX_ACTIVATION_BYTES >> 20:,} MiB" in doc
    assert f"{MAX_DECODED_BYTES >> 30} GiB" in doc


def test_a_batch_whose_activations_exceed_the_limit_is_refused_before_the_forward():
    from vit.model.config import activation_bytes, limits
    from vit.model.tinyvit import TinyViT
    model = TinyViT(**CONFIGS[0])
    x = np.zeros((4, 1, 8, 8))
    per_image = activation_bytes(model.config, 8)
    with limits(max_activation_bytes=4 * per_image - 1):
        for call in (model.forward, model.cls_features):
            with pytest.raises(ValueError, match="batch of 4 images.*expected at most"):
                call(x)
        model.forward(x[:3])
    with limits(max_activation_bytes=4 * per_image):
        model.forward(x)


def test_load_checkpoint_max_parameters_applies_to_every_check(tmp_path):
    from vit.model.config import limits
    from vit.train.checkpoint import load_checkpoint
    path = small_checkpoint(tmp_path / "ck.npz")
    with limits(max_parameters=100):
        with pytest.raises(ValueError, match="ck.npz.*expected at most 100"):
            load_checkpoint(path)
        assert load_checkpoint(path, max_parameters=10**6).epoch == 1
    with pytest.raises(ValueError, match="expected at most 100"):
        load_checkpoint(path, max_parameters=100)


# ---- what is built from a data file, not only the file --------------------------------------
@pytest.mark.slow  # a child process; fast: test_the_data_size_bound_is_in_float32_of_the_file_size
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
    from vit.io.files import EXPANSION_FLOOR
    from vit.train.data import MAX_DATA_ELEMENTS, load_npz_dataset
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


def test_an_empty_idx_shape_too_big_for_any_array_names_the_file(tmp_path):
    from hostile_util import idx_gz

    from vit.train.data import read_idx
    path = idx_gz(tmp_path / "train-images-idx3-ubyte.gz", (0, 2**32 - 1, 2**32 - 1))
    with pytest.raises(ValueError) as info:
        read_idx(path)
    assert "train-images-idx3-ubyte.gz" in str(info.value), str(info.value)
    assert "expected" in str(info.value), str(info.value)


# ---- memory the machine does not have -------------------------------------------------------
@pytest.mark.slow  # a child process
def test_the_cli_reports_running_out_of_memory_in_one_line(tmp_path):
    """A model within a raised --max-parameters that the address space cannot hold."""
    import resource

    from reliability_util import python_m_vit

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))
    proc = python_m_vit(["--max-parameters", "100000000000", "train", "--dim", "20000",
                         "--heads", "4", "--epochs", "1", "--out", tmp_path / "run"],
                        preexec_fn=cap)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "not enough memory" in lines[0] and "bytes" in lines[0], lines[0]
