"""vit.augment: the batched bilinear affine against SciPy per image, identity, seeding, inputs
untouched, bad arguments; and the training options that use it."""
from __future__ import annotations

import numpy as np
import pytest

from vit.train.augment import affine, random_affine, random_affine_params
from vit.train.loop import train
from vit.train.options import TrainOptions

ndimage = pytest.importorskip("scipy.ndimage")


def _reference(x, matrix, offset, fill):
    """One scipy.ndimage.affine_transform per image and channel (order 1: bilinear; the
    'grid-constant' mode reads ``fill`` outside the image and interpolates towards it)."""
    out = np.empty(x.shape, np.float64)
    fill = np.broadcast_to(np.asarray(fill, np.float64), (x.shape[1],))
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            out[b, c] = ndimage.affine_transform(x[b, c].astype(np.float64), matrix[b], offset[b],
                                                 order=1, mode="grid-constant", cval=fill[c],
                                                 prefilter=False)
    return out


def _tol(dtype, x):
    # a bilinear sample sums 4 products; the float32 result is one rounding of the float64 one
    return 16 * np.finfo(dtype).eps * (1 + np.abs(x).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fill", [0.0, -1.25, "per-channel"])
def test_random_transforms_match_scipy_per_image(dtype, fill):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(7, 2, 8, 6)).astype(dtype)  # H != W: rows and columns not mixed up
    fill = [0.5, -2.0] if fill == "per-channel" else fill
    matrix, offset = random_affine_params(7, (8, 6), rng, rotate=40, scale=0.3, translate=2.5)
    got = affine(x, matrix, offset, fill=fill)
    assert got.dtype == dtype and got.shape == x.shape
    np.testing.assert_allclose(got, _reference(x, matrix, offset, fill), rtol=0,
                               atol=_tol(dtype, x))


def test_arbitrary_matrices_and_far_outside_points_match_scipy():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 1, 5, 5))
    matrix = rng.normal(size=(5, 2, 2)) * 2
    offset = rng.normal(size=(5, 2)) * 6  # many points beyond the image: only fill there
    np.testing.assert_allclose(affine(x, matrix, offset, fill=0.75),
                               _reference(x, matrix, offset, 0.75), rtol=0, atol=_tol(float, x))


def test_identity_returns_the_images_exactly():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 3, 8, 8)).astype(np.float32)
    eye = np.broadcast_to(np.eye(2), (4, 2, 2))
    assert np.array_equal(affine(x, eye, np.zeros((4, 2)), fill=9.0), x)
    # zero ranges draw the identity, and the pixel values survive bit for bit
    assert np.array_equal(random_affine(x, rng, fill=9.0), x)


def test_a_whole_pixel_translation_moves_the_image_and_fills_the_edge():
    x = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
    out = affine(x, np.eye(2)[None], np.array([[0.0, -1.0]]), fill=-5.0)  # src col = col - 1
    assert np.array_equal(out[0, 0, :, 1:], x[0, 0, :, :3])
    assert np.array_equal(out[0, 0, :, 0], np.full(4, -5.0))
    half = affine(x, np.eye(2)[None], np.array([[0.5, 0.0]]))  # halfway between two rows
    assert np.allclose(half[0, 0, :3], (x[0, 0, :3] + x[0, 0, 1:]) / 2)
    assert np.allclose(half[0, 0, 3], x[0, 0, 3] / 2)  # blends into the zero fill


def test_rotation_by_90_degrees_about_the_centre():
    x = np.random.default_rng(6).normal(size=(1, 1, 5, 5))
    matrix, offset = random_affine_params(1, (5, 5), np.random.default_rng(0), rotate=0.0)
    angle = np.pi / 2  # R(-angle): the same formula random_affine_params uses, pinned angle
    m = np.array([[[np.cos(angle), np.sin(angle)], [-np.sin(angle), np.cos(angle)]]])
    centre = np.array([2.0, 2.0])
    out = affine(x, m, (centre - m[0] @ centre)[None])
    assert np.allclose(out[0, 0], np.rot90(x[0, 0], k=1), atol=1e-12) or \
        np.allclose(out[0, 0], np.rot90(x[0, 0], k=-1), atol=1e-12)


def test_parameters_stay_in_their_ranges():
    rng = np.random.default_rng(7)
    matrix, offset = random_affine_params(4000, (8, 8), rng, rotate=10, scale=0.1,
                                          translate=0.5)
    zoom = 1 / np.sqrt(np.abs(np.linalg.det(matrix)))
    angle = np.degrees(np.arctan2(matrix[:, 0, 1], matrix[:, 0, 0]))
    assert 0.9 - 1e-12 <= zoom.min() < 0.92 and 1.08 < zoom.max() <= 1.1 + 1e-12
    assert -10 - 1e-9 <= angle.min() < -9.5 and 9.5 < angle.max() <= 10 + 1e-9
    centre = np.full(2, 3.5)  # recover t from offset = centre - M (centre + t)
    t = np.linalg.solve(matrix, (centre - offset)[..., None])[..., 0] - centre
    assert np.abs(t).max() <= 0.5 + 1e-9 and np.abs(t).max() > 0.49


