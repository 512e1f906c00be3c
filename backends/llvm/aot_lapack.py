"""LAPACK-backed linear algebra as native calls in a shared library (``aot.py``).

Each step is an internal function ``i32 f(ptr input..., ptr output...)`` looping over the
batch: per matrix, the operands are copied into Fortran order, the routine of the ILP64
OpenBLAS the library opens is called (its address resolved by ``NAME_init`` like
``?gemm``), and the results are copied back in the outputs' dtypes. The routines and their
arguments are the jit backend's (``lapack.py``, ``lapack_eig.py``), so are the precisions:

- solve (``dgesv``), cholesky (``dpotrf``, the other triangle zeroed), det and slogdet
  (``dgetrf``, then the diagonal walked in order: the sign of the pivots and of the
  diagonal, a sequential sum of logs; slogdet_inv_t, their gradients' primitive, adds
  ``dgetri``), qr (``dgeqrf`` then ``dorgqr``), eigh (``dsyevd``) and svd (``dgesdd``):
  NumPy's routines in double precision on NumPy's copies (float32 too, rounded at the
  end), with the workspace sizes the jit backend queries for the shape (``lwork=-1`` at
  build time); eig (``dgeev``, right vectors, complex results built as NumPy builds them)
  too. det and slogdet take ``log``/``exp`` from the C library where the jit backend takes
  NumPy's vectorized ones: within a few ulps.
- lu (``?getrf``) and triangular_solve (``?trtrs``, ``a`` read in place as its Fortran
  transpose but for a conjugate transpose, which is copied) in the operand's own
  precision, SciPy's arguments (the jit backend calls SciPy's copy of the same routine).

Return codes (``aot.py``'s convention): 5 for a singular matrix (solve, triangular_solve,
slogdet_inv_t) or one that is not positive definite (cholesky), where NumPy and SciPy raise
``LinAlgError``; 6 when svd, eigh or eig does not converge or eig's operand holds infs or
NaNs (``LinAlgError`` too). det, slogdet and lu of a singular matrix succeed, as NumPy's and
SciPy's do (a zero determinant, a zero in U). Complex operands are refused.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from . import irloop, lapack, lapack_eig

I8, I64, I32, PTR = ir.IntType(8), ir.IntType(64), ir.IntType(32), ir.PointerType()
F32, F64 = ir.FloatType(), ir.DoubleType()
SINGULAR = 5
NO_CONVERGENCE = 6
# primitive -> the LAPACK routines its step calls (without the precision's letter)
_ROUTINES = {"solve": ("gesv",), "cholesky": ("potrf",), "det": ("getrf",),
             "slogdet": ("getrf",), "slogdet_inv_t": ("getrf", "getri"),
             "triangular_solve": ("trtrs",), "lu": ("getrf",), "qr": ("geqrf", "orgqr"),
             "eigh": ("syevd",), "svd": ("gesdd",), "eig": ("geev",)}
# ... of these in the operand's own precision (SciPy's), the others in double (NumPy's)
_OWN_PRECISION = ("triangular_solve", "lu")


def refusal(eqn) -> str | None:
    """Why the linalg equation ``eqn`` cannot be native library code, or None."""
    name = eqn.prim.name
    if name not in _ROUTINES:
        return (f"{name} runs as Python-driven LAPACK calls in this backend; a shared "
                f"library holds {', '.join(_ROUTINES)} only")
    dtype = eqn.inputs[0].aval.dtype
    if dtype.char not in "fd":
        return f"{name} on {dtype.name} (a shared library's LAPACK calls take float32 and float64)"
    return None


def _prefix(eqn) -> str:
    own = eqn.prim.name in _OWN_PRECISION and eqn.inputs[0].aval.dtype.char == "f"
    return "s" if own else "d"


def routines(eqn) -> list[str]:
    """The LAPACK routines (``dgesv``...) the step of ``eqn`` calls."""
    return [_prefix(eqn) + r for r in _ROUTINES[eqn.prim.name]]


def _const(v, ty=I64):
    return ir.Constant(ty, v)


class _Step:
    """The function of one LAPACK step under construction: its builder, a first block of
    stack cells (Fortran scalars, accumulators), one malloc'd scratch buffer, the status."""

    def __init__(self, module, fname, eqn, pointers):
        self.module, self.eqn, self.pointers = module, eqn, pointers
        n_in = len(eqn.inputs)
        fn = self.fn = ir.Function(
            module, ir.FunctionType(I32, [PTR] * (n_in + len(eqn.outputs))), fname)
        fn.linkage = "internal"
        self.ins, self.outs = fn.args[:n_in], fn.args[n_in:]
        self.cb = ir.IRBuilder(fn.append_basic_block("cells"))
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.status = self.local(I32, 0)
        self.cells, self.raw = {}, None
        self.shape = eqn.inputs[0].aval.shape
        self.batch = math.prod(self.shape[:-2])
        self.elt = F32 if eqn.inputs[0].aval.dtype.char == "f" else F64    # the operand's
        self.work = F32 if _prefix(eqn) == "s" else F64         # what LAPACK computes in

    def local(self, ty, value=None):
        """A stack cell of ``ty`` in the first block (holding ``value`` unless None)."""
        p = self.cb.alloca(ty)
        if value is not None:
            self.cb.store(ir.Constant(ty, value), p)
        return p

    def cell(self, value):
        """A pointer to the Fortran scalar ``value``: an int (i64), a character (i8)."""
        key = (type(value), value)
        if key not in self.cells:
            self.cells[key] = (self.local(I8, ord(value)) if isinstance(value, str)
                               else self.local(I64, value))
        return self.cells[key]

    def scratch(self, *sizes):
        """Pointers to consecutive regions of ``sizes`` 8-byte words of one buffer."""
        b = self.b
        malloc = irloop.declare(self.module, "malloc", PTR, [I64])
        self.raw = b.call(malloc, [_const(8 * max(sum(sizes), 1))])
        with b.if_then(b.icmp_unsigned("==", self.raw, ir.Constant(PTR, None)), likely=False):
            b.ret(_const(3, I32))
        regions, at = [], 0
        for size in sizes:
            regions.append(b.gep(self.raw, [_const(at)], source_etype=F64))
            at += size
        return regions

    def call(self, routine, args, hidden=0):
        """LAPACK's ``routine`` (without its letter) on ``args`` (pointers, or ints and
        characters passed in cells), then ``hidden`` Fortran string lengths of 1."""
        ptrs = [a if isinstance(a, ir.Value) else self.cell(a) for a in args]
        ty = ir.FunctionType(ir.VoidType(), [PTR] * len(ptrs) + [I64] * hidden)
        # a typed pointer prints as ``ptr`` and tells the call its function type
        fn = self.b.load_atomic(self.pointers[_prefix(self.eqn) + routine], "acquire", 8,
                                typ=ty.as_pointer())
        self.b.call(fn, ptrs + [_const(1)] * hidden)

    def fail_if(self, info, code):
        """The status becomes ``code`` when LAPACK's ``info`` (an i64 cell) is not 0."""
        b = self.b
        with b.if_then(b.icmp_signed("!=", b.load(info, typ=I64), _const(0)), likely=False):
            b.store(_const(code, I32), self.status)

    def load(self, base, index, elt):
        return self.b.load(self.b.gep(base, [index], source_etype=elt), typ=elt)

    def store(self, base, index, v, elt):
        """``v`` (float or double) stored as ``elt`` at ``base[index]``."""
        b = self.b
        if v.type != elt:
            v = b.fpext(v, elt) if elt == F64 else b.fptrunc(v, elt)
        b.store(v, b.gep(base, [index], source_etype=elt))

    def to_fortran(self, src, m, rows, cols, dst, elt):
        """Matrix ``m`` of the C-order batch ``src`` (rows, cols) into the Fortran-order
        ``dst`` (leading dimension ``rows``) as ``elt``."""
        b = self.b
        start = b.mul(m, _const(rows * cols))
        irloop.nest(b, [rows, cols], lambda i, j: self.store(
            dst, b.add(b.mul(j, _const(rows)), i),
            self.load(src, b.add(start, b.add(b.mul(i, _const(cols)), j)), self.elt), elt))

    def from_fortran(self, src, ld, dst, elt, m, rows, cols, keep=None):
        """Matrix ``m`` (rows, cols) of the C-order batch ``dst`` (``elt``) from the
        Fortran-order ``src`` (the work precision, leading dimension ``ld``); where
        ``keep(i, j)`` (an i1) is false, 0."""
        b = self.b
        start = b.mul(m, _const(rows * cols))

        def put(i, j):
            v = self.load(src, b.add(b.mul(j, _const(ld)), i), self.work)
            if keep is not None:
                v = b.select(keep(i, j), v, ir.Constant(self.work, 0.0))
            self.store(dst, b.add(start, b.add(b.mul(i, _const(cols)), j)), v, elt)
        irloop.nest(b, [rows, cols], put)

    def copy(self, src, src_elt, dst, dst_elt, size, src_at=None, dst_at=None):
        """``size`` values from ``src`` (from index ``src_at``) to ``dst`` (``dst_at``)."""
        b = self.b
        irloop.nest(b, [size], lambda i: self.store(
            dst, i if dst_at is None else b.add(dst_at, i),
            self.load(src, i if src_at is None else b.add(src_at, i), src_elt), dst_elt))

    def each_matrix(self, body):
        """``body(m)`` for each matrix ``m`` of the batch, in a native loop."""
        head, m, done = irloop.open_loop(self.b, _const(0), _const(self.batch))
        body(m)
        irloop.close_loop(self.b, head, m, done, _const(1))

    def finish(self):
        self.cb.branch(self.fn.blocks[1])
        b = self.b
        if self.raw is not None:
            b.call(irloop.declare(self.module, "free", ir.VoidType(), [PTR]), [self.raw])
        b.ret(b.load(self.status, typ=I32))
        return self.fn


