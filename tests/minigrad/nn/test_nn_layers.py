"""nn.Sequential, nn.Conv2d, nn.Embedding, the activation modules and nn.Flatten: values
against torch where installed and NumPy otherwise, gradients against finite differences."""
from collections import OrderedDict
from functools import partial

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import F, nn

assert_close = partial(helpers.assert_close, ulps=256)
RNG = np.random.default_rng(1414)


# ---- checks (wrong type TypeError, wrong value ValueError) --------------------------------
@pytest.mark.parametrize("make, error, words", [
    (lambda: nn.Linear("2", 3), TypeError, ["in_features", "'2'"]),
    (lambda: nn.Conv2d(3, 4, 0), ValueError, ["kernel_size", "0"]),
    (lambda: nn.Conv2d(3, 4, 2.0), TypeError, ["kernel_size", "2.0"]),
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, ["groups", "2"]),
    (lambda: nn.Conv2d(3, 6, 3, padding="full"), ValueError, ["padding", "'full'"]),
    (lambda: nn.Embedding(0, 4), ValueError, ["num_embeddings", "0"]),
    (lambda: nn.Embedding(3, "4"), TypeError, ["embedding_dim", "'4'"]),
    (lambda: nn.GELU("erf"), ValueError, ["approximate", "'erf'"]),
    (lambda: nn.Softmax(1.5), TypeError, ["dim", "1.5"]),
    (lambda: nn.Flatten(start_dim="1"), TypeError, ["start_dim", "'1'"]),
])
def test_constructor_arguments_are_checked(make, error, words):
    with pytest.raises(error) as info:
        make()
    assert all(w in str(info.value) for w in words), str(info.value)


# ---- Sequential ----------------------------------------------------------------------------
def test_sequential_chains_and_names_its_modules():
    a, b = nn.Linear(4, 3, rng=0), nn.Linear(3, 2, rng=1)
    model = nn.Sequential(a, nn.ReLU(), b)
    x = RNG.standard_normal((5, 4))
    expected = np.maximum(x @ a.weight.data, 0) @ b.weight.data  # biases start at 0
    assert_close(model(x).data, expected)
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "2.weight",
                                                       "2.bias"]
    assert len(model) == 3 and model[2] is b and isinstance(model[1:], nn.Sequential)
    named = nn.Sequential(OrderedDict([("fc", a), ("act", nn.Tanh())]))
    assert [n for n, _ in named.named_parameters()] == ["fc.weight", "fc.bias"]
    assert_close(named(x).data, np.tanh(x @ a.weight.data))


# ---- Conv2d --------------------------------------------------------------------------------
def test_conv2d_weight_layout_and_init():
    conv = nn.Conv2d(4, 6, (3, 2), groups=2, rng=0)
    assert conv.weight.shape == (6, 2, 3, 2) and conv.bias.shape == (6,)
    fan_in = 2 * 3 * 2
    big = nn.Conv2d(64, 64, 3, rng=0)  # 36864 draws: the standard deviation is close
    assert abs(big.weight.data.std() * np.sqrt(64 * 9) - 1) < 0.03
    np.testing.assert_array_equal(conv.bias.data, 0)
    assert conv.weight.data.std() * np.sqrt(fan_in) < 3  # not unit variance (sanity)


def conv_reference(x, w, b, stride, padding):
    """A direct (looped) cross-correlation in NumPy, groups=1."""
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    B, _, H, W = xp.shape
    O, _, kh, kw = w.shape
    Ho, Wo = (H - kh) // stride + 1, (W - kw) // stride + 1
    out = np.empty((B, O, Ho, Wo))
    for i in range(Ho):
        for j in range(Wo):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("bchw,ochw->bo", patch, w) + b
    return out


def test_conv2d_matches_a_direct_correlation():
    conv = nn.Conv2d(3, 5, 3, stride=2, padding=1, rng=2)
    conv.bias.data[...] = RNG.standard_normal(5)
    x = RNG.standard_normal((2, 3, 7, 6))
    assert_close(conv(x).data, conv_reference(x, conv.weight.data, conv.bias.data, 2, 1))


