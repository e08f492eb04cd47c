"""The shared per-op catalogs: one table per catalog, each covering every public op
(``minigrad.ops.PUBLIC_OPS``; the suites that run them check that). Not an op family: the
op case modules are the other files of this package.

- ``bool_catalog()``: bool Tensors where the op takes numbers; run by
  ops/test_all_ops_dtype.py (the op works, or fails with a message naming it).
- ``zero_d_catalog()``: 0-d operands (or a 0-d result); run by engine/test_zero_d.py (a
  0-d result holds an ndarray, 0-d leaves get 0-d ndarray gradients of their dtype).
- ``slot_catalog(T)``: a call with a value in the place of the op's main array argument;
  run by tests/reliability/test_bad_input_ops.py (bad kinds of array, nested lists).
"""
from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad import F

#: The elementwise functions of ops/unary.py with one and two operands, and the scans.
UNARY_A = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
           "arctanh", "log1p", "expm1", "log2", "log10", "exp2", "square", "reciprocal",
           "rsqrt", "sign", "floor", "ceil", "round", "trunc")
BINARY_A = ("arctan2", "hypot", "logaddexp", "mod")
SCANS_A = ("cumsum", "cumprod", "logcumsumexp")
#: The smaller ops' elementwise functions of one operand.
SMALL_A = ("mish", "hardswish", "hardsigmoid", "celu", "softsign", "erf", "erfc")

BOOL_MASK = np.array([[True, False, True], [False, False, True]])  # bool_catalog's input
SLOT_VALUES = np.arange(1.0, 7.0).reshape(2, 3) / 7  # in (0, 1): fine for log, sqrt, pow
SLOT_LABELS = np.array([0, 2])
SLOT_MASK = np.array([[True, False, True], [False, True, False]])
RESIZE_4D = ("interpolate", "adaptive_avg_pool2d", "max_unpool2d", "adaptive_max_pool2d")
RESIZE_3D = ("adaptive_avg_pool1d", "max_pool1d", "avg_pool1d")


def slot_values(op):
    """A valid value for ``slot_catalog(T)[op]`` (SLOT_VALUES, shaped for the op)."""
    if op in ("self_attention", "conv1d", "instance_norm"):
        return SLOT_VALUES.reshape(1, 2, 3).copy()
    if op in ("conv2d", "max_pool2d", "avg_pool2d"):
        return SLOT_VALUES.reshape(1, 1, 2, 3).copy()
    if op in ("conv_transpose1d", "conv_transpose2d"):  # conv_transpose.py
        return SLOT_VALUES.reshape((1, 2, 3) if op.endswith("1d") else (1, 1, 2, 3)).copy()
    if op in RESIZE_4D:  # resize and pooling: (N, C, H, W), or (N, C, L) for the 1-D ones
        return SLOT_VALUES.reshape(1, 1, 2, 3).copy()
    if op in RESIZE_3D:
        return SLOT_VALUES.reshape(1, 2, 3).copy()
    return SLOT_VALUES.T.copy() if op == "matmul" else SLOT_VALUES.copy()


