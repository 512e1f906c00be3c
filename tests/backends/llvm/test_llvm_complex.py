"""Complex dtypes in the native CPU backend, against the reference interpreter.

Every natively lowered complex rule must give NumPy's bits: values are compared
bit for bit (so -0.0 differs from 0.0), any NaN matching any NaN. Operands mix
infinities, NaNs, signed zeros, huge, tiny and subnormal parts with ordinary values.
Sums and products of many terms are compared within a summation bound, as float ones.
"""

from __future__ import annotations

import numpy as np
import pytest
from backend_checks import sums_and_products
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.llvm import lowering
from functorch_core.backends.llvm.complex_ops import (
    COMPLEX_GAPS,
    LIBM_COMPLEX,
    complex_gap,
    host_is_x86_64,
)
from functorch_core.backends.planning.plan import Fallback, Kernel
from functorch_core.ir import primitives as P
from functorch_core.ir.core import AbstractArray, Lit
from graph_builder import Builder
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp

CPU = registry.get("cpu")
COMPLEX = [np.dtype(np.complex64), np.dtype(np.complex128)]
N = 48


def _part(dt):
    return np.dtype(np.float32 if np.dtype(dt).itemsize == 8 else np.float64)


def _specials(ft):
    info = np.finfo(ft)
    return [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.0, 0.5, float(info.max),
            -float(info.max), float(info.tiny), float(info.smallest_subnormal),
            float(info.max) / 3, float(np.sqrt(info.max)), float(info.eps)]


def parts_of(ft, n):
    """n floats of dtype ft: mostly special values, else anything of that width."""
    ft = np.dtype(ft)
    if ft.itemsize == 2:            # every half is a bit pattern away
        bits = st.lists(st.integers(0, 0xFFFF), min_size=n, max_size=n)
        return bits.map(lambda xs: np.array(xs, np.uint16).view(ft))
    value = st.one_of(st.sampled_from(_specials(ft)),
                      st.floats(width=8 * ft.itemsize, allow_subnormal=True))
    return st.lists(value, min_size=n, max_size=n).map(lambda xs: np.array(xs, ft))


def complexes(dt, n=N):
    ft = _part(dt)
    return parts_of(ft, 2 * n).map(lambda xs: xs.view(np.dtype(dt)))


def assert_bits(got, want):
    """Bitwise equality, NaN-aware (the NaN's sign and payload are free)."""
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if g.dtype.kind in "fc":
            part_dt = _part(g.dtype) if g.dtype.kind == "c" else g.dtype
            gp, wp = (np.ascontiguousarray(x).view(part_dt) for x in (g, w))
            same = (gp.view(f"u{gp.itemsize}") == wp.view(f"u{wp.itemsize}")) | \
                (np.isnan(gp) & np.isnan(wp))
            bad = ~same.reshape(g.shape + (-1,)).all(-1)
            assert not bad.any(), (g[bad], w[bad])
        else:
            np.testing.assert_array_equal(g, w)


def both(graph, args):
    exe = CPU.compile(graph)
    got = exe(list(args))
    with np.errstate(all="ignore"):
        want = run_graph(graph, list(args))
    return exe, got, want


def native(exe):
    """The plan has no interpreter fallback step."""
    return not any(isinstance(s, Fallback) for s in exe.plan.steps)


def assert_native_bits(graph, args):
    """``graph`` compiles with no interpreter fallback and gives the interpreter's bits."""
    exe, got, want = both(graph, args)
    assert native(exe)
    assert_bits(got, want)


# --- one graph per dtype with every elementwise rule ------------------------------------

def _elementwise_graph(dt, n=N):
    b = Builder()
    z, w = b.input((n,), dt), b.input((n,), dt)
    outs = [b(P.neg, z), b(P.conj, z), b(P.real, z), b(P.imag, z), b(P.abs, z),
            b(P.is_finite, z), b(P.sign, z), b(P.add, z, w), b(P.sub, z, w), b(P.mul, z, w),
            b(P.div, z, w), b(P.eq, z, w), b(P.ne, z, w), b(P.eq, z, z),
            b(P.select, b(P.ne, z, w), z, w), b(P.max, z, w), b(P.min, z, w),
            b(P.max, w, z), b(P.min, w, z)]
    return b.graph(*outs)


@pytest.mark.parametrize("dt", COMPLEX, ids=str)
@given(data=st.data())
def test_elementwise_rules_are_bit_exact(dt, data):
    z, w = data.draw(complexes(dt)), data.draw(complexes(dt))
    assert_native_bits(_elementwise_graph(dt), [z, w])


