"""nn.init: exact fills (zeros_, ones_, constant_), the random fills' moments within 5
standard errors of the sample (bounds derived from its size), trunc_normal_'s bounds and
moments against scipy's truncated normal, fans against torch's _calculate_fan_in_and_fan_out
on the same shapes (minigrad's Linear weight is (in, out)), gains against torch's, and the
in-place contract (same tensor returned, dtype kept, version bumped, no graph)."""
import math

import numpy as np
import pytest
import scipy.stats

import minigrad as mg
from minigrad import nn
from minigrad.nn import init

N = 40_000  # draws per statistical check


def param(shape=(N,), dtype=np.float64):
    return nn.Parameter(np.full(shape, 7.0, dtype=dtype))


def assert_moments(x, mean, var, mu4):
    """Sample mean within 5 standard errors (√(var / n)) of ``mean``; sample variance within
    5 standard errors (√((μ4 - var²) / n), μ4 the fourth central moment) of ``var``."""
    x = np.asarray(x, dtype=np.float64).ravel()
    n = x.size
    assert abs(x.mean() - mean) <= 5 * math.sqrt(var / n), (x.mean(), mean)
    assert abs(x.var() - var) <= 5 * math.sqrt((mu4 - var ** 2) / n) + 1e-300, (x.var(), var)


def normal_moments(std):
    return std ** 2, 3 * std ** 4


def uniform_moments(a, b):
    half = (b - a) / 2
    return half ** 2 / 3, half ** 4 / 5


# ---- exact fills and the in-place contract ------------------------------------------------
@pytest.mark.parametrize("fill, value", [(init.zeros_, 0.0), (init.ones_, 1.0),
                                         (lambda t: init.constant_(t, -2.5), -2.5)])
def test_exact_fills_write_in_place_and_record_no_graph(fill, value):
    p = param((3, 4), np.float32)
    data, version = p.data, p.version
    out = fill(p)
    assert out is p and p.data is data and p.data.dtype == np.float32
    np.testing.assert_array_equal(p.data, np.full((3, 4), value, np.float32))
    assert p.version == version + 1 and p.is_leaf and p.requires_grad


def test_constant_fills_an_integer_tensor_too():
    t = mg.Tensor(np.zeros(3, dtype=np.int64))
    np.testing.assert_array_equal(init.constant_(t, 4).data, [4, 4, 4])


def test_a_fill_after_a_forward_makes_the_graph_refuse_backward():
    p = param((3,))
    y = (p * p).sum()
    init.normal_(p, generator=0)
    with pytest.raises(RuntimeError):
        y.backward()  # p changed after it was recorded: the version check sees the fill


# ---- random fills: moments --------------------------------------------------------------
def test_normal_has_its_mean_and_std():
    x = init.normal_(param(), mean=1.5, std=0.3, generator=1).data
    assert_moments(x, 1.5, *normal_moments(0.3))


def test_uniform_stays_in_range_with_its_moments():
    x = init.uniform_(param(), a=-1.0, b=3.0, generator=2).data
    assert x.min() >= -1.0 and x.max() < 3.0
    assert_moments(x, 1.0, *uniform_moments(-1.0, 3.0))


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (0.5, 0.02, 0.48, 0.6),
                                             (0.0, 1.0, 3.0, 4.5), (0.0, 1.0, -6.0, -5.0)])
def test_trunc_normal_stays_in_bounds_with_the_truncated_moments(mean, std, a, b):
    x = init.trunc_normal_(param(), mean, std, a, b, generator=3).data
    assert x.min() >= a and x.max() <= b
    dist = scipy.stats.truncnorm((a - mean) / std, (b - mean) / std, loc=mean, scale=std)
    m, v, _, k = (float(s) for s in dist.stats(moments="mvsk"))
    assert_moments(x, m, v, (k + 3) * v ** 2)


def test_the_same_seed_gives_the_same_values_and_a_generator_is_used_as_is():
    a = init.kaiming_normal_(param((30, 20)), generator=5).data.copy()
    b = init.kaiming_normal_(param((30, 20)), generator=5).data
    np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(5)
    c = init.kaiming_normal_(param((30, 20)), generator=rng).data
    np.testing.assert_array_equal(a, c)
    d = init.kaiming_normal_(param((30, 20)), generator=rng).data  # the generator moved on
    assert not np.array_equal(c, d)


def test_float32_fills_keep_their_dtype():
    p = init.xavier_uniform_(param((300, 200), np.float32), generator=6)
    assert p.data.dtype == np.float32
    bound = math.sqrt(6 / 500)
    assert np.abs(p.data).max() <= np.float32(bound)


# ---- fans and gains against torch ---------------------------------------------------------
SHAPES = [(3, 5), (64, 16), (8, 3, 3, 3), (6, 2, 5), (4, 4, 2, 3, 1)]


