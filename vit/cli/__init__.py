"""``python -m vit``: the commands (``main``), their argument types (``args``), prediction on
pictures (``predict``), timm folders (``timm_folder``), figures (``plots``,
``attention_maps``)."""
from .main import main

__all__ = ["main"]