def _solve(s):
    (a, rhs), (out,) = s.ins, s.outs
    n, k = s.eqn.inputs[1].aval.shape[-2:]
    fa, fb, ipiv, info = s.scratch(n * n, n * k, n, 1)

    def body(m):
        s.to_fortran(a, m, n, n, fa, F64)
        s.to_fortran(rhs, m, n, k, fb, F64)
        s.call("gesv", [n, k, fa, n, ipiv, fb, n, info])
        s.fail_if(info, SINGULAR)
        s.from_fortran(fb, n, out, s.elt, m, n, k)
    s.each_matrix(body)


def _cholesky(s):
    (a,), (out,) = s.ins, s.outs
    n = s.shape[-1]
    upper = bool(s.eqn.params.get("upper"))
    fa, info = s.scratch(n * n, 1)

    def body(m):
        s.to_fortran(a, m, n, n, fa, F64)
        s.call("potrf", ["U" if upper else "L", n, fa, n, info], hidden=1)
        s.fail_if(info, SINGULAR)
        s.from_fortran(fa, n, out, s.elt, m, n, n,
                       keep=lambda i, j: s.b.icmp_signed("<=" if upper else ">=", i, j))
    s.each_matrix(body)


def _sign_and_log(s, fa, ipiv, info, n, sign, log):
    """(sign, log|det|) from ``?getrf``'s factors into the cells ``sign`` and ``log``:
    the parity of the row swaps and of the negative diagonal, the logs of the diagonal's
    magnitudes summed in order; a singular matrix (``info > 0``) gives 0 and -inf."""
    b, module = s.b, s.module
    fabs = irloop.declare(module, "llvm.fabs.f64", F64, [F64])
    clog = irloop.declare(module, "log", F64, [F64])
    odd = s.local(I64)
    b.store(_const(0), odd)
    b.store(ir.Constant(F64, 0.0), log)

    def step(i):
        d = s.load(fa, b.mul(i, _const(n + 1)), F64)
        swapped = b.icmp_signed("!=", s.load(ipiv, i, I64), b.add(i, _const(1)))
        negative = b.fcmp_ordered("<", d, ir.Constant(F64, 0.0))
        flips = b.add(b.zext(swapped, I64), b.zext(negative, I64))
        b.store(b.add(b.load(odd, typ=I64), flips), odd)
        b.store(b.fadd(b.load(log, typ=F64), b.call(clog, [b.call(fabs, [d])])), log)
    irloop.nest(b, [n], step)
    parity = b.trunc(b.load(odd, typ=I64), ir.IntType(1))
    one = b.select(parity, ir.Constant(F64, -1.0), ir.Constant(F64, 1.0))
    singular = b.icmp_signed(">", b.load(info, typ=I64), _const(0))
    b.store(b.select(singular, ir.Constant(F64, 0.0), one), sign)
    b.store(b.select(singular, ir.Constant(F64, -np.inf), b.load(log, typ=F64)), log)


