"""Bad input to vit's entry points: ``vit_block``, ``TinyViT`` (constructor, methods, save and
load), ``cross_entropy``, ``mixup``/``one_hot``, ``unpatchify`` and the data loaders in
``vit.data``. Each case raises a ValueError or TypeError (FileNotFoundError for a missing
path) naming the argument, what it got and what was expected; no input array and no model
parameter changes."""
from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
from reliability_util import bad, check_bad, params

import minigrad as mg
import vit
from vit import TinyViT, mixup, one_hot, unpatchify, vit_block
from vit.model.normalizer import Normalizer
from vit.train import data as vd

RNG = np.random.default_rng(0)
N, T, D, F = 2, 3, 4, 5
BX = RNG.standard_normal((N, T, D))
BW = [RNG.standard_normal(s) for s in [(D, D)] * 4 + [(D, F), (F, D)]]
NAMES = ["x", "w_q", "w_k", "w_v", "w_o", "w_mlp1", "w_mlp2"]


def block_with(index, value, heads=2):
    args = [BX] + BW
    args[index] = value
    return lambda: vit_block(*args, heads)


BLOCK = []
for i, name in enumerate(NAMES):
    good = ([BX] + BW)[i]
    BLOCK += [
        bad(f"vit_block-{name}-None", block_with(i, None), TypeError, name, "NoneType",
            keep=(BX, *BW)),
        bad(f"vit_block-{name}-int", block_with(i, good.astype(int)), TypeError, name, "int64",
            keep=(BX, *BW)),
        bad(f"vit_block-{name}-complex", block_with(i, good.astype(complex)), TypeError, name,
            "complex128"),
        bad(f"vit_block-{name}-rank", block_with(i, good[..., None]), ValueError, name,
            str(good[..., None].shape)),
    ]
BLOCK += [
    bad("vit_block-x-list", block_with(0, BX.tolist()), TypeError, "x", "list"),
    bad("vit_block-x-object", block_with(0, BX.astype(object)), TypeError, "x", "object"),
    bad("vit_block-x-bool", block_with(0, BX > 0), TypeError, "x", "bool"),
    bad("vit_block-x-empty", block_with(0, BX[:0]), ValueError, "x", "(0, 3, 4)"),
    bad("vit_block-w_mlp1-no-hidden", block_with(5, np.ones((D, 0))), ValueError, "w_mlp1",
        "(4, 0)"),
    bad("vit_block-w_o-D", block_with(4, np.ones((D + 1, D + 1))), ValueError, "w_o", "(5, 5)",
        "(4, 4)"),
    bad("vit_block-mixed-dtypes", block_with(3, BW[2].astype(np.float32)), TypeError, "w_v",
        "float32"),
    bad("vit_block-heads-zero", block_with(0, BX, heads=0), ValueError, "num_heads", "0"),
    bad("vit_block-heads-not-dividing", block_with(0, BX, heads=3), ValueError, "num_heads",
        "3", "D = 4"),
    bad("vit_block-heads-str", block_with(0, BX, heads="2"), TypeError, "num_heads", "'2'"),
    bad("vit_block-heads-None", block_with(0, BX, heads=None), TypeError, "num_heads", "None"),
]

CTOR = [
    bad("TinyViT-img_size-None", lambda: TinyViT(img_size=None), TypeError, "img_size", "None"),
    bad("TinyViT-img_size-zero", lambda: TinyViT(img_size=0), ValueError, "img_size", "0"),
    bad("TinyViT-patch-not-dividing", lambda: TinyViT(img_size=8, patch_size=3), ValueError,
        "patch_size", "3"),
    bad("TinyViT-in_chans-zero", lambda: TinyViT(in_chans=0), ValueError, "in_chans", "0"),
    bad("TinyViT-dim-str", lambda: TinyViT(dim="16"), TypeError, "dim", "'16'"),
    bad("TinyViT-heads-zero", lambda: TinyViT(num_heads=0), ValueError, "num_heads", "0"),
    bad("TinyViT-heads-not-dividing", lambda: TinyViT(dim=16, num_heads=3), ValueError,
        "num_heads", "3"),
    bad("TinyViT-mlp_dim-negative", lambda: TinyViT(mlp_dim=-1), ValueError, "mlp_dim", "-1"),
    bad("TinyViT-classes-float", lambda: TinyViT(num_classes=2.0), TypeError, "num_classes",
        "2.0"),
    bad("TinyViT-pos-emb-str", lambda: TinyViT(use_pos_emb="no"), TypeError, "use_pos_emb",
        "'no'"),
    bad("TinyViT-dtype-unknown", lambda: TinyViT(dtype="foo"), TypeError, "dtype", "'foo'"),
    bad("TinyViT-dtype-int", lambda: TinyViT(dtype=np.int32), TypeError, "dtype", "int32"),
    bad("TinyViT-dtype-complex", lambda: TinyViT(dtype=np.complex128), TypeError, "dtype",
        "complex128"),
    bad("TinyViT-seed-str", lambda: TinyViT(seed="abc"), TypeError, "seed", "'abc'"),
    bad("TinyViT-seed-negative", lambda: TinyViT(seed=-1), ValueError, "seed", "-1"),
]

