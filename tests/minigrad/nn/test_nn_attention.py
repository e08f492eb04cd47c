"""nn.MultiheadAttention against torch.nn.MultiheadAttention (skipped without torch): the same
state_dict loads both ways, then several steps of training from the same weights on the same
inputs (self- and cross-attention, batch_first both ways, unbatched, key_padding_mask,
attn_mask bool and float, is_causal, need_weights both ways, per-head weights), outputs,
weights and every parameter compared each step. Without torch: dropout in training and eval,
the two forward paths drawing the same masks, a float64 gradcheck, and the argument checks."""
from __future__ import annotations

from functools import partial

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.optim import SGD

RNG = np.random.default_rng(3943)
E, H, N, L, S = 8, 2, 3, 4, 5

# label: (constructor keywords, forward keywords, masks (key_padding, attn), cross, unbatched)
CONFIGS = {
    "self-seq-first": ({}, {}, (None, None), False, False),
    "self-batch-first-kpm": ({"batch_first": True}, {}, ("bool", None), False, False),
    "self-bool-attn-mask-no-weights": ({}, {"need_weights": False}, (None, "bool"), False,
                                       False),
    "self-float-mask-per-head-weights": ({"batch_first": True},
                                         {"average_attn_weights": False},
                                         ("bool", "float-3d"), False, False),
    "cross-kdim-vdim": ({"kdim": 3, "vdim": 5, "batch_first": True}, {}, ("bool", "float"),
                        True, False),
    "cross-kdim-vdim-no-weights": ({"kdim": 3, "vdim": 5}, {"need_weights": False},
                                   ("float", "bool"), True, False),
    "cross-no-bias-seq-first": ({"bias": False}, {}, (None, "float"), True, False),
    "causal-no-weights": ({"batch_first": True}, {"need_weights": False, "is_causal": True},
                          (None, "causal"), False, False),
    "unbatched-cross": ({"kdim": 6}, {}, ("bool", "float"), True, True),
}


def _masks(kinds, gen, unbatched, src):
    kpm_kind, attn_kind = kinds
    n = 1 if unbatched else N
    kpm = None
    if kpm_kind is not None:
        kpm = gen.random((n, src)) > 0.7
        kpm[:, 1] = False  # every query reads a key
        kpm = kpm if kpm_kind == "bool" else np.where(kpm, -np.inf, gen.standard_normal(kpm.shape))
        kpm = kpm[0] if unbatched else kpm
    attn = {None: None, "bool": gen.random((L, src)) > 0.6,
            "float": gen.standard_normal((L, src)),
            "float-3d": gen.standard_normal((N * H, L, src)),
            "causal": ~np.tri(L, src, dtype=bool)}[attn_kind]
    if attn_kind == "bool":
        attn[:, 1] = False
    return kpm, attn


def _inputs(ctor, cross, unbatched, gen):
    kdim, vdim = ctor.get("kdim", E), ctor.get("vdim", E)
    src = S if cross else L
    n = () if unbatched else (N,)
    shapes = [(L, E), (src, kdim), (src, vdim)]
    xs = [gen.standard_normal(n + s if ctor.get("batch_first") else s[:1] + n + s[1:])
          for s in shapes]
    if not cross:
        xs = [xs[0]] * 3  # one tensor as query, key and value: self-attention
    return xs


