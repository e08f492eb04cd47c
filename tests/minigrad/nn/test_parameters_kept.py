"""Module.parameters() keeps the list it found until a registry changes anywhere: every way
of changing one must be seen, in the module itself or in any descendant."""
import copy
import pickle

import numpy as np
import pytest

from minigrad.nn import Linear, Module, ModuleList, Parameter


class Net(Module):
    def __init__(self):
        super().__init__()
        self.a = Linear(2, 3, rng=np.random.default_rng(0))
        self.blocks = ModuleList([Linear(3, 3, rng=np.random.default_rng(1))])


def ids(module):
    return [id(p) for p in module.parameters()]


def walked(module):
    """The parameters found by named_parameters' own walk (no kept list)."""
    return [id(p) for _, p in module.named_parameters()]


CHANGES = {
    "new parameter in a child": lambda m: setattr(m.a, "extra", Parameter(np.ones(2))),
    "parameter replaced": lambda m: setattr(m.a, "weight", Parameter(np.ones((2, 3)))),
    "parameter set to None": lambda m: setattr(m.a, "bias", None),
    "attribute deleted": lambda m: delattr(m.a, "bias"),
    "child replaced": lambda m: setattr(m, "a", Linear(2, 3)),
    "module appended": lambda m: m.blocks.append(Linear(3, 3)),
    "item assigned": lambda m: m.a._parameters.__setitem__("x", Parameter(np.ones(1))),
    "item deleted": lambda m: m.a._parameters.__delitem__("bias"),
    "pop": lambda m: m.blocks._modules.pop("0"),
    "popitem": lambda m: m._modules.popitem(),
    "clear": lambda m: m.a._parameters.clear(),
    "update": lambda m: m.a._parameters.update(y=Parameter(np.ones(1))),
    "setdefault": lambda m: m.a._parameters.setdefault("z", Parameter(np.ones(1))),
    "move_to_end": lambda m: m.a._parameters.move_to_end("weight"),
    "|=": lambda m: m.a._parameters.__ior__({"w": Parameter(np.ones(1))}),
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_every_change_is_seen(change):
    net = Net()
    before = ids(net)
    assert before == walked(net)
    assert ids(net) == before  # kept
    CHANGES[change](net)
    assert ids(net) == walked(net)
    assert ids(net) != before


def test_a_shared_parameter_is_listed_once_and_tying_is_seen():
    net = Net()
    ids(net)
    net.blocks[0].weight = net.a.weight  # (2, 3) shared with a (3, 3) slot: only identity matters
    assert ids(net) == walked(net)
    assert len(ids(net)) == len(set(ids(net))) == 3


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m))],
                         ids=["deepcopy", "pickle"])
def test_a_copy_lists_its_own_parameters(clone):
    net = Net()
    ids(net)
    other = clone(net)
    assert ids(other) == walked(other)
    assert not set(ids(other)) & set(ids(net))


def test_zero_grad_clears_a_parameter_added_after_the_first_call():
    net = Net()
    net.zero_grad()
    net.a.extra = Parameter(np.ones(2))
    net.a.extra.grad = np.ones(2)
    net.zero_grad()
    assert net.a.extra.grad is None


def test_a_registry_replaced_by_a_plain_dict_stays_watched():
    from collections import OrderedDict
    net = Net()
    ids(net)
    net.a._parameters = OrderedDict()  # (private, but a reset some code does)
    assert ids(net) == walked(net)
    net.a._parameters["late"] = Parameter(np.ones(2))  # a later write into it is seen too
    assert ids(net) == walked(net)
    assert id(net.a._parameters["late"]) in ids(net)
