"""Module.train()/eval() and the training flag, nn.Dropout (seeded, inverted, identity in
eval), and register_buffer (saved in state_dict, loaded by load_state_dict, not a parameter)."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.checks import StateDictKeyError


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4, rng=0)
        self.drop = nn.Dropout(0.5, rng=1)
        self.inner = nn.Sequential(nn.ReLU(), nn.Dropout(0.2, rng=2))
        self.register_buffer("running", np.arange(4.0))
        self.register_buffer("scratch", np.zeros(2), persistent=False)

    def forward(self, x):
        return self.inner(self.drop(self.fc(x)))


def test_train_and_eval_set_the_flag_on_every_descendant():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.inner.train(False)
    assert net.training and net.fc.training and not net.inner[1].training
    with pytest.raises(TypeError, match="train mode: got 'no'"):
        net.train("no")


def test_the_training_flag_is_not_state():
    net = Net()
    keys = list(net.state_dict())
    net.eval()
    assert list(net.state_dict()) == keys == ["fc.weight", "fc.bias", "running"]


def test_dropout_is_inverted_seeded_and_identity_in_eval():
    x = np.random.default_rng(3).standard_normal((200, 50)) + 2.0
    drop = nn.Dropout(0.3, rng=7)
    y = drop(mg.tensor(x, requires_grad=True)).data
    keep = np.random.default_rng(7).random(x.shape) >= 0.3  # the documented draw
    np.testing.assert_array_equal(y, np.where(keep, x * (1 / (1 - 0.3)), 0.0))
    assert abs(keep.mean() - 0.7) < 0.02
    again = nn.Dropout(0.3, rng=7)(x).data
    np.testing.assert_array_equal(again, y)  # the same seed gives the same mask
    drop.eval()
    t = mg.tensor(x)
    assert drop(t) is t


def test_dropout_gradient_is_the_mask_scaled():
    x = mg.tensor(np.ones((4, 5)), requires_grad=True)
    drop = nn.Dropout(0.5, rng=11)
    y = drop(x)
    g = np.random.default_rng(0).standard_normal((4, 5))
    (y * mg.tensor(g)).sum().backward()
    keep = y.data != 0
    np.testing.assert_array_equal(x.grad, np.where(keep, g * 2.0, 0.0))


@pytest.mark.parametrize("p, expected", [(0.0, "same"), (1.0, "zeros")])
def test_dropout_edge_rates(p, expected):
    x = np.arange(1.0, 7.0)
    y = nn.Dropout(p, rng=0)(x)
    np.testing.assert_array_equal(np.asarray(getattr(y, "data", y)),
                                  x if expected == "same" else np.zeros(6))


@pytest.mark.parametrize("p, error", [(1.5, ValueError), (-0.1, ValueError), ("0.5", TypeError)])
def test_dropout_rate_is_checked(p, error):
    with pytest.raises(error, match="Dropout p"):
        nn.Dropout(p)


def test_buffers_are_saved_and_loaded_but_are_not_parameters():
    net = Net()
    assert all(p is not net.running for p in net.parameters())
    assert [n for n, _ in net.named_buffers()] == ["running", "scratch"]
    state = net.state_dict()
    np.testing.assert_array_equal(state["running"], np.arange(4.0))
    assert "scratch" not in state  # persistent=False
    state["running"] = np.full(4, 7.0)
    other = Net()
    held = other.running
    other.load_state_dict(state)
    np.testing.assert_array_equal(other.running, np.full(4, 7.0))
    assert other.running is held  # loaded in place, as parameters are
    assert np.array_equal(state["running"], np.full(4, 7.0))  # the input is unchanged


def test_buffer_loading_is_checked():
    net = Net()
    state = net.state_dict()
    with pytest.raises(ValueError, match="buffer 'running' got shape"):
        net.load_state_dict({**state, "running": np.zeros(3)})
    with pytest.raises(StateDictKeyError, match="missing .*running"):
        net.load_state_dict({k: v for k, v in state.items() if k != "running"})


def test_register_buffer_copies_and_checks():
    m = nn.Module()
    a = np.ones(3)
    m.register_buffer("stat", a)
    a[0] = 5.0
    assert m.stat[0] == 1.0  # the caller's array is not held
    m.stat = np.zeros(3)  # assignment replaces the buffer's array
    np.testing.assert_array_equal(m.state_dict()["stat"], np.zeros(3))
    with pytest.raises(ValueError, match="without '.'"):
        m.register_buffer("a.b", np.ones(1))
    with pytest.raises(TypeError, match="expected a string"):
        m.register_buffer(3, np.ones(1))
    m.weight = nn.Parameter(np.ones(2))
    with pytest.raises(ValueError, match="already an attribute"):
        m.register_buffer("weight", np.ones(1))
    with pytest.raises(TypeError, match="expected numbers"):
        m.register_buffer("names", np.array(["a"]))


# ---- modes through checkpoints, dropout in float16 ------------------------------------------
def test_eval_mode_survives_a_state_dict_load():
    torch = pytest.importorskip("torch")
    model = nn.Sequential(nn.Linear(4, 4, rng=1), nn.Dropout(0.5, rng=2))
    other = nn.Sequential(nn.Linear(4, 4, rng=3), nn.Dropout(0.5, rng=4))
    other.eval()
    other.load_state_dict(model.state_dict())
    assert all(not m.training for m in other.modules())
    x = np.arange(8.0).reshape(2, 4)
    lin = next(iter(model.children()))
    np.testing.assert_array_equal(other(mg.Tensor(x)).data, lin(mg.Tensor(x)).data)
    # torch agrees that load_state_dict leaves the mode alone
    t = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).eval()
    t.load_state_dict(t.state_dict())
    assert not t.training


@pytest.mark.parametrize("p", [0.99999, 0.999999])
def test_dropout_in_float16_drops_to_zero_when_its_scale_overflows(p):
    # 1 / (1 - p) > 65504 is inf in float16: the mask times inf made every dropped element
    # 0 * inf = NaN; torch drops them to 0
    d = nn.Dropout(p, rng=0)
    x = mg.Tensor(np.ones(64, np.float16), requires_grad=True)
    y = d(x)
    keep = y.data != 0
    assert not np.isnan(y.data).any()
    assert y.dtype == np.float16
    y.backward(np.ones(64, np.float16))
    assert not np.isnan(x.grad).any()
    np.testing.assert_array_equal(x.grad[~keep], 0)
    torch = pytest.importorskip("torch")
    t = torch.nn.functional.dropout(torch.ones(64, dtype=torch.float16), p=p)
    assert not torch.isnan(t).any()
