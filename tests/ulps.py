"""Closeness within a few units in the last place (ulps) of the dtype, scaled by magnitude.

Bits are asserted only where docs/reliability.md ("Bit-for-bit guarantees") promises them.
Two different ways of computing the same value (a row alone vs in a bigger batch through
BLAS, a fused op vs its composition, another CPU's kernels) may round differently in their
last bits; tests compare those with ``assert_close_ulps``, whose tolerance comes from the
dtype instead of a magic constant:

    tol = ulps * eps(dtype) * scale,    scale = max |desired|   (unless given)

The scale is the largest magnitude of the expected array, not each element's own: a BLAS
sum's rounding error is relative to the size of its terms, so an element that cancels to
near zero carries the absolute error of its large neighbours.
"""
from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_ULPS", "ulp_tolerance", "assert_close_ulps"]

#: Measured: a row of vit_block computed alone vs inside a batch of two differs by about
#: one ulp of the output's magnitude (OpenBLAS Haswell kernels); 256 leaves room for longer
#: sums and deeper graphs while staying ~1e-13 relative in float64.
DEFAULT_ULPS = 256


def _float_dtype(dtype, *arrays) -> np.dtype:
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*arrays)
    if dt.kind != "f":
        raise TypeError(f"ulps: got dtype {dt}; expected a floating dtype")
    return dt


def ulp_tolerance(desired, ulps: float = DEFAULT_ULPS, dtype=None, scale=None) -> float:
    """The absolute tolerance ``ulps * eps(dtype) * scale``; ``scale`` defaults to the
    largest finite magnitude in ``desired`` (at least the dtype's smallest normal)."""
    desired = np.asarray(desired)
    dt = _float_dtype(dtype, desired)
    info = np.finfo(dt)
    if scale is None:
        finite = np.abs(desired[np.isfinite(desired)])
        scale = float(finite.max()) if finite.size else 0.0
    return float(ulps) * float(info.eps) * max(float(scale), float(info.tiny))


def assert_close_ulps(actual, desired, ulps: float = DEFAULT_ULPS, *, dtype=None, scale=None,
                      err_msg: str = "") -> None:
    """Assert same shape, NaN/inf in the same places, and |actual - desired| <= tol elsewhere,
    tol = ``ulp_tolerance(desired, ulps, dtype, scale)``; ``dtype`` defaults to the two
    arrays' common dtype (float16 gets float16's eps)."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    dt = _float_dtype(dtype, actual, desired)
    assert actual.shape == desired.shape, f"shapes {actual.shape} != {desired.shape} {err_msg}"
    tol = ulp_tolerance(desired, ulps, dt, scale)
    wide = np.float64 if dt.itemsize <= 8 else dt  # differences of float16/32 without rounding
    a, d = actual.astype(wide), desired.astype(wide)
    finite = np.isfinite(d)
    assert np.array_equal(np.isfinite(a), finite) and np.array_equal(a[~finite], d[~finite],
                                                                      equal_nan=True), \
        f"NaN or inf in different places {err_msg}"
    err = np.abs(a[finite] - d[finite])
    worst = float(err.max()) if err.size else 0.0
    assert worst <= tol, (f"max |actual - desired| = {worst:.3g} > {tol:.3g} = {ulps} ulps of "
                          f"{dt} at scale {tol / (ulps * np.finfo(dt).eps):.3g} {err_msg}")
