"""PyTorch-like modules.

``parameter.py``: ``Parameter``; ``module.py``: ``Module`` (registration,
``train()``/``eval()``, buffers, ``state_dict``); ``containers.py``: ``ModuleList``,
``Sequential``; ``layers.py``: ``Linear``, ``LayerNorm``,
``Conv2d``, ``Embedding``; ``activations.py``: ``ReLU``, ``GELU``, ``Tanh``, ``Sigmoid``,
``SiLU``, ``Softmax``, ``Flatten``, ``Dropout``; ``utils.py`` (``nn.utils``): gradient clipping;
``normalization.py``: ``BatchNorm1d``, ``BatchNorm2d``, ``InstanceNorm1d``, ``InstanceNorm2d``,
``GroupNorm``, ``RMSNorm`` (the batch and instance norms own their running statistics).

Unlike PyTorch, ``Linear.weight`` has shape (in_features, out_features) and the layer
computes ``x @ W + b``: no transpose in the forward pass.
"""
from ..checks import StateDictKeyError
from . import utils
from .activations import GELU, Dropout, Flatten, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .containers import ModuleList, Sequential
from .layers import Conv2d, Embedding, LayerNorm, Linear
from .module import IncompatibleKeys, Module
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    RMSNorm,
)
from .parameter import Parameter

__all__ = [
    "Parameter", "Module", "ModuleList", "Sequential", "IncompatibleKeys", "Linear",
    "LayerNorm", "Conv2d", "Embedding", "ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "Softmax",
    "Flatten", "Dropout", "utils", "StateDictKeyError",
    "BatchNorm1d", "BatchNorm2d", "InstanceNorm1d", "InstanceNorm2d", "GroupNorm", "RMSNorm",
]