MODEL = TinyViT(seed=0)  # img 8, patch 4, 1 channel, 2 classes
PARAMS = tuple(p.data for p in MODEL.parameters())
IMG = RNG.standard_normal((2, 1, 8, 8))
Y = np.array([0, 1])
SOFT = np.array([[0.25, 0.75], [1.0, 0.0]])
X_BAD = {
    "None": (None, ValueError, ("()",)),
    "str": ("abc", ValueError, ("()",)),
    "object": (IMG.astype(object), TypeError, ("object",)),
    "complex": (IMG.astype(complex), TypeError, ("complex128",)),
    "empty": (IMG[:0], ValueError, ("(0, 1, 8, 8)",)),
    "rank3": (IMG[:, 0], ValueError, ("(2, 8, 8)",)),
    "channels": (np.repeat(IMG, 2, axis=1), ValueError, ("(2, 2, 8, 8)",)),
    "size": (IMG[:, :, :4, :4], ValueError, ("(2, 1, 4, 4)",)),
}
METHODS = {
    "forward": lambda x: MODEL.forward(x), "cls_features": lambda x: MODEL.cls_features(x),
    "loss": lambda x: MODEL.loss(x, Y), "train_step": lambda x: MODEL.train_step(x, Y),
    "train_step-full": lambda x: MODEL.train_step(x, Y, lr=0.1, full=True),
}
METHOD_CASES = [
    bad(f"TinyViT.{m}-x-{kind}", lambda f=f, v=v: f(v), exc, "TinyViT x", *words,
        keep=PARAMS + ((v,) if isinstance(v, np.ndarray) else ()))
    for m, f in METHODS.items() for kind, (v, exc, words) in X_BAD.items()]
METHOD_CASES += [
    bad("TinyViT.__call__-tensor-shape", lambda: MODEL(mg.Tensor(IMG[:, 0])), ValueError,
        "TinyViT x", "(2, 8, 8)"),
    bad("TinyViT.patchify-object", lambda: MODEL.patchify(IMG.astype(object)), TypeError, "x",
        "object"),
    bad("TinyViT.patchify-rank", lambda: MODEL.patchify(IMG[0]), ValueError, "patchify x",
        "(1, 8, 8)"),
    bad("TinyViT.patchify-not-multiple", lambda: MODEL.patchify(IMG[:, :, :6, :6]), ValueError,
        "patchify x", "(2, 1, 6, 6)", "patch_size = 4"),
]
Y_BAD = {
    "None": (None, ("object",)), "str": ("ab", ("<U2",)), "float-labels": (Y * 1.0, ("(2,)",)),
    "bool": (Y > 0, ("bool",)), "complex": (Y.astype(complex), ("complex128",)),
    "out-of-range": (np.array([0, 2]), ("[0, 2]", "[0, 1]")),
    "negative": (np.array([-1, 0]), ("[-1, 0]",)), "length": (np.array([0, 1, 1]), ("(3,)",)),
    "soft-shape": (np.ones((2, 3)) / 3, ("(2, 3)", "(2, 2)")),
    "empty": (np.zeros(0, int), ("(0,)",)),
}
for m in ("loss", "train_step"):
    for kind, (v, words) in Y_BAD.items():
        METHOD_CASES.append(bad(f"TinyViT.{m}-y-{kind}",
                                lambda m=m, v=v: getattr(MODEL, m)(IMG, v), ValueError,
                                "TinyViT y", *words, keep=(IMG,) + PARAMS))
