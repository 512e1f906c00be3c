"""solve, cholesky, det, slogdet, slogdet_inv_t, lu and triangular_solve as LAPACK calls
batched in native code.

The routines are the ones the interpreter's NumPy/SciPy functions call, from the same library:

- solve (``?gesv``), cholesky (``?potrf``), det and slogdet (``?getrf``): NumPy's gufuncs'
  routines, in double precision as NumPy computes float32 and complex64 too, from its
  bundled ILP64 OpenBLAS (``scipy_dgesv_64_``...; 64-bit integers), else from SciPy's
  ``cython_lapack`` capsules (32-bit integers). Each matrix is copied into Fortran order
  as NumPy does, so solve and cholesky give NumPy's values to the last bit (a big
  cholesky: :func:`cholesky` says when it is blocked, within rounding). det and
  slogdet walk the diagonal of the factors in NumPy's order, but with NumPy's vectorized
  ``log``/``exp`` and complex multiply where the gufunc calls the C library's and its
  own: within a few ulps (tests/backends/llvm/test_llvm_lapack.py says how many). slogdet_inv_t adds
  ``?getri`` on the same factors (NumPy's inv solves against the identity instead: its
  values within rounding).
- lu: SciPy's ``?getrf`` in the operand's own precision, what ``scipy.linalg.lu_factor``
  calls: SciPy's values to the last bit (without its warning on a singular matrix).
- triangular_solve: SciPy's ``?trtrs`` as ``scipy.linalg.solve_triangular`` calls it
  (the interpreter calls it per matrix): SciPy's values to the last bit, but for a big
  matrix's conjugate transpose (:func:`triangular_solve`).

A *batch call* is one native loop (an LLVM function per argument count) calling the
routine once per matrix, every Fortran argument a pointer advanced by a fixed number of
bytes per matrix; it runs through ctypes, which releases the GIL. Batches of small
matrices (at most :data:`SPLIT_MAX_N` rows) are split over the runtime's threads with
NumPy's OpenBLAS held at one thread each (OpenBLAS runs such small matrices on one thread
anyway, so the bits do not change); bigger matrices take OpenBLAS's own threads. The
copies, pivots and info codes live in the executable's arena (scratch slots of the
plan's :class:`~backends.planning.plan.Lapack` step).

An error LAPACK reports (``info > 0``: a singular matrix, one not positive definite) is
raised as the interpreter raises it: ``LinAlgError`` naming the primitive and the shapes.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import math

import numpy as np
from functorch_core.ir import primitives as P

from . import blas, blocked_cholesky, engine, threads

LinAlgError = np.linalg.LinAlgError
# batches of matrices of at most this many rows are split over the runtime's threads (OpenBLAS
# runs such a matrix on one thread anyway: the same bits as NumPy's call)
SPLIT_MAX_N = 64
# ... when the batch holds at least this many matrices
SPLIT_MIN_BATCH = 8
_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}
_routines: dict = {}
_trampolines: dict = {}
# the loops' native code goes before the runtime's module globals do at interpreter exit
atexit.register(_trampolines.clear)


def _cython_lapack():
    import scipy.linalg.cython_lapack as module
    return module


def _numpy_lapack():
    """NumPy's OpenBLAS when it is the BLAS in use and has every routine this module calls
    (then all come from it, with its 64-bit integers), else None."""
    if "numpy" not in _routines:
        lib = blas._numpy_lib[0] if blas.blas_int_bits() == 64 else None
        names = [p + r for p in "sdcz" for r in ("gesv", "potrf", "getrf", "getri")]
        ok = lib is not None and all(hasattr(lib, f"scipy_{n}_64_") for n in names)
        _routines["numpy"] = lib if ok else None
    return _routines["numpy"]


def routine(name: str, scipy: bool = False):
    """(address, integer dtype) of LAPACK's ``name`` (e.g. ``"dgesv"``): NumPy's OpenBLAS
    (64-bit integers) when :func:`_numpy_lapack` has it and ``scipy`` is false, else
    SciPy's (32-bit: the one ``scipy.linalg`` calls)."""
    key = (name, scipy)
    if key not in _routines:
        lib = None if scipy else _numpy_lapack()
        if lib is not None:
            address = ctypes.cast(getattr(lib, f"scipy_{name}_64_"), ctypes.c_void_p).value
            _routines[key] = (address, np.dtype(np.int64))
        else:
            capsule = _cython_lapack().__pyx_capi__[name]
            _routines[key] = (blas._capsule_pointer(capsule), np.dtype(np.int32))
    return _routines[key]


