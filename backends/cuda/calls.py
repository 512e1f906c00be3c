"""Named array-module calls: the equations the cuda backend runs as one library call on
device arrays rather than as a generated kernel.

``xp`` is CuPy on a GPU and NumPy under the simulator (``availability.array_module``);
SciPy-shaped routines come from ``cupyx.scipy`` on a GPU and ``scipy`` under the simulator.
``CALLS`` maps each primitive to the routine it calls, in words (the coverage test and
``runtime.lowering`` read it); ``lower(eqn, xp, simulated)`` returns ``run(args) ->
outputs`` over device arrays, with the interpreter's results (dtypes included).
``HOST`` names the equations no array module has a routine for (``COMPLEX_HOST`` those with
complex operands): the runtime copies their operands to the host, runs the interpreter's
implementation and copies the results back.
The graph-valued primitives (cond, while, scan, call, custom_*) compile their inner
graphs once with the cuda backend and loop on the host over device arrays; a device
predicate or branch index is read back with one scalar copy per step.
"""

from __future__ import annotations

import contextlib
import functools
import importlib

import numpy as np
from functorch_core.ir import primitives as P
from functorch_core.ir.indexing import check_index

from ..interpreter import IMPLS
from ..interpreter.core import reduce_precision_with
from ..interpreter.linalg import LinAlgError
from .indexing import permutation

SPECIAL = {P.erf: "erf", P.erfc: "erfc", P.erfcx: "erfcx", P.lgamma: "gammaln",
           P.tgamma: "gamma", P.digamma: "digamma", P.bessel_i0e: "i0e",
           P.bessel_i1e: "i1e", P.zeta: "zeta", P.igamma: "gammainc",
           P.igammac: "gammaincc", P.polygamma: "polygamma", P.betainc: "betainc",
           P.bessel_j0: "j0", P.bessel_y0: "y0", P.bessel_y1: "y1",
           P.bessel_k0: "k0", P.bessel_k1: "k1"}
_FFT = {"fft": "fftn", "ifft": "ifftn", "rfft": "rfftn", "irfft": "irfftn"}

CALLS = {
    P.check_index: "xp.any over the bounds (one scalar copy); a host copy only to name the "
                   "first bad index in the IndexError",
    P.sort: "xp.argsort per key (stable, last key first) + xp.take_along_axis",
    P.reduce_precision: "the interpreter's bit operations over xp (an unsigned view)",
    P.fft: "xp.fft.fftn / ifftn / rfftn / irfftn",
    P.cholesky: "xp.linalg.cholesky (upper: of the conjugate transpose)",
    P.qr: "xp.linalg.qr", P.svd: "xp.linalg.svd",
    P.eigh: "xp.linalg.eigh", P.solve: "xp.linalg.solve", P.det: "xp.linalg.det",
    P.eig: "xp.linalg.eig / eigvals (cuSOLVER's geev, CuPy 14; a host copy before it)",
    P.slogdet: "xp.linalg.slogdet",
    P.slogdet_inv_t: "xp.linalg.slogdet and xp.linalg.inv (transposed)",
    P.lu: "(cupyx.)scipy.linalg.lu_factor per matrix",
    P.triangular_solve: "(cupyx.)scipy.linalg.solve_triangular per matrix",
    **{p: f"(cupyx.)scipy.special.{n}" for p, n in SPECIAL.items()},
    P.cond: "the branch's graph compiled for cuda (one scalar copy of the index)",
    P.while_loop: "cond and body graphs compiled for cuda (one scalar copy per step)",
    P.scan: "the body graph compiled for cuda, looped on the host over device slices",
    P.call: "the graph compiled for cuda",
    P.custom_jvp_call: "the primal graph compiled for cuda",
    P.custom_vjp_call: "the primal graph compiled for cuda",
    P.custom_lin: "raises as the interpreter does (it exists only inside differentiation)",
}
_COLLECTIVE_HOST = ("a collective over the process axis: MPI moves host buffers here "
                    "(no CUDA-aware MPI assumed), through backends/mpi.py on a host copy, "
                    "results copied back")