for kind, lr in {"zero": 0, "negative": -0.1, "nan": np.nan, "inf": np.inf, "str": "0.1",
                 "None": None}.items():
    METHOD_CASES.append(bad(f"TinyViT.train_step-lr-{kind}",
                            lambda lr=lr: MODEL.train_step(IMG, Y, lr=lr),
                            TypeError if kind in ("str", "None") else ValueError, "lr",
                            repr(lr) if isinstance(lr, str) else str(lr), keep=PARAMS))
NAN_IMG = np.where(np.arange(64).reshape(1, 1, 8, 8) == 5, np.nan, IMG)
for full in (False, True):
    METHOD_CASES += [
        bad(f"TinyViT.train_step-x-nan-full={full}",
            lambda f=full: MODEL.train_step(NAN_IMG, Y, full=f), ValueError, "train_step x",
            "NaN", keep=(NAN_IMG,) + PARAMS),
        bad(f"TinyViT.train_step-soft-y-inf-full={full}",
            lambda f=full: MODEL.train_step(IMG, np.where(SOFT > 0.5, np.inf, SOFT), full=f),
            ValueError, "train_step y", "infinite", keep=PARAMS),
    ]

FILES: dict = {}  # filled by the fixture below: the cases read their paths lazily


@pytest.fixture(scope="module", autouse=True)
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad-input-files")
    (d / "junk.bin").write_bytes(b"not an idx file at all")
    idx = struct.pack(">HBB", 0, 0x08, 1) + struct.pack(">I", 10) + bytes(range(4))
    (d / "short-idx").write_bytes(idx)
    with gzip.open(d / "bad.gz", "wb") as f:
        f.write(b"\x00\x00\x08\x01")
    (d / "bad.gz").write_bytes((d / "bad.gz").read_bytes()[:12])  # a truncated gzip
    (d / "empty").mkdir()
    FILES.update(dir=d, junk=d / "junk.bin", short=d / "short-idx", gz=d / "bad.gz",
                 empty=d / "empty", missing=d / "missing.npz")
    yield d


FILE_CASES = [
    bad("TinyViT.save-None", lambda: MODEL.save(None), TypeError, "path", "NoneType"),
    bad("TinyViT.save-missing-folder", lambda: MODEL.save(FILES["dir"] / "no" / "m.npz"),
        FileNotFoundError, "no/m.npz", "does not exist"),
    bad("TinyViT.load-None", lambda: TinyViT.load(None), TypeError, "path", "NoneType"),
    bad("TinyViT.load-missing", lambda: TinyViT.load(FILES["missing"]), FileNotFoundError,
        "missing.npz", numpy=True),
    bad("TinyViT.load-folder", lambda: TinyViT.load(FILES["dir"]), ValueError, "bad-input-files",
        numpy=True),
    bad("TinyViT.load-junk", lambda: TinyViT.load(FILES["junk"]), ValueError, "junk.bin",
        "not an .npz", "zip"),
    bad("load_data-int", lambda: vd.load_data(123), TypeError, "path", "int"),
    bad("load_data-missing", lambda: vd.load_data(FILES["missing"]), ValueError, "missing.npz",
        "no such file", numpy=True),
    bad("load_npz_dataset-None", lambda: vd.load_npz_dataset(None), TypeError, "path",
        "NoneType"),
    bad("load_npz_dataset-junk", lambda: vd.load_npz_dataset(FILES["junk"]), ValueError,
        "junk.bin", "not an .npz"),
    bad("read_idx-None", lambda: vd.read_idx(None), TypeError, "read_idx path", "NoneType"),
    bad("read_idx-missing", lambda: vd.read_idx(FILES["missing"]), FileNotFoundError,
        "missing.npz", numpy=True),
    bad("read_idx-folder", lambda: vd.read_idx(FILES["empty"]), ValueError, "empty",
        "cannot be read", numpy=True),
    bad("read_idx-junk", lambda: vd.read_idx(FILES["junk"]), ValueError, "junk.bin", "magic"),
    bad("read_idx-truncated", lambda: vd.read_idx(FILES["short"]), ValueError, "short-idx",
        "4 data bytes", "10"),
    bad("read_idx-truncated-gzip", lambda: vd.read_idx(FILES["gz"]), ValueError, "bad.gz",
        "decompress", numpy=True),
    bad("load_idx_folder-None", lambda: vd.load_idx_folder(None), TypeError, "folder",
        "NoneType"),
    bad("load_idx_folder-empty", lambda: vd.load_idx_folder(FILES["empty"]), ValueError,
        "train-images-idx3-ubyte"),
]

