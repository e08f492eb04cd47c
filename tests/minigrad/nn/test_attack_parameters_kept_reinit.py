"""Module.parameters()'s kept list and a module initialised again in place
(``Module.__init__(m)``, which gives ``m`` new, empty registries: the "reset by calling
__init__ again" idiom): a parent's parameters() must stop listing what ``m`` held."""
import numpy as np

from minigrad.nn import Linear, Module, Parameter, Sequential


def walked(module):
    """The parameters found by named_parameters' own walk (no kept list)."""
    return [id(p) for _, p in module.named_parameters()]


def test_a_child_initialised_again_drops_its_parameters_from_the_parents_list():
    child = Module()
    child.w = Parameter(np.ones(2))
    parent = Sequential(child, Linear(2, 2, rng=np.random.default_rng(0)))
    assert len(list(parent.parameters())) == 3  # kept from here on
    Module.__init__(child)  # new empty registries: child holds nothing now
    assert len(walked(parent)) == 2
    assert [id(p) for p in parent.parameters()] == walked(parent)
    parent.zero_grad()  # (and what zero_grad walks is that list)
