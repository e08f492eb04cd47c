"""nn.MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d, MaxUnpool2d and Upsample: small
models built from them trained side by side with the same torch.nn models for several SGD
steps (same initial weights, same batches; outputs, losses and parameters compared each
step), constructor checks, state_dict and train/eval."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, nn, optim

RNG = np.random.default_rng(3841)
TOL = 4096 * np.finfo(np.float64).eps  # float64, a few steps: the sums differ only in order


def _mine_cnn():
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1, rng=0), nn.ReLU(),
        nn.MaxPool2d(2, ceil_mode=True),                      # 7x9 -> 4x5
        nn.Upsample(scale_factor=1.5, mode="bilinear"),       # -> 6x7
        nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),  # -> 4x4
        nn.MaxPool2d(2, 1, dilation=2, padding=1),            # -> 4x4
        nn.Upsample(size=(5, 3)),                             # nearest -> 5x3
        nn.AdaptiveMaxPool2d((4, 3)), nn.AdaptiveAvgPool2d((2, 3)), nn.Flatten(),
        nn.Linear(24, 3, rng=1))


def _torch_cnn(torch, mine):
    tnn = torch.nn
    model = tnn.Sequential(
        tnn.Conv2d(2, 4, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2, ceil_mode=True),
        tnn.Upsample(scale_factor=1.5, mode="bilinear"),
        tnn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
        tnn.MaxPool2d(2, 1, dilation=2, padding=1), tnn.Upsample(size=(5, 3)),
        tnn.AdaptiveMaxPool2d((4, 3)), tnn.AdaptiveAvgPool2d((2, 3)), tnn.Flatten(),
        tnn.Linear(24, 3)).double()
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor(mine[0].weight.data))
        model[0].bias.copy_(torch.tensor(mine[0].bias.data))
        model[10].weight.copy_(torch.tensor(mine[10].weight.data.T))  # ours is (in, out)
        model[10].bias.copy_(torch.tensor(mine[10].bias.data))
    return model


def _train_side_by_side(torch, mine, theirs, batches, pairs, lr=0.1):
    opt, topt = optim.SGD(list(mine.parameters()), lr=lr), torch.optim.SGD(theirs.parameters(),
                                                                           lr=lr)
    for x, y in batches:
        out, tout = mine(x), theirs(torch.tensor(x))
        np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=TOL, atol=TOL)
        loss = F.mean((out - y) ** 2)
        tloss = ((tout - torch.tensor(y)) ** 2).mean()
        opt.zero_grad()
        topt.zero_grad()
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
        for ours, their in pairs():
            np.testing.assert_allclose(ours, their, rtol=TOL, atol=TOL)


def test_a_cnn_of_pools_and_upsampling_trains_as_torchs():
    torch = pytest.importorskip("torch")
    mine = _mine_cnn()
    theirs = _torch_cnn(torch, mine)

    def pairs():
        return [(mine[0].weight.data, theirs[0].weight.detach().numpy()),
                (mine[0].bias.data, theirs[0].bias.detach().numpy()),
                (mine[10].weight.data, theirs[10].weight.detach().numpy().T)]

    batches = [(RNG.standard_normal((3, 2, 7, 9)), RNG.standard_normal((3, 3)))
               for _ in range(4)]
    _train_side_by_side(torch, mine, theirs, batches, pairs)


def test_1d_pools_and_linear_upsampling_train_as_torchs():
    """Linear over L, then the 1-D layers: (B, C, 8) -> 8 -> 4 -> 6 -> 3 -> 3."""
    torch = pytest.importorskip("torch")
    mine = nn.Sequential(nn.Linear(8, 8, rng=2), nn.MaxPool1d(3, 2, 1, ceil_mode=True),
                         nn.Upsample(scale_factor=1.5, mode="linear", align_corners=True),
                         nn.AvgPool1d(2, 2, ceil_mode=True), nn.AdaptiveAvgPool1d(3),
                         nn.Flatten(), nn.Linear(6, 2, rng=3))
    tnn = torch.nn
    theirs = tnn.Sequential(tnn.Linear(8, 8), tnn.MaxPool1d(3, 2, 1, ceil_mode=True),
                            tnn.Upsample(scale_factor=1.5, mode="linear", align_corners=True),
                            tnn.AvgPool1d(2, 2, ceil_mode=True), tnn.AdaptiveAvgPool1d(3),
                            tnn.Flatten(), tnn.Linear(6, 2)).double()
    with torch.no_grad():
        for i in (0, 6):
            theirs[i].weight.copy_(torch.tensor(mine[i].weight.data.T))
            theirs[i].bias.copy_(torch.tensor(mine[i].bias.data))

    def pairs():
        return [(mine[i].weight.data, theirs[i].weight.detach().numpy().T) for i in (0, 6)]

    batches = [(RNG.standard_normal((4, 2, 8)), RNG.standard_normal((4, 2))) for _ in range(4)]
    _train_side_by_side(torch, mine, theirs, batches, pairs)


def test_max_unpool2d_undoes_max_pool2d_as_torchs():
    torch = pytest.importorskip("torch")
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    tpool, tunpool = torch.nn.MaxPool2d(2, return_indices=True), torch.nn.MaxUnpool2d(2)
    x = RNG.standard_normal((2, 3, 5, 7))
    t = mg.tensor(x, requires_grad=True)
    tt = torch.tensor(x, requires_grad=True)
    y, idx = pool(t)
    ty, tidx = tpool(tt)
    out, tout = unpool(y, idx, output_size=(5, 7)), tunpool(ty, tidx, output_size=(5, 7))
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    g = RNG.standard_normal(out.shape)
    out.backward(g)
    tout.backward(torch.tensor(g))
    np.testing.assert_array_equal(t.grad, tt.grad.numpy())


def test_pooling_layers_hold_no_state_and_ignore_train_and_eval():
    x = RNG.standard_normal((1, 2, 6, 6))
    for layer in (nn.MaxPool2d(2), nn.AvgPool2d(3, 1, 1), nn.AdaptiveAvgPool2d(2),
                  nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)):
        assert dict(layer.state_dict()) == {} and list(layer.parameters()) == []
        a = layer.train()(x).data
        b = layer.eval()(x).data
        np.testing.assert_array_equal(a, b)
        layer.load_state_dict(layer.state_dict())
    model = _mine_cnn()
    copy = _mine_cnn()
    for p in copy.parameters():
        p.data[...] = 0
    copy.load_state_dict(model.state_dict())
    x = RNG.standard_normal((2, 2, 7, 9))
    np.testing.assert_array_equal(copy(x).data, model(x).data)


@pytest.mark.parametrize("make, error, words", [
    (lambda: nn.MaxPool2d(0), ValueError, ["MaxPool2d", "kernel_size", "0"]),
    (lambda: nn.MaxPool2d(2, padding=2), ValueError, ["MaxPool2d", "padding"]),
    (lambda: nn.MaxPool2d(2, dilation=(1, 0)), ValueError, ["dilation"]),
    (lambda: nn.MaxPool1d(2, return_indices=1), TypeError, ["MaxPool1d", "return_indices"]),
    (lambda: nn.AvgPool2d(2, ceil_mode="no"), TypeError, ["AvgPool2d", "ceil_mode"]),
    (lambda: nn.AvgPool2d(2, divisor_override=0), ValueError, ["divisor_override"]),
    (lambda: nn.AvgPool1d((2, 2)), ValueError, ["AvgPool1d", "kernel_size"]),
    (lambda: nn.AdaptiveAvgPool2d((2, 0)), ValueError, ["output_size", "0"]),
    (lambda: nn.AdaptiveAvgPool1d(2.5), TypeError, ["output_size"]),
    (lambda: nn.AdaptiveMaxPool2d(2, return_indices=None), TypeError, ["return_indices"]),
    (lambda: nn.MaxUnpool2d(2, stride=0), ValueError, ["MaxUnpool2d", "stride"]),
    (lambda: nn.Upsample(), ValueError, ["Upsample", "size", "scale_factor"]),
    (lambda: nn.Upsample(size=2, mode="bicubic"), ValueError, ["mode", "'bicubic'"]),
    (lambda: nn.Upsample(scale_factor=-1.0), ValueError, ["scale_factor"]),
    (lambda: nn.Upsample(size=2, align_corners=True), ValueError, ["align_corners"]),
])
def test_constructor_arguments_are_checked(make, error, words):
    with pytest.raises(error) as info:
        make()
    assert all(w in str(info.value) for w in words), str(info.value)


def test_repr_shows_the_arguments():
    assert repr(nn.MaxPool2d(3, 2, 1, ceil_mode=True)) == (
        "MaxPool2d(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True, "
        "dilation=(1, 1), return_indices=False)")
    assert "scale_factor=2" in repr(nn.Upsample(scale_factor=2))
