"""The issue-14 indexing and shape ops against PyTorch autograd: values and gradients for a
random cotangent, float64 and float32, tolerances derived from the dtype.

Mappings: take_along_axis = torch.take_along_dim, put_along_axis = torch.scatter (unique
indices only: with repeated ones torch's order is unspecified and it sends the gradient to
every write, minigrad to the surviving one; see test_indexing.py), repeat =
torch.repeat_interleave, tile/roll/flip/tril/triu/moveaxis/diagonal as torch's, trace over
other axes = torch.diagonal(...).sum(-1). Skipped without torch.

``TORCH_CASES`` has the same form as test_ops_torch.py's, so that file's coverage check
can count these ops (op -> list of pytest.param(mg_fn, torch_fn, arrays)).
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad import F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(1415)
TORCH_CASES: dict[str, list] = {}


def rn(*shape):
    return np.asarray(rng.standard_normal(shape))


def case(op, label, mg_fn, t_fn, *arrays):
    TORCH_CASES.setdefault(op, []).append(pytest.param(mg_fn, t_fn, arrays, id=f"{op}-{label}"))


def _ti(a):
    return torch.as_tensor(a)


_gather = np.array([[0, 2, 2, 1], [3, 3, 0, 0]])
case("take_along_axis", "repeats", lambda a: F.take_along_axis(a, _gather, 0),
     lambda a: torch.take_along_dim(a, _ti(_gather), 0), rn(4, 4))
_gather3 = np.array([[[2, 0, 2]], [[1, 1, 0]]])
case("take_along_axis", "bcast", lambda a: F.take_along_axis(a, _gather3, -1),
     lambda a: torch.take_along_dim(a, _ti(_gather3), -1), rn(2, 3, 3))
case("take_along_axis", "flat", lambda a: F.take_along_axis(a, np.array([5, 0, 0, 3]), None),
     lambda a: torch.take_along_dim(a, _ti(np.array([5, 0, 0, 3]))), rn(2, 3))

_scatter = np.array([[2, 0], [1, 3], [0, 1]])  # unique along axis 1
case("put_along_axis", "axis1", lambda a, v: F.put_along_axis(a, _scatter, v, 1),
     lambda a, v: torch.scatter(a, 1, _ti(_scatter), v), rn(3, 4), rn(3, 2))
_scatter0 = np.array([[2, 0, 1], [0, 1, 2]])  # unique along axis 0
case("put_along_axis", "axis0", lambda a, v: F.put_along_axis(a, _scatter0, v, 0),
     lambda a, v: torch.scatter(a, 0, _ti(_scatter0), v), rn(3, 3), rn(2, 3))
case("put_along_axis", "values-bcast", lambda a, v: F.put_along_axis(a, _scatter, v, 1),
     lambda a, v: torch.scatter(a, 1, _ti(_scatter), v.expand(3, 2)), rn(3, 4), rn(3, 1))

for reps in [(2, 1), (2, 2, 3)]:
    case("tile", f"{reps}", lambda a, r=reps: F.tile(a, r), lambda a, r=reps: torch.tile(a, r),
         rn(2, 3))
for reps, axis in [(2, None), (3, 1), (np.array([0, 2, 1]), 0)]:
    case("repeat", f"{np.asarray(reps).tolist()}-{axis}",
         lambda a, r=reps, ax=axis: F.repeat(a, r, ax),
         lambda a, r=reps, ax=axis: torch.repeat_interleave(
             a, _ti(r) if isinstance(r, np.ndarray) else r, dim=ax), rn(3, 2))
for shift, axis in [(2, None), (-1, 0), ((1, -2), (0, 2))]:
    case("roll", f"{shift}-{axis}", lambda a, s=shift, ax=axis: F.roll(a, s, ax),
         lambda a, s=shift, ax=axis: torch.roll(a, s, ax), rn(2, 3, 4))
for axis in [None, 1, (0, 2)]:
    case("flip", f"{axis}", lambda a, ax=axis: F.flip(a, ax),
         lambda a, ax=axis: torch.flip(a, tuple(range(a.ndim)) if ax is None else
                                       np.atleast_1d(ax).tolist()), rn(2, 3, 4))
for k in (0, 1, -2):
    case("tril", f"k{k}", lambda a, k=k: F.tril(a, k), lambda a, k=k: torch.tril(a, k),
         rn(2, 4, 5))
    case("triu", f"k{k}", lambda a, k=k: F.triu(a, k), lambda a, k=k: torch.triu(a, k),
         rn(2, 4, 5))
for src, dst in [(0, -1), ((0, 1), (2, 0))]:
    case("moveaxis", f"{src}-{dst}", lambda a, s=src, d=dst: F.moveaxis(a, s, d),
         lambda a, s=src, d=dst: torch.moveaxis(a, s, d), rn(2, 3, 4))
for offset, a1, a2 in [(0, 0, 1), (1, 2, 0), (-1, -1, 1)]:
    case("diagonal", f"{offset}-{a1},{a2}", lambda a, o=offset, x=a1, y=a2: F.diagonal(a, o, x, y),
         lambda a, o=offset, x=a1, y=a2: torch.diagonal(a, o, x, y), rn(3, 4, 5))
    case("trace", f"{offset}-{a1},{a2}", lambda a, o=offset, x=a1, y=a2: F.trace(a, o, x, y),
         lambda a, o=offset, x=a1, y=a2: torch.diagonal(a, o, x, y).sum(-1), rn(3, 4, 5))
case("trace", "2d", F.trace, torch.trace, rn(4, 3))


def tolerance(dtype, scale=1.0):
    """A few hundred ulps of the dtype, times the size of the values compared."""
    return 256 * np.finfo(dtype).eps * max(1.0, scale)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mg_fn,t_fn,arrays",
                         [p for cases in TORCH_CASES.values() for p in cases])
def test_matches_torch_autograd(mg_fn, t_fn, arrays, dtype):
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]
    mts = [mg.Tensor(a.copy(), requires_grad=True) if a.dtype.kind == "f" else a for a in arrays]
    tts = [torch.tensor(a, requires_grad=True) if a.dtype.kind == "f" else _ti(a) for a in arrays]
    out, tout = mg_fn(*mts), t_fn(*tts)
    assert out.shape == tuple(tout.shape)
    assert out.dtype == dtype
    want = tout.detach().numpy()
    tol = tolerance(dtype, np.abs(want).max(initial=0))
    np.testing.assert_allclose(out.data, want, rtol=tol, atol=tol)
    cot = np.random.default_rng(5).standard_normal(out.shape).astype(dtype)
    out.backward(cot)
    tout.backward(torch.from_numpy(cot))
    for m, t in zip(mts, tts):
        if isinstance(m, mg.Tensor):
            assert m.grad.dtype == dtype
            tol = tolerance(dtype, np.abs(t.grad.numpy()).max(initial=0))
            np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("labels,num_classes", [(np.array([0, 3, 1, 3]), -1),
                                                (np.array([[2, 0], [1, 1]]), 5),
                                                (np.array(2), 3)])
def test_one_hot_matches_torch(labels, num_classes):
    got = F.one_hot(labels, num_classes)
    want = TF.one_hot(_ti(labels), num_classes).numpy()
    assert got.dtype == want.dtype == np.int64 and not got.requires_grad
    np.testing.assert_array_equal(got.data, want)