# a bool key_padding_mask with a float attn_mask: torch warns that it will stop taking the pair
@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask:UserWarning")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("label", list(CONFIGS))
def test_training_steps_match_torch(label, dtype):
    torch = pytest.importorskip("torch")
    ctor, fwd, mask_kinds, cross, unbatched = CONFIGS[label]
    gen = np.random.default_rng(sum(map(ord, label)))
    tdtype = getattr(torch, np.dtype(dtype).name)
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(E, H, dtype=tdtype, **ctor)
    m = nn.MultiheadAttention(E, H, dtype=dtype, rng=1, **ctor)
    m.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    kpm, attn = _masks(mask_kinds, gen, unbatched, S if cross else L)
    if attn is not None and attn.dtype.kind == "f":
        attn = attn.astype(dtype)
    if kpm is not None and kpm.dtype.kind == "f":
        kpm = kpm.astype(dtype)
    t_mask = {"key_padding_mask": None if kpm is None else torch.tensor(kpm),
              "attn_mask": None if attn is None else torch.tensor(attn)}
    # SGD, not Adam: the key bias's gradient is 0 in exact arithmetic (a shift of every score
    # of a row), and Adam would scale the rounding noise left there up to a step of lr
    m_opt = SGD(m.parameters(), lr=0.05, momentum=0.9)
    t_opt = torch.optim.SGD(t.parameters(), lr=0.05, momentum=0.9)
    close = partial(helpers.assert_close, dtype=dtype, ulps=512)
    for step in range(4):
        xs = [x.astype(dtype) for x in _inputs(ctor, cross, unbatched, gen)]
        out, w = m(*xs, key_padding_mask=kpm, attn_mask=attn, **fwd)
        tout, tw = t(*(torch.tensor(x) for x in xs), **t_mask, **fwd)
        assert out.dtype == dtype and out.shape == tuple(tout.shape), step
        close(out.data, tout.detach().numpy())
        assert (w is None) == (tw is None)
        cot = gen.standard_normal(out.shape).astype(dtype)
        loss, t_loss = (out * cot).sum(), (tout * torch.tensor(cot)).sum()
        if w is not None:
            close(w.data, tw.detach().numpy())
            cot_w = gen.standard_normal(w.shape).astype(dtype)
            loss, t_loss = loss + (w * cot_w).sum(), t_loss + (tw * torch.tensor(cot_w)).sum()
        m_opt.zero_grad()
        t_opt.zero_grad()
        loss.backward()
        t_loss.backward()
        for (name, p), (t_name, tp) in zip(m.named_parameters(), t.named_parameters(),
                                           strict=True):
            assert name == t_name
            close(p.grad, tp.grad.numpy())
        m_opt.step()
        t_opt.step()
        for name, tp in t.state_dict().items():
            close(m.state_dict()[name], tp.numpy())


def test_state_dict_round_trips_through_torch():
    torch = pytest.importorskip("torch")
    m = nn.MultiheadAttention(E, H, kdim=3, vdim=5, rng=2)
    t = torch.nn.MultiheadAttention(E, H, kdim=3, vdim=5, dtype=torch.float64)
    t.load_state_dict({k: torch.tensor(v) for k, v in m.state_dict().items()})
    back = nn.MultiheadAttention(E, H, kdim=3, vdim=5, rng=3)
    back.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    for (k, a), (k2, b) in zip(m.state_dict().items(), back.state_dict().items(), strict=True):
        assert k == k2
        np.testing.assert_array_equal(a, b)


def test_parameters_have_torchs_names_and_layouts():
    m = nn.MultiheadAttention(6, 3, rng=0)
    assert {k: v.shape for k, v in m.state_dict().items()} == {
        "in_proj_weight": (18, 6), "in_proj_bias": (18,), "out_proj.weight": (6, 6),
        "out_proj.bias": (6,)}
    m = nn.MultiheadAttention(6, 3, bias=False, kdim=2, vdim=4, rng=0)
    assert {k: v.shape for k, v in m.state_dict().items()} == {
        "q_proj_weight": (6, 6), "k_proj_weight": (6, 2), "v_proj_weight": (6, 4),
        "out_proj.weight": (6, 6)}


# ---- dropout, the two paths, gradients (no torch needed) -----------------------------------
def test_dropout_in_training_only_and_the_two_paths_draw_the_same_masks():
    x = RNG.standard_normal((L, N, E))
    plain = nn.MultiheadAttention(E, H, rng=5)
    drop = nn.MultiheadAttention(E, H, dropout=0.4, rng=5)
    want, w_eval = plain(x, x, x, average_attn_weights=False)
    drop.eval()
    got, _ = drop(x, x, x)
    np.testing.assert_array_equal(got.data, want.data)  # eval: no dropout
    drop.train()
    out, w = drop(x, x, x, average_attn_weights=False)
    # each returned weight is dropped (0) or kept and scaled by 1/(1 - p)
    kept = w.data != 0
    assert 0.2 < 1 - kept.mean() < 0.6
    helpers.assert_close(w.data[kept], w_eval.data[kept] / 0.6)
    twin = nn.MultiheadAttention(E, H, dropout=0.4, rng=5)  # the same weights and generator
    fast, none = twin(x, x, x, need_weights=False)  # F.scaled_dot_product_attention's path
    assert none is None
    helpers.assert_close(fast.data, out.data)


