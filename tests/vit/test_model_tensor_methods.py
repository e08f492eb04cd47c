"""TinyViT's differentiable methods (tokens, features, logits) take Tensors; an array there is
a TypeError naming x (model(x) is the entry point for arrays)."""
import numpy as np
import pytest

from minigrad import Tensor
from vit import TinyViT


@pytest.mark.parametrize("dim", [16, 64], ids=["fused", "composed"])
@pytest.mark.parametrize("method", ["tokens", "features", "logits"])
def test_an_array_is_a_type_error_naming_x(method, dim):
    model = TinyViT(dim=dim, seed=0)
    x = np.zeros((2, 1, 8, 8))
    with pytest.raises(TypeError, match=r"TinyViT x: got ndarray; expected a minigrad Tensor"):
        getattr(model, method)(x)
    out = getattr(model, method)(Tensor(x))  # the same images as a Tensor
    assert isinstance(out, Tensor)
    np.testing.assert_array_equal(model(x), model.logits(Tensor(x)).data)