def _trampoline_ir(n_args: int, n_hidden: int, name: str) -> str:
    """A function ``name(fn, lo, hi, bases, strides)`` calling ``fn`` for each i in
    [lo, hi) with ``n_args`` pointers ``bases[j] + i * strides[j]`` then ``n_hidden``
    Fortran string lengths of 1 (callers that ignore them take no harm)."""
    lines = [f"define void @{name}(ptr %fn, i64 %lo, i64 %hi, ptr %bases, ptr %strides) {{",
             "entry:", "  %go = icmp slt i64 %lo, %hi", "  br i1 %go, label %body, label %done",
             "body:", "  %i = phi i64 [%lo, %entry], [%next, %body]"]
    for j in range(n_args):
        lines += [f"  %bp{j} = getelementptr ptr, ptr %bases, i64 {j}",
                  f"  %b{j} = load ptr, ptr %bp{j}",
                  f"  %sp{j} = getelementptr i64, ptr %strides, i64 {j}",
                  f"  %s{j} = load i64, ptr %sp{j}",
                  f"  %o{j} = mul i64 %i, %s{j}",
                  f"  %a{j} = getelementptr i8, ptr %b{j}, i64 %o{j}"]
    args = [f"ptr %a{j}" for j in range(n_args)] + ["i64 1"] * n_hidden
    lines += [f"  call void %fn({', '.join(args)})", "  %next = add i64 %i, 1",
              "  %more = icmp slt i64 %next, %hi", "  br i1 %more, label %body, label %done",
              "done:", "  ret void", "}"]
    return "\n".join(lines) + "\n"


def _trampoline(n_args: int, n_hidden: int):
    """The ctypes-callable batch loop for routines of ``n_args`` pointer arguments."""
    key = (n_args, n_hidden)
    if key not in _trampolines:
        name = f"fc_lapack_batch_{n_args}_{n_hidden}"
        text = _trampoline_ir(n_args, n_hidden, name)
        native = engine.compile_ir(text, [name], "small")
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                 ctypes.c_void_p, ctypes.c_void_p)
        fn = proto(native.addresses[name])
        fn.native = native
        _trampolines[key] = fn
    return _trampolines[key]


class BatchCall:
    """``name`` (:func:`routine`) over ``batch`` matrices: each argument an array (advanced
    by its bytes per matrix, its first axis the batch) or a scalar (an integer, a
    character: the same cell for every matrix)."""

    def __init__(self, name, int_dtype, args, batch, n_hidden=0, scipy=False):
        self.address, _ = routine(name, scipy)
        self.batch = batch
        self.keep, bases, strides = [], [], []
        for a in args:
            if isinstance(a, np.ndarray):
                bases.append(a.ctypes.data)
                strides.append(a.strides[0] if a.ndim else 0)
            else:
                cell = np.array([ord(a)] if isinstance(a, str) else [a],
                                np.uint8 if isinstance(a, str) else int_dtype)
                self.keep.append(cell)
                bases.append(cell.ctypes.data)
                strides.append(0)
            self.keep.append(a)
        self.bases = (ctypes.c_void_p * len(args))(*bases)
        self.strides = (ctypes.c_int64 * len(args))(*strides)
        self.fn = _trampoline(len(args), n_hidden)

    def __call__(self, split: bool):
        if not split or self.batch < SPLIT_MIN_BATCH:
            self.fn(self.address, 0, self.batch, self.bases, self.strides)
            return
        parts = min(threads.workers, self.batch)
        if parts <= 1:
            self.fn(self.address, 0, self.batch, self.bases, self.strides)
            return
        per = -(-self.batch // parts)
        bounds = [(lo, min(lo + per, self.batch)) for lo in range(0, self.batch, per)]
        with blas.one_thread_each():
            futures = [threads.pool().submit(self.fn, self.address, lo, hi, self.bases,
                                              self.strides) for lo, hi in bounds[1:]]
            self.fn(self.address, *bounds[0], self.bases, self.strides)
            for f in futures:
                f.result()


def _wide(dtype):
    """The dtype NumPy's linalg computes ``dtype`` in: double precision (float32 and
    complex64 results are rounded from it)."""
    return np.dtype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)


def _fortran(a, out, rows, cols):
    """Each (rows, cols) matrix of ``a`` copied into Fortran order in double precision,
    into ``out`` (batch, cols, rows)."""
    np.copyto(out, a.reshape(-1, rows, cols).transpose(0, 2, 1))
    return out


