"""Cases for minigrad/ops/channel_norm.py: batch_norm (training over (N, C), (N, C, L) and
(N, C, H, W); eval with running statistics), instance_norm (own statistics, running ones) and
group_norm (several groups, one group, a group per channel), against the formulas in NumPy
and against torch."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

from .base import add_case, pos, rn, torch_table


def np_norm(x, axes, w=None, b=None, eps=1e-5):
    """(x - mean) / sqrt(population variance + eps) over ``axes``, then w, b per channel."""
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return np_affine((x - mu) / np.sqrt(var + eps), w, b)


def np_affine(y, w, b):
    shape = (1, -1) + (1,) * (y.ndim - 2)
    return y * (1.0 if w is None else w.reshape(shape)) + (0.0 if b is None else b.reshape(shape))


def np_batch_train(x, w=None, b=None, eps=1e-5):
    return np_norm(x, tuple(a for a in range(x.ndim) if a != 1), w, b, eps)


def np_with_stats(x, m, v, w=None, b=None, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return np_affine((x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps), w, b)


def np_group(x, G, w=None, b=None, eps=1e-5):
    """Each sample's channels split into G consecutive groups, normalized group by group."""
    out = np.empty_like(x)
    per = x.shape[1] // G
    for n in range(x.shape[0]):
        for g in range(G):
            part = x[n, g * per:(g + 1) * per]
            out[n, g * per:(g + 1) * per] = (part - part.mean()) / np.sqrt(part.var() + eps)
    return np_affine(out, w, b)


def bn_train(x, w=None, b=None, eps=1e-5):
    return F.batch_norm(x, None, None, w, b, training=True, eps=eps)


add_case("batch_norm", "train-2d", bn_train, np_batch_train, rn(5, 3), 1 + rn(3) / 2, rn(3))
add_case("batch_norm", "train-1d", bn_train, np_batch_train, rn(3, 2, 4), rn(2), rn(2))
add_case("batch_norm", "train-4d-plain", bn_train, np_batch_train, rn(2, 3, 2, 3))
add_case("batch_norm", "train-eps", lambda x, w: bn_train(x, w, eps=0.5),
         lambda x, w: np_batch_train(x, w, eps=0.5), rn(4, 2, 3), rn(2))
_m, _v = rn(3), pos(3)
add_case("batch_norm", "eval", lambda x, w, b: F.batch_norm(x, _m, _v, w, b),
         lambda x, w, b: np_with_stats(x, _m, _v, w, b), rn(2, 3, 2, 2), rn(3), rn(3))
add_case("batch_norm", "eval-plain", lambda x: F.batch_norm(x, _m, _v, training=False),
         lambda x: np_with_stats(x, _m, _v), rn(4, 3))

add_case("instance_norm", "1d", lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
         lambda x, w, b: np_norm(x, (2,), w, b), rn(2, 3, 5), rn(3), rn(3))
add_case("instance_norm", "2d-plain", F.instance_norm, lambda x: np_norm(x, (2, 3)),
         rn(2, 2, 3, 3))
add_case("instance_norm", "running",
         lambda x, w: F.instance_norm(x, _m, _v, w, use_input_stats=False, eps=0.1),
         lambda x, w: np_with_stats(x, _m, _v, w, eps=0.1), rn(2, 3, 4), rn(3))

add_case("group_norm", "2-groups", lambda x, w, b: F.group_norm(x, 2, w, b),
         lambda x, w, b: np_group(x, 2, w, b), rn(2, 4, 3), rn(4), rn(4))
add_case("group_norm", "1-group-4d", lambda x: F.group_norm(x, 1), lambda x: np_group(x, 1),
         rn(2, 3, 2, 2))
add_case("group_norm", "per-channel", lambda x, w: F.group_norm(x, 3, w, eps=0.2),
         lambda x, w: np_group(x, 3, w, eps=0.2), rn(2, 3, 4), rn(3))
add_case("group_norm", "2d-input", lambda x: F.group_norm(x, 2), lambda x: np_group(x, 2),
         rn(3, 4))


@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: batch_norm, instance_norm, group_norm, in float64 and
    float32."""
    TF = torch.nn.functional
    rng = np.random.default_rng(4413)
    both = partial(add, dtypes=(np.float64, np.float32))

    rn = partial(helpers.rn, rng)
    m, v = rn(3), rng.uniform(0.5, 2.0, 3)

    both("batch_norm", "train-4d",
         lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
         lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True), rn(4, 3, 2, 3),
         rn(3), rn(3))
    both("batch_norm", "train-2d", lambda x: F.batch_norm(x, None, None, training=True, eps=0.1),
         lambda x: TF.batch_norm(x, None, None, training=True, eps=0.1), rn(6, 3))
    both("batch_norm", "eval-1d", lambda x, w, b: F.batch_norm(x, m, v, w, b),
         lambda x, w, b: TF.batch_norm(x, torch.tensor(m, dtype=x.dtype),
                                       torch.tensor(v, dtype=x.dtype), w, b), rn(2, 3, 5),
         rn(3), rn(3))
    both("instance_norm", "2d", lambda x, w, b: F.instance_norm(x, None, None, w, b),
         lambda x, w, b: TF.instance_norm(x, None, None, w, b), rn(2, 3, 3, 4), rn(3), rn(3))
    both("instance_norm", "running",
         lambda x: F.instance_norm(x, m, v, use_input_stats=False),
         lambda x: TF.instance_norm(x, torch.tensor(m, dtype=x.dtype),
                                    torch.tensor(v, dtype=x.dtype), use_input_stats=False),
         rn(2, 3, 4))
    both("group_norm", "4d", lambda x, w, b: F.group_norm(x, 2, w, b),
         lambda x, w, b: TF.group_norm(x, 2, w, b), rn(2, 4, 3, 2), rn(4), rn(4))
    both("group_norm", "1d-eps", lambda x: F.group_norm(x, 3, eps=0.01),
         lambda x: TF.group_norm(x, 3, eps=0.01), rn(3, 6, 5))