HOST = {P.spence: "cupyx.scipy.special has no spence (CuPy 13): scipy.special.spence on a "
                  "host copy, results copied back",
        P.bessel_jv: "cupyx.scipy.special has no jv of real order (only j0/j1, CuPy 13): "
                     "scipy.special.jv on a host copy, results copied back",
        P.bessel_yn: "cupyx.scipy.special's yn is not checked against SciPy's double-order "
                     "loop here: scipy.special.yn on a host copy, results copied back",
        P.bessel_iv: "cupyx.scipy.special has no iv of real order (only i0/i1): "
                     "scipy.special.iv on a host copy, results copied back",
        P.bessel_ive: "cupyx.scipy.special has no ive of real order (only i0e/i1e): "
                      "scipy.special.ive on a host copy, results copied back",
        P.bessel_kv: "cupyx.scipy.special has no kv of real order (only k0/k1): "
                     "scipy.special.kv on a host copy, results copied back",
        P.bessel_kve: "cupyx.scipy.special has no kve of real order (only k0e/k1e): "
                      "scipy.special.kve on a host copy, results copied back",
        P.sqrtm: "no Schur form in CuPy/cuSOLVER: SciPy's sqrtm on a host copy, results "
                 "copied back",
        P.sylvester: "no Schur form in CuPy/cuSOLVER: SciPy's solve_sylvester on a host "
                     "copy, results copied back",
        P.igamma_grad_a: "no CuPy function: the interpreter's series and continued "
                         "fraction on a host copy, results copied back",
        P.igamma_hess_a: "no CuPy function: the interpreter's series and continued "
                         "fraction, differentiated twice, on a host copy, results copied back",
        P.betainc_grad: "no CuPy function: the interpreter's continued fraction on a host "
                        "copy, results copied back",
        P.setitem: "never reaches a backend (jit's functionalize pass rewrites mutations "
                    "into scatters and dynamic updates first)",
        **dict.fromkeys(P.COLLECTIVES, _COLLECTIVE_HOST)}

# SPECIAL's primitives whose complex operands CuPy has no loop for (CuPy 13's erf, erfc
# and erfcx are float only): scipy.special's on a host copy, as HOST
COMPLEX_HOST = {p: f"cupyx.scipy.special.{SPECIAL[p]} has no complex loop (CuPy 13): "
                   f"scipy.special.{SPECIAL[p]} on a host copy, results copied back"
                for p in (P.erf, P.erfc, P.erfcx)}


def scipy_module(name, simulated):
    """``cupyx.scipy.<name>`` on a GPU, ``scipy.<name>`` under the simulator."""
    return importlib.import_module(("scipy." if simulated else "cupyx.scipy.") + name)


def lower(eqn, xp, simulated):
    """``run(args) -> list of outputs`` for ``eqn`` (a primitive in ``CALLS``)."""
    return _LOWER[eqn.prim](eqn, xp, simulated)


def _as(xp, a, v):
    return xp.asarray(a, dtype=v.aval.dtype)


def _outs(eqn, xp, values):
    return [_as(xp, a, v) for a, v in zip(values, eqn.outputs, strict=True)]


def _named(name, error, *arrays):
    shapes = " and ".join(str(a.shape) for a in arrays)
    return f"{name}: {error} (operand of shape {shapes})"


def _reduce_precision(eqn, xp, sim):
    def run(args):
        return _outs(eqn, xp, [reduce_precision_with(xp, xp.asarray(args[0]),
                                                     **eqn.params)])
    return run


def _sort(eqn, xp, sim):
    dim, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
    stable = {"kind": "stable"} if xp is np else {}     # CuPy's argsort is always stable

    def run(args):
        ops = [xp.moveaxis(xp.asarray(a), dim, -1) for a in args]
        order = None
        for key in reversed(ops[:num_keys]):     # least significant key first, stably
            k = key if order is None else xp.take_along_axis(key, order, -1)
            step = xp.argsort(k, axis=-1, **stable)
            order = step if order is None else xp.take_along_axis(order, step, -1)
        return _outs(eqn, xp, [xp.ascontiguousarray(
            xp.moveaxis(xp.take_along_axis(o, order, -1), -1, dim)) for o in ops])
    return run


