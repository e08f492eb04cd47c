"""PyTorch-like modules.

``parameter.py``: ``Parameter``; ``module.py``: ``Module`` (registration,
``train()``/``eval()``, buffers, ``state_dict``); ``containers.py``: ``ModuleList``,
``Sequential``; ``layers.py``: ``Linear``, ``LayerNorm``,
``Conv2d``, ``Embedding``; ``activations.py``: ``ReLU``, ``GELU``, ``Tanh``, ``Sigmoid``,
``SiLU``, ``Softmax``, ``Flatten``, ``Dropout``, ``Identity``; ``utils.py`` (``nn.utils``):
gradient clipping; ``losses.py``: ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ``L1Loss``,
``SmoothL1Loss``, ``BCEWithLogitsLoss``; ``init.py`` (``nn.init``): in-place initializers;
``attention.py``: ``MultiheadAttention`` (torch's parameter names and (out, in) layouts);
``conv.py``: ``Conv1d``, ``ConvTranspose1d``, ``ConvTranspose2d`` (torch's weight layouts
and initialization).

Unlike PyTorch, ``Linear.weight`` has shape (in_features, out_features) and the layer
computes ``x @ W + b``: no transpose in the forward pass.
"""
from ..checks import StateDictKeyError
from . import init, utils
from .activations import GELU, Dropout, Flatten, Identity, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .attention import MultiheadAttention
from .containers import ModuleList, Sequential
from .conv import Conv1d, ConvTranspose1d, ConvTranspose2d
from .layers import Conv2d, Embedding, LayerNorm, Linear
from .losses import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss
from .module import IncompatibleKeys, Module
from .parameter import Parameter

__all__ = [
    "Parameter", "Module", "ModuleList", "Sequential", "IncompatibleKeys", "Linear",
    "LayerNorm", "Conv2d", "Embedding", "ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "Softmax",
    "Flatten", "Dropout", "utils", "StateDictKeyError",
    "Identity", "init", "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss",
    "BCEWithLogitsLoss", "MultiheadAttention",
    "Conv1d", "ConvTranspose1d", "ConvTranspose2d",
]
