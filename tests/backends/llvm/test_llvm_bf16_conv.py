"""bfloat16 convolutions and the native whole-array casts of the widened bf16 steps.

The casts (``bf16_cast``) are compared with ml_dtypes' ``astype`` bit for bit. A bf16
convolution big enough for the gemm path is float32 gemms on exactly widened operands,
rounded once: the float32 convolution of the widened operands, rounded by ml_dtypes, bit
for bit. Every bf16 convolution (loop nest or gemms) is within float32 accumulation error
of the float64 convolution of the same bf16 operands before its one rounding: ``K`` terms
(``K`` = in features per group x kernel taps) accumulate to within ``K 2^-24 sum|x||w|``,
and the rounding to bf16 adds at most half an ulp, ``2^-8`` of the magnitude.
"""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends.llvm import bf16_cast, runtime
from functorch_core.backends.planning.plan import Conv
from functorch_core.ir.dtypes import bfloat16 as BF16

import functorch_core as fc
from functorch_core import lax


def _bits16(a):
    return np.asarray(a).view(np.uint16)


def test_native_widening_matches_ml_dtypes_for_every_bf16_value():
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF16)
    got = bf16_cast.widen(every.reshape(256, 256)[:, ::-1])
    want = every.reshape(256, 256)[:, ::-1].astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_native_narrowing_matches_ml_dtypes_bit_for_bit():
    rng = np.random.default_rng(0)
    hi = rng.integers(0, 1 << 16, 4000).astype(np.uint32) << 16
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0xFFFFFFFF,
                        0x7FFF8000, 0x7F7FFFFF, 0x7F7F8000, 0x00008000, 0x00018000,
                        0x00000001, 0x807FFFFF], np.uint32)
    bits = np.concatenate([
        rng.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32),
        hi | 0x8000, hi | 0x7FFF, hi | 0x8001, hi, special])     # ties, near ties, exact
    x = bits.view(np.float32)
    with np.errstate(invalid="ignore"):
        want = x.astype(BF16)
    np.testing.assert_array_equal(_bits16(bf16_cast.narrow(x)), _bits16(want))
    out = np.zeros((2, x.size), BF16)[:, ::-1][0]           # a strided destination
    assert bf16_cast.narrow(x[::-1], out) is out
    np.testing.assert_array_equal(_bits16(out), _bits16(want[::-1]))


def test_native_casts_refuse_wrong_dtypes_and_shapes():
    with pytest.raises(TypeError, match="not bfloat16"):
        bf16_cast.widen(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="not bfloat16"):
        bf16_cast.narrow(np.zeros(3, np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"shape \(2,\), x \(3,\)"):
        bf16_cast.narrow(np.zeros(3, np.float32), np.zeros(2, BF16))


# (lhs shape, rhs shape, strides, padding, lhs dilation, rhs dilation, groups, batch groups)
GEOMETRIES = [
    ((2, 3, 9, 8), (4, 3, 3, 3), (1, 1), "SAME", (1, 1), (1, 1), 1, 1),
    ((3, 4, 11, 10), (6, 2, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 1), (2, 1), 2, 1),
    ((4, 2, 7, 7), (4, 2, 2, 3), (1, 2), "VALID", (2, 1), (1, 1), 1, 2),
    ((16, 8, 40, 40), (16, 8, 3, 3), (1, 1), "SAME", (1, 1), (1, 1), 1, 1),
    ((8, 12, 33, 30), (24, 4, 3, 3), (2, 2), ((1, 1), (2, 0)), (1, 1), (1, 2), 3, 1),
    ((16, 6, 36, 36), (16, 3, 5, 5), (1, 1), "VALID", (1, 1), (1, 1), 2, 1),
]


def _conv(geometry):
    _, _, strides, padding, ldil, rdil, groups, batch_groups = geometry

    def f(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, lhs_dilation=ldil,
                                        rhs_dilation=rdil, feature_group_count=groups,
                                        batch_group_count=batch_groups)
    return f


def _operands(geometry, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(geometry[0]).astype(BF16)
    w = (rng.standard_normal(geometry[1]) * 2).astype(BF16)
    return x, w


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=range(len(GEOMETRIES)))
def test_bf16_convolution_within_float32_accumulation_error(geometry):
    x, w = _operands(geometry, 1)
    f = _conv(geometry)
    exe = runtime.Executable(fc.make_graph(f)(x, w))
    assert sum(isinstance(s, Conv) for s in exe.plan.steps) == 1
    got, = exe([x, w])
    assert got.dtype == BF16
    interp = fc.jit(f, backend="interpreter")
    exact = interp(x.astype(np.float64), w.astype(np.float64))
    size = interp(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)))
    terms = w.shape[1] * w.shape[2] * w.shape[3]
    acc = terms * 2.0 ** -24 * size
    bound = acc + 2.0 ** -8 * (np.abs(exact) + acc)
    assert (np.abs(got.astype(np.float64) - exact) <= bound).all()


@pytest.mark.parametrize("geometry", GEOMETRIES[3:], ids=range(3, len(GEOMETRIES)))
def test_a_gemm_bf16_convolution_is_the_float32_one_rounded_once(geometry):
    """The bf16 conv step and the float32 one run the same gemm blocks: the bf16 result
    is the float32 result (of the exactly widened operands) rounded once, bit for bit."""
    x, w = _operands(geometry, 2)
    x[0, 0, 0, :3] = [np.nan, np.inf, -np.inf]
    f = _conv(geometry)
    exe = runtime.Executable(fc.make_graph(f)(x, w))
    convs = [s for s in exe.plan.steps if isinstance(s, Conv)]
    assert len(convs) == 1 and id(convs[0]) not in exe._fns      # the gemm path
    got, = exe([x, w])
    wide, = runtime.Executable(fc.make_graph(f)(x.astype(np.float32), w.astype(np.float32)))(
        [x.astype(np.float32), w.astype(np.float32)])
    with np.errstate(invalid="ignore"):
        want = wide.astype(BF16)
    np.testing.assert_array_equal(_bits16(got), _bits16(want))