def _check_index(eqn, xp, sim):
    size, axis, where = eqn.params["size"], eqn.params["axis"], eqn.params["where"]

    def run(args):
        a = xp.asarray(args[0])
        if bool(xp.any((a < -size) | (a >= size))):
            check_index(xp.asnumpy(a) if hasattr(xp, "asnumpy") else a, size, axis, where)
        a = a.astype(np.int64)
        return [xp.where(a < 0, a + size, a)]
    return run


def _fft(eqn, xp, sim):
    kind, lengths = eqn.params["fft_type"], tuple(eqn.params["fft_lengths"])
    fn = getattr(xp.fft, _FFT[kind])

    def run(args):
        x = xp.asarray(args[0])
        axes = tuple(range(x.ndim - len(lengths), x.ndim))
        return _outs(eqn, xp, [fn(x, s=lengths, axes=axes)])
    return run


def _raising(sim):
    """CuPy reports a failed factorization only inside ``cupyx.errstate(linalg='raise')``
    (by default it returns NaNs); NumPy always raises."""
    if sim:
        return contextlib.nullcontext()
    import cupyx
    return cupyx.errstate(linalg="raise")


def _linalg(fn):
    def lower(eqn, xp, sim):
        def run(args):
            arrays = [xp.asarray(a) for a in args]
            try:
                with _raising(sim):
                    out = fn(xp, sim, *arrays, **eqn.params)
            except LinAlgError as e:
                raise LinAlgError(_named(eqn.prim.name, e, *arrays)) from None
            return _outs(eqn, xp, out if eqn.prim.multiple_results else [out])
        return run
    return lower


def _per_matrix(xp, shape, fn):
    for i in np.ndindex(*shape):
        fn(i)


def _lu(xp, sim, a):
    lu_factor = scipy_module("linalg", sim).lu_factor
    lu = xp.empty(a.shape, a.dtype)
    piv = xp.empty(a.shape[:-1], np.int32)

    def one(i):
        with np.errstate(all="ignore"):
            lu[i], piv[i] = lu_factor(a[i], check_finite=False)
    _per_matrix(xp, a.shape[:-2], one)
    return [lu, piv, permutation(xp, sim, piv, a.shape[-1])[0]]


_RIGHT = {"N": "T", "T": "N", "C": "conj", "conj": "C"}


def _triangular_solve(xp, sim, a, b, *, left_side, lower, transpose_a, conjugate_a,
                      unit_diagonal):
    solve = scipy_module("linalg", sim).solve_triangular

    def tri(m, r, op):
        if op == "conj":
            return xp.conj(solve(m, xp.conj(r), lower=lower, unit_diagonal=unit_diagonal))
        return solve(m, r, trans=op, lower=lower, unit_diagonal=unit_diagonal,
                     check_finite=False)
    op = ("C" if conjugate_a else "T") if transpose_a else ("conj" if conjugate_a else "N")
    out = xp.empty(b.shape, b.dtype)

    def one(i):
        out[i] = tri(a[i], b[i], op) if left_side else tri(a[i], b[i].T, _RIGHT[op]).T
    _per_matrix(xp, a.shape[:-2], one)
    return out


def _qr(xp, sim, a, *, full_matrices):
    return list(xp.linalg.qr(a, mode="complete" if full_matrices else "reduced"))


def _svd(xp, sim, a, *, full_matrices, compute_uv):
    if not compute_uv:
        return [xp.linalg.svd(a, compute_uv=False)]
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return [s, u, vh]


def _eigh(xp, sim, a, *, lower):
    return list(xp.linalg.eigh(a, UPLO="L" if lower else "U"))


def _eig(xp, sim, a, *, compute_v):
    """NumPy's eig on the device; CuPy before 14 has none: on a host copy, copied back.
    The eigenvalues' order is the routine's (geev's on the host, cuSOLVER's on a GPU)."""
    c = P.complex_of(a.dtype)
    linalg, host = (xp.linalg, False) if hasattr(xp.linalg, "eig") else (np.linalg, True)
    m = a.get() if host else a
    outs = list(linalg.eig(m)) if compute_v else [linalg.eigvals(m)]
    return [xp.asarray(o.astype(c)) for o in outs]


def _cholesky(xp, sim, a, *, upper=False):
    """CuPy's cholesky reads the lower triangle: the upper factor is the conjugate transpose
    of the lower one of ``a^H``."""
    if not upper:
        return xp.linalg.cholesky(a)
    return xp.conj(xp.swapaxes(xp.linalg.cholesky(xp.conj(xp.swapaxes(a, -1, -2))), -1, -2))


