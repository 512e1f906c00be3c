"""qr, svd, eigh and eig as LAPACK calls batched in native code (the machinery of
:mod:`backends.llvm.lapack`: one native loop per batch, the GIL released, scratch in the
arena).

Each is the routine NumPy's gufunc calls, from the same library (NumPy's bundled OpenBLAS
when :func:`lapack.routine` finds it), with NumPy's arguments: the matrix copied into
Fortran order in double precision (NumPy computes float32 and complex64 there too and
rounds the results), and the workspace sizes NumPy asks LAPACK for (``lwork=-1``), queried
once per shape when the plan is made. So the values are NumPy's to the last bit:

- qr: ``?geqrf`` then ``?orgqr``/``?ungqr`` for ``m`` (complete) or ``min(m, n)``
  (reduced) columns of Q; R is the upper triangle of the factored matrix.
- svd: ``?gesdd`` with ``jobz`` 'A' (full_matrices), 'S' or 'N' (no vectors). Big real
  matrices with vectors run gesdd's own calls, its two ?ormbr at once on two threads
  (:func:`_svd_phases`): the bits of NumPy's svd with OpenBLAS on one thread.
- eigh: ``?syevd``/``?heevd`` with ``jobz='V'`` and ``uplo`` from the primitive's ``lower``.
- eig: ``?geev`` with right vectors only ('V' or 'N'); for real input the eigenvalues are
  ``wr + i wi`` and each conjugate pair of vectors is built from LAPACK's two real columns
  as NumPy does (``v_j = x + i y``, ``v_{j+1} = x - i y``).

The workspace is per thread: a batch of small matrices split over the runtime's threads
gives each part its own row of the work arrays. A failure LAPACK reports (``info != 0``:
no convergence) raises ``LinAlgError`` with the interpreter's message (NumPy's, naming the
primitive and the shape), for the whole batch as NumPy does.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from functorch_core.ir import primitives as P

from . import blas, threads
from . import lapack as base

LinAlgError = np.linalg.LinAlgError


class _Own:
    """A scratch array ``(threads, size)``: each part of a split batch uses its own row, the
    same row for every matrix of the part."""

    def __init__(self, array):
        self.array = array


def _fixed(row, batch):
    """``row`` seen as ``batch`` copies of itself (a stride of 0: one cell for every
    matrix)."""
    return np.lib.stride_tricks.as_strided(row, (batch,) + row.shape, (0,) + row.strides)


def _call(name, ints, args, batch, n, n_hidden=0):
    """``name`` over ``batch`` matrices of ``n`` rows: :class:`lapack.BatchCall`'s
    arguments plus :class:`_Own` per-thread scratch. Batches of small matrices are split over
    the runtime's threads (OpenBLAS at one thread each), one row of each scratch per part."""
    rows = [a.array.shape[0] for a in args if isinstance(a, _Own)]
    parts = 1
    if n <= base.SPLIT_MAX_N and batch >= base.SPLIT_MIN_BATCH:
        parts = min(threads.workers, batch, *rows)
    per = -(-batch // parts)
    bounds = [(lo, min(lo + per, batch)) for lo in range(0, batch, per)]
    calls = [base.BatchCall(name, ints, [_fixed(a.array[p], batch) if isinstance(a, _Own)
                                         else a for a in args], batch, n_hidden)
             for p in range(len(bounds))]
    if len(calls) == 1:
        calls[0].fn(calls[0].address, 0, batch, calls[0].bases, calls[0].strides)
        return
    with blas.one_thread_each():
        futures = [threads.pool().submit(c.fn, c.address, lo, hi, c.bases, c.strides)
                   for c, (lo, hi) in zip(calls[1:], bounds[1:], strict=True)]
        first = calls[0]
        first.fn(first.address, *bounds[0], first.bases, first.strides)
        for f in futures:
            f.result()


def _ints():
    return base.routine(base._name(np.float64, "getrf"))[1]


def _sizes(name, *dims):
    """:func:`_query` for the library :func:`lapack.routine` now takes ``name`` from."""
    return _query(base.routine(name), name, *dims)


@functools.cache
def _query(routine_key, name, *dims):
    """LAPACK's workspace sizes for ``name`` on matrices of ``dims`` (a call with every
    size -1): the work array's length (NumPy's ``(int)`` of the first cell's real part), and
    for the routines that ask, the integer and real workspaces'."""
    ints, wide = _ints(), base._wide(np.complex128 if name[0] == "z" else np.float64)
    real = np.dtype(np.float64)
    cell = [np.zeros((1, 1), wide), np.zeros((1, 1), ints), np.zeros((1, 1), real)]
    work, iwork, rwork = cell
    info = np.zeros(1, ints)

    def mat(rows, cols):
        return np.zeros((1, max(rows * cols, 1)), wide)

    routine = name[1:]
    if routine == "geqrf":
        m, n = dims
        args = [m, n, mat(m, n), m, mat(min(m, n), 1), work, -1, info]
    elif routine in ("orgqr", "ungqr"):
        m, mc, k = dims
        args = [m, mc, k, mat(m, mc), m, mat(k, 1), work, -1, info]
    elif routine == "gesdd":
        jobz, m, n, ucol, vrow = dims
        args = [jobz, m, n, mat(m, n), m, np.zeros((1, min(m, n)), real), mat(m, ucol), m,
                mat(vrow, n), max(vrow, 1), work, -1]
        args += [rwork, iwork, info] if wide.kind == "c" else [iwork, info]
    elif routine == "syevd":
        uplo, n = dims
        args = ["V", uplo, n, mat(n, n), n, np.zeros((1, n), real), work, -1, iwork, -1, info]
    elif routine == "heevd":
        uplo, n = dims
        args = ["V", uplo, n, mat(n, n), n, np.zeros((1, n), real), work, -1, rwork, -1, iwork,
                -1, info]
    else:       # geev
        jobvr, n = dims
        if wide.kind == "c":
            args = ["N", jobvr, n, mat(n, n), n, mat(n, 1), mat(1, 1), n, mat(n, n), n, work,
                    -1, np.zeros((1, 2 * n), real), info]
        else:
            args = ["N", jobvr, n, mat(n, n), n, np.zeros((1, n), real),
                    np.zeros((1, n), real), mat(1, 1), n, mat(n, n), n, work, -1, info]
    hidden = {"gesdd": 1, "syevd": 2, "heevd": 2, "geev": 2}.get(routine, 0)
    base.BatchCall(name, ints, args, 1, hidden)(False)
    if info[0] != 0:
        raise LinAlgError(f"{name}: workspace query failed (info {info[0]}) for {dims}")
    return (max(int(work[0, 0].real), 1), int(iwork[0, 0]), int(rwork[0, 0]))


def _threads(n, batch):
    """How many rows of per-thread scratch a step allocates."""
    split = n <= base.SPLIT_MAX_N and batch >= base.SPLIT_MIN_BATCH
    return max(min(threads.workers, batch), 1) if split else 1


def qr_sizes(dtype, m, n, full_matrices):
    mn = min(m, n)
    mc = m if full_matrices else mn
    gq = "ungqr" if dtype.kind == "c" else "orgqr"
    lw_f = max(n, _sizes(base._name(dtype, "geqrf"), m, n)[0])
    lw_q = max(n, _sizes(base._name(dtype, gq), m, mc, mn)[0])
    return mn, mc, gq, lw_f, lw_q


def svd_sizes(dtype, m, n, full_matrices, compute_uv):
    mn = min(m, n)
    jobz = ("A" if full_matrices else "S") if compute_uv else "N"
    ucol, vrow = {"A": (m, n), "S": (mn, mn), "N": (0, 0)}[jobz]
    lwork = _sizes(base._name(dtype, "gesdd"), jobz, m, n, ucol, vrow)[0]
    # LAPACK's rwork bound for either jobz (its size changes no value)
    lrwork = max(7 * mn, 5 * mn * mn + 5 * mn, 2 * max(m, n) * mn + 2 * mn * mn + mn)
    return mn, jobz, ucol, vrow, lwork, lrwork


def eigh_sizes(dtype, n, lower):
    name = base._name(dtype, "heevd" if dtype.kind == "c" else "syevd")
    lwork, liwork, lrwork = _sizes(name, "L" if lower else "U", n)
    return name, lwork, max(liwork, 1), max(lrwork, 1)


def eig_sizes(dtype, n, compute_v):
    jobvr = "V" if compute_v else "N"
    return jobvr, _sizes(base._name(dtype, "geev"), jobvr, n)[0]


def _spec(prim, shape, dtype, params) -> dict:
    """name -> (shape, dtype) of each scratch array of a step (in this order)."""
    dtype = np.dtype(dtype)
    m, n = shape[-2:]
    batch, wide, real, ints = math.prod(shape[:-2]), base._wide(dtype), np.dtype(np.float64), \
        _ints()
    n_threads = _threads(max(m, n), batch)
    if prim is P.qr:
        mn, mc, _, lw_f, lw_q = qr_sizes(wide, m, n, params["full_matrices"])
        return {"a": ((batch, n, m), wide), "q": ((batch, mc, m), wide),
                "tau": ((batch, mn), wide), "info": ((batch,), ints),
                "work": ((n_threads, max(lw_f, lw_q)), wide)}
    if prim is P.svd:
        mn, jobz, ucol, vrow, lwork, lrwork = svd_sizes(wide, m, n, **params)
        vectors = jobz != "N"
        return {"a": ((batch, n, m), wide), "s": ((batch, mn), real),
                "u": ((batch, ucol, m) if vectors else (batch, 1), wide),
                "vt": ((batch, n, vrow) if vectors else (batch, 1), wide),
                "info": ((batch,), ints), "work": ((n_threads, lwork), wide),
                "iwork": ((n_threads, 8 * mn), ints),
                "rwork": ((n_threads, lrwork if wide.kind == "c" else 1), real)}
    if prim is P.eigh:
        _, lwork, liwork, lrwork = eigh_sizes(wide, n, params["lower"])
        return {"a": ((batch, n, n), wide), "w": ((batch, n), real), "info": ((batch,), ints),
                "work": ((n_threads, lwork), wide), "iwork": ((n_threads, liwork), ints),
                "rwork": ((n_threads, lrwork if wide.kind == "c" else 1), real)}
    jobvr, lwork = eig_sizes(wide, n, params["compute_v"])
    complex_ = wide.kind == "c"
    return {"a": ((batch, n, n), wide), "wr": ((batch, n), wide),
            "wi": ((batch, 1 if complex_ else n), real),
            "vl": ((batch, 1), wide), "vr": ((batch, n, n) if jobvr == "V" else (batch, 1), wide),
            "info": ((batch,), ints), "work": ((n_threads, lwork), wide),
            "rwork": ((n_threads, 2 * n if complex_ else 1), real)}


def _scratch(prim, a, params, arrays) -> dict:
    return dict(zip(_spec(prim, a.shape, a.dtype, params), arrays, strict=True))


def scratch_shapes(eqn) -> list:
    """(shape, dtype) of each scratch array of ``eqn``'s step (see :func:`_spec`)."""
    a = eqn.inputs[0].aval
    return list(_spec(eqn.prim, a.shape, a.dtype, eqn.params).values())


def qr(a, q_out, r_out, scratch, *, full_matrices):
    """``a = q r`` through ?geqrf and ?orgqr/?ungqr (NumPy's qr_r_raw then qr_reduced or
    qr_complete)."""
    m, n = a.shape[-2:]
    wide = base._wide(a.dtype)
    mn, mc, gq, lw_f, lw_q = qr_sizes(wide, m, n, full_matrices)
    s = _scratch(P.qr, a, {"full_matrices": full_matrices}, scratch)
    fa, fq, tau, info, work = s["a"], s["q"], s["tau"], s["info"], _Own(s["work"])
    batch, ints = len(info), info.dtype
    base._fortran(a, fa, m, n)
    _call(base._name(a.dtype, "geqrf"), ints, [m, n, fa, m, tau, work, lw_f, info], batch,
          max(m, n))
    if info.any():
        raise LinAlgError(f"qr: Incorrect argument found while performing QR factorization "
                          f"(operand of shape {base._shapes(a)})")
    r = r_out.reshape(batch, mc, n)
    r.fill(0)
    np.copyto(r, fa.transpose(0, 2, 1)[:, :mc], casting="unsafe",
              where=~np.tri(mc, n, k=-1, dtype=bool))
    c = min(n, mc)
    fq[:, :c] = fa[:, :c]
    fq[:, c:] = 0
    _call(base._name(a.dtype, gq), ints, [m, mc, mn, fq, m, tau, work, lw_q, info], batch,
          max(m, n))
    if info.any():
        raise LinAlgError(f"qr: Incorrect argument found while performing QR factorization "
                          f"(operand of shape {base._shapes(a)})")
    np.copyto(q_out.reshape(batch, m, mc), fq.transpose(0, 2, 1), casting="unsafe")


# the 65 x 64 block reflector ?ormqr/?ormlq keep in their work past the length ?ormbr's query
# gives (LAPACK's TSIZE): without it they take smaller blocks (other bits than gesdd's)
_ORMQR_T = 65 * 64


def _ormbr_lwork(*dims):
    """dormbr's work length for a ``rows x cols`` matrix: its query's plus _ORMQR_T."""
    return _ormbr_query(base.routine("dormbr"), *dims)


@functools.cache
def _ormbr_query(routine_key, vect, side, trans, rows, cols, k, lda):
    ints = routine_key[1]
    work, info = np.zeros(1), np.zeros(1, ints)
    base.BatchCall("dormbr", ints,
                   [vect, side, trans, rows, cols, k, np.zeros(1), lda, np.zeros(1),
                    np.zeros(1), rows, work, -1, info], 1, n_hidden=3)(False)
    return int(work[0]) + _ORMQR_T if info[0] == 0 else None


def _ormbr_split(m, n, jobz, lwork):
    """The work lengths of the two ?ormbr calls of :func:`_svd_phases` (each its optimal,
    so its blocking is gesdd's), or None when gesdd's work cannot hold both at once."""
    ucol = m if jobz == "A" else n
    left = _ormbr_lwork("Q", "L", "N", m, ucol, n, m)
    right = _ormbr_lwork("P", "R", "T", n, n, ucol, m)
    if left is None or right is None or left + right > lwork - 3 * n:
        return None
    return left, right


def _phased(wide, m, n, jobz, lwork):
    """Whether ?gesdd's work for these sizes runs as its phases (:func:`_svd_phases`): real
    vectors of a matrix past SPLIT_MAX_N rows on gesdd's path without a QR first (m >= n,
    m < 11n/6), with room in its work for both ?ormbr calls at once."""
    return wide.kind == "f" and jobz in "AS" and n > base.SPLIT_MAX_N and \
        n <= m < int(n * 11.0 / 6.0) and _ormbr_split(m, n, jobz, lwork) is not None


def _svd_phases(fa, s, u, vt, work, iwork, info, m, n, jobz):
    """One matrix's ?gesdd (jobz 'A' or 'S', its path for m >= n without a QR) as the calls
    it makes: ?gebrd to bidiagonal form, ?bdsdc, then the two ?ormbr applying the
    reflectors to U and to V^T, which are independent: they run at once on two threads
    with OpenBLAS at one thread each. Every call is the one gesdd makes with the same work
    sizes, each on one thread: the bits of gesdd on one thread, whatever the thread count
    or the load (OpenBLAS's threaded gesdd stalls at its barriers on a busy machine).
    The caller checked that gesdd would not scale the matrix."""
    with blas.one_thread_each():
        _phases(fa, s, u, vt, work, iwork, info, m, n, jobz)


def _phases(fa, s, u, vt, work, iwork, info, m, n, jobz):
    ints = info.dtype
    lwork = len(work)
    e, tauq, taup, rest = work[:n], work[n:2 * n], work[2 * n:3 * n], work[3 * n:]
    name = {r: base._name(np.float64, r) for r in ("gebrd", "bdsdc", "ormbr")}
    base.BatchCall(name["gebrd"], ints, [m, n, fa, m, s, e, tauq, taup, rest, len(rest),
                                         info], 1)(False)
    ucol = m if jobz == "A" else n
    u.fill(0)
    base.BatchCall(name["bdsdc"], ints, ["U", "I", n, s, e, u, m, vt, n, work[:1],
                                         iwork[:1], rest, iwork, info], 1, n_hidden=2)(False)
    if info[0]:
        return
    if ucol > n:        # the corner of U past the bidiagonal's vectors is the identity
        u[n:, n:] = np.eye(ucol - n)
    lq, lp = _ormbr_split(m, n, jobz, lwork)
    left = base.BatchCall(name["ormbr"], ints, ["Q", "L", "N", m, ucol, n, fa, m, tauq, u, m,
                                                rest[:lq], lq, info[1:]], 1, n_hidden=3)
    right = base.BatchCall(name["ormbr"], ints, ["P", "R", "T", n, n, ucol, fa, m, taup, vt,
                                                 n, rest[lq:lq + lp], lp, info[2:]], 1,
                           n_hidden=3)
    if threads.workers < 2:
        left(False), right(False)
        return
    done = threads.pool().submit(right, False)
    left(False)
    done.result()


def _unscaled(fa):
    """Whether ?gesdd leaves the matrix unscaled: its largest magnitude within
    [sqrt(safe minimum) / eps, its reciprocal] (NaN is not)."""
    small = np.sqrt(np.finfo(np.float64).tiny) / np.finfo(np.float64).eps
    top = np.abs(fa).max()
    return bool(small <= top <= 1 / small)


def svd(a, *outs_and_scratch, full_matrices, compute_uv):
    """Singular values (and vectors) through ?gesdd, NumPy's svd_f/svd_s/svd_n (for big
    real matrices as its phases, :func:`_svd_phases`)."""
    *outs, scratch = outs_and_scratch
    m, n = a.shape[-2:]
    wide = base._wide(a.dtype)
    mn, jobz, ucol, vrow, lwork, _ = svd_sizes(wide, m, n, full_matrices, compute_uv)
    s = _scratch(P.svd, a, {"full_matrices": full_matrices, "compute_uv": compute_uv}, scratch)
    info = s["info"]
    batch = len(info)
    base._fortran(a, s["a"], m, n)
    if _phased(wide, m, n, jobz, lwork) and all(_unscaled(fa) for fa in s["a"]):
        codes = np.zeros(3, info.dtype)
        for i in range(batch):
            _svd_phases(s["a"][i], s["s"][i], s["u"][i], s["vt"][i], s["work"][0],
                        s["iwork"][0], codes, m, n, jobz)
            info[i] = codes[0]
    else:
        args = [jobz, m, n, s["a"], m, s["s"], s["u"], m, s["vt"], max(vrow, 1),
                _Own(s["work"]), lwork]
        args += [_Own(s["rwork"]), _Own(s["iwork"]), info] if wide.kind == "c" else \
            [_Own(s["iwork"]), info]
        _call(base._name(a.dtype, "gesdd"), info.dtype, args, batch, max(m, n), n_hidden=1)
    if info.any():
        raise LinAlgError(f"svd: SVD did not converge (operand of shape {base._shapes(a)})")
    np.copyto(outs[0].reshape(batch, mn), s["s"], casting="unsafe")
    if compute_uv:
        np.copyto(outs[1].reshape(batch, m, ucol), s["u"].transpose(0, 2, 1), casting="unsafe")
        np.copyto(outs[2].reshape(batch, vrow, n), s["vt"].transpose(0, 2, 1),
                  casting="unsafe")


def eigh(a, w_out, v_out, scratch, *, lower):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices through ?syevd/?heevd
    (NumPy's eigh_lo/eigh_up), reading the ``lower`` or upper triangle."""
    n = a.shape[-1]
    wide = base._wide(a.dtype)
    name, lwork, liwork, lrwork = eigh_sizes(wide, n, lower)
    s = _scratch(P.eigh, a, {"lower": lower}, scratch)
    info = s["info"]
    batch = len(info)
    base._fortran(a, s["a"], n, n)
    args = ["V", "L" if lower else "U", n, s["a"], n, s["w"], _Own(s["work"]), lwork]
    if wide.kind == "c":
        args += [_Own(s["rwork"]), lrwork]
    args += [_Own(s["iwork"]), liwork, info]
    _call(name, info.dtype, args, batch, n, n_hidden=2)
    if info.any():
        raise LinAlgError(f"eigh: Eigenvalues did not converge (operand of shape "
                          f"{base._shapes(a)})")
    np.copyto(w_out.reshape(batch, n), s["w"], casting="unsafe")
    np.copyto(v_out.reshape(batch, n, n), s["a"].transpose(0, 2, 1), casting="unsafe")


def eig(a, *outs_and_scratch, compute_v):
    """Eigenvalues (and right eigenvectors) of general matrices through ?geev (NumPy's
    eig/eigvals gufuncs), complex. Like NumPy's eig, refuses an operand with infs or NaNs."""
    *outs, scratch = outs_and_scratch
    if not np.isfinite(a).all():
        raise LinAlgError(f"eig: Array must not contain infs or NaNs (operand of shape "
                          f"{base._shapes(a)})")
    n = a.shape[-1]
    wide = base._wide(a.dtype)
    jobvr, lwork = eig_sizes(wide, n, compute_v)
    s = _scratch(P.eig, a, {"compute_v": compute_v}, scratch)
    info = s["info"]
    batch = len(info)
    base._fortran(a, s["a"], n, n)
    if wide.kind == "c":
        args = ["N", jobvr, n, s["a"], n, s["wr"], s["vl"], n, s["vr"], n, _Own(s["work"]),
                lwork, _Own(s["rwork"]), info]
    else:
        args = ["N", jobvr, n, s["a"], n, s["wr"], s["wi"], s["vl"], n, s["vr"], n,
                _Own(s["work"]), lwork, info]
    _call(base._name(a.dtype, "geev"), info.dtype, args, batch, n, n_hidden=2)
    if info.any():
        raise LinAlgError(f"eig: Eigenvalues did not converge (operand of shape "
                          f"{base._shapes(a)})")
    w = outs[0].reshape(batch, n)
    if wide.kind == "c":
        np.copyto(w, s["wr"], casting="unsafe")
        if compute_v:
            np.copyto(outs[1].reshape(batch, n, n), s["vr"].transpose(0, 2, 1),
                      casting="unsafe")
        return
    wi = s["wi"]
    w.real, w.imag = s["wr"], wi
    if compute_v:
        _conjugate_pairs(s["vr"], wi, outs[1].reshape(batch, n, n))


def _conjugate_pairs(vr, wi, out):
    """Complex eigenvectors from real ?geev's columns ``vr`` (batch, column, row): a real
    eigenvalue's column as is; for a pair (``wi > 0`` then ``wi < 0``) with columns x, y:
    ``x + i y`` and ``x - i y``."""
    first, second = (wi > 0)[..., None], (wi < 0)[..., None]
    after, before = np.roll(vr, -1, axis=1), np.roll(vr, 1, axis=1)
    re = np.where(second, before, vr)
    im = np.where(first, after, np.where(second, -vr, 0.0))
    out.real, out.imag = re.transpose(0, 2, 1), im.transpose(0, 2, 1)


LOWERED = {P.qr: qr, P.svd: svd, P.eigh: eigh, P.eig: eig}
