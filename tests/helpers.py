"""Helpers the test folders share, one copy of each (tests/conftest.py puts tests/ on sys.path,
so a test anywhere imports this module as ``helpers``; the dtype tolerances are in ulps.py).

Inputs are drawn from the generator the caller passes. Every test module, and every op family
in tests/minigrad/op_cases/, keeps its own seeded generator, so what a test sees does not
depend on which other modules ran before it (``-k``, ``-n 2``). A module that draws often
binds its generator once, ``rn = partial(helpers.rn, RNG)``, and then writes ``rn(3, 4)``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from ulps import assert_close_ulps

import minigrad as mg
from minigrad import F

__all__ = ["generator", "rn", "uniform", "leaf", "leaves", "grad_of", "assert_close", "close_32_ulps",
           "one_line_refusal", "numpy_since_2", "blas_counts",
           "value_and_grads",
           "assert_same_function", "c_softmax", "c_logsumexp", "c_log_softmax", "c_layer_norm",
           "c_gelu_tanh", "c_cross_entropy", "c_self_attention", "OPTIM_SHAPES", "OPTIM_STEPS",
           "SGD_CONFIGS", "ADAMW_CONFIGS", "optimizer_problem", "optimizer_history",
           "assert_histories_close", "VIT_CONFIG", "FUSED_OPS", "random_model", "random_block",
           "random_images", "op_names", "model_pass", "block_pass", "perturbed_tinyvit"]


def generator(rng) -> np.random.Generator:
    """``rng`` itself if it is a Generator, else a fresh one seeded with it."""
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def rn(rng, *shape, dtype=np.float64, scale=1.0) -> np.ndarray:
    """Standard normals of ``shape`` (times ``scale``) from ``rng`` (a Generator or a seed),
    as an ndarray of ``dtype``: ``rn(rng)`` is a 0-d array, not a NumPy scalar."""
    x = generator(rng).standard_normal(shape)
    if scale != 1.0:
        x = x * scale
    return np.asarray(x).astype(dtype, copy=False)


def uniform(rng, lo, hi, *shape, dtype=np.float64) -> np.ndarray:
    """Uniform numbers in [lo, hi) of ``shape`` from ``rng``, as an ndarray of ``dtype``."""
    return np.asarray(generator(rng).uniform(lo, hi, shape)).astype(dtype, copy=False)


def spread(rng, *shape, gap=1e-3) -> np.ndarray:
    """Normals from ``rng`` no two of which are within ``gap``, redrawn until so: a finite
    difference of size below ``gap`` never reorders them (sort, max, min, their ties)."""
    while True:
        x = rn(rng, *shape)
        flat = np.sort(x.reshape(-1))
        if flat.size < 2 or np.min(np.diff(flat)) > gap:
            return x


def leaf(rng, *shape, dtype=np.float64, within=None) -> mg.Tensor:
    """A Tensor of ``shape`` and ``dtype`` that requires grad: standard normals from ``rng``,
    or uniform numbers in ``within`` = (lo, hi) (away from 0, for logs and quotients)."""
    data = rn(rng, *shape) if within is None else uniform(rng, *within, *shape)
    return mg.Tensor(data.astype(dtype), requires_grad=True)


def leaves(arrays, dtype=None) -> list:
    """Each floating array of ``arrays`` as a Tensor that requires grad (a copy, cast to
    ``dtype`` if given); the others (labels, masks) as they are."""
    return [mg.Tensor(np.array(a, dtype=dtype or a.dtype), requires_grad=True)
            if a.dtype.kind == "f" else a for a in arrays]


def grad_of(fn, x, dtype=np.float64, cot=None):
    """``(value, gradient)`` of ``fn`` at ``x`` (cast to ``dtype``) for the cotangent ``cot``
    (ones by default)."""
    t = mg.Tensor(np.asarray(x, dtype=dtype), requires_grad=True)
    out = fn(t)
    out.backward(np.ones(out.shape, dtype) if cot is None else np.asarray(cot, dtype))
    return out.data, t.grad


def assert_close(ours, ref, dtype=np.float64, ulps=64):
    """Equal within ``ulps`` units of ``dtype``'s epsilon, scaled by the reference's largest
    magnitude (at least 1)."""
    ref = np.asarray(ref, dtype=np.float64)
    tol = ulps * np.finfo(dtype).eps * max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(np.asarray(ours), ref, rtol=0, atol=tol)


def close_32_ulps(got, want, dtype):
    """Within 32 ulps of ``dtype`` at the largest magnitude compared (ulps.py): the closeness of
    the torch references of op_cases/activations.py and op_cases/losses.py in float64 and
    float32. Measured on this machine: at most 2.9 ulps over every case of those builders."""
    assert_close_ulps(got, np.asarray(want, dtype=np.float64).astype(dtype), 32, dtype=dtype)


def one_line_refusal(status, err, *words) -> str:
    """A refusal of the command line: exit status 2 and exactly one line on stderr, no
    traceback, naming each of ``words``; returns that line."""
    assert status == 2, (status, err)
    assert err.count("\n") == 1 and err.endswith("\n") and "Traceback" not in err, err
    for w in words:
        assert w in err, f"{err!r} does not name {w!r}"
    return err.rstrip("\n")


def numpy_since_2(path):
    """``np.<path>`` if this NumPy has it (the Array API names of NumPy 2.0 and 2.1), else
    None: a table row of it is left out, as minigrad's table leaves the function out."""
    owner, _, name = path.rpartition(".")
    return getattr(np.linalg if owner else np, name, None)


