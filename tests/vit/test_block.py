"""spec/vit_block.md, sentence by sentence, against the independent reference in vit_reference."""
from __future__ import annotations

import math

import numpy as np
import pytest
import vit_reference as ref
from ulps import assert_close_ulps, ulp_tolerance

import minigrad as mg
from minigrad import Tensor
from vit import vit_block

N, T, D, F, H = 2, 5, 8, 12, 2


@pytest.fixture
def args():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((N, T, D))] + ref.block_weights(rng, D, F)


def differs(a, b, at_least=1e-6):
    return float(np.max(np.abs(a - b))) > at_least


# ---- shapes and the full computation -------------------------------------------------------
@pytest.mark.parametrize("n,t,d,f,h", [(2, 5, 8, 12, 2), (1, 1, 4, 3, 1), (3, 7, 12, 5, 4),
                                       (2, 3, 6, 6, 6)])
def test_matches_reference_with_loop_over_heads(n, t, d, f, h):
    rng = np.random.default_rng(n * 100 + d)
    x = rng.standard_normal((n, t, d))
    ws = ref.block_weights(rng, d, f)
    out = vit_block(x, *ws, h)
    assert isinstance(out, np.ndarray) and out.shape == (n, t, d)
    np.testing.assert_allclose(out, ref.vit_block(x, *ws, h), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("variant", [
    dict(mlp_input="x"),  # pre-LN order: the MLP normalizes y, not x
    dict(scale=1 / math.sqrt(D)),  # scale 1/sqrt(D/H), not 1/sqrt(D)
    dict(scale=1.0),
    dict(split="interleaved"),  # heads are consecutive chunks
    dict(head_order="reversed"),  # ... concatenated in their original order
    dict(causal=True),  # no causal mask
    dict(gelu=ref.gelu_erf),  # the tanh approximation, not erf
    dict(ddof=1),  # population variance
    dict(eps=1e-6),  # eps 1e-5
], ids=lambda v: "-".join(f"{k}={getattr(w, '__name__', w)}" for k, w in v.items()))
def test_each_wrong_variant_is_detected(args, variant):
    """The reference test above would fail for each of these plausible mistakes."""
    if "eps" in variant or "ddof" in variant:  # small-variance tokens make eps / ddof visible
        args = [args[0] * 1e-3] + args[1:]
    out = vit_block(*args, H)
    np.testing.assert_allclose(out, ref.vit_block(*args, H), rtol=1e-10, atol=1e-12)
    assert differs(out, ref.vit_block(*args, H, **variant), 1e-8)


def test_layer_norm_is_parameter_free_population_variance_eps_1e_5():
    """One token, w_q = w_k = 0, w_v = w_o = I and zero MLP: out - x = LN(x) exactly as specified."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 1, D)) * np.array([1.0, 1e-2, 1e-3])[:, None, None] + 5.0
    eye, zero = np.eye(D), np.zeros((D, D))
    out = vit_block(x, zero, zero, eye, eye, np.zeros((D, F)), np.zeros((F, D)), H)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    np.testing.assert_allclose(out - x, (x - mean) / np.sqrt(var + 1e-5), rtol=1e-9, atol=1e-9)
    sample = (x - mean) / np.sqrt(x.var(-1, ddof=1, keepdims=True) + 1e-5)
    assert differs(out - x, sample, 1e-3)


def test_each_token_is_normalized_on_its_own():
    """w_q = w_k = 0 gives uniform attention: out - x = mean over tokens of LN(x_t), each token
    normalized over its own D features (not over the sequence or the batch)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, D)) * np.array([1.0, 30.0, 0.1])[:, None] + [[2.0], [-4.0], [0]]
    eye, zero = np.eye(D), np.zeros((D, D))
    out = vit_block(x, zero, zero, eye, eye, np.zeros((D, F)), np.zeros((F, D)), H)
    per_token = [(x[n, t] - x[n, t].mean()) / np.sqrt(x[n, t].var() + 1e-5)
                 for n in range(2) for t in range(3)]
    expected = np.array(per_token).reshape(2, 3, D).mean(axis=1, keepdims=True)
    np.testing.assert_allclose(out - x, np.broadcast_to(expected, x.shape), rtol=1e-9, atol=1e-9)