def bool_catalog() -> dict:
    """op -> a call with bool Tensors where the op takes numbers (every public op)."""
    b = mg.Tensor(BOOL_MASK)
    table = {
        "add": lambda: b + b, "sub": lambda: b - b, "mul": lambda: b * b, "div": lambda: b / b,
        "neg": lambda: -b, "pow": lambda: b ** b, "exp": lambda: F.exp(b),
        "log": lambda: F.log(b), "sqrt": lambda: F.sqrt(b), "tanh": lambda: F.tanh(b),
        "abs": lambda: F.abs(b), "sigmoid": lambda: F.sigmoid(b), "relu": lambda: F.relu(b),
        "maximum": lambda: F.maximum(b, b), "minimum": lambda: F.minimum(b, b),
        "where": lambda: F.where(b, b, b), "clip": lambda: F.clip(b, 0, 1),
        "astype": lambda: F.astype(b, np.float32), "sum": lambda: F.sum(b),
        "mean": lambda: F.mean(b), "max": lambda: F.max(b), "min": lambda: F.min(b),
        "var": lambda: F.var(b), "reshape": lambda: F.reshape(b, (3, 2)),
        "transpose": lambda: b.T, "permute": lambda: F.permute(b, 1, 0),
        "swapaxes": lambda: F.swapaxes(b, 0, 1), "expand_dims": lambda: F.expand_dims(b, 0),
        "squeeze": lambda: F.squeeze(F.expand_dims(b, 0)),
        "broadcast_to": lambda: F.broadcast_to(b, (2, 2, 3)), "getitem": lambda: b[b],
        "concatenate": lambda: F.concatenate([b, b]), "stack": lambda: F.stack([b, b]),
        "split": lambda: F.split(b, 3, axis=1)[0], "matmul": lambda: b @ b.T,
        "linear": lambda: F.linear(b, BOOL_MASK.T), "softmax": lambda: F.softmax(b),
        "log_softmax": lambda: F.log_softmax(b), "logsumexp": lambda: F.logsumexp(b),
        "layer_norm": lambda: F.layer_norm(b), "gelu_tanh": lambda: F.gelu_tanh(b),
        "cross_entropy": lambda: F.cross_entropy(b, np.array([0, 1])),
        "self_attention": lambda: F.self_attention(mg.Tensor(np.ones((1, 2, 6), bool)), 2),
        "conv2d": lambda: F.conv2d(mg.Tensor(np.ones((1, 1, 2, 3), bool)),
                                   BOOL_MASK[None, None, :1, :1]),
        "conv1d": lambda: F.conv1d(F.expand_dims(b, 0), np.ones((1, 2, 1), bool)),
        "max_pool2d": lambda: F.max_pool2d(mg.Tensor(BOOL_MASK[None, None]), 1),
        "avg_pool2d": lambda: F.avg_pool2d(mg.Tensor(BOOL_MASK[None, None]), 1),
        "pad": lambda: F.pad(b, 1),
        # indexing, shape and attention ops
        "take_along_axis": lambda: F.take_along_axis(b, np.array([[0], [2]]), 1),
        "put_along_axis": lambda: F.put_along_axis(b, np.array([[0], [2]]), True, 1),
        "tile": lambda: F.tile(b, 2), "repeat": lambda: F.repeat(b, 2, 1),
        "roll": lambda: F.roll(b, 1), "flip": lambda: F.flip(b), "tril": lambda: F.tril(b),
        "triu": lambda: F.triu(b), "moveaxis": lambda: F.moveaxis(b, 0, 1),
        "diagonal": lambda: F.diagonal(b), "trace": lambda: F.trace(b),
        "scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(b, b, b),
        "softplus": lambda: F.softplus(b), "silu": lambda: F.silu(b), "gelu": lambda: F.gelu(b),
        "leaky_relu": lambda: F.leaky_relu(b), "elu": lambda: F.elu(b), "selu": lambda: F.selu(b),
        "log_sigmoid": lambda: F.log_sigmoid(b), "hardtanh": lambda: F.hardtanh(b),
        "softmin": lambda: F.softmin(b), "mse_loss": lambda: F.mse_loss(b, b),
        "l1_loss": lambda: F.l1_loss(b, b), "smooth_l1_loss": lambda: F.smooth_l1_loss(b, b),
        "binary_cross_entropy_with_logits": lambda: F.binary_cross_entropy_with_logits(b, b),
        "nll_loss": lambda: F.nll_loss(b, np.array([0, 1])),
        # resize.py
        "interpolate": lambda: F.interpolate(mg.Tensor(BOOL_MASK[None, None]), size=(3, 5)),
        "adaptive_avg_pool1d": lambda: F.adaptive_avg_pool1d(F.expand_dims(b, 0), 2),
        "adaptive_avg_pool2d": lambda: F.adaptive_avg_pool2d(mg.Tensor(BOOL_MASK[None, None]),
                                                             1),
        "adaptive_max_pool2d": lambda: F.adaptive_max_pool2d(mg.Tensor(BOOL_MASK[None, None]),
                                                             (1, 2)),
        # pool.py: 1-D pools, unpooling
        "max_pool1d": lambda: F.max_pool1d(F.expand_dims(b, 0), 2),
        "avg_pool1d": lambda: F.avg_pool1d(F.expand_dims(b, 0), 2),
        "max_unpool2d": lambda: F.max_unpool2d(mg.Tensor(BOOL_MASK[None, None]),
                                               np.array([[[[0, 1, 2], [3, 4, 5]]]]), 1),
        # channel_norm.py, normalization.py
        "batch_norm": lambda: F.batch_norm(b, None, None, training=True),
        "instance_norm": lambda: F.instance_norm(F.expand_dims(b, 0)),
        "group_norm": lambda: F.group_norm(b, 1), "rms_norm": lambda: F.rms_norm(b, 3),
    }
    # contractions, reductions, scans, elementwise functions
    table.update({name: (lambda f=getattr(F, name): f(b)) for name in UNARY_A})
    table.update({name: (lambda f=getattr(F, name): f(b, b)) for name in BINARY_A})
    table.update({
        "einsum": lambda: F.einsum("ij,kj->ik", b, b),
        "tensordot": lambda: F.tensordot(b, b, ([1], [1])), "outer": lambda: F.outer(b, b),
        "inner": lambda: F.inner(b, b), "std": lambda: F.std(b), "prod": lambda: F.prod(b),
        "norm": lambda: F.norm(b), "cumsum": lambda: F.cumsum(b, axis=1),
        "cumprod": lambda: F.cumprod(b), "logcumsumexp": lambda: F.logcumsumexp(b),
        # conv_transpose.py
        "conv_transpose1d": lambda: F.conv_transpose1d(F.expand_dims(b, 0),
                                                       np.ones((2, 1, 1), bool)),
        "conv_transpose2d": lambda: F.conv_transpose2d(mg.Tensor(np.ones((1, 1, 2, 3), bool)),
                                                       BOOL_MASK[None, None, :1, :1]),
    })
    table.update({  # sort.py, scatter.py (sums and products of truth values are refused)
        "sort": lambda: F.sort(b), "topk": lambda: F.topk(b, 2).values,
        "median": lambda: F.median(b, axis=1), "quantile": lambda: F.quantile(b, 0.5),
        "scatter": lambda: F.scatter(b, 1, np.array([[0], [2]]), True),
        "scatter_add": lambda: F.scatter_add(b, 1, np.array([[0], [2]]), BOOL_MASK),
        "scatter_reduce": lambda: F.scatter_reduce(b, 1, np.array([[0], [2]]), BOOL_MASK,
                                                   "amax"),
        "index_add": lambda: F.index_add(b, 0, np.array([1]), BOOL_MASK[:1]),
    })
    # the smaller ops: activations, erf, losses, norms
    table.update({name: (lambda f=getattr(F, name): f(b)) for name in SMALL_A})
    table.update({"binary_cross_entropy": lambda: F.binary_cross_entropy(b, b)})
    return table


