"""Every primitive has a jvp rule, and every linear one a transpose rule (or a reason why not)."""

import numpy as np
import pytest
from functorch_core.ir import AbstractArray, Primitive
from functorch_core.ir import primitives as P

import functorch_core as fc
from functorch_core.transforms.jvp import JVP, MissingRuleError
from functorch_core.transforms.transpose import TRANSPOSE

NO_JVP = {
    P.call: "call equations are inlined (passes.inline) before any transform sees the graph",
    P.setitem: "setitem is rewritten into pure updates by functionalize before any transform",
}

# The primitives jvp rules apply to tangents (their specs name linear operands): exactly
# these need transpose rules.
LINEAR = {p for p in P.ALL.values() if p.spec.is_linear}
NOT_LINEAR_REASON = {
    "unary": "a non-linear elementwise function: its jvp multiplies the tangent by a factor",
    "binary": "non-linear, or integer/bool valued (comparisons, bitwise): zero tangent",
    "creation": "iota has no operands, so it never touches a tangent",
    "reduction": "reduce_max/min/prod differentiate through masks, sums and products",
    "arg_reduction": "integer valued: zero tangent",
    "cumulative": "cumprod/cummax/cummin differentiate through masks, sums and products",
    "sort": "differentiates through a gather with the sorting permutation",
    "random": "threefry2x32 is integer valued: zero tangent",
    "custom": "user rules: custom_jvp_call/custom_vjp_call are replaced by the rules' output",
    "call": "inlined before any transform",
    "mutation": "functionalized before any transform",
    "window": "reduce_window_max/min differentiate through select_and_gather_add",
    "special3": "betainc is non-linear: its jvp multiplies the tangent by the density",
    "collective": "axis_index has no operands (an integer position); all_reduce and "
                  "reduce_scatter are linear only with op 'sum' (their specs say BY_PARAMS)",
    "linalg": "factorizations and determinants: their jvp rules are matrix identities "
              "over solve and products",
}


@pytest.mark.parametrize("prim", list(P.ALL.values()), ids=lambda p: p.name)
def test_every_primitive_has_a_jvp_rule(prim):
    assert prim in JVP or prim in NO_JVP, f"no jvp rule for {prim.name}"


@pytest.mark.parametrize("prim", list(P.ALL.values()), ids=lambda p: p.name)
def test_linear_primitives_have_transpose_rules(prim):
    if prim in LINEAR:
        assert prim in TRANSPOSE, f"no transpose rule for linear primitive {prim.name}"
    else:
        assert prim not in TRANSPOSE, f"{prim.name} has a transpose rule but its spec names " \
            "no linear operand"
        assert prim.family in NOT_LINEAR_REASON


def test_missing_rule_names_the_primitive_and_the_transform():
    fake = Primitive("fake_square", lambda x: [x], impl=lambda x: x * x)
    with pytest.raises(MissingRuleError, match="jvp: primitive 'fake_square'"):
        fc.grad(lambda x: fake.bind(x))(2.0)
    with pytest.raises(MissingRuleError, match="jvp: primitive 'fake_square'"):
        fc.jvp(lambda x: fake.bind(x), (2.0,), (1.0,))


def test_missing_transpose_rule_names_the_primitive():
    fake = Primitive("fake_linear", lambda x: [AbstractArray(x.shape, x.dtype)],
                     impl=lambda x: np.asarray(x) * 2)
    JVP.register(fake, lambda primals, tangents: (fake.bind(*primals), fake.bind(*tangents)))
    try:
        assert fc.jvp(lambda x: fake.bind(x), (1.0,), (1.0,))[1] == 2.0
        with pytest.raises(MissingRuleError, match="vjp: primitive 'fake_linear'"):
            fc.grad(lambda x: fake.bind(x))(1.0)
    finally:
        JVP.unregister(fake)
