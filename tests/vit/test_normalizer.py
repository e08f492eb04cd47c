"""vit.model.normalizer.Normalizer: per-channel statistics of the training images, computed in
float64 (float32 sums would lose the small part of 1e4 + 0.5, or overflow for pixels near
3e38) in chunks that agree with the whole array, in memory near the images' own float32 size;
statistics that are not finite, not positive or would overflow the normalized inputs are
refused."""
from __future__ import annotations

import numpy as np
import pytest
from hostile_util import run_limited  # tests/reliability/, on sys.path (tests/conftest.py)

from vit.model.normalizer import Normalizer


def test_normalizer_uses_training_statistics_per_channel():
    rng = np.random.default_rng(0)
    x = rng.normal([1.0, -3.0], [2.0, 0.5], size=(500, 4, 4, 2)).transpose(0, 3, 1, 2)
    norm = Normalizer.fit(x)
    np.testing.assert_allclose(norm.mean, x.mean(axis=(0, 2, 3)))
    z = norm(x, np.float32)
    assert z.dtype == np.float32
    np.testing.assert_allclose(z.mean(axis=(0, 2, 3)), 0, atol=1e-5)
    np.testing.assert_allclose(z.std(axis=(0, 2, 3)), 1, atol=1e-5)
    assert Normalizer.fit(np.zeros((3, 1, 2, 2))).std.tolist() == [1.0]  # no division by 0


def test_normalizer_fit_is_finite_and_exact_for_large_float32_pixels():
    from vit.model.normalizer import Normalizer
    rng = np.random.default_rng(0)
    x = (rng.random((64, 2, 8, 8)) * 3e38).astype(np.float32)
    n = Normalizer.fit(x)
    ref = x.astype(np.float64)
    assert np.all(np.isfinite(n.std)) and n.std.dtype == np.float64
    np.testing.assert_allclose(n.mean, ref.mean(axis=(0, 2, 3)), rtol=1e-12)
    np.testing.assert_allclose(n.std, ref.std(axis=(0, 2, 3)), rtol=1e-12)
    out = n(x)
    assert np.isfinite(out).all() and 0.5 < out.std() < 2.0


def test_normalizer_fit_of_float32_uses_float64_sums():
    """1e7 + small values: a float32 mean loses the small part, float64 keeps it."""
    from vit.model.normalizer import Normalizer
    x = np.full((1000, 1, 4, 4), 1e4, np.float32)
    x[::2] += 1
    n = Normalizer.fit(x)
    assert n.mean[0] == 1e4 + 0.5 and n.std[0] == 0.5


@pytest.mark.parametrize("mean, std", [([0.0], [np.inf]), ([np.nan], [1.0]), ([0.0], [0.0]),
                                       ([0.0], [-1.0]), ([[0.0]], [[1.0]])])
def test_normalizer_refuses_bad_statistics(mean, std):
    from vit.model.normalizer import Normalizer
    with pytest.raises(ValueError, match="Normalizer.*expected"):
        Normalizer(np.array(mean), np.array(std))


def test_chunked_normalizing_equals_the_whole_array_in_float64(monkeypatch):
    from vit.model import normalizer as vdata
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((37, 2, 5, 5)) * 1e3 + 5e3).astype(np.float32)
    whole = x.astype(np.float64)
    mean, std = whole.mean(axis=(0, 2, 3)), whole.std(axis=(0, 2, 3))
    expected = ((whole - mean[:, None, None]) / std[:, None, None]).astype(np.float32)
    monkeypatch.setattr(vdata, "CHUNK_ELEMENTS", 3 * 50)  # three images a chunk: 13 chunks
    norm = vdata.Normalizer.fit(x)
    got = norm(x)
    eps = np.finfo(np.float64).eps
    assert np.allclose(norm.mean, mean, rtol=64 * eps, atol=0)
    assert np.allclose(norm.std, std, rtol=64 * eps * 1e4, atol=0)  # cancellation of 5e3 +- 1e3
    assert np.allclose(got, expected, rtol=0, atol=4 * np.finfo(np.float32).eps * 4)


# slow: a child process; fast: test_chunked_normalizing_equals_the_whole_array_in_float64
@pytest.mark.slow
def test_normalizing_a_big_set_stays_near_its_float32_size():
    """60000 28x28 float32 images (188 MB): before, fit and normalize made two float64 copies
    (376 MB each)."""
    body = ("import numpy as np\nfrom vit.model.normalizer import Normalizer\n"
            "x = np.ones((60000, 1, 28, 28), np.float32)\n"
            "n = Normalizer.fit(x)\ny = n(x)\nassert y.dtype == np.float32")
    result, rss = run_limited(body, limit_mb=None)
    assert result == "ok", result
    assert rss < 110_000 + 2 * 188_000 + 100_000, rss  # import + x + y + chunks


def test_the_normalizer_refuses_what_would_overflow_normalized_inputs():
    from vit.model.normalizer import Normalizer
    with pytest.raises(ValueError, match="std"):
        Normalizer(np.zeros(1), np.array([1e-300]))
    with pytest.raises(ValueError, match="mean"):
        Normalizer(np.array([1e39]), np.ones(1))
    f32 = np.finfo(np.float32)
    Normalizer(np.array([float(f32.max)]), np.array([float(f32.tiny)]))  # the edges hold