def test_no_causal_mask_later_token_changes_earlier_output(args):
    x = args[0]
    out = vit_block(x, *args[1:], H)
    x2 = x.copy()
    x2[:, -1, 0] += 1.0  # (a shift of all features would vanish in LN)
    out2 = vit_block(x2, *args[1:], H)
    assert differs(out[:, 0], out2[:, 0], 1e-6)
    # Each example on its own: batched with another example or alone, example 0 gives the
    # same output up to rounding. Not bit for bit: BLAS may round a row differently when
    # other rows share its call (docs/reliability.md, "Bit-for-bit guarantees").
    other = x.copy()
    other[1] = np.random.default_rng(7).standard_normal(x.shape[1:])
    assert_close_ulps(vit_block(x[:1], *args[1:], H)[0], out[0])
    assert_close_ulps(vit_block(other, *args[1:], H)[0], out[0])
    # ... and that tolerance is far below the effect of the later token, which it rejects
    assert ulp_tolerance(out[0]) < 1e-6 * np.abs(out2[0, 0] - out[0, 0]).max()
    with pytest.raises(AssertionError):
        assert_close_ulps(out2[0], out[0])


def test_stable_softmax_huge_scores_stay_finite(args):
    x = args[0]
    big = [1e4 * np.eye(D), 1e4 * np.eye(D)] + args[3:]  # scores ~ 1e8 / sqrt(D/H)
    out = vit_block(x, *big, H)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, ref.vit_block(x, *big, H), rtol=1e-8, atol=1e-8)


def test_no_biases_constant_tokens_pass_through():
    """A token whose features are all equal normalizes to 0: without biases nothing is added."""
    rng = np.random.default_rng(2)
    x = np.broadcast_to(rng.standard_normal((N, T, 1)), (N, T, D)).copy()
    out = vit_block(x, *ref.block_weights(rng, D, F), H)
    np.testing.assert_allclose(out, x, rtol=0, atol=1e-12)


def test_zero_stage_outputs_return_x_exactly(args):
    ws = list(args[1:])
    ws[3], ws[5] = np.zeros((D, D)), np.zeros((F, D))
    for dtype in (np.float64, np.float32, np.float16):
        x = args[0].astype(dtype)
        out = vit_block(x, *[w.astype(dtype) for w in ws], H)
        assert out.dtype == dtype and np.array_equal(out, x)


def test_inputs_unchanged(args):
    copies = [a.copy() for a in args]
    vit_block(*args, H)
    ts = [Tensor(a, requires_grad=True) for a in args]
    vit_block(*ts, H).sum().backward()
    for a, c in zip(args, copies, strict=True):
        np.testing.assert_array_equal(a, c)


# ---- dtypes -------------------------------------------------------------------------------
def test_float32_preserved_and_close_to_float64(args):
    out = vit_block(*[a.astype(np.float32) for a in args], H)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref.vit_block(*args, H), rtol=1e-4, atol=1e-4)


def test_float16_is_computed_in_float32_and_rounded(args):
    a16 = [a.astype(np.float16) for a in args]
    out = vit_block(*a16, H)
    assert out.dtype == np.float16
    expected = vit_block(*[a.astype(np.float32) for a in a16], H).astype(np.float16)
    np.testing.assert_array_equal(out, expected)
    t = vit_block(*[Tensor(a) for a in a16], H)
    assert isinstance(t, Tensor) and t.dtype == np.float16
    np.testing.assert_array_equal(t.data, expected)


# ---- Tensors: differentiable --------------------------------------------------------------
def test_tensor_in_tensor_out_same_values(args):
    ts = [Tensor(a, requires_grad=True) for a in args]
    out = vit_block(*ts, H)
    assert isinstance(out, Tensor) and out.requires_grad and out.dtype == np.float64
    np.testing.assert_allclose(out.data, ref.vit_block(*args, H), rtol=1e-10, atol=1e-10)
    mixed = vit_block(ts[0], *args[1:], H)  # a single Tensor argument is enough
    assert isinstance(mixed, Tensor) and mixed.requires_grad


def test_gradcheck_x_and_all_six_weights():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4))
    ws = ref.block_weights(rng, 4, 5)
    ts = [Tensor(a, requires_grad=True) for a in [x] + ws]
    report = mg.gradcheck(lambda *a: vit_block(*a, 2), ts, atol=1e-7, rtol=1e-6)
    assert report.ok and len(report.inputs) == 7


def test_gradient_wrt_x_matches_finite_differences_of_reference(args):
    """Not only self-consistent: the gradient is that of the specified function."""
    x = args[0][:1, :3]
    v = np.random.default_rng(4).standard_normal(x.shape)
    xt = Tensor(x.copy(), requires_grad=True)
    (vit_block(xt, *args[1:], H) * v).sum().backward()
    num = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[j] = 1e-6
        num[j] = np.sum((ref.vit_block(x + e, *args[1:], H) - ref.vit_block(x - e, *args[1:], H))
                        * v) / 2e-6
    np.testing.assert_allclose(xt.grad, num, rtol=1e-6, atol=1e-7)


