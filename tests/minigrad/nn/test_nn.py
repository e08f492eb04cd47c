"""Tests of minigrad.nn: registration, checkpoints, Linear and LayerNorm."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import LayerNorm, Linear, Module, ModuleList, Parameter


# ---- helpers -----------------------------------------------------------------------------
def central_difference(f, array: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """d f() / d array by central differences, perturbing ``array`` in place (then restoring)."""
    grad = np.zeros_like(array)
    for index in np.ndindex(array.shape):
        saved = array[index]
        array[index] = saved + h
        plus = f()
        array[index] = saved - h
        minus = f()
        array[index] = saved
        grad[index] = (plus - minus) / (2 * h)
    return grad


def check_module_gradients(module: Module, x: np.ndarray, rng: np.random.Generator) -> None:
    """Backward with a random cotangent vs central differences of <module(x), cotangent>."""
    xt = mg.Tensor(x.copy(), requires_grad=True)
    out = module(xt)
    cotangent = rng.standard_normal(out.shape)
    out.backward(cotangent)

    def objective():
        return float(np.sum(module(mg.Tensor(xt.data)).data * cotangent))

    np.testing.assert_allclose(xt.grad, central_difference(objective, xt.data), rtol=1e-6, atol=1e-8)
    for name, param in module.named_parameters():
        numeric = central_difference(objective, param.data)
        np.testing.assert_allclose(param.grad, numeric, rtol=1e-6, atol=1e-8, err_msg=name)


class Block(Module):
    def __init__(self, dim: int, rng) -> None:
        super().__init__()
        self.norm = LayerNorm(dim)
        self.proj = Linear(dim, dim, rng=rng)

    def forward(self, x):
        return self.proj(self.norm(x))


class Model(Module):
    def __init__(self, dim: int = 4, depth: int = 2, seed: int = 0) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.cls = Parameter(rng.standard_normal((1, dim)))
        self.blocks = ModuleList([Block(dim, rng) for _ in range(depth)])
        self.head = Linear(dim, 3, bias=False, rng=rng)
        self.note = "plain attribute"

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


EXPECTED_NAMES = [
    "cls",
    "blocks.0.norm.weight", "blocks.0.norm.bias", "blocks.0.proj.weight", "blocks.0.proj.bias",
    "blocks.1.norm.weight", "blocks.1.norm.bias", "blocks.1.proj.weight", "blocks.1.proj.bias",
    "head.weight",
]


# ---- Parameter ---------------------------------------------------------------------------
def test_parameter_copies_its_input_and_requires_grad():
    source = np.arange(3, dtype=np.float32)
    p = Parameter(source)
    source[0] = 100.0
    assert p.data[0] == 0.0 and p.dtype == np.float32
    assert p.requires_grad and p.is_leaf and isinstance(p, mg.Tensor)
    t = mg.tensor([1.0, 2.0])
    q = Parameter(t)
    q.data[0] = 7.0
    assert t.data[0] == 1.0


def test_parameter_rejects_non_floating_data():
    with pytest.raises(TypeError, match="floating"):
        Parameter(np.arange(3))


# ---- registration ------------------------------------------------------------------------
def test_named_parameters_are_dotted_and_in_registration_order():
    model = Model()
    assert [name for name, _ in model.named_parameters()] == EXPECTED_NAMES
    assert all(a is b for a, (_, b) in zip(model.parameters(), model.named_parameters(), strict=True))
    assert model.note == "plain attribute" and "note" not in model._parameters
    assert model.blocks[1].proj.weight is model.blocks._modules["1"].proj.weight
    assert model.num_parameters() == 4 + 2 * (4 + 4 + 16 + 4) + 12


def test_named_parameters_prefix_and_modules():
    model = Model(depth=1)
    names = [name for name, _ in model.named_parameters(prefix="vit")]
    assert names[0] == "vit.cls" and names[-1] == "vit.head.weight"
    assert [name for name, _ in model.named_modules()] == [
        "", "blocks", "blocks.0", "blocks.0.norm", "blocks.0.proj", "head"]
    assert list(model.children()) == [model.blocks, model.head]


def test_shared_parameter_is_listed_once():
    model = Model()
    model.blocks[1].proj.weight = model.blocks[0].proj.weight  # tied weights
    params = list(model.parameters())
    assert len(params) == len({id(p) for p in params}) == len(EXPECTED_NAMES) - 1
    names = [name for name, _ in model.named_parameters()]
    assert "blocks.0.proj.weight" in names and "blocks.1.proj.weight" not in names


def test_reassigning_a_name_replaces_its_registration():
    model = Model(depth=1)
    model.head = None
    assert "head" not in model._modules
    assert all(not name.startswith("head") for name, _ in model.named_parameters())
    del model.cls
    assert "cls" not in dict(model.named_parameters())


def test_assigning_a_parameter_before_super_init_is_a_clear_error():
    class Forgetful(Module):
        def __init__(self):
            self.w = Parameter(np.zeros(2))

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        Forgetful()


def test_zero_grad_clears_every_grad():
    model = Model()
    model(mg.Tensor(np.ones((2, 4)))).sum().backward()
    assert all(p.grad is not None for p in model.parameters() if p is not model.cls)
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


# ---- checkpoints -------------------------------------------------------------------------
def test_state_dict_is_an_ordered_copy():
    model = Model()
    state = model.state_dict()
    assert list(state) == EXPECTED_NAMES
    before = {k: v.copy() for k, v in state.items()}
    for p in model.parameters():
        p.data += 1.0
    for name, value in state.items():
        np.testing.assert_array_equal(value, before[name])
        assert isinstance(value, np.ndarray)
    state["cls"][...] = -5.0
    assert not np.any(model.cls.data == -5.0)


def test_load_state_dict_round_trip_in_place_and_input_untouched(tmp_path):
    source, target = Model(seed=1), Model(seed=2)
    arrays_before = [p.data for p in target.parameters()]
    np.savez(tmp_path / "ckpt.npz", **source.state_dict())
    with np.load(tmp_path / "ckpt.npz", allow_pickle=False) as loaded:
        state = {k: loaded[k] for k in loaded.files}
    snapshot = {k: v.copy() for k, v in state.items()}
    result = target.load_state_dict(state)
    assert result == ([], []) and result.missing_keys == [] and result.unexpected_keys == []
    assert all(a is p.data for a, p in zip(arrays_before, target.parameters(), strict=True))
    for (name, p), (_, q) in zip(source.named_parameters(), target.named_parameters(), strict=True):
        np.testing.assert_array_equal(p.data, q.data, err_msg=name)
    x = mg.Tensor(np.random.default_rng(3).standard_normal((2, 4)))
    np.testing.assert_array_equal(source(x).data, target(x).data)
    for p in target.parameters():
        p.data *= 2.0
    for name, value in state.items():
        np.testing.assert_array_equal(value, snapshot[name], err_msg=name)


def test_strict_load_lists_missing_and_unexpected_and_writes_nothing():
    model = Model()
    before = model.state_dict()
    state = Model(seed=5).state_dict()
    del state["blocks.1.norm.bias"]
    state["blocks.9.extra"] = np.zeros(2)
    with pytest.raises(KeyError) as info:
        model.load_state_dict(state)
    message = str(info.value)
    assert "blocks.1.norm.bias" in message and "blocks.9.extra" in message
    assert "missing" in message and "unexpected" in message
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name])


def test_non_strict_load_returns_the_mismatches_and_loads_the_rest():
    model = Model()
    state = Model(seed=5).state_dict()
    del state["head.weight"]
    state["bogus"] = np.zeros(1)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert missing == ["head.weight"] and unexpected == ["bogus"]
    np.testing.assert_array_equal(model.cls.data, state["cls"])
    assert not np.array_equal(model.head.weight.data, Model(seed=5).head.weight.data)


@pytest.mark.parametrize("strict", [True, False])
def test_shape_mismatch_names_the_parameter_and_both_shapes(strict):
    model = Model()
    state = model.state_dict()
    state["blocks.0.proj.weight"] = np.zeros((4, 5))
    with pytest.raises(ValueError) as info:
        model.load_state_dict(state, strict=strict)
    message = str(info.value)
    assert "blocks.0.proj.weight" in message and "(4, 5)" in message and "(4, 4)" in message


def test_dtype_mismatch_names_the_parameter_and_both_dtypes_and_writes_nothing():
    model = Model()
    before = model.state_dict()
    state = Model(seed=5).state_dict()
    state["head.weight"] = state["head.weight"].astype(np.float32)  # the last parameter
    with pytest.raises(ValueError) as info:
        model.load_state_dict(state)
    message = str(info.value)
    assert "head.weight" in message and "float32" in message and "float64" in message
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)


# ---- Linear ------------------------------------------------------------------------------
def test_linear_shapes_and_bias_option():
    layer = Linear(3, 5, rng=0)
    assert layer.weight.shape == (3, 5) and layer.bias.shape == (5,)
    assert layer(mg.Tensor(np.ones((2, 7, 3)))).shape == (2, 7, 5)
    assert layer(mg.Tensor(np.ones(3))).shape == (5,)
    no_bias = Linear(3, 5, bias=False)
    assert no_bias.bias is None and [n for n, _ in no_bias.named_parameters()] == ["weight"]


def test_linear_init_statistics():
    fan_in, fan_out = 400, 500
    layer = Linear(fan_in, fan_out, rng=np.random.default_rng(0))
    w = layer.weight.data
    n = w.size
    # the sample mean has std sqrt(1/fan_in/n); the sample variance has relative std sqrt(2/n)
    assert abs(w.mean()) < 5 * np.sqrt(1 / fan_in / n)
    assert abs(w.var() * fan_in - 1) < 5 * np.sqrt(2 / n)
    np.testing.assert_array_equal(layer.bias.data, np.zeros(fan_out))
    np.testing.assert_array_equal(Linear(4, 2, rng=7).weight.data, Linear(4, 2, rng=7).weight.data)


def test_linear_forward_is_x_at_w_plus_b():
    rng = np.random.default_rng(1)
    layer = Linear(4, 3, rng=rng)
    layer.bias.data[...] = rng.standard_normal(3)
    x = rng.standard_normal((2, 5, 4))
    expected = np.einsum("bni,io->bno", x, layer.weight.data) + layer.bias.data
    np.testing.assert_allclose(layer(mg.Tensor(x)).data, expected, rtol=1e-12, atol=1e-12)


def test_linear_gradients_match_finite_differences():
    rng = np.random.default_rng(2)
    layer = Linear(3, 4, rng=rng)
    layer.bias.data[...] = rng.standard_normal(4)
    check_module_gradients(layer, rng.standard_normal((2, 3, 3)), rng)


def test_linear_rejects_a_wrong_input_width():
    with pytest.raises(ValueError, match=r"\(\.\.\., 3\)"):
        Linear(3, 2)(mg.Tensor(np.ones((2, 4))))


# ---- LayerNorm ---------------------------------------------------------------------------
def test_layer_norm_forward_matches_the_formula():
    rng = np.random.default_rng(3)
    norm = LayerNorm(6)
    np.testing.assert_array_equal(norm.weight.data, np.ones(6))
    np.testing.assert_array_equal(norm.bias.data, np.zeros(6))
    norm.weight.data[...] = rng.standard_normal(6)
    norm.bias.data[...] = rng.standard_normal(6)
    x = 3.0 + 2.0 * rng.standard_normal((2, 3, 6))
    mean = x.sum(-1, keepdims=True) / 6
    variance = ((x - mean) ** 2).sum(-1, keepdims=True) / 6  # population variance
    expected = (x - mean) / np.sqrt(variance + 1e-5) * norm.weight.data + norm.bias.data
    np.testing.assert_allclose(norm(mg.Tensor(x)).data, expected, rtol=1e-12, atol=1e-12)


def test_layer_norm_without_affine_has_no_parameters():
    norm = LayerNorm(5, elementwise_affine=False)
    assert list(norm.parameters()) == []
    y = norm(mg.Tensor(np.random.default_rng(4).standard_normal((3, 5)))).data
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(-1), 1, rtol=1e-4)


def test_layer_norm_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    norm = LayerNorm(5)
    norm.weight.data[...] = rng.standard_normal(5)
    norm.bias.data[...] = rng.standard_normal(5)
    check_module_gradients(norm, rng.standard_normal((2, 3, 5)), rng)


# ---- dtypes and argument checks ----------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: Linear(4, 3, dtype=np.float32, rng=0),
                                  lambda: LayerNorm(4, dtype=np.float32)])
def test_float32_modules_give_float32_outputs_and_grads(make):
    module = make()
    assert all(p.dtype == np.float32 for p in module.parameters())
    x = mg.Tensor(np.random.default_rng(6).standard_normal((2, 4)).astype(np.float32),
                  requires_grad=True)
    out = module(x)
    assert out.dtype == np.float32
    (out * out).sum().backward()
    assert x.grad.dtype == np.float32
    assert all(p.grad.dtype == np.float32 for p in module.parameters())


@pytest.mark.parametrize("make, error, words", [
    (lambda: Linear(0, 3), ValueError, ["in_features", "0", ">= 1"]),
    (lambda: Linear(3, 2.5), TypeError, ["out_features", "2.5"]),
    (lambda: Linear(3, True), TypeError, ["out_features", "True"]),
    (lambda: Linear(3, 2, dtype=np.int64), TypeError, ["dtype", "floating"]),
    (lambda: LayerNorm(-1), ValueError, ["normalized_dim", "-1"]),
    (lambda: LayerNorm(4, eps=0.0), ValueError, ["eps", "> 0"]),
    (lambda: LayerNorm(4, dtype="int32"), TypeError, ["dtype", "int32"]),
])
def test_constructor_arguments_are_checked(make, error, words):
    with pytest.raises(error) as info:
        make()
    assert all(word in str(info.value) for word in words), str(info.value)
