"""What is data about a primitive, in one record per primitive, for every layer to read.

A :class:`PrimSpec` names the operand kinds an elementwise primitive accepts, the operands
it is linear in, the NumPy/SciPy function that is its reference semantics and the C
library names backends compute it with. ``ir.primitives`` declares each elementwise
primitive from its row and attaches every spec to its primitive (``P.tanh.spec``); the
interpreter's implementations, llvm's libm calls and the cuda backend's math functions are
derived from these rows. Code stays in the backends; only names and sets live here.
"""

from __future__ import annotations

import functools
import importlib
import keyword
from dataclasses import dataclass

NUMERIC = "biufc"
INEXACT = "fc"
REAL = "biuf"
INT_BOOL = "biu"

# ``linear`` for variadic primitives: every operand, or the ones the params single out
ALL_OPERANDS = "all"
BY_PARAMS = "params"


@dataclass(frozen=True)
class PrimSpec:
    """The data of one primitive.

    ``linear``: the operands a tangent may occupy in a transposable equation (the
    primitive is linear in them with the other operands held fixed; products such as
    ``mul`` in each one alone), ``ALL_OPERANDS`` or ``BY_PARAMS`` for variadic ones.
    ``numpy``: the dotted name of the reference function (``"numpy.tanh"``).
    ``libm``: the C99 libm function (double; the float one adds ``f``), None where the
    operation is exact in hardware; ``clibm``: the C99 complex function (``"ctanh"``).
    ``cuda``: the CUDA math library's function on float operands.
    ``result``: an elementwise primitive's result dtype: its operands' (``"same"``), their
    real one (``"real"``: abs, real, imag), ``"bool"``, or ``"complex"``.
    ``domain``: an interval of real operands on which the function is smooth, away from its
    poles, branch cuts and ties (the primitive-level tests draw every operand from it).
    """

    name: str
    family: str
    kinds: str = ""
    linear: tuple[int, ...] | str = ()
    numpy: str | None = None
    libm: str | None = None
    clibm: str | None = None
    cuda: str | None = None
    result: str = "same"
    domain: tuple[float, float] | None = None

    @property
    def attr(self) -> str:
        """The primitive's name in ``ir.primitives``: the spec's, with a trailing ``_``
        where that is a Python keyword (``P.not_``)."""
        return self.name + "_" if keyword.iskeyword(self.name) else self.name

    @property
    def reference(self):
        """The reference function itself (SciPy is imported on first use)."""
        return None if self.numpy is None else _resolve(self.numpy)

    @property
    def is_linear(self) -> bool:
        return bool(self.linear)


@functools.cache
def _resolve(dotted):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _unary(name, kinds, numpy=None, **names):
    return PrimSpec(name, "unary", kinds, numpy=numpy and "numpy." + numpy, **names)


def _binary(name, kinds, numpy=None, **names):
    return PrimSpec(name, "binary", kinds, numpy=numpy and "numpy." + numpy, **names)


def _c99(name, kinds=INEXACT, numpy=None, complex_=True, libm=True, domain=None):
    """A function of C99's math.h (and of complex.h when ``complex_``) under its C name."""
    return _unary(name, kinds, numpy or name, libm=name if libm else None,
                  clibm="c" + name if complex_ else None, cuda=name, domain=domain)


def _scipy(name, family, kinds, fn, **names):
    return PrimSpec(name, family, kinds, numpy="scipy.special." + fn, **names)


