"""LAPACK-backed linear algebra in a shared library (backends/llvm/aot_lapack.py): det,
slogdet (and slogdet_inv_t, its gradient's), triangular_solve, lu, qr, eigh, svd and eig call
the jit backend's routine with its arguments on the same copies, so a library called
through ctypes gives the jit backend's values to the last bit; det and slogdet walk the
diagonal with the C library's log/exp where the jit backend takes NumPy's, so their logs are
checked within those functions' own error (each within an ulp: see _logdet_bound). Errors
are return codes (5 singular, 6 no convergence); a stored export with native=True runs them
without llvmlite."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.linalg
from functorch_core.backends.llvm.aot import NotNativeError
from functorch_core.backends.llvm.blas import blas_int_bits
from functorch_core.ir import primitives as P

import functorch_core as fc
from functorch_core.deploy import native as stored

pytestmark = [
    pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)"),
    pytest.mark.skipif(blas_int_bits() != 64, reason="needs NumPy's bundled ILP64 OpenBLAS"),
]

RNG = np.random.default_rng(7)


def _tri_kw(left, transpose, conjugate, unit):
    return dict(left_side=left, lower=True, transpose_a=transpose, conjugate_a=conjugate,
                unit_diagonal=unit)


def _cases(dtype):
    """name -> (function, operands): each routine's variants on a batch of matrices."""
    a = RNG.standard_normal((3, 5, 5)).astype(dtype)
    wide = RNG.standard_normal((2, 4, 6)).astype(dtype)
    tall = np.ascontiguousarray(wide.transpose(0, 2, 1))
    sym = (a + a.transpose(0, 2, 1)).astype(dtype)
    tri = (np.tril(a) + 3 * np.eye(5)).astype(dtype)
    b = RNG.standard_normal((3, 5, 2)).astype(dtype)
    cases = {
        "lu": (lambda m: tuple(P.lu.bind(m)), (a,)),
        # slogdet_inv_t: the gradient's inverse transposed, from getrf and getri
        "slogdet_grad": (fc.grad(lambda m: np.linalg.slogdet(m)[1].sum()), (a,)),
        "qr": (lambda m: tuple(np.linalg.qr(m)), (wide,)),
        "qr_tall": (lambda m: tuple(np.linalg.qr(m)), (tall,)),
        "qr_complete": (lambda m: tuple(np.linalg.qr(m, mode="complete")), (tall,)),
        "eigh": (lambda m: tuple(np.linalg.eigh(m)), (sym,)),
        "eigh_upper": (lambda m: tuple(np.linalg.eigh(m, UPLO="U")), (sym,)),
        "svd": (lambda m: tuple(np.linalg.svd(m)), (wide,)),
        "svd_tall_reduced": (lambda m: tuple(np.linalg.svd(m, full_matrices=False)), (tall,)),
        "svd_values": (lambda m: np.linalg.svd(m, compute_uv=False), (tall,)),
        # conjugate pairs (a general matrix), real eigenvalues only (a symmetric one)
        "eig": (lambda m: tuple(np.linalg.eig(m)), (a,)),
        "eig_symmetric": (lambda m: tuple(np.linalg.eig(m)), (sym,)),
        "eigvals": (np.linalg.eigvals, (a,)),
    }
    for left in (True, False):
        for transpose in (False, True):
            for conjugate in (False, True):
                for unit in (False, True):
                    kw = _tri_kw(left, transpose, conjugate, unit)
                    rhs = b if left else np.ascontiguousarray(b.transpose(0, 2, 1))
                    cases[f"tri_{int(left)}{int(transpose)}{int(conjugate)}{int(unit)}"] = (
                        lambda m, x, kw=kw: P.triangular_solve.bind(m, x, **kw), (tri, rhs))
    return cases


def _library(f, args, tmp_path, name):
    fc.export(f, *args).compile_library(tmp_path / f"lib{name}.so", name)
    return ctypes.CDLL(str(tmp_path / f"lib{name}.so"))


def _call(lib, name, inputs, like):
    outs = [np.empty_like(a) for a in like]
    iv = (ctypes.c_void_p * len(inputs))(*[a.ctypes.data for a in inputs])
    ov = (ctypes.c_void_p * len(outs))(*[a.ctypes.data for a in outs])
    return getattr(lib, name)(iv, ov), outs


