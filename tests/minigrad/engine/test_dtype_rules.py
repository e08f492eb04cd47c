"""The dtype rules of docs/numpy.md ("Dtype rules"): 0-d operands are weakly typed, like
Python numbers.

A 0-d Tensor or a 0-d array next to an operand with dimensions acts exactly as the Python
number it holds would: NumPy (NEP 50) then keeps the dimensioned operand's dtype within its
kind, so a float32 graph stays float32 (PyTorch keeps float32 there too). The oracle is NumPy
itself, fed the Python number. Ops with only 0-d operands, and dimensioned operands of
different dtypes, follow NumPy's ordinary promotion. Modules compute in their own dtype.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.nn import LayerNorm, Linear

BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
          "pow": np.power, "maximum": np.maximum, "minimum": np.minimum}
WRAPS = {"tensor": mg.Tensor, "array": lambda a: a}


def _tol(dtype):
    return 200 * np.finfo(dtype).eps


def test_a_float32_tensor_with_a_0d_operand_stays_float32():
    x32 = mg.Tensor(np.linspace(0.5, 2.0, 6, dtype=np.float32), requires_grad=True)
    for out, expected in [(x32 * mg.Tensor(0.5), x32.data * 0.5),
                          (x32 * np.array(0.5), x32.data * 0.5),
                          (x32 ** np.array(2), x32.data ** 2)]:
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out.data, expected)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("wrap", WRAPS)
@pytest.mark.parametrize("zero_first", [False, True])
@pytest.mark.parametrize("dim_dtype", [np.float16, np.float32, np.float64, np.int8, np.int32])
@pytest.mark.parametrize("zero_dtype", [np.float64, np.float32, np.int64, np.int8, np.bool_])
def test_a_zero_d_operand_acts_as_the_python_number_it_holds(name, wrap, zero_first, dim_dtype,
                                                             zero_dtype):
    x = np.array([1, 2, 3], dtype=dim_dtype)  # exact in every dtype; no negative powers
    z = np.array(2, dtype=zero_dtype)
    args = (z, x) if zero_first else (x, z)
    expected = BINARY[name](*(a.item() if a is z else a for a in args))  # NumPy, NEP 50
    got = getattr(F, name)(*(WRAPS[wrap](a) if a is z else mg.Tensor(a) for a in args))
    assert got.dtype == expected.dtype, (name, args)
    assert type(got.data) is np.ndarray
    np.testing.assert_array_equal(got.data, expected)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("zero_first", [False, True])
def test_a_zero_d_tensor_still_gets_its_gradient_in_its_own_dtype(name, zero_first):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2.0, (3, 4))
    z = np.array(rng.uniform(0.5, 2.0))
    cot = rng.standard_normal((3, 4))
    fn = getattr(F, name)

    def run(dtype):
        xt = mg.Tensor(x.astype(dtype), requires_grad=True)
        zt = mg.Tensor(z, requires_grad=True)  # float64 either way
        out = fn(zt, xt) if zero_first else fn(xt, zt)
        out.backward(cot.astype(out.dtype))
        return out, xt, zt

    out32, x32, z32 = run(np.float32)
    assert out32.dtype == np.float32
    assert x32.grad.dtype == np.float32 and x32.grad.shape == (3, 4)
    assert z32.grad.dtype == np.float64 and z32.grad.shape == () and type(z32.grad) is np.ndarray
    _, x64, z64 = run(np.float64)  # the float64 path, itself checked by gradcheck below
    np.testing.assert_allclose(z32.grad, z64.grad, rtol=_tol(np.float32) * 12)
    np.testing.assert_allclose(x32.grad, x64.grad, rtol=_tol(np.float32), atol=_tol(np.float32))
    f = (lambda a, b: fn(b, a)) if zero_first else fn
    mg.gradcheck(f, [x, z], raise_exception=True)


def test_where_clip_and_ternary_ops_keep_float32():
    rng = np.random.default_rng(2)
    x32 = mg.Tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    cond = rng.standard_normal((2, 3)) > 0
    z = mg.Tensor(np.array(0.25), requires_grad=True)
    for out in (F.where(cond, x32, z), F.where(cond, z, x32), F.where(cond, x32, np.array(1.0)),
                F.clip(x32, np.array(-0.5), np.array(0.5)),
                F.clip(x32, a_min=np.array(-0.5)), F.maximum(np.array(0.0), x32)):
        assert out.dtype == np.float32
    out = F.where(cond, x32, z)
    out.backward(np.ones((2, 3), np.float32))
    assert z.grad.dtype == np.float64 and z.grad == np.sum(~cond)
    mg.gradcheck(lambda a, b: F.where(cond, a, b), [x32.data.astype(np.float64), np.array(0.3)],
                 raise_exception=True)


def test_fused_ops_take_0d_constants_without_promoting():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 6)).astype(np.float32)
    w = np.ones(6, np.float32)
    for eps in (np.float64(1e-5), np.array(1e-5)):
        assert F.layer_norm(x, w, w, eps=eps).dtype == np.float32
    for scale in (np.float64(0.5), np.array(0.5)):
        assert F.self_attention(x, 2, scale=scale).dtype == np.float32
    assert F.cross_entropy(x[0, 0], np.array(3)).dtype == np.float32
    assert F.sum(mg.Tensor(x) * np.array(2.0), axis=np.array(1)).dtype == np.float32


def test_an_integer_operand_with_a_zero_d_float_becomes_float_as_with_a_python_float():
    out = mg.Tensor(np.arange(3)) * mg.Tensor(np.array(0.5, np.float32))
    expected = np.arange(3) * 0.5  # NumPy: an int array times a Python float is float64
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out.data, expected)


def test_only_zero_d_operands_follow_numpys_ordinary_rules():
    a32, b64 = np.array(0.5, np.float32), np.array(2.0)
    assert (mg.Tensor(a32) * mg.Tensor(b64)).dtype == np.float64
    assert (mg.Tensor(a32) * b64).dtype == np.float64
    assert F.stack([mg.Tensor(a32), mg.Tensor(b64)]).dtype == np.float64
    assert (mg.Tensor(a32) * 2.0).dtype == np.float32  # Python numbers are always weak


def test_mixed_dimensioned_floats_follow_numpys_promotion():
    rng = np.random.default_rng(4)
    x32 = mg.Tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    y64 = mg.Tensor(rng.standard_normal((2, 3)), requires_grad=True)
    w64 = rng.standard_normal((3, 4))
    b64 = rng.standard_normal(4)
    w32 = w64.astype(np.float32)
    outs = {
        "add": x32 + y64, "where": F.where(x32.data > 0, x32, y64),
        "concatenate": F.concatenate([x32, y64]), "stack": F.stack([x32, y64]),
        "matmul": x32 @ w64, "linear-w": F.linear(x32, w64), "linear-b": F.linear(x32, w32, b64),
        "layer_norm": F.layer_norm(x32, np.ones(3), np.zeros(3)),
    }
    for name, out in outs.items():
        assert out.dtype == np.float64, name
    np.testing.assert_allclose(outs["linear-b"].data, x32.data @ w32 + b64,  # NumPy's dtypes
                               rtol=_tol(np.float32), atol=_tol(np.float32))
    total = sum(F.sum(o) for o in outs.values())
    total.backward()
    assert x32.grad.dtype == np.float32 and y64.grad.dtype == np.float64


def test_a_loss_keeps_the_logits_dtype_with_float64_soft_targets():
    rng = np.random.default_rng(5)
    logits = mg.Tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    soft = mg.Tensor(np.full((4, 3), 1 / 3), requires_grad=True)
    loss = F.cross_entropy(logits, soft)
    assert loss.dtype == np.float32
    loss.backward()
    assert logits.grad.dtype == np.float32 and soft.grad.dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("given", [np.int64, np.int8, np.bool_, np.float64, np.float32,
                                   np.float16])
def test_a_module_computes_in_its_own_dtype(dtype, given):
    rng = np.random.default_rng(6)
    x = (rng.integers(0, 2, (2, 5, 3)) if given in (np.int64, np.int8, np.bool_)
         else rng.standard_normal((2, 5, 3))).astype(given)
    lin = Linear(3, 2, dtype=dtype, rng=0)
    norms = [LayerNorm(3, dtype=dtype), LayerNorm(3, elementwise_affine=False, dtype=dtype)]
    for module in [lin, *norms]:
        out = module(x)
        assert out.dtype == dtype, (module, given)
    expected = x.astype(dtype) @ lin.weight.data + lin.bias.data
    np.testing.assert_allclose(lin(x).data, expected, rtol=_tol(dtype), atol=_tol(dtype))
    if np.dtype(given).kind == "f":  # a Tensor input still gets its gradient, in its dtype
        xt = mg.Tensor(x, requires_grad=True)
        out = F.sum(lin(xt)) + F.sum(norms[0](xt) * np.arange(3.0))
        out.backward()
        assert xt.grad.dtype == given and lin.weight.grad.dtype == dtype


def test_a_custom_op_gets_a_0d_operand_as_a_python_number_and_its_gradient_back():
    seen = []

    @mg.op
    def scaled(a, s):
        """y = s · a.   VJP: ā = s g, s̄ = Σ a g (the engine sums the broadcast back)."""
        seen.append(type(s))
        return a * s, (lambda g: g * s, lambda g: g * a)

    x32 = mg.Tensor(np.arange(1.0, 4.0, dtype=np.float32), requires_grad=True)
    s = mg.Tensor(np.array(2.0), requires_grad=True)
    out = scaled(x32, s)
    assert seen == [float] and out.dtype == np.float32
    out.backward(np.array([1.0, -2.0, 0.5], np.float32))
    assert s.grad.dtype == np.float64 and s.grad.shape == ()
    assert s.grad == 1.0 * 1 - 2.0 * 2 + 0.5 * 3
    scaled(mg.Tensor(np.array(3.0)), s)  # only 0-d operands: arrays, as NumPy would have them
    assert seen[-1] is np.ndarray


TORCH_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow",
                "maximum": "maximum", "minimum": "minimum"}


@pytest.mark.parametrize("name", TORCH_BINARY)
@pytest.mark.parametrize("dim_dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("zero_dtype", [np.float64, np.float32, np.float16, np.int64])
def test_float_results_and_0d_gradients_agree_with_pytorch(name, dim_dtype, zero_dtype):
    """Where PyTorch's rule and NumPy's rule for Python numbers agree (a floating operand
    with dimensions), minigrad gives PyTorch's dtype, values and 0-d gradient."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 2.0, (2, 3)).astype(dim_dtype)
    z = np.array(2, dtype=zero_dtype)
    g = rng.standard_normal((2, 3)).astype(dim_dtype)
    zt = mg.Tensor(z, requires_grad=z.dtype.kind == "f")
    out = getattr(F, name)(mg.Tensor(x), zt)
    tz = torch.tensor(z, requires_grad=z.dtype.kind == "f")
    tout = getattr(torch, TORCH_BINARY[name])(torch.from_numpy(x), tz)
    assert out.dtype == tout.detach().numpy().dtype
    tol = 50 * np.finfo(dim_dtype).eps
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=tol)
    if zt.requires_grad:
        out.backward(g)
        tout.backward(torch.from_numpy(g))
        assert zt.grad.dtype == tz.grad.numpy().dtype and zt.grad.shape == ()
        np.testing.assert_allclose(zt.grad, tz.grad.numpy(), rtol=tol * 10, atol=tol)


# ---- 0-d x 0-d dtype promotion, as PyTorch --------------------------------------------------
def test_zero_d_float32_times_zero_d_float64_follows_array_promotion():
    x32 = mg.Tensor(np.ones(3, np.float32))
    assert (x32.sum() * mg.Tensor(0.5)).dtype == np.float64
    assert (x32.sum() * np.float64(0.5)).dtype == np.float32  # a NumPy scalar is a number
    assert (x32.sum() * 0.5).dtype == np.float32


def test_zero_d_promotion_matches_torch():
    torch = pytest.importorskip("torch")
    a = torch.tensor(1.0, dtype=torch.float32) * torch.tensor(0.5, dtype=torch.float64)
    ours = mg.Tensor(np.float32(1.0)) * mg.Tensor(np.float64(0.5))
    assert str(a.dtype).removeprefix("torch.") == ours.dtype.name


def test_numpy_doc_states_the_zero_d_case():
    from pathlib import Path
    page = (Path(__file__).resolve().parents[3] / "docs" / "numpy.md").read_text()
    table = page.split("## Dtype rules", 1)[1].split("\n## ", 1)[0]
    assert "np.float64(0.5)" in table and "x32.sum() * mg.Tensor(0.5)" in table
