"""PyTorch-like modules.

``parameter.py``: ``Parameter``; ``module.py``: ``Module`` (registration,
``train()``/``eval()``, buffers, ``state_dict``); ``containers.py``: ``ModuleList``,
``Sequential``; ``layers.py``: ``Linear``, ``LayerNorm``,
``Conv2d``, ``Embedding``; ``activations.py``: ``ReLU``, ``GELU``, ``Tanh``, ``Sigmoid``,
``SiLU``, ``Softmax``, ``Flatten``, ``Dropout``, and the other activations of ``F`` (``Mish``,
``Hardswish``, ``Hardsigmoid``, ``CELU``, ``Softsign``, ``LeakyReLU``, ``ELU``, ``SELU``,
``Softplus``, ``LogSigmoid``, ``Hardtanh``, ``LogSoftmax``, ``Softmin``); ``utils.py``
(``nn.utils``): gradient clipping.

Unlike PyTorch, ``Linear.weight`` has shape (in_features, out_features) and the layer
computes ``x @ W + b``: no transpose in the forward pass.
"""
from ..checks import StateDictKeyError
from . import utils
from .activations import (
    CELU,
    ELU,
    GELU,
    SELU,
    Dropout,
    Flatten,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softsign,
    Tanh,
)
from .containers import ModuleList, Sequential
from .layers import Conv2d, Embedding, LayerNorm, Linear
from .module import IncompatibleKeys, Module
from .parameter import Parameter

__all__ = [
    "Parameter", "Module", "ModuleList", "Sequential", "IncompatibleKeys", "Linear",
    "LayerNorm", "Conv2d", "Embedding", "ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "Softmax",
    "Flatten", "Dropout", "utils", "StateDictKeyError",
    "Mish", "Hardswish", "Hardsigmoid", "CELU", "Softsign", "LeakyReLU", "ELU", "SELU",
    "Softplus", "LogSigmoid", "Hardtanh", "LogSoftmax", "Softmin",
]
