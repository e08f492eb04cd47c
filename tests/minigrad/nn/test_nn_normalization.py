"""nn.BatchNorm1d/2d, nn.InstanceNorm1d/2d, nn.GroupNorm, nn.RMSNorm and nn.LayerNorm over
several axes against torch.nn: the same initial weights, the same inputs, SGD steps, and the
outputs, parameters, gradients and running statistics compared after every step, then in
eval mode; state_dict names as torch's and the round trip through torch's state; train() and
eval() switching between batch and running statistics."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

torch = pytest.importorskip("torch")
TORCH_DTYPE = {np.float64: torch.float64, np.float32: torch.float32}


def close(got, want, dtype):
    """Within 512 ulps of ``dtype`` at the largest magnitude compared (at least 1): several
    steps of training, each rounding in both libraries."""
    want = np.asarray(want, dtype=np.float64)
    tol = 512 * np.finfo(dtype).eps * max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=0, atol=tol)


def copy_weights(ours, theirs, rng):
    """Random weights (not the initial ones) given to both modules."""
    for name, p in ours.named_parameters():
        value = 1 + rng.standard_normal(p.shape) / 2
        p.data[...] = value
        with torch.no_grad():
            dict(theirs.named_parameters())[name].copy_(torch.tensor(value))


def compare_training(ours, theirs, shape, dtype=np.float64, steps=4, seed=0, lr=0.1):
    """SGD steps on sum(y · c) for fresh inputs x each step, compared step by step, then one
    eval pass: outputs, parameters, gradients and buffers."""
    rng = np.random.default_rng(seed)
    theirs = theirs.to(TORCH_DTYPE[dtype])
    copy_weights(ours, theirs, rng)
    opt = mg.optim.SGD(list(ours.parameters()), lr=lr) if list(ours.parameters()) else None
    topt = torch.optim.SGD(theirs.parameters(), lr=lr) if opt else None
    for step in range(steps):
        x = (rng.standard_normal(shape) * 2 + step).astype(dtype)
        c = rng.standard_normal(shape).astype(dtype)
        xt = torch.tensor(x, requires_grad=True)
        y, yt = ours(mg.tensor(x)), theirs(xt)
        close(y.data, yt.detach().numpy(), dtype)
        assert y.dtype == dtype
        if opt:
            opt.zero_grad()
            topt.zero_grad()
            (y * c).sum().backward()
            (yt * torch.tensor(c)).sum().backward()
            for name, p in ours.named_parameters():
                close(p.grad, dict(theirs.named_parameters())[name].grad.numpy(), dtype)
            opt.step()
            topt.step()
        compare_state(ours, theirs, dtype)
    ours.eval()
    theirs.eval()
    x = rng.standard_normal(shape).astype(dtype)
    close(ours(x).data, theirs(torch.tensor(x)).detach().numpy(), dtype)
    compare_state(ours, theirs, dtype)


def compare_state(ours, theirs, dtype):
    mine, want = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(want)
    for name, value in want.items():
        if name.endswith("num_batches_tracked"):
            assert int(mine[name]) == int(value) and mine[name].dtype == np.int64
        else:
            close(mine[name], value.numpy(), dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("momentum", [0.1, None, 0.5])
def test_batchnorm2d_trains_as_torch(momentum, dtype):
    compare_training(nn.BatchNorm2d(3, momentum=momentum, dtype=dtype),
                     torch.nn.BatchNorm2d(3, momentum=momentum), (4, 3, 3, 2), dtype)


@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 6)])
@pytest.mark.parametrize("kw", [{}, {"affine": False}, {"track_running_stats": False},
                                {"eps": 0.1, "momentum": None}])
def test_batchnorm1d_trains_as_torch(shape, kw):
    compare_training(nn.BatchNorm1d(4, **kw), torch.nn.BatchNorm1d(4, **kw), shape)


@pytest.mark.parametrize("cls, shape", [("InstanceNorm1d", (3, 2, 5)),
                                        ("InstanceNorm1d", (2, 5)),
                                        ("InstanceNorm2d", (2, 2, 3, 4)),
                                        ("InstanceNorm2d", (2, 3, 4))])
@pytest.mark.parametrize("kw", [{}, {"affine": True},
                                {"affine": True, "track_running_stats": True},
                                {"track_running_stats": True, "momentum": None}])
def test_instancenorm_trains_as_torch(cls, shape, kw):
    compare_training(getattr(nn, cls)(2, **kw), getattr(torch.nn, cls)(2, **kw), shape)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("groups, shape, affine", [(2, (3, 4, 5), True), (1, (2, 4, 2, 3), True),
                                                   (4, (2, 4), False)])
def test_groupnorm_trains_as_torch(groups, shape, affine, dtype):
    compare_training(nn.GroupNorm(groups, 4, affine=affine, dtype=dtype),
                     torch.nn.GroupNorm(groups, 4, affine=affine), shape, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("normalized, shape, kw", [(5, (3, 5), {}), ((2, 5), (3, 2, 5), {}),
                                                   (4, (2, 4), {"eps": 1e-3}),
                                                   (3, (2, 3), {"elementwise_affine": False})])
def test_rmsnorm_trains_as_torch(normalized, shape, kw, dtype):
    compare_training(nn.RMSNorm(normalized, dtype=dtype, **kw),
                     torch.nn.RMSNorm(normalized, **kw), shape, dtype)


@pytest.mark.parametrize("normalized, shape, kw", [((3, 4), (2, 3, 4), {}),
                                                   ((2, 2, 3), (2, 2, 3), {}),
                                                   (5, (2, 5), {"bias": False}),
                                                   ((3, 4), (2, 3, 4), {"bias": False})])
def test_layernorm_shapes_and_bias_false_train_as_torch(normalized, shape, kw):
    ours = nn.LayerNorm(normalized, **kw)
    assert (ours.bias is None) == (kw.get("bias") is False)
    compare_training(ours, torch.nn.LayerNorm(normalized, **kw), shape)


def test_batchnorm_state_dict_round_trip_through_torch():
    theirs = torch.nn.BatchNorm2d(3).double()
    theirs(torch.randn(4, 3, 2, 2, dtype=torch.float64) * 3 + 1)  # running stats move
    ours = nn.BatchNorm2d(3)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert int(ours.num_batches_tracked) == 1
    compare_state(ours, theirs, np.float64)
    again = nn.BatchNorm2d(3)
    again.load_state_dict(ours.state_dict())
    for a, b in zip(again.state_dict().values(), ours.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_running_statistics_are_updated_in_place_and_not_in_eval_or_no_grad():
    bn = nn.BatchNorm1d(2)
    mean, var = bn.running_mean, bn.running_var
    x = np.array([[1.0, 2.0], [3.0, 6.0]])
    bn(x)
    assert bn.running_mean is mean and bn.running_var is var
    np.testing.assert_allclose(mean, 0.1 * np.array([2.0, 4.0]))
    np.testing.assert_allclose(var, 0.9 + 0.1 * np.array([2.0, 8.0]))  # unbiased: n - 1 = 1
    with mg.no_grad():  # still training mode: torch updates them too
        bn(x)
    assert int(bn.num_batches_tracked) == 2
    bn.eval()
    kept = mean.copy()
    y = bn(x)
    np.testing.assert_array_equal(mean, kept)
    np.testing.assert_allclose(y.data, (x - mean) / np.sqrt(var + 1e-5))
    bn.train()
    bn.reset_running_stats()
    assert not mean.any() and (var == 1).all() and int(bn.num_batches_tracked) == 0


def test_a_batch_of_one_is_refused_in_training_and_leaves_the_statistics():
    bn = nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match="more than 1 value"):
        bn(np.ones((1, 3)))
    assert int(bn.num_batches_tracked) == 0 and not bn.running_mean.any()
    bn.eval()
    assert bn(np.ones((1, 3))).shape == (1, 3)


@pytest.mark.parametrize("make, x, error, words", [
    (lambda: nn.BatchNorm2d(3), np.ones((2, 3, 4)), ValueError, ["BatchNorm2d", "(N, 3, H, W)"]),
    (lambda: nn.BatchNorm1d(3), np.ones((2, 4)), ValueError, ["BatchNorm1d", "(N, 3)"]),
    (lambda: nn.GroupNorm(2, 4), np.ones((2, 3)), ValueError, ["GroupNorm", "(N, 4, *)"]),
    (lambda: nn.RMSNorm((2, 3)), np.ones((2, 3, 2)), ValueError, ["RMSNorm", "(2, 3)"]),
    (lambda: nn.LayerNorm((2, 3)), np.ones((3, 2)), ValueError, ["LayerNorm", "(..., 2, 3)"]),
    (lambda: nn.InstanceNorm1d(2), np.ones(2), ValueError, ["InstanceNorm1d"]),
    (lambda: nn.BatchNorm1d(2), np.array([["a", "b"]]), TypeError, ["BatchNorm1d"]),
])
def test_inputs_are_checked(make, x, error, words):
    with pytest.raises(error) as info:
        make()(x)
    assert all(w in str(info.value) for w in words), str(info.value)


@pytest.mark.parametrize("make, error, words", [
    (lambda: nn.BatchNorm2d(0), ValueError, ["num_features", "0"]),
    (lambda: nn.BatchNorm1d(2, momentum=1.5), ValueError, ["momentum", "1.5"]),
    (lambda: nn.BatchNorm1d(2, eps=0), ValueError, ["eps"]),
    (lambda: nn.InstanceNorm2d(2, affine="yes"), TypeError, ["affine"]),
    (lambda: nn.GroupNorm(3, 4), ValueError, ["num_groups", "divisor"]),
    (lambda: nn.GroupNorm(2**70, 4), ValueError, ["num_groups"]),
    (lambda: nn.RMSNorm(()), ValueError, ["normalized_shape"]),
    (lambda: nn.LayerNorm((3, 0)), ValueError, ["normalized_dim"]),
    (lambda: nn.LayerNorm(3, bias="no"), TypeError, ["bias"]),
])
def test_constructor_arguments_are_checked(make, error, words):
    with pytest.raises(error) as info:
        make()
    assert all(w in str(info.value) for w in words), str(info.value)


def test_integer_input_is_cast_to_the_layer_dtype():
    bn = nn.BatchNorm1d(2, dtype=np.float32)
    y = bn(np.array([[1, 2], [3, 5]]))
    assert y.dtype == np.float32 and bn.running_mean.dtype == np.float32
