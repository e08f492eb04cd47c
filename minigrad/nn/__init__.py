"""PyTorch-like modules, one file per kind.

- ``parameter.py``: ``Parameter``; ``module.py``: ``Module`` (registration,
  ``train()``/``eval()``, buffers, ``state_dict``); ``containers.py``: ``ModuleList``,
  ``Sequential``.
- ``layers.py``: ``Linear``, ``LayerNorm``, ``Conv2d``, ``Embedding``; ``conv.py``:
  ``Conv1d``, ``ConvTranspose1d``, ``ConvTranspose2d`` (torch's weight layouts and
  initialization); ``attention.py``: ``MultiheadAttention`` (torch's parameter names and
  (out, in) layouts); ``pooling.py``: ``MaxPool1d``, ``MaxPool2d``, ``AvgPool1d``,
  ``AvgPool2d``, ``AdaptiveAvgPool1d``, ``AdaptiveAvgPool2d``, ``AdaptiveMaxPool2d``,
  ``MaxUnpool2d``, ``Upsample``.
- ``normalization.py``: ``BatchNorm1d``, ``BatchNorm2d``, ``InstanceNorm1d``,
  ``InstanceNorm2d``, ``GroupNorm``, ``RMSNorm`` (the batch and instance norms own their
  running statistics).
- ``activations.py``: one module per activation of ``F`` with torch's names and arguments
  (``ReLU``, ``GELU``, ``Mish``, ``LeakyReLU``, ``Softmax``, ...), ``Flatten``, ``Dropout``,
  ``Identity``.
- ``losses.py``: ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ``L1Loss``, ``SmoothL1Loss``,
  ``BCEWithLogitsLoss``, ``BCELoss``.
- ``init.py`` (``nn.init``): in-place initializers; ``utils.py`` (``nn.utils``): gradient
  clipping.

Unlike PyTorch, ``Linear.weight`` has shape (in_features, out_features) and the layer
computes ``x @ W + b``: no transpose in the forward pass.
"""
from ..checks import StateDictKeyError
from . import init, utils
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
    Identity,
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
from .attention import MultiheadAttention
from .containers import ModuleList, Sequential
from .conv import Conv1d, ConvTranspose1d, ConvTranspose2d
from .layers import Conv2d, Embedding, LayerNorm, Linear
from .losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
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
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
    MaxUnpool2d,
    Upsample,
)

__all__ = [
    "Parameter", "Module", "ModuleList", "Sequential", "IncompatibleKeys", "Linear",
    "LayerNorm", "Conv2d", "Embedding", "ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "Softmax",
    "Flatten", "Dropout", "utils", "StateDictKeyError",
    "Identity", "init", "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss",
    "BCEWithLogitsLoss", "BCELoss", "MultiheadAttention",
    "Conv1d", "ConvTranspose1d", "ConvTranspose2d",
    "Mish", "Hardswish", "Hardsigmoid", "CELU", "Softsign", "LeakyReLU", "ELU", "SELU",
    "Softplus", "LogSigmoid", "Hardtanh", "LogSoftmax", "Softmin",
    "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d", "MaxUnpool2d", "Upsample",
    "BatchNorm1d", "BatchNorm2d", "InstanceNorm1d", "InstanceNorm2d", "GroupNorm", "RMSNorm",
]
