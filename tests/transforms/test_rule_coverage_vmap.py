"""Every primitive has a batching rule, or a reason why the pass never sees it batched."""

import numpy as np
import pytest
from functorch_core.ir import Primitive
from functorch_core.ir import primitives as P
from prim_cases import CASES

import functorch_core as fc
from functorch_core.transforms.batching import NOT_BATCHED, RULES, batch_graph

# Exceptions, with the reason a rule is not needed (NOT_BATCHED holds the same text).
EXPECTED_EXCEPTIONS = {
    "iota": "no operands: replayed as is",
    "call": "inlined before any transform",
    "setitem": "functionalized before any transform",
    "custom_lin": "only forward-mode differentiation evaluates it (custom_vjp forbids that)",
    "axis_index": "no operands: replayed as is (vmap of its axis: the named rule's iota)",
}

# Rules exercised against loop-and-stack by tests/prim_cases.py's rows (or, for the
# custom-rule primitives, by the autodiff tests that own them).
TESTED_ELSEWHERE = {"custom_jvp_call", "custom_vjp_call",
                    "threefry2x32",   # tests/api/test_random.py: vmap over keys == loop-and-stack
                    # loop-and-stack over every operand in tests/lax/test_conv.py and
                    # tests/lax/test_reduce_window.py
                    "conv_general_dilated", "reduce_window_sum", "reduce_window_max",
                    "reduce_window_min", "select_and_gather_add", "select_and_scatter_add",
                    "fft",   # tests/linalg_fft/test_fft.py: vmap over every axis == loop-and-stack
                    # tests/linalg_fft/test_linalg.py: every operand batched or not, loop-and-stack
                    "solve", "triangular_solve", "det", "slogdet", "cholesky", "qr", "svd",
                    "eigh", "eig", "lu", "lu_pivots_to_permutation", "slogdet_inv_t",
                    "sqrtm", "sylvester",   # tests/linalg_fft/test_linalg_sqrtm.py
                    "betainc",   # tests/special/test_scipy_special.py
                    "betainc_grad",   # tests/special/test_betainc_grad.py
                    # tests/distributed/test_collective_prims.py: vmap over another axis and
                    # over the named axis itself against loop-and-stack
                    "all_reduce", "all_gather", "reduce_scatter"}


@pytest.mark.parametrize("prim", list(P.ALL.values()), ids=lambda p: p.name)
def test_every_primitive_has_a_batching_rule(prim):
    if prim in RULES:
        assert prim not in NOT_BATCHED, f"{prim.name} has a rule and an exception"
        return
    assert prim in NOT_BATCHED, f"no batching rule for {prim.name}"
    assert prim.name in EXPECTED_EXCEPTIONS, f"unexpected exception {prim.name}"
    assert len(NOT_BATCHED[prim]) > 20, "an exception needs a reason"


def test_the_exceptions_are_the_expected_ones():
    assert {p.name for p in NOT_BATCHED} == set(EXPECTED_EXCEPTIONS)


def test_every_rule_is_exercised_by_the_vmap_op_table():
    seen = set()
    for c in CASES:
        graph = fc.make_graph(c.f)(*c.make(np.random.default_rng(0), 3, 2, 4))
        seen.update(e.prim.name for e in graph.eqns)
    from test_control_flow import VMAP_CASES, _prims  # cond, while, scan: loop-and-stack
    for c in VMAP_CASES:
        one = [a if d is None else np.take(a, 0, axis=d)
               for a, d in zip(c.args, c.in_dims, strict=True)]
        seen.update(_prims(fc.make_graph(c.f)(*one)))
    families = {"unary", "binary", "reduction", "cumulative", "arg_reduction"}
    missing = {p.name for p in RULES if p.family not in families} - seen - TESTED_ELSEWHERE
    assert not missing, f"batching rules without a loop-and-stack test: {sorted(missing)}"
    for family in families:
        assert any(P.ALL[n].family == family for n in seen), f"no test of family {family}"


def test_iota_passes_through_unbatched():
    graph = fc.make_graph(lambda x: P.add.bind(x, P.iota.bind(
        dtype=np.dtype(np.float64), shape=(3,), dimension=0)))(np.ones(3))
    batched, _ = batch_graph(graph, [0], 4, [0])
    iotas = [e for e in batched.eqns if e.prim is P.iota]
    assert len(iotas) == 1 and iotas[0].params["shape"] == (3,)


def test_a_primitive_without_a_rule_is_named():
    fake = Primitive("fake_double", lambda x: [x], impl=lambda x: 2 * x)
    with pytest.raises(NotImplementedError, match="no batching rule for fake_double"):
        fc.vmap(lambda x: fake.bind(x))(np.ones((2, 3)))
    np.testing.assert_array_equal(fc.vmap(lambda x, y: fnp_add(x, fake.bind(y)),
                                          in_dims=(0, None))(np.ones((2, 3)), np.ones(3)),
                                  np.full((2, 3), 3.0))


def fnp_add(x, y):
    return fc.numpy.add(x, y)
