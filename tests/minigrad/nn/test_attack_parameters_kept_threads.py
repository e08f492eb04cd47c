"""Module.parameters()'s kept list and a registry changed by another thread: a walk that runs
while the change is under way (between the registry's new structure token and the change
itself) must not keep what it found under a token that outlives the change.

The window is made deterministic with a key whose hashing (which the dict does before it
stores anything) waits until the other thread has walked the tree."""
from __future__ import annotations

import threading

import numpy as np

from minigrad.nn import Linear, Module, Parameter


class Net(Module):
    def __init__(self):
        super().__init__()
        self.a = Linear(2, 3, rng=np.random.default_rng(0))


def walked(module):
    """The parameters found by named_parameters' own walk (no kept list)."""
    return [id(p) for _, p in module.named_parameters()]


def test_a_walk_during_another_threads_change_keeps_no_stale_list():
    net = Net()
    in_change, walked_meanwhile = threading.Event(), threading.Event()

    class SlowKey(str):
        def __hash__(self):  # runs inside the registry's __setitem__, before the store
            in_change.set()
            assert walked_meanwhile.wait(10)
            return str.__hash__(self)

    def change():
        net.a._parameters[SlowKey("extra")] = Parameter(np.ones(2))

    worker = threading.Thread(target=change)
    worker.start()
    assert in_change.wait(10)
    during = [id(p) for p in net.parameters()]  # the tree as it was: the change is not in
    walked_meanwhile.set()
    worker.join(10)
    assert not worker.is_alive()
    assert len(during) == 2
    assert [id(p) for p in net.parameters()] == walked(net)
    assert len(walked(net)) == 3
