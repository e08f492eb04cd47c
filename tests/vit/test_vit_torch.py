"""PyTorch as the oracle: vit_block and TinyViT values and every gradient, float64, 1e-10;
TinyViT on both paths (the ``fused`` fixture, tests/vit/conftest.py).

The torch side uses torch's own layer_norm, tanh-GELU, scaled_dot_product_attention,
cross_entropy and conv2d, so it shares no code (and no constants) with vit/ or minigrad/.
minigrad's Linear weights are (in, out) and used as x @ W + b.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, Tensor
from vit import TinyViT, mixup, patchify, vit_block

torch = pytest.importorskip("torch")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-10)


def tt(a, grad=True):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def torch_attention(h, w_q, w_k, w_v, w_o, num_heads):
    B, T, D = h.shape

    def heads(z):  # (B, T, D) -> (B, H, T, D/H), consecutive chunks
        return z.reshape(B, T, num_heads, D // num_heads).transpose(1, 2)

    o = TF.scaled_dot_product_attention(heads(h @ w_q), heads(h @ w_k), heads(h @ w_v),
                                        is_causal=False)  # scale 1/sqrt(D/H) by default
    return o.transpose(1, 2).reshape(B, T, D) @ w_o


def torch_vit_block(x, w_q, w_k, w_v, w_o, w_mlp1, w_mlp2, num_heads):
    D = x.shape[-1]
    y = x + torch_attention(TF.layer_norm(x, (D,), eps=1e-5), w_q, w_k, w_v, w_o, num_heads)
    return y + TF.gelu(TF.layer_norm(y, (D,), eps=1e-5) @ w_mlp1, approximate="tanh") @ w_mlp2


@pytest.mark.parametrize("n,t,d,f,h", [(2, 5, 8, 12, 2), (3, 4, 12, 6, 3), (1, 7, 6, 9, 6)])
def test_vit_block_values_and_all_gradients(n, t, d, f, h):
    rng = np.random.default_rng(d)
    arrays = [rng.standard_normal((n, t, d))] + [rng.standard_normal(s) / np.sqrt(s[0]) for s in
                                                 [(d, d)] * 4 + [(d, f), (f, d)]]
    cot = rng.standard_normal((n, t, d))
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    out = vit_block(*ours, h)
    (out * Tensor(cot)).sum().backward()
    theirs = [tt(a) for a in arrays]
    expected = torch_vit_block(*theirs, h)
    (expected * tt(cot, False)).sum().backward()
    np.testing.assert_allclose(out.data, expected.detach().numpy(), **TOL)
    np.testing.assert_allclose(vit_block(*arrays, h), expected.detach().numpy(), **TOL)
    for name, a, b in zip(["x", "w_q", "w_k", "w_v", "w_o", "w_mlp1", "w_mlp2"], ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad, b.grad.numpy(), **TOL, err_msg=name)


def test_vit_block_float32_close_to_torch_float32():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 5, 8))] + [rng.standard_normal(s) / np.sqrt(s[0]) for s in
                                                 [(8, 8)] * 4 + [(8, 16), (16, 8)]]
    a32 = [a.astype(np.float32) for a in arrays]
    expected = torch_vit_block(*[torch.from_numpy(a) for a in a32], 4).numpy()
    out = vit_block(*a32, 4)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


# ---- TinyViT --------------------------------------------------------------------------------------
class TorchTinyViT:
    """spec/tinyvit.md in torch, holding float64 copies of a minigrad TinyViT's parameters."""

    def __init__(self, model):
        self.c = model.config
        self.p = {n: tt(p.data) for n, p in model.named_parameters()}

    def logits(self, x):
        p, c = self.p, self.c
        P, D, C = c["patch_size"], c["dim"], c["in_chans"]
        # patch embedding as a stride-P convolution: (D, C, P, P) kernel from the (P*P*C, D) weight
        kernel = p["patch_embed.weight"].T.reshape(D, P, P, C).permute(0, 3, 1, 2)
        tokens = TF.conv2d(x, kernel, p["patch_embed.bias"], stride=P)  # (B, D, H/P, W/P)
        tokens = tokens.flatten(2).transpose(1, 2)  # (B, N, D), row-major grid
        B = x.shape[0]
        t = torch.cat([p["cls_token"].reshape(1, 1, D).expand(B, 1, D), tokens], dim=1)
        if c["use_pos_emb"]:
            t = t + p["pos_embed"].reshape(1, -1, D)
        depth = c.get("depth", 1)  # block. for one block, blocks.0. ... for more
        for b in ["block."] if depth == 1 else [f"blocks.{i}." for i in range(depth)]:
            h = TF.layer_norm(t, (D,), p[b + "norm1.weight"], p[b + "norm1.bias"], eps=1e-5)
            w_q, w_k, w_v = p[b + "attn.qkv.weight"].split(D, dim=1)  # [W_q | W_k | W_v]
            t = t + torch_attention(h, w_q, w_k, w_v, p[b + "attn.proj.weight"], c["num_heads"])
            h = TF.layer_norm(t, (D,), p[b + "norm2.weight"], p[b + "norm2.bias"], eps=1e-5)
            h = TF.gelu(h @ p[b + "mlp.fc1.weight"] + p[b + "mlp.fc1.bias"], approximate="tanh")
            t = t + h @ p[b + "mlp.fc2.weight"] + p[b + "mlp.fc2.bias"]
        cls = TF.layer_norm(t[:, 0], (D,), p["norm.weight"], p["norm.bias"], eps=1e-5)
        return cls @ p["head.weight"] + p["head.bias"]


