"""The primitive-level case table: one row per (primitive, variant), read by every driver.

``make(rng, m, n, k)`` draws one example's arguments (all arrays or NumPy scalars, so any
of them may be batched along any axis) for the sizes ``m, n, k``; ``f`` applies the
primitive(s) to them. The drivers:

- ``tests/transforms/test_autodiff.py``: ``check_grads`` (forward and reverse, order 2) in
  the inexact arguments (the others are held fixed), unless ``grad`` gives the reason not;
- ``tests/transforms/test_vmap.py``: ``vmap`` against loop-and-stack over every in_dims
  combination and drawn sizes/out_dims;
- ``tests/backends/llvm/test_llvm_backend.py`` and ``tests/backends/cuda/test_cuda_kernels.py``:
  the traced graph compiled by the backend against the interpreter, within ``tol``;
- ``tests/transforms/test_prim_case_table.py``: every primitive of the catalogue is applied
  by some row or is in ``NO_CASE`` with the reason and the tests that cover it instead.

Domains: inputs are drawn inside the smooth domain of each function with finite-difference
steps (1e-4) far from its kinks and ties. Linearity is not restated here: it is the spec's
(``p.spec.is_linear``), checked by tests/transforms/test_rule_coverage_autodiff.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from functorch_core.ir import primitives as P
from functorch_core.ir.pytree import tree_flatten

import functorch_core as fc
import functorch_core.numpy as fnp

F64, F32, I64, I32 = (np.dtype(t) for t in (np.float64, np.float32, np.int64, np.int32))

# grad exceptions: why check_grads does not apply to a row
INTEGER_OUTPUT = "not differentiable: integer or bool output (its tangent is a float0 zero)"
PIECEWISE_CONSTANT = ("not differentiable at the jumps and zero elsewhere: finite differences "
                      "only see the jumps")
INTEGER_OPERANDS = "not differentiable: integer or bool operands only"


@dataclass(frozen=True)
class Case:
    """``tol``: the backends' error bound against the interpreter in units of the result
    dtype's eps, relative to max(1, |largest result|); 0 for exact operations. Elementwise
    libm functions: 4 (each side within 2 ulp of the correctly rounded value); sums of
    ``t`` terms: ``4 t`` (the inputs are at most a few units in magnitude).
    ``grad_order``: the order check_grads checks (2 unless a row says why not)."""

    name: str
    f: Any
    make: Any
    grad: str | None = None
    tol: float = 0.0
    grad_order: int = 2

    def args(self, rng, m, n, k):
        return self.make(rng, m, n, k)


def _main(m, n, k):
    """The operand shape of the elementwise, reduction and layout rows: rank 1 or 2 by k's
    parity, so that drawn sizes give both."""
    return (m,) if k % 2 == 0 else (m, n)


def _u(rng, shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape)


def _away_from_zero(rng, shape):
    return rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def _distinct(rng, shape):
    """Values with no ties (max/min/sort/cummax are smooth there)."""
    size = int(np.prod(shape))
    return (rng.permutation(size) * 0.37 + rng.uniform(0, 0.1, size) - size * 0.2).reshape(shape)


def normal(*shape):
    return lambda rng, m, n, k: rng.standard_normal(shape)


def _row(name, f, *makers, grad=None, tol=0.0):
    """A row whose ``makers`` give one argument each: ``maker(rng, m, n, k)``."""
    return Case(name, f, lambda rng, m, n, k: [mk(rng, m, n, k) for mk in makers], grad, tol)


def uniform(lo=-2.0, hi=2.0):
    return lambda rng, m, n, k: _u(rng, _main(m, n, k), lo, hi)


def away():
    return lambda rng, m, n, k: _away_from_zero(rng, _main(m, n, k))


def sized(fn):
    """A maker from ``fn(rng, m, n, k)`` (the sizes read directly)."""
    return fn


def ints(lo, hi, *shape):
    return lambda rng, m, n, k: rng.integers(lo, hi, shape)


def dn(lc, rc, lb=(), rb=()):
    return ((lc, rc), (lb, rb))


def _sum(x):
    return P.reduce_sum.bind(x, axes=tuple(range(x.ndim)))


# --- elementwise: (primitive, domain) --------------------------------------------------

_IEEE_EXACT = {"neg", "sqrt"}     # the others are libm/SciPy approximations: 2 ulp each


def _unary_rows():
    # every unary primitive whose spec gives the domain where it is smooth (ir/specs.py)
    rows = [_row(p.name, p.bind, uniform(*p.spec.domain),
                 tol=0.0 if p.name in _IEEE_EXACT else 4.0)
            for p in P.ALL.values() if p.family == "unary" and p.spec.domain is not None]
    rows.append(_row("abs", P.abs.bind, away()))
    rows += [_row(name, getattr(P, name).bind, away(), grad=PIECEWISE_CONSTANT)
             for name in ("sign", "floor", "ceil", "round")]
    rows.append(_row("is_finite", P.is_finite.bind, uniform(), grad=INTEGER_OUTPUT))
    rows.append(_row("not", P.not_.bind, ints(-5, 5, 3, 2), grad=INTEGER_OPERANDS))
    rows.append(_row("polygamma", lambda x: P.polygamma.bind(x, order=1), uniform(0.5, 3),
                     tol=16.0))
    # 40 mantissa bits of float64: finite differences see the slope 1 its (JAX's linear)
    # rules give, to 2^-40 (the exact bf16/f16 roundings: tests/lax/test_precision.py)
    rows.append(_row("reduce_precision", lambda x: P.reduce_precision.bind(
        x, exponent_bits=11, mantissa_bits=40), uniform()))
    return rows


def _binary(name, x=(-2, 2), y=(-2, 2), tol=0.0, grad=None, grad_order=2):
    row = _row(name, getattr(P, name.removesuffix("_order")).bind, uniform(*x), uniform(*y),
               grad=grad, tol=tol)
    return replace(row, grad_order=grad_order)


# series and continued fractions whose second derivatives take seconds per point: order 2
# is checked in tests/special/test_zeta_grad.py, test_igamma_grad.py, test_betainc_grad.py
SLOW_SECOND_ORDER = 1


def _distinct_pair(prim):
    def make(rng, m, n, k):
        x, y = _distinct(rng, (2, *_main(m, n, k)))
        return [x, y]
    return Case(prim.name, prim.bind, make)


def _with_order(prim, v, z):
    return prim.bind(np.float64(v), z)


def _binary_rows():
    return [
        _binary("add"), _binary("sub"), _binary("mul"),
        _row("div", P.div.bind, uniform(), away()),
        _binary("pow", (0.3, 2), (-2, 2), tol=4.0),
        _distinct_pair(P.max), _distinct_pair(P.min),
        _binary("atan2", (0.3, 2), (0.3, 2), tol=4.0),
        _row("copysign", P.copysign.bind, away(), away()),
        _binary("rem", (0.2, 2.8), (3, 3)),
        _row("floor_div", P.floor_div.bind, away(), uniform(0.7, 0.9), grad=PIECEWISE_CONSTANT),
        _binary("complex"),
        _binary("zeta", (1.5, 4), (0.5, 2), tol=16.0, grad_order=SLOW_SECOND_ORDER),
        _binary("igamma", (0.5, 3), (0.5, 3), tol=16.0, grad_order=SLOW_SECOND_ORDER),
        _binary("igammac", (0.5, 3), (0.5, 3), tol=16.0, grad_order=SLOW_SECOND_ORDER),
        _row("bessel_jv", lambda z: P.bessel_jv.bind(np.float64(1.5), z), uniform(0.5, 3),
             tol=16.0),
        *[_row(name, functools.partial(_with_order, getattr(P, name), v), uniform(0.5, 3),
               tol=16.0)
          for name, v in (("bessel_yn", 2.0), ("bessel_iv", 1.5), ("bessel_ive", 1.5),
                          ("bessel_kv", 1.5), ("bessel_kve", 1.5))],
        _binary("bessel_jv_order", (0.5, 2), (0.5, 3), tol=16.0,
                grad="the derivative in the order v is not implemented (bessel_jv's jvp rule "
                     "raises NotImplementedError naming it); the z derivative: bessel_jv"),
        *[_row(name, getattr(P, name + "_" if name in ("and", "or") else name).bind,
               ints(-5, 5, 3, 2), ints(-5, 5, 3, 2), grad=INTEGER_OPERANDS)
          for name in ("and", "or", "xor")],
        *[_row(name, getattr(P, name).bind, uniform(), uniform(), grad=INTEGER_OUTPUT)
          for name in ("eq", "ne", "lt", "le", "gt", "ge")],
        replace(_row("betainc", P.betainc.bind, uniform(0.5, 3), uniform(0.5, 3),
                     uniform(0.2, 0.8), tol=64.0), grad_order=SLOW_SECOND_ORDER),
    ]


def _complex_chain(x):
    z = P.mul.bind(P.convert.bind(x, new_dtype=np.dtype(np.complex128)), np.complex128(1 + 2j))
    w = P.mul.bind(P.exp.bind(z), P.conj.bind(z))
    return P.add.bind(P.real.bind(w), P.mul.bind(P.imag.bind(w), P.abs.bind(w)))


def _argmax_weight(x):
    # integer-valued intermediates have zero derivative but must not break anything
    i = P.argmax.bind(x, axis=0, index_dtype=I64)
    return P.mul.bind(x, P.convert.bind(_sum(i), new_dtype=F64))


def _sort_pair(x, y):   # sort y along with the keys x
    keys, vals = P.sort.bind(x, y, dimension=x.ndim - 1, num_keys=1)
    return P.add.bind(keys, P.mul.bind(vals, vals))


def _mixed_rows():
    distinct = sized(lambda rng, m, n, k: _distinct(rng, _main(m, n, k)))
    return [
        _row("select_full", lambda p, x, y: P.select.bind(P.gt.bind(p, np.float64(0)), x, y),
             away(), uniform(), uniform()),
        _row("select", lambda p, a, b: P.select.bind(P.gt.bind(p, np.float64(0)), a, b),
             sized(lambda rng, m, n, k: _away_from_zero(rng, (m, n))),
             sized(lambda rng, m, n, k: rng.standard_normal((m, n))), normal()),
        _row("scalar_operand", lambda x, s: P.mul.bind(P.sin.bind(x), s), uniform(),
             normal(), tol=4.0),
        _row("add_scalar", lambda x, s: P.add.bind(x, s), uniform(), normal()),
        _row("mul_weak", lambda x: fnp.multiply(x, 2.5), uniform()),
        _row("convert_f32", lambda x: P.convert.bind(x, new_dtype=F32), uniform(),
             grad="float32 rounding of the output: finite differences at float64 steps see "
                  "only its rounding error (tests/transforms/test_autodiff.py's convert test "
                  "checks the derivative exactly)"),
        _row("iota_inside", lambda x: P.add.bind(x, P.convert.bind(
            P.iota.bind(dtype=I64, shape=x.shape, dimension=0), new_dtype=F64)), uniform()),
        _row("argmax_weight", _argmax_weight, distinct),
        _row("argmax", lambda x: P.argmax.bind(x, axis=x.ndim - 1, index_dtype=I32),
             uniform(), grad=INTEGER_OUTPUT),
        _row("argmin", lambda x: P.argmin.bind(x, axis=0, index_dtype=I64), uniform(),
             grad=INTEGER_OUTPUT),
        _row("complex_chain", _complex_chain, uniform(-1, 1), tol=16.0),
        _row("sort", _sort_pair, distinct, uniform()),
        _row("sort_int_keys", lambda x, y: P.sort.bind(x, y, dimension=1, num_keys=1),
             sized(lambda rng, m, n, k: rng.integers(0, 3, (m, n))),
             sized(lambda rng, m, n, k: rng.standard_normal((m, n)))),
    ]


# --- reductions and scans ------------------------------------------------------------

def _reduction(prim, distinct=False):
    def f(x):
        return prim.bind(x, axes=(0,) if x.ndim == 1 else (0, x.ndim - 1))
    values = (sized(lambda rng, m, n, k: _distinct(rng, _main(m, n, k))) if distinct
              else uniform(0.5, 1.5))
    return _row(prim.name, f, values, tol=0.0 if distinct else 64.0)


def _cumulative(prim, reverse, distinct=False):
    def f(x):
        return prim.bind(x, axis=x.ndim - 1, reverse=reverse)
    values = (sized(lambda rng, m, n, k: _distinct(rng, _main(m, n, k))) if distinct
              else uniform(0.5, 1.5))
    return _row(f"{prim.name}{'_reverse' if reverse else ''}", f, values,
                tol=0.0 if distinct else 64.0)


def _reduction_rows():
    rows = [_reduction(P.reduce_sum), _reduction(P.reduce_prod),
            _reduction(P.reduce_max, True), _reduction(P.reduce_min, True)]
    for reverse in (False, True):
        rows += [_cumulative(P.cumsum, reverse), _cumulative(P.cumprod, reverse),
                 _cumulative(P.cummax, reverse, True), _cumulative(P.cummin, reverse, True)]
    return rows + [
        _row("reduce_sum_3d", lambda x: P.reduce_sum.bind(x, axes=(1,)),
             sized(lambda rng, m, n, k: rng.standard_normal((m, n, k))), tol=64.0),
        _row("reduce_max_3d", lambda x: P.reduce_max.bind(x, axes=(0, 2)),
             sized(lambda rng, m, n, k: rng.standard_normal((m, n, k)))),
        _row("cumsum_axis0_reverse", lambda x: P.cumsum.bind(x, axis=0, reverse=True),
             sized(lambda rng, m, n, k: rng.standard_normal((m, n))), tol=64.0),
        _row("cummax_axis1", lambda x: P.cummax.bind(x, axis=1, reverse=False),
             sized(lambda rng, m, n, k: rng.standard_normal((m, n)))),
    ]


# --- layout ------------------------------------------------------------------------------

def _layout_rows():
    mn = sized(lambda rng, m, n, k: rng.standard_normal((m, n)))
    mnk = sized(lambda rng, m, n, k: rng.standard_normal((m, n, k)))
    return [
        _row("broadcast_in_dim", lambda x: P.broadcast_in_dim.bind(
            x, shape=(2, *x.shape), broadcast_dimensions=tuple(range(1, x.ndim + 1))),
            uniform()),
        _row("reshape", lambda x: P.reshape.bind(x, new_sizes=(x.size,)), uniform()),
        _row("transpose", lambda x: P.transpose.bind(x, permutation=tuple(range(x.ndim))[::-1]),
             uniform()),
        _row("expand_dims", lambda x: P.expand_dims.bind(x, dimensions=(0, x.ndim + 1)),
             uniform()),
        _row("squeeze", lambda x: P.squeeze.bind(P.expand_dims.bind(x, dimensions=(1,)),
                                                 dimensions=(1,)), uniform()),
        _row("rev", lambda x: P.rev.bind(x, dimensions=(0,)), uniform()),
        _row("concatenate", lambda x: P.concatenate.bind(x, P.neg.bind(x), x,
                                                         dimension=x.ndim - 1), uniform()),
        _row("pad", lambda x, v: P.pad.bind(x, v, padding_config=tuple(
            (1, -1 if d > 1 else 0, 1) for d in x.shape)), uniform(),
            lambda rng, m, n, k: np.float64(0.5)),
        _row("slice", lambda x: P.slice.bind(x, start_indices=(0,) * x.ndim,
                                             limit_indices=x.shape, strides=(2,) * x.ndim),
             uniform()),
        _row("broadcast_in_dim_3d", lambda x: P.broadcast_in_dim.bind(
            x, shape=(3, x.shape[0], 2, x.shape[1]), broadcast_dimensions=(1, 3)), mn),
        _row("broadcast_ones", lambda x: P.broadcast_in_dim.bind(
            x, shape=(x.shape[0], 4), broadcast_dimensions=(0, 1)),
            sized(lambda rng, m, n, k: rng.standard_normal((m, 1)))),
        _row("reshape_2d", lambda x: P.reshape.bind(x, new_sizes=(x.size,)), mn),
        _row("transpose_3d", lambda x: P.transpose.bind(x, permutation=(2, 0, 1)), mnk),
        _row("squeeze_middle", lambda x: P.squeeze.bind(x, dimensions=(1,)),
             sized(lambda rng, m, n, k: rng.standard_normal((m, 1, n)))),
        _row("expand_dims_3", lambda x: P.expand_dims.bind(x, dimensions=(0, 2, 4)), mn),
        _row("rev_axis1", lambda x: P.rev.bind(x, dimensions=(1,)), mn),
        _row("slice_strided", lambda x: P.slice.bind(
            x, start_indices=(0, 1), limit_indices=(x.shape[0], 3), strides=(2, 1)),
            sized(lambda rng, m, n, k: rng.standard_normal((m, n + 2)))),
        _row("concatenate_two", lambda x, y: P.concatenate.bind(x, y, x, dimension=1), mn,
             sized(lambda rng, m, n, k: rng.standard_normal((m, k)))),
        _row("pad_interior", lambda x, v: P.pad.bind(x, v, padding_config=((1, -1, 1),
                                                                            (0, 2, 0))),
             sized(lambda rng, m, n, k: rng.standard_normal((m + 1, n))), normal()),
    ]


# --- indexing ------------------------------------------------------------------------------

def _dus(x, u, *idx):
    return P.dynamic_update_slice.bind(x, u, *idx)


def _indexing_rows():
    one = lambda rng, m, n, k: np.int64(1)   # noqa: E731
    return [
        _row("dynamic_slice", lambda x, i: P.dynamic_slice.bind(
            x, *[i] * x.ndim, slice_sizes=tuple(max(d - 1, 1) for d in x.shape)),
            uniform(), one),
        _row("dynamic_update_slice", lambda x, u, i: _dus(x, u, *[i] * x.ndim), uniform(),
             sized(lambda rng, m, n, k: _u(rng, tuple(max(d - 1, 1) for d in _main(m, n, k)))),
             one),
        _row("dynamic_slice_clamped", lambda x, i, j: P.dynamic_slice.bind(
            x, i, j, slice_sizes=(2, 1)),
            sized(lambda rng, m, n, k: rng.standard_normal((m + 1, n))),
            sized(lambda rng, m, n, k: rng.integers(-2, m + 3)),
            sized(lambda rng, m, n, k: rng.integers(-1, n + 1))),
        _row("dynamic_slice_full", lambda x, i, j: P.dynamic_slice.bind(
            x, i, j, slice_sizes=(x.shape[0], 2)),
            sized(lambda rng, m, n, k: rng.standard_normal((m, n + 1))),
            sized(lambda rng, m, n, k: rng.integers(0, m)),
            sized(lambda rng, m, n, k: rng.integers(-1, n + 2))),
        _row("dynamic_update_slice_clamped", lambda x, u, i: _dus(x, u, i, np.int64(0)),
             sized(lambda rng, m, n, k: rng.standard_normal((m + 2, n))),
             sized(lambda rng, m, n, k: rng.standard_normal((2, n))),
             sized(lambda rng, m, n, k: rng.integers(-1, m + 4))),
        # repeated indices: they accumulate in the transpose, and the last write wins
        _row("gather", lambda x, idx: P.gather.bind(x, idx, axes=(0,)), uniform(),
             sized(lambda rng, m, n, k: rng.integers(0, m, (3, 1)))),
        _row("scatter_add", lambda x, idx, u: P.scatter_add.bind(x, idx, u, axes=(0,)),
             uniform(), sized(lambda rng, m, n, k: np.array([[0], [m - 1], [0]])),
             sized(lambda rng, m, n, k: _u(rng, (3, *_main(m, n, k)[1:]))), tol=4.0),
        _row("scatter", lambda x, idx, u: P.scatter.bind(x, idx, u, axes=(0,)),
             uniform(), sized(lambda rng, m, n, k: np.array([[0], [m - 1], [0]])),
             sized(lambda rng, m, n, k: _u(rng, (3, *_main(m, n, k)[1:]))),
             grad="the last of repeated writes wins: the transpose routes the cotangent to "
                  "it, which finite differences confirm only where the indices are distinct "
                  "(scatter_unique)"),
        _row("scatter_unique", lambda x, idx, u: P.scatter.bind(x, idx, u, axes=(0,)),
             uniform(), sized(lambda rng, m, n, k: rng.permutation(m)[:, None]),
             sized(lambda rng, m, n, k: _u(rng, (m, *_main(m, n, k)[1:])))),
        # in-bounds indices (out-of-bounds ones raise: tests/numpy/test_index_bounds.py)
        _row("check_index", lambda a: P.check_index.bind(a, size=5, axis=1, where=""),
             ints(-5, 5, 3, 2), grad=INTEGER_OPERANDS),
        _row("gather_clamped", lambda x, idx: P.gather.bind(x, idx, axes=(0,)),
             sized(lambda rng, m, n, k: rng.standard_normal((m, n))),
             sized(lambda rng, m, n, k: rng.integers(-1, m + 1, (k, 1)))),
        _row("gather_2d", lambda x, idx: P.gather.bind(x, idx, axes=(2, 0)),
             sized(lambda rng, m, n, k: rng.standard_normal((m, n, 3))),
             sized(lambda rng, m, n, k: rng.integers(0, 3, (k, 2, 2)))),
        _row("scatter_add_axis1", lambda x, idx, u: P.scatter_add.bind(x, idx, u, axes=(1,)),
             sized(lambda rng, m, n, k: rng.standard_normal((m, n))),
             sized(lambda rng, m, n, k: rng.integers(0, n, (k, 1))),
             sized(lambda rng, m, n, k: rng.standard_normal((k, m))), tol=4.0),
        _row("scatter_repeated", lambda x, idx, u: P.scatter.bind(x, idx, u, axes=(0,)),
             sized(lambda rng, m, n, k: rng.standard_normal((m, n))),
             sized(lambda rng, m, n, k: rng.integers(0, m, (2, 1))),
             sized(lambda rng, m, n, k: rng.standard_normal((2, n))),
             grad="repeated indices, where the last write wins: see the scatter row"),
    ]


# --- contractions --------------------------------------------------------------------------

def _contraction_rows():
    return [
        _row("dot_general", lambda x, y: P.dot_general.bind(
            x, y, dimension_numbers=dn((2,), (1,), (0,), (0,))),
            sized(lambda rng, m, n, k: _u(rng, (2, 3, k))),
            sized(lambda rng, m, n, k: _u(rng, (2, k, 2))), tol=64.0),
        _row("matmul", lambda a, b: P.dot_general.bind(a, b, dimension_numbers=dn((1,), (0,))),
             sized(lambda rng, m, n, k: rng.standard_normal((m, k))),
             sized(lambda rng, m, n, k: rng.standard_normal((k, n))), tol=64.0),
        _row("batched_dot", lambda a, b: P.dot_general.bind(
            a, b, dimension_numbers=dn((2,), (1,), (0,), (0,))),
            sized(lambda rng, m, n, k: rng.standard_normal((2, m, k))),
            sized(lambda rng, m, n, k: rng.standard_normal((2, k, n))), tol=64.0),
        _row("vector_dot", lambda a, b: P.dot_general.bind(a, b, dimension_numbers=dn((0,),
                                                                                      (0,))),
             normal(4), normal(4), tol=64.0),
        _row("mixed_ops", lambda x, w: P.reduce_sum.bind(P.tanh.bind(P.dot_general.bind(
            x, w, dimension_numbers=dn((1,), (0,)))), axes=(0,)),
            sized(lambda rng, m, n, k: rng.standard_normal((m, k))),
            sized(lambda rng, m, n, k: rng.standard_normal((k, n))), tol=64.0),
    ]


CASES = (_unary_rows() + _binary_rows() + _mixed_rows() + _reduction_rows() + _layout_rows()
         + _indexing_rows() + _contraction_rows())
BY_NAME = {c.name: c for c in CASES}
assert len(BY_NAME) == len(CASES), "case names must be unique"

# The primitives no row applies, with the reason and where their rules are checked instead
# against the same references (finite differences, loop-and-stack, the interpreter).
_LINALG = ("a matrix factorization or solve: its rows need structured operands (SPD, "
           "triangular, well conditioned); tests/linalg_fft/test_linalg.py checks grads and "
           "vmap on such operands, tests/backends/llvm/test_llvm_lapack*.py the native backend")
_WINDOW = ("windows over strided patches: tests/lax/test_reduce_window.py crosses them with "
           "check_grads, loop-and-stack over every operand and the backends")
_CONTROL = ("graph-valued (its body is a graph): tests/lax/test_control_flow.py's VMAP_CASES "
            "and grad tests, tests/lax/test_control_flow_native.py the native backend")
NO_CASE = {
    **dict.fromkeys(["cholesky", "det", "eig", "eigh", "lu", "lu_pivots_to_permutation", "qr",
                     "slogdet", "slogdet_inv_t", "solve", "svd", "triangular_solve"], _LINALG),
    "sqrtm": _LINALG.replace("test_linalg.py", "test_linalg_sqrtm.py"),
    "sylvester": _LINALG.replace("test_linalg.py", "test_linalg_sqrtm.py"),
    **dict.fromkeys(["reduce_window_sum", "reduce_window_max", "reduce_window_min",
                     "select_and_gather_add", "select_and_scatter_add"], _WINDOW),
    **dict.fromkeys(["cond", "while", "scan"], _CONTROL),
    "conv_general_dilated": "needs dimension numbers and window strides: tests/lax/test_conv.py "
                            "checks grads, vmap over every operand and the backends",
    "fft": "complex-valued with a norm and axes per call: tests/linalg_fft/test_fft.py checks "
           "grads and vmap over every axis, tests/backends/llvm/test_llvm_fft.py the native "
           "backend",
    "threefry2x32": "integer-valued random bits, not differentiable: tests/api/test_random.py "
                    "checks vmap over keys against loop-and-stack and the bits against the "
                    "reference vectors",
    "betainc_grad": "the derivative of betainc in a or b: only its jvp rule binds it "
                    "(tests/special/test_betainc_grad.py checks it against finite differences)",
    "igamma_grad_a": "dP(a, x)/da: only igamma's jvp rule binds it "
                     "(tests/special/test_igamma_grad.py)",
    "igamma_hess_a": "d^2P(a, x)/da^2: only igamma_grad_a's jvp rule binds it "
                     "(tests/special/test_igamma_grad.py)",
    "custom_jvp_call": "a user rule, not a primitive function: test_autodiff.py's custom_jvp "
                       "tests",
    "custom_vjp_call": "a user rule, not a primitive function: test_autodiff.py's custom_vjp "
                       "tests",
    "custom_lin": "only forward mode of a custom_vjp function evaluates it (which that forbids)",
    "call": "inlined (passes.inline) before any transform or backend sees the graph",
    **dict.fromkeys(["all_reduce", "all_gather", "reduce_scatter", "axis_index"],
                    "a collective: over the process axis it needs MPI (never initialised in "
                    "the pytest process), over a vmap axis a named vmap: "
                    "tests/distributed/test_collective_prims.py checks grads, jvp, vmap "
                    "against loop-and-stack and the backends on real ranks"),
    "setitem": "rewritten into pure updates by functionalize before any transform sees it",
}


# --- the backends' driver --------------------------------------------------------------------

def one_graph(cases, rng, *sizes):
    """Every row of ``cases`` at each of ``sizes`` traced into one graph (one compilation for
    the backends): the graph, its arguments and the name of the row each output comes from."""
    rows = [c for _ in sizes for c in cases]
    examples = [c.args(rng, *s) for s in sizes for c in cases]
    bounds = np.cumsum([0] + [len(a) for a in examples])

    def every_row(*flat):
        return [c.f(*flat[lo:hi]) for c, lo, hi in zip(rows, bounds[:-1], bounds[1:],
                                                          strict=True)]
    args = [a for example in examples for a in example]
    graph = fc.make_graph(every_row)(*args)
    names = []
    for c, example in zip(rows, examples, strict=True):
        names += [c.name] * len(tree_flatten(c.f(*example))[0])
    assert len(names) == len(graph.outputs)
    return graph, args, names


def assert_matches_interpreter(got, want, names):
    """Each backend output against the interpreter's: dtype, shape, and values within the
    row's ``tol`` (exactly where it is 0; NaN matches NaN)."""
    for g, w, name in zip(got, want, names, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), (name, g.dtype, w.dtype, g.shape)
        tol = BY_NAME[name].tol
        if tol == 0 or w.dtype.kind not in "fc":
            np.testing.assert_array_equal(g, w, err_msg=name)
            continue
        bound = tol * np.finfo(w.dtype).eps
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=bound, atol=bound * scale, err_msg=name)
