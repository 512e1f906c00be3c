"""sqrtm and sylvester through the complex Schur form: LAPACK's ``zgees`` and ``ztrsyl``
batched in native code (the machinery of :mod:`backends.llvm.lapack`), in double precision
as the interpreter's SciPy computes (complex64 results are rounded from it).

- sqrtm (SciPy's recursive Schur method): ``A = Z T Z^H`` (``zgees``); the diagonal of
  ``R`` the principal roots of ``T``'s; the rest of ``R`` by halves, inner blocks first:
  ``R11 R12 + R12 R22 = T12`` (``ztrsyl``), so ``n - 1`` batched calls for ``n`` rows;
  then ``X = Z R Z^H`` (NumPy's batched matmul: the same OpenBLAS). A real matrix's
  eigenvalue on the negative real axis comes out of the complex Schur form with an
  imaginary part of rounding size and either sign; it is taken as real (``+i sqrt|w|``,
  what SciPy's real Schur form gives) when that part is below ``64 eps |T|``.
- sylvester ``a y + y b = c``: ``a = U R U^H``, ``b = V S V^H`` (``zgees``; once when
  ``b`` equals ``a``, as in sqrtm's derivative), then ``R x + x S = U^H c V`` (``ztrsyl``)
  and ``y = U x V^H``.

``ztrsyl``'s scale factor (below 1 only to avoid overflow) divides the solution. A
singular equation (``info = 1``: LAPACK perturbed the eigenvalues) is no error, as in
SciPy: the values are then huge or not finite.
"""

from __future__ import annotations

import contextlib
import functools
import math

import numpy as np
from functorch_core.ir import primitives as P

from . import blas
from . import lapack as base
from .lapack_eig import _call, _Own, _threads

LinAlgError = np.linalg.LinAlgError
_C = np.dtype(np.complex128)
# zgees's SELECT, never called with SORT = 'N' (the trampoline passes this cell's address)
_NO_SELECT = np.zeros((), np.int64)
# products of matrices of at most this many rows run on the calling thread (_products)
_ONE_THREAD_MAX_N = 128


def _ints():
    return base.routine("zgees")[1]


@functools.cache
def _gees_lwork(routine_key, n):
    """``zgees``'s optimal workspace length for ``n`` rows (a query with ``lwork = -1``)."""
    ints = _ints()
    work, info = np.zeros((1, 1), _C), np.zeros(1, ints)
    mat = np.zeros((1, max(n * n, 1)), _C)
    args = ["V", "N", _NO_SELECT, n, mat, n, np.zeros(1, ints), np.zeros((1, n), _C),
            mat.copy(), n, work, -1, np.zeros((1, n)), np.zeros(1, ints), info]
    base.BatchCall("zgees", ints, args, 1, 2)(False)
    if info[0] != 0:
        raise LinAlgError(f"zgees: workspace query failed (info {info[0]}) for n = {n}")
    return max(int(work[0, 0].real), 2 * n, 1)


def _lwork(n):
    return _gees_lwork(base.routine("zgees"), n)


def _spec(prim, shapes) -> dict:
    """name -> (shape, dtype) of each scratch array of a step (in this order)."""
    ints = _ints()
    batch = math.prod(shapes[0][:-2])
    if prim is P.sqrtm:
        m = n = shapes[0][-1]
    else:
        m, n = shapes[2][-2:]
    k = max(m, n)
    threads = _threads(k, batch)
    return {"a": ((batch, m, m), _C), "u": ((batch, m, m), _C),
            "b": ((batch, n, n) if prim is P.sylvester else (0,), _C),
            "v": ((batch, n, n) if prim is P.sylvester else (0,), _C),
            "w": ((batch, k), _C), "sdim": ((batch,), ints), "info": ((batch,), ints),
            "scale": ((batch,), np.dtype(np.float64)),
            "work": ((threads, max(_lwork(m), _lwork(n))), _C),
            "rwork": ((threads, k), np.dtype(np.float64)), "bwork": ((threads, 1), ints)}


def scratch_shapes(eqn) -> list:
    """(shape, dtype) of each scratch array of ``eqn``'s step (see :func:`_spec`)."""
    return list(_spec(eqn.prim, [v.aval.shape for v in eqn.inputs]).values())


def _schur(name, x, fa, vs, s, n):
    """``zgees`` on each matrix of ``x`` (batch, n, n): the triangular factor into the
    Fortran-order ``fa``, the unitary one into ``vs``."""
    batch = len(s["info"])
    base._fortran(x, fa, n, n)
    info = s["info"]
    args = ["V", "N", _NO_SELECT, n, fa, n, s["sdim"], s["w"], vs, n, _Own(s["work"]),
            _lwork(n), _Own(s["rwork"]), _Own(s["bwork"]), info]
    _call("zgees", info.dtype, args, batch, n, n_hidden=2)
    if info.any():
        raise LinAlgError(f"{name}: the Schur form did not converge (operand of shape "
                          f"{base._shapes(x)})")


