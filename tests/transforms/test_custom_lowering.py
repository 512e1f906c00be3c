"""custom_jvp / custom_vjp / stop_gradient under jit: once no transform is left their
calls are inlined (native kernels, no interpreter fallback), while a transform applied
inside or outside the jit still uses the user's rule."""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends.planning.plan import Fallback
from functorch_core.ir import passes
from functorch_core.ir import primitives as P

import functorch_core as fc
import functorch_core.numpy as fnp


@fc.custom_vjp
def scaled_sin(x):
    return fnp.sin(x)


# a deliberately wrong gradient: 100 * x * g instead of cos(x) * g
scaled_sin.defvjp(lambda x: (fnp.sin(x), x), lambda x, g: (100.0 * x * g,))


@fc.custom_jvp
def softplus(x):
    return fnp.log1p(fnp.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), 7.0 * x * t         # deliberately wrong: 7 x instead of sigmoid(x)


def f(x):
    return fnp.sum(scaled_sin(x) * 2 + softplus(x) + fc.stop_gradient(x) ** 2 * x)


def reference(x):
    return np.sum(np.sin(x) * 2 + np.log1p(np.exp(x)) + x ** 3)


def rule_grad(x):
    return 2 * 100.0 * x + 7.0 * x + x ** 2     # the rules, and stop_gradient's zero


def _plans(jitted):
    return [[type(s).__name__ for s in c.run.plan.steps] for c in jitted.cache.values()]


X = np.linspace(-1.5, 2.0, 7)


def test_custom_calls_and_stop_gradient_run_as_native_kernels_under_jit():
    jf = fc.jit(f)
    np.testing.assert_allclose(jf(X), reference(X), rtol=1e-13)
    (plan,) = _plans(jf)
    assert plan and "Fallback" not in plan


def test_jit_of_grad_still_uses_the_custom_rules():
    jg = fc.jit(fc.grad(f))
    np.testing.assert_allclose(jg(X), rule_grad(X), rtol=1e-13)
    np.testing.assert_allclose(jg(X), fc.grad(f)(X), rtol=1e-13)
    (plan,) = _plans(jg)
    assert plan and "Fallback" not in plan


def test_grad_and_vmap_of_jit_still_use_the_custom_rules():
    jf = fc.jit(f)
    jf(X)                                   # compiled (and lowered) first
    np.testing.assert_allclose(fc.grad(jf)(X), rule_grad(X), rtol=1e-13)
    rows = np.stack([X, X[::-1]])
    np.testing.assert_allclose(fc.vmap(fc.grad(jf))(rows),
                               np.stack([rule_grad(X), rule_grad(X[::-1])]), rtol=1e-13)


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_jit_of_jvp_uses_the_custom_jvp_rule(backend):
    g = fc.jit(lambda x, t: fc.jvp(softplus, (x,), (t,))[1], backend=backend)
    np.testing.assert_allclose(g(X, np.ones_like(X)), 7.0 * X, rtol=1e-13)


def test_lower_custom_inlines_nested_calls_and_leaves_other_graphs_alone():
    inner = fc.custom_jvp(lambda x: fnp.exp(x) * 2)
    inner.defjvp(lambda p, t: (inner(*p), t[0]))
    outer = fc.custom_vjp(lambda x: inner(x) + 1)
    outer.defvjp(lambda x: (outer(x), None), lambda _, g: (g,))
    graph = fc.make_graph(lambda x: fc.stop_gradient(outer(x)))(X)
    lowered = passes.lower_custom(passes.simplify(graph))
    prims = {e.prim for e in lowered.eqns}
    assert not prims & {P.custom_jvp_call, P.custom_vjp_call, P.call}
    plain = passes.simplify(fc.make_graph(lambda x: fnp.exp(x) * 2)(X))
    assert passes.lower_custom(plain) is plain
    exe = fc.jit(lambda x: fc.stop_gradient(outer(x)))
    np.testing.assert_allclose(exe(X), np.exp(X) * 2 + 1, rtol=1e-15)
    assert not any(isinstance(s, Fallback)
                   for c in exe.cache.values() for s in c.run.plan.steps)
