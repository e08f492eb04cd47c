"""Fixtures shared by the tests of vit (tests/conftest.py puts this folder on sys.path)."""
import pytest


@pytest.fixture(params=[False, True], ids=["composed", "fused"])
def fused(request) -> bool:
    """Which path a TinyViT built in the test runs (its constructor's fused argument):
    False, the composed minigrad ops (the default); True, one recorded op per stage
    (vit/model/fused.py). Tests that hold for both paths take this fixture and build
    ``TinyViT(..., fused=fused)`` (or ``Block(..., fused=fused)``)."""
    return request.param