def _determinant(s):
    """det, slogdet and slogdet_inv_t (which adds ``dgetri`` on the same factors: the
    Fortran inverse read in C order is the inverse transposed; a singular matrix is code 5
    there, where the jit backend raises)."""
    (a,), outs = s.ins, s.outs
    n = s.shape[-1]
    inverse = s.eqn.prim.name == "slogdet_inv_t"
    lwork = n * (lapack.GETRI_BLOCK if n > lapack.GETRI_BLOCK else 1)
    fa, ipiv, info, work = s.scratch(n * n, n, 1, lwork if inverse else 0)
    sign, log = s.local(F64), s.local(F64)
    exp = irloop.declare(s.module, "exp", F64, [F64])

    def body(m):
        b = s.b
        s.to_fortran(a, m, n, n, fa, F64)
        s.call("getrf", [n, n, fa, n, ipiv, info])
        if inverse:
            s.fail_if(info, SINGULAR)
        _sign_and_log(s, fa, ipiv, info, n, sign, log)
        sg, lg = b.load(sign, typ=F64), b.load(log, typ=F64)
        if s.eqn.prim.name == "det":
            s.store(outs[0], m, b.fmul(sg, b.call(exp, [lg])), s.elt)
            return
        s.store(outs[0], m, sg, s.elt)
        s.store(outs[1], m, lg, s.elt)
        if inverse:
            s.call("getri", [n, fa, n, ipiv, work, lwork, info])
            s.copy(fa, F64, outs[2], s.elt, n * n, dst_at=b.mul(m, _const(n * n)))
    s.each_matrix(body)


