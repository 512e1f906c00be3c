"""Reduced-precision float32 products: the ``precision`` param of ``dot_general`` and
``conv_general_dilated`` and the one pass that expands it into plain products.

A product equation carries ``precision`` only when it is not ``"highest"`` (plain float32,
the absent param); the values are torch's names:

- ``"medium"``: both operands rounded to bfloat16 (``reduce_precision`` 8, 7), the product
  and its accumulation in float32;
- ``"high"``: the three-term bfloat16 split ``a = a_hi + a_lo``, ``a_hi = bf16(a)``,
  ``a_lo = bf16(a - a_hi)``: ``a_hi b_lo + a_lo b_hi + a_hi b_hi`` in float32 (the small
  terms first), near float32's accuracy.

:func:`reduced_product` is the formula, over whatever implements a product, the rounding,
``sub`` and ``add`` (NumPy functions in the interpreter, equation builders here);
:func:`expand_precision` rewrites a graph's reduced-precision products into
``reduce_precision`` and plain products, so a compiling backend needs nothing of its own.
"""

from __future__ import annotations

from ..core import Eqn, Graph, Var
from ..primitives import add, conv_general_dilated, dot_general, reduce_precision, sub

__all__ = ["PRECISIONS", "BF16_BITS", "PRODUCTS", "reduced_product", "applies",
           "expand_precision"]

PRECISIONS = ("highest", "high", "medium")
BF16_BITS = {"exponent_bits": 8, "mantissa_bits": 7}
PRODUCTS = (dot_general, conv_general_dilated)


def reduced_product(product, round_bf16, minus, plus, lhs, rhs, precision):
    """``product(lhs, rhs)`` at ``precision`` (``"medium"`` or ``"high"``), computed with
    the callables given: ``round_bf16(x)``, ``minus(x, y)``, ``plus(x, y)``."""
    lhs_hi, rhs_hi = round_bf16(lhs), round_bf16(rhs)
    if precision == "medium":
        return product(lhs_hi, rhs_hi)
    if precision != "high":
        raise ValueError(f"precision {precision!r} is not one of {PRECISIONS}")
    lhs_lo, rhs_lo = round_bf16(minus(lhs, lhs_hi)), round_bf16(minus(rhs, rhs_hi))
    small = plus(product(lhs_hi, rhs_lo), product(lhs_lo, rhs_hi))
    return plus(small, product(lhs_hi, rhs_hi))


def applies(eqn) -> bool:
    """Whether ``eqn`` is a product whose precision is reduced."""
    return eqn.prim in PRODUCTS and "precision" in eqn.params


def expand_precision(graph: Graph) -> Graph:
    """``graph`` with every reduced-precision product (top level) as ``reduce_precision``,
    ``sub``, plain products and ``add``s; the same inputs and outputs. Backends run it on
    the graphs they compile (a loop body is compiled, hence expanded, on its own)."""
    if not any(applies(e) for e in graph.eqns):
        return graph
    eqns: list[Eqn] = []
    for eqn in graph.eqns:
        if applies(eqn):
            _expand(eqn, eqns)
        else:
            eqns.append(eqn)
    return Graph(list(graph.inputs), eqns, list(graph.outputs))


def _expand(eqn: Eqn, eqns: list[Eqn]) -> None:
    """Append the equations of one reduced-precision product to ``eqns``; the last of them
    writes the product's own result."""
    params = {k: v for k, v in eqn.params.items() if k != "precision"}
    out = eqn.outputs[0]

    def emit(prim, inputs, aval, **kw):
        v = Var(aval)
        eqns.append(Eqn(prim, tuple(inputs), (v,), kw, eqn.source))
        return v

    reduced_product(lambda a, b: emit(eqn.prim, (a, b), out.aval, **params),
                    lambda x: emit(reduce_precision, (x,), x.aval, **BF16_BITS),
                    lambda x, y: emit(sub, (x, y), x.aval),
                    lambda x, y: emit(add, (x, y), x.aval), *eqn.inputs,
                    eqn.params["precision"])
    last = eqns.pop()
    eqns.append(Eqn(last.prim, last.inputs, (out,), last.params, last.source))