_ARITHMETIC = (
    _unary("neg", NUMERIC, "negative", linear=(0,), domain=(-2, 2)),
    _unary("sign", NUMERIC, "sign"),
    _unary("abs", NUMERIC, "abs", result="real"),
    _unary("floor", "f", "floor", cuda="floor"),
    _unary("ceil", "f", "ceil", cuda="ceil"),
    _unary("round", "f", "rint", cuda="rint"),          # half to even
    _unary("is_finite", INEXACT, "isfinite", cuda="isfinite", result="bool"),
    _c99("exp", domain=(-2, 2)),
    _c99("exp2", complex_=False, domain=(-2, 2)),
    _c99("expm1", complex_=False, domain=(-2, 2)),
    _c99("log", domain=(0.2, 3)),
    _c99("log1p", complex_=False, domain=(-0.5, 2)),
    _c99("sqrt", libm=False, domain=(0.2, 3)),
    _c99("cbrt", "f", complex_=False, domain=(0.2, 3)),
    _c99("tanh", domain=(-2, 2)),
    _scipy("logistic", "unary", INEXACT, "expit", domain=(-2, 2)),
    _c99("sin", domain=(-2, 2)),
    _c99("cos", domain=(-2, 2)),
    _c99("tan", domain=(-1, 1)),
    _c99("asin", numpy="arcsin", domain=(-0.8, 0.8)),
    _c99("acos", numpy="arccos", domain=(-0.8, 0.8)),
    _c99("atan", numpy="arctan", domain=(-2, 2)),
    _c99("sinh", domain=(-2, 2)),
    _c99("cosh", domain=(-2, 2)),
    _c99("asinh", numpy="arcsinh", domain=(-2, 2)),
    _c99("acosh", numpy="arccosh", domain=(1.2, 3)),
    _c99("atanh", numpy="arctanh", domain=(-0.8, 0.8)),
    _unary("not", INT_BOOL, "invert"),          # logical not on bool, bitwise on ints
    _unary("real", "c", "real", linear=(0,), result="real"),
    _unary("imag", "c", "imag", linear=(0,), result="real"),
    _unary("conj", "c", "conjugate", linear=(0,)),

    _binary("add", NUMERIC, "add", linear=(0, 1)),
    _binary("sub", "iufc", "subtract", linear=(0, 1)),
    _binary("mul", NUMERIC, "multiply", linear=(0, 1)),
    _binary("div", INEXACT, "true_divide", linear=(0,)),
    _binary("floor_div", "iuf", "floor_divide"),   # x // 0 == 0 for ints
    _binary("rem", "iuf", "remainder"),             # the sign follows the divisor
    _binary("pow", "iufc", "power", libm="pow", cuda="pow"),
    _binary("max", NUMERIC, "maximum"),             # NaN-propagating
    _binary("min", NUMERIC, "minimum"),
    _binary("atan2", "f", "arctan2", libm="atan2", cuda="atan2"),
    _binary("copysign", "f", "copysign", cuda="copysign"),
    _binary("and", INT_BOOL, "bitwise_and"),
    _binary("or", INT_BOOL, "bitwise_or"),
    _binary("xor", INT_BOOL, "bitwise_xor"),
    _binary("eq", NUMERIC, "equal", result="bool"),
    _binary("ne", NUMERIC, "not_equal", result="bool"),
    _binary("complex", "f", linear=(0, 1), result="complex"),         # re + im * 1j, exactly
    _binary("lt", REAL, "less", result="bool"),
    _binary("le", REAL, "less_equal", result="bool"),
    _binary("gt", REAL, "greater", result="bool"),
    _binary("ge", REAL, "greater_equal", result="bool"),
    PrimSpec("select", "select", NUMERIC, linear=(1, 2), numpy="numpy.where"),
    PrimSpec("convert", "convert", NUMERIC, linear=(0,)),
    # rounding to fewer exponent/mantissa bits in the same dtype (lax.reduce_precision);
    # linear as JAX treats it: its tangent and cotangent are rounded the same way
    PrimSpec("reduce_precision", "unary", "f", linear=(0,)),
)