def _triangular_solve(s):
    """SciPy's ``?trtrs`` call as ``lapack.triangular_solve`` makes it (real operands)."""
    (a, rhs), (out,) = s.ins, s.outs
    p = s.eqn.params
    n = s.shape[-1]
    left = p["left_side"]
    rows_b, cols_b = s.eqn.inputs[1].aval.shape[-2:]
    nrhs = cols_b if left else rows_b
    op = lapack.tri_op(left, p["transpose_a"], p["conjugate_a"])
    if op == "conj" or (op == "C" and n >= lapack.TRI_IN_PLACE_MIN_N):
        op = "N" if op == "conj" else "T"       # a real conjugate is the matrix itself
    copied = op == "C" or n == 1        # SciPy's Fortran-order branch
    uplo = ("L" if p["lower"] else "U") if copied else ("U" if p["lower"] else "L")
    trans = op if copied else {"N": "T", "T": "N"}[op]
    fa, fb, info = s.scratch(n * n if copied else 0, n * nrhs, 1)
    size = n * nrhs

    def body(m):
        b = s.b
        if copied:
            s.to_fortran(a, m, n, n, fa, s.work)
            matrix = fa
        else:
            matrix = b.gep(a, [b.mul(m, _const(n * n))], source_etype=s.elt)
        if left:
            s.to_fortran(rhs, m, n, nrhs, fb, s.work)
        else:       # b's rows are the Fortran right-hand sides
            s.copy(rhs, s.elt, fb, s.work, size, src_at=b.mul(m, _const(size)))
        s.call("trtrs", [uplo, trans, "U" if p["unit_diagonal"] else "N", n, nrhs, matrix, n,
                         fb, n, info], hidden=3)
        s.fail_if(info, SINGULAR)
        if left:
            s.from_fortran(fb, n, out, s.elt, m, n, nrhs)
        else:
            s.copy(fb, s.work, out, s.elt, size, dst_at=b.mul(m, _const(size)))
    s.each_matrix(body)


def _lu(s):
    """``?getrf`` in the operand's precision; the pivots 0-based and the row order they
    make (the swaps applied in turn, as ``lapack.lu``)."""
    (a,), (lu_out, pivots, order) = s.ins, s.outs
    n = s.shape[-1]
    fa, ipiv, info = s.scratch(n * n, n, 1)

    def body(m):
        b = s.b
        s.to_fortran(a, m, n, n, fa, s.work)
        s.call("getrf", [n, n, fa, n, ipiv, info])
        s.from_fortran(fa, n, lu_out, s.elt, m, n, n)
        row = b.mul(m, _const(n))

        def at(base, k):
            return b.gep(base, [b.add(row, k)], source_etype=I32)

        def start(k):
            b.store(b.trunc(b.sub(s.load(ipiv, k, I64), _const(1)), I32), at(pivots, k))
            b.store(b.trunc(k, I32), at(order, k))
        irloop.nest(b, [n], start)

        def swap(k):
            j = b.sext(b.load(at(pivots, k), typ=I32), I64)
            here, there = b.load(at(order, k), typ=I32), b.load(at(order, j), typ=I32)
            b.store(there, at(order, k))
            b.store(here, at(order, j))
        irloop.nest(b, [n], swap)
    s.each_matrix(body)


