"""Attack review of vit.predict's public helpers."""
from __future__ import annotations

import numpy as np
import pytest

from vit.model.predict import top_k

P = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])


@pytest.mark.parametrize("k, error", [(-1, ValueError), (0, ValueError), (4, ValueError),
                                      (1.5, TypeError), (True, TypeError)])
def test_top_k_refuses_a_k_outside_the_classes(k, error):
    # k = -1 returned K - 1 classes (order[:, :-1]) and k = 0 none, silently
    with pytest.raises(error, match="top_k k"):
        top_k(P, k)


def test_top_k_orders_by_probability_then_class():
    classes, probs = top_k(P, 3)
    np.testing.assert_array_equal(classes, [[1, 2, 0], [0, 1, 2]])
    np.testing.assert_array_equal(probs, [[0.6, 0.3, 0.1], [0.5, 0.25, 0.25]])
