"""vit: a Vision Transformer built on minigrad (see ../shared/spec for the contract)."""