def _shapes(*arrays):
    return " and ".join(str(a.shape) for a in arrays)


def _name(dtype, routine_name):
    return _PREFIX[_wide(dtype)] + routine_name


def solve(a, b, out, scratch):
    """``a^-1 b`` into ``out`` through ?gesv (NumPy's routine) on Fortran copies."""
    n, k = b.shape[-2:]
    fa, fb, ipiv, info = scratch
    _fortran(a, fa, n, n), _fortran(b, fb, n, k)
    BatchCall(_name(a.dtype, "gesv"), info.dtype, [n, k, fa, n, ipiv, fb, n, info],
              len(info))(n <= SPLIT_MAX_N)
    if info.any():
        raise LinAlgError(f"solve: Singular matrix (operand of shape {_shapes(a, b)})")
    np.copyto(out.reshape(-1, n, k), fb.transpose(0, 2, 1), casting="unsafe")


# ?potrf's matrices of at least this many rows go to and from Fortran order a triangle at a
# time, in square tiles of TILE rows: a whole strided transpose walks memory across rows
# (2048^2 float64: 26 ms whole, 3.6 ms for the triangle in 32-row tiles; 128-row tiles make
# 16 times fewer NumPy calls). The blocked factorization needs no transpose: it copies
# blocks of TILE rows (jit cholesky 2048^2: 65-72 ms, 78 with the tiled transposes)
TILE_MIN_N = 128
TILE = 128
# matrices of at least this many rows factor in blocks over the runtime's threads (under
# load 13, jit 512^2: 2.0 ms blocked, 268 ms on OpenBLAS's threaded potrf; quiet,
# 1.3 ms vs 0.7 ms: benchmarks/cholesky.py)
BLOCKED_MIN_N = 256


def _lower_tiles(n):
    """(rows, cols) slices of the TILE x TILE tiles on and below the diagonal."""
    return [(slice(i, i + TILE), slice(j, j + TILE)) for i in range(0, n, TILE)
            for j in range(0, i + 1, TILE)]


def _blocked(n, dtype) -> bool:
    """Whether a cholesky of ``n`` x ``n`` matrices of ``dtype`` is blocked_cholesky's."""
    return n >= BLOCKED_MIN_N and blocked_cholesky.available(_wide(dtype))


def cholesky(a, out, scratch, *, upper=False):
    """The lower Cholesky factor (``upper``: the upper one, of the upper triangle) into
    ``out`` through ?potrf('L') (?potrf('U')) on Fortran copies, the other triangle zeroed
    (NumPy's way). Big matrices copy only the triangle ?potrf reads and writes, in tiles:
    the same bits. From BLOCKED_MIN_N rows the factorization is :mod:`blocked_cholesky`'s,
    in place in C order and split over the runtime's threads (NumPy's values within
    rounding; bits that depend on the shape alone, where OpenBLAS's own threaded ?potrf
    rounds differently on one thread)."""
    n = a.shape[-1]
    fa, info = scratch
    factors = out.reshape(-1, n, n)
    if fa.size == 0 or _blocked(n, a.dtype):     # no copy: planned as blocked
        _cholesky_blocked(a.reshape(-1, n, n), factors, fa, info, upper)
    else:
        _cholesky_potrf(a, factors, fa, info, upper)
    if info.any():
        raise LinAlgError(f"cholesky: Matrix is not positive definite (operand of shape "
                          f"{_shapes(a)})")


def _cholesky_potrf(a, factors, fa, info, upper):
    n = a.shape[-1]
    tiles = _lower_tiles(n) if n >= TILE_MIN_N else None
    if tiles is not None and upper:
        tiles = [(c, r) for r, c in tiles]
    if tiles is None:
        _fortran(a, fa, n, n)
    else:
        for m, f in zip(a.reshape(-1, n, n), fa, strict=True):
            for r, c in tiles:
                np.copyto(f[c, r], m[r, c].T)
    BatchCall(_name(a.dtype, "potrf"), info.dtype, ["U" if upper else "L", n, fa, n, info],
              len(info), n_hidden=1)(n <= SPLIT_MAX_N)
    if info.any():
        return
    if tiles is None:
        factors.fill(0)
        mask = np.tri(n, dtype=bool)
        np.copyto(factors, fa.transpose(0, 2, 1), casting="unsafe",
                  where=mask.T if upper else mask)
        return
    for m, f in zip(factors, fa, strict=True):
        for r, c in tiles:
            if r == c:
                mask = np.tri(len(range(n)[r]), dtype=bool)
                m[r, r] = 0
                np.copyto(m[r, r], f[r, r].T, casting="unsafe", where=mask.T if upper else mask)
            else:
                np.copyto(m[r, c], f[c, r].T, casting="unsafe")
                m[c, r] = 0


