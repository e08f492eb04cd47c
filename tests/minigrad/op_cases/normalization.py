"""Cases for minigrad/ops/normalization.py: layer_norm (affine, plain, weight or bias only,
another eps, over several trailing axes) and rms_norm (one axis, several, with and without
weight, the default eps), against the formulas in NumPy and against torch."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import add_case, rn, torch_table


def np_layer_norm(x, w=None, b=None, eps=1e-5):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    return y * (1.0 if w is None else w) + (0.0 if b is None else b)


add_case("layer_norm", "affine", F.layer_norm, np_layer_norm, rn(2, 3, 5), 1 + rn(5) / 2, rn(5))
add_case("layer_norm", "plain", F.layer_norm, np_layer_norm, rn(4, 6))
add_case("layer_norm", "weight-only", F.layer_norm, np_layer_norm, rn(3, 4), rn(4))
add_case("layer_norm", "bias-only", lambda x, b: F.layer_norm(x, None, b),
         lambda x, b: np_layer_norm(x, None, b), rn(3, 4), rn(4))
add_case("layer_norm", "1d-eps", lambda x, w, b: F.layer_norm(x, w, b, eps=0.1),
         lambda x, w, b: np_layer_norm(x, w, b, eps=0.1), rn(6), rn(6), rn(6))

add_case("layer_norm", "2-axes", lambda x, w, b: F.layer_norm(x, w, b, normalized_shape=(3, 4)),
         lambda x, w, b: np_layer_norm_axes(x, 2, w, b), rn(2, 3, 4), 1 + rn(3, 4) / 2, rn(3, 4))
add_case("layer_norm", "3-axes-plain", lambda x: F.layer_norm(x, normalized_shape=[2, 2, 3]),
         lambda x: np_layer_norm_axes(x, 3), rn(2, 2, 3))


def np_layer_norm_axes(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    mu = x.mean(axes, keepdims=True)
    y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axes, keepdims=True) + eps)
    return y * (1.0 if w is None else w) + (0.0 if b is None else b)


def np_rms_norm(x, k, w=None, eps=None):
    """x / sqrt(mean of squares over the last k axes + eps) * w; eps None: float64's eps."""
    eps = 2.0 ** -52 if eps is None else eps
    ms = (x ** 2).mean(tuple(range(x.ndim - k, x.ndim)), keepdims=True)
    return x / np.sqrt(ms + eps) * (1.0 if w is None else w)


add_case("rms_norm", "weight", lambda x, w: F.rms_norm(x, 5, w, eps=1e-6),
         lambda x, w: np_rms_norm(x, 1, w, 1e-6), rn(3, 5), rn(5))
add_case("rms_norm", "2-axes", lambda x, w: F.rms_norm(x, (2, 3), w),
         lambda x, w: np_rms_norm(x, 2, w), rn(4, 2, 3), rn(2, 3))
add_case("rms_norm", "plain-1d", lambda x: F.rms_norm(x, [6], eps=0.5),
         lambda x: np_rms_norm(x, 1, eps=0.5), rn(6))


@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: layer_norm."""
    TF = torch.nn.functional
    rng = np.random.default_rng(9907)
    case = add  # float64

    rn = partial(helpers.rn, rng)

    case("layer_norm", "affine", F.layer_norm,
         lambda x, w, b: TF.layer_norm(x, (5,), w, b, eps=1e-5), rn(2, 3, 5), rn(5), rn(5))
    case("layer_norm", "plain", F.layer_norm, lambda x: TF.layer_norm(x, (6,), eps=1e-5), rn(4, 6))
    case("layer_norm", "2-axes", lambda x, w, b: F.layer_norm(x, w, b, normalized_shape=(2, 3)),
         lambda x, w, b: TF.layer_norm(x, (2, 3), w, b), rn(3, 2, 3), rn(2, 3), rn(2, 3))
    # eps=None: each dtype's own machine epsilon, at a scale where it changes the result
    for dtype, scale in ((np.float64, 1e-8), (np.float32, 1e-4)):
        case("rms_norm", f"default-eps-{np.dtype(dtype)}", lambda x: F.rms_norm(x, 4),
             lambda x: TF.rms_norm(x, (4,)), rn(3, 4) * scale, dtypes=(dtype,))
    case("rms_norm", "weight-2-axes", lambda x, w: F.rms_norm(x, (2, 4), w, eps=1e-3),
         lambda x, w: TF.rms_norm(x, (2, 4), w, eps=1e-3), rn(3, 2, 4), rn(2, 4),
         dtypes=(np.float64, np.float32))
