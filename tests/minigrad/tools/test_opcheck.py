"""``mg.gradcheck_ops``: a wrong VJP deep inside a model is named by its op and its input.

The model is a TinyViT-like composite (embedding, attention, an MLP of user ops, a head, a
loss). Each user op has a correct version and a deliberately wrong one (off by a factor, a
transposed gradient, a missed broadcast sum, a wrong sign on one input of several, swapped
outputs of a multi-output op, a JointVJP's mean instead of a sum). With one wrong op in
place, the whole-function ``gradcheck`` fails (it cannot say where), and the per-op check
names exactly that op and that input, and nothing else.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import minigrad as mg
from minigrad import F
from minigrad.ops import normalization
from minigrad.ops import shape as shape_ops

B, T, D, IN, K, HEADS = 2, 3, 4, 5, 3, 2
H = D // 2


# ---- the user ops: correct, and wrong in one way each ---------------------------------
@mg.op(name="mix")
def mix(x, w):
    """y = x w, w (D, D).   x̄ = ȳ wᵀ,  w̄ = Σ_rows x ȳᵀ."""
    return x @ w, (lambda g: g @ w.T, lambda g: x.reshape(-1, D).T @ g.reshape(-1, D))


@mg.op(name="mix")
def mix_transposed(x, w):
    """As mix, with w̄ transposed (square w: the shape cannot tell)."""
    return x @ w, (lambda g: g @ w.T, lambda g: (x.reshape(-1, D).T @ g.reshape(-1, D)).T)


@mg.op(name="center")
def center(x):
    """y = x - mean(x) over the last axis.   x̄ = ȳ - mean(ȳ)."""
    return x - x.mean(axis=-1, keepdims=True), lambda g: g - g.mean(axis=-1, keepdims=True)


@mg.op(name="center")
def center_missing_sum(x):
    """As center, forgetting that the broadcast mean's gradient is a sum over the row."""
    return x - x.mean(axis=-1, keepdims=True), lambda g: g


@mg.op(name="softplus2")
def softplus2(x):
    """y = 2 log(1 + e^x).   x̄ = 2 ȳ sigmoid(x)."""
    return 2.0 * np.logaddexp(0.0, x), lambda g: 2.0 * g / (1.0 + np.exp(-x))


@mg.op(name="softplus2")
def softplus2_half(x):
    """As softplus2, its VJP off by the factor 2."""
    return 2.0 * np.logaddexp(0.0, x), lambda g: g / (1.0 + np.exp(-x))


@mg.op(name="halves")
def halves(x):
    """(x[..., :H], x[..., H:]), two outputs.   x̄ = [ȳ_0, ȳ_1] along the last axis."""
    return (x[..., :H], x[..., H:]), lambda gs: np.concatenate(gs, axis=-1)


@mg.op(name="halves")
def halves_swapped(x):
    """As halves, its VJP putting the two cotangents in each other's place."""
    return (x[..., :H], x[..., H:]), lambda gs: np.concatenate(gs[::-1], axis=-1)


@mg.op(name="gate", arrays=3)
def gate(a, b, c):
    """y = a tanh(b) + c, c broadcast over rows.   ā = ȳ tanh b, b̄ = ȳ a (1 - tanh² b), c̄ = ȳ."""
    t = np.tanh(b)
    return a * t + c, (lambda g: g * t, lambda g: g * a * (1 - t * t), lambda g: g)


@mg.op(name="gate", arrays=3)
def gate_sign(a, b, c):
    """As gate, with the sign of c̄ wrong."""
    t = np.tanh(b)
    return a * t + c, (lambda g: g * t, lambda g: g * a * (1 - t * t), lambda g: -g)


@mg.op(name="affine", arrays=3)
def affine(x, w, b):
    """y = x w + b, one JointVJP.   x̄ = ȳ wᵀ, w̄ = xᵀ ȳ, b̄ = Σ_rows ȳ."""
    return x @ w + b, mg.JointVJP(lambda g, needed: [g @ w.T, x.T @ g, g.sum(axis=0)])


