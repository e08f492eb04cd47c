"""TinyViT: patches -> tokens -> pre-norm encoder blocks (one by default) -> [CLS] -> logits.

Follows docs/contract.md (section 2; ``depth`` is an extension, section 4). Shapes: B images
of C channels, H = W = img_size pixels, patch side P, N = (H/P)(W/P) patches, D features, K
classes.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

import minigrad as mg
from minigrad import F, Tensor, checks
from minigrad.nn import LayerNorm, Linear, Module, ModuleList, Parameter

from ..io.files import shorten
from ..io.npz import load_npz, save_npz_atomic
from . import fused as fused_stages
from . import manual
from .block import Block
from .config import activation_bytes, check_config, current_limits
from .modelfile import (
    FORMAT,
    Explicit,
    MissingEntryWarning,
    Preprocessing,
    model_entries,
    read_params,
    read_preprocessing,
)
from .normalizer import Normalizer
from .predict import predict

__all__ = ["TinyViT", "patchify", "unpatchify"]

def patchify(x, patch_size: int):
    """(B, C, H, W) -> (B, N, P·P·C): patches in row-major order over the (H/P, W/P) grid,
    each flattened as (p1, p2, c), i.e. einops 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)'.

    Works on NumPy arrays and on Tensors (then differentiable) alike.
    """
    shape = tuple(x.shape)
    P = patch_size
    if len(shape) != 4 or 0 in shape or shape[2] % P or shape[3] % P:
        raise ValueError(f"patchify x: got shape {shape}; expected (B, C, H, W) images with "
                         f"H and W multiples of patch_size = {P}")
    B, C, H, W = shape
    h, w = H // P, W // P
    if isinstance(x, np.ndarray):
        # One channel at a time: each copy reads whole image rows and writes runs of P
        # values (3.7x faster on config D's 8 RGB 224x224 images than one 6-axis gather).
        out = np.empty((B, h, w, P, P, C), dtype=x.dtype)
        grid = x.reshape(B, C, h, P, w, P)
        for c in range(C):
            out[..., c] = grid[:, c].transpose(0, 1, 3, 2, 4)  # b h w p1 p2
        return out.reshape(B, h * w, P * P * C)
    x = x.transpose(0, 2, 3, 1).reshape(B, h, P, w, P, C)  # b h p1 w p2 c
    x = x.transpose(0, 1, 3, 2, 4, 5)  # b h w p1 p2 c
    return x.reshape(B, h * w, P * P * C)


def unpatchify(tokens, patch_size: int, in_chans: int, img_size):
    """The inverse of :func:`patchify`: (B, N, P·P·C) -> (B, C, H, W), for arrays and Tensors.

    ``img_size`` is H = W, or a pair (H, W); N must be (H/P)·(W/P) and the last axis P·P·C,
    flattened as (p1, p2, c). ``unpatchify(patchify(x, P), P, C, (H, W))`` is ``x`` exactly.
    """
    P = checks.positive_int("patch_size", patch_size, owner="unpatchify")
    C = checks.positive_int("in_chans", in_chans, owner="unpatchify")
    H, W = (img_size, img_size) if not isinstance(img_size, (tuple, list)) else img_size
    H = checks.positive_int("img_size", H, owner="unpatchify")
    W = checks.positive_int("img_size", W, owner="unpatchify")
    if H % P or W % P:
        raise ValueError(f"unpatchify img_size: got {(H, W)}; expected sides that are "
                         f"multiples of patch_size = {P}")
    shape = tuple(tokens.shape) if hasattr(tokens, "shape") else np.shape(tokens)
    want = ((H // P) * (W // P), P * P * C)
    if len(shape) != 3 or shape[1:] != want or shape[0] == 0:
        raise ValueError(f"unpatchify tokens: got shape {shape}; expected (B, {want[0]}, "
                         f"{want[1]}) = (B, (H/P)(W/P), P*P*C) for {C}x{H}x{W} images and "
                         f"patch_size {P}")
    if not isinstance(tokens, (np.ndarray, Tensor)):
        tokens = np.asarray(tokens)
    B = shape[0]
    x = tokens.reshape(B, H // P, W // P, P, P, C)  # b h w p1 p2 c
    x = x.transpose(0, 5, 1, 3, 2, 4)  # b c h p1 w p2
    return x.reshape(B, C, H, W)


class TinyViT(Module):
    """A Vision Transformer classifier with ``depth`` pre-norm encoder blocks (the contract's
    model has one: ``depth=1``, the default).

    Parameters (PyTorch/timm-style names): ``patch_embed`` (P·P·C, D) + bias, ``cls_token``
    (1, 1, D), ``pos_embed`` (1, N+1, D) when ``use_pos_emb``, the blocks' ``{norm1, attn.qkv,
    attn.proj, norm2, mlp.fc1, mlp.fc2}`` under ``block.`` for one block (the contract's
    names, and those of every model saved before depth existed) or ``blocks.0.`` ...
    ``blocks.{depth-1}.`` (timm's names) for more, ``norm`` (final LayerNorm) and ``head``
    (D, K) + bias.
    Weights ~ N(0, 1/fan_in), biases 0, CLS and position embeddings ~ N(0, 0.02²), LayerNorm
    gains 1 and biases 0; ``seed`` makes the initialization reproducible.

    The size is checked before anything is allocated (:func:`check_config`): at most
    ``max_parameters`` parameters (default ``MAX_PARAMETERS``, or the current :func:`limits`)
    and ``MAX_ACTIVATION_BYTES`` of activations per image.

    The contract's methods take and return NumPy arrays and floats; ``model(x)`` on a Tensor
    returns differentiable logits.
    """

    def __init__(self, img_size: int = 8, patch_size: int = 4, in_chans: int = 1, dim: int = 16,
                 num_heads: int = 2, mlp_dim: int = 32, num_classes: int = 2,
                 use_pos_emb: bool = True, *, depth: int = 1, dtype=np.float64,
                 seed: int | None = None, max_parameters: int | None = None,
                 fused: bool = False) -> None:
        super().__init__()
        dtype = checks.floating_dtype("dtype", dtype, owner="TinyViT")
        fused = checks.boolean("fused", fused, owner="TinyViT")
        if fused:
            fused_stages.check_fused_dtype(dtype, "TinyViT")
        check_config(dict(img_size=img_size, patch_size=patch_size, in_chans=in_chans, dim=dim,
                          num_heads=num_heads, mlp_dim=mlp_dim, num_classes=num_classes,
                          use_pos_emb=use_pos_emb, depth=depth), dtype, max_parameters)
        try:
            rng = np.random.default_rng(seed)
        except (TypeError, ValueError) as e:
            raise type(e)(f"TinyViT seed: got {seed!r}; expected a non-negative integer or None "
                          f"({e})") from None
        self.config = dict(img_size=int(img_size), patch_size=int(patch_size),
                           in_chans=int(in_chans), dim=int(dim), num_heads=int(num_heads),
                           mlp_dim=int(mlp_dim), num_classes=int(num_classes),
                           use_pos_emb=bool(use_pos_emb), depth=int(depth))
        self.patch_size, self.num_heads, self.use_pos_emb = patch_size, num_heads, use_pos_emb
        self.dtype = dtype
        self.fused = fused
        self.num_patches = (img_size // patch_size) ** 2
        self.patch_embed = Linear(patch_size * patch_size * in_chans, dim, dtype=dtype, rng=rng)
        self.cls_token = Parameter((0.02 * rng.standard_normal((1, 1, dim))).astype(dtype))
        self.pos_embed = (Parameter((0.02 * rng.standard_normal((1, self.num_patches + 1, dim)))
                                    .astype(dtype)) if use_pos_emb else None)
        # One block keeps the contract's name; more are a list, as timm holds them.
        blocks = [Block(dim, num_heads, mlp_dim, dtype=dtype, rng=rng, fused=fused)
                  for _ in range(depth)]
        if depth == 1:
            self.block = blocks[0]
        else:
            self.blocks = ModuleList(blocks)
        self.norm = LayerNorm(dim, dtype=dtype)
        self.head = Linear(dim, num_classes, dtype=dtype, rng=rng)

    # ---- the differentiable model ------------------------------------------------------
    def tokens(self, x: Tensor) -> Tensor:
        """The encoder block's input, (B, C, H, W) Tensor -> (B, N+1, D): embedded patches
        after the CLS token, plus the position embeddings. A fused model does it as one op
        (``fused.patch_tokens``, the same function written out by hand)."""
        if not isinstance(x, Tensor):  # (model(x) is the entry point for arrays)
            raise TypeError(f"TinyViT x: got {type(x).__name__}; expected a minigrad Tensor "
                            "of images (B, C, H, W) here (model(x) also takes NumPy arrays)")
        if self.fused:
            return fused_stages.embed(self, x)
        if not x.requires_grad:  # images are constants: cut them with NumPy, record nothing
            x = Tensor(patchify(x.data, self.patch_size))
        else:
            x = patchify(x, self.patch_size)
        tokens = self.patch_embed(x)  # (B, N, D)
        B, _, D = tokens.shape
        cls = F.broadcast_to(self.cls_token, (B, 1, D))  # its gradient sums over the batch
        t = F.concatenate([cls, tokens], axis=1)  # (B, N+1, D)
        return t if self.pos_embed is None else t + self.pos_embed

    def encoder_blocks(self) -> list[Block]:
        """The encoder blocks in the order they run (one for ``depth=1``)."""
        return [self.block] if self.config["depth"] == 1 else list(self.blocks)

    def encode(self, t: Tensor) -> Tensor:
        """The encoder: every block in turn, (B, T, D) -> (B, T, D)."""
        for block in self.encoder_blocks():  # over layers (the contract's no-loop rule is
            t = block(t)                     # about batch, heads and tokens)
        return t

    def features(self, x: Tensor) -> Tensor:
        """Final-LayerNormed CLS token, (B, C, H, W) Tensor -> (B, D) Tensor."""
        return self.norm(self.encode(self.tokens(x))[:, 0])

    def logits(self, x: Tensor) -> Tensor:
        """(B, C, H, W) Tensor -> (B, K) differentiable logits: ``head(features(x))``, which a
        fused model computes as one op from the encoder's output (``fused.cls_head``)."""
        t = self.encode(self.tokens(x))
        if self.fused:
            return fused_stages.head(self, t)
        return self.head(self.norm(t[:, 0]))

    # ---- the NumPy contract ------------------------------------------------------------
    def images_array(self, x) -> np.ndarray:
        """Images (B, C, H, W), an array or a Tensor, validated (shape, dtype, the activation
        bound) and cast to the model's dtype, as a NumPy array (the caller's is untouched)."""
        x = np.asarray(x.data if isinstance(x, Tensor) else x)
        self._check_images(x)
        return x.astype(self.dtype, copy=False)

    def _check_images(self, x) -> None:
        c = self.config
        want = (c["in_chans"], c["img_size"], c["img_size"])
        if x.ndim != 4 or x.shape[1:] != want or x.shape[0] == 0:
            raise ValueError(f"TinyViT x: got shape {x.shape}; expected (B, {want[0]}, {want[1]}, "
                             f"{want[2]}) images with B >= 1 (in_chans, img_size, img_size)")
        if x.dtype.kind not in "biuf":
            raise TypeError(f"TinyViT x: got dtype {x.dtype}; expected a real numeric dtype")
        need = x.shape[0] * activation_bytes(c, self.dtype.itemsize)
        limit = current_limits()[1]
        if need > limit:  # attention is quadratic in the tokens: refuse, not OOM
            raise ValueError(f"TinyViT x: a batch of {x.shape[0]} images needs about {need:,} "
                             f"bytes of activations; expected at most {limit:,} "
                             "(split the batch, or raise vit.model.config.limits("
                             "max_activation_bytes=...))")

    def _targets(self, y, batch: int) -> np.ndarray:
        """Integer labels (B,) or soft targets (B, K) in the model's dtype."""
        y = np.asarray(y)
        K = self.config["num_classes"]
        if y.dtype.kind in "iu":
            if y.shape != (batch,):
                raise ValueError(f"TinyViT y: got labels of shape {y.shape}; expected ({batch},)")
            if y.min() < 0 or y.max() >= K:
                raise ValueError(f"TinyViT y: got labels in [{y.min()}, {y.max()}]; expected "
                                 f"integers in [0, {K - 1}]")
            return y
        if y.dtype.kind == "f" and y.shape == (batch, K):
            return y.astype(self.dtype, copy=False)
        raise ValueError(f"TinyViT y: got dtype {y.dtype} shape {y.shape}; expected integer "
                         f"labels of shape ({batch},) or soft targets of shape ({batch}, {K})")

    def patchify(self, x) -> np.ndarray:
        """(B, C, H, W) -> (B, N, P·P·C), row-major patches flattened as (p1, p2, c).

        A pure rearrangement: any image size whose sides are multiples of patch_size and any
        channel count are accepted (the spec's example patchifies a (1, 2, 4, 4) batch with
        patch_size=2 whatever img_size and in_chans the model was built with).
        """
        x = np.asarray(x.data if isinstance(x, Tensor) else x)
        if x.dtype.kind not in "biuf":
            raise TypeError(f"TinyViT x: got dtype {x.dtype}; expected a real numeric dtype")
        return patchify(x.astype(self.dtype, copy=False), self.patch_size)

    def cls_features(self, x) -> np.ndarray:
        """Final-LayerNormed CLS token, (B, D)."""
        with mg.no_grad():
            return self.features(Tensor(self.images_array(x))).data

    def forward(self, x):
        """Logits (B, num_classes): a NumPy array for an array, a differentiable Tensor for a
        Tensor."""
        if isinstance(x, Tensor):  # validated and cast (differentiably) to the model's dtype
            self._check_images(x)
            return self.logits(x if x.dtype == self.dtype else x.astype(self.dtype))
        with mg.no_grad():
            return self.logits(Tensor(self.images_array(x))).data

    def loss(self, x, y) -> float:
        """Mean cross-entropy against integer labels (B,) or soft targets (B, K)."""
        x = self.images_array(x)
        y = self._targets(y, len(x))
        with mg.no_grad():
            return float(F.cross_entropy(self.logits(Tensor(x)), y).item())

    def train_step(self, x, y, lr: float = 0.1, full: bool = False) -> float:
        """One plain SGD step; returns the loss before it.

        Default (the spec's NumPy track, a linear probe): only ``head`` moves, by the closed
        form dlogits = (softmax(logits) - onehot(y)) / B, dW = clsᵀ dlogits, db = Σ_B dlogits.
        ``full=True``: every parameter moves by -lr * grad, the gradient from the engine.
        """
        lr = checks.real("lr", lr, low=0, low_open=True, owner="TinyViT train_step")
        x = self.images_array(x)
        y = self._targets(y, len(x))
        for name, a in (("x", x), ("y", y)):  # a NaN would silently poison every parameter
            if a.dtype.kind == "f" and not np.isfinite(a).all():
                raise ValueError(f"TinyViT train_step {name}: got NaN or infinite values; "
                                 "expected finite numbers (the step would turn the parameters "
                                 "into NaN)")
        if full:
            loss = F.cross_entropy(self.logits(Tensor(x)), y)
            self.zero_grad()
            loss.backward()
            named = [(n, p) for n, p in self.named_parameters() if p.grad is not None]
            self._apply_finite([(n, p.data, p.grad) for n, p in named], lr)
            return float(loss.item())
        return self.probe_step(x, y, lr, check=True)[0]

    def _apply_finite(self, updates: list, lr: float) -> None:
        """``param -= lr * grad`` for every (name, param, grad), or, if any result is NaN
        or infinite, a ValueError naming it and no parameter changed."""
        with np.errstate(over="ignore", invalid="ignore"):
            new = [(name, param, param - lr * grad) for name, param, grad in updates]
        for name, _, value in new:
            if not np.isfinite(value).all():
                raise ValueError(f"TinyViT train_step lr: got {lr!r}; the step makes parameter "
                                 f"{name!r} non-finite (NaN or inf in {value.dtype}); expected "
                                 "a learning rate small enough for finite parameters (no "
                                 "parameter was changed)")
        for _, param, value in new:
            param[...] = value

    def probe_step(self, x: np.ndarray, y: np.ndarray, lr: float,
                   check: bool = False) -> tuple[float, np.ndarray]:
        """The head-only step (the contract's linear probe) on checked inputs: images in the
        model's dtype and integer labels (B,) or soft targets (B, K). Returns (loss, logits)
        before the step, so a training loop can count correct predictions without a second
        forward. The loss and dlogits are vit/model/manual.py's cross-entropy, the head's gradient
        its ``head_backward``. With ``check``, a step that would make the head non-finite
        raises and changes nothing (a training loop instead sees the next loss diverge)."""
        cls = self.cls_features(x)
        W, b = self.head.weight.data, self.head.bias.data
        logits = manual.head_forward(cls, W, b)
        loss, cache = manual.cross_entropy_forward(logits, y)
        _, dW, db = manual.head_backward(manual.cross_entropy_backward(cache), cls, W)
        if check:
            self._apply_finite([("head.weight", W, dW), ("head.bias", b, db)], lr)
        else:
            W -= lr * dW
            b -= lr * db
        return loss, logits

    # ---- files (vit/model/modelfile.py) ----------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the model file (vit/model/modelfile.py): config, every parameter and the
        preprocessing (``normalizer``: ``norm/*``, none when None; ``input_range``),
        atomically (temporary file, fsync, rename)."""
        arrays = {"format": np.array(FORMAT),
                  **model_entries(self.config, self.dtype, self.state_dict(),
                                  Preprocessing(self.normalizer, self.input_range))}
        save_npz_atomic(path, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike, max_parameters: int | None = None, *,
             mean=None, std=None, normalize: str | None = None) -> TinyViT:
        """Rebuild a model written by :meth:`save` (or ``vit import``), with its
        preprocessing. Never unpickles; the config is checked (keys, types, dtype, size
        bounds) before the model is built, and missing, extra or misshapen arrays are refused
        with a ValueError. A file saved before model files held their preprocessing is read
        only with ``mean=``/``std=`` (one number per channel) or ``normalize="none"``; a
        file without ``input/range`` says so (a :class:`MissingEntryWarning`). A config
        without ``depth`` (saved before it existed) is one block. ``vit.load`` reads
        checkpoints and run folders too."""
        model, notes = cls.from_entries(load_npz(path), f"TinyViT.load {os.fspath(path)}",
                                        max_parameters, Explicit(mean, std, normalize))
        for note in notes:
            warnings.warn(note, MissingEntryWarning, stacklevel=2)
        return model

    @classmethod
    def from_entries(cls, arrays: dict, where: str, max_parameters: int | None = None,
                     explicit: Explicit = Explicit()) -> tuple[TinyViT, list[str]]:
        """(model, notes) from the entries of a model file (:meth:`load`, ``vit.load``);
        ``where`` names the file in errors and notes."""
        fmt = arrays.get("format")
        if fmt is not None and (np.shape(fmt) != () or str(fmt) != FORMAT):
            raise ValueError(f"{where}: entry 'format' is {shorten(str(fmt))}; expected "
                             f"{FORMAT!r} (a training checkpoint is read by vit.load)")
        config, dtype, state = read_params(arrays, where, max_parameters)
        pre, notes = read_preprocessing(
            arrays, where, config["in_chans"], states=fmt is not None, explicit=explicit,
            missing="saved before model files held their preprocessing (no 'format' "
                    "entry), it does not say how its inputs were normalized")
        model = cls(**config, dtype=dtype, max_parameters=max_parameters)
        model.load_state_dict(state)
        model.normalizer, model.input_range = pre.normalizer, pre.input_range
        return model, notes

    # ---- prediction on raw images (vit/model/predict.py) ---------------------------------
    #: The preprocessing the model was trained with, which its model file carries: the
    #: training pixels' per-channel Normalizer (None: inputs used as given) ...
    normalizer: Normalizer | None = None
    #: ... and the (lowest, highest) raw training pixel (None: unknown), for predict's
    #: warning about images on another scale.
    input_range: tuple[float, float] | None = None

    def predict(self, images, *, probabilities: bool = False, tta: bool = False) -> np.ndarray:
        """Classes (N,) int64 of raw images (N, H, W), (N, C, H, W) or (N, H, W, C), normalized
        with ``self.normalizer`` as ``vit eval`` does; ``probabilities=True``: the softmax
        (N, K) float64 instead (its row-wise argmax is the classes); ``tta=True``: the
        softmax averaged over the image and its four half-pixel shifts. Warns
        (``InputRangeWarning``) when the images are clearly on another scale than
        ``self.input_range``. See vit.model.predict.predict."""
        return predict(self, images, probabilities=probabilities, tta=tta)
