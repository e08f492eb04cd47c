"""``vit gradcheck --per-op`` and ``mg.gradcheck_ops`` on TinyViT: every op of one forward and
loss checked at its own inputs, one line per op kind, a wrong op named."""
from __future__ import annotations

import re

import numpy as np
from cli_util import run_cli as run

import minigrad as mg
from minigrad import F
from minigrad.ops import normalization
from vit import TinyViT


def kinds(out: str) -> dict:
    """{op: (ran, passed, failed, unchecked)} from the per-kind lines."""
    rows = re.findall(r"^(\w+) +(\d+) +(\d+) +(\d+) +(\d+)$", out, flags=re.M)
    return {name: tuple(int(n) for n in counts) for name, *counts in rows}


def test_every_op_of_the_random_model_is_checked_and_passes(capsys):
    status, out, err = run(["gradcheck", "--per-op"], capsys)
    assert status == 0, out + err
    table = kinds(out)
    # depth 1: patch embedding, qkv, proj, fc1, fc2 and head are the six Linear layers;
    # norm1, norm2 and the final norm the three LayerNorms
    assert table["linear"] == (6, 6, 0, 0) and table["layer_norm"] == (3, 3, 0, 0)
    assert table["self_attention"] == (1, 1, 0, 0) and table["cross_entropy"] == (1, 1, 0, 0)
    assert table["concatenate"] == (1, 1, 0, 0) and table["broadcast_to"] == (1, 1, 0, 0)
    assert all(unchecked == 0 for *_, unchecked in table.values())
    assert "unchecked op" not in out
    assert out.rstrip().endswith("0 unchecked)") and "gradcheck passed" in out


def test_a_built_in_op_patched_wrong_fails_the_command_and_is_named(capsys, monkeypatch):
    right = normalization._layer_norm_vjp_x

    def flipped(gx, gs, xh, r, weight):  # x̄ of layer_norm with the wrong sign
        right(gx, gs, xh, r, weight)
        gx *= -1.0

    monkeypatch.setattr(normalization, "_layer_norm_vjp_x", flipped)
    status, out, err = run(["gradcheck", "--per-op"], capsys)
    assert status == 1, out + err
    table = kinds(out)
    assert table["layer_norm"] == (3, 0, 3, 0)
    assert {name for name, (_, _, failed, _) in table.items() if failed} == {"layer_norm"}
    assert out.count("FAILED op #") == 3 and out.count("input 0 (x)") == 3
    sites = re.findall(r"called at (\S+):\d+", out)
    assert len(sites) == 3 and all("vit/model/" in site for site in sites)  # the model's code
    assert "gradcheck FAILED" in out


def test_per_op_with_fast_checks_random_directions_of_every_op(capsys):
    status, out, err = run(["gradcheck", "--per-op", "--fast"], capsys)
    assert status == 0, out + err
    assert "random directions" in out.splitlines()[0]
    assert kinds(out)["linear"] == (6, 6, 0, 0) and "gradcheck passed" in out


def test_the_fused_stages_joint_vjps_are_checked_at_their_own_inputs():
    model = TinyViT(img_size=8, patch_size=4, dim=8, num_heads=2, mlp_dim=16, num_classes=3,
                    dtype=np.float64, seed=1, fused=True)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 1, 8, 8)), rng.integers(0, 3, 2)
    report = mg.gradcheck_ops(lambda: F.cross_entropy(model(mg.Tensor(x)), y))
    assert [o.name for o in report.ops] == ["patch_tokens", "encoder_block", "cls_head",
                                            "cross_entropy"]
    assert all(o.status == "passed" for o in report.ops)
    block = report.ops[1]
    assert [r.param for r in block.inputs] == ["t", "norm1_w", "norm1_b", "qkv_w", "proj_w",
                                               "norm2_w", "norm2_b", "fc1_w", "fc1_b",
                                               "fc2_w", "fc2_b"]
