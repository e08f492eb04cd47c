"""``Tensor.relu()``, the method torch and tinygrad users reach for: the op F.relu."""
import numpy as np

import minigrad as mg


def test_relu_method_values_and_gradient():
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    t = mg.Tensor(x, requires_grad=True)
    out = t.relu()
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.data, [0.0, 0.0, 2.0])
    out.backward(np.array([3.0, 5.0, 7.0], np.float32))
    np.testing.assert_array_equal(t.grad, [0.0, 0.0, 7.0])  # 0 at 0, as torch.relu
