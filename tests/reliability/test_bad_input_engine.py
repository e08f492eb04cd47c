"""Bad input to the engine's other entry points: ``Tensor``/``mg.tensor`` and their methods,
``gradcheck``/``taylor_check``, ``nn`` (Parameter, Linear, LayerNorm, load_state_dict) and
``optim`` (SGD, AdamW, schedules, step, load_state_dict). Each case raises a ValueError or
TypeError naming the argument, what it got and what was expected, and modifies nothing
(the arrays in ``keep``; parameters included where a failed call could have moved them)."""
from __future__ import annotations

import numpy as np
import pytest
from reliability_util import bad, check_bad, params

import minigrad as mg
from minigrad import F
from minigrad.nn import LayerNorm, Linear, Parameter
from minigrad.optim import SGD, AdamW, OneCycle, WarmupCosine

X = np.arange(6.0).reshape(2, 3) / 6
INTS = np.arange(6).reshape(2, 3)
CPLX = X.astype(np.complex128)
OBJ = X.astype(object)
RAGGED = [[1.0], [1.0, 2.0]]


def grad_leaf():
    return mg.Tensor(X.copy(), requires_grad=True)


LEAF = grad_leaf()
MULTI = LEAF * 2.0  # a many-element result: no implicit gradient

TENSOR = [
    bad("Tensor-None", lambda: mg.Tensor(None), TypeError, "Tensor data", "NoneType"),
    bad("Tensor-str", lambda: mg.Tensor("abc"), TypeError, "Tensor data", "str"),
    bad("Tensor-dict", lambda: mg.Tensor({"a": 1.0}), TypeError, "Tensor data", "dict"),
    bad("Tensor-object-array", lambda: mg.Tensor(OBJ), TypeError, "Tensor data", "object",
        keep=(OBJ,)),
    bad("Tensor-complex-array", lambda: mg.Tensor(CPLX), TypeError, "complex128", keep=(CPLX,)),
    bad("Tensor-ragged-list", lambda: mg.Tensor(RAGGED), ValueError, "Tensor data", "ragged"),
    bad("Tensor-unknown-dtype", lambda: mg.Tensor(X, dtype="foo"), TypeError, "dtype",
        "'foo'", keep=(X,)),
    bad("Tensor-complex-dtype", lambda: mg.Tensor(X, dtype=complex), TypeError, "complex128",
        keep=(X,)),
    bad("Tensor-int-requires-grad", lambda: mg.Tensor(INTS, requires_grad=True), TypeError,
        "requires_grad", "int64", keep=(INTS,)),
    bad("Tensor-bool-requires-grad", lambda: mg.Tensor(X > 0, requires_grad=True), TypeError,
        "requires_grad", "bool"),
    bad("Tensor-requires-grad-str", lambda: mg.Tensor(X, requires_grad="yes"), TypeError,
        "requires_grad", "'yes'", keep=(X,)),
    bad("Tensor-requires-grad-None", lambda: mg.Tensor(X, requires_grad=None), TypeError,
        "requires_grad", "None"),
    bad("tensor-None", lambda: mg.tensor(None), TypeError, "Tensor data", "NoneType"),
    bad("tensor-ragged-list", lambda: mg.tensor(RAGGED), ValueError, "Tensor data", "ragged"),
    bad("tensor-str-list", lambda: mg.tensor(["a", "b"]), TypeError, "Tensor data", "<U1"),
    bad("tensor-int-requires-grad", lambda: mg.tensor([1, 2], requires_grad=True), TypeError,
        "requires_grad", "int64"),
    bad("tensor-unknown-dtype", lambda: mg.tensor(X, dtype="nope"), TypeError, "dtype",
        "'nope'"),
    bad("requires_grad_-int", lambda: mg.Tensor(INTS).requires_grad_(), TypeError,
        "requires_grad", "int64"),
    bad("item-many-elements", lambda: LEAF.item(), ValueError, "item()", "(2, 3)"),
    bad("float-many-elements", lambda: float(LEAF), ValueError, "float()", "(2, 3)"),
    bad("int-many-elements", lambda: int(LEAF), ValueError, "int()", "(2, 3)"),
    bad("bool-many-elements", lambda: bool(LEAF), ValueError, "ambiguous", numpy=True),
    bad("backward-no-grad-many-elements", lambda: MULTI.backward(), ValueError, "(2, 3)",
        "grad=", numpy=True, extra=lambda: MULTI.backward(np.ones((2, 3)), retain_graph=True)),
    bad("backward-grad-shape", lambda: MULTI.backward(np.ones(3)), ValueError, "grad", "(3,)",
        "(2, 3)"),
    bad("backward-grad-str", lambda: MULTI.backward("abc"), TypeError, "grad", "<U3"),
    bad("backward-grad-object", lambda: MULTI.backward(np.full((2, 3), None)), TypeError,
        "grad", "object"),
    bad("backward-grad-complex", lambda: MULTI.backward(CPLX), TypeError, "grad", "complex128",
        keep=(CPLX,)),
]

