"""Property tests (hypothesis) of the ViT's pieces: ``vit_block`` against the independent
reference over random shapes, and ``patchify`` / ``unpatchify`` as a bijection, both ways,
on arrays and on Tensors. The ops' properties are in
tests/minigrad/ops/test_all_ops_hypothesis.py."""
from __future__ import annotations

import numpy as np
import vit_reference as ref
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import minigrad as mg
from vit import patchify, unpatchify, vit_block

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**32 - 1)


# ---- vit_block against the reference ---------------------------------------------------------
@SETTINGS
@given(n=st.integers(1, 3), t=st.integers(1, 5), heads=st.integers(1, 3), d=st.integers(1, 3),
       f=st.integers(1, 6), scale=st.sampled_from([0.5, 1.0, 3.0]), seed=SEEDS)
def test_vit_block_equals_the_reference(n, t, heads, d, f, scale, seed):
    rng = np.random.default_rng(seed)
    D = heads * d
    assume(D >= 2)  # a single feature normalizes to 0: a degenerate LayerNorm
    x = scale * rng.standard_normal((n, t, D))
    weights = ref.block_weights(rng, D, f)
    want = ref.vit_block(x, *weights, heads)
    got = vit_block(x, *weights, heads)
    assert got.dtype == np.float64 and got.shape == (n, t, D)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)
    got32 = vit_block(x.astype(np.float32), *[w.astype(np.float32) for w in weights], heads)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, want, rtol=2e-3, atol=2e-3 * scale)


# ---- patchify / unpatchify --------------------------------------------------------------------
PATCH = dict(b=st.integers(1, 3), c=st.integers(1, 3), p=st.integers(1, 4), gh=st.integers(1, 3),
             gw=st.integers(1, 3), seed=SEEDS)


@SETTINGS
@given(**PATCH)
def test_unpatchify_inverts_patchify(b, c, p, gh, gw, seed):
    x = np.random.default_rng(seed).standard_normal((b, c, gh * p, gw * p))
    tokens = patchify(x, p)
    np.testing.assert_array_equal(tokens, ref.patchify_loop(x, p))
    back = unpatchify(tokens, p, c, (gh * p, gw * p))
    assert back.shape == x.shape and np.array_equal(back, x)


@SETTINGS
@given(**PATCH)
def test_patchify_inverts_unpatchify(b, c, p, gh, gw, seed):
    tokens = np.random.default_rng(seed).standard_normal((b, gh * gw, p * p * c))
    images = unpatchify(tokens, p, c, (gh * p, gw * p))
    assert images.shape == (b, c, gh * p, gw * p)
    assert np.array_equal(patchify(images, p), tokens)
    assert len(np.unique(images)) == tokens.size  # every value lands somewhere, once


@SETTINGS
@given(**PATCH)
def test_the_round_trip_on_tensors_passes_gradients_through_unchanged(b, c, p, gh, gw, seed):
    rng = np.random.default_rng(seed)
    x = mg.Tensor(rng.standard_normal((b, c, gh * p, gw * p)), requires_grad=True)
    tokens = patchify(x, p)
    back = unpatchify(tokens, p, c, (gh * p, gw * p))
    assert isinstance(back, mg.Tensor) and np.array_equal(back.data, x.data)
    g = rng.standard_normal(x.shape)
    back.backward(g)
    np.testing.assert_array_equal(x.grad, g)  # the composition is the identity
