"""Every built-in op, each declared with ``minigrad.op``: its forward beside its VJP."""
from .elementwise import (
    abs, add, astype, clip, div, equal, exp, greater, greater_equal, less, less_equal, log,
    maximum, minimum, mul, neg, not_equal, pow, relu, sigmoid, sqrt, sub, tanh, where,
)
from .activations import (
    elu, gelu, hardtanh, leaky_relu, log_sigmoid, selu, silu, softmin, softplus,
)
from .attention import scaled_dot_product_attention, self_attention
from .conv import conv1d, conv2d, pad
from .linalg import linear, matmul
from .losses import (
    binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss, nll_loss, smooth_l1_loss,
)
from .fused import gelu_tanh, layer_norm, log_softmax, logsumexp, softmax
from .pool import avg_pool2d, max_pool2d
from .reduce import max, mean, min, sum, var
from .shape import (
    broadcast_to, concatenate, expand_dims, getitem, permute, reshape, split, squeeze, stack,
    swapaxes, transpose,
)
from .shape import flip, moveaxis, repeat, roll, tile, tril, triu
from .indexing import diagonal, one_hot, put_along_axis, take_along_axis, trace

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
    # activations and losses (ops/activations.py, ops/losses.py)
    "softplus", "silu", "gelu", "leaky_relu", "elu", "selu", "log_sigmoid", "hardtanh",
    "softmin",
    "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits", "nll_loss",
)
# issue 14, indexing, shape and attention (ops-c)
PUBLIC_OPS += (
    "take_along_axis", "put_along_axis", "tile", "repeat", "roll", "flip", "tril", "triu",
    "moveaxis", "diagonal", "trace", "scaled_dot_product_attention",
)
#: The comparisons behind ``<``, ``==``, ...: bool results, not differentiable.
COMPARISONS = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
__all__ = list(PUBLIC_OPS) + list(COMPARISONS) + ["PUBLIC_OPS", "COMPARISONS"]
__all__ += ["one_hot"]  # integer labels in, no gradient: not in PUBLIC_OPS (ops-c)