def _qr(s):
    """``dgeqrf`` then ``dorgqr`` (``lapack_eig.qr``): R the upper triangle of the factors,
    Q from their first columns. Their ``info`` is nonzero only for an illegal argument,
    which the static shapes rule out."""
    (a,), (q_out, r_out) = s.ins, s.outs
    rows, n = s.shape[-2:]
    mn, mc, _, lw_f, lw_q = lapack_eig.qr_sizes(np.dtype(np.float64), rows, n,
                                                s.eqn.params["full_matrices"])
    fa, fq, tau, work, info = s.scratch(rows * n, rows * mc, mn, max(lw_f, lw_q), 1)
    c = min(n, mc)

    def body(m):
        b = s.b
        s.to_fortran(a, m, rows, n, fa, F64)
        s.call("geqrf", [rows, n, fa, rows, tau, work, lw_f, info])
        s.from_fortran(fa, rows, r_out, s.elt, m, mc, n,
                       keep=lambda i, j: b.icmp_signed(">=", j, i))

        def column(j, i):
            at = b.add(b.mul(j, _const(rows)), i)
            inside = b.icmp_signed("<", j, _const(c))
            b.store(b.select(inside, s.load(fa, b.select(inside, at, _const(0)), F64),
                             ir.Constant(F64, 0.0)), b.gep(fq, [at], source_etype=F64))
        irloop.nest(b, [mc, rows], column)
        s.call("orgqr", [rows, mc, mn, fq, rows, tau, work, lw_q, info])
        s.from_fortran(fq, rows, q_out, s.elt, m, rows, mc)
    s.each_matrix(body)


def _eigh(s):
    (a,), (w_out, v_out) = s.ins, s.outs
    n = s.shape[-1]
    lower = bool(s.eqn.params["lower"])
    _, lwork, liwork, _ = lapack_eig.eigh_sizes(np.dtype(np.float64), n, lower)
    fa, w, work, iwork, info = s.scratch(n * n, n, lwork, liwork, 1)

    def body(m):
        s.to_fortran(a, m, n, n, fa, F64)
        s.call("syevd", ["V", "L" if lower else "U", n, fa, n, w, work, lwork, iwork, liwork,
                         info], hidden=2)
        s.fail_if(info, NO_CONVERGENCE)
        s.copy(w, F64, w_out, s.elt, n, dst_at=s.b.mul(m, _const(n)))
        s.from_fortran(fa, n, v_out, s.elt, m, n, n)
    s.each_matrix(body)


def _svd(s):
    (a,), outs = s.ins, s.outs
    rows, n = s.shape[-2:]
    p = s.eqn.params
    mn, jobz, ucol, vrow, lwork, _ = lapack_eig.svd_sizes(
        np.dtype(np.float64), rows, n, p["full_matrices"], p["compute_uv"])
    fa, sv, fu, fvt, work, iwork, info = s.scratch(
        rows * n, mn, max(rows * ucol, 1), max(vrow * n, 1), lwork, 8 * mn, 1)

    def body(m):
        s.to_fortran(a, m, rows, n, fa, F64)
        s.call("gesdd", [jobz, rows, n, fa, rows, sv, fu, rows, fvt, max(vrow, 1), work, lwork,
                         iwork, info], hidden=1)
        s.fail_if(info, NO_CONVERGENCE)
        s.copy(sv, F64, outs[0], s.elt, mn, dst_at=s.b.mul(m, _const(mn)))
        if p["compute_uv"]:
            s.from_fortran(fu, rows, outs[1], s.elt, m, rows, ucol)
            s.from_fortran(fvt, vrow, outs[2], s.elt, m, vrow, n)
    s.each_matrix(body)


