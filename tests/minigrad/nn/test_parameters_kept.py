"""Module.parameters() keeps the list it found until a registry changes anywhere: every way
of changing one must be seen, in the module itself or in any descendant; a module initialised
again in place (``Module.__init__(m)``, the "reset by calling __init__ again" idiom) drops what
it held from its parent's list; and a walk that runs while another thread changes a registry
(between the registry's new structure token and the change itself) keeps no list under a
token that outlives the change. That window is made deterministic with a key whose hashing
(which the dict does before it stores anything) waits until the other thread has walked the
tree."""
import copy
import pickle
import threading

import numpy as np
import pytest

from minigrad.nn import Linear, Module, ModuleList, Parameter, Sequential


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


# ---- a module initialised again in place ----------------------------------------------------
def test_a_child_initialised_again_drops_its_parameters_from_the_parents_list():
    child = Module()
    child.w = Parameter(np.ones(2))
    parent = Sequential(child, Linear(2, 2, rng=np.random.default_rng(0)))
    assert len(list(parent.parameters())) == 3  # kept from here on
    Module.__init__(child)  # new empty registries: child holds nothing now
    assert len(walked(parent)) == 2
    assert [id(p) for p in parent.parameters()] == walked(parent)
    parent.zero_grad()  # (and what zero_grad walks is that list)


# ---- a registry changed by another thread during a walk -------------------------------------
class OneLinear(Module):
    def __init__(self):
        super().__init__()
        self.a = Linear(2, 3, rng=np.random.default_rng(0))


def test_a_walk_during_another_threads_change_keeps_no_stale_list():
    net = OneLinear()
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
