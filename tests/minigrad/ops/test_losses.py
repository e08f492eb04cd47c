"""The losses of ops/losses.py where finite differences cannot look: exactly at the kinks
(the gradient there is a convention: torch's, derived by hand below), at large inputs in
float32, with every target ignored, and with bad arguments (an error naming the argument).
Against PyTorch for every reduction, weight and ignore_index: op_cases/losses.py
(ops/test_all_ops_torch.py).

Also, for the ops of ops/activations.py and ops/losses.py, the stricter forms of the shared
per-op catalogs (0-d results, bool input computed in float64, the wrong kind of array).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import grad_of
from op_cases.catalogs import bool_catalog, slot_catalog, slot_values, zero_d_catalog

import minigrad as mg
from minigrad import F

F32, F64 = np.float32, np.float64


# ---- kinks: the gradient exactly there ------------------------------------------------------

def test_elementwise_loss_kinks():
    # l1 at d = 0: sign(0) = 0; smooth_l1 at d = 0: 0, at |d| = beta: ±1 (both sides agree)
    a, b = np.array([0.0, 2.0, -0.5, 0.5]), np.array([0.0, 1.5, 0.0, 0.0])
    _, g = grad_of(lambda t: F.l1_loss(t, b, reduction="sum"), a)
    assert g.tolist() == [0.0, 1.0, -1.0, 1.0]
    _, g = grad_of(lambda t: F.smooth_l1_loss(t, b, reduction="sum", beta=0.5), a)
    assert g.tolist() == [0.0, 1.0, -1.0, 1.0]
    _, g = grad_of(lambda t: F.smooth_l1_loss(t, b, reduction="sum", beta=0.0), a)
    assert g.tolist() == [0.0, 1.0, -1.0, 1.0]  # beta = 0 is l1_loss


# ---- large inputs, float32 ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [F32, F64])
def test_bce_with_logits_at_plus_minus_100(dtype):
    x = np.array([100.0, -100.0, 100.0, -100.0])
    y = np.array([0.0, 1.0, 1.0, 0.0], dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        t = mg.Tensor(x.astype(dtype), requires_grad=True)
        ty = mg.Tensor(y, requires_grad=True)
        loss = F.binary_cross_entropy_with_logits(t, ty, reduction="none")
        loss.backward(np.ones(4, dtype))
    tiny = math.exp(-100.0)  # softplus(-100) and sigmoid(-100): subnormal in float32, where
    sub = np.finfo(dtype).tiny  # expit (like torch.sigmoid) flushes them to 0
    np.testing.assert_allclose(loss.data, [100.0, 100.0, tiny, tiny], rtol=4 * np.finfo(dtype).eps,
                               atol=sub)
    np.testing.assert_allclose(t.grad, [1.0, -1.0, -tiny, tiny], rtol=8 * np.finfo(dtype).eps,
                               atol=sub)
    np.testing.assert_allclose(ty.grad, [-100.0, 100.0, -100.0, 100.0],
                               rtol=4 * np.finfo(dtype).eps)
    assert loss.dtype == dtype and t.grad.dtype == dtype


# ---- every target ignored: nan loss, zero gradient (torch) ----------------------------------

@pytest.mark.parametrize("weight", [None, np.array([1.0, 2.0, 3.0])])
@pytest.mark.parametrize("op", ["nll_loss", "cross_entropy"])
def test_all_targets_ignored_gives_nan_and_zero_gradient(op, weight):
    labels = np.array([-100, -100])
    for kw in ({}, {"label_smoothing": 0.1}) if op == "cross_entropy" else ({},):
        t = mg.Tensor(np.zeros((2, 3)), requires_grad=True)
        loss = getattr(F, op)(t, labels, weight=weight, **kw)
        loss.backward()
        assert np.isnan(loss.item())
        assert t.grad.tolist() == np.zeros((2, 3)).tolist()
        t.grad = None
        assert getattr(F, op)(t, labels, weight=weight, reduction="sum", **kw).item() == 0.0


def test_nll_loss_weighted_mean_divides_by_the_kept_weights():
    lp = np.log(np.array([[0.5, 0.5], [0.25, 0.75], [0.1, 0.9]]))
    w = np.array([2.0, 3.0])
    loss = F.nll_loss(lp, np.array([0, 1, -100]), weight=w)
    # (2 · -log 0.5 + 3 · -log 0.75) / (2 + 3); the ignored row counts in neither sum
    np.testing.assert_allclose(loss.item(), (2 * math.log(2) + 3 * math.log(4 / 3)) / 5,
                               rtol=4 * np.finfo(F64).eps)


def test_cross_entropy_without_new_arguments_is_bit_identical_to_the_explicit_defaults():
    z = np.random.default_rng(0).standard_normal((4, 5))
    y = np.array([1, 0, 3, 3])
    for ls in (0.0, 0.1):
        a = F.cross_entropy(z, y, label_smoothing=ls).item()
        b = F.cross_entropy(z, y, label_smoothing=ls, weight=None, ignore_index=-100).item()
        assert a == b
    # an all-ones weight takes the weighted path: the same number up to rounding
    c = F.cross_entropy(z, y, label_smoothing=0.1, weight=np.ones(5)).item()
    np.testing.assert_allclose(c, F.cross_entropy(z, y, label_smoothing=0.1).item(), rtol=1e-15)


# ---- bad arguments: the error names the argument --------------------------------------------
Z = np.zeros((3, 4))
Y = np.array([0, 1, 2])


@pytest.mark.parametrize("call,err,words", [
    (lambda: F.softplus(Z, beta=0), ValueError, "softplus beta"),
    (lambda: F.softplus(Z, beta=True), TypeError, "softplus beta"),
    (lambda: F.softplus(Z, threshold="20"), TypeError, "softplus threshold"),
    (lambda: F.softplus(Z, threshold=math.inf), ValueError, "softplus threshold"),
    (lambda: F.gelu(Z, approximate="erf"), ValueError, "gelu approximate"),
    (lambda: F.gelu(Z, approximate=None), TypeError, "gelu approximate"),
    (lambda: F.leaky_relu(Z, negative_slope="0.1"), TypeError, "leaky_relu negative_slope"),
    (lambda: F.elu(Z, alpha=math.nan), ValueError, "elu alpha"),
    (lambda: F.hardtanh(Z, 1.0, -1.0), ValueError, "hardtanh max_val"),
    (lambda: F.softmin(Z, axis=2), (ValueError, np.exceptions.AxisError), "axis"),
    (lambda: F.mse_loss(Z, Z, reduction="avg"), ValueError, "mse_loss reduction"),
    (lambda: F.l1_loss(Z, Z, reduction=None), ValueError, "l1_loss reduction"),
    (lambda: F.mse_loss(Z, Z, reduction=1), TypeError, "mse_loss reduction"),
    (lambda: F.mse_loss(Z, Z[0]), ValueError, "mse_loss target"),
    (lambda: F.smooth_l1_loss(Z, Z, beta=-1.0), ValueError, "smooth_l1_loss beta"),
    (lambda: F.binary_cross_entropy_with_logits(Z, Z.T), ValueError,
     "binary_cross_entropy_with_logits targets"),
    (lambda: F.binary_cross_entropy_with_logits(Z, Z, pos_weight=np.ones(3)), ValueError,
     "binary_cross_entropy_with_logits pos_weight"),
    (lambda: F.binary_cross_entropy_with_logits(Z, Z, weight=np.ones((2, 4))), ValueError,
     "binary_cross_entropy_with_logits weight"),
    (lambda: F.binary_cross_entropy_with_logits(Z, Z, pos_weight="a"), TypeError,
     "binary_cross_entropy_with_logits pos_weight"),
    (lambda: F.nll_loss(Z, Y.astype(float)), TypeError, "nll_loss target"),
    (lambda: F.nll_loss(Z, np.array([0, 4, 1])), ValueError, "nll_loss target"),
    (lambda: F.nll_loss(Z, np.array([0, -1, 1])), ValueError, "nll_loss target"),
    (lambda: F.nll_loss(Z, Y[:2]), ValueError, "nll_loss target"),
    (lambda: F.nll_loss(Z, Y, weight=np.ones(3)), ValueError, "nll_loss weight"),
    (lambda: F.nll_loss(Z, Y, ignore_index=1.0), TypeError, "nll_loss ignore_index"),
    (lambda: F.nll_loss(np.array(0.5), Y), ValueError, "nll_loss log_probs"),
    (lambda: F.nll_loss(Z, Y, reduction="mean_"), ValueError, "nll_loss reduction"),
    (lambda: F.cross_entropy(Z, Y, weight=np.ones(3)), ValueError, "cross_entropy weight"),
    (lambda: F.cross_entropy(Z, Y, weight="w"), TypeError, "cross_entropy weight"),
    (lambda: F.cross_entropy(Z, Y, ignore_index="x"), TypeError, "cross_entropy ignore_index"),
    (lambda: F.cross_entropy(Z, np.full((3, 4), 0.25), ignore_index=0), ValueError,
     "cross_entropy ignore_index"),
    (lambda: F.cross_entropy(Z, np.array([0, 5, -100])), ValueError, "cross_entropy target"),
])
def test_bad_arguments_name_the_argument(call, err, words):
    with pytest.raises(err, match=words):
        call()


@pytest.mark.parametrize("call,op,param", [
    (lambda w: F.cross_entropy(Z, Y, weight=w), "cross_entropy", "weight"),
    (lambda w: F.nll_loss(Z, Y, w), "nll_loss", "weight"),
])  # BCE's weight and pos_weight are differentiable: ops/test_losses_bce.py
def test_weights_that_require_grad_are_refused_not_dropped(call, op, param):
    w = mg.Tensor(np.ones(4), requires_grad=True)
    with pytest.raises(TypeError, match=f"{op} {param}: a Tensor that requires grad"):
        call(w)
    call(w.detach())  # as a constant it is fine


# ---- the shared per-op catalogs (op_cases/catalogs.py), checked more strictly for these ops ----
ACT = ("softplus", "silu", "gelu", "leaky_relu", "elu", "selu", "log_sigmoid", "hardtanh",
       "softmin", "mish", "hardswish", "hardsigmoid", "celu", "softsign", "erf", "erfc")
LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits",
          "nll_loss", "binary_cross_entropy")


@pytest.mark.parametrize("name", ACT + LOSSES)
@pytest.mark.parametrize("dtype", [F32, F64])
def test_0d_results_hold_an_ndarray_and_0d_leaves_get_ndarray_grads(name, dtype):
    for fn in zero_d_catalog()[name]:
        a = mg.Tensor(np.array(0.75, dtype), requires_grad=True)
        b = mg.Tensor(np.array(1.5, dtype), requires_grad=True)
        out = fn(a, b)
        assert type(out.data) is np.ndarray and out.shape == ()
        out.backward()
        for t in (a, b):
            assert t.grad is None or (type(t.grad) is np.ndarray and t.grad.shape == ()
                                      and t.grad.dtype == dtype), name


@pytest.mark.parametrize("name", ACT + LOSSES)
def test_bool_input_is_computed_in_float64(name):
    out = bool_catalog()[name]()
    assert isinstance(out, mg.Tensor) and type(out.data) is np.ndarray
    assert out.dtype == F64


@pytest.mark.parametrize("kind,make,word", [
    ("None", lambda v: None, "None"), ("str", lambda v: "abc", "str"),
    ("object", lambda v: v.astype(object), "object"),
    ("complex", lambda v: v.astype(np.complex128), "complex"),
])
@pytest.mark.parametrize("name", ACT + LOSSES)
def test_the_wrong_kind_of_array_is_a_type_error_naming_the_op(name, kind, make, word):
    call = slot_catalog(mg.Tensor(np.full((2, 3), 0.25), requires_grad=True))[name]
    values = slot_values(name)
    with pytest.raises(TypeError, match=word) as e:
        call(make(values))
    assert str(e.value).startswith(name)
    got = call(values.tolist())  # a nested list is the array it spells
    np.testing.assert_array_equal(got.data, call(values).data)


# ---- the class axis: one rule for cross_entropy and nll_loss ---------------------------------
# The classes lie along ``axis`` of the input (cross_entropy's default -1, nll_loss's torch's
# 1, or 0 for a (C,) input); a label array has the input's shape without that axis, soft
# targets the input's shape, class weights (C,).
_AX = np.random.default_rng(1417)
Z3 = _AX.standard_normal((2, 4, 3))  # classes on axis 1: C = 4
Y3 = np.array([[0, 3, 1], [2, 2, 0]])  # (2, 3): Z3's shape without axis 1
T3 = _AX.uniform(0.1, 1.0, (2, 4, 3))  # soft targets, not normalised
W4 = np.array([0.5, 2.0, 1.0, 1.5])


def _ce_cases():
    return [
        ("labels", Y3, {}),
        ("labels-weight-ignore-smoothing", np.where(Y3 == 2, -1, Y3),
         dict(weight=W4, ignore_index=-1, label_smoothing=0.1)),
        ("soft", T3, {}),
        ("soft-weight-smoothing", T3, dict(weight=W4, label_smoothing=0.2)),
    ]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label, target, kw", _ce_cases(), ids=[c[0] for c in _ce_cases()])
def test_cross_entropy_axis_takes_the_classes_from_that_axis(label, target, kw, reduction):
    """cross_entropy(z, y, axis=1) = cross_entropy(z with axis 1 moved last, y): values,
    the logits' and the soft targets' gradients (moved back)."""
    soft = target.dtype.kind == "f"
    z, t = mg.Tensor(Z3.copy(), requires_grad=True), mg.Tensor(target.copy(), requires_grad=soft)
    out = F.cross_entropy(z, t if soft else target, reduction=reduction, axis=1, **kw)
    zl = mg.Tensor(np.moveaxis(Z3, 1, -1).copy(), requires_grad=True)
    tl = mg.Tensor(np.moveaxis(target, 1, -1).copy() if soft else target, requires_grad=soft)
    want = F.cross_entropy(zl, tl if soft else target, reduction=reduction, **kw)
    assert out.shape == want.shape
    np.testing.assert_allclose(out.data, want.data, rtol=1e-14, atol=1e-15)
    cot = _AX.standard_normal(out.shape)
    out.backward(cot)
    want.backward(cot)
    np.testing.assert_allclose(z.grad, np.moveaxis(zl.grad, -1, 1), rtol=1e-14, atol=1e-15)
    if soft:
        np.testing.assert_allclose(t.grad, np.moveaxis(tl.grad, -1, 1), rtol=1e-14, atol=1e-15)
    if soft:  # logits and targets both differentiated, in float64 against finite differences
        mg.gradcheck(lambda a, b: F.cross_entropy(a, b, reduction=reduction, axis=1, **kw),
                     [Z3.copy(), target.copy()])
    else:
        mg.gradcheck(lambda a: F.cross_entropy(a, target, reduction=reduction, axis=1, **kw),
                     [Z3.copy()])


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_nll_loss_of_log_softmax_is_cross_entropy_along_any_axis(axis, reduction):
    """The one rule: F.nll_loss(F.log_softmax(z, axis), y, axis=axis) is
    F.cross_entropy(z, y, axis=axis), weights and ignored labels included."""
    C = Z3.shape[axis]
    y = _AX.integers(0, C, np.delete(Z3.shape, axis % 3))
    y.flat[0] = -7
    w = _AX.uniform(0.5, 2.0, C)
    kw = dict(weight=w, ignore_index=-7, reduction=reduction)
    za, zb = (mg.Tensor(Z3.copy(), requires_grad=True) for _ in range(2))
    nll = F.nll_loss(F.log_softmax(za, axis=axis), y, axis=axis, **kw)
    ce = F.cross_entropy(zb, y, axis=axis, **kw)
    np.testing.assert_allclose(nll.data, ce.data, rtol=1e-14, atol=1e-15)
    cot = _AX.standard_normal(ce.shape)
    nll.backward(cot)
    ce.backward(cot)
    np.testing.assert_allclose(za.grad, zb.grad, rtol=1e-13, atol=1e-15)
    mg.gradcheck(lambda a: F.nll_loss(a, y, axis=axis, **kw), [Z3.copy()])


def test_the_class_axis_defaults_are_each_ops_own():
    """cross_entropy: the last axis; nll_loss: axis 1 (torch's), a (C,) input its only axis."""
    zl = np.moveaxis(Z3, 1, -1)
    assert F.cross_entropy(zl, Y3).item() == F.cross_entropy(zl, Y3, axis=-1).item()
    assert F.cross_entropy(zl, Y3).item() == F.cross_entropy(zl, Y3, axis=2).item()
    assert F.nll_loss(Z3, Y3).item() == F.nll_loss(Z3, Y3, axis=1).item()
    v = np.log(np.array([0.2, 0.3, 0.5]))
    assert F.nll_loss(v, np.array(2)).item() == F.nll_loss(v, np.array(2), axis=0).item()
    np.testing.assert_allclose(F.nll_loss(v, np.array(2)).item(), -v[2], rtol=1e-15)


def test_cross_entropy_axis_1_is_torchs_cross_entropy():
    """torch takes the classes on axis 1: cross_entropy(..., axis=1) on the same (N, C, d)
    logits, labels and soft targets, values and gradients."""
    torch = pytest.importorskip("torch")
    for target, kw in [(Y3, dict(weight=W4, label_smoothing=0.1)), (T3, dict(weight=W4))]:
        z = mg.Tensor(Z3.copy(), requires_grad=True)
        out = F.cross_entropy(z, target, axis=1, **kw)
        tz = torch.tensor(Z3, requires_grad=True)
        tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        tout = torch.nn.functional.cross_entropy(tz, torch.tensor(target), **tkw)
        np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-13)
        out.backward()
        tout.backward()
        np.testing.assert_allclose(z.grad, tz.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("call, err, words", [
    (lambda: F.cross_entropy(Z3, Y3, axis=3), np.exceptions.AxisError, "cross_entropy axis"),
    (lambda: F.cross_entropy(Z3, Y3, axis=1.0), TypeError, "cross_entropy axis"),
    (lambda: F.cross_entropy(Z3, Y3, axis=None), TypeError, "cross_entropy axis"),
    (lambda: F.cross_entropy(Z3, Y3, axis=2), ValueError,
     r"cross_entropy target: got integer labels of shape \(2, 3\); expected shape \(2, 4\)"),
    (lambda: F.cross_entropy(Z3, T3[:, :3], axis=1), ValueError,
     r"cross_entropy target: got soft targets of shape \(2, 3, 3\); expected the logits' "
     r"shape \(2, 4, 3\)"),
    (lambda: F.cross_entropy(Z3.astype(int), Y3, axis=1), ValueError,
     r"cross_entropy logits: got shape \(2, 4, 3\) dtype int64; expected a floating array, "
     r"with the classes on axis 1"),
    (lambda: F.cross_entropy(Z3[:, :0], Y3, axis=1), ValueError,
     r"cross_entropy logits: got shape \(2, 0, 3\), no classes on axis 1"),
    (lambda: F.nll_loss(Z3, Y3, axis=-4), np.exceptions.AxisError, "nll_loss axis"),
    (lambda: F.nll_loss(Z3, Y3, axis=True), TypeError, "nll_loss axis"),
    (lambda: F.nll_loss(Z3, Y3, axis=0), ValueError,
     r"nll_loss target: got integer labels of shape \(2, 3\); expected shape \(4, 3\)"),
])
def test_a_bad_class_axis_names_itself(call, err, words):
    with pytest.raises(err, match=words):
        call()