@mg.op(name="affine", arrays=3)
def affine_mean(x, w, b):
    """As affine, with b̄ the mean over rows instead of the sum."""
    return x @ w + b, mg.JointVJP(lambda g, needed: [g @ w.T, x.T @ g, g.mean(axis=0)])


CORRECT = {"mix": mix, "center": center, "softplus2": softplus2, "halves": halves,
           "gate": gate, "affine": affine}


def composite(p: dict, x: mg.Tensor, labels: np.ndarray, ops: dict) -> mg.Tensor:
    """A TinyViT-like loss: embedding, a pre-norm attention block, an MLP of user ops."""
    t = F.linear(x, p["embed_w"], p["embed_b"])  # (B, T, D)
    qkv = F.linear(F.layer_norm(t, p["ln1_w"], p["ln1_b"]), p["qkv_w"])
    t = t + F.linear(F.self_attention(qkv, HEADS), p["proj_w"])
    h = F.layer_norm(t, p["ln2_w"], p["ln2_b"])
    h = ops["mix"](h, p["mix_w"])
    h = ops["center"](h)
    h = ops["softplus2"](h)
    a, b = ops["halves"](h)
    h = ops["gate"](a, b, p["gate_c"])
    h = ops["affine"](h.reshape(B * T, H), p["fc_w"], p["fc_b"]).reshape(B, T, D)
    t = t + h
    logits = F.linear(F.mean(t, axis=1), p["head_w"], p["head_b"])
    return F.cross_entropy(logits, labels)


SHAPES = {"embed_w": (IN, D), "embed_b": (D,), "ln1_w": (D,), "ln1_b": (D,),
          "qkv_w": (D, 3 * D), "proj_w": (D, D), "ln2_w": (D,), "ln2_b": (D,),
          "mix_w": (D, D), "gate_c": (H,), "fc_w": (H, D), "fc_b": (D,), "head_w": (D, K),
          "head_b": (K,)}


@pytest.fixture
def model():
    rng = np.random.default_rng(5)
    params = {k: mg.Tensor(rng.standard_normal(s) * 0.7, requires_grad=True)
              for k, s in SHAPES.items()}
    x = mg.Tensor(rng.standard_normal((B, T, IN)))
    labels = rng.integers(0, K, B)
    return params, x, labels


def failing_inputs(report: mg.OpcheckReport) -> list:
    """(op name, input position, parameter name) of every failing input of every op, and
    (op name, problem) for every problem."""
    found = [(o.name, r.position, r.param) for o in report.failed for r in o.failures]
    return found + [(o.name, p) for o in report.failed for p in o.problems]