_LINALG = {P.cholesky: _cholesky,
           P.solve: lambda xp, sim, a, b: xp.linalg.solve(a, b),
           P.det: lambda xp, sim, a: xp.linalg.det(a),
           P.slogdet: lambda xp, sim, a: list(xp.linalg.slogdet(a)),
           P.slogdet_inv_t: lambda xp, sim, a: [*xp.linalg.slogdet(a),
                                                xp.swapaxes(xp.linalg.inv(a), -1, -2)],
           P.qr: _qr, P.svd: _svd, P.eigh: _eigh, P.eig: _eig, P.lu: _lu,
           P.triangular_solve: _triangular_solve}


def _special(name):
    def lower(eqn, xp, sim):
        fn = getattr(scipy_module("special", sim), name)

        def run(args):
            params = (eqn.params["order"],) if "order" in eqn.params else ()
            with np.errstate(all="ignore"):
                return _outs(eqn, xp, [fn(*params, *(xp.asarray(a) for a in args))])
        return run
    return lower


# -- graph-valued primitives ---------------------------------------------------------

def _compiled(graph):
    """``graph`` compiled by the cuda runtime, once, on first use."""
    from .runtime import compile_graph
    return functools.cache(lambda: compile_graph(graph))


def _scalar(xp, a):
    return (a if xp is np else xp.asnumpy(a)).reshape(()).item()


def _graph_call(key):
    def lower(eqn, xp, sim):
        run_inner = _compiled(eqn.params[key])

        def run(args):
            return _outs(eqn, xp, run_inner()(list(args)))
        return run
    return lower


def _cond(eqn, xp, sim):
    branches = [_compiled(b) for b in eqn.params["branches"]]

    def run(args):
        i = min(max(int(_scalar(xp, args[0])), 0), len(branches) - 1)
        return _outs(eqn, xp, branches[i]()(list(args[1:])))
    return run


def _while(eqn, xp, sim):
    p = eqn.params
    cond, body = _compiled(p["cond_graph"]), _compiled(p["body_graph"])
    nc, nb, max_steps = p["n_cond_consts"], p["n_body_consts"], p["max_steps"]

    def run(args):
        cc, bc = list(args[:nc]), list(args[nc:nc + nb])
        carry = [xp.array(c, copy=True) for c in args[nc + nb:]]   # never an input's buffer
        steps = 0
        while (max_steps is None or steps < max_steps) and \
                bool(_scalar(xp, cond()(cc + carry)[0])):
            carry = body()(bc + carry)
            steps += 1
        return _outs(eqn, xp, carry)
    return run


def _scan(eqn, xp, sim):
    p = eqn.params
    body = _compiled(p["body"])
    n_consts, n_carry, length = p["n_consts"], p["n_carry"], p["length"]
    y_avals = p["body"].out_avals[n_carry:]

    def run(args):
        consts = list(args[:n_consts])
        carry = [xp.array(c, copy=True) for c in args[n_consts:n_consts + n_carry]]
        xs = [xp.asarray(x) for x in args[n_consts + n_carry:]]
        ys = [xp.empty((length, *av.shape), av.dtype) for av in y_avals]
        for i in (reversed(range(length)) if p["reverse"] else range(length)):
            outs = body()(consts + carry + [x[i] for x in xs])
            carry = outs[:n_carry]
            for y, o in zip(ys, outs[n_carry:], strict=True):
                y[i] = o
        return _outs(eqn, xp, carry + ys)
    return run


def _custom_lin(eqn, xp, sim):

    def run(args):
        return IMPLS[P.custom_lin](*args, **eqn.params)
    return run


_LOWER = {P.check_index: _check_index, P.sort: _sort, P.reduce_precision: _reduce_precision,
          P.fft: _fft,
          **{p: _linalg(f) for p, f in _LINALG.items()},
          **{p: _special(n) for p, n in SPECIAL.items()},
          P.cond: _cond, P.while_loop: _while, P.scan: _scan,
          P.call: _graph_call("graph"), P.custom_jvp_call: _graph_call("graph"),
          P.custom_vjp_call: _graph_call("graph"), P.custom_lin: _custom_lin}