# scipy.special's functions (ir.primitives.SPECIAL); erf, erfc, erfcx, spence and
# bessel_jv's z also take complex operands (the Faddeeva package's, cspence, AMOS's)
SPECIAL_FUNCTIONS = (
    _scipy("erf", "unary", "fc", "erf", libm="erf", cuda="erf", domain=(-2, 2)),
    _scipy("erfc", "unary", "fc", "erfc", libm="erfc", cuda="erfc", domain=(-2, 2)),
    _scipy("erfcx", "unary", "fc", "erfcx", domain=(-1, 2)),              # exp(x^2) erfc(x)
    _scipy("lgamma", "unary", "f", "gammaln", libm="lgamma", cuda="lgamma",   # log |gamma|
           domain=(0.3, 4)),
    _scipy("tgamma", "unary", "f", "gamma", libm="tgamma", cuda="tgamma", domain=(0.3, 3)),
    _scipy("digamma", "unary", "f", "digamma", domain=(0.3, 4)),
    _scipy("bessel_i0e", "unary", "f", "i0e", domain=(0.2, 3)),            # exp(-|x|) I0(x)
    _scipy("bessel_i1e", "unary", "f", "i1e", domain=(0.2, 3)),
    _scipy("spence", "unary", "fc", "spence", domain=(0.2, 2)),   # the dilogarithm integral
    _scipy("zeta", "binary", "f", "zeta"),                # Hurwitz zeta(x, q)
    _scipy("igamma", "binary", "f", "gammainc"),    # regularized lower incomplete P(a, x)
    _scipy("igammac", "binary", "f", "gammaincc"),         # Q(a, x) = 1 - P(a, x)
    PrimSpec("igamma_grad_a", "binary", "f"),   # dP(a, x)/da; the interpreter implements it
    PrimSpec("igamma_hess_a", "binary", "f"),   # d^2P(a, x)/da^2
    _scipy("bessel_jv", "binary", "fc", "jv"),             # J_v(z)
    _scipy("bessel_j0", "unary", "f", "j0", domain=(-3, 3)),      # J_0: Cephes, not jv's AMOS
    _scipy("bessel_y0", "unary", "f", "y0", domain=(0.5, 3)),      # Y_0, Y_1: Cephes's
    _scipy("bessel_y1", "unary", "f", "y1", domain=(0.5, 3)),
    _scipy("bessel_yn", "binary", "f", "yn"),     # Y_n(x), n truncated to an integer
    _scipy("bessel_iv", "binary", "f", "iv"),     # I_v(x) of real order and argument
    _scipy("bessel_ive", "binary", "f", "ive"),   # exp(-|x|) I_v(x)
    _scipy("bessel_k0", "unary", "f", "k0", domain=(0.5, 3)),      # K_0, K_1: Cephes's
    _scipy("bessel_k1", "unary", "f", "k1", domain=(0.5, 3)),
    _scipy("bessel_kv", "binary", "f", "kv"),     # K_v(x) of real order and argument
    _scipy("bessel_kve", "binary", "f", "kve"),   # exp(x) K_v(x)
    _scipy("polygamma", "unary", "f", "polygamma"),
    _scipy("betainc", "special3", "f", "betainc"),        # regularized I_x(a, b)
    PrimSpec("betainc_grad", "special3", "f"),  # dI_x(a, b)/da or /db, or a second one
)
ELEMENTWISE = _ARITHMETIC + SPECIAL_FUNCTIONS

# the linear operands of the other primitives (their type rules are code: ir/primitives/)
LINEAR = {
    "broadcast_in_dim": (0,), "reshape": (0,), "transpose": (0,), "squeeze": (0,),
    "expand_dims": (0,), "rev": (0,), "concatenate": ALL_OPERANDS, "pad": (0, 1),
    "slice": (0,), "dynamic_slice": (0,), "dynamic_update_slice": (0, 1), "gather": (0,),
    "scatter_add": (0, 2), "scatter": (0, 2), "reduce_sum": (0,), "cumsum": (0,),
    "dot_general": (0, 1), "conv_general_dilated": (0, 1), "reduce_window_sum": (0,),
    "select_and_gather_add": (0,), "select_and_scatter_add": (0,), "fft": (0,),
    "solve": (1,), "triangular_solve": (1,), "sylvester": (2,),
    # all_reduce and reduce_scatter are linear with op "sum" (max/min differentiate through
    # masks and sums); all_gather always
    "all_reduce": BY_PARAMS, "reduce_scatter": BY_PARAMS, "all_gather": (0,),
    # the tangents after n_res residuals; the tangent operands of a jvp's cond, scan or
    # while loop (a while loop's transpose is the error that asks for max_steps)
    "custom_lin": BY_PARAMS, "cond": BY_PARAMS, "scan": BY_PARAMS, "while": BY_PARAMS,
}

SPECS: dict[str, PrimSpec] = {s.name: s for s in ELEMENTWISE}


def spec_for(name: str, family: str) -> PrimSpec:
    """The spec of the primitive ``name`` of ``family``: its row, or one built from
    ``LINEAR`` for a primitive whose data is only its linearity."""
    spec = SPECS.get(name) or PrimSpec(name, family, linear=LINEAR.get(name, ()))
    if spec.family != family:
        raise ValueError(f"primitive {name}: registered as {family}, its spec says "
                         f"{spec.family}")
    return spec


def libm_names() -> tuple[str, ...]:
    """The libm functions (real, then complex) the specs name, in table order."""
    return (tuple(s.libm for s in ELEMENTWISE if s.libm)
            + tuple(s.clibm for s in ELEMENTWISE if s.clibm))
