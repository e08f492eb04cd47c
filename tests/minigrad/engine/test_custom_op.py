"""The custom-op API: ``@mg.op`` and ``mg.record``, as a user writes new ops."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg

RNG = np.random.default_rng(11)


@mg.op
def softplus(x):
    """y = log(1 + e^x).   VJP: x̄ = ȳ · sigmoid(x)."""
    y = np.logaddexp(0.0, x)
    return y, lambda g: g / (1.0 + np.exp(-x))


def test_readme_softplus_values_grad_and_gradcheck():
    x0 = np.array([-30.0, -1.0, 0.0, 2.0, 40.0])
    x = mg.Tensor(x0, requires_grad=True)
    y = softplus(x)
    assert isinstance(y, mg.Tensor) and y.op == "softplus"
    np.testing.assert_allclose(y.data, np.log1p(np.exp(x0)), rtol=1e-13)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 1 / (1 + np.exp(-x0)), rtol=1e-13)
    mg.gradcheck(softplus, [mg.Tensor(RNG.standard_normal((3, 4)), requires_grad=True)])


def test_forward_attribute_and_name_keyword():
    x0 = np.array([0.5, 1.5])
    y, vjp = softplus.forward(x0)
    np.testing.assert_allclose(y, np.logaddexp(0, x0))
    np.testing.assert_allclose(vjp(np.ones(2)), 1 / (1 + np.exp(-x0)))
    assert softplus.__name__ == "softplus" and "sigmoid" in softplus.__doc__

    @mg.op(name="my_square")
    def square(x):
        return x * x, lambda g: 2 * g * x

    t = square(mg.tensor([3.0], requires_grad=True))
    assert t.op == "my_square"
    assert square.forward(np.array([2.0]))[0][0] == 4.0


def test_two_inputs_with_a_none_vjp_for_a_non_differentiable_position():
    @mg.op
    def masked_scale(x, mask, scale=1.0):
        m = mask.astype(x.dtype)
        return x * m * scale, (lambda g: g * m * scale, None)

    x = mg.Tensor(RNG.standard_normal(4), requires_grad=True)
    maskt = mg.Tensor(np.array([1.0, 0.0, 1.0, 0.0]), requires_grad=True)  # floating, yet no VJP
    with pytest.raises(TypeError, match="masked_scale mask: a Tensor that requires grad"):
        masked_scale(x, maskt, scale=3.0)  # its gradient would be lost without a word
    masked_scale(x, maskt.detach(), scale=3.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 0.0, 3.0, 0.0])
    mg.gradcheck(lambda t: masked_scale(t, np.array([True, False, True, True])),
                 [mg.Tensor(RNG.standard_normal(4), requires_grad=True)])


def test_single_vjp_means_only_the_first_input_is_differentiable():
    @mg.op
    def shift(x, y):
        return x + y, lambda g: g

    x, y = mg.tensor([1.0, 2.0], requires_grad=True), mg.tensor([5.0, 6.0], requires_grad=True)
    with pytest.raises(TypeError, match="shift y: a Tensor that requires grad"):
        shift(x, y)  # y's gradient would be lost without a word
    shift(x, y.detach()).sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])


def test_engine_undoes_broadcasting_for_custom_ops():
    @mg.op
    def plus_times(a, b):  # a + 2b, its VJPs in the broadcast (output) shape
        out = a + 2 * b
        return out, (lambda g: g, lambda g: 2 * np.broadcast_to(g, out.shape))

    a = mg.Tensor(RNG.standard_normal((2, 1, 3)), requires_grad=True)
    b = mg.Tensor(RNG.standard_normal((4, 1)), requires_grad=True)
    y = plus_times(a, b)
    assert y.shape == (2, 4, 3)
    y.sum().backward()
    np.testing.assert_array_equal(a.grad, np.full((2, 1, 3), 4.0))  # 4 copies along axis 1
    np.testing.assert_array_equal(b.grad, np.full((4, 1), 2.0 * 2 * 3))
    mg.gradcheck(plus_times, [a, b])


def test_engine_casts_custom_vjp_results_to_the_input_dtype():
    @mg.op
    def cube(x):
        return x ** 3, lambda g: (3.0 * g * x * x).astype(np.float64)

    x = mg.Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    cube(x).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, [3.0, 12.0])


def test_constants_and_numpy_scalars_are_passed_through():
    seen = []

    @mg.op
    def affine(x, w, b):
        seen.append((type(x), type(w), type(b)))
        return x * w + b, (lambda g: g * w, None, None)

    x = mg.Tensor(np.ones(2, np.float32), requires_grad=True)
    y = affine(x, np.float64(3.0), np.array([1.0, 2.0], np.float32))
    assert seen[0][0] is np.ndarray and seen[0][2] is np.ndarray
    assert y.dtype == np.float32  # the NumPy scalar did not promote the output
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 3.0])


def test_record_for_a_variadic_op():
    def weighted_sum(*tensors):
        """out = Σ_i (i + 1) t_i.   VJP: t̄_i = (i + 1) g."""
        arrays = [t.data if isinstance(t, mg.Tensor) else np.asarray(t) for t in tensors]
        out = sum((i + 1) * a for i, a in enumerate(arrays))
        vjps = [(lambda g, k=i + 1: k * g) for i in range(len(arrays))]
        return mg.record(out, tensors, vjps, "weighted_sum")

    ts = [mg.Tensor(RNG.standard_normal(3), requires_grad=True) for _ in range(3)]
    const = np.ones(3)
    y = weighted_sum(ts[0], const, ts[1], ts[2])
    assert y.op == "weighted_sum"
    y.sum().backward()
    for k, t in zip((1, 3, 4), ts, strict=True):
        np.testing.assert_array_equal(t.grad, np.full(3, float(k)))
    mg.gradcheck(lambda a, b, c: weighted_sum(a, b, c), [t.detach().requires_grad_() for t in ts])
    with mg.no_grad():
        assert not weighted_sum(*ts).requires_grad
    assert not weighted_sum(const, const).requires_grad  # no input needs grad: no node


def test_custom_op_inside_a_larger_graph():
    x0 = RNG.standard_normal((3, 2))
    x = mg.Tensor(x0, requires_grad=True)
    (softplus(x * 2.0) * x).sum().backward()
    sp, sg = np.logaddexp(0, 2 * x0), 1 / (1 + np.exp(-2 * x0))
    np.testing.assert_allclose(x.grad, sp + x0 * 2 * sg, rtol=1e-12)