def _cholesky_blocked(a, factors, fa, info, upper):
    """blocked_cholesky's factorization of each matrix, in C order (no transposes): in
    ``factors`` itself when its dtype is the one factored, else in ``fa``. The copies go by
    blocks of TILE rows split over the runtime's threads (first touches of a fresh result
    too): only the factor's triangle is copied; the factorization never writes the other
    one, which is zeroed with the copy into the result."""
    n = a.shape[-1]
    rows = [(r, min(r + TILE, n)) for r in range(0, n, TILE)]

    def copy(src, dst, zero):
        def run(r0, r1):
            part = slice(r0, None) if upper else slice(None, r1)
            np.copyto(dst[r0:r1, part], src[r0:r1, part], casting="unsafe")
            if zero:
                dst[r0:r1, slice(None, r0) if upper else slice(r1, None)] = 0
                below = np.tri(r1 - r0, k=-1, dtype=bool)     # the diagonal tile's
                dst[r0:r1, r0:r1][below if upper else below.T] = 0
        blas.run_in_turn([functools.partial(run, r0, r1) for r0, r1 in rows],
                         threads.pool, threads.workers)

    for i, (m, out) in enumerate(zip(a, factors, strict=True)):
        work = out if fa.size == 0 else fa[i]
        copy(m, work, work is out)
        info[i] = blocked_cholesky.factor(work, threads.pool, threads.workers, upper)
        if work is not out:
            copy(work, out, True)


def _slogdet(a, scratch):
    """(sign, logabsdet) of each matrix: ?getrf, then NumPy's sequential walk along the
    diagonal (the sign of the pivots, a product of signs, a sum of logs)."""
    n = a.shape[-1]
    fa, ipiv, info = scratch
    _fortran(a, fa, n, n)
    BatchCall(_name(a.dtype, "getrf"), info.dtype, [n, n, fa, n, ipiv, info],
              len(info))(n <= SPLIT_MAX_N)
    return _walk(a, fa, ipiv, info)


def _walk(a, fa, ipiv, info):
    """(sign, logabsdet) from the ?getrf factors ``fa`` of ``a``'s matrices."""
    n = a.shape[-1]
    batch = len(info)
    swaps = np.count_nonzero(ipiv != np.arange(1, n + 1, dtype=info.dtype), axis=1)
    diag = fa.reshape(batch, n * n)[:, ::n + 1]
    sign = np.where(swaps % 2, -1, 1).astype(fa.dtype)
    # accumulate (sequential, unlike a sum's pairwise order) walks the diagonal in order
    with np.errstate(all="ignore"):
        mag = np.abs(diag)
        logdet = np.add.accumulate(np.log(mag), axis=1)[:, -1]
        if a.dtype.kind == "c":
            unit = np.empty(diag.shape, fa.dtype)
            unit.real, unit.imag = diag.real / mag, diag.imag / mag
            sign *= np.multiply.accumulate(unit, axis=1)[:, -1]
        else:
            sign[np.count_nonzero(diag < 0, axis=1) % 2 == 1] *= -1
    singular = info > 0
    sign[singular] = 0
    logdet[singular] = -np.inf
    return sign.reshape(a.shape[:-2]), logdet.reshape(a.shape[:-2])


def slogdet(a, sign_out, logdet_out, scratch):
    sign, logdet = _slogdet(a, scratch)
    np.copyto(sign_out, sign, casting="unsafe")
    np.copyto(logdet_out, logdet, casting="unsafe")


