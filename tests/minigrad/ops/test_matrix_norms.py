"""norm's matrix orders beyond Frobenius (ops/matrix_norms.py) where the op table cannot
look: the gradient at ties (repeated singular values, equal column or row sums), where it is
a choice among subgradients (torch's: the mean over the tied ones), written out by hand;
rank-deficient matrices; empty matrices as np.linalg.norm takes them; shapes, dtypes and bad
orders. Against torch on random and degenerate matrices: op_cases/reduce.py."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import grad_of

import minigrad as mg
from minigrad import F

F32 = np.float32


def test_spectral_norm_of_the_identity_shares_its_gradient_evenly():
    # every singular value is 1: torch's choice, the mean of u_i v_iᵀ over the tie, is I/3
    v, g = grad_of(lambda t: F.norm(t, 2), np.eye(3))
    assert v == 1.0
    np.testing.assert_allclose(g, np.eye(3) / 3, atol=1e-15)
    v, g = grad_of(lambda t: F.norm(t, -2), np.eye(3))
    np.testing.assert_allclose(g, np.eye(3) / 3, atol=1e-15)


def test_a_tied_top_pair_shares_between_the_two_with_their_signs():
    v, g = grad_of(lambda t: F.norm(t, 2), np.diag([3.0, -3.0, 1.0]))
    assert v == 3.0
    np.testing.assert_allclose(g, np.diag([0.5, -0.5, 0.0]), atol=1e-15)
    _, g = grad_of(lambda t: F.norm(t, -2), np.diag([3.0, -3.0, 1.0]))
    np.testing.assert_allclose(g, np.diag([0.0, 0.0, 1.0]), atol=1e-15)


def test_nuclear_norm_gradient_is_the_polar_factor():
    # full rank: UVᵀ is unique even with repeated singular values (the identity's is I)
    _, g = grad_of(lambda t: F.norm(t, "nuc"), np.eye(3))
    np.testing.assert_allclose(g, np.eye(3), atol=1e-15)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 3))
    _, g = grad_of(lambda t: F.norm(t, "nuc"), a)
    q = a @ np.linalg.inv(np.real(_sqrtm(a.T @ a)))  # the polar factor A (AᵀA)^(-1/2)
    np.testing.assert_allclose(g, q, atol=1e-12)


def _sqrtm(s):
    w, v = np.linalg.eigh(s)
    return (v * np.sqrt(w)) @ v.T


def test_nuclear_norm_of_a_rank_deficient_matrix_gives_a_subgradient():
    # a zero singular value: UVᵀ depends on LAPACK's basis of the null spaces (torch's too);
    # whatever it is, it is a subgradient: <G, A> = ||A||_* and ||G||_2 <= 1
    a = np.outer([1.0, 2.0, -1.0], [0.5, -1.0, 2.0])  # rank 1
    v, g = grad_of(lambda t: F.norm(t, "nuc"), a)
    assert np.sum(g * a) == pytest.approx(v, rel=1e-12)
    assert np.linalg.norm(g, 2) <= 1 + 1e-12


def test_equal_column_and_row_sums_share_evenly():
    x = np.array([[1.0, -2.0], [-2.0, 1.0]])
    _, g = grad_of(lambda t: F.norm(t, 1), x)  # both column sums 3
    np.testing.assert_array_equal(g, np.sign(x) / 2)
    _, g = grad_of(lambda t: F.norm(t, -np.inf), x)
    np.testing.assert_array_equal(g, np.sign(x) / 2)
    x = np.array([[1.0, 0.0], [0.0, 3.0]])
    _, g = grad_of(lambda t: F.norm(t, 1), x)  # 0 has sign 0: no gradient there (torch's)
    np.testing.assert_array_equal(g, [[0.0, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize("ord", [2, "nuc", 1, np.inf, -1, -np.inf])
def test_empty_matrices_as_numpy(ord):
    for shape in ((0, 3), (3, 0)):
        x = np.zeros(shape)
        try:
            want = np.linalg.norm(x, ord)
        except ValueError:
            with pytest.raises(ValueError, match=f"norm x: got an empty matrix for ord={ord!r}"):
                F.norm(x, ord)
            continue
        t = mg.Tensor(x, requires_grad=True)
        out = F.norm(t, ord)
        assert out.item() == want == 0.0
        out.backward()
        assert t.grad.shape == shape
    with pytest.raises(ValueError, match="norm x: got an empty matrix for ord=-2"):
        F.norm(np.zeros((3, 0)), -2)


@pytest.mark.parametrize("ord", [2, -2, "nuc", 1, -np.inf])
def test_shapes_dtypes_and_inputs_kept(ord):
    x = np.random.default_rng(5).standard_normal((3, 2, 4)).astype(F32)
    keep = x.copy()
    t = mg.Tensor(x, requires_grad=True)
    out = F.norm(t, ord, axis=(2, 0), keepdims=True)
    assert out.shape == (1, 2, 1) and out.dtype == F32
    out.backward(np.ones(out.shape, F32))
    assert t.grad.dtype == F32 and t.grad.shape == x.shape
    np.testing.assert_array_equal(x, keep)
    np.testing.assert_allclose(out.data[0, :, 0], np.linalg.norm(x, ord, axis=(2, 0)), rtol=1e-5)


@pytest.mark.parametrize("ord", [3, 0.5, "x", True, [2], float("nan")])
def test_bad_matrix_orders_are_named(ord):
    with pytest.raises(ValueError, match="norm ord: got .* for a matrix norm; expected None, "):
        F.norm(np.eye(2), ord)


def test_axis_pairs_are_checked():
    with pytest.raises((ValueError, TypeError), match="axis"):
        F.norm(np.ones((2, 3)), 2, axis=(0, 0))
    with pytest.raises((ValueError, TypeError), match="axis"):
        F.norm(np.ones((2, 3)), "nuc", axis=(0, 2**70))
    with pytest.raises(TypeError, match="norm"):
        F.norm(np.ones((2, 3)), 2, dim=(0, 1))


def test_matrix_norm_helper_on_plain_arrays():
    from minigrad.ops.matrix_norms import matrix_norm
    x = np.random.default_rng(6).standard_normal((2, 3, 4))
    for ord in (2, -2, "nuc", 1, -1, np.inf, -np.inf):
        out, vjp = matrix_norm(x, ord, (2, 1), keepdims=False)
        np.testing.assert_allclose(out, np.linalg.norm(x, ord, axis=(2, 1)), rtol=1e-13)
        assert vjp(np.ones(2)).shape == x.shape