# ---- argument errors ----------------------------------------------------------------------
@pytest.mark.parametrize("heads,err", [(0, ValueError), (-1, ValueError), (3, ValueError),
                                       (16, ValueError), (2.0, TypeError), (True, TypeError),
                                       ("2", TypeError), (None, TypeError)])
def test_num_heads_must_be_a_positive_integer_dividing_D(args, heads, err):
    with pytest.raises(err, match="num_heads"):
        vit_block(*args, heads)


@pytest.mark.parametrize("heads", [1, 2, 4, 8, np.int64(4)])
def test_valid_num_heads(args, heads):
    np.testing.assert_allclose(vit_block(*args, heads), ref.vit_block(*args, int(heads)),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("index,shape,name", [
    (0, (T, D), "x"), (0, (1, N, T, D), "x"), (0, (0, T, D), "x"),
    (1, (D, D + 1), "w_q"), (2, (D + 1, D), "w_k"), (3, (D,), "w_v"), (4, (D, D, 1), "w_o"),
    (5, (D + 1, F), "w_mlp1"), (5, (D, 0), "w_mlp1"), (6, (F + 1, D), "w_mlp2"),
    (6, (F, D + 1), "w_mlp2"),
])
def test_wrong_rank_or_inconsistent_shapes_name_the_argument(args, index, shape, name):
    args[index] = np.ones(shape)
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        vit_block(*args, H)


@pytest.mark.parametrize("index,name", [(0, "x"), (3, "w_v"), (6, "w_mlp2")])
@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.complex128])
def test_non_floating_dtype_is_a_type_error(args, index, name, dtype):
    args[index] = args[index].astype(dtype)
    with pytest.raises(TypeError, match=rf"\b{name}\b"):
        vit_block(*args, H)


@pytest.mark.parametrize("index", [0, 4])
def test_mixed_dtypes_are_a_type_error(args, index):
    args[index] = args[index].astype(np.float32)
    with pytest.raises(TypeError, match="dtype"):
        vit_block(*args, H)
    args[index] = Tensor(args[index])
    with pytest.raises(TypeError, match="dtype"):
        vit_block(*args, H)


def test_non_array_argument_is_a_type_error(args):
    args[2] = args[2].tolist()
    with pytest.raises(TypeError, match="w_k"):
        vit_block(*args, H)


@pytest.mark.parametrize("n,t,d,f,h", [(2, 5, 8, 12, 2), (3, 17, 12, 20, 3)])
def test_vit_block_from_basic_ops_equals_the_fused_block_of_tinyvit(n, t, d, f, h):
    """vit_block (the spec, line by line, in elementary ops) and vit.Block (the fused ops
    TinyViT trains with) with identity LayerNorm affines and zero biases: same values and
    gradients."""
    from vit import Block
    rng = np.random.default_rng(4)
    x0 = rng.standard_normal((n, t, d))
    w = [rng.standard_normal(s) / math.sqrt(s[0]) for s in [(d, d)] * 4 + [(d, f), (f, d)]]
    cot = rng.standard_normal((n, t, d))
    xs = Tensor(x0.copy(), requires_grad=True)
    ws = [Tensor(a.copy(), requires_grad=True) for a in w]
    vit_block(xs, *ws, h).backward(cot)
    block = Block(d, h, f)
    state = {"attn.qkv.weight": np.concatenate(w[:3], axis=1), "attn.proj.weight": w[3],
             "mlp.fc1.weight": w[4], "mlp.fc2.weight": w[5]}
    block.load_state_dict(state, strict=False)  # norms: gain 1, bias 0; biases 0 (as built)
    xb = Tensor(x0.copy(), requires_grad=True)
    yb = block(xb)
    yb.backward(cot)
    np.testing.assert_allclose(yb.data, vit_block(x0, *w, h), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xb.grad, xs.grad, rtol=1e-11, atol=1e-12)
    grads = {name: p.grad for name, p in block.named_parameters()}
    for name, got in [("attn.qkv.weight", np.concatenate([t.grad for t in ws[:3]], axis=1)),
                      ("attn.proj.weight", ws[3].grad), ("mlp.fc1.weight", ws[4].grad),
                      ("mlp.fc2.weight", ws[5].grad)]:
        np.testing.assert_allclose(grads[name], got, rtol=1e-11, atol=1e-12, err_msg=name)
