"""Special functions as calls into SciPy's compiled code, one call per element.

``scipy.special.cython_special`` exports its C functions (``nogil``) as capsules in
``__pyx_capi__``, the way ``cython_lapack`` exports LAPACK's; a kernel calls them through
a symbol (``fc_sf_<capsule name>``) bound to the capsule's pointer with
``llvm.add_symbol`` when the rule is emitted, so the IR, its digest and the disk-cached
object code are the same in every process. Each function is the one the ``scipy.special``
ufunc's loop calls for that dtype: float64 directly; float32 (and float16, held as float)
widened to double and the result rounded back, as the ``ff->f`` loops do, except
``betainc``, whose float32 loop is a genuine float function (``__pyx_fuse_1betainc``);
float16 takes the loop SciPy's ufunc picks for it (the float64 one for gammainc, whose
``dd->d`` loop comes first: then the double result is rounded once to half). So native,
interpreter and SciPy agree to the bit (tests/test_llvm_scipy_special_calls.py).

The trailing ``int skip_dispatch`` of every exported function is passed as 0. These
functions never consult ``scipy.special.seterr`` (that is the ufuncs' doing): natively a
domain error gives SciPy's value (NaN) with no warning or ``SpecialFunctionError``. A
call stops the vectorizer around it (see ``lowering.CALLS_ALONE``). A shared library
cannot hold these pointers (they exist only in a process that imported SciPy):
``aot.py`` refuses graphs with them.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir

from ir import primitives as P

F32, F64, I32 = ir.FloatType(), ir.DoubleType(), ir.IntType(32)

# primitive -> (scipy.special ufunc, float64 capsule, float32 capsule or None: the float64
# one, widened)
CALLS = {
    P.igamma: ("gammainc", "gammainc", None),
    P.igammac: ("gammaincc", "gammaincc", None),
    P.betainc: ("betainc", "__pyx_fuse_0betainc", "__pyx_fuse_1betainc"),
    P.spence: ("spence", "__pyx_fuse_1spence", None),
    P.bessel_jv: ("jv", "__pyx_fuse_1jv", None),
    P.bessel_j0: ("j0", "j0", None),
    # Cephes's gamma: 2.8x faster than glibc's tgamma per element in float64, 1.5x in
    # float32 (one thread, 1M values), and SciPy's values to the bit
    P.tgamma: ("gamma", "__pyx_fuse_1gamma", None),
}
# A kernel calling SciPy counts each element as this many points where the runtime decides
# whether to split it over threads and whether the GIL-holding native entry may run it (a
# call costs 20-350 ns, an element of vectorized math about 1): from 4096 values on, such a
# kernel releases the GIL (100K gammainc: another Python thread ran 1.5x as fast beside it,
# beside spence 3x) instead of holding it up to 90 ms
POINTS_PER_CALL = 64
_C_TYPES = {"double": F64, "float": F32}
_bound: dict = {}       # symbol -> (the C type of its values, how many it takes)


def _signature(capsule_name: str):
    """(value type, number of value arguments) of an exported ``T (T, ..., int)``."""
    import scipy.special.cython_special as cs
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    text = api.PyCapsule_GetName(cs.__pyx_capi__[capsule_name]).decode()
    ret, _, rest = text.partition(" (")
    args = [a.strip() for a in rest.rstrip(")").split(",")]
    if ret not in _C_TYPES or args[-1] != "int __pyx_skip_dispatch" or \
            any(a != ret for a in args[:-1]):
        raise RuntimeError(f"scipy.special.cython_special.{capsule_name} has the signature "
                           f"{text!r}, not 'T (T, ..., int)' with T float or double")
    return _C_TYPES[ret], len(args) - 1


def bind(capsule_name: str, n_args: int):
    """The symbol kernels call for ``capsule_name`` (a function of ``n_args`` values),
    bound to SciPy's function (once per process), and its value type."""
    symbol = f"fc_sf_{capsule_name.removeprefix('__pyx_')}"
    if symbol not in _bound:
        import scipy.special.cython_special as cs

        from . import runtime
        from .blas import _capsule_pointer
        signature = _signature(capsule_name)
        address = _capsule_pointer(cs.__pyx_capi__[capsule_name])
        with runtime._lock:
            llvm.add_symbol(symbol, address)
        _bound[symbol] = signature
    ty, n = _bound[symbol]
    if n != n_args:
        raise RuntimeError(f"scipy.special.cython_special.{capsule_name} takes {n} values, "
                           f"not {n_args}")
    return symbol, ty


@functools.cache
def _loop_is_double(ufunc: str, dtype: np.dtype, n: int) -> bool:
    """Whether SciPy's ufunc runs operands of ``dtype`` through its float64 loop (float16
    does for gammainc, whose ``dd->d`` loop comes first, not for betainc)."""
    import scipy.special as ss
    return getattr(ss, ufunc).resolve_dtypes((dtype,) * n + (None,))[-1] == np.float64


def emit_call(e, prim, dt, *args):
    """``prim``'s SciPy function of compute values ``args`` of float dtype ``dt``, rounded to
    ``dt`` as SciPy's ufunc loop for ``dt`` rounds it."""
    ufunc, double, single = CALLS[prim]
    in_double = dt == np.float64 or _loop_is_double(ufunc, np.dtype(dt), len(args))
    symbol, ty = bind(double if in_double or single is None else single, len(args))
    b = e.b
    fn = e.module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(e.module, ir.FunctionType(ty, [ty] * len(args) + [I32]), symbol)
        fn.attributes.add("nounwind")
    r = b.call(fn, [a if a.type == ty else b.fpext(a, ty) for a in args] + [ir.Constant(I32, 0)])
    if r.type == args[0].type:
        return r
    if dt == np.float16 and in_double:      # rounded once, as the float64 result cast to half
        from .ops import _f64_to_f16
        return _f64_to_f16(e, r)
    return b.fptrunc(r, args[0].type)


def calls_scipy(kernel) -> bool:
    """Whether a planned kernel calls a SciPy function."""
    return any(op.prim in CALLS for op in kernel.ops)


def _rule(prim):
    return lambda e, dt, *xs: emit_call(e, prim, dt, *xs)


RULES = {p: _rule(p) for p in CALLS}
