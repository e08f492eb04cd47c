"""cross_entropy and nll_loss (ops/class_losses.py) beyond the case table.

cross_entropy against the same function composed from primitive ops (values and the
gradients of the logits and of soft targets, float64, to ~1e-12), hard labels against their
one-hot soft targets, and against SciPy at logits of magnitude 1e4; labels as a Tensor or a
list; a non-contiguous view of the logits; bad arguments raise errors naming the argument,
and no classes (C = 0) is a ValueError naming the logits whatever the targets and options
(it raised ZeroDivisionError, IndexError or a reshape error once). Both losses differentiate
the labels the forward saw: a label array the caller changes after the forward (a reused
batch buffer, say) must not change the gradient (NumPy arrays carry no version for the
engine to check)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp
from helpers import assert_same_function, c_cross_entropy

import minigrad as mg
from minigrad import F, Tensor

RNG = np.random.default_rng(7)


# ---- cross_entropy against its composition ---------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("kind", ["hard-2d", "hard-3d", "soft", "soft-3d"])
def test_cross_entropy_equals_composition(reduction, label_smoothing, kind):
    kw = dict(reduction=reduction, label_smoothing=label_smoothing)
    if kind.startswith("hard"):
        shape = (6, 5) if kind == "hard-2d" else (2, 3, 5)
        z, y = RNG.standard_normal(shape) * 2, RNG.integers(0, 5, shape[:-1])
        assert_same_function(lambda t: F.cross_entropy(t, y, **kw),
                             lambda t: c_cross_entropy(t, y, **kw), [z])
    else:
        shape = (4, 5) if kind == "soft" else (2, 3, 4)
        z, q = RNG.standard_normal(shape) * 2, sp.softmax(RNG.standard_normal(shape), axis=-1)
        # both the logits' and the soft targets' gradients are compared
        assert_same_function(lambda t, s: F.cross_entropy(t, s, **kw),
                             lambda t, s: c_cross_entropy(t, s, **kw), [z, q])


def test_cross_entropy_hard_equals_soft_one_hot():
    z, y = RNG.standard_normal((5, 4)), np.array([3, 0, 0, 2, 1])
    for ls in (0.0, 0.1):
        assert_same_function(lambda t: F.cross_entropy(t, y, label_smoothing=ls),  # noqa: B023 (called at once)
                             lambda t: F.cross_entropy(t, np.eye(4)[y], label_smoothing=ls), [z])  # noqa: B023 (called at once)


# ---- SciPy and large logits --------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1e4, -1e4])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_cross_entropy_large_logits(scale, label_smoothing):
    z = RNG.standard_normal((6, 5)) * scale
    y = RNG.integers(0, 5, 6)
    C, ls = 5, label_smoothing
    q = (1 - ls) * np.eye(C)[y] + ls / C
    lsm = sp.log_softmax(z, axis=-1)
    expected = -np.mean(np.sum(q * lsm, axis=-1))
    for target in (y, np.eye(C)[y]):
        t = mg.Tensor(z, requires_grad=True)
        loss = F.cross_entropy(t, target, label_smoothing=ls)
        loss.backward()
        np.testing.assert_allclose(loss.item(), expected, rtol=1e-12)
        np.testing.assert_allclose(t.grad, (np.exp(lsm) - q) / 6, rtol=1e-9, atol=1e-15)
        assert np.all(np.isfinite(t.grad))


# ---- arguments -----------------------------------------------------------------------------------
Z = mg.Tensor(np.zeros((3, 4)), requires_grad=True)


@pytest.mark.parametrize("target,kwargs,err,word", [
    (np.array([0, 4, 1]), {}, ValueError, "target"),
    (np.array([0, -1, 1]), {}, ValueError, "target"),
    (np.array([0, 1]), {}, ValueError, "target"),
    (np.array([[0, 1, 2]]), {}, ValueError, "target"),
    (np.zeros((3, 5)), {}, ValueError, "target"),
    (np.zeros((4,)), {}, ValueError, "target"),
    (np.array([True, False, True]), {}, TypeError, "target"),
    (np.array([0, 1, 2]), {"reduction": "avg"}, ValueError, "reduction"),
    (np.array([0, 1, 2]), {"reduction": None}, ValueError, "reduction"),
    (np.array([0, 1, 2]), {"label_smoothing": 1.5}, ValueError, "label_smoothing"),
    (np.array([0, 1, 2]), {"label_smoothing": -0.1}, ValueError, "label_smoothing"),
])
def test_cross_entropy_bad_arguments(target, kwargs, err, word):
    with pytest.raises(err, match=word):
        F.cross_entropy(Z, target, **kwargs)


def test_cross_entropy_integer_logits_rejected():
    with pytest.raises((ValueError, TypeError), match="logits"):
        F.cross_entropy(np.zeros((2, 3), dtype=np.int64), np.array([0, 1]))


def test_cross_entropy_accepts_label_tensor_and_list():
    z = RNG.standard_normal((3, 4))
    ref = F.cross_entropy(mg.Tensor(z), np.array([1, 0, 3])).item()
    assert F.cross_entropy(mg.Tensor(z), mg.Tensor(np.array([1, 0, 3]))).item() == ref
    assert F.cross_entropy(mg.Tensor(z), [1, 0, 3]).item() == ref


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_cross_entropy_hard_labels_on_non_contiguous_logits(label_smoothing):
    # A permuted (..., C) view makes softmax(logits) non-C-contiguous; the label subtraction
    # must still land in the gradient (it once went into a discarded reshape copy).
    rng = np.random.default_rng(7)
    raw = rng.standard_normal((4, 3, 5))
    labels = rng.integers(0, 5, size=(3, 4))
    grads = []
    for make_contiguous in (False, True):
        x = mg.Tensor(raw.copy(), requires_grad=True)
        logits = x.transpose(1, 0, 2)
        if make_contiguous:
            logits = logits.reshape(12, 5).reshape(3, 4, 5) * 1.0
        F.cross_entropy(logits, labels, label_smoothing=label_smoothing).backward()
        grads.append(x.grad)
    np.testing.assert_allclose(grads[0], grads[1], rtol=0, atol=1e-15)
    # each row of d(loss)/d(logits) sums to zero
    np.testing.assert_allclose(grads[0].sum(axis=-1), 0.0, atol=1e-15)


# ---- no classes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 0), (0, 0), (0,), (3, 4, 0)])
@pytest.mark.parametrize("kwargs", [{}, {"reduction": "none"}, {"reduction": "sum"},
                                    {"label_smoothing": 0.1}, {"ignore_index": 0}])
def test_no_classes_is_a_value_error_naming_the_logits(shape, kwargs):
    labels = np.full(shape[:-1], -100)
    with pytest.raises(ValueError, match=r"cross_entropy logits: .*no classes"):
        F.cross_entropy(Tensor(np.zeros(shape), requires_grad=True), labels, **kwargs)
    with pytest.raises(ValueError, match=r"cross_entropy logits: .*no classes"):
        F.cross_entropy(np.zeros(shape), np.zeros(shape))  # soft targets too


def test_an_empty_batch_of_some_classes_still_works():
    out = F.cross_entropy(Tensor(np.zeros((0, 3)), requires_grad=True), np.zeros(0, int),
                          reduction="sum")
    assert out.item() == 0.0


# ---- the labels the forward saw --------------------------------------------------------------------
X = np.random.default_rng(0).standard_normal((3, 4))
LABELS = [0, 1, 2]

CASES = {
    "cross_entropy plain": lambda x, y: F.cross_entropy(x, y),
    "cross_entropy smoothing": lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1),
    "cross_entropy weight": lambda x, y: F.cross_entropy(x, y, weight=np.arange(1.0, 5.0)),
    "cross_entropy sum": lambda x, y: F.cross_entropy(x, y, reduction="sum"),
    "cross_entropy ignore_index": lambda x, y: F.cross_entropy(x, y, ignore_index=3),
    "nll_loss": lambda x, y: F.nll_loss(x, y),
    "nll_loss weight": lambda x, y: F.nll_loss(x, y, weight=np.arange(1.0, 5.0)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_changing_the_labels_after_the_forward_leaves_the_gradient(name):
    loss_of = CASES[name]
    reference = Tensor(X.copy(), requires_grad=True)
    loss_of(reference, np.array(LABELS)).backward()

    x = Tensor(X.copy(), requires_grad=True)
    labels = np.array(LABELS)
    loss = loss_of(x, labels)
    labels[:] = [1, 2, 0]  # the caller reuses its buffer before backward
    loss.backward()
    np.testing.assert_array_equal(x.grad, reference.grad)