def compare(model, x, y, soft=False):
    model.zero_grad()
    loss = F.cross_entropy(model(Tensor(x)), y)
    loss.backward()
    ref = TorchTinyViT(model)
    logits = ref.logits(tt(x, False))
    target = tt(y, False) if soft else torch.from_numpy(y)
    ref_loss = TF.cross_entropy(logits, target)
    ref_loss.backward()
    np.testing.assert_allclose(model.forward(x), logits.detach().numpy(), **TOL)
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-12)
    assert model.loss(x, y) == pytest.approx(ref_loss.item(), rel=1e-12)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad, ref.p[name].grad.numpy(), **TOL, err_msg=name)
    return ref_loss.item()


@pytest.mark.parametrize("cfg", [
    dict(),
    dict(img_size=6, patch_size=2, in_chans=3, dim=12, num_heads=3, mlp_dim=20, num_classes=5),
    dict(img_size=8, patch_size=4, in_chans=2, dim=8, num_heads=4, mlp_dim=16, num_classes=3,
         use_pos_emb=False),
    dict(img_size=6, patch_size=2, in_chans=3, dim=12, num_heads=3, mlp_dim=20, num_classes=5,
         depth=2),
    dict(img_size=8, patch_size=4, in_chans=2, dim=8, num_heads=2, mlp_dim=16, num_classes=3,
         use_pos_emb=False, depth=2),
])
def test_tinyvit_logits_loss_and_every_gradient(cfg, fused):
    model = TinyViT(**cfg, seed=0, fused=fused)
    rng = np.random.default_rng(1)
    for p in model.parameters():  # off the special initial values, so every term matters
        p.data[...] += 0.2 * rng.standard_normal(p.shape)
    c = model.config
    x = rng.standard_normal((5, c["in_chans"], c["img_size"], c["img_size"]))
    compare(model, x, rng.integers(0, c["num_classes"], 5))


def test_tinyvit_mixup_soft_targets_every_gradient(fused):
    model = TinyViT(num_classes=3, seed=2, fused=fused)
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((6, 1, 8, 8)), rng.integers(0, 3, 6)
    m = mixup(x, y, 3, alpha=0.4, rng=rng)
    compare(model, m.x, m.y, soft=True)


def test_full_train_steps_follow_torch_sgd(fused):
    model = TinyViT(img_size=4, patch_size=2, dim=8, num_heads=2, num_classes=3, seed=4,
                    fused=fused)
    ref = TorchTinyViT(model)
    opt = torch.optim.SGD(list(ref.p.values()), lr=0.1)
    rng = np.random.default_rng(5)
    for _ in range(3):
        x, y = rng.standard_normal((4, 1, 4, 4)), rng.integers(0, 3, 4)
        opt.zero_grad()
        ref_loss = TF.cross_entropy(ref.logits(tt(x, False)), torch.from_numpy(y))
        ref_loss.backward()
        opt.step()
        assert model.train_step(x, y, lr=0.1, full=True) == pytest.approx(ref_loss.item(),
                                                                         rel=1e-12)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.data, ref.p[name].detach().numpy(), **TOL, err_msg=name)


@pytest.mark.parametrize("C,P,S", [(1, 4, 8), (3, 2, 6), (2, 3, 9)])
def test_patchify_matches_torch_conv_and_unfold(C, P, S):
    rng = np.random.default_rng(C)
    x, D = rng.standard_normal((2, C, S, S)), 7
    kernel = rng.standard_normal((D, C, P, P))
    conv = TF.conv2d(torch.from_numpy(x), torch.from_numpy(kernel), stride=P)
    W = kernel.transpose(2, 3, 1, 0).reshape(P * P * C, D)
    np.testing.assert_allclose(patchify(x, P) @ W, conv.flatten(2).transpose(1, 2).numpy(), **TOL)
    # einops 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)', spelled with torch view/permute
    g = S // P
    einops = torch.from_numpy(x).reshape(2, C, g, P, g, P).permute(0, 2, 4, 3, 5, 1)
    np.testing.assert_array_equal(patchify(x, P), einops.reshape(2, g * g, P * P * C).numpy())


def test_gradcheck_agrees_with_torch_gradcheck_on_the_block():
    """Both engines' finite-difference checks accept the same function (sanity of the oracle)."""
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((1, 3, 4))] + [rng.standard_normal(s) for s in
                                                 [(4, 4)] * 4 + [(4, 5), (5, 4)]]
    assert torch.autograd.gradcheck(lambda *a: torch_vit_block(*a, 2), [tt(a) for a in arrays])
    mg.gradcheck(lambda *a: vit_block(*a, 2), [Tensor(a, requires_grad=True) for a in arrays])