POS = [(kw, name) for kw, name in [
    (dict(n_train=0), "n_train"), (dict(n_train=-1), "n_train"), (dict(n_test="5"), "n_test"),
    (dict(img_size=0), "img_size"), (dict(patch_size=0), "patch_size"),
    (dict(patch_size=3), "patch size 3"), (dict(img_size=4, patch_size=4), "single patch"),
    (dict(noise=-1.0), "noise"), (dict(noise=np.nan), "noise"), (dict(noise="0.5"), "noise")]]
DATA = [bad(f"position_task-{'-'.join(f'{k}={v}' for k, v in kw.items())}",
            lambda kw=kw: vd.position_task(**kw),
            TypeError if any(isinstance(v, str) for v in kw.values()) else ValueError, name)
        for kw, name in POS]
LBL = np.array([0, 1, 0, 1, 0, 1])
IMGS = RNG.standard_normal((3, 1, 2, 2))
NORM = Normalizer.fit(IMGS)
DATA += [
    bad("stratified_split-None", lambda: vd.stratified_split(None), ValueError, "y", "object"),
    bad("stratified_split-2d", lambda: vd.stratified_split(LBL.reshape(2, 3)), ValueError, "y",
        "(2, 3)"),
    bad("stratified_split-float-labels", lambda: vd.stratified_split(LBL * 0.5), ValueError,
        "y", "float64"),
    bad("stratified_split-empty", lambda: vd.stratified_split(LBL[:0]), ValueError,
        "0 examples", numpy=True),
    bad("stratified_split-fraction-big", lambda: vd.stratified_split(LBL, 1.5), ValueError,
        "test_fraction", "1.5"),
    bad("stratified_split-fraction-nan", lambda: vd.stratified_split(LBL, np.nan), ValueError,
        "test_fraction", "nan"),
    bad("Normalizer.fit-None", lambda: Normalizer.fit(None), TypeError, "x_train",
        "NoneType"),
    bad("Normalizer.fit-str", lambda: Normalizer.fit("abc"), TypeError, "x_train", "str"),
    bad("Normalizer.fit-rank3", lambda: Normalizer.fit(IMGS[:, 0]), ValueError, "x_train",
        "(3, 2, 2)"),
    bad("Normalizer.fit-empty", lambda: Normalizer.fit(IMGS[:0]), ValueError, "x_train",
        "(0, 1, 2, 2)"),
    bad("Normalizer.fit-nan", lambda: Normalizer.fit(IMGS * np.nan), ValueError, "x_train",
        "NaN"),
    bad("Normalizer-channels", lambda: NORM(np.repeat(IMGS, 2, axis=1)), ValueError,
        "Normalizer x", "2-channel", "1 channels", keep=(IMGS,)),
    bad("Normalizer-object", lambda: NORM(IMGS.astype(object)), TypeError, "Normalizer x",
        "object"),
]