def slogdet_inv_t(a, sign_out, logdet_out, inv_t_out, scratch):
    """slogdet's values and ``inv(a)^T`` from one ?getrf: ?getri inverts the Fortran
    copy of ``a`` in place, which read in C order is the inverse transposed. Matrices of
    the operand's own wide dtype factor in ``inv_t_out`` itself (no copy back)."""
    n = a.shape[-1]
    fa, ipiv, info, work = scratch
    batch = len(info)
    own = inv_t_out.dtype == fa.dtype
    if own:
        fa = inv_t_out.reshape(batch, n, n)
    _fortran(a, fa, n, n)
    split = n <= SPLIT_MAX_N
    BatchCall(_name(a.dtype, "getrf"), info.dtype, [n, n, fa, n, ipiv, info], batch)(split)
    if (info > 0).any():
        raise LinAlgError(f"slogdet_inv_t: Singular matrix (operand of shape {_shapes(a)})")
    sign, logdet = _walk(a, fa, ipiv, info)
    np.copyto(sign_out, sign, casting="unsafe")
    np.copyto(logdet_out, logdet, casting="unsafe")
    BatchCall(_name(a.dtype, "getri"), info.dtype, [n, fa, n, ipiv, work, work.shape[1], info],
              batch)(split)
    if not own:
        np.copyto(inv_t_out.reshape(fa.shape), fa, casting="unsafe")


def det(a, out, scratch):
    sign, logdet = _slogdet(a, scratch)
    with np.errstate(all="ignore"):
        if a.dtype.kind == "c":
            mag = np.exp(logdet)
            out.real, out.imag = sign.real * mag, sign.imag * mag
        else:
            np.multiply(sign, np.exp(logdet), out=out, casting="unsafe")


def lu(a, lu_out, pivots_out, permutation_out, scratch):
    """LU with partial pivoting through SciPy's ?getrf in ``a``'s own precision (what
    ``scipy.linalg.lu_factor`` calls): the factors, LAPACK's row swaps 0-based, and the
    row order they make. A singular matrix still factors (U has a zero)."""
    n = a.shape[-1]
    fa, ipiv, info = scratch
    batch = len(info)
    _fortran(a, fa, n, n)
    BatchCall(_PREFIX[a.dtype] + "getrf", info.dtype, [n, n, fa, n, ipiv, info], batch,
              scipy=True)(n <= SPLIT_MAX_N)
    np.copyto(lu_out.reshape(batch, n, n), fa.transpose(0, 2, 1))
    pivots = pivots_out.reshape(batch, n)
    np.subtract(ipiv, 1, out=pivots, casting="unsafe")
    perm = permutation_out.reshape(batch, n)
    if batch < n:       # the swaps one matrix at a time, on Python ints
        for i in range(batch):
            order = list(range(n))
            for k, j in enumerate(pivots[i].tolist()):
                order[k], order[j] = order[j], order[k]
            perm[i] = order
        return
    perm[...] = np.arange(n, dtype=perm.dtype)
    rows = np.arange(batch)
    for k in range(n):      # the k-th swap of every matrix at once
        to = pivots[:, k]
        here = perm[:, k].copy()
        perm[:, k] = perm[rows, to]
        perm[rows, to] = here


_TRANS = {"N": "T", "T": "N"}   # op(a) on a's rows read as a Fortran matrix (a^T)
_RIGHT = {"N": "T", "T": "N", "C": "conj", "conj": "C"}   # op(a)^T as an op of a


def tri_op(left_side, transpose_a, conjugate_a):
    """The op of a in the left-side solve: 'N', 'T', 'C' (conjugate transpose), 'conj'."""
    op = ("C" if conjugate_a else "T") if transpose_a else ("conj" if conjugate_a else "N")
    return op if left_side else _RIGHT[op]


# a conjugate transpose of a matrix of at least this many rows is solved in place, b and x
# conjugated, where scipy.linalg.solve_triangular copies the matrix into Fortran order
# (cho_solve 2048^2, one right-hand side: 2 ms for its two solves, 29 with the copy)
TRI_IN_PLACE_MIN_N = 128


def _tri_in_place(op, n):
    return op == "C" and n >= TRI_IN_PLACE_MIN_N


