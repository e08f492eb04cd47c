"""The loss modules (CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss,
BCEWithLogitsLoss, BCELoss) and nn.Identity: values and input gradients against torch.nn's modules
built with the same arguments, a small model trained several steps beside torch's, the
weight buffers in state_dict as torch keeps them, and the constructor checks."""
from functools import partial

import helpers
import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.optim import SGD

assert_close = partial(helpers.assert_close, ulps=64)
RNG = np.random.default_rng(2718)


def labels(n, c, ignore=None):
    y = RNG.integers(0, c, n)
    if ignore is not None:
        y[1] = ignore
    return y


# name, minigrad kwargs, input shape, target maker; torch takes the same kwargs (arrays as
# tensors), with axis= absent there (torch's class axis is ours by default)
W = np.array([0.5, 2.0, 1.0, 3.0])
CASES = [
    ("CrossEntropyLoss", {}, (5, 4), lambda: labels(5, 4)),
    ("CrossEntropyLoss", dict(weight=W, reduction="sum", label_smoothing=0.2), (5, 4),
     lambda: labels(5, 4)),
    ("CrossEntropyLoss", dict(weight=W, ignore_index=3, reduction="mean"), (6, 4),
     lambda: labels(6, 3, ignore=3)),
    ("CrossEntropyLoss", dict(reduction="none"), (2, 4, 3), lambda: RNG.integers(0, 4, (2, 3))),
    ("CrossEntropyLoss", dict(label_smoothing=0.1), (3, 4),
     lambda: RNG.dirichlet(np.ones(4), 3)),  # probabilities as targets
    ("CrossEntropyLoss", {}, (4,), lambda: np.array(2)),  # one unbatched row, classes axis 0
    ("NLLLoss", {}, (5, 4), lambda: labels(5, 4)),
    ("NLLLoss", dict(weight=W, ignore_index=0, reduction="sum"), (2, 4, 3),
     lambda: RNG.integers(0, 4, (2, 3))),
    ("MSELoss", {}, (3, 5), lambda: RNG.standard_normal((3, 5))),
    ("MSELoss", dict(reduction="sum"), (4,), lambda: RNG.standard_normal(4)),
    ("L1Loss", dict(reduction="none"), (3, 2), lambda: RNG.standard_normal((3, 2))),
    ("SmoothL1Loss", dict(beta=0.5), (4, 3), lambda: RNG.standard_normal((4, 3))),
    ("SmoothL1Loss", dict(beta=0.0, reduction="sum"), (6,), lambda: RNG.standard_normal(6)),
    ("BCEWithLogitsLoss", {}, (4, 3), lambda: RNG.integers(0, 2, (4, 3)).astype(float)),
    ("BCEWithLogitsLoss", dict(weight=np.array([1.0, 0.5, 2.0]), pos_weight=np.array(
        [3.0, 1.0, 0.2]), reduction="none"), (4, 3), lambda: RNG.random((4, 3))),
    ("BCELoss", {}, (4, 3), lambda: RNG.integers(0, 2, (4, 3)).astype(float)),
    ("BCELoss", dict(weight=np.array([1.0, 0.5, 2.0]), reduction="sum"), (4, 3),
     lambda: RNG.random((4, 3))),
]


def torch_kwargs(torch, kwargs):
    return {k: torch.tensor(v) if isinstance(v, np.ndarray) else v
            for k, v in kwargs.items()}