def _eig(s):
    """``dgeev`` with right vectors only (``lapack_eig.eig``): the eigenvalues
    ``wr + i wi``; a real eigenvalue's vector is its column, a conjugate pair's (``wi > 0``
    then ``wi < 0``) columns x, y make ``x + i y`` and ``x - i y``. A matrix with infs or
    NaNs is not factored: code 6 (the jit backend raises, as NumPy's eig)."""
    (a,), outs = s.ins, s.outs
    n = s.shape[-1]
    vectors = bool(s.eqn.params["compute_v"])
    jobvr, lwork = lapack_eig.eig_sizes(np.dtype(np.float64), n, vectors)
    fa, wr, wi, vl, vr, work, info = s.scratch(n * n, n, n, 1, n * n if vectors else 1,
                                               lwork, 1)
    bad = s.local(ir.IntType(1))

    def part(out, index, imag, v):      # the real or imaginary part of out[index]
        s.store(out, s.b.add(s.b.mul(index, _const(2)), _const(int(imag))), v, s.elt)

    def body(m):
        b = s.b
        s.to_fortran(a, m, n, n, fa, F64)
        b.store(ir.Constant(ir.IntType(1), 0), bad)

        def check(i):
            x = s.load(fa, i, F64)
            finite = b.fcmp_ordered("<", b.call(irloop.declare(
                s.module, "llvm.fabs.f64", F64, [F64]), [x]), ir.Constant(F64, np.inf))
            b.store(b.or_(b.load(bad, typ=ir.IntType(1)), b.not_(finite)), bad)
        irloop.nest(b, [n * n], check)
        nonfinite = b.load(bad, typ=ir.IntType(1))
        with b.if_then(nonfinite, likely=False):
            b.store(_const(NO_CONVERGENCE, I32), s.status)
        with b.if_then(b.not_(nonfinite)):
            s.call("geev", ["N", jobvr, n, fa, n, wr, wi, vl, n, vr, n, work, lwork, info],
                   hidden=2)
            s.fail_if(info, NO_CONVERGENCE)
            row = b.mul(m, _const(n))

            def value(j):
                part(outs[0], b.add(row, j), False, s.load(wr, j, F64))
                part(outs[0], b.add(row, j), True, s.load(wi, j, F64))
            irloop.nest(b, [n], value)
            if vectors:
                _pairs(s, vr, wi, n, b.mul(m, _const(n * n)), outs[1], part)
    s.each_matrix(body)


def _pairs(s, vr, wi, n, start, out, part):
    """The complex vectors of :func:`_eig` from ``dgeev``'s real columns ``vr``."""
    b = s.b
    zero = ir.Constant(F64, 0.0)

    def put(i, j):
        w = s.load(wi, j, F64)
        first, second = b.fcmp_ordered(">", w, zero), b.fcmp_ordered("<", w, zero)
        # the neighbouring columns, clamped (a pair never starts at the last column)
        before = b.select(b.icmp_signed(">", j, _const(0)), b.sub(j, _const(1)), j)
        after = b.select(b.icmp_signed("<", j, _const(n - 1)), b.add(j, _const(1)), j)

        def col(k):
            return s.load(vr, b.add(b.mul(k, _const(n)), i), F64)
        x = col(j)
        re = b.select(second, col(before), x)
        im = b.select(first, col(after), b.select(second, b.fneg(x), zero))
        at = b.add(start, b.add(b.mul(i, _const(n)), j))
        part(out, at, False, re)
        part(out, at, True, im)
    irloop.nest(b, [n, n], put)


_EMIT = {"solve": _solve, "cholesky": _cholesky, "det": _determinant,
         "slogdet": _determinant, "slogdet_inv_t": _determinant,
         "triangular_solve": _triangular_solve, "lu": _lu, "qr": _qr, "eigh": _eigh, "svd": _svd,
         "eig": _eig}


def emit_lapack(module, fname, eqn, pointers) -> ir.Function:
    """The internal ``i32 fname(ptr input..., ptr output...)`` running ``eqn``'s step,
    calling the routines :func:`routines` names through ``pointers`` (routine -> the
    global holding its address)."""
    s = _Step(module, fname, eqn, pointers)
    if all(v.aval.size for v in (*eqn.inputs, *eqn.outputs)):
        _EMIT[eqn.prim.name](s)
    return s.finish()
