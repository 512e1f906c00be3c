"""What the CPU backend lowers natively: its rule for the shared partitioner.

:func:`lowering_gap` says why an equation runs through the interpreter on the CPU
(None: it lowers); :func:`partition` is the backend-neutral
:func:`backends.planning.partition.partition` under that rule, with the scratch slots
``lapack.py``'s steps take.
"""

from __future__ import annotations

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
    P.fft: "the fft step (backends/llvm/fft.py): pocketfft through scipy.fft for the last "
           "axis, split over threads; native radix-4 transforms along power-of-two leading "
           "axes; long 1-d transforms by the four-step method with native twiddles and "
           "transposes (benchmarks/fft_four_step.py, benchmarks/linalg_fft.py)",
}
NATIVE = PLANNED | set(RULES) | set(lapack_steps.LOWERED)


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
    if prim in lapack_steps.LOWERED:
        return lapack_steps.lowering_gap(eqn)
    reason = unsupported(eqn)
    if reason is not None:
        return reason
    if prim is P.conv_general_dilated and eqn.inputs[0].aval.dtype not in BLAS_DTYPES:
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


def partition(graph):
    """The CPU plan of ``graph`` (see :func:`backends.planning.partition.partition`)."""
    return planning.partition(graph, lowering_gap, lapack_steps.scratch_shapes, isolated)