@pytest.mark.parametrize("need_weights", [True, False])
def test_is_causal_alone_is_the_causal_mask(need_weights):
    """torch needs attn_mask with is_causal (a hint that the mask is causal); here is_causal
    alone is that mask, the same as torch given both."""
    m = nn.MultiheadAttention(E, H, batch_first=True, rng=7)
    x = RNG.standard_normal((N, L, E))
    hidden = ~np.tri(L, L, dtype=bool)  # True: not read
    got, _ = m(x, x, x, is_causal=True, need_weights=need_weights)
    want, _ = m(x, x, x, attn_mask=hidden, need_weights=need_weights)
    helpers.assert_close(got.data, want.data)
    first, _ = m(x[:, :1], x, x, need_weights=need_weights,
                 attn_mask=np.arange(L)[None] > 0)  # query 0 reads key 0 only
    helpers.assert_close(got.data[:, :1], first.data)


@pytest.mark.parametrize("need_weights", [True, False])
def test_input_gradients_against_finite_differences(need_weights):
    """(The parameters' gradients are compared with torch's above.)"""
    m = nn.MultiheadAttention(4, 2, kdim=3, batch_first=True, rng=6)
    q, k, v = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 3)), \
        RNG.standard_normal((2, 5, 4))
    kpm = np.array([[False, True, False, False, True], [False] * 5])
    report = mg.gradcheck(lambda *t: m(*t, key_padding_mask=kpm, need_weights=need_weights)[0],
                          [q, k, v])
    assert report.ok, report


@pytest.mark.parametrize("make, error, words", [
    (lambda: nn.MultiheadAttention(6, 4), ValueError, ["num_heads", "4", "divisor"]),
    (lambda: nn.MultiheadAttention(6, 0), ValueError, ["num_heads", "0"]),
    (lambda: nn.MultiheadAttention(6, 2, dropout=1.0), ValueError, ["dropout", "1.0"]),
    (lambda: nn.MultiheadAttention(6, 2, add_bias_kv=True), ValueError, ["add_bias_kv"]),
    (lambda: nn.MultiheadAttention(6, 2, add_zero_attn=True), ValueError, ["add_zero_attn"]),
    (lambda: nn.MultiheadAttention(6, 2, kdim=0), ValueError, ["kdim", "0"]),
    (lambda: nn.MultiheadAttention(6, 2, batch_first="yes"), TypeError, ["batch_first"]),
    (lambda: nn.MultiheadAttention(6, 2, rng="x"), TypeError, ["rng", "'x'"]),
    (lambda: nn.MultiheadAttention(2**70, 1), ValueError, ["embed_dim", "at most"]),
    (lambda: nn.MultiheadAttention(2**16, 1, vdim=2**20), ValueError, ["vdim", "at most"]),
])
def test_constructor_arguments_are_checked(make, error, words):
    with pytest.raises(error) as info:
        make()
    assert "MultiheadAttention" in str(info.value)
    assert all(w in str(info.value) for w in words), str(info.value)


X, K5 = np.zeros((4, 3, 6)), np.zeros((5, 3, 6))


@pytest.mark.parametrize("call, error, words", [
    (lambda m: m(X[..., :5], X, X), ValueError, ["query", "(4, 3, 5)", "6 features"]),
    (lambda m: m(X, K5, X), ValueError, ["key, value", "same length"]),
    (lambda m: m(X, np.zeros((4, 2, 6)), np.zeros((4, 2, 6))), ValueError, ["same batch"]),
    (lambda m: m(X[None], X[None], X[None]), ValueError, ["query", "(1, 4, 3, 6)"]),
    (lambda m: m(X, X, X, key_padding_mask=np.zeros((3, 5), bool)), ValueError,
     ["key_padding_mask", "(3, 5)", "(3, 4)"]),
    (lambda m: m(X, X, X, attn_mask=np.zeros((4, 4), int)), TypeError, ["attn_mask", "int"]),
    (lambda m: m(X, X, X, attn_mask=np.zeros((3, 4, 4), bool)), ValueError,
     ["attn_mask", "(3, 4, 4)", "(6, 4, 4)"]),
    (lambda m: m(X, X, X, need_weights=1), TypeError, ["need_weights", "1"]),
    (lambda m: m(X.astype(complex), X, X), TypeError, ["complex"]),
])
def test_forward_arguments_are_checked(call, error, words):
    m = nn.MultiheadAttention(6, 2, rng=0)
    with pytest.raises(error) as info:
        call(m)
    assert "MultiheadAttention" in str(info.value)
    assert all(w in str(info.value) for w in words), str(info.value)
