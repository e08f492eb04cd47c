"""TinyViT: patches -> tokens -> one pre-norm encoder block -> [CLS] -> class logits.

Follows ``spec/tinyvit.md``. Shapes: B images of C channels, H = W = img_size pixels, patch
side P, N = (H/P)(W/P) patches, D features, K classes.
"""
from __future__ import annotations

import json
import os
import tempfile
import zipfile

import numpy as np

import minigrad as mg
from minigrad import F, Tensor
from minigrad.nn import LayerNorm, Linear, Module, Parameter

from .block import Block, _check_heads

__all__ = ["TinyViT", "patchify"]


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
    x = x.reshape(B, C, H // P, P, W // P, P)  # b c h p1 w p2
    x = x.transpose(0, 2, 4, 3, 5, 1)  # b h w p1 p2 c
    return x.reshape(B, (H // P) * (W // P), P * P * C)


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"TinyViT {name}: got {value!r}; expected a positive integer")
    return int(value)


class TinyViT(Module):
    """A Vision Transformer classifier with one pre-norm encoder block.

    Parameters (PyTorch/timm-style names): ``patch_embed`` (P·P·C, D) + bias, ``cls_token``
    (1, 1, D), ``pos_embed`` (1, N+1, D) when ``use_pos_emb``, ``block.{norm1, attn.qkv,
    attn.proj, norm2, mlp.fc1, mlp.fc2}``, ``norm`` (final LayerNorm) and ``head`` (D, K) + bias.
    Weights ~ N(0, 1/fan_in), biases 0, CLS and position embeddings ~ N(0, 0.02²), LayerNorm
    gains 1 and biases 0; ``seed`` makes the initialization reproducible.

    The contract's methods take and return NumPy arrays and floats; ``model(x)`` on a Tensor
    returns differentiable logits.
    """

    def __init__(self, img_size: int = 8, patch_size: int = 4, in_chans: int = 1, dim: int = 16,
                 num_heads: int = 2, mlp_dim: int = 32, num_classes: int = 2,
                 use_pos_emb: bool = True, *, dtype=np.float64, seed: int | None = None) -> None:
        super().__init__()
        for name in ("img_size", "patch_size", "in_chans", "dim", "mlp_dim", "num_classes"):
            _positive_int(name, locals()[name])
        if img_size % patch_size:
            raise ValueError(f"TinyViT patch_size: got {patch_size}; expected a divisor of "
                             f"img_size = {img_size}")
        _check_heads(dim, num_heads, "TinyViT num_heads")
        dtype = np.dtype(dtype)
        if dtype.kind != "f":
            raise TypeError(f"TinyViT dtype: got {dtype}; expected a floating dtype")
        self.config = dict(img_size=int(img_size), patch_size=int(patch_size),
                           in_chans=int(in_chans), dim=int(dim), num_heads=int(num_heads),
                           mlp_dim=int(mlp_dim), num_classes=int(num_classes),
                           use_pos_emb=bool(use_pos_emb))
        self.patch_size, self.num_heads, self.use_pos_emb = patch_size, num_heads, use_pos_emb
        self.dtype = dtype
        self.num_patches = (img_size // patch_size) ** 2
        rng = np.random.default_rng(seed)
        self.patch_embed = Linear(patch_size * patch_size * in_chans, dim, dtype=dtype, rng=rng)
        self.cls_token = Parameter((0.02 * rng.standard_normal((1, 1, dim))).astype(dtype))
        self.pos_embed = (Parameter((0.02 * rng.standard_normal((1, self.num_patches + 1, dim)))
                                    .astype(dtype)) if use_pos_emb else None)
        self.block = Block(dim, num_heads, mlp_dim, dtype=dtype, rng=rng)
        self.norm = LayerNorm(dim, dtype=dtype)
        self.head = Linear(dim, num_classes, dtype=dtype, rng=rng)

    # ---- the differentiable model ------------------------------------------------------
    def features(self, x: Tensor) -> Tensor:
        """Final-LayerNormed CLS token, (B, C, H, W) Tensor -> (B, D) Tensor."""
        tokens = self.patch_embed(patchify(x, self.patch_size))  # (B, N, D)
        B, _, D = tokens.shape
        cls = F.broadcast_to(self.cls_token, (B, 1, D))  # its gradient sums over the batch
        t = F.concatenate([cls, tokens], axis=1)  # (B, N+1, D)
        if self.pos_embed is not None:
            t = t + self.pos_embed
        t = self.block(t)
        return self.norm(t[:, 0])

    def logits(self, x: Tensor) -> Tensor:
        """(B, C, H, W) Tensor -> (B, K) differentiable logits."""
        return self.head(self.features(x))

    # ---- the NumPy contract ------------------------------------------------------------
    def _images(self, x) -> np.ndarray:
        """Validate images and cast them to the model's dtype (the caller's array is untouched)."""
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
            return self.features(Tensor(self._images(x))).data

    def forward(self, x):
        """Logits (B, num_classes): a NumPy array for an array, a differentiable Tensor for a Tensor."""
        if isinstance(x, Tensor):  # validated and cast (differentiably) to the model's dtype
            self._check_images(x)
            return self.logits(x if x.dtype == self.dtype else x.astype(self.dtype))
        with mg.no_grad():
            return self.logits(Tensor(self._images(x))).data

    def loss(self, x, y) -> float:
        """Mean cross-entropy against integer labels (B,) or soft targets (B, K)."""
        x = self._images(x)
        y = self._targets(y, len(x))
        with mg.no_grad():
            return float(F.cross_entropy(self.logits(Tensor(x)), y).item())

    def train_step(self, x, y, lr: float = 0.1, full: bool = False) -> float:
        """One plain SGD step; returns the loss before it.

        Default (the spec's NumPy track, a linear probe): only ``head`` moves, by the closed
        form dlogits = (softmax(logits) - onehot(y)) / B, dW = clsᵀ dlogits, db = Σ_B dlogits.
        ``full=True``: every parameter moves by -lr * grad, the gradient from the engine.
        """
        if not (isinstance(lr, (int, float, np.floating)) and np.isfinite(lr) and lr > 0):
            raise ValueError(f"TinyViT train_step lr: got {lr!r}; expected a positive number")
        x = self._images(x)
        y = self._targets(y, len(x))
        if full:
            loss = F.cross_entropy(self.logits(Tensor(x)), y)
            self.zero_grad()
            loss.backward()
            for p in self.parameters():
                p.data -= lr * p.grad
            return float(loss.item())
        cls = self.cls_features(x)
        W, b = self.head.weight.data, self.head.bias.data
        logits = cls @ W + b
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        target = _one_hot(y, W.shape[1], self.dtype) if y.ndim == 1 else y
        loss = float(-(target * log_p).sum() / len(x))
        dlogits = (np.exp(log_p) * target.sum(axis=1, keepdims=True) - target) / len(x)
        W -= lr * (cls.T @ dlogits)
        b -= lr * dlogits.sum(axis=0)
        return loss

    # ---- files -------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the config and every parameter to one ``.npz``, atomically (temp file + rename)."""
        arrays = {f"param/{k}": v for k, v in self.state_dict().items()}
        arrays["config"] = np.array(json.dumps({**self.config, "dtype": self.dtype.name}))
        save_npz_atomic(path, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> TinyViT:
        """Rebuild a model saved by :meth:`save`. Never unpickles; rejects missing, extra or
        misshapen arrays with a ValueError."""
        arrays = load_npz(path)
        if "config" not in arrays:
            raise ValueError(f"TinyViT.load {path}: no 'config' entry; not a TinyViT file")
        try:
            config = json.loads(str(arrays.pop("config")))
            if not isinstance(config, dict):
                raise TypeError(f"expected a JSON object, got {type(config).__name__}")
            dtype = config.pop("dtype")
            model = cls(**config, dtype=dtype)
        except (TypeError, ValueError, KeyError) as e:
            raise ValueError(f"TinyViT.load {path}: bad config entry ({e})") from None
        extra = [k for k in arrays if not k.startswith("param/")]
        if extra:
            raise ValueError(f"TinyViT.load {path}: unexpected entries {extra}")
        state = {k[len("param/"):]: v for k, v in arrays.items()}
        names = [name for name, _ in model.named_parameters()]
        missing = [name for name in names if name not in state]
        unexpected = [name for name in state if name not in names]
        if missing or unexpected:  # a ValueError (load_state_dict's strict check is a KeyError)
            raise ValueError(f"TinyViT.load {path}: parameters do not match the config: "
                             f"missing {missing}, unexpected {unexpected}")
        model.load_state_dict(state)
        return model


def _one_hot(y: np.ndarray, num_classes: int, dtype) -> np.ndarray:
    out = np.zeros((len(y), num_classes), dtype=dtype)
    out[np.arange(len(y)), y] = 1
    return out


def save_npz_atomic(path, arrays: dict) -> None:
    """``np.savez`` to a temporary file beside ``path``, fsync, then rename over ``path``."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_npz(path) -> dict:
    """Every array of an ``.npz``, read with ``allow_pickle=False``; a clear ValueError for a
    file that is missing, truncated, not an npz, or holds object arrays."""
    try:
        f = np.load(path, allow_pickle=False)
        if not isinstance(f, np.lib.npyio.NpzFile):  # a bare .npy array
            raise ValueError(f"{path}: a single .npy array, not an .npz archive")
        with f:
            return {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise
    except ValueError as e:
        if "allow_pickle" in str(e) or "Object arrays" in str(e):
            raise ValueError(f"{path}: holds object (pickled) arrays, which are never loaded") \
                from None
        raise ValueError(f"{path}: not a readable .npz ({e})") from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError) as e:
        raise ValueError(f"{path}: not a readable .npz, truncated or corrupt ({e})") from None
