"""cross_entropy and nll_loss differentiate the labels the forward saw: a label array the
caller changes after the forward (a reused batch buffer, say) must not change the gradient
(NumPy arrays carry no version for the engine to check)."""
import numpy as np
import pytest

from minigrad import F, Tensor

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