_ones = np.ones(3)
GRADCHECK = [
    bad("gradcheck-fn-None", lambda: mg.gradcheck(None, [_ones]), TypeError, "fn", "NoneType"),
    bad("gradcheck-inputs-None", lambda: mg.gradcheck(F.exp, None), TypeError, "inputs",
        "NoneType"),
    bad("gradcheck-inputs-empty", lambda: mg.gradcheck(F.exp, []), ValueError, "inputs",
        "none requires grad"),
    bad("gradcheck-int-input", lambda: mg.gradcheck(F.exp, [INTS]), ValueError, "inputs",
        "none requires grad", keep=(INTS,)),
    bad("gradcheck-nan-input", lambda: mg.gradcheck(F.exp, [np.array([1.0, np.nan])]),
        ValueError, "inputs[0]", "nan", "(1,)", "finite"),
    bad("gradcheck-inf-input", lambda: mg.gradcheck(F.exp, [mg.Tensor(np.array(
        [np.inf, 1.0]), requires_grad=True)]), ValueError, "inputs[0]", "inf", "finite"),
    bad("gradcheck-eps-zero", lambda: mg.gradcheck(F.exp, [_ones], eps=0.0), ValueError, "eps",
        "0.0"),
    bad("gradcheck-eps-str", lambda: mg.gradcheck(F.exp, [_ones], eps="a"), TypeError, "eps",
        "'a'"),
    bad("gradcheck-eps-nan", lambda: mg.gradcheck(F.exp, [_ones], eps=np.nan), ValueError,
        "eps", "nan"),
    bad("gradcheck-atol-negative", lambda: mg.gradcheck(F.exp, [_ones], atol=-1e-5),
        ValueError, "atol", "-1e-05"),
    bad("gradcheck-rtol-negative", lambda: mg.gradcheck(F.exp, [_ones], rtol=-1.0),
        ValueError, "rtol", "-1.0"),
    bad("gradcheck-directions-zero", lambda: mg.gradcheck(F.exp, [_ones], fast=True,
                                                          directions=0),
        ValueError, "directions", "0"),
    bad("gradcheck-seed-str", lambda: mg.gradcheck(F.exp, [_ones], seed="a"), TypeError,
        "seed", "'a'"),
    bad("gradcheck-fn-returns-array", lambda: mg.gradcheck(lambda a: a.data, [_ones]),
        TypeError, "fn", "ndarray", keep=(_ones,)),
    bad("taylor_check-inputs-None", lambda: mg.taylor_check(F.exp, None), TypeError, "inputs",
        "NoneType"),
    bad("taylor_check-seed-negative", lambda: mg.taylor_check(F.exp, [_ones], seed=-1),
        TypeError, "seed", "-1"),
]

LIN = Linear(3, 2, rng=0)
NORM = LayerNorm(3)
PARAMS = tuple(p.data for p in (*LIN.parameters(), *NORM.parameters()))


def _state(**change):
    state = LIN.state_dict()
    state.update(change)
    return state


NN = [
    bad("Parameter-None", lambda: Parameter(None), TypeError, "Parameter data", "object"),
    bad("Parameter-int", lambda: Parameter(INTS), TypeError, "Parameter data", "int64",
        keep=(INTS,)),
    bad("Linear-in-features-zero", lambda: Linear(0, 2), ValueError, "in_features", "0"),
    bad("Linear-in-features-None", lambda: Linear(None, 2), TypeError, "in_features", "None"),
    bad("Linear-out-features-str", lambda: Linear(3, "2"), TypeError, "out_features", "'2'"),
    bad("Linear-dtype-complex", lambda: Linear(3, 2, dtype=np.complex64), TypeError, "dtype",
        "complex64"),
    bad("Linear-rng-str", lambda: Linear(3, 2, rng="abc"), TypeError, "rng", "'abc'"),
    bad("LayerNorm-dim-None", lambda: LayerNorm(None), TypeError, "normalized_dim", "None"),
    bad("LayerNorm-eps-nan", lambda: LayerNorm(3, eps=np.nan), ValueError, "eps", "nan"),
    bad("LayerNorm-eps-str", lambda: LayerNorm(3, eps="1e-5"), TypeError, "eps", "'1e-5'"),
]
for _name, _layer in (("Linear", LIN), ("LayerNorm", NORM)):
    NN += [
        bad(f"{_name}-input-None", lambda m=_layer: m(None), TypeError, _name, "NoneType",
            keep=PARAMS),
        bad(f"{_name}-input-str", lambda m=_layer: m("abc"), TypeError, _name, "str"),
        bad(f"{_name}-input-object", lambda m=_layer: m(OBJ), TypeError, _name, "object",
            keep=(OBJ,) + PARAMS),
        bad(f"{_name}-input-complex", lambda m=_layer: m(CPLX), TypeError, _name, "complex128",
            keep=(CPLX,) + PARAMS),
        bad(f"{_name}-input-width", lambda m=_layer: m(np.ones((2, 4))), ValueError, _name,
            "(2, 4)", "(..., 3)"),
        bad(f"{_name}-input-0d", lambda m=_layer: m(mg.Tensor(1.0)), ValueError, _name, "()"),
        bad(f"{_name}-input-ragged", lambda m=_layer: m(RAGGED), ValueError,
            "inhomogeneous", numpy=True),
    ]