@pytest.mark.parametrize("dt", COMPLEX, ids=str)
@given(data=st.data())
def test_mul_div_abs_on_all_special_pairs(dt, data):
    """Every pair of special parts against every other, so each branch of NumPy's
    division, hypot and sign (zero divisor, |br| < |bi|, NaN ratio, inf/NaN mixes) is hit."""
    ft = _part(dt)
    s = np.array(_specials(ft), ft)
    grid = np.stack(np.meshgrid(s, s, indexing="ij"), -1).reshape(-1, 2)
    z = np.ascontiguousarray(grid).view(dt).reshape(-1)
    perm = data.draw(st.permutations(range(z.size)))
    w = z[np.array(perm)]
    b = Builder()
    x, y = b.input(z.shape, dt), b.input(z.shape, dt)
    graph = b.graph(b(P.mul, x, y), b(P.div, x, y), b(P.abs, x), b(P.sign, x))
    assert_native_bits(graph, [z, w])


@pytest.mark.parametrize("dt", COMPLEX, ids=str)
def test_big_arrays_take_the_vectorized_threaded_path_bit_exactly(dt):
    """Kernels over 4096 points are built by the other pass pipeline (vectorized) and
    split over threads: the same bits."""
    rng = np.random.default_rng(11)
    ft, n = _part(dt), 1 << 16
    special = np.array(_specials(ft), ft)

    def mk():
        x = (rng.standard_normal(2 * n) * 10.0 ** rng.integers(-8, 9, 2 * n)).astype(ft)
        pick = rng.random(2 * n) < 0.2
        x[pick] = rng.choice(special, int(pick.sum()))
        return x.view(dt)

    assert_native_bits(_elementwise_graph(dt, n), [mk(), mk()])


@pytest.mark.parametrize("dt", COMPLEX, ids=str)
@given(data=st.data())
def test_libm_complex_functions_are_bit_exact(dt, data):
    """sqrt, exp, log and the trigonometric/hyperbolic functions and inverses: NumPy calls
    libm's csqrt/cexp/... and so do the kernels."""
    if not host_is_x86_64():
        pytest.skip("complex libm calls are lowered for x86-64 only")
    z = data.draw(complexes(dt))
    b = Builder()
    x = b.input(z.shape, dt)
    graph = b.graph(*[b(p, x) for p in LIBM_COMPLEX])
    assert_native_bits(graph, [z])


# --- conversions ----------------------------------------------------------------------

REALS = [np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int32, np.int64,
                               np.float16, np.float32, np.float64)]


def _real_values(dt, rng, n):
    """Bools, or integers over the whole range with both extremes, or special floats."""
    if dt.kind == "b":
        return rng.random(n) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        x = rng.integers(int(info.min), int(info.max), n, dtype=dt, endpoint=True)
        x[:3] = info.min, info.max, 0
        return x
    return np.array(rng.choice(np.array(_specials(dt) + list(rng.standard_normal(n) * 1e3)), n),
                    dt)


@pytest.mark.parametrize("dt", COMPLEX, ids=str)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_converts_to_and_from_complex(dt, data, seed):
    rng, n = np.random.default_rng(seed), 16
    b = Builder()
    z = b.input((n,), dt)
    xs = [b.input((n,), r) for r in REALS]
    outs = [b(P.convert, z, new_dtype=d) for d in REALS + COMPLEX]
    outs += [b(P.convert, x, new_dtype=dt) for x in xs]
    args = [data.draw(complexes(dt, n))] + [_real_values(r, rng, n) for r in REALS]
    assert_native_bits(b.graph(*outs), args)


@pytest.mark.parametrize("ft", [np.dtype(t) for t in (np.float16, np.float32, np.float64)],
                         ids=str)
@given(data=st.data())
def test_complex_of_real_and_imaginary_parts(ft, data):
    b = Builder()
    re, im = b.input((N,), ft), b.input((N,), ft)
    c = b(P.complex, re, im)
    graph = b.graph(c, b(P.real, c), b(P.imag, c))
    assert_native_bits(graph, [data.draw(parts_of(ft, N)), data.draw(parts_of(ft, N))])


# --- fusion, broadcasting, layout -------------------------------------------------------

