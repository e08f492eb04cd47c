"""Cases for minigrad/ops/class_losses.py: cross_entropy with labels (2-D and 3-D), soft
targets, label smoothing and every reduction (its class weights, ignore_index and nll_loss
are in op_cases/losses.py), against the formula in NumPy/SciPy and against torch."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np
import scipy.special as sp

from minigrad import F

from .base import add_case, pos, rn, torch_table


def np_cross_entropy(logits, target, reduction="mean", label_smoothing=0.0):
    C = logits.shape[-1]
    lsm = sp.log_softmax(logits, axis=-1)
    if target.dtype.kind in "iu":
        target = np.eye(C)[target]
    q = (1 - label_smoothing) * target + label_smoothing / C
    loss = -(q * lsm).sum(-1)
    return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](loss)


_labels2 = np.array([0, 3, 3, 1])
_labels3 = np.array([[4, 0, 2], [1, 1, 3]])
for red in ("mean", "sum", "none"):
    for ls in (0.0, 0.1):
        kw = dict(reduction=red, label_smoothing=ls)
        tag = f"{red}-ls={ls}"
        add_case("cross_entropy", f"labels-2d-{tag}",
                 lambda z, kw=kw: F.cross_entropy(z, _labels2, **kw),
                 lambda z, kw=kw: np_cross_entropy(z, _labels2, **kw), rn(4, 5) * 2)
        add_case("cross_entropy", f"labels-3d-{tag}",
                 lambda z, kw=kw: F.cross_entropy(z, _labels3, **kw),
                 lambda z, kw=kw: np_cross_entropy(z, _labels3, **kw), rn(2, 3, 5))
        # soft targets are inputs too: their gradient is checked as well
        add_case("cross_entropy", f"soft-{tag}", lambda z, t, kw=kw: F.cross_entropy(z, t, **kw),
                 lambda z, t, kw=kw: np_cross_entropy(z, t, **kw), rn(3, 4),
                 sp.softmax(rn(3, 4), axis=-1))
add_case("cross_entropy", "1d-logits-0d-label", lambda z: F.cross_entropy(z, np.array(2)),
         lambda z: np_cross_entropy(z, np.array(2)), rn(5))
add_case("cross_entropy", "labels-as-int-array-input", F.cross_entropy, np_cross_entropy,
         rn(4, 5), _labels2)
add_case("cross_entropy", "unnormalized-soft",
         lambda z, t: F.cross_entropy(z, t, label_smoothing=0.2),
         lambda z, t: np_cross_entropy(z, t, label_smoothing=0.2), rn(2, 3, 4), pos(2, 3, 4))


@torch_table
def _torch_references(torch, add):
    """Against PyTorch autograd: cross_entropy."""
    TF = torch.nn.functional
    rng = np.random.default_rng(9910)
    case = add  # float64

    rn = partial(helpers.rn, rng)

    def _ti(a):  # an index / label array as a torch tensor
        return torch.as_tensor(a)

    _labels = np.array([2, 0, 4, 4, 1, 3])
    for red in ("mean", "sum", "none"):
        for ls in (0.0, 0.1):
            kw = dict(reduction=red, label_smoothing=ls)
            case("cross_entropy", f"labels-{red}-ls={ls}",
                 lambda z, kw=kw: F.cross_entropy(z, _labels, **kw),
                 lambda z, kw=kw: TF.cross_entropy(z, _ti(_labels), **kw), rn(6, 5) * 2)
            case("cross_entropy", f"soft-{red}-ls={ls}",
                 lambda z, t, kw=kw: F.cross_entropy(z, t, **kw),
                 lambda z, t, kw=kw: TF.cross_entropy(z, t, **kw), rn(4, 5) * 2,
                 np.exp(rn(4, 5)) / 3.0)