def line_of(fn, needle: str) -> int:
    """The line number of the first line of ``fn``'s source that contains ``needle``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if needle in line)


def test_the_correct_composite_passes_whole_and_op_by_op(model):
    params, x, labels = model
    mg.gradcheck(lambda *_: composite(params, x, labels, CORRECT), list(params.values()))
    report = mg.gradcheck_ops(lambda: composite(params, x, labels, CORRECT))
    names = [o.name for o in report.ops]
    assert names.count("linear") == 4 and names.count("layer_norm") == 2
    for name in CORRECT:
        assert names.count(name) == 1
    assert report.ok and not report.failed and not report.unchecked
    assert all(o.status == "passed" and o.inputs for o in report.ops)


WRONG = [
    ("mix", mix_transposed, 1, "w"),  # a transposed gradient
    ("center", center_missing_sum, 0, "x"),  # a missed broadcast sum
    ("softplus2", softplus2_half, 0, "x"),  # off by a factor
    ("halves", halves_swapped, 0, "x"),  # a multi-output op
    ("gate", gate_sign, 2, "c"),  # a wrong sign on one input of three
    ("affine", affine_mean, 2, "b"),  # a JointVJP op
]


@pytest.mark.parametrize("key, wrong, position, param", WRONG, ids=[w[1].__name__ for w in WRONG])
def test_a_wrong_user_op_deep_in_the_model_is_named_with_its_input(model, key, wrong, position,
                                                                    param):
    params, x, labels = model
    ops = dict(CORRECT, **{key: wrong})
    with pytest.raises(mg.GradcheckError):  # the whole function: wrong, but not where
        mg.gradcheck(lambda *_: composite(params, x, labels, ops), list(params.values()))
    with pytest.raises(mg.GradcheckError) as caught:
        mg.gradcheck_ops(lambda: composite(params, x, labels, ops))
    report = caught.value.report
    assert failing_inputs(report) == [(key, position, param)]
    bad = report.failed[0]
    assert [o for o in report.ops if o.status != "passed"] == [bad]
    call_line = line_of(composite, 'ops["' + key + '"]')
    assert bad.site.endswith(f"test_opcheck.py:{call_line}")
    assert bad.defined.endswith(f"test_opcheck.py:{line_of(wrong.forward, 'def ')}")
    worst = bad.failures[0].report
    assert worst.analytic != pytest.approx(worst.numeric, rel=1e-3, abs=1e-6)
    text = str(report)
    assert f"FAILED op #{bad.number} '{key}'" in text and f"input {position} ({param})" in text


@pytest.mark.parametrize("key, wrong, position, param", WRONG, ids=[w[1].__name__ for w in WRONG])
def test_fast_mode_names_the_same_op_and_input_and_still_its_worst_element(model, key, wrong,
                                                                           position, param):
    params, x, labels = model
    ops = dict(CORRECT, **{key: wrong})
    report = mg.gradcheck_ops(lambda: composite(params, x, labels, ops), fast=True,
                              raise_exception=False)
    assert failing_inputs(report) == [(key, position, param)]
    worst = report.failed[0].failures[0].report
    assert worst.mode == "elementwise" and worst.worst_index is not None  # the fallback
    modes = {r.report.mode for o in report.ops if o.status == "passed" for r in o.inputs}
    assert modes == {"fast"}


def test_a_built_in_op_patched_wrong_is_found_at_each_of_its_calls(model, monkeypatch):
    params, x, labels = model
    right = normalization._layer_norm_vjp_x

    def scaled(gx, gs, xh, r, weight):  # x̄ of layer_norm, 10% too large
        right(gx, gs, xh, r, weight)
        gx *= 1.1

    monkeypatch.setattr(normalization, "_layer_norm_vjp_x", scaled)
    with pytest.raises(mg.GradcheckError):
        mg.gradcheck(lambda *_: composite(params, x, labels, CORRECT), list(params.values()))
    report = mg.gradcheck_ops(lambda: composite(params, x, labels, CORRECT),
                              raise_exception=False)
    assert failing_inputs(report) == [("layer_norm", 0, "x")] * 2
    assert [o.site for o in report.failed] == [
        report.failed[0].site.rsplit(":", 1)[0] + f":{line_of(composite, n)}"
        for n in ('p["ln1_w"]', 'p["ln2_w"]')]


def test_a_wrong_multi_output_joint_vjp_is_named():
    @mg.op(arrays=1)
    def twice(x, w):
        """(x w, 2 x w) with one JointVJP.   x̄ = (ȳ_0 + 2 ȳ_1) wᵀ, w̄ = xᵀ (ȳ_0 + 2 ȳ_1)."""
        y = x @ w
        return (y, 2.0 * y), mg.JointVJP(lambda gs, needed: [(gs[0] + gs[1]) @ w.T,
                                                             x.T @ (gs[0] + 2.0 * gs[1])])

    rng = np.random.default_rng(2)
    x, w = (mg.Tensor(rng.standard_normal(s), requires_grad=True) for s in ((3, 4), (4, 2)))
    report = mg.gradcheck_ops(lambda: F.tanh(twice(x, w)[1]) * twice(x, w)[0],
                              raise_exception=False)
    assert failing_inputs(report) == [("twice", 0, "x")] * 2
    assert [o.name for o in report.ops if o.status == "passed"] == ["tanh", "mul"]


def test_ops_that_cannot_be_checked_are_listed_with_the_reason():
    rng = np.random.default_rng(3)
    noise = np.random.default_rng(4)

    @mg.op
    def noisy(x):
        """y = x + fresh noise on each call: not a function of x."""
        return x + noise.standard_normal(x.shape), lambda g: g

    @mg.op
    def halve(k):
        """y = k / 2 of an integer array: nothing to differentiate."""
        return k / 2.0, lambda g: g / 2.0

    x = mg.Tensor(rng.standard_normal((2, 3)), requires_grad=True)

    def fn():
        joined = mg.record(np.concatenate([x.data, x.data]), [x, x],  # no forward known
                           [lambda g: g[:2], lambda g: g[2:]], "joined")
        counts = mg.Tensor(np.arange(6).reshape(2, 3))
        return noisy(joined).sum() + halve(counts).sum() + F.astype(x, np.float32).sum()

    report = mg.gradcheck_ops(fn)
    reasons = {o.name: o.reason for o in report.unchecked}
    assert set(reasons) == {"joined", "noisy", "halve", "astype"}
    assert "direct call to record" in reasons["joined"]
    assert "not a function of its recorded inputs" in reasons["noisy"]
    assert "no floating array input" in reasons["halve"]
    assert "float32" in reasons["astype"]
    assert report.ok  # nothing failed; the unchecked ones are listed, not passed
    assert {o.name for o in report.ops if o.status == "passed"} == {"sum", "add"}
    assert [o.name for o in report.ops].index("joined") == 0  # the order they ran


def test_the_ops_with_a_list_of_inputs_are_checked_and_a_wrong_one_named(monkeypatch):
    rng = np.random.default_rng(6)
    a, b = (mg.Tensor(rng.standard_normal((2, 3)), requires_grad=True) for _ in range(2))

    def fn():
        s = F.stack([F.concatenate([a, b], axis=1), F.concatenate([b, a], axis=1)])
        return F.einsum("kij,ij->k", s, F.concatenate([a, a], axis=1))

    report = mg.gradcheck_ops(fn)
    assert [(o.name, o.status) for o in report.ops] == [
        ("concatenate", "passed")] * 2 + [("stack", "passed"), ("concatenate", "passed"),
                                           ("einsum", "passed")]
    assert [r.param for r in report.ops[-1].inputs] == ["operands[0]", "operands[1]"]
    right = shape_ops._stack

    def stack_wrong(*arrays, axis=0):  # the VJP of the second input gives the first's slice
        out, vjps = right(*arrays, axis=axis)
        return out, [vjps[0], vjps[0]] + list(vjps[2:])

    monkeypatch.setattr(shape_ops, "_stack", stack_wrong)
    report = mg.gradcheck_ops(fn, raise_exception=False)
    assert failing_inputs(report) == [("stack", 1, "tensors[1]")]


def test_arguments_are_checked():
    with pytest.raises(TypeError, match="gradcheck_ops fn"):
        mg.gradcheck_ops(3)
    with pytest.raises(TypeError, match="gradcheck_ops inputs"):
        mg.gradcheck_ops(lambda x: x, mg.tensor([1.0]))
    with pytest.raises(ValueError, match="eps"):
        mg.gradcheck_ops(lambda: mg.tensor([1.0]).exp(), eps=0.0)
    with pytest.raises(ValueError, match="directions"):
        mg.gradcheck_ops(lambda: mg.tensor([1.0]).exp(), fast=True, directions=0)