@pytest.mark.parametrize("dt", COMPLEX, ids=str)
@given(data=st.data())
def test_real_and_complex_ops_fuse_into_one_kernel(dt, data):
    ft = _part(dt)
    b = Builder()
    z, w = b.input((6, 8), dt), b.input((6, 8), dt)
    x = b.input((6, 8), ft)
    s = b.input((), dt)                                     # a rank-0 operand
    c = b(P.complex, b(P.mul, x, x), b(P.neg, x))           # real -> complex
    y = b(P.add, b(P.mul, z, w), b(P.div, c, s))
    r = b(P.mul, b(P.abs, y), b(P.real, z))                 # complex -> real
    graph = b.graph(b(P.select, b(P.gt, r, x), y, b(P.conj, w)), r)
    args = [data.draw(complexes(dt, 48)).reshape(6, 8), data.draw(complexes(dt, 48)).reshape(6, 8),
            data.draw(parts_of(ft, 48)).reshape(6, 8), data.draw(complexes(dt, 1)).reshape(())]
    exe, got, want = both(graph, args)
    assert [type(st_).__name__ for st_ in exe.plan.steps] == ["Kernel"]
    assert_bits(got, want)


@pytest.mark.parametrize("dt", COMPLEX, ids=str)
@given(data=st.data())
def test_broadcasts_views_and_literals(dt, data):
    b = Builder()
    z, row = b.input((5, 7), dt), b.input((7,), dt)
    wide = b(P.broadcast_in_dim, row, shape=(5, 7), broadcast_dimensions=(1,))
    lit = Lit(np.asarray(np.inf - 2j, dt), AbstractArray((), dt))
    zt = b(P.transpose, b(P.rev, z, dimensions=(0,)), permutation=(1, 0))
    graph = b.graph(b(P.mul, z, wide), b(P.sub, lit, z), b(P.div, zt, lit),
                    b(P.slice, z, start_indices=(1, 2), limit_indices=(4, 7), strides=(2, 2)))
    args = [data.draw(complexes(dt, 35)).reshape(5, 7), data.draw(complexes(dt, 7))]
    assert_native_bits(graph, args)


@pytest.mark.parametrize("dt", COMPLEX, ids=str)
def test_gather_concatenate_pad_and_scatter_add(dt):
    rng = np.random.default_rng(3)
    b = Builder()
    z, w = b.input((4, 3), dt), b.input((2, 3), dt)
    idx = b.input((5, 1), np.int32)
    fill = Lit(np.asarray(1 - 1j, dt), AbstractArray((), dt))
    graph = b.graph(b(P.gather, z, idx, axes=(0,)),
                    b(P.concatenate, z, w, dimension=0),
                    b(P.pad, z, fill, padding_config=((1, 0, 1), (0, 2, 0))),
                    b(P.scatter_add, z, idx, b(P.mul, b(P.gather, z, idx, axes=(0,)),
                                                b(P.gather, z, idx, axes=(0,))), axes=(0,)))
    mk = lambda *s: (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dt)  # noqa: E731
    args = [mk(4, 3), mk(2, 3), rng.integers(-1, 5, (5, 1)).astype(np.int32)]
    assert_native_bits(graph, args)


# --- reductions and scans ---------------------------------------------------------------

@pytest.mark.parametrize("dt", COMPLEX, ids=str)
def test_sums_and_products_within_summation_bound(dt):
    rng = np.random.default_rng(2)
    arg = ((rng.random((5, 33, 7)) + 0.5) * np.exp(1j * rng.random((5, 33, 7)) * 0.3)).astype(dt)
    exe, got, want = both(sums_and_products(dt), [arg])
    assert native(exe)
    eps = np.finfo(dt).eps
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=64 * eps)


@pytest.mark.parametrize("dt", COMPLEX + [np.dtype(np.float32)], ids=str)
@given(data=st.data())
def test_sums_and_products_over_no_axes_still_combine_with_the_identity(dt, data):
    """NumPy computes 0 + x and 1 * x even over no axes: -0.0 becomes 0.0, and
    (1+0j) * (0+infj) is nan+infj."""
    b = Builder()
    z = b.input((4, 6), dt)
    graph = b.graph(b(P.reduce_sum, z, axes=()), b(P.reduce_prod, z, axes=()))
    arg = (data.draw(complexes(dt, 24)) if dt.kind == "c" else data.draw(parts_of(dt, 24)))
    assert_native_bits(graph, [arg.reshape(4, 6)])


