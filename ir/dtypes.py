"""Dtypes of the type system and NumPy 2 promotion (NEP 50 weak scalars)."""

import ml_dtypes
import numpy as np

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint32 = np.dtype(np.uint8), np.dtype(np.uint32)   # uint32: random keys and bits
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
# ml_dtypes' bfloat16 (the one JAX uses): NumPy sees it as kind "V"; `dtype_kind` says "f"
bfloat16 = np.dtype(ml_dtypes.bfloat16)

SUPPORTED = (bool_, int8, int16, int32, int64, uint8, uint32,
             bfloat16, float16, float32, float64, complex64, complex128)
SHORT_NAMES = {bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
               uint8: "u8", uint32: "u32", bfloat16: "bf16", float16: "f16", float32: "f32",
               float64: "f64", complex64: "c64", complex128: "c128"}
# the float types that compute in float32 and round once, and accumulate in float32
NARROW_FLOATS = (bfloat16, float16)

# The dtype a Python scalar takes when nothing else decides it, and the Python
# type NumPy's `resolve_dtypes` reads as "weak" for that kind.
_WEAK_PY_TYPE = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def canonical(dtype) -> np.dtype:
    """Return `dtype` as a supported `np.dtype`, or raise TypeError.

    Byte order is not part of the type: a big-endian `>f8` is `float64`, as in JAX
    (the arrays are converted to native order where they enter).
    """
    dt = np.dtype(dtype)
    if not dt.isnative:
        dt = dt.newbyteorder("=")
    if dt not in SUPPORTED:
        raise TypeError(unsupported_message(dt))
    return dt


def unsupported_message(dt, held_by: str = "") -> str:
    """Why ``dt`` is refused and what to convert to; ``held_by`` names what has it
    (``"argument x of jit(f) (shape (2,))"``)."""
    names = ", ".join(str(d) for d in SUPPORTED)
    lead = f"{held_by} has dtype {dt}, which is" if held_by else f"dtype {dt} is"
    return (f"{lead} not supported; {convert_hint(dt)}. "
            f"The supported dtypes are {names}")


def convert_hint(dt) -> str:
    """What an array of the unsupported dtype ``dt`` should be converted to, as advice."""
    dt = np.dtype(dt)
    if dt.kind in "iu":     # the smallest supported dtype of the same kind that holds it
        wider = [d for d in SUPPORTED if d.kind in "iu" and np.can_cast(dt, d)]
        if wider:
            return f"convert it with x.astype(np.{wider[0]})"
        return ("convert it with x.astype(np.int64) (values above 2**63 - 1 wrap) or "
                "x.astype(np.float64) (exact below 2**53)")
    if dtype_kind(dt) == "f":
        return "convert it with x.astype(np.float64)" + (
            " (its extra precision is lost)" if dt.itemsize > 8 else "")
    if dt.kind == "c":
        return "convert it with x.astype(np.complex128)" + (
            " (its extra precision is lost)" if dt.itemsize > 16 else "")
    if dt.kind in "mM":
        return ("convert it to counts of its unit with x.astype(np.int64) (or to float64 "
                "seconds) and back after the transform")
    if dt.kind in "US":
        return "strings are not numbers: encode them as integer codes first"
    if dt.kind == "O":
        return ("an object array holds Python objects: build a numeric array instead, "
                "e.g. np.asarray(x, dtype=np.float64)")
    return "convert it to one of the supported dtypes"


def dtype_kind(dt) -> str:
    """NumPy's ``dtype.kind``, except that bfloat16 is a float (``"f"``), not ``"V"``."""
    kind = dt.kind
    return "f" if kind == "V" and dt == bfloat16 else kind


def compute_dtype(dt) -> np.dtype:
    """The dtype an elementwise op or an accumulation of ``dt`` computes in: float32 for
    bfloat16 and float16 (rounded once at the end), ``dt`` itself otherwise."""
    return float32 if dt in NARROW_FLOATS else np.dtype(dt)


def is_float(dt) -> bool:
    return dtype_kind(np.dtype(dt)) == "f"


def is_complex(dt) -> bool:
    return np.dtype(dt).kind == "c"


def is_inexact(dt) -> bool:
    return dtype_kind(np.dtype(dt)) in "fc"


def is_integer(dt) -> bool:
    return np.dtype(dt).kind in "iu"


def is_bool(dt) -> bool:
    return np.dtype(dt).kind == "b"


def python_scalar_dtype(value) -> np.dtype:
    """The dtype NumPy gives a bare Python scalar: bool, int64, float64 or complex128."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return float64
    if isinstance(value, complex):
        return complex128
    raise TypeError(f"not a Python scalar: {value!r}")


def weak_marker(dtype, weak: bool):
    """What `np.ufunc.resolve_dtypes` should see for an operand of this dtype."""
    return _WEAK_PY_TYPE[dtype_kind(np.dtype(dtype))] if weak and np.dtype(dtype).kind != "b" \
        else np.dtype(dtype)


def result_type(*operands) -> tuple[np.dtype, bool]:
    """NEP 50 promotion of (dtype, weak) pairs; returns (dtype, weak)."""
    strong = [np.dtype(d) for d, w in operands if not w]
    weak = [d for d, w in operands if w]
    if not strong:
        reps = [_WEAK_PY_TYPE[dtype_kind(np.dtype(d))](0) for d in weak]
        return np.result_type(*reps), True
    reps = [_WEAK_PY_TYPE[dtype_kind(np.dtype(d))](0) for d in weak]
    return np.result_type(*strong, *reps), False


def extreme_identity(dtype, select: str):
    """The identity of ``max`` (``select='max'``: the lowest value) or ``min`` for ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return select == "min"
    if dtype_kind(dtype) == "f":
        return -np.inf if select == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if select == "max" else info.max