def zero_d_catalog() -> dict:
    """Every public op applied to 0-d operands (or, where the op needs axes, reduced to a 0-d
    result), as ``name -> list of functions of two 0-d float Tensors``."""
    v = mg.Tensor(np.arange(1.0, 4.0))  # a vector, for ops that need axes
    m = mg.Tensor(np.arange(6.0).reshape(2, 3))
    table = {
        "add": [F.add], "sub": [F.sub], "mul": [F.mul], "div": [F.div], "pow": [F.pow],
        "neg": [lambda a, b: F.neg(a)], "exp": [lambda a, b: F.exp(a)],
        "log": [lambda a, b: F.log(a)], "sqrt": [lambda a, b: F.sqrt(a)],
        "tanh": [lambda a, b: F.tanh(a)], "abs": [lambda a, b: F.abs(a)],
        "sigmoid": [lambda a, b: F.sigmoid(a)], "relu": [lambda a, b: F.relu(a)],
        "maximum": [F.maximum], "minimum": [F.minimum],
        "where": [lambda a, b: F.where(a < b, a, b), lambda a, b: F.where(True, a, 2.0)],
        "clip": [lambda a, b: F.clip(a, 0.0, b)], "astype": [lambda a, b: F.astype(a, np.float32)],
        "sum": [lambda a, b: F.sum(a), lambda a, b: F.sum(v * a)],
        "mean": [lambda a, b: F.mean(a), lambda a, b: F.mean(v * a)],
        "max": [lambda a, b: F.max(a), lambda a, b: F.max(v * a)],
        "min": [lambda a, b: F.min(a), lambda a, b: F.min(v * a)],
        "var": [lambda a, b: F.var(a), lambda a, b: F.var(v * a)],
        "reshape": [lambda a, b: F.reshape(a, ()), lambda a, b: F.reshape(v * a, (3, 1))[1, 0]],
        "transpose": [lambda a, b: F.transpose(a)], "permute": [lambda a, b: F.permute(a)],
        "swapaxes": [lambda a, b: F.swapaxes(F.reshape(a, (1, 1)), 0, 1)[0, 0]],
        "expand_dims": [lambda a, b: F.expand_dims(a, 0)[0]],
        "squeeze": [lambda a, b: F.squeeze(a), lambda a, b: F.squeeze(F.reshape(a, (1,)))],
        "broadcast_to": [lambda a, b: F.broadcast_to(a, ())],
        "getitem": [lambda a, b: a[()], lambda a, b: a[...], lambda a, b: (v * a)[1],
                    lambda a, b: (m * a)[1, 2], lambda a, b: (v * a)[np.array(2)]],
        "concatenate": [lambda a, b: F.concatenate([F.reshape(a, (1,)), v])[0]],
        "stack": [lambda a, b: F.stack([a, b])[0]],
        "split": [lambda a, b: F.split(v * a, 3)[0][0]],
        "matmul": [lambda a, b: F.matmul(v * a, v)],
        "linear": [lambda a, b: F.linear(v * a, np.ones((3, 1)))[0]],
        "softmax": [lambda a, b: F.softmax(v * a)[0]],
        "log_softmax": [lambda a, b: F.log_softmax(v * a)[0]],
        "logsumexp": [lambda a, b: F.logsumexp(a), lambda a, b: F.logsumexp(v * a)],
        "layer_norm": [lambda a, b: F.layer_norm(v * a)[0]],
        "gelu_tanh": [lambda a, b: F.gelu_tanh(a)],
        "cross_entropy": [lambda a, b: F.cross_entropy(v * a, 1),
                          lambda a, b: F.cross_entropy(v * a, np.array(1), reduction="none")],
        "self_attention": [lambda a, b: F.self_attention(
            F.reshape(F.broadcast_to(a, (6,)), (1, 1, 6)), 2)[0, 0, 0]],
        "conv2d": [lambda a, b: F.conv2d(F.reshape(a, (1, 1, 1, 1)),
                                         F.reshape(b, (1, 1, 1, 1)))[0, 0, 0, 0]],
        "conv1d": [lambda a, b: F.conv1d(F.reshape(a, (1, 1, 1)),
                                         F.reshape(b, (1, 1, 1)))[0, 0, 0]],
        "max_pool2d": [lambda a, b: F.max_pool2d(F.reshape(a, (1, 1, 1, 1)), 1)[0, 0, 0, 0]],
        "avg_pool2d": [lambda a, b: F.avg_pool2d(F.reshape(a, (1, 1, 1, 1)), 1)[0, 0, 0, 0]],
        "pad": [lambda a, b: F.pad(F.reshape(a, (1,)), 1)[1]],
        # indexing, shape and attention ops
        "take_along_axis": [lambda a, b: F.take_along_axis(v * a, np.array([2]), 0)[0]],
        "put_along_axis": [lambda a, b: F.put_along_axis(v * a, np.array([1]), b, 0)[1]],
        "tile": [lambda a, b: F.tile(a, ()), lambda a, b: F.tile(a, 2)[1]],
        "repeat": [lambda a, b: F.repeat(a, 3)[2]], "roll": [lambda a, b: F.roll(a, 1)],
        "flip": [lambda a, b: F.flip(a)],
        "tril": [lambda a, b: F.tril(F.reshape(a, (1, 1)))[0, 0]],
        "triu": [lambda a, b: F.triu(F.reshape(a, (1, 1)))[0, 0]],
        "moveaxis": [lambda a, b: F.moveaxis(F.reshape(a, (1, 1)), 0, 1)[0, 0]],
        "diagonal": [lambda a, b: F.diagonal(F.reshape(a, (1, 1)))[0]],
        "trace": [lambda a, b: F.trace(F.reshape(a, (1, 1)))],
        "scaled_dot_product_attention": [lambda a, b: F.scaled_dot_product_attention(
            F.reshape(a, (1, 1)), F.reshape(b, (1, 1)), F.reshape(b, (1, 1)))[0, 0]],
        "softplus": [lambda a, b: F.softplus(a)], "silu": [lambda a, b: F.silu(a)],
        "gelu": [lambda a, b: F.gelu(a)], "leaky_relu": [lambda a, b: F.leaky_relu(a)],
        "elu": [lambda a, b: F.elu(a)], "selu": [lambda a, b: F.selu(a)],
        "log_sigmoid": [lambda a, b: F.log_sigmoid(a)], "hardtanh": [lambda a, b: F.hardtanh(a)],
        "softmin": [lambda a, b: F.softmin(a), lambda a, b: F.softmin(v * a)[0]],
        "mse_loss": [F.mse_loss, lambda a, b: F.mse_loss(v * a, v * b)],
        "l1_loss": [F.l1_loss, lambda a, b: F.l1_loss(v * a, v * b)],
        "smooth_l1_loss": [F.smooth_l1_loss, lambda a, b: F.smooth_l1_loss(v * a, v * b)],
        "binary_cross_entropy_with_logits": [
            F.binary_cross_entropy_with_logits,
            lambda a, b: F.binary_cross_entropy_with_logits(v * a, v * b)],
        "nll_loss": [lambda a, b: F.nll_loss(v * a, 1),
                     lambda a, b: F.nll_loss(v * a, np.array(1), reduction="none")],
        # resize.py
        "interpolate": [lambda a, b: F.interpolate(F.reshape(a, (1, 1, 1)), size=3,
                                                   mode="linear")[0, 0, 1],
                        lambda a, b: F.interpolate(F.reshape(v * a, (1, 1, 3)),
                                                   scale_factor=1.5)[0, 0, 2]],
        "adaptive_avg_pool1d": [lambda a, b: F.adaptive_avg_pool1d(F.reshape(v * a, (1, 3)),
                                                                   2)[0, 1]],
        "adaptive_avg_pool2d": [lambda a, b: F.adaptive_avg_pool2d(F.reshape(a, (1, 1, 1)),
                                                                   1)[0, 0, 0]],
        "adaptive_max_pool2d": [lambda a, b: F.adaptive_max_pool2d(F.reshape(a, (1, 1, 1)),
                                                                   1)[0, 0, 0]],
        # pool.py: 1-D pools, unpooling
        "max_pool1d": [lambda a, b: F.max_pool1d(F.reshape(v * a, (1, 3)), 2)[0, 0]],
        "avg_pool1d": [lambda a, b: F.avg_pool1d(F.reshape(v * a, (1, 3)), 2)[0, 0]],
        "max_unpool2d": [lambda a, b: F.max_unpool2d(F.reshape(a, (1, 1, 1)),
                                                     np.array([[[3]]]), 2)[0, 1, 1]],
        # channel_norm.py, normalization.py
        "batch_norm": [lambda a, b: F.batch_norm(F.reshape(v * a, (3, 1)), None, None,
                                                 training=True)[0, 0],
                       lambda a, b: F.batch_norm(F.reshape(a, (1, 1)), np.zeros(1),
                                                 np.ones(1))[0, 0]],
        "instance_norm": [lambda a, b: F.instance_norm(F.reshape(v * a, (1, 1, 3)))[0, 0, 0]],
        "group_norm": [lambda a, b: F.group_norm(F.reshape(v * a, (1, 3)), 1)[0, 0]],
        "rms_norm": [lambda a, b: F.rms_norm(F.reshape(a, (1,)), 1)[0],
                     lambda a, b: F.rms_norm(v * a, 3)[0]],
    }
    # contractions, reductions, scans, elementwise functions
    table.update({name: [lambda a, b, f=getattr(F, name): f(a)] for name in UNARY_A})
    table.update({name: [getattr(F, name)] for name in BINARY_A})
    table.update({
        "einsum": [lambda a, b: F.einsum(",->", a, b), lambda a, b: F.einsum("i,i", v * a, v)],
        "tensordot": [lambda a, b: F.tensordot(a, b, 0), lambda a, b: F.tensordot(v * a, v, 1)],
        "outer": [lambda a, b: F.outer(a, b)[0, 0]],
        "inner": [F.inner, lambda a, b: F.inner(v * a, v)],
        "std": [lambda a, b: F.std(a), lambda a, b: F.std(v * a, ddof=1)],
        "prod": [lambda a, b: F.prod(a), lambda a, b: F.prod(v * a)],
        "norm": [lambda a, b: F.norm(a), lambda a, b: F.norm(v * a, 3)],
        "cumsum": [lambda a, b: F.cumsum(a)[0], lambda a, b: F.cumsum(v * a)[2]],
        "cumprod": [lambda a, b: F.cumprod(a)[0], lambda a, b: F.cumprod(v * a)[2]],
        "logcumsumexp": [lambda a, b: F.logcumsumexp(a)[0],
                         lambda a, b: F.logcumsumexp(v * a)[2]],
        # conv_transpose.py
        "conv_transpose1d": [lambda a, b: F.conv_transpose1d(F.reshape(a, (1, 1, 1)),
                                                             F.reshape(b, (1, 1, 1)))[0, 0, 0]],
        "conv_transpose2d": [lambda a, b: F.conv_transpose2d(
            F.reshape(a, (1, 1, 1, 1)), F.reshape(b, (1, 1, 1, 1)))[0, 0, 0, 0]],
    })
    i1 = np.array([1])
    table.update({  # sort.py, scatter.py
        "sort": [lambda a, b: F.sort(a), lambda a, b: F.sort(v * a, descending=True)[0]],
        "topk": [lambda a, b: F.topk(a, 1).values, lambda a, b: F.topk(v * a, 2).values[1]],
        "median": [lambda a, b: F.median(a), lambda a, b: F.median(v * a)],
        "quantile": [lambda a, b: F.quantile(a, 0.5), lambda a, b: F.quantile(v * a, 0.75)],
        "scatter": [lambda a, b: F.scatter(v * a, 0, i1, F.reshape(b, (1,)))[1],
                    lambda a, b: F.scatter(v, 0, i1, a)[1]],
        "scatter_add": [lambda a, b: F.scatter_add(v * a, 0, i1, F.reshape(b, (1,)))[1]],
        "scatter_reduce": [lambda a, b: F.scatter_reduce(v * a, 0, i1, F.reshape(b, (1,)),
                                                         "prod")[1]],
        "index_add": [lambda a, b: F.index_add(v * a, 0, i1, F.reshape(b, (1,)))[1]],
    })
    # the smaller ops: activations, erf, losses, norms
    table.update({name: [lambda a, b, f=getattr(F, name): f(a)] for name in SMALL_A})
    table.update({"binary_cross_entropy": [
        lambda a, b: F.binary_cross_entropy(F.sigmoid(a), F.sigmoid(b)),
        lambda a, b: F.binary_cross_entropy(F.sigmoid(v * a), F.sigmoid(v * b), reduction="none")[1]]})
    return table


