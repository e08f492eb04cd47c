"""tinygrad's ``helper_test_op`` comparisons (tinygrad/tinygrad, test/test_ops.py) for the
movement, indexing, matmul, join/split and loss ops minigrad has, forward and backward against
PyTorch, plus its ``helper_test_exception`` cases as "raises a clear exception". Our own code.

Where minigrad follows NumPy and PyTorch does not, the case is translated to NumPy's meaning
(docs/minigrad.md: "Tensor has NumPy's method names and signatures"): ``transpose(1, 2)`` is a
permutation in NumPy, torch's is ``swapaxes``; ``squeeze(axis)`` of a non-unit axis is an error
in NumPy, a no-op in torch; ``split(n)`` makes n sections in NumPy, pieces of size n in torch;
an axis on a 0-d array is out of bounds in NumPy. Those are tested in minigrad's own meaning.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from peer_util import as_inputs, check_vs_torch, index_grad, uniform

import minigrad as mg
from minigrad import F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

CASES: list = []


def case(label, mg_fn, t_fn=None, shapes=None, vals=None, marks=(), **kw):
    CASES.append(pytest.param(mg_fn, t_fn or mg_fn, shapes, vals, kw, id=label, marks=marks))


def same(label, fn, shape, **kw):
    """A case spelled the same way in both frameworks (indexing, reshape, ...)."""
    case(label, fn, fn, shapes=[shape], **kw)


# ---- basic slicing (test_slice_*) -------------------------------------------------------------
for label, idx in [("1:3", np.s_[1:3]), ("0:2", np.s_[0:2]), ("-2:2", np.s_[-2:2]), ("0", 0),
                   ("2", 2), ("-1", -1), ("-3", -3)]:
    same(f"slice-1d-[{label}]", lambda x, i=idx: x[i], (3,))
same("slice-0d-None", lambda x: x[None], ())
same("slice-int-2d", lambda x: x[1], (10, 10))
SLICES_333 = {
    "1,1,1": np.s_[1, 1, 1], "1:2": np.s_[1:2], "1:2,2": np.s_[1:2, 2], "1:2,1:2": np.s_[1:2, 1:2],
    "1:2,1:2,0:-1": np.s_[1:2, 1:2, 0:-1], "None": np.s_[None], "1:2,None": np.s_[1:2, None],
    "1:2,None,1:2": np.s_[1:2, None, 1:2], "1:2,1:2,None,-1": np.s_[1:2, 1:2, None, -1],
    "None,None,1,None,2,0:2": np.s_[None, None, 1, None, 2, 0:2], "0:4": np.s_[0:4],
    "-6:4": np.s_[-6:4], "1:50": np.s_[1:50], "1:50,1:2,-1": np.s_[1:50, 1:2, -1],
    "5:10": np.s_[5:10], "-15:-7": np.s_[-15:-7], "-2:2": np.s_[-2:2], "-2:-5": np.s_[-2:-5],
    "list-index": np.s_[:, [0], :],
}
for label, idx in SLICES_333.items():
    same(f"slice-3x3x3-[{label}]", lambda x, i=idx: x[i], (3, 3, 3))
for label, idx in [("::2,::3,::4", np.s_[::2, ::3, ::4]), ("1:5:2,::3,::4", np.s_[1:5:2, ::3, ::4]),
                   ("1:5:2,3,::4", np.s_[1:5:2, 3, ::4]),
                   ("1:5:2,None,None,3,None,::4", np.s_[1:5:2, None, None, 3, None, ::4])]:
    same(f"slice-stride-[{label}]", lambda x, i=idx: x[i], (7, 5, 10))
same("slice-empty-[1:1]", lambda x: x[1:1], (10, 10))
for label, idx in [("...,0", np.s_[..., 0]), ("0,...", np.s_[0, ...]), ("0,...,0", np.s_[0, ..., 0]),
                   ("0:3,...,2:3", np.s_[0:3, ..., 2:3]), ("None,0:3,...,0,None", np.s_[None, 0:3, ..., 0, None])]:
    same(f"slice-ellipsis-[{label}]", lambda x, i=idx: x[i], (3, 3, 3, 3))
for label, f in [(":,1:2][1:2", lambda x: x[:, 1:2][1:2]), ("1:3][1:2", lambda x: x[1:3][1:2]),
                 (":,1:2][0:1", lambda x: x[:, 1:2][0:1]), (":,1:2][:,0:1", lambda x: x[:, 1:2][:, 0:1])]:
    same(f"double-slice-[{label}]", f, (4, 4))

# ---- advanced indexing (test_slice_fancy_indexing_*) ------------------------------------------
_rng = np.random.default_rng(7)
A = _rng.integers(-1, 1, (2, 1, 1, 1, 1, 1))   # repeated and negative indices, as tinygrad's
B = _rng.integers(0, 1, (1, 3, 1, 1, 1, 1))
C = _rng.integers(-5, 5, (1, 1, 4, 1, 1, 1))
D = _rng.integers(0, 4, (2, 1, 1, 5, 1, 1))
E = _rng.integers(0, 1, (1, 1, 1, 1, 6, 1))
FANCY = {
    "a,b,c,d,e": (A, B, C, D, E), ":,b,c,d,:": np.s_[:, B, C, D, :], "a,b,...": np.s_[A, B, ...],
    "a,...,e": np.s_[A, ..., E], "...,c,:,e": np.s_[..., C, :, E], "1,b,c,d,e": (1, B, C, D, E),
    "a,b,3,d,e": (A, B, 3, D, E), "1,b,2,d,2": (1, B, 2, D, 2), "a,2,2,2,e": (A, 2, 2, 2, E),
    "None,b,c,d,e": (None, B, C, D, E),
    "a,b,c,d,None": (A, B, C, D, None), "a,b,None,d,e": (A, B, None, D, E),
    "a,:,None,d,e": np.s_[A, :, None, D, E], "None*5": (None,) * 5,
    "None,None,b,c,None,None": (None, None, B, C, None, None),
    "1,b,None,d,1": (1, B, None, D, 1), "None,b,2,d,None": (None, B, 2, D, None),
    "...,1,d,None": np.s_[..., 1, D, None], "((0,),)": ((0,),),
    "(1,0,-1),b,c,d,:": np.s_[[1, 0, -1], B, C, D, :], "a,b,c,(1,2,3),...": np.s_[A, B, C, [1, 2, 3], ...],
    "a,(2,1,0),c,(-2,1,0),e": (A, [2, 1, 0], C, [-2, 1, 0], E),
}
for label, idx in FANCY.items():
    same(f"fancy-[{label}]", lambda x, i=idx: x[i], (2, 5, 6, 5, 3, 4))
for label, idx in [("[[0,0,0],[0,0,0]],1", ([[0, 0, 0], [0, 0, 0]], 1)),
                   ("[1],[[0,0,0],[0,0,0]]", ([1], [[0, 0, 0], [0, 0, 0]])),
                   ("[[0,0,0],[0,0,0]],[2,1,1]", ([[0, 0, 0], [0, 0, 0]], [2, 1, 1])),
                   ("[[0,1,-1],[-1,-2,0]],[2,1,-1]", ([[0, 1, -1], [-1, -2, 0]], [2, 1, -1]))]:
    arrays = tuple(np.array(i) for i in idx)
    case(f"fancy-tensor-index-[{label}]", lambda x, i=arrays: x[tuple(mg.Tensor(a) for a in i)],
         lambda x, i=arrays: x[tuple(torch.tensor(a) for a in i)], shapes=[(2, 3)])
same("fancy-mixed-list-[[True,False,2]]", lambda x: x[[True, False, 2]], (5, 6))
case("fancy-inf-values", lambda x: x[mg.Tensor(np.array([0, 1, 2]))],
     lambda x: x[torch.tensor([0, 1, 2])], vals=[[math.inf, -math.inf, math.nan]])

# ---- movement ops (test_transpose .. test_expand, test_flatten) -------------------------------
same("T", lambda x: x.T, (3, 3))
for a1, a2 in [(1, 2), (0, 2)]:
    case(f"transpose-dims-{a1},{a2}", lambda x, a=a1, b=a2: x.swapaxes(a, b),
         lambda x, a=a1, b=a2: x.transpose(a, b), shapes=[(3, 3, 3)])
for shape, perm in [((1, 2, 3, 4), (3, 0, 2, 1)), ((3, 4, 5, 6), (3, 2, 1, 0)),
                    ((3, 4, 5, 6), (-2, -1, 1, 0)), ((), ())]:
    same(f"permute-{shape}-{perm}", lambda x, p=perm: x.permute(p), shape)
for shape, new in [((4, 3, 6, 6), (12, 6, 6)), ((4, 3, 6, 6), (-1, 3, 6, 6)),
                   ((4, 3, 6, 6), (-1, 1, 6, 6)), ((4, 3, 6, 6), (4, 3, 6, 6)), ((), ()),
                   ((1,), ()), ((), (1,)), ((), (1, 1, 1)), ((6,), (2, 3)), ((3, 2), (6,))]:
    same(f"reshape-{shape}-{new}", lambda x, n=new: x.reshape(n), shape)
for shape, axis in [((1, 3, 6, 6), 0), ((4, 3, 6, 1), -1), ((4, 3, 6, 6), None),
                    ((1, 3, 6, 6), None), ((2, 3, 1), None), ((), None)]:
    case(f"squeeze-{shape}-{axis}", lambda x, a=axis: x.squeeze(a),
         lambda x, a=axis: x.squeeze() if a is None else x.squeeze(a), shapes=[shape])
for shape, axis in [((4, 3, 6, 6), 0), ((4, 3, 6, 6), 4), ((4, 3, 6, 6), -1), ((4, 3, 6, 6), -3),
                    ((), 0)]:
    case(f"unsqueeze-{shape}-{axis}", lambda x, a=axis: F.expand_dims(x, a),
         lambda x, a=axis: x.unsqueeze(a), shapes=[shape])
for shape in [(4, 3, 6, 6), (), (1,)]:
    same(f"flatten-{shape}", lambda x: x.flatten(), shape)
for shape, new in [((4, 3, 1, 6), (4, 3, 2, 6)), ((1, 1, 1, 1), (4, 3, 2, 6)),
                   ((4, 3, 1, 6), (6, 1, 4, 3, 2, 6)), ((4, 3, 1, 6), (0, 1, 4, 3, 2, 6)),
                   ((4, 3, 1, 6), (4, 3, 0, 6)), ((), (4, 3, 2, 6)), ((), ())]:
    case(f"expand-{shape}-{new}", lambda x, n=new: F.broadcast_to(x, n),
         lambda x, n=new: x.expand(n), shapes=[shape])
same("detach", lambda x: x.detach() * 1.0, (4, 3, 6, 6), backward=False)

# ---- join and split (test_cat .. test_split, test_stack_slice) --------------------------------
for dim in range(-2, 3):
    case(f"cat-dim{dim}", lambda x, y, z, d=dim: F.concatenate([x, y, z], axis=d),
         lambda x, y, z, d=dim: torch.cat((x, y, z), d), shapes=[(9, 13, 9)] * 3)
for shapes, dim in [([(45, 0, 9)] * 3, 0), ([(45, 0, 9), (45, 1, 9), (45, 2, 9)], 1),
                    ([(45, 0, 9)] * 3, 1)]:
    case(f"cat-zero-size-{shapes}-{dim}", lambda x, y, z, d=dim: F.concatenate([x, y, z], axis=d),
         lambda x, y, z, d=dim: torch.cat((x, y, z), d), shapes=shapes)
for dim in range(-1, 2):
    case(f"multicat-dim{dim}", lambda x, y, z, d=dim: F.concatenate([x, y, z], axis=d),
         lambda x, y, z, d=dim: torch.cat((x, y, z), d), shapes=[(45, 65)] * 3)
for dim in range(-1, 3):
    case(f"stack-dim{dim}", lambda x, y, z, d=dim: F.stack([x, y, z], axis=d),
         lambda x, y, z, d=dim: torch.stack((x, y, z), d), shapes=[(5, 6, 3)] * 3)
case("stack-0d", lambda x: F.stack([x, x]), lambda x: torch.stack((x, x)), vals=[3.14])
for label, f, g in [("[0,:]", lambda x: F.stack([x] * 3)[0, :], lambda x: torch.stack([x] * 3)[0, :]),
                    ("[0,0]", lambda x: F.stack([x] * 3)[0, 0], lambda x: torch.stack([x] * 3)[0, 0])]:
    case(f"stack-slice-{label}", f, g, shapes=[(4,)])
case("stack-slice-[3]", lambda x: F.stack([x] * 4)[3], lambda x: torch.stack([x] * 4)[3], shapes=[(4, 4)])


def _weighted(pieces):
    """Pieces flattened and scaled 1, 2, 3, ...: a gradient sent to the wrong piece shows."""
    return [p.reshape(-1) * float(i + 1) for i, p in enumerate(pieces)]


# torch.split takes piece sizes, np.split (and minigrad) section counts or cut indices
for shape, sizes, axis, cuts in [((10,), 5, 0, 2), ((10,), [1, 4, 5], 0, [1, 5]),
                                 ((10,), 3, 0, [3, 6, 9]), ((3, 4), 1, 0, 3), ((3, 4), 1, 1, 4),
                                 ((4, 4), [2, 2], 0, 2), ((4, 4), [2, 2], 1, [2]),
                                 ((10000,), 2500, 0, 4), ((0, 3), 0, 0, 2)]:
    case(f"split-{shape}-{sizes}-dim{axis}",
         lambda x, c=cuts, a=axis: F.concatenate(_weighted(F.split(x, c, axis=a))),
         lambda x, s=sizes, a=axis: torch.cat(_weighted(torch.split(x, s, dim=a)) if s else
                                              [x.reshape(-1)] * 2),  # torch: no size-0 pieces
         shapes=[shape])

# ---- matmul (test_dot_1d .. test_matvecmat, test_mulacc_with_zero_strides) --------------------
MATMUL = [((65,), (65,)), ((65,), (65, 45)), ((45, 65), (65,)), ((8, 45, 65), (65,)),
          ((65,), (8, 65, 45)), ((45, 65), (65, 100)), ((8, 45, 65), (8, 65, 100)), ((4,), (4, 4)),
          ((64,), (64, 99)), ((3,), (1, 3, 3, 5)), ((4, 3), (1, 3, 3, 5)), ((8, 8), (8, 8)),
          ((9, 9), (9, 9)), ((64, 64), (64, 64)), ((8, 8), (8, 0)), ((0, 8), (8, 8)), ((0, 8), (8, 0)),
          ((8, 0), (0, 8)), ((0, 0), (0, 0)), ((0,), (0, 8)), ((0,), (0,)), ((10, 45, 65), (65, 45)),
          ((10, 45, 65), (10, 65, 45)), ((3, 3, 45, 65), (3, 3, 65, 45))]
for sa, sb in MATMUL:
    case(f"matmul-{sa}-{sb}", lambda x, y: x @ y, shapes=[sa, sb], ulps=256)
case("matmul-(3,4,0)-(0,3)", lambda x, y: x @ y, shapes=[(3, 4, 0), (0, 3)])
case("matmul-range", lambda x, y: x @ y,
     vals=[np.arange(0, 64.0).reshape(8, 8), np.arange(64, 128.0).reshape(8, 8)], ulps=256)
case("matmul-eye", lambda x, y: x @ y, vals=[np.eye(8), np.eye(8)])
case("matvec-relu", lambda x, y: F.relu(x @ y), lambda x, y: (x @ y).relu(),
     shapes=[(1, 128), (128, 128)], ulps=256)
case("matvecmat", lambda x, y, z: F.relu(x @ y) @ z, lambda x, y, z: (x @ y).relu() @ z,
     shapes=[(1, 128), (128, 128), (128, 128)], ulps=512)
case("mulacc-zero-strides", lambda x, y: (F.broadcast_to(x.reshape(2, 4, 1), (2, 4, 3))
                                          * F.broadcast_to(y.reshape(1, 4, 1), (2, 4, 3))).sum(axis=(0, 2)),
     lambda x, y: (x.reshape(2, 4, 1).expand(2, 4, 3) * y.reshape(1, 4, 1).expand(2, 4, 3)).sum([0, 2]),
     vals=[np.ones((2, 4)), np.ones(4)])

# ---- losses and attention (test_cross_entropy_*, test_nll_loss, test_scaled_dot_product_*) ----
_rng_l = np.random.default_rng(11)
LABELS = _rng_l.integers(0, 10, 32)
for red in ("mean", "sum", "none"):
    case(f"cross-entropy-soft-{red}", lambda x, y, r=red: F.cross_entropy(x, y, reduction=r),
         lambda x, y, r=red: TF.cross_entropy(x, y, reduction=r), shapes=[(32, 10), (32, 10)])
    case(f"cross-entropy-labels-{red}", lambda x, r=red: F.cross_entropy(x, LABELS, reduction=r),
         lambda x, r=red: TF.cross_entropy(x, torch.tensor(LABELS), reduction=r), shapes=[(32, 10)])
case("cross-entropy-1d-soft", F.cross_entropy, TF.cross_entropy, shapes=[(32,), (32,)])
case("cross-entropy-4d-soft-classes-axis1",  # minigrad puts the classes last
     lambda x, y: F.cross_entropy(x.transpose(0, 2, 3, 1), y.transpose(0, 2, 3, 1)),
     TF.cross_entropy, shapes=[(8, 4, 3, 3), (8, 4, 3, 3)])
for ls in (0.0, 0.3, 0.7, 1.0):
    case(f"cross-entropy-soft-smoothing-{ls}", lambda x, y, s=ls: F.cross_entropy(x, y, label_smoothing=s),
         lambda x, y, s=ls: TF.cross_entropy(x, y, label_smoothing=s), shapes=[(32, 10), (32, 10)])
    case(f"cross-entropy-labels-smoothing-{ls}",
         lambda x, s=ls: F.cross_entropy(x, LABELS, label_smoothing=s),
         lambda x, s=ls: TF.cross_entropy(x, torch.tensor(LABELS), label_smoothing=s), shapes=[(32, 10)])
L3 = _rng_l.integers(0, 10, (3, 12))
case("sparse-categorical-batch", lambda x: F.cross_entropy(x, L3),
     lambda x: TF.cross_entropy(x.permute(0, 2, 1), torch.tensor(L3)), shapes=[(3, 12, 10)])
for red in ("mean", "sum", "none"):  # nll_loss composed from log_softmax and integer indexing
    case(f"nll-loss-composed-{red}",
         lambda x, r=red: {"mean": F.mean, "sum": F.sum, "none": lambda t: t}[r](
             -F.log_softmax(x, axis=1)[np.arange(32), LABELS]),
         lambda x, r=red: TF.nll_loss(TF.log_softmax(x, dim=1), torch.tensor(LABELS), reduction=r),
         shapes=[(32, 10)])
case("bce-composed", lambda x, y: -(y.clip(0, 1) * F.log(F.sigmoid(x))
                                    + (1 - y.clip(0, 1)) * F.log(1 - F.sigmoid(x))).mean(),
     lambda x, y: TF.binary_cross_entropy(x.sigmoid(), y.clip(0, 1)), shapes=[(32, 10), (32, 10)],
     ulps=256)


def _sdpa_packed(q, k, v, heads):
    """torch's SDPA on (B, H, T, d) heads, as minigrad's packed (B, T, 3·D) layout."""
    B, H, T, d = q.shape
    merge = [t.transpose(1, 2).reshape(B, T, H * d) for t in (q, k, v)]
    return torch.cat(merge, dim=-1)


for (B, H, Tq, d) in [(2, 2, 5, 4), (3, 4, 6, 2)]:
    case(f"sdpa-as-self-attention-B{B}-H{H}-T{Tq}-d{d}",
         lambda q, k, v, H=H: F.self_attention(
             F.concatenate([t.swapaxes(1, 2).reshape(t.shape[0], t.shape[2], -1) for t in (q, k, v)],
                           axis=-1), H),
         lambda q, k, v: TF.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(
             q.shape[0], q.shape[2], -1),
         shapes=[(B, H, Tq, d)] * 3, ulps=256)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("mg_fn, t_fn, shapes, vals, kw", CASES)
def test_helper_test_op(mg_fn, t_fn, shapes, vals, kw, dtype):
    arrays = uniform(shapes, dtype) if shapes is not None else as_inputs(vals, dtype)
    with np.errstate(all="ignore"):
        check_vs_torch(torch, mg_fn, t_fn, arrays, dtype, **kw)


def test_int_and_array_index_apart_follow_numpy():
    """tinygrad's x[1, :, 3:11:2, d, 0:2]: an int and an index array separated by slices. NumPy
    (so minigrad) counts the int as an advanced index and moves the broadcast axes first; torch
    keeps them in place. Checked against NumPy, gradient included."""
    a = np.random.default_rng(5).standard_normal((2, 5, 6, 5, 3, 4))
    idx = np.s_[1, :, 3:11:2, D, 0:2]
    t = mg.Tensor(a, requires_grad=True)
    out = t[idx]
    np.testing.assert_array_equal(out.data, a[idx])
    g = np.random.default_rng(6).standard_normal(out.shape)
    out.backward(g)
    np.testing.assert_allclose(t.grad, index_grad(a.shape, idx, g), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("label, idx", [
    ("::-1", np.s_[::-1]), ("::-2", np.s_[::-2]), (":,2:0:-1", np.s_[:, 2:0:-1]),
    (":,2:0:-1,3:1:-2", np.s_[:, 2:0:-1, 3:1:-2]), ("4:0:-3,2:0:-1,-1:-5:-2", np.s_[4:0:-3, 2:0:-1, -1:-5:-2]),
    ("2:5:-1", np.s_[2:5:-1]), (":,2:5:-1", np.s_[:, 2:5:-1]), (":,:,2:5:-1", np.s_[:, :, 2:5:-1])])
def test_negative_strides_match_numpy(label, idx):
    """test_slice_negative_strides (torch has none, tinygrad compares with NumPy): value, and
    the gradient put back where each element came from."""
    a = np.random.default_rng(3).standard_normal((10, 10, 10))
    t = mg.Tensor(a, requires_grad=True)
    out = t[idx]
    np.testing.assert_array_equal(out.data, a[idx])
    g = np.random.default_rng(4).standard_normal(out.shape)
    out.backward(g)
    want = np.zeros_like(a)
    want[idx] = g
    np.testing.assert_array_equal(t.grad, want)


RAISES = [  # (label, call on a (4, 3) float tensor x or a 0-d tensor s, exception types)
    ("too-many-indices", lambda x, s: x[1, 77, 77, 77], IndexError),
    ("index-out-of-bounds", lambda x, s: x[1, 3], IndexError),
    ("negative-out-of-bounds", lambda x, s: x[1, -4], IndexError),
    ("two-ellipses", lambda x, s: x[..., ...], IndexError),
    ("zero-step", lambda x, s: x[::0, 1], ValueError),
    ("tensor-as-slice-bound", lambda x, s: x[:mg.Tensor(np.array([3])), 1], TypeError),
    ("slice-of-0d", lambda x, s: s[:], IndexError),
    ("int-index-of-0d", lambda x, s: s[0], IndexError),
    ("float-index", lambda x, s: x[mg.Tensor(np.array(1.1))], IndexError),
    ("float-list-index", lambda x, s: x[[1.1]], IndexError),
    ("bool-mask-wrong-length", lambda x, s: x[mg.Tensor(np.array([True, False]))], IndexError),
    ("index-arrays-not-broadcastable", lambda x, s: x[np.zeros((3, 1), int), np.zeros((1, 4, 1, 1), int),
                                                      np.zeros((2, 4, 4, 1), int)], IndexError),
    ("permute-too-few", lambda x, s: x.reshape(1, 1, 4, 3).permute((0, 2)), ValueError),
    ("permute-too-many", lambda x, s: x.reshape(1, 1, 4, 3).permute((0, 1, 2, 3, 3, 3)), ValueError),
    ("permute-repeated", lambda x, s: x.reshape(1, 1, 4, 3).permute((0, 0, 1, 2)), ValueError),
    ("reshape-two-unknowns", lambda x, s: x.reshape((-1, -1, 2)), ValueError),
    ("reshape-to-empty-shape", lambda x, s: x.reshape(()), ValueError),
    ("squeeze-axis-out-of-range", lambda x, s: x.reshape(4, 3, 1).squeeze(50), IndexError),
    ("squeeze-0d-axis-1", lambda x, s: s.squeeze(1), IndexError),
    ("expand-incompatible", lambda x, s: F.broadcast_to(x.reshape(4, 3, 1), (4, 1, 1)), ValueError),
    ("expand-fewer-dims", lambda x, s: F.broadcast_to(x.reshape(4, 3, 1), (3, 1)), ValueError),
    ("expand-nonunit-to-zero", lambda x, s: F.broadcast_to(x, (4, 0)), ValueError),
    ("sum-axis-out-of-range", lambda x, s: x.sum(5), IndexError),
    ("sum-0d-axis-1", lambda x, s: s.sum(1), IndexError),
    ("stack-axis-77", lambda x, s: F.stack([x], axis=77), IndexError),
    ("cat-0d", lambda x, s: F.concatenate([s, s]), ValueError),
    ("matmul-0d", lambda x, s: s @ s, ValueError),
    ("matmul-0d-and-2d", lambda x, s: s @ x, ValueError),
    ("matmul-mismatch-1d", lambda x, s: x[0, :1] @ x.reshape(3, 4), ValueError),
    ("matmul-mismatch-2d", lambda x, s: x @ x, ValueError),
    ("clip-no-bounds", lambda x, s: x.clip(None, None), ValueError),
    ("cross-entropy-bad-reduction", lambda x, s: F.cross_entropy(x, x, reduction="typo"), ValueError),
    ("cross-entropy-target-shape", lambda x, s: F.cross_entropy(x, x[:, :1]), ValueError),
    ("int-negative-power", lambda x, s: mg.Tensor(np.array([-2, 0, 2])) ** -2, ValueError),
]


@pytest.mark.parametrize("label, call, exc", RAISES,
                         ids=[r.values[0] if hasattr(r, "marks") else r[0] for r in RAISES])
def test_helper_test_exception(label, call, exc):
    """tinygrad's helper_test_exception cases: bad input raises, with an exception of the
    kind NumPy raises for it (torch's RuntimeError maps to ValueError or IndexError)."""
    x = mg.Tensor(np.ones((4, 3)), requires_grad=True)
    s = mg.Tensor(np.array(3.14), requires_grad=True)
    with pytest.raises(exc):
        call(x, s)
