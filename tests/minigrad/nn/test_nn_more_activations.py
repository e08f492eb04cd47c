"""The activation modules of minigrad/nn/activations.py beyond ReLU, GELU, Tanh, Sigmoid, SiLU
and Softmax, against torch.nn: a Linear -> activation -> Linear network trained for several
SGD and Adam steps from the same weights on the same inputs (outputs and parameters compared
at every step, float64 and float32; CELU's alpha a float32 number, since torch's float64 CELU
gradient rounds alpha to float32: 2e-8 relative off for alpha = 0.7), state_dict round trips, repr and argument checks."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.optim import SGD, Adam

#: (minigrad module, torch.nn name, keyword arguments: the same for both)
MODULES = [
    (nn.Mish, "Mish", {}), (nn.Hardswish, "Hardswish", {}),
    (nn.Hardsigmoid, "Hardsigmoid", {}), (nn.CELU, "CELU", {"alpha": 0.75}),
    (nn.Softsign, "Softsign", {}), (nn.LeakyReLU, "LeakyReLU", {"negative_slope": 0.2}),
    (nn.ELU, "ELU", {"alpha": 1.3}), (nn.SELU, "SELU", {}),
    (nn.Softplus, "Softplus", {"beta": 2.0, "threshold": 3.0}), (nn.LogSigmoid, "LogSigmoid", {}),
    (nn.Hardtanh, "Hardtanh", {"min_val": -0.5, "max_val": 0.8}),
    (nn.LogSoftmax, "LogSoftmax", {"dim": 1}), (nn.Softmin, "Softmin", {"dim": -1}),
]
IDS = [name for _, name, _ in MODULES]


def _pair(torch, layer, tname, kw, dtype, seed):
    """The same three-layer network in minigrad and torch, with torch's weights copied over."""
    rng = np.random.default_rng(seed)
    w1, w2 = rng.standard_normal((4, 6)).astype(dtype), (rng.standard_normal((6, 3)) / 2).astype(dtype)
    b1 = (rng.standard_normal(6) * 3).astype(dtype)  # hits both sides of the kinks
    b2 = rng.standard_normal(3).astype(dtype)
    ours = nn.Sequential(nn.Linear(4, 6, dtype=dtype), layer(**kw), nn.Linear(6, 3, dtype=dtype))
    ours.load_state_dict({"0.weight": w1, "0.bias": b1, "2.weight": w2, "2.bias": b2})
    tdt = torch.float64 if dtype == np.float64 else torch.float32
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6), getattr(torch.nn, tname)(**kw),
                                 torch.nn.Linear(6, 3)).to(tdt)
    with torch.no_grad():  # torch's Linear holds (out, in): the transpose of minigrad's
        for t, a in zip(theirs.parameters(), (w1.T, b1, w2.T, b2), strict=True):
            t.copy_(torch.tensor(np.ascontiguousarray(a)))
    return ours, theirs


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("layer, tname, kw", MODULES, ids=IDS)
def test_trains_as_torch_does(layer, tname, kw, optimizer, dtype):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(torch, layer, tname, kw, dtype, seed=len(tname))
    if optimizer == "sgd":
        opt, topt = SGD(ours.parameters(), lr=0.1), torch.optim.SGD(theirs.parameters(), lr=0.1)
    else:
        opt, topt = Adam(ours.parameters(), lr=0.01), torch.optim.Adam(theirs.parameters(), lr=0.01)
    rng = np.random.default_rng(5)
    tol = 2e-10 if dtype == np.float64 else 2e-4  # a few steps of float rounding, grown
    if tname == "Hardsigmoid" and dtype == np.float64:
        tol = 2e-7  # torch's float64 gradient is 1.0f/6: 3e-8 off (backward.md §40)
    for _ in range(4):
        x, target = rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
        out = ours(mg.Tensor(x.astype(dtype)))
        tout = theirs(torch.tensor(x.astype(dtype)))
        np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=tol, atol=tol)
        loss = ((out - target.astype(dtype)) ** 2).mean()
        tloss = ((tout - torch.tensor(target.astype(dtype))) ** 2).mean()
        opt.zero_grad(), topt.zero_grad()
        loss.backward(), tloss.backward()
        opt.step(), topt.step()
        for (name, p), t in zip(ours.state_dict().items(), theirs.parameters(), strict=True):
            want = t.detach().numpy()
            np.testing.assert_allclose(p, want.T if "weight" in name else want, rtol=tol,
                                       atol=tol, err_msg=name)


@pytest.mark.parametrize("layer, tname, kw", MODULES, ids=IDS)
def test_state_dict_round_trip_repr_and_modes(layer, tname, kw):
    module = layer(**kw)
    assert module.state_dict() == {} and module.load_state_dict({}) is not None
    for k, v in kw.items():
        assert f"{k}={v}" in repr(module)
    x = np.linspace(-4.0, 4.0, 12).reshape(3, 4)
    a = module(x).data
    module.eval()
    np.testing.assert_array_equal(module(x).data, a)  # no randomness, no mode to change


@pytest.mark.parametrize("make, words", [
    (lambda: nn.CELU(0.0), "celu alpha"), (lambda: nn.CELU("a"), "celu alpha"),
    (lambda: nn.Softplus(beta=0), "softplus beta"),
    (lambda: nn.Hardtanh(1.0, -1.0), "hardtanh max_val"),
    (lambda: nn.LeakyReLU(None), "leaky_relu negative_slope"),
    (lambda: nn.LogSoftmax(dim=1.5), "LogSoftmax dim"), (lambda: nn.Softmin(dim="0"), "Softmin dim"),
])
def test_bad_arguments_are_refused_when_the_module_is_built(make, words):
    with pytest.raises((TypeError, ValueError), match=words):
        make()