def test_seeded_reproducible_and_the_input_untouched():
    x = np.random.default_rng(8).normal(size=(6, 1, 8, 8)).astype(np.float32)
    before = x.copy()
    a = random_affine(x, np.random.default_rng(1), rotate=10, scale=0.1, translate=0.5)
    b = random_affine(x, np.random.default_rng(1), rotate=10, scale=0.1, translate=0.5)
    c = random_affine(x, np.random.default_rng(2), rotate=10, scale=0.1, translate=0.5)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.array_equal(x, before) and a is not x and not np.shares_memory(a, x)


def test_a_batch_is_transformed_image_by_image():
    """Image i of a batch gets the transform of draw i: the same as alone with those params."""
    rng = np.random.default_rng(9)
    x = rng.normal(size=(5, 1, 8, 8))
    matrix, offset = random_affine_params(5, (8, 8), np.random.default_rng(1), rotate=20)
    whole = affine(x, matrix, offset)
    for i in range(5):
        assert np.array_equal(whole[i:i + 1], affine(x[i:i + 1], matrix[i:i + 1],
                                                     offset[i:i + 1]))


@pytest.mark.parametrize("call, error, words", [
    (lambda x, r: affine(x.astype(int), np.ones((2, 2, 2)), np.zeros((2, 2))), TypeError,
     ["x", "int"]),
    (lambda x, r: affine([[1.0]], np.ones((2, 2, 2)), np.zeros((2, 2))), TypeError, ["x"]),
    (lambda x, r: affine(x[0], np.ones((2, 2, 2)), np.zeros((2, 2))), ValueError,
     ["x", "(B, C, H, W)"]),
    (lambda x, r: affine(x, np.ones((3, 2, 2)), np.zeros((2, 2))), ValueError,
     ["matrix", "(3, 2, 2)"]),
    (lambda x, r: affine(x, np.full((2, 2, 2), np.nan), np.zeros((2, 2))), ValueError,
     ["matrix", "finite"]),
    (lambda x, r: affine(x, np.ones((2, 2, 2)), np.zeros(2)), ValueError, ["offset"]),
    (lambda x, r: affine(x, np.ones((2, 2, 2)), np.zeros((2, 2)), fill=[1.0, 2.0]),
     ValueError, ["fill", "3"]),
    (lambda x, r: affine(x, np.ones((2, 2, 2)), np.zeros((2, 2)), fill=np.inf), ValueError,
     ["fill"]),
    (lambda x, r: affine(x, np.ones((2, 2, 2)), np.zeros((2, 2)), fill="zero"), TypeError,
     ["fill"]),
    (lambda x, r: random_affine(x, 0, rotate=5), TypeError, ["rng", "Generator"]),
    (lambda x, r: random_affine(x, r, rotate=-1), ValueError, ["rotate", "-1"]),
    (lambda x, r: random_affine(x, r, rotate=200), ValueError, ["rotate", "200"]),
    (lambda x, r: random_affine(x, r, scale=1.0), ValueError, ["scale", "[0, 1)"]),
    (lambda x, r: random_affine(x, r, translate=np.nan), ValueError, ["translate", "nan"]),
    (lambda x, r: random_affine(x, r, translate="1"), TypeError, ["translate", "str"]),
    (lambda x, r: random_affine(x, r, rotate=True), TypeError, ["rotate", "bool"]),
    (lambda x, r: random_affine_params(0, (8, 8), r), ValueError, ["n", "0"]),
])
def test_bad_arguments_are_named(call, error, words):
    x = np.zeros((2, 3, 4, 4))
    with pytest.raises(error) as info:
        call(x, np.random.default_rng(0))
    assert all(w in str(info.value) for w in words), str(info.value)


def _tiny(**kw) -> TrainOptions:
    return TrainOptions(dim=8, heads=2, mlp_dim=8, epochs=1, batch_size=128, mixup=0.0, **kw)


def test_training_with_affine_augmentation_is_seeded_and_changes_the_run(tmp_path):
    def final(name, **kw):
        return train(_tiny(**kw), tmp_path / name, quiet=True, log=lambda _: None)[-1]

    plain = final("plain", rotate=0.0, scale=0.0, translate=0.0)
    a = final("a", rotate=10.0, scale=0.1, translate=0.5)
    b = final("b", rotate=10.0, scale=0.1, translate=0.5)
    assert a == {**b, "seconds": a["seconds"]}
    assert a["train_loss"] != plain["train_loss"]  # the batches were transformed


def test_the_cli_rejects_bad_augmentation_values(tmp_path, capsys):
    from vit.cli.main import main
    for args in (["--rotate", "181"], ["--rotate", "-1"], ["--scale", "1"],
                 ["--translate", "-0.5"], ["--translate", "nan"]):
        with pytest.raises(SystemExit) as info:
            main(["train", *args, "--out", str(tmp_path / "r")])
        err = capsys.readouterr().err
        assert info.value.code == 2 and args[0] in err and args[1] in err, err
    assert not (tmp_path / "r").exists()


def test_a_checkpoint_saved_before_the_affine_options_resumes_without_augmentation():
    saved = {k: v for k, v in TrainOptions().__dict__.items()
             if k not in ("rotate", "scale", "translate")}
    old = TrainOptions.from_dict(saved)
    assert (old.rotate, old.scale, old.translate) == (0.0, 0.0, 0.0)
    assert TrainOptions.from_dict(TrainOptions().__dict__) == TrainOptions()