def _results(value):
    return [np.asarray(v) for v in (value if isinstance(value, tuple | list) else (value,))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_library_gives_the_jit_backends_bits(dtype, tmp_path):
    for i, (case, (f, args)) in enumerate(_cases(dtype).items()):
        want = _results(fc.jit(f)(*args))
        name = f"c{i}"
        rc, got = _call(_library(f, args, tmp_path, name), name, list(args), want)
        assert rc == 0, case
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=case, strict=True)


def test_a_big_conjugate_transpose_is_read_in_place_as_the_jit_backend_does(tmp_path):
    """From lapack.TRI_IN_PLACE_MIN_N rows the jit backend solves a real conjugate
    transpose on ``a`` in place (no Fortran copy): the library takes the same branch."""
    a = np.tril(RNG.standard_normal((2, 130, 130))) + 20 * np.eye(130)
    b = RNG.standard_normal((2, 130, 3))
    kw = _tri_kw(True, True, True, False)

    def f(m, x):
        return P.triangular_solve.bind(m, x, **kw)
    want = np.asarray(fc.jit(f)(a, b))
    rc, (got,) = _call(_library(f, (a, b), tmp_path, "big"), "big", [a, b], [want])
    assert rc == 0
    np.testing.assert_array_equal(got, want, strict=True)