def slot_catalog(T) -> dict:
    """op -> a call with ``v`` in the place of its main array argument (shape (2, 3), or
    (3, 2) for matmul's right operand; see ``slot_values``); ``T`` is the valid Tensor
    argument of the binary ops."""
    table = {
        "add": lambda v: F.add(T, v), "sub": lambda v: F.sub(T, v), "mul": lambda v: F.mul(T, v),
        "div": lambda v: F.div(T, v), "pow": lambda v: F.pow(T, v),
        "maximum": lambda v: F.maximum(T, v), "minimum": lambda v: F.minimum(T, v),
        "neg": F.neg, "exp": F.exp, "log": F.log, "sqrt": F.sqrt, "tanh": F.tanh, "abs": F.abs,
        "sigmoid": F.sigmoid, "relu": F.relu,
        "where": lambda v: F.where(SLOT_MASK, T, v), "clip": lambda v: F.clip(v, 0.2, 0.8),
        "astype": lambda v: F.astype(v, np.float32),
        "sum": F.sum, "mean": F.mean, "max": F.max, "min": F.min, "var": F.var,
        "reshape": lambda v: F.reshape(v, (6,)), "transpose": F.transpose,
        "permute": lambda v: F.permute(v, 1, 0), "swapaxes": lambda v: F.swapaxes(v, 0, 1),
        "expand_dims": lambda v: F.expand_dims(v, 0), "squeeze": F.squeeze,
        "broadcast_to": lambda v: F.broadcast_to(v, (2, 2, 3)),
        "getitem": lambda v: F.getitem(v, 0),
        "concatenate": lambda v: F.concatenate([T, v]), "stack": lambda v: F.stack([T, v]),
        "split": lambda v: F.split(v, 3, axis=1),
        "matmul": lambda v: F.matmul(T, v),
        "linear": lambda v: F.linear(v, np.ones((3, 4))),
        "softmax": F.softmax, "log_softmax": F.log_softmax, "logsumexp": F.logsumexp,
        "layer_norm": F.layer_norm, "gelu_tanh": F.gelu_tanh,
        "cross_entropy": lambda v: F.cross_entropy(v, SLOT_LABELS),
        "self_attention": lambda v: F.self_attention(v, 1),  # (1, 2, 3): B 1, T 2, D 1
        "conv1d": lambda v: F.conv1d(v, np.ones((1, 2, 1))),  # (1, 2, 3): B 1, C 2, L 3
        "conv2d": lambda v: F.conv2d(v, np.ones((1, 1, 1, 1))),  # (1, 1, 2, 3): NCHW
        "max_pool2d": lambda v: F.max_pool2d(v, 1), "avg_pool2d": lambda v: F.avg_pool2d(v, 1),
        "pad": lambda v: F.pad(v, 1),
        # indexing, shape and attention ops
        "take_along_axis": lambda v: F.take_along_axis(v, np.array([[0], [2]]), 1),
        "put_along_axis": lambda v: F.put_along_axis(v, np.array([[0], [2]]), 0.5, 1),
        "tile": lambda v: F.tile(v, 2), "repeat": lambda v: F.repeat(v, 2, 1),
        "roll": lambda v: F.roll(v, 1), "flip": F.flip, "tril": F.tril, "triu": F.triu,
        "moveaxis": lambda v: F.moveaxis(v, 0, 1), "diagonal": F.diagonal, "trace": F.trace,
        "scaled_dot_product_attention": lambda v: F.scaled_dot_product_attention(v, T, T),
        "softplus": F.softplus, "silu": F.silu, "gelu": F.gelu, "leaky_relu": F.leaky_relu,
        "elu": F.elu, "selu": F.selu, "log_sigmoid": F.log_sigmoid, "hardtanh": F.hardtanh,
        "softmin": F.softmin,
        "mse_loss": lambda v: F.mse_loss(v, T), "l1_loss": lambda v: F.l1_loss(v, T),
        "smooth_l1_loss": lambda v: F.smooth_l1_loss(v, T),
        "binary_cross_entropy_with_logits": lambda v: F.binary_cross_entropy_with_logits(v, T),
        "nll_loss": lambda v: F.nll_loss(v, SLOT_LABELS),
        # resize.py
        "interpolate": lambda v: F.interpolate(v, scale_factor=1.5, mode="bilinear"),
        "adaptive_avg_pool1d": lambda v: F.adaptive_avg_pool1d(v, 2),
        "adaptive_avg_pool2d": lambda v: F.adaptive_avg_pool2d(v, (3, 2)),
        "adaptive_max_pool2d": lambda v: F.adaptive_max_pool2d(v, (1, 2)),
        # pool.py: 1-D pools, unpooling
        "max_pool1d": lambda v: F.max_pool1d(v, 2, 1), "avg_pool1d": lambda v: F.avg_pool1d(v, 2),
        "max_unpool2d": lambda v: F.max_unpool2d(v, np.array([[[[0, 3, 5], [6, 9, 11]]]]), 2),
        # channel_norm.py, normalization.py
        "batch_norm": lambda v: F.batch_norm(v, None, None, training=True),
        "instance_norm": F.instance_norm,  # (1, 2, 3): N 1, C 2, L 3
        "group_norm": lambda v: F.group_norm(v, 1), "rms_norm": lambda v: F.rms_norm(v, 3),
    }
    # contractions, reductions, scans, elementwise functions
    table.update({name: getattr(F, name) for name in UNARY_A + SCANS_A + ("std", "prod", "norm")})
    table.update({name: (lambda v, f=getattr(F, name): f(T, v)) for name in BINARY_A})
    table.update({
        "einsum": lambda v: F.einsum("ij,ij->j", T, v), "tensordot": lambda v: F.tensordot(T, v),
        "outer": lambda v: F.outer(T, v), "inner": lambda v: F.inner(T, v),
        # conv_transpose.py: (1, 2, 3) is B 1, C 2, L 3; (1, 1, 2, 3) NCHW
        "conv_transpose1d": lambda v: F.conv_transpose1d(v, np.ones((2, 1, 1))),
        "conv_transpose2d": lambda v: F.conv_transpose2d(v, np.ones((1, 1, 1, 1))),
    })
    table.update({  # sort.py, scatter.py
        "sort": F.sort, "topk": lambda v: F.topk(v, 2).values,
        "median": F.median, "quantile": lambda v: F.quantile(v, 0.25, axis=1),
        "scatter": lambda v: F.scatter(v, 1, np.array([[0], [2]]), 0.5),
        "scatter_add": lambda v: F.scatter_add(v, 1, np.array([[0], [2]]), np.ones((2, 1))),
        "scatter_reduce": lambda v: F.scatter_reduce(v, 1, np.array([[0], [2]]),
                                                     np.ones((2, 1)), "mean"),
        "index_add": lambda v: F.index_add(v, 0, np.array([1]), np.ones((1, 3))),
    })
    # the smaller ops: activations, erf, losses, norms
    table.update({name: getattr(F, name) for name in SMALL_A})
    table.update({"binary_cross_entropy": lambda v: F.binary_cross_entropy(v, T)})
    return table