def test_conv2d_matches_torch():
    torch = pytest.importorskip("torch")
    conv = nn.Conv2d(4, 6, (3, 2), stride=(1, 2), padding=(1, 0), dilation=(2, 1), groups=2,
                     rng=3)
    conv.bias.data[...] = RNG.standard_normal(6)
    x = RNG.standard_normal((2, 4, 8, 7))
    ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(conv.weight.data),
                                     torch.tensor(conv.bias.data), stride=(1, 2),
                                     padding=(1, 0), dilation=(2, 1), groups=2)
    assert_close(conv(x).data, ref.numpy())


def test_conv2d_gradients_and_float32():
    conv = nn.Conv2d(2, 3, 2, padding="same", rng=4)
    x = RNG.standard_normal((1, 2, 4, 4))
    mg.gradcheck(lambda t: conv(t), [x])
    conv32 = nn.Conv2d(2, 3, 2, dtype=np.float32, rng=4)
    assert conv32(x).dtype == np.float32
    with pytest.raises(ValueError, match=r"Conv2d: got input of shape \(1, 3, 4, 4\)"):
        conv(np.zeros((1, 3, 4, 4)))


# ---- Embedding -----------------------------------------------------------------------------
def test_embedding_looks_up_rows_and_accumulates_repeated_indices():
    emb = nn.Embedding(5, 3, rng=0)
    idx = np.array([[1, 4, 1], [1, 0, 2]])
    out = emb(idx)
    np.testing.assert_array_equal(out.data, emb.weight.data[idx])
    g = RNG.standard_normal(out.shape)
    (out * mg.tensor(g)).sum().backward()
    expected = np.zeros((5, 3))
    for (i, j), row in np.ndenumerate(idx):
        expected[row] += g[i, j]
    assert_close(emb.weight.grad, expected)
    assert emb(3).shape == (3,) and emb([0, 0]).shape == (2, 3)


def test_embedding_matches_torch_gradient():
    torch = pytest.importorskip("torch")
    emb = nn.Embedding(6, 4, rng=1)
    idx = np.array([5, 2, 2, 2, 0])
    g = RNG.standard_normal((5, 4))
    (emb(idx) * mg.tensor(g)).sum().backward()
    temb = torch.nn.Embedding(6, 4, dtype=torch.float64)
    with torch.no_grad():
        temb.weight.copy_(torch.tensor(emb.weight.data))
    (temb(torch.tensor(idx)) * torch.tensor(g)).sum().backward()
    assert_close(emb.weight.grad, temb.weight.grad.numpy())


@pytest.mark.parametrize("indices, error, words", [
    (np.array([0, 6]), ValueError, ["6", "[0, 6)"]),
    (np.array([-1]), ValueError, ["-1"]),
    (np.array([0.0, 1.0]), TypeError, ["float64", "integers"]),
    (np.array([True]), TypeError, ["bool"]),
])
def test_embedding_refuses_bad_indices(indices, error, words):
    with pytest.raises(error) as info:
        nn.Embedding(6, 2, rng=0)(indices)
    assert all(w in str(info.value) for w in words), str(info.value)


# ---- activations and Flatten ---------------------------------------------------------------
def _ref_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS = [
    (lambda: nn.ReLU(), lambda x: np.maximum(x, 0), "ReLU", {}),
    (lambda: nn.Tanh(), np.tanh, "Tanh", {}),
    (lambda: nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x)), "Sigmoid", {}),
    (lambda: nn.GELU("tanh"), _ref_gelu_tanh, "GELU", {"approximate": "tanh"}),
    (lambda: nn.Softmax(dim=0), lambda x: np.exp(x) / np.exp(x).sum(0), "Softmax", {"dim": 0}),
]


@pytest.mark.parametrize("make, ref, _name, _kw", ACTIVATIONS)
def test_activation_values_and_gradients(make, ref, _name, _kw):
    x = RNG.standard_normal((3, 4)) + 0.05  # keep ReLU's kink away from the samples
    layer = make()
    assert_close(layer(x).data, ref(x))
    mg.gradcheck(lambda t: layer(t), [x])


@pytest.mark.parametrize("make, _ref, name, kw", ACTIVATIONS)
def test_activation_matches_torch(make, _ref, name, kw):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 4))
    assert_close(make()(x).data, getattr(torch.nn, name)(**kw)(torch.tensor(x)).numpy())


