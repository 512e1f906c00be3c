"""Planning rules for products and convolutions: BLAS steps, or a loop of gemms when
an operand is a strided view. Each rule takes the :class:`~.partition.Partitioner`
and one equation."""

from __future__ import annotations

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P

from .members import Member
from .plan import (
    Blas,
    Conv,
    Kernel,
    Op,
    Reduce,
    View,
)

BLAS_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def blas(planner, eqn):
    """A Blas step (bfloat16 too: the llvm backend's own kernel, backends/llvm/bf16_gemm.py),
    or a loop nest for the dtypes BLAS lacks."""
    if eqn.inputs[0].aval.dtype not in (*BLAS_DTYPES, dtypes.bfloat16):
        return contraction_loop(planner, eqn)
    if eqn.inputs[0].aval.dtype == dtypes.bfloat16 and _macs(eqn) <= planner.widen_bf16_macs:
        return widened_bf16_blas(planner, eqn)
    lhs, rhs = (planner.array(a) for a in eqn.inputs)
    out = eqn.outputs[0]
    slot = planner.new_slot(out.aval.shape, out.aval.dtype)
    planner.steps.append(Blas(lhs, rhs, slot, eqn.params["dimension_numbers"]))
    planner.loc[id(out)] = planner._buffer_view(slot, out.aval.shape, out.aval.dtype)


def _macs(eqn) -> int:
    """A dot_general's multiply-adds: its result's size times its contracted size."""
    (lc, _), _ = eqn.params["dimension_numbers"]
    lhs = eqn.inputs[0].aval
    return int(np.prod(eqn.outputs[0].aval.shape, dtype=np.int64)) * \
        int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))


def widened_bf16_blas(planner, eqn):
    """A bfloat16 product as the interpreter computes it: each operand widened exactly to
    float32 (a convert op in its producer's kernel, stored), a float32 Blas step, and its
    result rounded once to bfloat16 by a convert op in an open kernel its users join."""
    f32, bf16 = np.dtype(np.float32), dtypes.bfloat16
    wide = []
    for atom in eqn.inputs:
        shape = atom.aval.shape
        k, (ref,) = planner.refs(shape, [atom])
        k.ops.append(Op(P.convert, (ref,), {"new_dtype": f32}, f32, bf16))
        slot = planner.new_slot(shape, f32)
        k.stores.append((("op", len(k.ops) - 1), slot, f32))
        planner.seal(k)
        wide.append(("slot", slot, shape))
    out = eqn.outputs[0]
    shape = out.aval.shape
    slot = planner.new_slot(shape, f32)
    planner.steps.append(Blas(*wide, slot, eqn.params["dimension_numbers"]))
    k = planner.open_kernel(shape)
    ref = k.read(planner._buffer_view(slot, shape, f32))
    k.ops.append(Op(P.convert, (ref,), {"new_dtype": bf16}, bf16, f32))
    planner.loc[id(out)] = Member(k, ("op", len(k.ops) - 1))


def contraction_loop(planner, eqn):
    """Integer/bool/float16 dot_general as a loop nest: the product of two views over
    the space (batch, lhs free, rhs free, contracted), summed over the contracted
    dimensions as NumPy's own matmul loop does: integers in the dtype, wrapping;
    float16 as exact float32 products summed in order in float32, rounded once."""
    (lhs, rhs), out = eqn.inputs, eqn.outputs[0]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lfree = [i for i in range(lhs.aval.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(rhs.aval.ndim) if i not in rc and i not in rb]
    space = out.aval.shape + tuple(lhs.aval.shape[i] for i in lc)
    vl, vr = planner.external_view(lhs), planner.external_view(rhs)
    ls = (tuple(vl.strides[i] for i in (*lb, *lfree)) + (0,) * len(rfree)
          + tuple(vl.strides[i] for i in lc))
    rs = (tuple(vr.strides[i] for i in rb) + (0,) * len(lfree)
          + tuple(vr.strides[i] for i in (*rfree, *rc)))
    dt = out.aval.dtype
    half = dt in dtypes.NARROW_FLOATS
    acc = np.dtype(np.float32) if half else dt
    k = Kernel(space, axes=tuple(range(out.aval.ndim, len(space))), reverse=False)
    a = k.read(View(vl.slot, space, dt, vl.offset, ls))
    b = k.read(View(vr.slot, space, dt, vr.offset, rs))
    k.ops.append(Op(P.mul, (a, b), {}, acc, acc))
    slot = planner.new_slot(out.aval.shape, dt)
    k.reduces.append(Reduce(P.reduce_sum, ("op", 0), slot, dt, acc, ordered=half))
    planner.seal(k)
    planner.loc[id(out)] = planner._buffer_view(slot, out.aval.shape, dt)


def conv(planner, eqn):
    lhs, rhs = (planner.array(a) for a in eqn.inputs)
    out = eqn.outputs[0]
    slot = planner.new_slot(out.aval.shape, out.aval.dtype)
    planner.steps.append(Conv(lhs, rhs, slot, dict(eqn.params)))
    planner.loc[id(out)] = planner._buffer_view(slot, out.aval.shape, out.aval.dtype)
