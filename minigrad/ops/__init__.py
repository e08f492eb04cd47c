"""Every built-in op, each declared with ``minigrad.op``: its forward beside its VJP."""
from .elementwise import (
    abs, add, astype, clip, div, equal, exp, greater, greater_equal, less, less_equal, log,
    maximum, minimum, mul, neg, not_equal, pow, relu, sigmoid, sqrt, sub, tanh, where,
)
from .attention import self_attention
from .conv import conv1d, conv2d, pad
from .linalg import linear, matmul
from .fused import cross_entropy, gelu_tanh, layer_norm, log_softmax, logsumexp, softmax
from .pool import avg_pool2d, max_pool2d
from .reduce import max, mean, min, sum, var
from .reduce import all, any, argmax, argmin, norm, prod, std
from .contract import einsum, inner, outer, tensordot
from .scan import cumprod, cumsum, logcumsumexp
from .unary import (
    arccos, arcsin, arctan, arctan2, arcsinh, arctanh, ceil, cos, cosh, exp2, expm1, floor,
    hypot, log10, log1p, log2, logaddexp, mod, reciprocal, round, rsqrt, sign, sin, sinh,
    square, tan, trunc,
)
from .shape import (
    broadcast_to, concatenate, expand_dims, getitem, permute, reshape, split, squeeze, stack,
    swapaxes, transpose,
)

#: The differentiable public ops, by name (the test suite checks each one's gradient).
PUBLIC_OPS = (
    "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "tanh", "abs", "sigmoid",
    "relu", "maximum", "minimum", "where", "clip", "astype",
    "sum", "mean", "max", "min", "var",
    "reshape", "transpose", "permute", "swapaxes", "expand_dims", "squeeze", "broadcast_to",
    "getitem", "concatenate", "stack", "split",
    "matmul", "linear",
    "softmax", "log_softmax", "logsumexp", "layer_norm", "gelu_tanh", "cross_entropy",
    "self_attention",
    "conv1d", "conv2d", "max_pool2d", "avg_pool2d", "pad",
)
# ops-a (issue 14): contractions, reductions and scans, elementwise math
PUBLIC_OPS += (
    "einsum", "tensordot", "outer", "inner",
    "std", "prod", "norm", "cumsum", "cumprod", "logcumsumexp",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arctanh",
    "log1p", "expm1", "log2", "log10", "exp2", "square", "reciprocal", "rsqrt",
    "arctan2", "hypot", "logaddexp", "sign", "floor", "ceil", "round", "trunc", "mod",
)
#: Reductions to indices and truth values: np.ndarray results, not differentiable.
INDEX_REDUCTIONS = ("argmax", "argmin", "any", "all")
#: The comparisons behind ``<``, ``==``, ...: bool results, not differentiable.
COMPARISONS = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
__all__ = list(PUBLIC_OPS) + list(COMPARISONS) + ["PUBLIC_OPS", "COMPARISONS"]
__all__ += list(INDEX_REDUCTIONS) + ["INDEX_REDUCTIONS"]  # ops-a
