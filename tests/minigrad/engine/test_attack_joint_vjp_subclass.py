"""A subclass of ``mg.JointVJP`` (say, one that names itself in reprs) is a JointVJP: the
engine records it as one, in grad mode as well as under no_grad, for ops with one output
and with several."""
import numpy as np

import minigrad as mg


class NamedJoint(mg.JointVJP):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"NamedJoint({self.gradients.__name__})"


@mg.op(arrays=2)
def scaled(x, w):
    """y = x ⊙ w.   x̄ = ȳ ⊙ w, w̄ = ȳ ⊙ x."""
    def gradients(g, needed):
        return [g * w if needed[0] else None, g * x if needed[1] else None]
    return x * w, NamedJoint(gradients)


@mg.op(arrays=1)
def pair(x):
    """(2x, x²).   x̄ = 2 ȳ_0 + 2 x ȳ_1."""
    def gradients(gs, needed):
        return [2.0 * gs[0] + 2.0 * x * gs[1]]
    return (2.0 * x, x * x), NamedJoint(gradients)


def leaf(seed, *shape):
    return mg.Tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def test_a_subclass_is_recorded_as_a_joint_vjp():
    x, w = leaf(0, 4, 3), leaf(1, 4, 3)
    cot = np.random.default_rng(2).standard_normal((4, 3))
    scaled(x, w).backward(cot)
    np.testing.assert_array_equal(x.grad, cot * w.data)
    np.testing.assert_array_equal(w.grad, cot * x.data)
    mg.gradcheck(scaled, (leaf(3, 2, 3), leaf(4, 2, 3)))
    mg.gradcheck(lambda x: pair(x)[0] * pair(x)[1], (leaf(5, 3),))


def test_a_subclass_of_a_multi_output_op_gets_its_cotangents_once():
    x = leaf(6, 5)
    a, b = pair(x)
    (a.sum() + b.sum()).backward()
    np.testing.assert_allclose(x.grad, 2.0 + 2.0 * x.data, rtol=4 * np.finfo(float).eps)
