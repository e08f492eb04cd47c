"""NumPy's spellings of the issue-14 ops (ops/unary.py, contract.py, reduce.py, scan.py) on
Tensors, as a table for minigrad/numpy_api.py's tests: ``CASES`` rows are (the numpy_api
table key, id, the NumPy spelling, the op it must record like, inputs). Run by
tests/minigrad/engine/test_numpy_api_spellings.py; engine/test_numpy_api.py's table check
counts them. Not an op family (see __init__.py)."""
from __future__ import annotations

from functools import partial

import helpers  # tests/, on sys.path (tests/conftest.py)
import numpy as np

from minigrad import F

RNG = np.random.default_rng(1407)
rn = partial(helpers.rn, RNG)
uni = partial(helpers.uniform, RNG)


def _unary(ufunc, op, make=rn):
    return (ufunc, op.__name__, lambda a: ufunc(a), op, [make(3, 2)])


_IN = lambda *s: uni(-0.9, 0.9, *s)  # noqa: E731  (inside arcsin's and arctanh's domain)
_POS = lambda *s: uni(0.3, 3.0, *s)  # noqa: E731
CASES = [
    _unary(np.sin, F.sin), _unary(np.cos, F.cos), _unary(np.tan, F.tan),
    _unary(np.arcsin, F.arcsin, _IN), _unary(np.arccos, F.arccos, _IN),
    _unary(np.arctan, F.arctan), _unary(np.sinh, F.sinh), _unary(np.cosh, F.cosh),
    _unary(np.arcsinh, F.arcsinh), _unary(np.arctanh, F.arctanh, _IN),
    _unary(np.log1p, F.log1p, _POS), _unary(np.expm1, F.expm1), _unary(np.log2, F.log2, _POS),
    _unary(np.log10, F.log10, _POS), _unary(np.exp2, F.exp2),
    _unary(np.reciprocal, F.reciprocal, _POS), _unary(np.sign, F.sign),
    _unary(np.floor, F.floor), _unary(np.ceil, F.ceil), _unary(np.trunc, F.trunc),
    (np.arctan2, "arctan2", lambda a, b: np.arctan2(a, b), F.arctan2, [rn(3, 4), rn(4)]),
    (np.hypot, "hypot", lambda a, b: np.hypot(a, b), F.hypot, [rn(3, 1), rn(4)]),
    (np.logaddexp, "logaddexp", lambda a, b: np.logaddexp(a, b), F.logaddexp,
     [rn(3, 4), rn(3, 4)]),
    (np.remainder, "mod", lambda a, b: np.mod(a, b), F.mod, [3 * rn(3, 4), _POS(4)]),
    (np.einsum, "einsum", lambda a, b: np.einsum("ij,jk->ik", a, b),
     lambda a, b: F.einsum("ij,jk->ik", a, b), [rn(2, 3), rn(3, 4)]),
    (np.tensordot, "tensordot", lambda a, b: np.tensordot(a, b, axes=([0], [1])),
     lambda a, b: F.tensordot(a, b, ([0], [1])), [rn(2, 3), rn(4, 2)]),
    (np.outer, "outer", lambda a, b: np.outer(a, b), F.outer, [rn(3), rn(2, 2)]),
    (np.inner, "inner", lambda a, b: np.inner(a, b), F.inner, [rn(2, 3), rn(4, 3)]),
    (np.std, "std", lambda a: np.std(a, axis=0, ddof=1), lambda a: F.std(a, axis=0, ddof=1),
     [rn(4, 3)]),
    (np.prod, "prod", lambda a: np.prod(a, axis=1, keepdims=True),
     lambda a: F.prod(a, axis=1, keepdims=True), [rn(3, 4)]),
    (np.linalg.norm, "norm", lambda a: np.linalg.norm(a, 3, axis=1),
     lambda a: F.norm(a, 3, axis=1), [rn(3, 4)]),
    (np.round, "round", lambda a: np.round(a, 1), lambda a: F.round(a, 1), [rn(3, 4)]),
    (np.cumsum, "cumsum", lambda a: np.cumsum(a, axis=1), lambda a: F.cumsum(a, 1), [rn(3, 4)]),
    (np.cumprod, "cumprod", lambda a: np.cumprod(a), F.cumprod, [rn(3, 4)]),
]
NOT_DIFFERENTIABLE = [np.argmax, np.argmin, np.any, np.all]  # they answer with arrays
