"""vit.load and TinyViT.predict against vit eval on a tiny trained run, and the predict command:
its files, its output and its refusals (exit 2, one line); vit.model.predict.top_k's order and
its refusal of a k outside the classes."""
from __future__ import annotations

import json
import os
import re
import struct
import sys
import zlib

import numpy as np
import pytest
from cli_util import run_cli

import vit
from vit.cli.main import main
from vit.cli.predict import read_input
from vit.model.predict import top_k
from vit.model.tinyvit import TinyViT
from vit.train.checkpoint import load_checkpoint
from vit.train.data import load_digits
from vit.train.loop import evaluate

SMALL = ["--dim", "16", "--heads", "2", "--mlp-dim", "32", "--quiet"]


run = run_cli


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny finished run on the bundled digits (2 epochs)."""
    folder = tmp_path_factory.mktemp("run")
    assert main([str(a) for a in ["train", "--out", folder, "--epochs", 2, *SMALL]]) == 0
    return folder / "checkpoint.npz"


@pytest.fixture(scope="module")
def saved(checkpoint, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "model.npz"
    load_checkpoint(checkpoint).model.save(path)
    return path


# ---- vit.load and TinyViT.predict --------------------------------------------------------------
def test_load_of_a_checkpoint_keeps_its_normalizer(checkpoint):
    ck = load_checkpoint(checkpoint)
    model = vit.load(checkpoint)
    assert isinstance(model, TinyViT) and model.config == ck.model.config
    np.testing.assert_array_equal(model.normalizer.mean, ck.normalizer.mean)
    np.testing.assert_array_equal(model.normalizer.std, ck.normalizer.std)
    for (name, a), (_, b) in zip(model.state_dict().items(), ck.model.state_dict().items(), strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_predict_on_raw_images_gives_the_answers_of_vit_eval(checkpoint, capsys):
    data = load_digits()
    model = vit.load(checkpoint)
    pred = model.predict(data.x_test)  # raw 0..16 pixels, (N, 1, 8, 8)
    # what `vit eval` computes: the checkpoint's normalizer, evaluate()'s batches
    ck = load_checkpoint(checkpoint)
    _, acc, expected = evaluate(ck.model, ck.normalizer(data.x_test, ck.model.dtype), data.y_test)
    assert pred.dtype == np.int64 and pred.shape == (len(data.x_test),)
    np.testing.assert_array_equal(pred, expected)
    # and the command's own printout: its accuracy and its confusion matrix
    status, out, _ = run(["eval", checkpoint], capsys)
    assert status == 0
    correct, total = map(int, re.search(r"\((\d+)/(\d+)\)", out).groups())
    assert (correct, total) == (int((pred == data.y_test).sum()), len(data.y_test))
    rows = [list(map(int, line.split()[1:])) for line in out.splitlines()[-10:]]
    confusion = np.zeros((10, 10), int)
    np.add.at(confusion, (data.y_test, pred), 1)
    np.testing.assert_array_equal(rows, confusion)


def test_every_layout_gives_the_same_answer_and_the_input_is_untouched(checkpoint):
    model = vit.load(checkpoint)
    x = load_digits().x_test[:40, 0].astype(np.uint8)  # (N, 8, 8) integers, as in the file
    before = x.copy()
    p = model.predict(x)
    np.testing.assert_array_equal(model.predict(x[:, None]), p)          # (N, 1, H, W)
    np.testing.assert_array_equal(model.predict(x[..., None]), p)        # (N, H, W, 1)
    np.testing.assert_array_equal(model.predict(x.astype(np.float64)), p)
    np.testing.assert_array_equal(x, before)


def test_probabilities_are_the_softmax_of_the_logits(checkpoint):
    model = vit.load(checkpoint)
    x = load_digits().x_test[:25]
    probs = model.predict(x, probabilities=True)
    assert probs.shape == (25, 10) and probs.dtype == np.float64
    logits = model(model.normalizer(x, model.dtype)).astype(np.float64)
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(probs, expected, rtol=64 * np.finfo(np.float64).eps)
    np.testing.assert_array_equal(probs.argmax(axis=1), model.predict(x))


def test_a_saved_model_keeps_the_checkpoints_preprocessing_and_answers(saved, checkpoint):
    ck = load_checkpoint(checkpoint)
    model = vit.load(saved)
    np.testing.assert_array_equal(model.normalizer.mean, ck.normalizer.mean)
    np.testing.assert_array_equal(model.normalizer.std, ck.normalizer.std)
    x = load_digits().x_test
    assert model.input_range == (float(load_digits().x_train.min()),
                                 float(load_digits().x_train.max())) == (0.0, 16.0)
    np.testing.assert_array_equal(model.predict(x), vit.load(checkpoint).predict(x))


def test_a_run_folder_loads_as_its_checkpoint(checkpoint):
    a, b = vit.load(checkpoint.parent), vit.load(checkpoint)
    x = load_digits().x_test[:50]
    np.testing.assert_array_equal(a.predict(x, probabilities=True),
                                  b.predict(x, probabilities=True))


def test_a_model_built_in_python_takes_its_inputs_as_given(tmp_path):
    model = TinyViT(img_size=8, patch_size=4, dim=8, num_heads=2, mlp_dim=8, num_classes=3,
                    seed=0)
    model.save(tmp_path / "m.npz")
    back = vit.load(tmp_path / "m.npz")
    assert back.normalizer is None and back.input_range is None
    x = np.random.default_rng(0).normal(size=(7, 1, 8, 8))
    np.testing.assert_array_equal(back.predict(x), model(x).argmax(axis=1))


@pytest.mark.parametrize("scale, shown", [(1 / 16, r"\[0, 1\]"), (255 / 16, r"\[0, 255\]")],
                         ids=["0..1", "0..255"])
def test_images_on_another_scale_get_one_warning_naming_the_numbers(checkpoint, scale, shown):
    import warnings
    x = load_digits().x_test * scale
    model = vit.load(checkpoint)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.predict(x)
    assert len(caught) == 1 and issubclass(caught[0].category, vit.model.predict.InputRangeWarning)
    assert re.search(shown + r".*trained on pixels in \[0, 16\]", str(caught[0].message))


def test_images_on_the_training_scale_get_no_warning(checkpoint):
    import warnings
    model = vit.load(checkpoint)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.predict(load_digits().x_test)
        model.predict(load_digits().x_test[:1])


def test_tta_averages_the_softmax_of_the_image_and_its_half_pixel_shifts(checkpoint):
    from vit.train.augment import affine
    model = vit.load(checkpoint)
    x_raw = load_digits().x_test[:60]
    x = model.normalizer(x_raw, model.dtype)
    fill = model.normalizer(np.zeros((1, 1, 1, 1)), np.float64)[0, :, 0, 0]
    expected = 0.0
    for dy, dx in [(0, 0), (0.5, 0), (-0.5, 0), (0, 0.5), (0, -0.5)]:  # docs/results.md's views
        moved = affine(x, np.broadcast_to(np.eye(2), (60, 2, 2)), np.tile([-dy, -dx], (60, 1)),
                       fill=fill)
        z = model(moved).astype(np.float64)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        expected = expected + e / e.sum(axis=1, keepdims=True) / 5
    probs = model.predict(x_raw, probabilities=True, tta=True)
    np.testing.assert_allclose(probs, expected, rtol=0,
                               atol=64 * np.finfo(np.float32).eps)
    np.testing.assert_array_equal(model.predict(x_raw, tta=True), probs.argmax(axis=1))


@pytest.mark.parametrize("images, error, match", [
    (np.zeros((3, 9, 9)), ValueError, r"got shape \(3, 9, 9\); expected \(N, 8, 8\)"),
    (np.zeros((0, 8, 8)), ValueError, "N >= 1"),
    (np.zeros((2, 3, 8, 8)), ValueError, "1x8x8 inputs"),
    (np.full((2, 8, 8), np.nan), ValueError, "NaN or infinite"),
    (np.full((2, 8, 8), 1e300), ValueError, "beyond float32"),
    (np.zeros((2, 8, 8), complex), TypeError, "real pixel values"),
])
def test_bad_images_are_refused(checkpoint, images, error, match):
    with pytest.raises(error, match=match):
        vit.load(checkpoint).predict(images)


def test_probabilities_must_be_a_bool(checkpoint):
    with pytest.raises(TypeError, match="probabilities"):
        vit.load(checkpoint).predict(np.zeros((1, 8, 8)), probabilities=1)


def test_load_keeps_the_size_bound(checkpoint, saved):
    for path in (checkpoint, saved):
        with pytest.raises(ValueError, match="parameters"):
            vit.load(path, max_parameters=100)


def test_load_refuses_what_is_not_a_model(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        vit.load(tmp_path / "nothing.npz")
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="without 'format' or 'config' entries"):
        vit.load(tmp_path / "other.npz")
    with pytest.raises(ValueError, match="is a folder but not a run folder"):
        vit.load(tmp_path)
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match="not an .npz archive"):
        vit.load(tmp_path / "text.npz")


# ---- the command ---------------------------------------------------------------------------
def test_predict_command_on_arrays(checkpoint, tmp_path, capsys):
    data = load_digits()
    x = data.x_test[:5, 0]
    np.save(tmp_path / "one.npy", x[0])                   # one (8, 8) image
    np.save(tmp_path / "batch.npy", x)                    # (5, 8, 8)
    np.savez(tmp_path / "pack.npz", images=x[:2, None])   # (2, 1, 8, 8)
    status, out, err = run(["predict", checkpoint, tmp_path / "one.npy", tmp_path / "batch.npy",
                            tmp_path / "pack.npz", "--top-k", 2], capsys)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert [line.split(": ")[0] for line in lines] == \
        [str(tmp_path / "one.npy")] + [f"{tmp_path / 'batch.npy'}[{i}]" for i in range(5)] + \
        [f"{tmp_path / 'pack.npz'}[{i}]" for i in range(2)]
    expected = vit.load(checkpoint).predict(x)
    shown = [int(line.split(": ")[1].split()[0]) for line in lines]
    assert shown == [expected[0], *expected, *expected[:2]]
    assert all(len(re.findall(r"\d \(\d+\.\d%\)", line)) == 2 for line in lines)


def test_predict_json_lines(checkpoint, tmp_path, capsys):
    x = load_digits().x_test[:3, 0]
    np.save(tmp_path / "batch.npy", x)
    status, out, _ = run(["predict", checkpoint, tmp_path / "batch.npy", "--json",
                          "--top-k", 10], capsys)
    assert status == 0
    rows = [json.loads(line) for line in out.splitlines()]
    probs = vit.load(checkpoint).predict(x, probabilities=True)
    for i, row in enumerate(rows):
        assert row["file"] == str(tmp_path / "batch.npy") and row["index"] == i
        classes = [t["class"] for t in row["top"]]
        assert sorted(classes) == list(range(10))
        np.testing.assert_allclose([t["probability"] for t in row["top"]], probs[i][classes],
                                   rtol=4 * np.finfo(np.float64).eps)
        assert classes[0] == probs[i].argmax()
        assert all(np.diff([t["probability"] for t in row["top"]]) <= 0)


def test_predict_command_on_a_picture(checkpoint, tmp_path, capsys):
    Image = pytest.importorskip("PIL.Image")
    g = np.full((60, 40), 255, np.uint8)
    g[5:55, 17:24] = 0  # a "1": a bar 50 tall, 7 wide
    Image.fromarray(g).save(tmp_path / "one.png")
    status, out, _ = run(["predict", checkpoint, tmp_path / "one.png", "--json", "--top-k", 10],
                         capsys)
    assert status == 0
    # by hand: scale 32/50 -> 32 x round(4.48) = 4 columns at left (32 - 4) // 2 = 14, so
    # columns 14..17: two of each of tiles 3 and 4, in every row of tiles: 8 and 8
    bar = np.zeros((1, 8, 8))
    bar[0, :, 3:5] = 8
    expected = vit.load(checkpoint).predict(bar, probabilities=True)[0]
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["file"] == str(tmp_path / "one.png") and row["index"] is None
    got = {t["class"]: t["probability"] for t in row["top"]}
    np.testing.assert_array_equal([got[c] for c in range(10)], expected)


def test_a_transparent_picture_is_read_on_white_paper(checkpoint, tmp_path, capsys):
    Image = pytest.importorskip("PIL.Image")
    rgba = np.zeros((60, 40, 4), np.uint8)   # transparent black everywhere ...
    rgba[5:55, 17:24, 3] = 255               # ... but the opaque black bar of the "1" above
    Image.fromarray(rgba, "RGBA").save(tmp_path / "clear.png")
    g = np.full((60, 40), 255, np.uint8)
    g[5:55, 17:24] = 0
    Image.fromarray(g).save(tmp_path / "plain.png")
    config = vit.load(checkpoint).config
    clear = read_input(tmp_path / "clear.png", config)
    np.testing.assert_array_equal(clear, read_input(tmp_path / "plain.png", config))
    assert clear.sum() > 0


def test_other_models_take_pictures_of_their_own_size(tmp_path, capsys):
    Image = pytest.importorskip("PIL.Image")
    model = TinyViT(img_size=16, patch_size=4, in_chans=3, num_classes=4, seed=0)
    model.save(tmp_path / "rgb.npz")
    pixels = np.random.default_rng(1).integers(0, 256, (16, 16, 3), dtype=np.uint8)
    Image.fromarray(pixels, "RGB").save(tmp_path / "a.png")
    status, out, _ = run(["predict", tmp_path / "rgb.npz", tmp_path / "a.png", "--json"], capsys)
    assert status == 0
    (row,) = [json.loads(line)["top"] for line in out.splitlines()]
    assert len(row) == 3  # the default top 3
    expected = model.predict(pixels[None], probabilities=True)[0]  # (N, H, W, C) layout
    assert [t["class"] for t in row] == list(np.argsort(-expected, kind="stable")[:3])
    np.testing.assert_array_equal([t["probability"] for t in row],
                                  np.sort(expected)[::-1][:3])
    Image.fromarray(pixels[:, :12], "RGB").save(tmp_path / "narrow.png")
    refusal(capsys, [tmp_path / "rgb.npz", tmp_path / "narrow.png"],
            "a 12x16 picture; expected 16x16 pixels")


# ---- refusals: exit 2, one line, no traceback ----------------------------------------------------
def png_header(width: int, height: int) -> bytes:
    """A grayscale PNG declaring width x height whose pixel data stops after 10 bytes."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit gray, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(10)))


