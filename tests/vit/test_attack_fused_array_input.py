"""vit.Block on a plain NumPy array: the fused block (run through ``fusion.run_checked``)
must take it as the op wrapper did, an array input being a constant, and give what the
block gives on the same data as a Tensor (the same op, so the same bits)."""
from __future__ import annotations

import numpy as np

import minigrad as mg
from vit import block_op
from vit.model.block import Block


def test_a_small_block_takes_a_numpy_array_as_a_constant_input():
    block = Block(8, 2, 16, rng=np.random.default_rng(0))
    t = np.random.default_rng(1).standard_normal((2, 3, 8))
    assert block_op.fusable(block, t)  # the fused path is the one under test
    before = t.copy()
    out = block(t)
    expected = block(mg.Tensor(t.copy()))
    assert isinstance(out, mg.Tensor) and out.shape == (2, 3, 8)
    assert out.data.dtype == expected.data.dtype
    assert out.data.tobytes() == expected.data.tobytes()
    np.testing.assert_array_equal(t, before)  # the input is not modified
    # the parameters still get their gradients through the array-fed block
    out.sum().backward()
    assert all(p.grad is not None for p in block.parameters())
