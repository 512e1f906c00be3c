"""Every primitive of the ``ir/primitives`` catalogue has a device lowering in the cuda
backend: fused by ``emit`` (its op tables, read here, not listed), a structural kernel
(``indexing.RENDERED``), a product, a named array-module call (``calls.CALLS``), or an
explicit host exception with its reason (``calls.HOST``). A new primitive with none of
these fails ``test_every_primitive_lowers_on_the_device``.

``ELEMENTWISE_GAP`` lists the elementwise primitives emit's tables do not render yet
(none now): each would be an xfail(strict=True), so the list can only shrink. Needs
numba-cuda only to import the backend's modules (no simulator run).
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest

pytest.importorskip("numba.cuda")

from functorch_core.backends.cuda import calls, emit, indexing, runtime, scalar
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Primitive

ELEMENTWISE_GAP: set = set()


def emitted():
    """The primitives in emit's and scalar's op tables (every module-level dict or set of
    primitives)."""
    return {p for m in (emit, scalar) for v in vars(m).values()
            if isinstance(v, (dict, set, frozenset)) for p in v if isinstance(p, Primitive)}


def lowering(prim):
    if prim in emitted() or prim in runtime.FUSED:
        return "kernel"
    if prim in indexing.RENDERED:
        return "indexing"
    if prim in runtime.PRODUCTS or prim in calls.CALLS:
        return "call"
    if prim in calls.HOST:
        return "host"
    return None


def _params():
    for name, prim in sorted(P.ALL.items()):
        marks = [pytest.mark.xfail(strict=True, reason="elementwise: not in emit's tables yet")
                 ] if name in ELEMENTWISE_GAP else []
        yield pytest.param(prim, id=name, marks=marks)


@pytest.mark.parametrize("prim", list(_params()))
def test_every_primitive_lowers_on_the_device(prim):
    assert lowering(prim) is not None, \
        f"{prim.name} ({prim.family}): no cuda kernel, named call or host reason"


def test_the_gap_list_holds_only_elementwise_primitives():
    assert ELEMENTWISE_GAP <= set(P.ALL)
    assert {P.ALL[n].family for n in ELEMENTWISE_GAP} <= {"unary", "binary"}


def test_host_exceptions_are_few_and_named():
    assert set(calls.HOST) == {P.spence, P.bessel_jv, P.bessel_yn, P.bessel_iv, P.bessel_ive,
                               P.bessel_kv, P.bessel_kve,
                               P.setitem, P.sqrtm, P.sylvester,
                               P.igamma_grad_a, P.igamma_hess_a, P.betainc_grad,
                               *P.COLLECTIVES}
    assert all(len(why) > 40 for why in calls.HOST.values())
    assert not set(calls.HOST) & (set(calls.CALLS) | set(indexing.RENDERED) | emitted())
    # complex operands of named calls CuPy has no complex loop for
    assert set(calls.COMPLEX_HOST) == {P.erf, P.erfc, P.erfcx} <= set(calls.CALLS)
    assert all(len(why) > 40 for why in calls.COMPLEX_HOST.values())


def test_the_runtime_agrees_with_the_tables():
    """runtime.lowering of a real equation picks the table's kind (a cumsum, a sort, a
    spence); an op/dtype pair the fused kernels lack (complex exp2) goes to the host with the
    reason."""
    from graph_builder import Builder
    b = Builder()
    x = b.input((3, 3), "float64")
    h = b.input((3,), "complex64")
    b(P.cumsum, x, axis=0, reverse=False)
    b(P.sort, x, dimension=0, num_keys=1)
    b(P.spence, x)
    b(P.exp, x)
    b(P.exp2, h)
    kinds = [runtime.lowering(e) for e in b.eqns]
    assert [k for k, _ in kinds] == ["indexing", "call", "host", "kernel", "host"]
    assert kinds[2][1].startswith("spence: cupyx.scipy.special has no spence")
    assert "exp2" in kinds[4][1]