def _logdet_bound(a):
    """How far two logs of |det a| may be apart when each adds log|u_ii| (U of LAPACK's
    getrf in double precision) in order with a log within an ulp of the exact one: per term
    2 ulps of the term, per addition 2 ulps of the partial sum (both sums' roundings)."""
    eps = np.finfo(np.float64).eps
    with warnings.catch_warnings(), np.errstate(divide="ignore"):    # a singular matrix's
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        u = np.stack([np.abs(np.diag(scipy.linalg.lu_factor(m.astype(np.float64))[0]))
                      for m in a.reshape(-1, *a.shape[-2:])])
        logs = np.log(u)
    partial = np.abs(np.add.accumulate(logs, axis=1))
    return (2 * eps * np.abs(logs).sum(axis=1) + 2 * eps * partial.sum(axis=1)).reshape(
        a.shape[:-2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_det_and_slogdet_match_the_jit_within_the_logs_error(dtype, tmp_path):
    a = RNG.standard_normal((4, 6, 6)).astype(dtype)
    a[1, :, 0] = 0      # singular: sign 0, log -inf, det 0 (no error, as NumPy)
    bound = _logdet_bound(a)
    (sign, logdet), (want_sign, want_logdet) = (
        _call(_library(np.linalg.slogdet, (a,), tmp_path, "sl"), "sl", [a],
              [np.empty(4, dtype)] * 2)[1],
        _results(fc.jit(np.linalg.slogdet)(a)))
    np.testing.assert_array_equal(sign, want_sign, strict=True)
    assert logdet[1] == want_logdet[1] == -np.inf
    ok = np.isfinite(want_logdet)
    # float32: the double value rounded once more (half a float32 ulp each)
    slack = bound[ok] + np.spacing(np.abs(want_logdet[ok]).astype(dtype))
    assert np.all(np.abs(logdet[ok].astype(np.float64) - want_logdet[ok]) <= slack)
    rc, (det,) = _call(_library(np.linalg.det, (a,), tmp_path, "d"), "d", [a],
                       [np.empty(4, dtype)])
    want = np.asarray(fc.jit(np.linalg.det)(a))
    assert rc == 0 and det[1] == want[1] == 0
    # exp of logs bound apart: |det| (e^bound - 1), plus exp's own ulp on either side
    tol = np.abs(want[ok]) * (np.expm1(bound[ok]) + 4 * np.finfo(np.float64).eps) + \
        np.spacing(np.abs(want[ok]).astype(dtype))
    assert np.all(np.abs(det[ok].astype(np.float64) - want[ok]) <= tol)


def test_error_codes_where_numpy_and_scipy_raise(tmp_path):
    a = np.tril(RNG.standard_normal((2, 4, 4))) + 3 * np.eye(4)
    b = RNG.standard_normal((2, 4, 3))
    kw = _tri_kw(True, False, False, False)
    lib = _library(lambda m, x: P.triangular_solve.bind(m, x, **kw), (a, b), tmp_path, "t")
    singular = a.copy()
    singular[1, 2, 2] = 0
    assert _call(lib, "t", [singular, b], [b])[0] == 5
    with pytest.raises(np.linalg.LinAlgError):
        fc.jit(lambda m, x: P.triangular_solve.bind(m, x, **kw))(singular, b)
    grad = fc.grad(lambda m: np.linalg.slogdet(m)[1].sum())
    lib = _library(grad, (a,), tmp_path, "g")
    assert _call(lib, "g", [singular], [a])[0] == 5
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        fc.jit(grad)(singular)
    nan = np.full((2, 4, 4), np.nan)
    for f, name in ((np.linalg.eigh, "e"), (np.linalg.svd, "s"), (np.linalg.eig, "v")):
        lib = _library(f, (a,), tmp_path, name)
        want = _results(fc.jit(f)(a))
        assert _call(lib, name, [a], want)[0] == 0
        assert _call(lib, name, [nan], want)[0] == 6
        with pytest.raises(np.linalg.LinAlgError, match=r"converge|infs or NaNs"):
            fc.jit(f)(nan)
    lib = _library(lambda m: tuple(P.lu.bind(m)), (a,), tmp_path, "l")
    zero = np.zeros_like(a)     # a singular matrix factors (U has zeros), as SciPy's
    rc, got = _call(lib, "l", [zero], _results(fc.jit(lambda m: tuple(P.lu.bind(m)))(zero)))
    assert rc == 0 and not got[0].any()


def test_what_a_library_still_refuses(tmp_path):
    a = RNG.standard_normal((3, 3))
    with pytest.raises(NotNativeError, match="sqrtm runs as Python-driven LAPACK calls"):
        fc.export(lambda m: P.sqrtm.bind(m), a).compile_library(tmp_path / "q.so", "q")
    c = a + 1j * a.T
    with pytest.raises(NotNativeError, match="slogdet on complex128"):
        fc.export(np.linalg.slogdet, c).compile_library(tmp_path / "c.so", "c")


@pytest.mark.skipif(stored.host_flags() is None, reason="no /proc/cpuinfo")
def test_stored_exports_run_without_llvm(tmp_path):
    a = RNG.standard_normal((2, 5, 5))
    sym = a + a.transpose(0, 2, 1)
    tri = np.tril(a) + 3 * np.eye(5)
    kw = _tri_kw(False, True, False, False)
    fns = {"det": (np.linalg.det, a), "slogdet": (np.linalg.slogdet, a),
           "qr": (np.linalg.qr, a), "eigh": (np.linalg.eigh, sym), "svd": (np.linalg.svd, a),
           "eig": (np.linalg.eig, a),
           "lu": (lambda m: P.lu.bind(m), a),
           "tri": (lambda m: P.triangular_solve.bind(m, m[:, :2] * 1.0, **kw), tri)}
    want = {}
    for name, (f, x) in fns.items():
        fc.export(f, x).save(tmp_path / f"{name}.fcx", native=True)
        np.save(tmp_path / f"{name}.npy", x)
        want[name] = _results(fc.jit(f)(x))
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        import functorch_core as fc
        report = {{}}
        for name in {list(fns)!r}:
            exp = fc.load_exported({str(tmp_path)!r} + "/" + name + ".fcx")
            out = exp(np.load({str(tmp_path)!r} + "/" + name + ".npy"))
            outs = out if isinstance(out, (tuple, list)) else [out]
            for i, o in enumerate(outs):
                np.save({str(tmp_path)!r} + f"/{{name}}_out{{i}}.npy", np.asarray(o))
            report[name] = exp.native
        print(json.dumps({{"native": report, "llvm": "llvmlite" in sys.modules}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env={"FUNCTORCH_CORE_CACHE_DIR": str(tmp_path / "c"),
                                            "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"native": dict.fromkeys(fns, True), "llvm": False}
    for name, outs in want.items():
        for i, w in enumerate(outs):
            got = np.load(tmp_path / f"{name}_out{i}.npy")
            if name == "slogdet" and i == 1:      # the C library's log (see above)
                assert np.all(np.abs(got - w) <= _logdet_bound(a))
            elif name == "det":
                rtol = np.expm1(_logdet_bound(a)) + 4 * np.finfo(np.float64).eps
                assert np.all(np.abs(got - w) <= rtol * np.abs(w))
            else:
                np.testing.assert_array_equal(got, w, err_msg=name, strict=True)
    loaded = fc.load_exported(tmp_path / "eigh.fcx")
    assert loaded.native
    with pytest.raises(np.linalg.LinAlgError, match="converge"):
        loaded(np.full((2, 5, 5), np.nan))
