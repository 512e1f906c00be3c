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
interpreter and SciPy agree to the bit (tests/backends/llvm/test_llvm_scipy_special_calls.py).

Complex operands (``COMPLEX_CALLS``: erf, erfc, erfcx, spence and jv's argument) call
SciPy's ``double complex`` functions (the Faddeeva package's, ``cspence``, AMOS's), a
complex value passed and returned as two doubles (the x86-64 C ABI of ``double _Complex``,
which Cython's complex struct shares); complex64 is widened and each part of the result
rounded back, as the ``F->F`` loops do.

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
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from llvmlite import binding as llvm
from llvmlite import ir

from . import engine
from .blas import _capsule_pointer
from .narrowing import f64_to_bf16, f64_to_f16

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
    P.bessel_y0: ("y0", "y0", None),
    P.bessel_y1: ("y1", "y1", None),
    P.bessel_yn: ("yn", "__pyx_fuse_0yn", None),       # a double order (SciPy's dd loop)
    P.bessel_iv: ("iv", "__pyx_fuse_1iv", None),
    P.bessel_ive: ("ive", "__pyx_fuse_1ive", None),
    P.bessel_k0: ("k0", "k0", None),
    P.bessel_k1: ("k1", "k1", None),
    P.bessel_kv: ("kv", "__pyx_fuse_1kv", None),
    P.bessel_kve: ("kve", "__pyx_fuse_1kve", None),
    # Cephes's gamma: 2.8x faster than glibc's tgamma per element in float64, 1.5x in
    # float32 (one thread, 1M values), and SciPy's values to the bit
    P.tgamma: ("gamma", "__pyx_fuse_1gamma", None),
}
# complex operands: primitive -> (scipy.special ufunc, complex128 capsule)
COMPLEX_CALLS = {
    P.erf: ("erf", "__pyx_fuse_0erf"),
    P.erfc: ("erfc", "__pyx_fuse_0erfc"),
    P.erfcx: ("erfcx", "__pyx_fuse_0erfcx"),
    P.spence: ("spence", "__pyx_fuse_0spence"),
    P.bessel_jv: ("jv", "__pyx_fuse_0jv"),     # a real order, a complex argument
}
# A kernel calling SciPy counts each element as this many points where the runtime decides
# whether to split it over threads and whether the GIL-holding native entry may run it (a
# call costs 20-350 ns, an element of vectorized math about 1): from 4096 values on, such a
# kernel releases the GIL (100K gammainc: another Python thread ran 1.5x as fast beside it,
# beside spence 3x) instead of holding it up to 90 ms
POINTS_PER_CALL = 64
_COMPLEX = "__pyx_t_double_complex"
_C_TYPES = {"double": F64, "float": F32, _COMPLEX: ir.LiteralStructType([F64, F64])}
_bound: dict = {}       # symbol -> (the C type of its result, of each argument)


def _signature(capsule_name: str):
    """(result type, argument types) of an exported ``T (U, ..., int)``, each ``float``,
    ``double`` or ``double complex``."""
    import scipy.special.cython_special as cs
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    text = api.PyCapsule_GetName(cs.__pyx_capi__[capsule_name]).decode()
    ret, _, rest = text.partition(" (")
    args = [a.strip() for a in rest.rstrip(")").split(",")]
    if ret not in _C_TYPES or args[-1] != "int __pyx_skip_dispatch" or \
            any(a not in _C_TYPES for a in args[:-1]):
        raise RuntimeError(f"scipy.special.cython_special.{capsule_name} has the signature "
                           f"{text!r}, not 'T (U, ..., int)' with T and U float, double or "
                           "double complex")
    return _C_TYPES[ret], tuple(_C_TYPES[a] for a in args[:-1])


def bind(capsule_name: str, n_args: int):
    """The symbol kernels call for ``capsule_name`` (a function of ``n_args`` values),
    bound to SciPy's function (once per process), its result type and argument types."""
    symbol = f"fc_sf_{capsule_name.removeprefix('__pyx_')}"
    if symbol not in _bound:
        import scipy.special.cython_special as cs
        signature = _signature(capsule_name)
        address = _capsule_pointer(cs.__pyx_capi__[capsule_name])
        with engine.lock:
            llvm.add_symbol(symbol, address)
        _bound[symbol] = signature
    ret, args = _bound[symbol]
    if len(args) != n_args:
        raise RuntimeError(f"scipy.special.cython_special.{capsule_name} takes "
                           f"{len(args)} values, not {n_args}")
    return symbol, ret, args


def _declare(e, symbol, ret, args):
    """``symbol`` in the kernel's module: a complex argument travels as two doubles."""
    fn = e.module.globals.get(symbol)
    if fn is None:
        flat = [t for a in args for t in (a.elements if isinstance(a, ir.LiteralStructType)
                                          else (a,))]
        fn = ir.Function(e.module, ir.FunctionType(ret, flat + [I32]), symbol)
        fn.attributes.add("nounwind")
    return fn


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
    capsule = double if in_double or single is None else single
    symbol, ty, types = bind(capsule, len(args))
    if any(t != ty for t in types):
        raise RuntimeError(f"scipy.special.cython_special.{capsule} does not take and "
                           "return one real type")
    b = e.b
    fn = _declare(e, symbol, ty, types)
    r = b.call(fn, [a if a.type == ty else b.fpext(a, ty) for a in args] + [ir.Constant(I32, 0)])
    if r.type == args[0].type:
        return r
    if dt == np.float16 and in_double:      # rounded once, as the float64 result cast to half
        return f64_to_f16(e, r)
    if dt == dtypes.bfloat16 and in_double:     # SciPy's float64 loop, cast once (ml_dtypes)
        return f64_to_bf16(e, r)
    return b.fptrunc(r, args[0].type)


def emit_complex_call(e, prim, *args):
    """``prim``'s SciPy function of compute values ``args`` (complex pairs, and jv's real
    order) in double precision; a complex64 result rounded back part by part."""
    b = e.b
    symbol, ret, types = bind(COMPLEX_CALLS[prim][1], len(args))
    flat = []
    for a, t in zip(args, types, strict=True):
        if isinstance(t, ir.LiteralStructType) != isinstance(a.type, ir.LiteralStructType):
            raise RuntimeError(f"{prim.name}: SciPy's complex function takes "
                               f"{', '.join(map(str, types))}, not {a.type}")
        parts = [b.extract_value(a, 0), b.extract_value(a, 1)] \
            if isinstance(a.type, ir.LiteralStructType) else [a]
        flat += [p if p.type == F64 else b.fpext(p, F64) for p in parts]
    r = b.call(_declare(e, symbol, ret, types), flat + [ir.Constant(I32, 0)])
    part = args[-1].type.elements[0]
    if part == F64:
        return r
    re, im = (b.fptrunc(b.extract_value(r, i), part) for i in (0, 1))
    pair = ir.Constant(ir.LiteralStructType([part, part]), ir.Undefined)
    return b.insert_value(b.insert_value(pair, re, 0), im, 1)


def is_call(prim, dtype) -> bool:
    """Whether ``prim`` with a result of ``dtype`` calls a SciPy function."""
    return prim in CALLS or (prim in COMPLEX_CALLS and np.dtype(dtype).kind == "c")


def calls_scipy(kernel) -> bool:
    """Whether a planned kernel calls a SciPy function."""
    return any(is_call(op.prim, op.dtype) for op in kernel.ops)


def _rule(prim):
    return lambda e, dt, *xs: emit_call(e, prim, dt, *xs)


def _complex_rule(prim, real_rule):
    """``real_rule``, or SciPy's complex function where an operand is a complex pair."""
    def rule(e, dt, *xs):
        if any(isinstance(x.type, ir.LiteralStructType) for x in xs):
            return emit_complex_call(e, prim, *xs)
        return real_rule(e, dt, *xs)
    return rule


RULES = {p: _rule(p) for p in CALLS}


def with_complex(rules):
    """The rules of :data:`COMPLEX_CALLS`' primitives, from ``rules``' real ones, taking
    complex operands too."""
    return {p: _complex_rule(p, rules[p]) for p in COMPLEX_CALLS}
