"""minigrad.ops.bounds: ops whose output can be far larger than their inputs (tile, repeat,
einsum, pad, the attention scores, broadcast indices of take/put_along_axis) check the size
they would allocate, and einsum the work of its naive loop, before NumPy is called. Without
the check a 10-element input asks for 72 TiB (tile, repeat) or an einsum of a broadcast view
for terabytes, and a five-operand einsum chain runs for hours; each case runs in a child
with a bounded address space (tests/reliability/hostile_util.py), so an unchecked
allocation fails there, not here."""
from __future__ import annotations

import numpy as np
import pytest
from hostile_util import run_limited  # tests/reliability/, on sys.path (tests/conftest.py)

import minigrad as mg
import minigrad.functional as F
from minigrad.ops.bounds import MAX_EINSUM_STEPS, MAX_OUTPUT_ELEMENTS

CASES = {
    "tile reps": ("F.tile(np.zeros(10), (10**6, 10**6))", "tile reps"),
    "tile huge 1-d": ("F.tile(np.zeros(10), 10**12)", "tile reps"),
    "repeat int": ("F.repeat(np.zeros(10), 10**12)", "repeat repeats"),
    "repeat counts": ("F.repeat(np.zeros(2), np.array([2**62, 2**62]))", "repeat repeats"),
    "einsum broadcast view": (
        "F.einsum('ij->ij', np.broadcast_to(np.zeros(1), (10**6, 10**6)))", "einsum"),
    "einsum outer": ("F.einsum('i,j,k->ijk', np.zeros(3000), np.zeros(3000), np.zeros(3000))",
                     "einsum"),
    "einsum slow chain": ("F.einsum('ab,bc,cd,de,ef->af', *[np.zeros((300, 300))] * 5)",
                          "einsum"),
    # resize.py and pool.py: output sizes from a factor or a size
    "interpolate factor": ("F.interpolate(np.zeros((1, 1, 10)), scale_factor=1e9)",
                           "interpolate scale_factor"),
    "interpolate size": ("F.interpolate(np.zeros((1, 1, 4, 4)), size=10**6, mode='bilinear')",
                         "interpolate size"),
    "adaptive pool size": ("F.adaptive_avg_pool2d(np.zeros((1, 1, 4, 4)), 10**6)",
                           "adaptive_avg_pool2d output_size"),
    "unpool stride": ("F.max_unpool2d(np.zeros((1, 1, 4, 4)), np.zeros((1, 1, 4, 4), int), 2, "
                      "stride=10**6)", "max_unpool2d"),
}


@pytest.mark.slow  # a child process; fast: test_the_refusals_name_the_limit
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_oversized_output_is_refused_before_it_is_allocated(name):
    body, where = CASES[name]
    code = f"import numpy as np\nimport minigrad.functional as F\n{body}"
    result, _ = run_limited(code, limit_mb=600, timeout=120)
    assert result.startswith("ValueError"), result
    assert where in result, result


def test_the_bounds_let_ordinary_sizes_through():
    a = mg.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    out = F.tile(a, (2, 2))
    assert out.shape == (4, 6)
    assert F.repeat(a, np.array([1, 0, 2]), axis=1).shape == (2, 3)
    # exactly at the bound is allowed (the refusal is for more); a broadcast view keeps
    # the test small
    n = MAX_OUTPUT_ELEMENTS
    assert F.einsum("i->i", np.broadcast_to(np.zeros(1, np.int8), (n,))).shape == (n,)
    # a chain with optimize=True contracts pairwise: its steps are small, so it runs
    x = np.ones((300, 300))
    y = F.einsum("ab,bc,cd,de,ef->af", x, x, x, x, x, optimize=True)
    np.testing.assert_array_equal(y.data, np.full((300, 300), 300.0 ** 4))
    assert MAX_EINSUM_STEPS >= 1 << 30


def test_the_refusals_name_the_limit():
    with pytest.raises(ValueError, match=f"at most {MAX_OUTPUT_ELEMENTS:,}"):
        F.tile(np.zeros(10), 10**12)
    with pytest.raises(ValueError, match="optimize=True"):
        F.einsum("ab,bc,cd,de,ef->af", *[np.zeros((300, 300))] * 5)


ATTENTION = {
    # 2 * 10**5 query/key rows of one feature: 10**10 scores (80 GB) from 3 * 10**5 inputs
    "sdpa": ("q = np.zeros((1, 10**5, 1)); F.scaled_dot_product_attention(q, q, q)",
             "scaled_dot_product_attention"),
    "sdpa broadcast batch": (
        "q = np.zeros((1000, 1, 100, 1)); k = np.zeros((1, 1000, 100, 1));"
        "F.scaled_dot_product_attention(q, k, k)", "scaled_dot_product_attention"),
    "self_attention": ("F.self_attention(np.zeros((1, 10**5, 3)), 1)", "self_attention"),
}


@pytest.mark.slow  # a child process
@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_attention_scores_too_large_are_refused_before_they_are_built(name):
    body, where = ATTENTION[name]
    code = f"import numpy as np\nimport minigrad.functional as F\n{body}"
    result, _ = run_limited(code, limit_mb=600, timeout=120)
    assert result.startswith("ValueError") and where in result, result


ALONG_AXIS = {
    # (10**5, 1) against (1, 10**5) indices: 10**10 reads (80 GB) from 2 * 10**5 numbers
    "take_along_axis": "F.take_along_axis(np.zeros((10**5, 1)), np.zeros((1, 10**5), int), 1)",
    "put_along_axis": "F.put_along_axis(np.zeros((10**5, 1)), np.zeros((1, 10**5), int), 1.0, 1)",
}


@pytest.mark.slow  # a child process
@pytest.mark.parametrize("name", sorted(ALONG_AXIS))
def test_broadcast_indices_too_large_are_refused_before_they_are_built(name):
    code = f"import numpy as np\nimport minigrad.functional as F\n{ALONG_AXIS[name]}"
    result, _ = run_limited(code, limit_mb=600, timeout=120)
    assert result.startswith("ValueError") and f"{name} indices" in result, result


def test_an_optimal_path_search_over_many_operands_is_refused():
    # NumPy's 'optimal' path search is factorial in the operands: 10 of them ran for more
    # than a minute before the first multiply
    import string

    from minigrad.ops.bounds import MAX_OPTIMAL_OPERANDS
    n = MAX_OPTIMAL_OPERANDS + 2
    terms = [string.ascii_letters[i:i + 2] for i in range(n)]
    with pytest.raises(ValueError, match="einsum optimize: got 'optimal'.*'greedy'"):
        F.einsum(",".join(terms) + "->", *[np.ones((2, 2))] * n, optimize="optimal")
    # greedy (or True) searches in polynomial time: the same contraction runs
    out = F.einsum(",".join(terms) + "->", *[np.ones((2, 2))] * n, optimize="greedy")
    assert out.data == 2.0 ** (n + 1)


def test_pad_refuses_a_huge_width_before_allocating():
    """F.pad(np.zeros(1), 10**12) asked NumPy for 14.6 TiB (MemoryError); now the width is
    refused from the shapes, naming the argument."""
    with pytest.raises(ValueError, match=r"pad pad_width: .* elements to allocate"):
        F.pad(np.zeros(1), 10 ** 12)
    assert F.pad(np.zeros(2), 1).shape == (4,)  # ordinary widths untouched