def _trsyl(name, s, r, ldr, t, ldt, c, ldc, m, n):
    """``r x + x t = c`` for upper triangular ``r`` (m rows) and ``t`` (n rows), ``x`` over
    ``c`` (Fortran order, leading dimensions ``ld*``), divided by ztrsyl's scale."""
    info, scale = s["info"], s["scale"]
    _call("ztrsyl", info.dtype, ["N", "N", 1, m, n, r, ldr, t, ldt, c, ldc, scale, info],
          len(info), max(m, n), n_hidden=2)
    if (info < 0).any():
        raise LinAlgError(f"{name}: ztrsyl rejected argument {-info.min()}")
    if (scale != 1).any():
        c[:, :n, :m] /= scale[:, None, None]


def _root_blocks(s, fa, lo, hi, n):
    """The off-diagonal blocks of the root of ``fa[lo:hi, lo:hi]`` (its diagonal already
    the roots), inner blocks first."""
    if hi - lo < 2:
        return
    mid = (lo + hi) // 2
    _root_blocks(s, fa, lo, mid, n)
    _root_blocks(s, fa, mid, hi, n)
    _trsyl("sqrtm", s, fa[:, lo:, lo:], n, fa[:, mid:, mid:], n, fa[:, mid:, lo:], n,
           mid - lo, hi - mid)


def _products(n):
    """Where NumPy's matmuls of ``n``-row matrices run: on this thread for small ones
    (OpenBLAS's threads meet at a barrier in every gemm; a preempted one stalls the
    product: 64x64 took 40 ms here on a busy machine instead of 0.05)."""
    return blas.one_thread_each() if n <= _ONE_THREAD_MAX_N else contextlib.nullcontext()


def _back(z, r, out):
    """``z r z^H`` into ``out`` (C order) from Fortran-order ``z`` and upper triangular
    ``r``."""
    zc = z.transpose(0, 2, 1)
    with _products(z.shape[-1]):
        x = zc @ np.triu(r.transpose(0, 2, 1)) @ np.conj(z)
    np.copyto(out, x, casting="unsafe")


def sqrtm(a, out, scratch):
    """The principal square root of each matrix of ``a`` (SciPy's Schur method)."""
    n = a.shape[-1]
    s = dict(zip(_spec(P.sqrtm, [a.shape]), scratch, strict=True))
    batch = len(s["info"])
    fa, z = s["a"], s["u"]
    _schur("sqrtm", a.reshape(batch, n, n), fa, z, s, n)
    i = np.arange(n)
    diag = fa[:, i, i]
    if a.dtype.kind == "f":
        size = np.linalg.norm(a.reshape(batch, -1), axis=1)[:, None]
        on_cut = (diag.real < 0) & (np.abs(diag.imag) <= 64 * np.finfo(float).eps * size)
        diag.imag[on_cut] = 0.0
    fa[:, i, i] = np.sqrt(diag)
    _root_blocks(s, fa, 0, n, n)
    _back(z, fa, out.reshape(batch, n, n))


def sylvester(a, b, c, out, scratch):
    """``y`` with ``a y + y b = c`` for each matrix triple, through both Schur forms."""
    m, n = c.shape[-2:]
    s = dict(zip(_spec(P.sylvester, [a.shape, b.shape, c.shape]), scratch, strict=True))
    batch = len(s["info"])
    _schur("sylvester", a.reshape(batch, m, m), s["a"], s["u"], s, m)
    if b.shape == a.shape and np.array_equal(b, a):     # the same matrix on both sides
        np.copyto(s["b"], s["a"])       # (sqrtm's derivative): one Schur form serves both
        np.copyto(s["v"], s["u"])
    else:
        _schur("sylvester", b.reshape(batch, n, n), s["b"], s["v"], s, n)
    u, v = s["u"].transpose(0, 2, 1), s["v"].transpose(0, 2, 1)
    with _products(max(m, n)):
        f = np.conj(u).transpose(0, 2, 1) @ c.reshape(batch, m, n) @ v
    ff = np.ascontiguousarray(f.transpose(0, 2, 1))     # Fortran order: (batch, n, m)
    _trsyl("sylvester", s, s["a"], m, s["b"], n, ff, m, m, n)
    with _products(max(m, n)):
        y = u @ ff.transpose(0, 2, 1) @ np.conj(v).transpose(0, 2, 1)
    np.copyto(out.reshape(batch, m, n), y, casting="unsafe")


LOWERED = {P.sqrtm: sqrtm, P.sylvester: sylvester}