@pytest.mark.parametrize("dt", COMPLEX, ids=str)
@given(data=st.data())
def test_max_and_min_reductions_are_exact(dt, data):
    """Lexicographic order, the first NaN wins, ties keep the first element met."""
    b = Builder()
    z = b.input((4, 3, 5), dt)
    outs = [b(p, z, axes=axes) for p in (P.reduce_max, P.reduce_min)
            for axes in ((0,), (1,), (2,), (0, 2), (0, 1, 2))]
    assert_native_bits(b.graph(*outs), [data.draw(complexes(dt, 60)).reshape(4, 3, 5)])


@pytest.mark.parametrize("dt", COMPLEX, ids=str)
@given(data=st.data())
def test_cumulative_sums_are_exact(dt, data):
    """Scans add in order from the first element, as NumPy's accumulate: bit-exact."""
    b = Builder()
    z = b.input((6, 8), dt)
    graph = b.graph(b(P.cumsum, z, axis=1, reverse=False), b(P.cumsum, z, axis=0, reverse=True))
    assert_native_bits(graph, [data.draw(complexes(dt)).reshape(6, 8)])


def test_real_cumsum_keeps_a_leading_negative_zero():
    b = Builder()
    x = b.input((3,), np.float64)
    _, got, want = both(b.graph(b(P.cumsum, x, axis=0, reverse=False)),
                        [np.array([-0.0, -0.0, 1.0])])
    assert_bits(got, want)


# --- what stays in the interpreter ------------------------------------------------------

@pytest.mark.parametrize("prim", [P.exp2, P.expm1, P.log1p],
                         ids=lambda p: p.name)
def test_unlowered_unary_ops_fall_back_with_a_reason(prim):
    b = Builder()
    z = b.input((4,), np.complex64)
    graph = b.graph(b(P.abs, b(prim, b(P.mul, z, z))))
    exe = CPU.compile(graph)
    kinds = [type(s).__name__ for s in exe.plan.steps]
    assert kinds == ["Kernel", "Fallback", "Kernel"]
    assert exe.plan.steps[1].reason == complex_gap(graph.eqns[1])
    assert len(exe.plan.steps[1].reason) > 10
    arg = np.array([1 + 2j, np.nan, -0.0 + np.inf * 1j, 3 - 1j], np.complex64)
    _, got, want = both(graph, [arg])
    assert_bits(got, want)


def test_unlowered_binary_ops_and_reductions_fall_back_with_a_reason():
    b = Builder()
    z, w = b.input((3, 3), np.complex128), b.input((3, 3), np.complex128)
    dims = (((1,), (0,)), ((), ()))
    graph = b.graph(b(P.pow, z, w), b(P.cumprod, z, axis=0, reverse=False),
                    b(P.dot_general, z, w, dimension_numbers=dims))
    exe = CPU.compile(graph)
    reasons = [s.reason for s in exe.plan.steps if isinstance(s, Fallback)]
    assert reasons == [COMPLEX_GAPS[p] for p in (P.pow, P.cumprod)]
    assert [bool(lowering.lowering_gap(e)) for e in graph.eqns] == [True, True, False]
    rng = np.random.default_rng(0)
    args = [(rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))) for _ in range(2)]
    _, got, want = both(graph, args)
    assert_bits(got[:2], want[:2])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-13)     # zgemm: BLAS summation order


def test_every_complex_elementwise_equation_is_native_or_a_reasoned_fallback():
    for prim in P.UNARY + P.BINARY:
        b = Builder()
        x = b.input((2,), np.complex64)
        try:
            out = b(prim, *([x] * (1 if prim.family == "unary" else 2)))
        except TypeError:
            continue                                # the catalogue rejects complex here
        (eqn,) = b.eqns
        reason = lowering.lowering_gap(eqn)
        steps = CPU.compile(b.graph(out)).plan.steps
        if reason is None:
            assert all(isinstance(s, Kernel) for s in steps), prim.name
        else:
            assert len(reason) > 10
            assert [s.reason for s in steps if isinstance(s, Fallback)] == [reason], prim.name


# --- end to end through jit -------------------------------------------------------------

def test_jit_complex_chain_matches_numpy():
    rng = np.random.default_rng(7)
    z = (rng.standard_normal(1000) + 1j * rng.standard_normal(1000)).astype(np.complex64)
    w = (rng.standard_normal(1000) + 1j * rng.standard_normal(1000)).astype(np.complex64)

    def f(z, w):
        return fnp.abs(z * w + z), fnp.conj(z) / w

    got = fc.jit(f)(z, w)
    want = (np.abs(z * w + z), np.conj(z) / w)
    assert_bits(got, want)
