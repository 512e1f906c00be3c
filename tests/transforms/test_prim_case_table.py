"""The primitive case table (tests/prim_cases.py) covers the catalogue: every primitive is
applied by a row, or is in ``NO_CASE`` with the reason and the tests that check it instead."""

import numpy as np
import pytest
from functorch_core.ir import primitives as P
from prim_cases import CASES, NO_CASE

import functorch_core as fc


def _applied():
    seen = set()
    for c in CASES:
        for sizes in ((3, 2, 3), (3, 2, 4)):     # both ranks of the elementwise rows
            graph = fc.make_graph(c.f)(*c.args(np.random.default_rng(0), *sizes))
            seen.update(e.prim.name for e in graph.eqns)
    return seen


APPLIED = _applied()


@pytest.mark.parametrize("name", sorted(P.ALL))
def test_every_primitive_has_a_case_or_a_reasoned_exception(name):
    if name in APPLIED:
        assert name not in NO_CASE, f"{name} has a case and an exception"
        return
    assert name in NO_CASE, f"{name}: no row of tests/prim_cases.py applies it, and NO_CASE " \
        "gives no reason"
    assert len(NO_CASE[name]) > 40, f"{name}: the exception needs a reason and where it is tested"


def test_the_exceptions_name_primitives_of_the_catalogue():
    assert set(NO_CASE) <= set(P.ALL)


def test_every_row_is_well_formed():
    for c in CASES:
        assert c.tol >= 0 and (c.grad is None or c.grad.strip()), c.name
        args = c.args(np.random.default_rng(0), 2, 3, 3)
        assert all(isinstance(a, np.ndarray | np.generic) for a in args), c.name
