"""Linear algebra as LAPACK calls: which primitives lower (:data:`LOWERED`, from
``lapack.py``, ``lapack_eig.py`` and ``lapack_schur.py``), the scratch arrays each step
takes and the runtime's step."""

from __future__ import annotations

import numpy as np

from . import lapack, lapack_eig, lapack_schur

# primitive -> the function taking the operands, one out array per result, then the list
# of its scratch arrays (scratch_shapes)
LOWERED = {**lapack.LOWERED, **lapack_eig.LOWERED, **lapack_schur.LOWERED}


def scratch_shapes(eqn) -> list:
    """(shape, dtype) of each scratch array ``eqn``'s step takes (see
    ``lapack.scratch_shapes``). They live in the arena (reused memory: no page faults on
    every call)."""
    if eqn.prim in lapack_eig.LOWERED:
        return lapack_eig.scratch_shapes(eqn)
    if eqn.prim in lapack_schur.LOWERED:
        return lapack_schur.scratch_shapes(eqn)
    return lapack.scratch_shapes(eqn)


def lowering_gap(eqn) -> str | None:
    """Why a LOWERED primitive's equation still runs through the interpreter (None: it
    lowers)."""
    a = eqn.inputs[0].aval
    if a.dtype not in lapack.DTYPES:
        return f"{eqn.prim.name}: LAPACK has no {a.dtype} routine (interpreter)"
    if any(v.aval.size == 0 for v in (*eqn.inputs, *eqn.outputs)):
        return f"{eqn.prim.name} of an empty operand (interpreter)"
    return None


def lapack_step(step, plan, arena: set):
    """The runtime step of a plan's :class:`~backends.planning.plan.Lapack` step: results in
    the arena when they are intermediates, else in fresh arrays."""
    fn = LOWERED[step.eqn.prim]
    params = step.eqn.params
    shapes = [plan.slots[s] for s in step.outputs]

    def run(bufs):
        args = []
        for r in step.inputs:
            arr = np.asarray(r[1]) if r[0] == "lit" else bufs[r[1]]
            args.append(arr if r[0] == "lit" or arr.shape == r[2] else arr.reshape(r[2]))
        outs = []
        for slot, (shape, dtype) in zip(step.outputs, shapes, strict=True):
            if slot not in arena:
                bufs[slot] = np.empty(shape, dtype)
            outs.append(bufs[slot])
        fn(*args, *outs, [bufs[s] for s in step.scratch], **params)
    return run
