"""What the CPU backend lowers natively: its rule for the shared partitioner.

:func:`lowering_gap` says why an equation runs through the interpreter on the CPU
(None: it lowers); :func:`partition` is the backend-neutral
:func:`backends.planning.partition.partition` under that rule, with the scratch slots
``lapack.py``'s steps take.
"""

from __future__ import annotations

from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P

from ..planning import partition as planning
from ..planning.partition import NEVER_LOWERED, PLANNED, numpy_gap
from ..planning.products import BLAS_DTYPES
from . import lapack_steps, scipy_calls
from .ops import RULES, unsupported

# Why a primitive never lowers natively: the explicit fallback table. These run
# through the interpreter's implementation for that one equation.
FALLBACK = {
    **NEVER_LOWERED,
    **{p: "LAPACK through NumPy/SciPy's linalg routines for the one equation (no native "
          "batched LAPACK call for it yet; backends/llvm/lapack.py has solve, cholesky, "
          "det, slogdet, lu, triangular_solve)" for p in P.LINALG if p not in lapack_steps.LOWERED},
    **{p: "a collective over the process axis: backends/mpi.py through the interpreter's "
          "implementation for the one equation (MPI's own call; vmap's named axes never "
          "reach a backend)" for p in P.COLLECTIVES},
    P.check_index: "fused before the partition (backends/llvm/bounds.py: wrap and clamp in "
                   "the kernels, a flag per check read after the call); only a loop body "
                   "keeps it, as an interpreter step that raises (its loop then runs from "
                   "Python)",
    P.fft: "the fft step (backends/llvm/fft.py): pocketfft through scipy.fft for the last "
           "axis, split over threads; native radix-4 transforms along power-of-two leading "
           "axes; long 1-d transforms by the four-step method with native twiddles and "
           "transposes (benchmarks/fft_four_step.py, benchmarks/linalg_fft.py)",
}
NATIVE = PLANNED | set(RULES) | set(lapack_steps.LOWERED)
# a fused concatenate selects among its operands at every point (a load and a select per
# operand): code and run time grow with points x operands, and LLVM's cost faster still
# (2,000 operands of 3 values: 35 s to compile). Above this many, NumPy copies them.
CONCAT_FUSED_MAX = 64


def lowering_gap(eqn) -> str | None:
    """Why ``eqn`` runs through the interpreter (None: it lowers natively)."""
    prim = eqn.prim
    if prim.family == "control":     # bodies are compiled on their own (loops.py)
        return None
    if prim is P.sort:      # moves raw bits: any dtype but complex keys
        if any(a.aval.dtype.kind == "c" for a in eqn.inputs[:eqn.params["num_keys"]]):
            return "sort: complex keys are not lowered natively (operands of other dtypes are)"
        return None
    if prim not in NATIVE:
        return FALLBACK.get(prim, "no native lowering and no fallback entry")
    if prim is P.concatenate and len(eqn.inputs) > CONCAT_FUSED_MAX:
        return (f"concatenate of {len(eqn.inputs)} operands (more than {CONCAT_FUSED_MAX}): "
                "NumPy copies each one once instead of a select per operand at every point")
    if prim in lapack_steps.LOWERED:
        return lapack_steps.lowering_gap(eqn)
    reason = unsupported(eqn)
    if reason is not None:
        return reason
    if prim is P.conv_general_dilated and eqn.inputs[0].aval.dtype not in \
            (*BLAS_DTYPES, dtypes.bfloat16):        # bfloat16: widened to float32 gemms
        return "conv_general_dilated: BLAS has no integer or float16 gemm (interpreter)"
    if prim is P.conv_general_dilated and eqn.inputs[0].aval.ndim == 2:
        return "conv_general_dilated without spatial dimensions (a matmul; interpreter)"
    return numpy_gap(eqn)


# libm calls in kernels: the loop around a call runs one element at a time, and the
# math feeding it and fed by it stops overlapping across elements (1M erf(log y) through
# libm: 65 ms fused, 0.6 + 23 ms as two kernels). So do the calls into SciPy (1M
# spence(exp(u)) + exp(x) tanh(x), one thread: 88 ms fused, 31 isolated; an expensive
# call with little math around it, gammainc(a, x) * 2 + 1: the same either way)
CALLS_ALONE = {P.lgamma} | set(scipy_calls.CALLS)
CALL_ALONE_MIN_POINTS = 1 << 12


def isolated(eqn) -> bool:
    """Whether ``eqn`` runs as a kernel of its own (:data:`CALLS_ALONE`, big arrays)."""
    out = eqn.outputs[0].aval
    return (eqn.prim in CALLS_ALONE or scipy_calls.is_call(eqn.prim, out.dtype)) \
        and out.size >= CALL_ALONE_MIN_POINTS


# Primitives lowered as long inline code (a polynomial, range reduction, special cases) or
# a call: a kernel takes at most MAX_HEAVY_OPS of them. LLVM's optimizer and register
# allocator grow faster than linearly with a function's size (a chain of 200 inline tanh
# in one loop: 13 s of CPU), while a chain cut into kernels of 16 compiles one or two
# distinct kernels (twins compile once) and pays one store and load per cut.
HEAVY = frozenset(p for p in RULES if (p.spec is not None and p.spec.libm)) | {
    P.logistic, P.erf, P.erfc, P.erfcx, P.bessel_i0e, P.bessel_i1e, P.digamma, P.zeta,
    P.polygamma}
MAX_HEAVY_OPS = 16


# bfloat16 products of at most this many multiply-adds widen to float32 (as the interpreter
# computes them): a float32 product is a call the native graph entry makes (at most
# runtime.GEMM_ENTRY_MAX_MACS), so a small bf16 graph runs in one native call; bigger ones
# keep bf16_gemm.py's step (vdpbf16ps where the CPU has it)
BF16_WIDEN_MACS = 1 << 21


def partition(graph, input_strides=None):
    """The CPU plan of ``graph`` (see :func:`backends.planning.partition.partition`)."""
    return planning.partition(graph, lowering_gap, lapack_steps.scratch_shapes, isolated,
                              (HEAVY, MAX_HEAVY_OPS), BF16_WIDEN_MACS, input_strides)