NN += [
    bad("load_state_dict-None", lambda: LIN.load_state_dict(None), TypeError, "state",
        "NoneType", keep=PARAMS),
    bad("load_state_dict-list", lambda: LIN.load_state_dict([("weight", X)]), TypeError,
        "state", "list", keep=PARAMS),
    bad("load_state_dict-missing", lambda: LIN.load_state_dict({"weight": np.ones((3, 2))}),
        ValueError, "missing", "bias", keep=PARAMS),
    bad("load_state_dict-unexpected", lambda: LIN.load_state_dict(_state(extra=X)), ValueError,
        "unexpected", "extra", keep=PARAMS),
    bad("load_state_dict-shape", lambda: LIN.load_state_dict(_state(bias=np.ones(3))),
        ValueError, "'bias'", "(3,)", "(2,)", keep=PARAMS),
    bad("load_state_dict-dtype", lambda: LIN.load_state_dict(_state(bias=np.ones(2, "f4"))),
        ValueError, "'bias'", "float32", "float64", keep=PARAMS),
    bad("load_state_dict-object", lambda: LIN.load_state_dict(_state(bias=np.ones(2, object))),
        ValueError, "'bias'", "object", keep=PARAMS),
    bad("load_state_dict-complex", lambda: LIN.load_state_dict(_state(bias=np.ones(2, complex))),
        ValueError, "'bias'", "complex128", keep=PARAMS),
    bad("load_state_dict-None-value", lambda: LIN.load_state_dict(_state(bias=None)),
        ValueError, "'bias'", "()", keep=PARAMS),
]


def _param():
    return Parameter(np.arange(3.0))


P = _param()
OPT = SGD([P], lr=0.1, momentum=0.9)
SCHED_OPT = SGD([_param()], lr=0.1)  # building a schedule sets its lr: not OPT's


def _step_with(grad):
    P.grad = grad
    try:
        OPT.step()
    finally:
        P.grad = None


def _set_lr_and_step(lr):
    OPT.lr = lr
    try:
        OPT.step()
    finally:
        OPT.lr = 0.1


