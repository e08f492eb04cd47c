"""The matrix norms of ``norm`` beyond Frobenius, over a pair of axes as ``np.linalg.norm``
takes them (``axis=(row, col)``; the other axes are a batch): ``ord=1`` / ``-1`` (the largest /
smallest column sum of |x|), ``inf`` / ``-inf`` (row sums), ``2`` / ``-2`` (the largest /
smallest singular value) and ``"nuc"`` (their sum), each with its VJP; ``reduce.norm`` calls
``matrix_norm`` for them. docs/backward.md §41 derives the VJPs and the choice at ties
(repeated singular values, equal column sums): torch's, the mean over the tied ones.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["matrix_norm"]  # and is_matrix_ord, norm's check of ord


def is_matrix_ord(ord) -> bool:
    """Whether ``ord`` is one of this module's: 1, -1, 2, -2, inf, -inf (as numbers of any
    real type, as np.linalg.norm compares them) or 'nuc' (None and 'fro' stay with norm)."""
    if isinstance(ord, str):
        return ord == "nuc"
    if isinstance(ord, bool) or not isinstance(ord, (int, float, np.integer, np.floating)):
        return False
    return ord in (1, -1, 2, -2) or bool(np.isinf(ord))


def _tied_share(values: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """1/k at each of the k entries (last axis) equal to the picked extreme, else 0: torch's
    amax/amin gradient, the mean of the subgradients of the tied entries."""
    hit = values == picked[..., None]
    return hit / np.maximum(hit.sum(axis=-1, keepdims=True), 1)


def _extreme(owner_ord, values: np.ndarray, largest: bool) -> np.ndarray:
    if values.shape[-1] == 0:
        if largest:  # a norm is >= 0: the largest of nothing is 0, as np.linalg.norm
            return np.zeros(values.shape[:-1], values.dtype)
        raise ValueError(f"norm x: got an empty matrix for ord={owner_ord!r}; expected at least "
                         "one row and one column (the smallest of no values is undefined)")
    return values.max(axis=-1) if largest else values.min(axis=-1)


def matrix_norm(x: np.ndarray, ord, axes: tuple[int, int], keepdims: bool
                ) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """``np.linalg.norm(x, ord, axes, keepdims)`` for a matrix ``ord`` (``is_matrix_ord``), and
    its VJP.

    x (..., R, C) once ``axes`` = (row, col) are moved last; the result has x's other axes
    (and the two as size 1 with ``keepdims``).
    Derivation: docs/backward.md §41. Tests: tests/minigrad/op_cases/reduce.py,
    tests/minigrad/ops/test_matrix_norms.py.
    """
    row, col = axes
    xm = np.moveaxis(x, (row, col), (-2, -1))
    largest = ord == "nuc" or ord > 0
    if ord != "nuc" and ord not in (2, -2):
        along = -1 if np.isinf(ord) else -2  # column sums (ord ±1) or row sums (±inf)
        sums = np.sum(np.abs(xm), axis=along)
        out = _extreme(ord, sums, largest)
        share = _tied_share(sums, out)
        share = share[..., None, :] if along == -2 else share[..., :, None]

        def grad_m(gb):
            return gb[..., None, None] * np.sign(xm) * share
    else:
        k = min(xm.shape[-2:])
        if k:
            u, s, vh = np.linalg.svd(xm, full_matrices=False)
        else:  # np.linalg.svd refuses an empty matrix: no singular values
            u = np.zeros(xm.shape[:-1] + (0,), xm.dtype)
            s = np.zeros(xm.shape[:-2] + (0,), xm.dtype)
            vh = np.zeros(xm.shape[:-2] + (0, xm.shape[-1]), xm.dtype)
        if ord == "nuc":
            out, weights = s.sum(axis=-1), np.ones_like(s)
        else:
            out = _extreme(ord, s, largest)
            weights = _tied_share(s, out)

        def grad_m(gb):  # Σ_i w_i u_i v_iᵀ, scaled by g
            return (u * (gb[..., None] * weights)[..., None, :]) @ vh
    out = np.asarray(out, dtype=x.dtype)
    kept = sorted(axes)
    result = np.expand_dims(out, kept) if keepdims else out

    def vjp(g):
        gb = np.squeeze(g, axis=tuple(kept)) if keepdims else np.asarray(g)
        return np.moveaxis(grad_m(gb), (-2, -1), (row, col))

    return result, vjp
