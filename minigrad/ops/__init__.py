"""Every built-in op, each declared with ``minigrad.op``: its forward beside its VJP.

One module per family; ``PUBLIC_OPS`` lists the differentiable ones family by family (the
test suite checks each one's gradient; ``tests/minigrad/op_cases/<family>.py`` holds their
cases).
"""
from typing import TYPE_CHECKING

from .elementwise import (
    abs, add, astype, clip, div, equal, exp, greater, greater_equal, less, less_equal, log,
    maximum, minimum, mul, neg, not_equal, pow, relu, sigmoid, sqrt, sub, tanh, where,
)
from .unary import (
    arccos, arcsin, arctan, arctan2, arcsinh, arctanh, ceil, cos, cosh, exp2, expm1, floor,
    hypot, log10, log1p, log2, logaddexp, mod, reciprocal, round, rsqrt, sign, sin, sinh,
    square, tan, trunc,
)
from .activations import (
    elu, gelu, gelu_tanh, hardtanh, leaky_relu, log_sigmoid, log_softmax, selu, silu, softmax,
    softmin, softplus,
)
from .reduce import (
    all, any, argmax, argmin, logsumexp, max, mean, min, norm, prod, std, sum, var,
)
from .scan import cumprod, cumsum, logcumsumexp
from .shape import (
    broadcast_to, concatenate, expand_dims, flip, moveaxis, permute, repeat, reshape, roll,
    split, squeeze, stack, swapaxes, tile, transpose, tril, triu,
)
from .indexing import diagonal, getitem, one_hot, put_along_axis, take_along_axis, trace
from .linalg import linear, matmul
from .contract import einsum, inner, outer, tensordot
from .normalization import layer_norm
from .attention import scaled_dot_product_attention, self_attention
from .losses import binary_cross_entropy_with_logits, l1_loss, mse_loss, smooth_l1_loss
from .class_losses import cross_entropy, nll_loss
from .conv import conv1d, conv2d, pad
from .pool import avg_pool2d, max_pool2d
from .sort import argsort, median, quantile, sort, topk
from .scatter import index_add, scatter, scatter_add, scatter_reduce
from .conv_transpose import conv_transpose1d, conv_transpose2d
from .activations import celu, hardsigmoid, hardswish, mish, softsign
from .unary import erf, erfc
from .losses import binary_cross_entropy
from .resize import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool2d, interpolate
from .pool import avg_pool1d, max_pool1d, max_unpool2d
from .channel_norm import batch_norm, group_norm, instance_norm
from .normalization import rms_norm

#: The differentiable public ops, by family.
PUBLIC_OPS = (
    # elementwise.py: arithmetic, comparisons' companions, where, clip, astype
    "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "tanh", "abs", "sigmoid",
    "relu", "maximum", "minimum", "where", "clip", "astype",
    # unary.py: the elementwise math functions
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arctanh",
    "log1p", "expm1", "log2", "log10", "exp2", "square", "reciprocal", "rsqrt",
    "arctan2", "hypot", "logaddexp", "sign", "floor", "ceil", "round", "trunc", "mod",
    # activations.py
    "softplus", "silu", "gelu", "gelu_tanh", "leaky_relu", "elu", "selu", "log_sigmoid",
    "hardtanh", "softmax", "log_softmax", "softmin",
    # reduce.py, scan.py
    "sum", "mean", "max", "min", "var", "std", "prod", "norm", "logsumexp",
    "cumsum", "cumprod", "logcumsumexp",
    # shape.py
    "reshape", "transpose", "permute", "swapaxes", "expand_dims", "squeeze", "broadcast_to",
    "concatenate", "stack", "split", "tile", "repeat", "roll", "flip", "tril", "triu",
    "moveaxis",
    # indexing.py
    "getitem", "take_along_axis", "put_along_axis", "diagonal", "trace",
    # linalg.py, contract.py
    "matmul", "linear", "einsum", "tensordot", "outer", "inner",
    # normalization.py, attention.py
    "layer_norm", "self_attention", "scaled_dot_product_attention",
    # losses.py, class_losses.py
    "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits",
    "cross_entropy", "nll_loss",
    # conv.py, pool.py
    "conv1d", "conv2d", "max_pool2d", "avg_pool2d", "pad",
    # sort.py, scatter.py
    "sort", "topk", "median", "quantile", "scatter", "scatter_add", "scatter_reduce", "index_add",
    # conv_transpose.py
    "conv_transpose1d", "conv_transpose2d",
    # the smaller ops: activations.py, unary.py (erf, erfc), losses.py
    "mish", "hardswish", "hardsigmoid", "celu", "softsign", "erf", "erfc",
    "binary_cross_entropy",
    # resize.py
    "interpolate", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
    # pool.py: 1-D pooling, unpooling
    "max_pool1d", "avg_pool1d", "max_unpool2d",
    # channel_norm.py, normalization.py
    "batch_norm", "instance_norm", "group_norm", "rms_norm",
)
#: Reductions to indices and truth values, and argsort's permutation: np.ndarray results,
#: not differentiable.
INDEX_REDUCTIONS = ("argmax", "argmin", "any", "all", "argsort")
#: The comparisons behind ``<``, ``==``, ...: bool results, not differentiable.
COMPARISONS = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
# mypy reads only an __all__ written as a literal list, and would see none of the ops in
# ``from .ops import *`` (minigrad.functional); without an __all__ it takes every public
# name of this module, the ops among them.
if not TYPE_CHECKING:
    __all__ = (list(PUBLIC_OPS) + list(INDEX_REDUCTIONS) + list(COMPARISONS)
               + ["one_hot", "PUBLIC_OPS", "INDEX_REDUCTIONS", "COMPARISONS"])
