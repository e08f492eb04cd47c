"""Every public op given an integer argument too large for a C long (2**70) raises a
ValueError or TypeError naming that argument, never NumPy's OverflowError: the table below
holds one call per (op, integer parameter), and a test checks it covers every integer
parameter of every op in ``minigrad.ops.PUBLIC_OPS``."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import minigrad as mg
import minigrad.ops as ops
from minigrad import F

H = 2**70
#: The parameters that take an integer, or integers (axes, sizes, counts, offsets).
INT_PARAMS = {"axis", "axes", "axis1", "axis2", "ddof", "shape", "indices_or_sections",
              "reps", "repeats", "shift", "k", "source", "destination", "offset", "decimals",
              "num_heads", "ignore_index", "stride", "padding", "dilation", "groups",
              "kernel_size", "pad_width", "index", "output_padding"}


def x():
    return mg.tensor(np.arange(1.0, 7.0).reshape(2, 3) / 7, requires_grad=True)


def x3():
    return mg.tensor(np.arange(1.0, 9.0).reshape(1, 2, 4) / 9, requires_grad=True)


def x4():
    return mg.tensor(np.arange(1.0, 17.0).reshape(1, 1, 4, 4) / 17, requires_grad=True)


IDX = np.array([[0, 1, 0], [1, 0, 1]])
W2, W1 = np.ones((1, 1, 2, 2)), np.ones((1, 2, 2))
W2T, W1T = np.ones((1, 1, 2, 2)), np.ones((2, 1, 2))  # (C_in, C_out/groups, k...)
CALLS = {
    **{(op, "axis"): (lambda op=op: getattr(F, op)(x(), axis=H)) for op in (
        "sum", "mean", "max", "min", "var", "std", "prod", "norm", "logsumexp", "softmax",
        "log_softmax", "softmin", "cumsum", "cumprod", "logcumsumexp", "squeeze", "flip",
        "expand_dims")},
    ("var", "ddof"): lambda: F.var(x(), ddof=H), ("std", "ddof"): lambda: F.std(x(), ddof=H),
    ("reshape", "shape"): lambda: F.reshape(x(), (H, -1)),
    ("transpose", "axes"): lambda: F.transpose(x(), (H, 0)),
    ("permute", "axes"): lambda: F.permute(x(), H, 0),
    ("swapaxes", "axis1"): lambda: F.swapaxes(x(), H, 0),
    ("swapaxes", "axis2"): lambda: F.swapaxes(x(), 0, H),
    ("moveaxis", "source"): lambda: F.moveaxis(x(), H, 0),
    ("moveaxis", "destination"): lambda: F.moveaxis(x(), 0, H),
    ("broadcast_to", "shape"): lambda: F.broadcast_to(x(), (H, 2, 3)),
    ("concatenate", "axis"): lambda: F.concatenate([x(), x()], axis=H),
    ("stack", "axis"): lambda: F.stack([x(), x()], axis=H),
    ("split", "indices_or_sections"): lambda: F.split(x(), [H], axis=1),
    ("split", "axis"): lambda: F.split(x(), 3, axis=H),
    ("tile", "reps"): lambda: F.tile(x(), (H,)),
    ("repeat", "repeats"): lambda: F.repeat(x(), H, 0),
    ("repeat", "axis"): lambda: F.repeat(x(), 2, H),
    ("roll", "shift"): lambda: F.roll(x(), H, 0), ("roll", "axis"): lambda: F.roll(x(), 1, H),
    ("tril", "k"): lambda: F.tril(x(), H), ("triu", "k"): lambda: F.triu(x(), H),
    ("diagonal", "offset"): lambda: F.diagonal(x(), H),
    ("diagonal", "axis1"): lambda: F.diagonal(x(), 0, H, 1),
    ("diagonal", "axis2"): lambda: F.diagonal(x(), 0, 0, H),
    ("trace", "offset"): lambda: F.trace(x(), H),
    ("trace", "axis1"): lambda: F.trace(x(), 0, H, 1),
    ("trace", "axis2"): lambda: F.trace(x(), 0, 0, H),
    ("getitem", "index"): lambda: x()[H],
    ("take_along_axis", "axis"): lambda: F.take_along_axis(x(), IDX, axis=H),
    ("put_along_axis", "axis"): lambda: F.put_along_axis(x(), IDX, x(), axis=H),
    ("tensordot", "axes"): lambda: F.tensordot(x(), x(), axes=([H], [0])),
    ("round", "decimals"): lambda: F.round(x(), H),
    ("self_attention", "num_heads"): lambda: F.self_attention(
        x3(), np.ones((4, 12)), np.ones((4, 4)), num_heads=H),
    ("cross_entropy", "ignore_index"): lambda: F.cross_entropy(x(), np.array([0, 1]),
                                                               ignore_index=H),
    ("cross_entropy", "axis"): lambda: F.cross_entropy(x(), np.array([0, 1]), axis=H),
    ("nll_loss", "ignore_index"): lambda: F.nll_loss(x(), np.array([0, 1]), ignore_index=H),
    ("nll_loss", "axis"): lambda: F.nll_loss(x(), np.array([0, 1]), axis=H),
    ("pad", "pad_width"): lambda: F.pad(x(), ((H, 0), (0, 0))),
    **{(op, p): (lambda op=op, p=p, w=w, a=a: getattr(F, op)(a(), w, **{p: H}))
       for op, w, a in (("conv2d", W2, x4), ("conv1d", W1, x3))
       for p in ("stride", "padding", "dilation", "groups")},
    **{(op, p): (lambda op=op, p=p: getattr(F, op)(x4(), 2, **{p: H}))
       for op in ("max_pool2d", "avg_pool2d") for p in ("stride", "padding")},
    **{(op, "kernel_size"): (lambda op=op: getattr(F, op)(x4(), H))
       for op in ("max_pool2d", "avg_pool2d")},
    # sort.py, scatter.py: the index a list holding 2**70
    ("sort", "axis"): lambda: F.sort(x(), axis=H), ("topk", "axis"): lambda: F.topk(x(), 1, H),
    ("topk", "k"): lambda: F.topk(x(), H),
    ("median", "axis"): lambda: F.median(x(), H),
    ("quantile", "axis"): lambda: F.quantile(x(), 0.5, H),
    **{(op, p): (lambda op=op, p=p: getattr(F, op)(
        x(), **{"axis": 1, "index": [[0], [1]], "src": np.ones((2, 1)), p: H}
        if p == "axis" else {"axis": 1, "index": [[H], [1]], "src": np.ones((2, 1))}))
       for op in ("scatter", "scatter_add") for p in ("axis", "index")},
    **{("scatter_reduce", p): (lambda p=p: F.scatter_reduce(
        x(), H if p == "axis" else 1, [[H], [1]] if p == "index" else [[0], [1]],
        np.ones((2, 1)), "sum")) for p in ("axis", "index")},
    **{("index_add", p): (lambda p=p: F.index_add(
        x(), H if p == "axis" else 1, [H] if p == "index" else [0], np.ones((2, 1))))
       for p in ("axis", "index")},
    ("index_add", "source"): lambda: F.index_add(x(), 1, [0], [[H], [1]]),  # (an array)
    # conv_transpose.py (a stride or dilation of 2**70 asks for an output beyond the bound)
    **{(op, p): (lambda op=op, p=p, w=w, a=a: getattr(F, op)(a(), w, **{p: H}))
       for op, w, a in (("conv_transpose2d", W2T, x4), ("conv_transpose1d", W1T, x3))
       for p in ("stride", "padding", "output_padding", "dilation", "groups")},
    # resize.py: sizes (not in INT_PARAMS: checked here all the same)
    ("interpolate", "size"): lambda: F.interpolate(x4(), size=(H, 2)),
    ("adaptive_avg_pool1d", "output_size"): lambda: F.adaptive_avg_pool1d(x3(), H),
    ("adaptive_avg_pool2d", "output_size"): lambda: F.adaptive_avg_pool2d(x4(), (2, H)),
    ("adaptive_max_pool2d", "output_size"): lambda: F.adaptive_max_pool2d(x4(), (H, 2)),
    # pool.py: dilation, 1-D pools, unpooling, the divisor
    ("max_pool2d", "dilation"): lambda: F.max_pool2d(x4(), 2, dilation=H),
    **{("max_pool1d", p): (lambda p=p: F.max_pool1d(x3(), 2, **{p: H}))
       for p in ("stride", "padding", "dilation")},
    **{("avg_pool1d", p): (lambda p=p: F.avg_pool1d(x3(), 2, **{p: H})) for p in ("stride", "padding")},
    **{(op, "kernel_size"): (lambda op=op: getattr(F, op)(x3(), H)) for op in ("max_pool1d", "avg_pool1d")},
    **{("max_unpool2d", p): (lambda p=p: F.max_unpool2d(x4(), np.zeros((1, 1, 4, 4), int), 2, **{p: H}))
       for p in ("kernel_size", "stride", "padding", "output_size")},
    ("avg_pool2d", "divisor_override"): lambda: F.avg_pool2d(x4(), 2, divisor_override=H),
}


def test_the_table_covers_every_integer_parameter_of_every_public_op():
    wanted = set()
    for op in ops.PUBLIC_OPS:
        forward = getattr(getattr(F, op), "forward", getattr(F, op))
        wanted |= {(op, p) for p in inspect.signature(forward).parameters if p in INT_PARAMS}
    wanted -= {("scaled_dot_product_attention", "k")}  # the keys, an array
    assert wanted <= set(CALLS), sorted(wanted - set(CALLS))


#: Where 2**70 means something (a stride past the input, a label never given, an offset
#: past the matrix, a shift of whole turns, a
#: ddof past the count: inf, as NumPy): the op answers.
MEANINGFUL = {("conv2d", "stride"), ("conv1d", "stride"), ("max_pool2d", "stride"),
              ("avg_pool2d", "stride"), ("cross_entropy", "ignore_index"),
              ("nll_loss", "ignore_index"), ("diagonal", "offset"), ("trace", "offset"),
              ("tril", "k"), ("triu", "k"), ("roll", "shift"), ("var", "ddof"), ("std", "ddof")}
MEANINGFUL |= {("max_pool1d", "stride"), ("avg_pool1d", "stride")}  # pool.py's 1-D pools


@pytest.mark.parametrize("op, param", sorted(CALLS), ids=[f"{o}-{p}" for o, p in sorted(CALLS)])
def test_an_integer_beyond_a_c_long_is_refused_naming_the_argument(op, param):
    """A ValueError, TypeError or IndexError naming the argument (never an OverflowError),
    or, where the value means something, an answer."""
    if (op, param) in MEANINGFUL:
        CALLS[op, param]()
        return
    with pytest.raises((ValueError, TypeError, IndexError)) as info:
        CALLS[op, param]()
    message = str(info.value)
    assert not isinstance(info.value, OverflowError)
    assert param.replace("_size", "") in message or op == "getitem", message
    assert len(message) < 600, message
