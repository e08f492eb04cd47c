"""nn.Conv1d, nn.ConvTranspose1d, nn.ConvTranspose2d (over F.conv1d, F.conv_transpose1d and
F.conv_transpose2d): torch's weight layouts, state_dict names and initialization bounds, and
the same training as torch.nn over several SGD steps from the same weights."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import minigrad as mg
from minigrad import F, nn
from minigrad.optim import SGD

EPS = {np.float64: np.finfo(np.float64).eps, np.float32: np.finfo(np.float32).eps}

# (minigrad layer, torch layer name, constructor arguments, input shape)
LAYERS = [
    (nn.Conv1d, "Conv1d", (4, 6, 3), dict(stride=2, padding=1, dilation=1, groups=2),
     (3, 4, 11)),
    (nn.Conv1d, "Conv1d", (3, 2, 4), dict(padding="same", dilation=2), (2, 3, 9)),
    (nn.ConvTranspose1d, "ConvTranspose1d", (4, 6, 3),
     dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1), (3, 4, 5)),
    (nn.ConvTranspose2d, "ConvTranspose2d", (3, 4, (3, 2)),
     dict(stride=(2, 1), padding=(1, 0), output_padding=(1, 0), dilation=(1, 2)), (2, 3, 4, 5)),
    (nn.ConvTranspose2d, "ConvTranspose2d", (4, 4, 2), dict(stride=2, groups=4, bias=False),
     (2, 4, 3, 3)),
]
IDS = [f"{t}-{i}" for i, (_, t, _, _, _) in enumerate(LAYERS)]


@pytest.mark.parametrize("make, torch_name, args, kw, shape", LAYERS, ids=IDS)
def test_layouts_state_dict_names_and_init_bounds_are_torchs(make, torch_name, args, kw, shape):
    torch = pytest.importorskip("torch")
    ours = make(*args, **kw, rng=0)
    theirs = getattr(torch.nn, torch_name)(*args, **kw, dtype=torch.float64)
    want = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert {k: v.shape for k, v in ours.state_dict().items()} == want
    # torch's bound, read from its own module: kaiming_uniform(a=√5) gives 1/√fan_in with
    # fan_in = weight.shape[1] · kernel elements (for the transposed layers too)
    fan_in = torch.nn.init._calculate_fan_in_and_fan_out(theirs.weight)[0]
    bound = 1 / np.sqrt(fan_in)
    for name, value in ours.state_dict().items():
        assert np.abs(value).max() <= bound, name
    # spread over the interval (all of 12 or more uniform draws below half of it: < 2**-12)
    assert np.abs(ours.weight.data).max() > bound / 2


def test_init_is_uniform_over_the_bound():
    """A large layer's weights: mean 0 and variance bound²/3 (the uniform's), within a few
    standard errors; its bias the same bound."""
    layer = nn.ConvTranspose2d(8, 64, 4, groups=2, rng=1)
    bound = 1 / np.sqrt(32 * 16)  # C_out/groups · kh · kw
    w = layer.weight.data.ravel()
    se = bound ** 2 / np.sqrt(w.size)  # a loose standard error of the variance
    assert abs(w.mean()) < 5 * bound / np.sqrt(3 * w.size)
    assert abs(w.var() - bound ** 2 / 3) < 5 * se
    assert np.abs(layer.bias.data).max() <= bound


@pytest.mark.parametrize("make, torch_name, args, kw, shape", LAYERS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sgd_steps_match_torch_with_copied_weights(make, torch_name, args, kw, shape, dtype):
    torch = pytest.importorskip("torch")
    tdtype = {np.float64: torch.float64, np.float32: torch.float32}[dtype]
    ours = make(*args, **kw, dtype=dtype, rng=3)
    theirs = getattr(torch.nn, torch_name)(*args, **kw, dtype=tdtype)
    theirs.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})
    opt = SGD(ours.parameters(), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(4)
    tol = 512 * EPS[dtype]
    for _ in range(4):
        x = rng.standard_normal(shape).astype(dtype)
        y = ours(mg.Tensor(x))
        ty = theirs(torch.tensor(x))
        target = np.tanh(np.arange(y.size).reshape(y.shape) / 7.0).astype(dtype)
        np.testing.assert_allclose(y.data, ty.detach().numpy(), rtol=tol, atol=tol)
        opt.zero_grad()
        F.mse_loss(y, target).backward()
        topt.zero_grad()
        torch.nn.functional.mse_loss(ty, torch.tensor(target)).backward()
        opt.step()
        topt.step()
        for name, value in theirs.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[name], value.numpy(), rtol=tol,
                                       atol=tol, err_msg=name)


def test_state_dict_round_trip_and_unbatched_inputs():
    a = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1, rng=5)
    b = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1, rng=6)
    x = np.random.default_rng(7).standard_normal((2, 3, 4, 4))
    assert not np.allclose(a(x).data, b(x).data)
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a(x).data, b(x).data)
    assert a(x).shape == (2, 2, 8, 8)
    np.testing.assert_array_equal(a(x[1]).data, a(x).data[1])  # (C, H, W) as one image
    c = nn.Conv1d(3, 5, 2, rng=8)
    np.testing.assert_array_equal(c(x[0, :, 0]).data, c(x[:1, :, 0]).data[0])


def test_output_size_picks_the_output_padding_as_torch():
    torch = pytest.importorskip("torch")
    ours = nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1, rng=9)
    theirs = torch.nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1, dtype=torch.float64)
    theirs.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(10).standard_normal((1, 2, 4, 5))
    for size in [(10, 13), (12, 15), (1, 3, 11, 14)]:
        want = theirs(torch.tensor(x), output_size=size).detach().numpy()
        np.testing.assert_allclose(ours(x, output_size=size).data, want, rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match=r"ConvTranspose2d output_size.*from 10 to 12"):
        ours(x, output_size=(13, 13))
    seq = nn.ConvTranspose1d(2, 1, 2, stride=2, rng=0)
    assert seq(x[:, :, 0], output_size=[11]).shape == (1, 1, 11)


@pytest.mark.parametrize("make, error, words", [
    (lambda: nn.Conv1d(3, 4, 0), ValueError, ["Conv1d kernel_size", "0"]),
    (lambda: nn.Conv1d(3, 4, 2, groups=2), ValueError, ["Conv1d groups", "2"]),
    (lambda: nn.Conv1d(3, 4, 2, padding_mode="reflect"), ValueError, ["padding_mode"]),
    (lambda: nn.ConvTranspose1d(3, 4, 2, padding="same"), TypeError, ["padding", "'same'"]),
    (lambda: nn.ConvTranspose2d(3, 4, 2, stride=2, output_padding=2), ValueError,
     ["output_padding", "stride"]),
    (lambda: nn.ConvTranspose2d(3, 4, 2, dtype=np.int64), TypeError, ["dtype"]),
    (lambda: nn.ConvTranspose2d(3, 4, 2)(np.ones((1, 2, 3, 3))), ValueError,
     ["ConvTranspose2d: got input of shape (1, 2, 3, 3)", "(B, 3, H, W)"]),
    (lambda: nn.Conv1d(3, 4, 2)(np.ones((1, 3, 4, 4))), ValueError, ["Conv1d", "(B, 3, L)"]),
])
def test_bad_arguments_are_named(make, error, words):
    with pytest.raises(error) as info:
        make()
    for word in words:
        assert word in str(info.value), str(info.value)


def test_the_ops_refuse_what_torch_refuses():
    x, w = np.ones((1, 2, 3, 3)), np.ones((2, 1, 3, 3))
    with pytest.raises(ValueError, match="conv_transpose2d padding.*at least 1"):
        F.conv_transpose2d(x, w, padding=3)
    with pytest.raises(ValueError, match="conv_transpose2d output_padding"):
        F.conv_transpose2d(x, w, stride=2, output_padding=2)
    with pytest.raises(ValueError, match="conv_transpose2d groups"):
        F.conv_transpose2d(x, w, groups=4)
    with pytest.raises(ValueError, match="conv_transpose1d weight"):
        F.conv_transpose1d(x[:, :, 0], np.ones((3, 1, 2)))
    with pytest.raises(ValueError, match="conv_transpose1d x.*no empty spatial axis"):
        F.conv_transpose1d(np.ones((1, 2, 0)), np.ones((2, 1, 2)))
    with pytest.raises(ValueError, match="conv_transpose2d bias"):
        F.conv_transpose2d(x, w, np.ones(2))


def test_the_transposed_convolution_is_the_adjoint_of_the_convolution():
    """<conv2d(z, w), x> = <z, conv_transpose2d(x, w)> for z of the output's shape: the
    identity the op is defined by, with stride, padding, dilation, groups and an
    output_padding that makes the shapes meet."""
    rng = np.random.default_rng(11)
    w = rng.standard_normal((4, 3, 3, 2))  # conv2d: 6 -> 4 channels; transposed: 4 -> 6
    kw = dict(stride=(2, 3), padding=(1, 1), dilation=(1, 2), groups=2)
    z = rng.standard_normal((2, 6, 10, 11))
    y = F.conv2d(z, w, **kw).data
    x = rng.standard_normal(y.shape)
    zt = F.conv_transpose2d(x, w, output_padding=(1, 1), **kw).data
    assert zt.shape == z.shape
    np.testing.assert_allclose(np.vdot(y, x), np.vdot(z, zt), rtol=1e-12)


@pytest.mark.slow  # a benchmark run; the op's values: the rest of this file and op_cases
def test_conv_transpose_benchmark_runs():
    """benchmarks/conv_transpose_step.py end to end in its --quick mode (no timing asserted)."""
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    proc = subprocess.run([sys.executable, os.path.join(root, "benchmarks",
                                                        "conv_transpose_step.py"), "--quick"],
                          capture_output=True, text=True, timeout=600, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "S small" in proc.stdout and "M medium" in proc.stdout