@pytest.mark.parametrize("make, fname, torch_name, kw", [
    (lambda: nn.GELU(), "gelu", "GELU", {}),
    (lambda: nn.SiLU(), "silu", "SiLU", {}),
])
def test_activations_whose_function_arrives_later(make, fname, torch_name, kw):
    layer = make()
    x = RNG.standard_normal((2, 3))
    if not hasattr(F, fname):
        with pytest.raises(NotImplementedError, match=fname):
            layer(x)
        pytest.skip(f"F.{fname} does not exist yet")
    torch = pytest.importorskip("torch")
    assert_close(layer(x).data, getattr(torch.nn, torch_name)(**kw)(torch.tensor(x)).numpy())


@pytest.mark.parametrize("shape, start, end, expected", [
    ((2, 3, 4, 5), 1, -1, (2, 60)),
    ((2, 3, 4, 5), 0, -1, (120,)),
    ((2, 3, 4, 5), 1, 2, (2, 12, 5)),
    ((2, 3, 4, 5), -2, -1, (2, 3, 20)),
    ((2, 3), 1, 1, (2, 3)),
    ((), 0, -1, (1,)),
])
def test_flatten_shapes_match_torch_rules(shape, start, end, expected):
    x = np.arange(int(np.prod(shape)), dtype=float).reshape(shape)
    out = nn.Flatten(start, end)(mg.tensor(x))
    assert out.shape == expected
    np.testing.assert_array_equal(out.data.ravel(), x.ravel())


def test_flatten_matches_torch_and_refuses_bad_axes():
    torch = pytest.importorskip("torch")
    for start, end in [(1, -1), (0, 2), (2, 3)]:
        want = torch.nn.Flatten(start, end)(torch.zeros(2, 3, 4, 5)).shape
        assert nn.Flatten(start, end)(np.zeros((2, 3, 4, 5))).shape == tuple(want)
    with pytest.raises(ValueError, match="start_dim=3 comes after end_dim=1"):
        nn.Flatten(3, 1)(np.zeros((2, 3, 4, 5)))
    with pytest.raises(ValueError, match="expected axes in"):
        nn.Flatten(4)(np.zeros((2, 3, 4, 5)))


def test_gelu_and_silu_look_their_function_up_when_they_run(monkeypatch):
    layer_gelu, layer_silu = nn.GELU(), nn.SiLU()  # built before F has the function
    monkeypatch.setattr(F, "gelu", lambda t: F.mul(t, 2.0), raising=False)
    monkeypatch.setattr(F, "silu", lambda t: F.mul(t, 3.0), raising=False)
    x = np.ones(2)
    np.testing.assert_array_equal(layer_gelu(x).data, [2.0, 2.0])
    np.testing.assert_array_equal(layer_silu(x).data, [3.0, 3.0])


# ---- module names: what Sequential and add_module accept ------------------------------------
@pytest.mark.parametrize("name", ["forward", "training", "state_dict", "a.b", "", ".x"])
def test_a_module_name_that_would_shadow_or_split_is_refused(name):
    # Sequential(OrderedDict(forward=Linear, relu=ReLU)) used to register "forward" as an
    # instance attribute, so seq(x) ran the Linear alone and skipped the ReLU; "a.b" made
    # the state_dict key "a.b.weight" of a module "a.b", read back as module "a", child "b"
    with pytest.raises(ValueError, match=repr(name).replace(".", r"\.")):
        nn.Sequential(OrderedDict([(name, nn.Linear(2, 3, rng=0)), ("relu", nn.ReLU())]))


def test_add_module_needs_a_string_name():
    with pytest.raises(TypeError, match="add_module name"):
        nn.Module().add_module(3, nn.ReLU())


def test_a_registered_module_may_still_be_replaced_by_name():
    seq = nn.Sequential(nn.Linear(2, 3, rng=0), nn.ReLU())
    tanh = nn.Tanh()
    seq.add_module("1", tanh)
    assert list(seq.children())[1] is tanh
    x = mg.Tensor(np.array([[1.0, -2.0]]))
    lin = next(iter(seq.children()))
    np.testing.assert_array_equal(seq(x).data, np.tanh(lin(x).data))


def test_sequential_with_named_layers_runs_every_layer():
    lin = nn.Linear(2, 3, rng=0)
    seq = nn.Sequential(OrderedDict([("proj", lin), ("act", nn.ReLU())]))
    x = mg.Tensor(np.array([[1.0, -2.0], [-3.0, 0.5]]))
    np.testing.assert_array_equal(seq(x).data, np.maximum(lin(x).data, 0))