@pytest.mark.parametrize("shape", SHAPES)
def test_fans_match_torch_on_the_same_shapes(shape):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert init.calculate_fan_in_and_fan_out(param(shape), layout="torch") == theirs
    if len(shape) == 2:  # minigrad's (in, out) is torch's (out, in) transposed
        assert init.calculate_fan_in_and_fan_out(param(shape[::-1])) == theirs
    else:
        assert init.calculate_fan_in_and_fan_out(param(shape)) == theirs


def test_fans_of_minigrad_layers_are_those_of_the_torch_layers():
    torch = pytest.importorskip("torch")
    for ours, theirs in [(nn.Linear(7, 3), torch.nn.Linear(7, 3)),
                         (nn.Conv2d(4, 6, (3, 2), groups=2), torch.nn.Conv2d(4, 6, (3, 2),
                                                                             groups=2))]:
        assert init.calculate_fan_in_and_fan_out(ours.weight) == \
            torch.nn.init._calculate_fan_in_and_fan_out(theirs.weight)


@pytest.mark.parametrize("nonlinearity, param_", [
    ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
    ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 0), ("selu", None)])
def test_gains_match_torch(nonlinearity, param_):
    torch = pytest.importorskip("torch")
    assert init.calculate_gain(nonlinearity, param_) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param_), rel=1e-15)


@pytest.mark.parametrize("fill, kwargs, normal", [
    (init.xavier_uniform_, dict(gain=2.0), False), (init.xavier_normal_, {}, True),
    (init.kaiming_uniform_, dict(a=0.1), False),
    (init.kaiming_normal_, dict(mode="fan_out", nonlinearity="relu"), True),
    (init.kaiming_normal_, dict(nonlinearity="tanh"), True)])
def test_xavier_and_kaiming_of_a_linear_weight_have_torchs_spread(fill, kwargs, normal):
    """On minigrad's Linear(in=400, out=100) weight, the std torch's formula gives for
    torch's Linear(400, 100) weight (its fans and gains from torch itself)."""
    torch = pytest.importorskip("torch")
    layer = nn.Linear(400, 100)
    fill(layer.weight, generator=7, **kwargs)
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(100, 400))
    if fill in (init.xavier_uniform_, init.xavier_normal_):
        std = kwargs.get("gain", 1.0) * math.sqrt(2.0 / (fan_in + fan_out))
    else:
        gain = torch.nn.init.calculate_gain(kwargs.get("nonlinearity", "leaky_relu"),
                                            kwargs.get("a", 0))
        std = gain / math.sqrt(fan_in if kwargs.get("mode", "fan_in") == "fan_in" else fan_out)
    if normal:
        assert_moments(layer.weight.data, 0.0, *normal_moments(std))
    else:
        bound = math.sqrt(3) * std
        assert np.abs(layer.weight.data).max() <= bound
        assert_moments(layer.weight.data, 0.0, *uniform_moments(-bound, bound))


def test_kaiming_uniform_of_a_conv_weight_stays_in_its_bound():
    conv = nn.Conv2d(16, 32, 3)
    init.kaiming_uniform_(conv.weight, nonlinearity="relu", generator=8)
    bound = math.sqrt(3) * math.sqrt(2) / math.sqrt(16 * 9)
    assert np.abs(conv.weight.data).max() <= bound
    assert np.abs(conv.weight.data).max() > 0.95 * bound  # 4608 draws reach near the edge


# ---- checks -------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, words", [
    (lambda: init.normal_(np.zeros(3)), TypeError, ["normal_", "ndarray", "Tensor"]),
    (lambda: init.normal_(mg.Tensor(np.zeros(3, np.int32))), TypeError, ["int32"]),
    (lambda: init.normal_(param((2,)), std=-1.0), ValueError, ["std"]),
    (lambda: init.uniform_(param((2,)), a=2.0, b=1.0), ValueError, ["a=2.0"]),
    (lambda: init.trunc_normal_(param((2,)), a=1.0, b=1.0), ValueError, ["a < b"]),
    (lambda: init.trunc_normal_(param((2,)), a=50.0, b=60.0), ValueError, ["tail"]),
    (lambda: init.xavier_uniform_(param((5,))), ValueError, ["2 or more axes"]),
    (lambda: init.kaiming_normal_(param((2, 2)), mode="fan"), ValueError, ["mode"]),
    (lambda: init.kaiming_normal_(param((2, 2)), nonlinearity="gelu"), ValueError,
     ["nonlinearity", "'gelu'"]),
    (lambda: init.calculate_fan_in_and_fan_out(param((2, 2)), layout="tf"), ValueError,
     ["layout"]),
    (lambda: init.normal_(param((2,)), generator="seed"), TypeError, ["generator"]),
])
def test_arguments_are_checked_and_nothing_is_written(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert all(w in str(info.value) for w in words), str(info.value)


def test_a_refused_fill_leaves_the_tensor_as_it_was():
    p = param((2, 2))
    with pytest.raises(ValueError):
        init.kaiming_uniform_(p, mode="fan", generator=0)
    np.testing.assert_array_equal(p.data, np.full((2, 2), 7.0))
