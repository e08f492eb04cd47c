"""The losses over classes, as ``torch.nn.functional`` defines them: ``nll_loss`` and
``cross_entropy`` (values, ``reduction``, class weights, ``ignore_index``, label smoothing,
soft targets).

Each is a NumPy forward with its VJP beside it; docs/backward.md §11 and §28 derive them. Both
share one layout rule: the classes lie along ``axis`` of the input, labels have the input's
shape without that axis, soft targets the input's shape, class weights (C,). Their defaults
differ: ``cross_entropy`` takes the last axis ((B, T, C) logits work as they are),
``nll_loss`` torch's axis 1 ((N, C) or (N, C, d1, ...); 0 for a (C,) input);
``cross_entropy(..., axis=1)`` is torch's layout. float32 stays float32.
"""
from __future__ import annotations

import numpy as np

from ..checks import integer, real
from ..defop import as_array_input, as_floating, op
from .activations import log_softmax, log_softmax_array
from .losses import reduce_loss, reduction_mode

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # pragma: no cover
    from numpy.core.multiarray import normalize_axis_index  # type: ignore[no-redef]  # (NumPy 1.x)

__all__ = ["nll_loss", "cross_entropy"]


def _class_axis(owner: str, x, axis) -> int:
    """``axis``, the classes' axis of ``x``, as an index in [0, x.ndim): a TypeError for what
    is not an integer, NumPy's AxisError (naming the op) for one out of range."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{owner} axis: got {axis!r}; expected an integer, the axis of the "
                        "classes")
    return normalize_axis_index(int(axis), x.ndim, f"{owner} axis")


def _labels(owner: str, labels, shape: tuple, C: int, ignore_index: int):
    """Integer labels of ``shape`` in [0, C) or equal to ``ignore_index``; returns them with
    ``keep`` (not ignored) and ``safe`` (ignored ones replaced by class 0, to index with).
    ``safe`` is a new array: the VJPs index with it, and the caller's labels may change
    before backward (a NumPy array has no version for the engine to check)."""
    if labels.dtype.kind not in "iu":
        raise TypeError(f"{owner} target: got dtype {labels.dtype}; expected integer class "
                        "labels")
    if labels.shape != shape:
        raise ValueError(f"{owner} target: got integer labels of shape {labels.shape}; "
                         f"expected shape {shape}")
    if not 0 <= ignore_index < C and _in_range(labels, C):
        # the common case: every label is a class, so none equals ignore_index
        return np.ones(shape, dtype=bool), labels.copy(), True
    keep = labels != ignore_index
    every = bool(np.logical_and.reduce(keep, axis=None))  # nothing ignored
    kept = labels if every else labels[keep]
    if not _in_range(kept, C):
        raise ValueError(f"{owner} target: got labels in [{kept.min()}, {kept.max()}]; "
                         f"expected class indices in [0, {C - 1}] (or ignore_index, "
                         f"{ignore_index})")
    return keep, (labels.copy() if every else np.where(keep, labels, 0)), every


def _in_range(labels, C: int) -> bool:
    """True when every label is in [0, C) (none for an empty array)."""
    # the ufuncs' own reductions: min() and max() without NumPy's Python wrappers
    return not labels.size or bool(np.minimum.reduce(labels, axis=None) >= 0
                                   and np.maximum.reduce(labels, axis=None) < C)


def _class_weight(owner: str, weight, C: int, dtype):
    if weight is None:
        return None
    weight = as_array_input(weight, owner, "weight")
    if np.shape(weight) != (C,):
        raise ValueError(f"{owner} weight: got shape {np.shape(weight)}; expected ({C},), "
                         "one weight per class")
    return np.asarray(weight).astype(dtype, copy=False)


def _target_weight(keep, safe, w, dtype):
    """w_{y_i} for every kept target, 0 for ignored ones (1 for kept ones without weights)."""
    return keep.astype(dtype) if w is None else np.where(keep, w[safe], 0).astype(dtype)


@op(arrays=1)
def nll_loss(log_probs, labels, weight=None, ignore_index=-100, reduction="mean", axis=None):
    """ℓ_n = -w_{y_n} log_probs[n, y_n] (0 where y_n = ignore_index); 'mean' is Σ ℓ / Σ w_{y_n}.

    The classes lie along ``axis`` of log_probs; labels have its shape without that axis.
    The default None is torch's layout: (N, C) or (N, C, d1, ...), classes on axis 1, labels
    (N,) or (N, d1, ...); or (C,), classes on axis 0, a label (). The same rule as
    ``cross_entropy``'s ``axis`` (whose default is the last axis).
    VJP: log_probs̄[n, y_n] = -w_{y_n} s_n, 0 elsewhere.
    Derivation: docs/backward.md §28. Tests: tests/minigrad/op_cases/losses.py,
    tests/minigrad/ops/test_losses.py.
    """
    reduction = reduction_mode("nll_loss", reduction)
    ignore_index = integer("ignore_index", ignore_index, owner="nll_loss")
    lp = as_floating(log_probs)
    if lp.ndim < 1:
        raise ValueError(f"nll_loss log_probs: got shape {lp.shape}; expected (N, C), "
                         "(N, C, d1, ...) or (C,)")
    ax = min(lp.ndim - 1, 1) if axis is None else _class_axis("nll_loss", lp, axis)
    last = np.moveaxis(lp, ax, -1)  # classes last, as a view
    C = last.shape[-1]
    labels = np.asarray(labels)
    keep, safe, _ = _labels("nll_loss", labels, last.shape[:-1], C, ignore_index)
    w = _class_weight("nll_loss", weight, C, lp.dtype)
    wy = _target_weight(keep, safe, w, lp.dtype)
    picked = np.take_along_axis(last, safe[..., None], axis=-1)[..., 0]
    loss = -wy * np.where(keep, picked, 0)  # an ignored row's log-prob may be -inf
    out, scale = reduce_loss(loss, reduction, np.sum(wy))

    def vjp(g):
        grad = np.zeros_like(lp)
        at = np.moveaxis(grad, ax, -1)  # a view: writes land in grad
        with np.errstate(invalid="ignore"):  # 0 · inf: zero total weight, nan as in torch
            values = np.where(keep, -wy * scale(g), 0)  # ignored targets: 0, even then
        np.put_along_axis(at, safe[..., None], values[..., None], axis=-1)
        return grad

    return out, (vjp, None, None)


def _check_cross_entropy(logits, label_smoothing, reduction, ignore_index):
    if logits.ndim < 1 or logits.dtype.kind != "f":
        raise ValueError(
            f"cross_entropy logits: got shape {logits.shape} dtype {logits.dtype}; expected a "
            "floating array of shape (..., C) with the classes on the last axis"
        )
    if logits.shape[-1] == 0:  # no class to be right about: every formula divides by C
        raise ValueError(f"cross_entropy logits: got shape {logits.shape}, no classes; "
                         "expected at least one class on the last axis")
    reduction_mode("cross_entropy", reduction)
    integer("ignore_index", ignore_index, owner="cross_entropy")
    return real("label_smoothing", label_smoothing, low=0.0, high=1.0, owner="cross_entropy")


@op(arrays=1)
def cross_entropy(logits, target, reduction="mean", label_smoothing=0.0, weight=None,
                  ignore_index=-100, axis=-1):
    """Cross-entropy of softmax(logits) against class labels or soft targets (classes last).

    The classes lie along ``axis`` of the logits (default the last: (..., C)); target:
    integer labels of the logits' shape without that axis, or probabilities of the logits'
    shape. ``axis=1`` is torch's layout (N, C, d1, ...); the same rule as ``nll_loss``'s
    ``axis`` (whose default is torch's). Below, for axis -1: logits (..., C), labels (...)
    or probabilities (..., C). With smoothing ε
    the target distribution is q = (1 - ε) · target + ε / C (target one-hot for labels);
    class weights w (C,) make it q̃ = (1 - ε) w_y e_y + (ε/C) w for labels, q ⊙ w for soft.
        loss_i = -Σ_c q̃_ic log softmax(logits_i)_c,  then mean, sum or none.
    'mean' divides by the number of rows, or, for labels with weights or ignore_index, by
    Σ_i w_{y_i} over the rows not ignored (torch's rule). Labels equal to ``ignore_index``
    add 0; all ignored: nan. Pass weight= and ignore_index= by keyword.
    VJP: logits̄_i = s_i · (softmax(logits_i) Σ_c q̃_ic - q̃_i),
         target̄_i = -s_i (1 - ε) w log softmax_i,
    where s_i is g / (that count) for 'mean', g for 'sum', g_i for 'none'.
    Derivation: docs/backward.md §11 and §28. Tests: tests/minigrad/op_cases/class_losses.py,
    tests/minigrad/op_cases/losses.py, tests/minigrad/ops/test_losses.py,
    tests/minigrad/ops/test_class_losses.py.
    """
    target = np.asarray(target)
    if type(axis) is not int or axis != -1:  # the default needs no check: the common case
        ax = _class_axis("cross_entropy", logits, axis)
        if ax != logits.ndim - 1:
            return _cross_entropy_along(ax, logits, target, reduction, label_smoothing, weight,
                                        ignore_index)
    return _cross_entropy_last(logits, target, reduction, label_smoothing, weight, ignore_index)


def _cross_entropy_along(ax, logits, target, *args):
    """cross_entropy with the classes on axis ``ax``: the logits (and soft targets) with that
    axis moved last, as views; the gradients moved back."""
    # the checks whose messages would otherwise show the moved layout
    if logits.dtype.kind != "f":
        raise ValueError(f"cross_entropy logits: got shape {logits.shape} dtype {logits.dtype}; "
                         f"expected a floating array, with the classes on axis {ax}")
    if logits.shape[ax] == 0:
        raise ValueError(f"cross_entropy logits: got shape {logits.shape}, no classes on axis "
                         f"{ax}; expected at least one class")
    if target.dtype.kind == "f" and target.shape != logits.shape:
        labels = logits.shape[:ax] + logits.shape[ax + 1:]
        raise ValueError(f"cross_entropy target: got soft targets of shape {target.shape}; "
                         f"expected the logits' shape {logits.shape} (or integer labels of "
                         f"shape {labels})")
    if target.dtype.kind == "f":
        target = np.moveaxis(target, ax, -1)
    out, vjps = _cross_entropy_last(np.moveaxis(logits, ax, -1), target, *args)
    return out, tuple(None if v is None else (lambda g, v=v: np.moveaxis(v(g), -1, ax))
                      for v in vjps)


def _cross_entropy_last(logits, target, reduction, label_smoothing, weight, ignore_index):
    """cross_entropy with the classes on the last axis: the forward and its VJPs."""
    if _plain_case(logits, target, reduction, label_smoothing, weight, ignore_index):
        return _plain_cross_entropy(logits, target)
    eps = _check_cross_entropy(logits, label_smoothing, reduction, ignore_index)
    C = logits.shape[-1]
    hard = _is_hard(logits, target)
    if not hard and ignore_index != -100:
        raise ValueError(f"cross_entropy ignore_index: got {ignore_index}; ignore_index "
                         "applies to integer class labels only, not to soft targets")
    w = _class_weight("cross_entropy", weight, C, logits.dtype)
    lsm, _ = log_softmax.forward(logits, -1)
    count = None  # 'mean' divides by the number of rows, unless labels are weighted or ignored
    plain = False  # labels, no weight, none ignored: section 11's path
    if hard:
        keep, safe, every = _labels("cross_entropy", target, logits.shape[:-1], C, ignore_index)
        picked = _pick(lsm, safe)
        plain = w is None and every
        if plain:  # every row counts once: the formulas (and bits) cross_entropy always had
            loss = -picked if eps == 0 else -(1.0 - eps) * picked - (eps / C) * np.sum(lsm, axis=-1)
        else:
            wy = _target_weight(keep, safe, w, logits.dtype)
            count = np.sum(wy)
            loss = -(1.0 - eps) * wy * np.where(keep, picked, 0)
            if eps:
                smooth = np.sum(lsm if w is None else lsm * w, axis=-1)
                loss = loss - (eps / C) * np.where(keep, smooth, 0)
    else:
        q = target if eps == 0 else (1.0 - eps) * target + eps / C
        if w is not None:
            q = q * w
        loss = -np.sum(q * lsm, axis=-1)
    out, row_scale = reduce_loss(loss, reduction, count)

    def scale(g):
        s = row_scale(g)
        return s[..., None] if reduction == "none" else s

    def vjp_logits(g):
        p = np.exp(lsm, order="C")  # C order: the reshape below must be a view
        rows = p.size // C if C else 0
        if hard and plain:
            if eps:
                p -= eps / C
            # one label per row, so plain fancy-index assignment cannot collide
            p.reshape(-1, C)[np.arange(rows), safe.reshape(-1)] -= 1.0 - eps
        elif hard:  # p Σ q̃ - q̃ with q̃ = (1 - ε) w_y e_y + (ε/C) w, zero on ignored rows
            wsum = C if w is None else np.sum(w)
            p *= ((1.0 - eps) * wy + (eps / C) * wsum * keep)[..., None]
            if eps:
                p -= (eps / C) * (keep[..., None] if w is None else keep[..., None] * w)
            p.reshape(-1, C)[np.arange(rows), safe.reshape(-1)] -= ((1.0 - eps) * wy).reshape(-1)
        else:
            p *= np.sum(q, axis=-1, keepdims=True)
            p -= q
        if not hard or plain:
            p *= scale(g)
            return p
        s = np.where(keep[..., None], scale(g), 0)  # ignored rows stay 0, even where s is inf
        with np.errstate(invalid="ignore"):  # zero total weight: 0 · inf = nan, as in torch
            p *= s
        return p

    def vjp_target(g):
        lw = lsm if w is None else lsm * w
        return -(1.0 - eps) * lw * scale(g)

    return out.astype(logits.dtype, copy=False), (vjp_logits, None if hard else vjp_target)


def _plain_case(logits, target, reduction, label_smoothing, weight, ignore_index) -> bool:
    """True for section 11's case, checked as cheaply as it can be: floating logits (..., C),
    integer labels (...) that are all classes (so none is ignored), mean, no weight, no
    smoothing. Anything else (bad arguments included) takes the general path."""
    if (weight is not None or type(reduction) is not str or reduction != "mean"
            or type(label_smoothing) not in (float, int) or label_smoothing != 0
            or type(ignore_index) is not int or target.dtype.kind not in "iu"
            or not target.size or not logits.ndim or logits.dtype.kind != "f"
            or target.shape != logits.shape[:-1]):
        return False
    C = logits.shape[-1]
    return not 0 <= ignore_index < C and _in_range(target, C)


def _plain_cross_entropy(logits, labels):
    """loss = -mean_i log softmax(logits_i)[y_i];  logits̄ = (softmax(logits) - onehot(y)) g / n
    (docs/backward.md §11): the general path's plain branch, the same operations, one call."""
    lsm = log_softmax_array(logits, -1)
    n = labels.size
    # where each row's label sits in the flattened rows: one index for the gather and the
    # VJP's write (cheaper than indexing by (row, label) pairs twice)
    flat = labels.reshape(-1).astype(np.intp, copy=False) + np.arange(0, n * lsm.shape[-1],
                                                                      lsm.shape[-1])
    picked = lsm.reshape(-1)[flat]
    out = np.add.reduce(-picked, axis=None) / n

    def vjp_logits(g):
        p = np.exp(lsm, order="C")  # C order: the reshape below must be a view
        # one label per row, so plain fancy-index assignment cannot collide
        p.reshape(-1)[flat] -= 1.0
        p *= g / n
        return p

    return out.astype(logits.dtype, copy=False), (vjp_logits, None)


def _pick(values, labels):
    """values[..., labels] per row: (..., C) and (...) -> (...). A gather, so it equals
    ``take_along_axis(values, labels[..., None], -1)[..., 0]`` exactly, without its cost of
    building broadcast index arrays (a fifth of a small cross-entropy's forward)."""
    C = values.shape[-1]
    rows = values.reshape(-1, C)
    return rows[np.arange(rows.shape[0]), labels.reshape(-1)].reshape(labels.shape)


def _is_hard(logits, target) -> bool:
    """True for integer labels of the logits' leading shape, False for soft targets of the
    logits' shape; anything else is refused, naming the target."""
    if target.dtype.kind in "iu":
        return True
    if target.dtype.kind == "f":
        if target.shape != logits.shape:
            raise ValueError(
                f"cross_entropy target: got soft targets of shape {target.shape}; expected the "
                f"logits' shape {logits.shape} (or integer labels of shape {logits.shape[:-1]})"
            )
        return False
    raise TypeError(
        f"cross_entropy target: got dtype {target.dtype}; expected integer class labels or "
        "floating soft targets"
    )
