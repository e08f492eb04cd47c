"""The exported folder is a timm model: ``timm.create_model("local-dir:DIR", pretrained=True)``
builds it from config.json and model.safetensors as they are, with the same logits as
TinyViT (1e-10 in float64, a few hundred ulps in float32), and timm's own data config holds
the model's normalization. Skipped without torch, timm or safetensors; CI runs this file in
its own environment (.ci/run)."""
from __future__ import annotations

import inspect
import re
from functools import partial
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm")
pytest.importorskip("safetensors")
from helpers import perturbed_tinyvit  # noqa: E402
from timm.models.vision_transformer import VisionTransformer  # noqa: E402
from training_checkpoint import save_training_checkpoint  # noqa: E402

from vit import TinyViT, from_timm  # noqa: E402
from vit.cli.timm_folder import export_timm  # noqa: E402
from vit.model.normalizer import Normalizer  # noqa: E402
from vit.model.timm_convert import to_timm  # noqa: E402

HAS_DEPTH = "depth" in inspect.signature(TinyViT).parameters
EXPORT_DOC = Path(__file__).resolve().parents[2] / "docs" / "export.md"

CONFIGS = [
    dict(img_size=8, patch_size=4, in_chans=1, dim=16, num_heads=1, mlp_dim=32),
    dict(img_size=8, patch_size=4, in_chans=1, dim=16, num_heads=2, mlp_dim=32,
         use_pos_emb=False),
    dict(img_size=12, patch_size=3, in_chans=3, dim=24, num_heads=3, mlp_dim=40,
         num_classes=7),
    dict(img_size=8, patch_size=2, in_chans=3, dim=22, num_heads=2, mlp_dim=15,
         num_classes=4, use_pos_emb=False),  # 22 * (15 / 22) rounds below 15
    dict(img_size=6, patch_size=3, in_chans=1, dim=32, num_heads=4, mlp_dim=64,
         num_classes=10),
]
DEPTH3 = [dict(img_size=8, patch_size=4, in_chans=3, dim=16, num_heads=4, mlp_dim=24,
               depth=3, num_classes=5),
          dict(img_size=8, patch_size=4, in_chans=1, dim=12, num_heads=2, mlp_dim=36,
               depth=3, use_pos_emb=False)]


def timm_model(folder: Path, dtype) -> torch.nn.Module:
    """timm's own loader of a local folder, nothing of ours in between."""
    torch_dtype = torch.float64 if dtype == np.float64 else torch.float32
    net = timm.create_model(f"local-dir:{folder}", pretrained=True, dtype=torch_dtype)
    assert all(m.eps == 1e-5 for m in net.modules() if isinstance(m, torch.nn.LayerNorm))
    return net.eval()


def compare(cfg, dtype, tmp_path):
    model = perturbed_tinyvit(cfg, dtype)
    model.save(tmp_path / "model.npz")
    export_timm(tmp_path / "model.npz", tmp_path / "timm")
    net = timm_model(tmp_path / "timm", dtype)
    c = model.config
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, c["in_chans"], c["img_size"], c["img_size"])).astype(dtype)
    with torch.no_grad():
        theirs = net(torch.from_numpy(x)).numpy()
    ours = model(x)
    assert theirs.shape == ours.shape == (6, c["num_classes"]) and theirs.dtype == dtype
    scale = max(1.0, float(np.abs(ours).max()))
    tol = 1e-10 if dtype == np.float64 else 256 * np.finfo(np.float32).eps * scale
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=tol)
    assert np.abs(ours).max() > 0.1  # not a trivially small output


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_timm_computes_the_same_logits(cfg, dtype, tmp_path):
    compare(cfg, dtype, tmp_path)


@pytest.mark.parametrize("cfg", DEPTH3)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_timm_computes_the_same_logits_depth_3(cfg, dtype, tmp_path):
    if not HAS_DEPTH:
        pytest.skip("TinyViT has no depth parameter yet; this runs once it has")
    compare(cfg, dtype, tmp_path)


@pytest.mark.parametrize("cfg", [CONFIGS[2]] + (DEPTH3 if HAS_DEPTH else []))
def test_a_timm_model_comes_back_to_the_same_logits(cfg):
    """timm's own (randomly initialized) weights -> from_timm -> the logits timm computes."""
    model = perturbed_tinyvit(cfg, np.float64)
    state, config = to_timm(model)
    torch.manual_seed(0)
    net = VisionTransformer(**config["model_args"],
                            norm_layer=partial(torch.nn.LayerNorm, eps=1e-5)).double().eval()
    with torch.no_grad():  # timm's init leaves biases 0; move them, but not attn.proj's
        for name, p in net.named_parameters():
            if not name.endswith("attn.proj.bias"):
                p.add_(0.1 * torch.randn_like(p))
    arrays = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    back = from_timm(arrays, config)
    c = back.config
    x = np.random.default_rng(3).standard_normal((4, c["in_chans"], c["img_size"],
                                                  c["img_size"]))
    with torch.no_grad():
        theirs = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(back(x), theirs, rtol=0, atol=1e-10)


def test_timms_data_config_is_the_models_normalization(tmp_path):
    model = perturbed_tinyvit(CONFIGS[2], np.float32)
    save_training_checkpoint(tmp_path / "ck.npz", model,
                             Normalizer(np.array([0.5, 1.0, 2.0]), np.array([2.0, 3.0, 4.0])))
    export_timm(tmp_path / "ck.npz", tmp_path / "out")
    net = timm.create_model(f"local-dir:{tmp_path / 'out'}", pretrained=True)
    data = timm.data.resolve_data_config({}, model=net)
    assert tuple(data["mean"]) == (0.5, 1.0, 2.0) and tuple(data["std"]) == (2.0, 3.0, 4.0)
    assert tuple(data["input_size"]) == (3, 12, 12)


def test_the_export_doc_lines_build_the_same_classifier(tmp_path):
    """docs/export.md's snippet, run as written (only the folder and the images substituted).
    It is fenced ```py, not ```python: tests/test_readme.py runs those without torch."""
    text = EXPORT_DOC.read_text()
    section = text[text.index("## Run the exported model in timm"):]
    code = re.search(r"```py\n(.*?)```", section, re.S).group(1)
    assert "runs/digits-timm" in code
    model = perturbed_tinyvit(CONFIGS[2], np.float64)
    mean, std = np.array([0.5, 1.0, 2.0]), np.array([2.0, 3.0, 4.0])
    save_training_checkpoint(tmp_path / "ck.npz", model, Normalizer(mean, std))
    export_timm(tmp_path / "ck.npz", tmp_path / "out")
    raw = np.random.default_rng(4).uniform(0, 16, (5, 3, 12, 12))
    scope = {"images": torch.from_numpy(raw.astype(np.float32))}
    exec(code.replace("runs/digits-timm", str(tmp_path / "out")), scope)
    ours = model(Normalizer(mean, std)(raw, np.float64))
    logits = scope["logits"].detach().numpy()
    assert logits.dtype == np.float32
    scale = max(1.0, float(np.abs(ours).max()))
    np.testing.assert_allclose(logits, ours, rtol=0,
                               atol=256 * np.finfo(np.float32).eps * scale)