def triangular_solve(a, b, out, scratch, *, left_side, lower, transpose_a, conjugate_a,
                     unit_diagonal):
    """``op(a)^-1 b`` (or ``b op(a)^-1``) through SciPy's ?trtrs in the operands' own
    precision, with the arguments ``scipy.linalg.solve_triangular`` passes for a
    C-contiguous ``a`` (read in place as the Fortran a^T with the other triangle and the
    other transpose; copied into Fortran order for a conjugate transpose): SciPy's bits.
    From TRI_IN_PLACE_MIN_N rows a conjugate transpose is read in place too, b and x
    conjugated (SciPy's values within rounding). The right side solves
    ``op(a)^T x^T = b^T``, whose Fortran right-hand side is ``b``'s own rows."""
    n = a.shape[-1]
    fa, fb, info = scratch
    op = tri_op(left_side, transpose_a, conjugate_a)
    conj = op == "conj" or _tri_in_place(op, n)
    if conj:        # conj(a) x = b: a conj(x) = conj(b); a^H x = b: a^T conj(x) = conj(b)
        op = "N" if op == "conj" else "T"
    conj = conj and a.dtype.kind == "c"
    if left_side:
        _fortran(b, fb, n, b.shape[-1])
    else:
        np.copyto(fb, b.reshape(fb.shape))
    if conj:
        np.conjugate(fb, out=fb)
    if op == "C" or n == 1:     # SciPy's Fortran-order branch (a 1x1 is both orders)
        matrix, uplo, trans = _fortran(a, fa, n, n), "L" if lower else "U", op
    else:
        matrix, uplo, trans = a.reshape(-1, n, n), "U" if lower else "L", _TRANS[op]
    BatchCall(_PREFIX[a.dtype] + "trtrs", info.dtype,
              [uplo, trans, "U" if unit_diagonal else "N", n, fb.shape[1], matrix, n, fb, n,
               info], len(info), n_hidden=3, scipy=True)(n <= SPLIT_MAX_N)
    failed = np.flatnonzero(info)
    if failed.size:
        raise LinAlgError(f"triangular_solve: singular matrix: resolution failed at diagonal "
                          f"{info[failed[0]] - 1} (operand of shape {_shapes(a, b)})")
    if conj:
        np.conjugate(fb, out=fb)
    if left_side:
        np.copyto(out.reshape(fb.shape[0], n, -1), fb.transpose(0, 2, 1))
    else:
        np.copyto(out.reshape(fb.shape), fb)


# primitive -> the function taking the operands, one out array per result, then the list
# of its scratch arrays (scratch_shapes)
LOWERED = {P.solve: solve, P.cholesky: cholesky, P.det: det, P.slogdet: slogdet, P.lu: lu,
           P.triangular_solve: triangular_solve, P.slogdet_inv_t: slogdet_inv_t}


# ?getri's block size in reference LAPACK (ilaenv's 64): matrices of more rows take n x 64
# of work for the blocked code; smaller ones run unblocked on n
GETRI_BLOCK = 64


def scratch_shapes(eqn) -> list:
    """(shape, dtype) of each scratch array the step of ``eqn`` (a primitive of this
    module's :data:`LOWERED`) takes: the Fortran copies in
    double precision, LAPACK's pivots and info codes. They live in the arena (reused
    memory: no page faults on every call)."""
    a = eqn.inputs[0].aval
    n, batch, wide = a.shape[-1], math.prod(a.shape[:-2]), _wide(a.dtype)
    if eqn.prim is P.triangular_solve:
        ints = routine(_PREFIX[a.dtype] + "trtrs", scipy=True)[1]
        b = eqn.inputs[1].aval.shape
        rhs = (batch, b[-1], n) if eqn.params["left_side"] else (batch, b[-2], n)
        p = eqn.params
        op = tri_op(p["left_side"], p["transpose_a"], p["conjugate_a"])
        copied = n == 1 or (op == "C" and not _tri_in_place(op, n))
        return [((batch, n, n) if copied else (0,), a.dtype), (rhs, a.dtype), ((batch,), ints)]
    if eqn.prim is P.lu:
        ints = routine(_PREFIX[a.dtype] + "getrf", scipy=True)[1]
        return [((batch, n, n), a.dtype), ((batch, n), ints), ((batch,), ints)]
    ints = routine(_name(a.dtype, "getrf"))[1]
    matrix, pivots, info = ((batch, n, n), wide), ((batch, n), ints), ((batch,), ints)
    if eqn.prim is P.solve:
        rhs = ((batch, eqn.inputs[1].aval.shape[-1], n), wide)
        return [matrix, rhs, pivots, info]
    if eqn.prim is P.cholesky:      # a blocked factorization in place needs no copy
        own = _blocked(n, a.dtype) and a.dtype == wide
        return [((0, n, n) if own else (batch, n, n), wide), info]
    if eqn.prim is P.slogdet_inv_t:     # ?getri's blocked code takes n x 64 (one per matrix)
        work = ((batch, n * (GETRI_BLOCK if n > GETRI_BLOCK else 1)), wide)
        own = a.dtype == wide        # factors in the result itself
        return [((batch, n, n) if not own else (0, n, n), wide), pivots, info, work]
    return [matrix, pivots, info]


DTYPES = tuple(_PREFIX)
