"""Grad mode: ``mg.no_grad`` and ``mg.enable_grad`` as context managers and decorators (nested,
re-entered, through exceptions, on generator functions, whose body they cover and not the
caller's), per thread; and ``retain_grad`` on a non-leaf."""
from __future__ import annotations

import threading
from functools import partial

import helpers
import numpy as np
import pytest

import minigrad as mg

RNG = np.random.default_rng(3)
leaf = partial(helpers.leaf, RNG, within=(0.5, 1.5))


# ---- no_grad, enable_grad, retain_grad ----------------------------------------------------
def test_no_grad_context_decorator_nesting_and_exceptions():
    x = leaf(2)
    assert mg.is_grad_enabled()
    with mg.no_grad():
        assert not mg.is_grad_enabled() and not (x * 2).requires_grad
        with mg.enable_grad():
            assert mg.is_grad_enabled() and (x * 2).requires_grad
        assert not mg.is_grad_enabled()
    assert mg.is_grad_enabled() and (x * 2).requires_grad

    @mg.no_grad()
    def f(t):
        return t * 2, mg.is_grad_enabled()

    @mg.no_grad
    def g(t):
        return t * 2

    y, mode = f(x)
    assert not y.requires_grad and not mode and not g(x).requires_grad
    assert f.__name__ == "f" and mg.is_grad_enabled()

    with pytest.raises(KeyError):
        with mg.no_grad():
            raise KeyError
    assert mg.is_grad_enabled()
    with pytest.raises(TypeError):
        g(None)  # raises inside the decorated function
    assert mg.is_grad_enabled()

    ctx = mg.no_grad()  # one object entered twice, nested
    with ctx:
        with ctx:
            assert not mg.is_grad_enabled()
        assert not mg.is_grad_enabled()
    assert mg.is_grad_enabled()


def test_grad_mode_is_per_thread():
    seen = []
    with mg.no_grad():
        t = threading.Thread(target=lambda: seen.append(mg.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_retain_grad_keeps_non_leaf_grad():
    x0 = np.array([1.0, -2.0])
    x = mg.Tensor(x0, requires_grad=True)
    h = x * 3
    h.retain_grad()
    k = x * 5  # not retained
    (h * h + k).sum().backward()
    np.testing.assert_allclose(h.grad, 2 * 3 * x0)
    assert k.grad is None
    np.testing.assert_allclose(x.grad, 18 * x0 + 5)


# ---- no_grad on generator functions -------------------------------------------------------
def test_no_grad_on_a_generator_function_covers_its_body_not_the_caller():
    x = leaf(3)
    seen = []

    @mg.no_grad()
    def batches(n):
        for i in range(n):
            received = yield x * float(i)  # computed inside the generator: no graph
            seen.append((received, mg.is_grad_enabled()))
        return "finished"

    gen = batches(3)
    first = next(gen)
    assert not first.requires_grad
    assert mg.is_grad_enabled()  # the caller's code between resumptions records as usual
    assert (x * 2.0).requires_grad
    assert not gen.send("hello").requires_grad
    with pytest.raises(StopIteration) as stop:
        gen.send(None)
        next(gen)
    assert stop.value.value == "finished"
    assert seen == [("hello", False), (None, False), (None, False)]


def test_no_grad_generator_receives_thrown_exceptions_and_closes_in_its_mode():
    log = []

    @mg.no_grad
    def gen():
        try:
            yield 1
        except KeyError:
            log.append(("caught", mg.is_grad_enabled()))
            yield 2
        finally:
            log.append(("closed", mg.is_grad_enabled()))

    g = gen()
    assert next(g) == 1
    assert g.throw(KeyError("k")) == 2
    g.close()
    assert log == [("caught", False), ("closed", False)]
    assert mg.is_grad_enabled()
