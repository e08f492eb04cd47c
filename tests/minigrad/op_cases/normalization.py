"""Cases for minigrad/ops/normalization.py: layer_norm (affine, plain, weight or bias only,
another eps), against the formula in NumPy and against torch."""
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