def blas_counts() -> list[int]:
    """The thread count of each BLAS library threadpoolctl can see (skips without it)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def value_and_grads(fn, arrays, cot_seed=0):
    """``fn`` on Tensors of the floating ``arrays`` (the others passed as they are), backward
    with a standard normal cotangent seeded ``cot_seed``: (value, the Tensors' gradients,
    the cotangent)."""
    ts = leaves(arrays)
    out = fn(*ts)
    cot = np.random.default_rng(cot_seed).standard_normal(out.shape)
    out.backward(cot)
    return out.data, [t.grad for t in ts if isinstance(t, mg.Tensor)], cot


def assert_same_function(fused, composed, arrays, rtol=1e-12, atol=1e-12):
    """``fused`` and ``composed`` agree on ``arrays`` in value and in every gradient, for the
    same random cotangent."""
    v1, g1, _ = value_and_grads(fused, arrays)
    v2, g2, _ = value_and_grads(composed, arrays)
    assert v1.shape == v2.shape
    np.testing.assert_allclose(v1, v2, rtol=rtol, atol=atol)
    for a, b in zip(g1, g2, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ---- the fused ops composed from primitive ops (their tests compare the two) -----------------
def c_softmax(x, axis=-1):
    e = F.exp(x - F.max(x, axis=axis, keepdims=True))
    return e / F.sum(e, axis=axis, keepdims=True)


def c_logsumexp(x, axis=None, keepdims=False):
    m = F.max(x, axis=axis, keepdims=True)
    y = m + F.log(F.sum(F.exp(x - m), axis=axis, keepdims=True))
    if keepdims:
        return y
    return F.reshape(y, ()) if axis is None else F.squeeze(y, axis)


def c_log_softmax(x, axis=-1):
    return x - c_logsumexp(x, axis=axis, keepdims=True)


def c_layer_norm(x, w=None, b=None, eps=1e-5):
    xc = x - F.mean(x, axis=-1, keepdims=True)
    y = xc / F.sqrt(F.mean(xc * xc, axis=-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    return y if b is None else y + b


def c_gelu_tanh(x):
    u = F.mul(math.sqrt(2 / math.pi), F.add(x, F.mul(0.044715, F.pow(x, 3))))
    return F.mul(F.mul(0.5, x), F.add(1.0, F.tanh(u)))


def c_cross_entropy(z, target, reduction="mean", label_smoothing=0.0):
    C = z.shape[-1]
    lsm = F.log_softmax(z, axis=-1)
    if isinstance(target, np.ndarray) and target.dtype.kind in "iu":
        flat = F.reshape(lsm, (-1, C))
        picked = flat[np.arange(flat.shape[0]), target.reshape(-1)]
        loss = -(1 - label_smoothing) * picked - (label_smoothing / C) * F.sum(flat, axis=-1)
        loss = F.reshape(loss, target.shape)
    else:
        q = target * (1 - label_smoothing) + label_smoothing / C
        loss = -F.sum(q * lsm, axis=-1)
    return {"mean": F.mean, "sum": F.sum, "none": lambda v: v}[reduction](loss)


def c_self_attention(qkv, num_heads, scale=None):
    B, T, width = qkv.shape
    D = width // 3
    d = D // num_heads
    q, k, v = (F.transpose(F.reshape(qkv[:, :, i * D:(i + 1) * D], (B, T, num_heads, d)),
                           (0, 2, 1, 3)) for i in range(3))
    a = c_softmax((q @ F.swapaxes(k, -1, -2)) * (1 / math.sqrt(d) if scale is None else scale))
    return F.reshape(F.transpose(a @ v, (0, 2, 1, 3)), (B, T, D))


# ---- optimizer trajectories (tests/minigrad/optim) ------------------------------------------
#: The optimizers' test problem: two parameters of these shapes, this many steps.
OPTIM_SHAPES = [(3, 4), (5,)]
OPTIM_STEPS = 6

SGD_CONFIGS = {
    "plain": dict(lr=0.1),
    "momentum": dict(lr=0.1, momentum=0.9),
    "dampening": dict(lr=0.05, momentum=0.8, dampening=0.3),
    "nesterov": dict(lr=0.1, momentum=0.9, nesterov=True),
    "weight_decay": dict(lr=0.1, weight_decay=0.05),
    "all": dict(lr=0.03, momentum=0.7, weight_decay=0.1, nesterov=True),
}
ADAMW_CONFIGS = {
    "default": dict(),
    "decay": dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1),
    "no_decay": dict(lr=0.01, weight_decay=0.0),
}


def optimizer_problem(seed: int = 0, dtype=np.float64):
    """Initial parameter values and a gradient for every step and parameter."""
    rng = np.random.default_rng(seed)
    initial = [rng.standard_normal(s).astype(dtype) for s in OPTIM_SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in OPTIM_SHAPES]
             for _ in range(OPTIM_STEPS)]
    return initial, grads


def optimizer_history(optimizer_cls, initial, grads, **kwargs):
    """Parameter values after each step of a minigrad optimizer."""
    from minigrad.nn import Parameter
    params = [Parameter(x) for x in initial]
    opt = optimizer_cls(params, **kwargs)
    history = []
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = g.copy()
        opt.step()
        history.append([p.data.copy() for p in params])
    return history


def assert_histories_close(actual, expected, rtol=1e-12, atol=1e-14):
    for step, (got, want) in enumerate(zip(actual, expected, strict=True)):
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol,
                                       err_msg=f"step {step + 1}, parameter {i}")


# ---- TinyViT and Block with every parameter random (tests/vit) ------------------------------------
#: The small TinyViT of the fused-path tests.
VIT_CONFIG = dict(img_size=8, patch_size=4, in_chans=2, dim=8, num_heads=2, mlp_dim=12,
                  num_classes=3)
#: The ops of the fused path, one per stage (vit/model/fused.py).
FUSED_OPS = {"patch_tokens", "encoder_block", "cls_head"}


def random_model(dtype=np.float64, seed=0, fused=False, **config):
    """A TinyViT (VIT_CONFIG, updated by ``config``) whose every parameter is random, norm
    gains and biases and the CLS token too: the same numbers whichever path it runs."""
    from vit.model.tinyvit import TinyViT
    model = TinyViT(**{**VIT_CONFIG, **config}, dtype=dtype, seed=seed, fused=fused)
    rng = np.random.default_rng(seed + 100)
    for p in model.parameters():
        p.data[...] = rng.standard_normal(p.shape) / np.sqrt(p.shape[-1])
    return model


def random_block(dtype=np.float64, seed=0, fused=False, dim=8, heads=2, hidden=12):
    """A Block whose every parameter is random (norm gains and biases too)."""
    from vit.model.block import Block
    rng = np.random.default_rng(seed)
    block = Block(dim, heads, hidden, dtype=dtype, rng=rng, fused=fused)
    for p in block.parameters():
        p.data[...] = rng.standard_normal(p.shape) / np.sqrt(p.shape[0])
    return block


def random_images(model, B, seed):
    """``B`` random images of ``model``'s shape and dtype, and random labels."""
    c = model.config
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, c["in_chans"], c["img_size"], c["img_size"]))
    return x.astype(model.dtype), rng.integers(0, c["num_classes"], B)


