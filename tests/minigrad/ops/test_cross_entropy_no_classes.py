"""cross_entropy with no classes (C = 0) is a ValueError naming the logits, whatever the
targets and options: it raised ZeroDivisionError, IndexError or a reshape error before."""
import numpy as np
import pytest

from minigrad import F, Tensor


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
