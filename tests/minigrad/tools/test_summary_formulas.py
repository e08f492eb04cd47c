"""``mg.graph_summary`` shows each op's formula (its docstring's first line) beside its bytes,
found from the node's name: user ops, built-in ops, ops that call ``record`` themselves, and
ops that share a name."""
from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad import F


@mg.op
def cube(x):
    """y = x³.   x̄ = 3 x² ȳ.

    More lines that the summary does not show."""
    return x ** 3, lambda g: 3.0 * x * x * g


def leaf(*shape):
    return mg.Tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True)


def test_each_row_has_its_ops_first_docstring_line_and_the_table_prints_it():
    x = leaf(2, 3)
    y = F.concatenate([cube(x), F.exp(x)], axis=0).sum()
    s = mg.graph_summary(y)
    names = [r[0] for r in s.rows]
    by_name = dict(zip(names, s.formulas, strict=True))
    assert by_name["cube"] == "y = x³.   x̄ = 3 x² ȳ."
    assert by_name["exp"] == "out = e^a.   VJP: ā = g * out."
    assert by_name["concatenate"].startswith("out = the inputs joined along")  # via record
    assert by_name["sum"].startswith("out = Σ_axis a.")
    text = str(s)
    row = next(line for line in text.splitlines() if " cube " in line)
    assert row.endswith("y = x³.   x̄ = 3 x² ȳ.") and "More lines" not in text
    assert text.splitlines()[0].endswith("formula")


def test_ops_sharing_a_name_are_told_apart_by_where_their_vjps_were_written():
    @mg.op(name="shared")
    def double(x):
        """y = 2 x."""
        return 2.0 * x, lambda g: 2.0 * g

    @mg.op(name="shared")
    def triple(x):
        """y = 3 x."""
        return 3.0 * x, lambda g: 3.0 * g

    x = leaf(3)
    assert mg.graph_summary(double(x)).formulas == ["y = 2 x."]
    assert mg.graph_summary(triple(x)).formulas == ["y = 3 x."]
    released = triple(x)
    released.sum().backward()  # the VJPs are gone: nothing tells the two apart any more
    assert mg.graph_summary(released).formulas == ["(one of 2 ops named shared)"]


def test_an_op_without_a_docstring_has_an_empty_formula():
    @mg.op
    def bare(x):
        return x + 1.0, lambda g: g

    assert mg.graph_summary(bare(leaf(2))).formulas == [""]
    assert mg.graph_summary(leaf(2)).formulas == []