def refusal(capsys, args, match: str) -> None:
    status, out, err = run(["predict", *args], capsys)
    assert status == 2, (status, err)
    assert err.count("\n") == 1 and "Traceback" not in err and out == ""
    assert re.search(match, err), err


def test_refusals(checkpoint, tmp_path, capsys):
    np.save(tmp_path / "ok.npy", np.zeros((8, 8)))
    refusal(capsys, [checkpoint, tmp_path / "missing.png"], "no such file")
    refusal(capsys, [tmp_path / "missing.npz", tmp_path / "ok.npy"], "does not exist")
    (tmp_path / "notes.png").write_text("not a picture")
    refusal(capsys, [checkpoint, tmp_path / "notes.png"], "not a PNG or JPEG picture")
    np.save(tmp_path / "seven.npy", np.zeros((7, 7)))
    refusal(capsys, [checkpoint, tmp_path / "seven.npy"], r"got shape \(1, 7, 7\).*1x8x8")
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    refusal(capsys, [checkpoint, tmp_path / "objects.npy"], "not a readable .npy")
    np.save(tmp_path / "complex.npy", np.zeros((8, 8), complex))
    refusal(capsys, [checkpoint, tmp_path / "complex.npy"], "dtype complex128; expected real")
    np.save(tmp_path / "words.npy", np.array(["a", "b"]))
    refusal(capsys, [checkpoint, tmp_path / "words.npy"], "dtype <U1; expected real")
    # a header declaring 10**12 float64 (8 TB) over 64 bytes: refused before any allocation
    header = np.lib.format.header_data_from_array_1_0(np.zeros(8))
    header["shape"] = (10**12,)
    with open(tmp_path / "huge.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        f.write(bytes(64))
    refusal(capsys, [checkpoint, tmp_path / "huge.npy"], r"declares \(1000000000000,\) of float64")
    (tmp_path / "cut.npy").write_bytes((tmp_path / "ok.npy").read_bytes()[:-8])
    refusal(capsys, [checkpoint, tmp_path / "cut.npy"], "but 504 bytes follow")
    np.savez(tmp_path / "two.npz", a=np.zeros((8, 8)), b=np.zeros((8, 8)))
    refusal(capsys, [checkpoint, tmp_path / "two.npz"], "holds 2 arrays")
    refusal(capsys, [checkpoint, tmp_path / "ok.npy", "--top-k", 11],
            "--top-k: got 11; expected 1 to 10")
    refusal(capsys, [checkpoint, tmp_path / "ok.npy", "--top-k", 0], "--top-k: got 0")
    refusal(capsys, [checkpoint, tmp_path / "ok.npy", "--top-k", "two"], "--top-k")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.npy")
        refusal(capsys, [checkpoint, tmp_path / "fifo.npy"], "FIFO")


def test_a_huge_picture_is_refused_from_its_header(checkpoint, tmp_path, capsys):
    pytest.importorskip("PIL")
    # 5000 x 4000 = 20 M pixels: above the bound (16.8 M), below Pillow's own (89 M); no
    # pixel data follows, so anything that decoded it would fail as truncated instead
    (tmp_path / "big.png").write_bytes(png_header(5000, 4000))
    refusal(capsys, [checkpoint, tmp_path / "big.png"], r"5000x4000 picture \(20,000,000 pixels\)")
    (tmp_path / "bomb.png").write_bytes(png_header(100_000, 100_000))  # Pillow's bomb limit
    refusal(capsys, [checkpoint, tmp_path / "bomb.png"], "too large a picture")
    (tmp_path / "cut.png").write_bytes(png_header(64, 64))
    refusal(capsys, [checkpoint, tmp_path / "cut.png"], "truncated or corrupt")


def test_without_pillow_pictures_name_the_extra(checkpoint, tmp_path, capsys, monkeypatch):
    (tmp_path / "a.png").write_bytes(png_header(8, 8))
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL -> ImportError
    status, _, err = run(["predict", checkpoint, tmp_path / "a.png"], capsys)
    assert status == 1 and err.count("\n") == 1 and "minigrad-vit[images]" in err


def test_a_checkpoint_written_before_the_input_range_loads_and_says_so(checkpoint, tmp_path):
    from vit.model.modelfile import MissingEntryWarning
    with np.load(checkpoint) as f:
        arrays = {k: f[k] for k in f.files if k != "input/range"}
    np.savez(tmp_path / "old.npz", **arrays)
    with pytest.warns(MissingEntryWarning, match=r"old.npz: no 'input/range' entry"):
        model = vit.load(tmp_path / "old.npz")
    assert model.input_range is None and model.normalizer is not None
    x = load_digits().x_test
    np.testing.assert_array_equal(model.predict(x), vit.load(checkpoint).predict(x))


def test_a_jpeg_of_thousands_of_scans_is_refused_before_decoding(tmp_path):
    """Decoding's CPU is bounded: a progressive JPEG whose last scan is repeated 2,000 times
    (a few hundred KB; each scan a pass over the image) is refused from its markers."""
    pytest.importorskip("PIL")
    from PIL import Image

    from vit.io.images import jpeg_scans, open_picture
    pixels = (np.random.default_rng(0).random((64, 64)) * 255).astype(np.uint8)
    Image.fromarray(pixels).save(tmp_path / "p.jpg", "JPEG", progressive=True)
    data = (tmp_path / "p.jpg").read_bytes()
    last = data.rindex(b"\xff\xda")
    hostile = data[:-2] + data[last:-2] * 2000 + b"\xff\xd9"
    (tmp_path / "h.jpg").write_bytes(hostile)
    assert jpeg_scans(data) == 6 and jpeg_scans(hostile) == 2006
    # a stray byte after a segment, where a marker belongs: libjpeg skips it (a warning) and
    # decodes past it, so it must not end the count
    stray = b"\xff\xfe\x00\x03x" + b"\x00"  # a comment segment, then the stray byte
    assert jpeg_scans(data[:-2] + (stray + data[last:-2]) * 2000 + b"\xff\xd9") == 2006
    open_picture(str(tmp_path / "p.jpg"))
    with pytest.raises(ValueError, match="h.jpg: a JPEG of 2,006 scans.*expected at most 1,000"):
        open_picture(str(tmp_path / "h.jpg"))


# ---- top_k ----------------------------------------------------------------------------------
P = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])


@pytest.mark.parametrize("k, error", [(-1, ValueError), (0, ValueError), (4, ValueError),
                                      (1.5, TypeError), (True, TypeError)])
def test_top_k_refuses_a_k_outside_the_classes(k, error):
    # k = -1 returned K - 1 classes (order[:, :-1]) and k = 0 none, silently
    with pytest.raises(error, match="top_k k"):
        top_k(P, k)


def test_top_k_orders_by_probability_then_class():
    classes, probs = top_k(P, 3)
    np.testing.assert_array_equal(classes, [[1, 2, 0], [0, 1, 2]])
    np.testing.assert_array_equal(probs, [[0.6, 0.3, 0.1], [0.5, 0.25, 0.25]])