@pytest.mark.parametrize("name, kwargs, shape, target", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_loss_matches_torch_value_and_input_gradient(name, kwargs, shape, target):
    torch = pytest.importorskip("torch")
    x, y = RNG.standard_normal(shape), target()
    if name == "NLLLoss":
        x = x - np.log(np.exp(x).sum(axis=1 if x.ndim > 1 else 0, keepdims=True))
    if name == "BCELoss":
        x = 1 / (1 + np.exp(-x))  # probabilities in (0, 1)
    ours = getattr(nn, name)(**kwargs)
    theirs = getattr(torch.nn, name)(**torch_kwargs(torch, kwargs))
    xt = mg.Tensor(x, requires_grad=True)
    loss = ours(xt, y)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.tensor(y)
    tloss = theirs(tx, ty)
    assert_close(loss.data, tloss.detach().numpy())
    g = RNG.standard_normal(np.shape(loss.data))  # a random cotangent, also for 'none'
    loss.backward(g)
    tloss.backward(torch.tensor(g))
    assert_close(xt.grad, tx.grad.numpy())


@pytest.mark.parametrize("name, make_target", [
    ("CrossEntropyLoss", lambda: labels(8, 3)),
    ("BCEWithLogitsLoss", lambda: RNG.integers(0, 2, (8, 3)).astype(float)),
    ("MSELoss", lambda: RNG.standard_normal((8, 3))),
])
def test_a_model_trains_with_the_loss_as_torch_does(name, make_target):
    """Linear(5, 3) trained 6 SGD steps with each loss, beside torch.nn (weights copied
    across, transposed: minigrad's weight is (in, out)); loss and weights every step."""
    torch = pytest.importorskip("torch")
    layer = nn.Linear(5, 3, rng=3)
    tlayer = torch.nn.Linear(5, 3, dtype=torch.float64)
    with torch.no_grad():
        tlayer.weight.copy_(torch.tensor(layer.weight.data.T))
        tlayer.bias.copy_(torch.tensor(layer.bias.data))
    loss_fn, tloss_fn = getattr(nn, name)(), getattr(torch.nn, name)()
    opt = SGD(layer.parameters(), lr=0.3, momentum=0.5)
    topt = torch.optim.SGD(tlayer.parameters(), lr=0.3, momentum=0.5)
    for _ in range(6):
        x, y = RNG.standard_normal((8, 5)), make_target()
        opt.zero_grad()
        topt.zero_grad()
        loss = loss_fn(layer(x), y)
        tloss = tloss_fn(tlayer(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
        assert_close(loss.data, tloss.item())
        assert_close(layer.weight.data, tlayer.weight.detach().numpy().T)
        assert_close(layer.bias.data, tlayer.bias.detach().numpy())


def test_weight_buffers_are_in_state_dict_as_torch_keeps_them():
    torch = pytest.importorskip("torch")
    for name, kwargs in [("CrossEntropyLoss", dict(weight=W)), ("NLLLoss", {}),
                         ("BCEWithLogitsLoss", dict(pos_weight=W)), ("MSELoss", {}),
                         ("BCELoss", dict(weight=W))]:
        ours = getattr(nn, name)(**kwargs)
        theirs = getattr(torch.nn, name)(**torch_kwargs(torch, kwargs))
        assert list(ours.state_dict()) == list(theirs.state_dict()), name
    saved = nn.CrossEntropyLoss(weight=W).state_dict()
    fresh = nn.CrossEntropyLoss(weight=np.ones(4))
    fresh.load_state_dict(saved)
    np.testing.assert_array_equal(fresh.weight, W)
    assert list(fresh.parameters()) == []  # a weight is not trained


def test_losses_are_modules_in_a_model_and_print_their_settings():
    loss = nn.CrossEntropyLoss(label_smoothing=0.1, reduction="sum")
    assert repr(loss) == ("CrossEntropyLoss(ignore_index=-100, reduction='sum', "
                          "label_smoothing=0.1)")
    assert repr(nn.SmoothL1Loss(beta=0.5)) == "SmoothL1Loss(reduction='mean', beta=0.5)"
    assert repr(nn.MSELoss()) == "MSELoss(reduction='mean')"


def test_cross_entropy_axis_names_the_class_axis():
    x, y = RNG.standard_normal((2, 3, 4)), RNG.integers(0, 4, (2, 3))  # classes last
    last = nn.CrossEntropyLoss(axis=-1)(x, y).data
    moved = nn.CrossEntropyLoss()(np.moveaxis(x, -1, 1), y).data  # torch's (N, C, d)
    assert_close(last, moved)


@pytest.mark.parametrize("make, error, words", [
    (lambda: nn.MSELoss(reduction="avg"), ValueError, ["reduction", "'avg'"]),
    (lambda: nn.L1Loss(reduction=None), TypeError, ["reduction", "None"]),
    (lambda: nn.MSELoss("mean"), TypeError, ["positional"]),  # torch's size_average slot
    (lambda: nn.CrossEntropyLoss(label_smoothing=1.5), ValueError, ["label_smoothing"]),
    (lambda: nn.CrossEntropyLoss(ignore_index=1.0), TypeError, ["ignore_index"]),
    (lambda: nn.NLLLoss(axis="1"), TypeError, ["axis"]),
    (lambda: nn.SmoothL1Loss(beta=-1.0), ValueError, ["beta"]),
    (lambda: nn.BCEWithLogitsLoss(pos_weight=["a"]), TypeError, ["pos_weight"]),
])
def test_constructor_arguments_are_checked(make, error, words):
    with pytest.raises(error) as info:
        make()
    assert all(w in str(info.value) for w in words), str(info.value)


def test_identity_returns_its_input_and_takes_any_arguments():
    x = mg.Tensor(RNG.standard_normal(3), requires_grad=True)
    ident = nn.Identity(54, unused_argument=0.1)
    assert ident(x) is x and list(ident.parameters()) == [] and repr(ident) == "Identity()"
    model = nn.Sequential(nn.Linear(3, 2, rng=0), nn.Identity())
    model(x).sum().backward()
    assert x.grad is not None