def op_names(t) -> list:
    """The ops recorded in the graph that made ``t``, inputs before results."""
    from minigrad.tools.summary import graph_summary
    return [row[0] for row in graph_summary(t).rows]


def model_pass(model, x, y):
    """Loss, the recorded op names and every parameter gradient of one forward + backward."""
    model.zero_grad()
    loss = F.cross_entropy(model(mg.Tensor(x)), y)
    ops = op_names(loss)
    loss.backward()
    return loss.item(), ops, {k: p.grad.copy() for k, p in model.named_parameters()}


def block_pass(block, x, cot):
    """Output, input gradient, parameter gradients and recorded ops of one forward + backward."""
    block.zero_grad()
    t = mg.Tensor(x.copy(), requires_grad=True)
    out = block(t)
    ops = op_names(out)
    out.backward(cot)
    return out.data, t.grad, {n: p.grad.copy() for n, p in block.named_parameters()}, ops


def perturbed_tinyvit(cfg, dtype=np.float64, seed=0):
    """A TinyViT(**cfg) whose biases and LayerNorm gains are off their initial 0 and 1."""
    from vit.model.tinyvit import TinyViT
    model = TinyViT(**cfg, dtype=dtype, seed=seed)
    rng = np.random.default_rng(seed + 1)
    for p in model.parameters():
        p.data += (0.1 * rng.standard_normal(p.shape)).astype(dtype)
    return model
