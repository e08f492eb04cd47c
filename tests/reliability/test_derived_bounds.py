"""Sizes derived from a file are bounded, not only what is read: what is built from it (the
float32 copies of uint8 pixels, the (N, K) logits of a model with K classes, a K x K confusion
matrix, an augmented batch) is checked against the same rule before it is allocated, so a
small file never reaches gigabytes. Each memory case runs in a child process whose address
space is capped (``hostile_util.run_limited``)."""
from __future__ import annotations

import numpy as np
import pytest
from hostile_util import run_limited

#: A refused case peaks near the cost of importing vit (about 40-60 MB): the allocation the
#: file asked for never happened.
SMALL_PEAK_KB = 160 << 10


def refused(result: str, *words: str) -> None:
    assert result.startswith("ValueError "), result
    for w in words:
        assert w in result, f"{result!r} does not name {w!r}"


@pytest.mark.slow
def test_predict_bounds_the_float_copies_of_compressed_uint8_images(tmp_path):
    """200 MB of uint8 zeros in a ~200 KB .npz: reading them is within the decoded bound, but
    predict's float32 pixels, normalized inputs and batch would be 2.4 GB."""
    from vit import TinyViT
    model = TinyViT(img_size=8, patch_size=4, dim=8, num_heads=2, mlp_dim=8, seed=0)
    model.save(tmp_path / "m.npz")
    np.savez_compressed(tmp_path / "x.npz", x=np.zeros((200 << 20 >> 6, 8, 8), np.uint8))
    assert (tmp_path / "x.npz").stat().st_size < 1 << 20
    result, rss = run_limited(  # what `vit predict m.npz x.npz` does, errors raised
        "from vit import TinyViT\nfrom vit.cli.predict import read_input\n"
        f"model = TinyViT.load({str(tmp_path / 'm.npz')!r})\n"
        f"model.predict(read_input({str(tmp_path / 'x.npz')!r}, model.config))")
    refused(result, "x.npz", "expected at most")
    assert rss < SMALL_PEAK_KB, rss


def test_predict_bounds_the_logits_of_a_model_with_millions_of_classes(tmp_path):
    from vit import TinyViT
    from vit.model.config import current_limits
    model = TinyViT(img_size=4, patch_size=4, dim=1, num_heads=1, mlp_dim=1,
                    num_classes=2_000_000, seed=0, max_parameters=10**7)
    images = np.zeros((200, 4, 4), np.float32)
    # 200 x 2e6 float64 probabilities are 3.2 GB: refused before the first batch
    with pytest.raises(ValueError, match="classes.*expected at most"):
        model.predict(images, probabilities=True)
    assert 200 * 2_000_000 * 8 > current_limits()[1]


def _many_class_model(path, classes):
    from vit import TinyViT
    from vit.model.normalizer import Normalizer
    model = TinyViT(img_size=4, patch_size=4, dim=1, num_heads=1, mlp_dim=1,
                    num_classes=classes, seed=0, max_parameters=10**7)
    model.normalizer = Normalizer(np.zeros(1), np.ones(1))
    model.save(path)


def _small_data(path, n=6):
    y = np.arange(n) % 2
    np.savez(path, x=np.zeros((n, 4, 4), np.float32), y=y, x_test=np.zeros((n, 4, 4), np.float32),
             y_test=y)


def test_eval_bounds_the_confusion_matrix_of_millions_of_classes(tmp_path, capsys):
    from reliability_util import run_cli
    _many_class_model(tmp_path / "m.npz", 2_000_000)  # a 2e6 x 2e6 int64 matrix: 32 TB
    _small_data(tmp_path / "d.npz")
    status, _, err = run_cli(["eval", tmp_path / "m.npz", "--data", tmp_path / "d.npz"], capsys)
    assert status == 2 and err.count("\n") == 1 and "expected at most" in err, err


def test_eval_prints_a_confusion_matrix_of_many_classes_in_short(tmp_path, capsys):
    from reliability_util import run_cli
    _many_class_model(tmp_path / "m.npz", 500)
    _small_data(tmp_path / "d.npz")
    status, out, err = run_cli(["eval", tmp_path / "m.npz", "--data", tmp_path / "d.npz"], capsys)
    assert status == 0, err
    assert len(out.splitlines()) < 40 and "500 classes" in out, out[:2000]


def test_vit_import_reads_a_small_export_under_an_address_space_cap(tmp_path, capsys):
    """The weights are read by their size (fstat), not by asking for the 4 GiB bound up
    front, which an address-space limit refuses."""
    pytest.importorskip("safetensors")
    from reliability_util import run_cli

    from vit import TinyViT
    TinyViT(img_size=8, patch_size=4, dim=8, num_heads=2, mlp_dim=8, seed=0).save(
        tmp_path / "m.npz")
    assert run_cli(["export", tmp_path / "m.npz", "--to", "timm", "--out", tmp_path / "t"],
                   capsys)[0] == 0
    result, rss = run_limited("from vit.cli.timm_folder import import_timm\n"
                              f"import_timm({str(tmp_path / 't')!r}, "
                              f"{str(tmp_path / 'back.npz')!r})", limit_mb=1024)
    assert result == "ok", result
    assert (tmp_path / "back.npz").exists() and rss < SMALL_PEAK_KB


@pytest.mark.slow
def test_an_unknown_checkpoint_entry_is_refused_by_its_name_before_it_is_read(tmp_path):
    from hostile_util import small_checkpoint
    path = small_checkpoint(tmp_path / "c.npz", extra=np.zeros(200 << 20, np.uint8))
    result, rss = run_limited("from vit.train.checkpoint import load_checkpoint\n"
                              f"load_checkpoint({str(path)!r})", limit_mb=None)
    refused(result, "c.npz", "'extra'")
    assert rss < SMALL_PEAK_KB, rss


@pytest.mark.slow
def test_vit_load_refuses_an_unknown_entry_by_its_name_before_it_is_read(tmp_path):
    from hostile_util import small_checkpoint
    path = small_checkpoint(tmp_path / "c.npz", extra=np.zeros(200 << 20, np.uint8))
    result, rss = run_limited(f"import vit\nvit.load({str(path)!r})", limit_mb=None)
    refused(result, "c.npz", "'extra'")
    assert rss < SMALL_PEAK_KB, rss
