"""``solve`` and ``cholesky`` as native LAPACK calls in a shared library (``aot.py``).

Per matrix, the operands are copied into Fortran order in double precision (float32 too, as
NumPy computes it), ``dgesv`` / ``dpotrf`` of the ILP64 OpenBLAS the library opens is called
(resolved by ``NAME_init`` like ``?gemm``), and the result is copied back in the output's
dtype (cholesky: the other triangle zeroed): NumPy's routine on NumPy's copies, so NumPy's
values to the last bit. A singular matrix (solve) or one that is not positive definite
(cholesky) makes the call return 5, where NumPy raises ``LinAlgError``.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from . import irloop

I8, I64, I32, PTR = ir.IntType(8), ir.IntType(64), ir.IntType(32), ir.PointerType()
F64 = ir.DoubleType()
ROUTINES = {"solve": "dgesv", "cholesky": "dpotrf"}
SINGULAR = 5


def refusal(eqn) -> str | None:
    """Why the linalg equation ``eqn`` cannot be native library code, or None."""
    name = eqn.prim.name
    if name not in ROUTINES:
        return (f"{name} runs as Python-driven LAPACK calls in this backend; a shared "
                "library holds solve and cholesky only")
    dtype = eqn.outputs[0].aval.dtype
    if dtype.char not in "fd":
        return f"{name} on {dtype.name} (a shared library solves float32 and float64)"
    return None


def _const(v, ty=I64):
    return ir.Constant(ty, v)


def emit_lapack(module, fname, eqn, routine) -> ir.Function:
    """The internal ``i32 fname(ptr a, [ptr b,] ptr out)`` for ``eqn`` (solve or cholesky),
    calling ``routine`` (a global holding the LAPACK function's address)."""
    a_aval, out_aval = eqn.inputs[0].aval, eqn.outputs[0].aval
    n = a_aval.shape[-1]
    batch = math.prod(a_aval.shape[:-2])
    solve = eqn.prim.name == "solve"
    k = eqn.inputs[1].aval.shape[-1] if solve else 0
    elt = ir.FloatType() if np.dtype(out_aval.dtype).char == "f" else F64
    fn = ir.Function(module, ir.FunctionType(I32, [PTR] * (3 if solve else 2)), fname)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    a, out = fn.args[0], fn.args[-1]
    if batch == 0 or n == 0 or (solve and k == 0):
        b.ret(_const(0, I32))
        return fn
    malloc = irloop.declare(module, "malloc", PTR, [I64])
    free = irloop.declare(module, "free", ir.VoidType(), [PTR])
    words = n * n + n * k + n
    raw = b.call(malloc, [_const(8 * words)])
    with b.if_then(b.icmp_unsigned("==", raw, ir.Constant(PTR, None)), likely=False):
        b.ret(_const(3, I32))
    fa = raw
    fb = b.gep(raw, [_const(n * n)], source_etype=F64)
    ipiv = b.gep(raw, [_const(n * n + n * k)], source_etype=F64)
    n_p, k_p, info = irloop.cell(b, I64, n), irloop.cell(b, I64, k), irloop.cell(b, I64, 0)
    uplo = irloop.cell(b, I8, ord("U" if eqn.params.get("upper") else "L"))

    def load(base, index):
        v = b.load(b.gep(base, [index], source_etype=elt), typ=elt)
        return v if elt is F64 else b.fpext(v, F64)

    def store(base, index, v):
        b.store(v if elt is F64 else b.fptrunc(v, elt), b.gep(base, [index], source_etype=elt))

    def at(m, i, j, rows, cols):        # element (i, j) of matrix m, C order
        return b.add(b.mul(m, _const(rows * cols)), b.add(b.mul(i, _const(cols)), j))

    def fortran(i, j, rows):            # element (i, j) of a Fortran-order matrix
        return b.add(b.mul(j, _const(rows)), i)

    ty = ir.FunctionType(ir.VoidType(), [PTR] * 8 if solve else [PTR] * 5 + [I64])
    # a typed pointer prints as ``ptr`` and tells the call its function type
    lapack = b.load_atomic(routine, "acquire", 8, typ=ty.as_pointer())
    status = b.alloca(I32)
    b.store(_const(0, I32), status)
    head, m, done = irloop.open_loop(b, _const(0), _const(batch))
    irloop.nest(b, [n, n], lambda i, j: b.store(load(a, at(m, i, j, n, n)),
                                           b.gep(fa, [fortran(i, j, n)], source_etype=F64)))
    if solve:
        rhs = fn.args[1]
        irloop.nest(b, [n, k], lambda i, j: b.store(load(rhs, at(m, i, j, n, k)),
                                               b.gep(fb, [fortran(i, j, n)], source_etype=F64)))
        b.call(lapack, [n_p, k_p, fa, n_p, ipiv, fb, n_p, info])
    else:       # the trailing hidden length of the uplo string
        b.call(lapack, [uplo, n_p, fa, n_p, info, _const(1)])
    bad = b.icmp_signed("!=", b.load(info, typ=I64), _const(0))
    with b.if_then(bad, likely=False):
        b.store(_const(SINGULAR, I32), status)
    if solve:
        irloop.nest(b, [n, k], lambda i, j: store(out, at(m, i, j, n, k), b.load(
            b.gep(fb, [fortran(i, j, n)], source_etype=F64), typ=F64)))
    else:
        upper = bool(eqn.params.get("upper"))

        def factor(i, j):
            v = b.load(b.gep(fa, [fortran(i, j, n)], source_etype=F64), typ=F64)
            keep = b.icmp_signed("<=" if upper else ">=", i, j)
            store(out, at(m, i, j, n, n), b.select(keep, v, ir.Constant(F64, 0.0)))
        irloop.nest(b, [n, n], factor)
    irloop.close_loop(b, head, m, done, _const(1))
    b.call(free, [raw])
    b.ret(b.load(status, typ=I32))
    return fn