OPTIM = [
    bad("SGD-params-None", lambda: SGD(None, lr=0.1), TypeError, "params", "NoneType"),
    bad("SGD-params-tensor", lambda: SGD(P, lr=0.1), TypeError, "params", "single Tensor"),
    bad("SGD-params-empty", lambda: SGD(iter([]), lr=0.1), ValueError, "params", "empty"),
    bad("SGD-params-array", lambda: SGD([X], lr=0.1), TypeError, "params[0]", "ndarray"),
    bad("SGD-lr-negative", lambda: SGD([P], lr=-0.1), ValueError, "lr", "-0.1"),
    bad("SGD-lr-None", lambda: SGD([P], lr=None), TypeError, "lr", "None"),
    bad("SGD-lr-str", lambda: SGD([P], lr="0.1"), TypeError, "lr", "'0.1'"),
    bad("SGD-lr-inf", lambda: SGD([P], lr=np.inf), ValueError, "lr", "inf"),
    bad("SGD-lr-nan", lambda: SGD([P], lr=np.nan), ValueError, "lr", "nan"),
    bad("SGD-momentum-str", lambda: SGD([P], lr=0.1, momentum="a"), TypeError, "momentum"),
    bad("SGD-weight-decay-negative", lambda: SGD([P], lr=0.1, weight_decay=-1), ValueError,
        "weight_decay", "-1"),
    bad("AdamW-betas-None", lambda: AdamW([P], betas=None), TypeError, "betas", "None"),
    bad("AdamW-betas-one", lambda: AdamW([P], betas=(0.9,)), ValueError, "betas", "(0.9,)"),
    bad("AdamW-beta-nan", lambda: AdamW([P], betas=(np.nan, 0.9)), ValueError, "betas[0]",
        "nan"),
    bad("AdamW-eps-negative", lambda: AdamW([P], eps=-1.0), ValueError, "eps", "-1.0"),
    bad("step-grad-shape", lambda: _step_with(np.ones(4)), ValueError, "(4,)", "(3,)",
        keep=(P.data,)),
    bad("step-grad-complex", lambda: _step_with(np.ones(3, complex)), TypeError, "complex128",
        keep=(P.data,)),
    bad("step-grad-str", lambda: _step_with(np.array(["a", "b", "c"])), TypeError, "<U1",
        keep=(P.data,)),
    bad("step-lr-set-negative", lambda: _set_lr_and_step(-1.0), ValueError, "lr", "-1.0",
        keep=(P.data,)),
    bad("optimizer-load-None", lambda: OPT.load_state_dict(None), TypeError, "state",
        "NoneType"),
    bad("optimizer-load-empty", lambda: OPT.load_state_dict({}), ValueError, "missing keys",
        "step_count"),
    bad("optimizer-load-buffer-shape", lambda: OPT.load_state_dict({
        **SGD([_param()], lr=0.1, momentum=0.9).state_dict(),
        "state.0.momentum_buffer": np.ones(4)}), ValueError, "momentum_buffer", "(4,)", "(3,)"),
    bad("WarmupCosine-optimizer-None", lambda: WarmupCosine(None, 1, 10), TypeError,
        "optimizer", "NoneType"),
    bad("WarmupCosine-warmup-float", lambda: WarmupCosine(SCHED_OPT, 1.5, 10), TypeError,
        "warmup_steps", "1.5"),
    bad("WarmupCosine-warmup-too-long", lambda: WarmupCosine(SCHED_OPT, 10, 10), ValueError,
        "warmup_steps", "10"),
    bad("WarmupCosine-total-str", lambda: WarmupCosine(SCHED_OPT, 1, "10"), TypeError,
        "total_steps", "'10'"),
    bad("WarmupCosine-min-lr-negative", lambda: WarmupCosine(SCHED_OPT, 1, 10, min_lr=-1),
        ValueError, "min_lr", "-1"),
    bad("OneCycle-total-zero", lambda: OneCycle(SCHED_OPT, 1.0, 0), ValueError, "total_steps", "0"),
    bad("OneCycle-max-lr-nan", lambda: OneCycle(SCHED_OPT, np.nan, 10), ValueError, "max_lr",
        "nan"),
    bad("OneCycle-pct-start", lambda: OneCycle(SCHED_OPT, 1.0, 10, pct_start=1.5), ValueError,
        "pct_start", "1.5"),
    bad("OneCycle-div-factor-zero", lambda: OneCycle(SCHED_OPT, 1.0, 10, div_factor=0), ValueError,
        "div_factor", "0"),
    bad("schedule-load-None", lambda: OneCycle(SCHED_OPT, 1.0, 10).load_state_dict(None), TypeError,
        "state", "NoneType"),
    bad("schedule-load-empty", lambda: OneCycle(SCHED_OPT, 1.0, 10).load_state_dict({}), ValueError,
        "missing keys", "last_step"),
]

CASES = TENSOR + GRADCHECK + NN + OPTIM


@pytest.mark.parametrize("case", params(CASES))
def test_engine_entry_point(case):
    check_bad(case)


def test_nothing_moved():
    """After every failing call above: the layers, the optimizer's parameter and the leaf are
    exactly as they were built (no partial load, no half step)."""
    np.testing.assert_array_equal(LEAF.data, X)
    np.testing.assert_array_equal(P.data, np.arange(3.0))
    assert OPT.step_count == 0 and OPT.lr == 0.1 and OPT.state == [{}]
    fresh = Linear(3, 2, rng=0)
    for a, b in zip(LIN.parameters(), fresh.parameters(), strict=True):
        np.testing.assert_array_equal(a.data, b.data)


def test_a_bad_gradient_moves_no_parameter():
    """step() checks every gradient before it updates any: the first parameter does not move
    when the second one's gradient is bad."""
    a, b = _param(), _param()
    opt = AdamW([a, b], lr=0.1)
    a.grad, b.grad = np.ones(3), np.ones(2)
    with pytest.raises(ValueError, match=r"\(2,\)"):
        opt.step()
    np.testing.assert_array_equal(a.data, np.arange(3.0))
    assert opt.step_count == 0 and opt.state == [{}, {}]


def test_lists_work_where_arrays_do():
    """Linear and LayerNorm read a nested list as the array it spells."""
    rows = X.tolist()
    np.testing.assert_array_equal(LIN(rows).data, LIN(X).data)
    np.testing.assert_array_equal(NORM(rows).data, NORM(X).data)
    np.testing.assert_array_equal(NORM(INTS).data, NORM(INTS.astype(float)).data)