TOK = vit.patchify(IMG, 4)  # (2, 4, 16)
LOSS_MIX = [
    bad("vit.cross_entropy-labels", lambda: vit.cross_entropy(mg.Tensor(SOFT), np.array([0, 5])),
        ValueError, "target", "[0, 5]", keep=(SOFT,)),
    bad("vit.cross_entropy-soft-shape", lambda: vit.cross_entropy(SOFT, np.ones((2, 3))),
        ValueError, "target", "(2, 3)", "(2, 2)"),
    bad("mixup-x-None", lambda: mixup(None, Y, 2), ValueError, "mixup x", "object"),
    bad("mixup-x-int", lambda: mixup(IMG.astype(int), Y, 2), ValueError, "mixup x", "int64"),
    bad("mixup-x-empty", lambda: mixup(IMG[:0], Y[:0], 2), ValueError, "mixup x",
        "(0, 1, 8, 8)"),
    bad("mixup-y-out-of-range", lambda: mixup(IMG, np.array([0, 2]), 2), ValueError, "y",
        "[0, 2]", keep=(IMG,)),
    bad("mixup-y-length", lambda: mixup(IMG, np.array([0, 1, 1]), 2), ValueError, "mixup y",
        "(3,)"),
    bad("mixup-y-complex", lambda: mixup(IMG, Y.astype(complex), 2), ValueError, "mixup y",
        "complex128"),
    bad("mixup-soft-shape", lambda: mixup(IMG, np.ones((2, 3)), 2), ValueError, "mixup y",
        "(2, 3)"),
    bad("mixup-classes-zero", lambda: mixup(IMG, Y, 0), ValueError, "num_classes", "0"),
    bad("mixup-classes-str", lambda: mixup(IMG, Y, "2"), TypeError, "num_classes", "'2'"),
    bad("mixup-classes-None", lambda: mixup(IMG, Y, None), TypeError, "num_classes", "None"),
    bad("mixup-alpha-zero", lambda: mixup(IMG, Y, 2, alpha=0), ValueError, "alpha", "0"),
    bad("mixup-alpha-negative", lambda: mixup(IMG, Y, 2, alpha=-0.2), ValueError, "alpha",
        "-0.2"),
    bad("mixup-alpha-nan", lambda: mixup(IMG, Y, 2, alpha=np.nan), ValueError, "alpha", "nan"),
    bad("mixup-alpha-str", lambda: mixup(IMG, Y, 2, alpha="0.2"), TypeError, "alpha", "'0.2'"),
    bad("mixup-lam-range", lambda: mixup(IMG, Y, 2, lam=1.5), ValueError, "lam", "1.5"),
    bad("mixup-lam-nan", lambda: mixup(IMG, Y, 2, lam=np.nan), ValueError, "lam", "nan"),
    bad("mixup-lam-str", lambda: mixup(IMG, Y, 2, lam="0.5"), TypeError, "lam", "'0.5'"),
    bad("mixup-rng-str", lambda: mixup(IMG, Y, 2, rng="abc"), TypeError, "rng", "str"),
    bad("one_hot-classes-zero", lambda: one_hot(Y, 0), ValueError, "num_classes", "0"),
    bad("one_hot-float-labels", lambda: one_hot(Y * 1.0, 2), ValueError, "one_hot y",
        "float64"),
    bad("one_hot-out-of-range", lambda: one_hot(np.array([0, 3]), 2), ValueError, "one_hot y",
        "[0, 3]"),
    bad("unpatchify-rank", lambda: unpatchify(TOK[0], 4, 1, 8), ValueError, "tokens", "(4, 16)"),
    bad("unpatchify-tokens", lambda: unpatchify(TOK[:, :3], 4, 1, 8), ValueError, "tokens",
        "(2, 3, 16)", "(B, 4, 16)", keep=(TOK,)),
    bad("unpatchify-width", lambda: unpatchify(TOK, 4, 2, 8), ValueError, "tokens",
        "(B, 4, 32)"),
    bad("unpatchify-patch-zero", lambda: unpatchify(TOK, 0, 1, 8), ValueError, "patch_size",
        "0"),
    bad("unpatchify-img-not-multiple", lambda: unpatchify(TOK, 4, 1, 6), ValueError, "img_size",
        "(6, 6)"),
    bad("unpatchify-channels-None", lambda: unpatchify(TOK, 4, None, 8), TypeError,
        "in_chans", "None"),
]

CASES = BLOCK + CTOR + METHOD_CASES + FILE_CASES + DATA + LOSS_MIX


@pytest.mark.parametrize("case", params(CASES))
def test_vit_entry_point(case):
    check_bad(case)


def test_model_never_moved():
    """Every failing call above left the model exactly as TinyViT(seed=0) built it."""
    fresh = TinyViT(seed=0)
    for (name, a), (_, b) in zip(MODEL.named_parameters(), fresh.named_parameters(), strict=True):
        np.testing.assert_array_equal(a.data, b.data, err_msg=name)
