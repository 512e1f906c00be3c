"""Native bfloat16 <-> float32 conversion of whole arrays, for the steps that run outside
the fused kernels (the widened bf16 convolution and product steps).

ml_dtypes' ``astype`` narrows float32 to bfloat16 one element at a time (about 3 ns an
element here: 6.6 ms for a CIFAR-sized conv's 2**21 results, more than its gemms); these
are one vectorized loop each, compiled once per process, with the rounding of the fused
kernels (``narrowing.bf16_bits``: nearest even, NaN to the quiet ``0x7fc0`` with its sign,
subnormals kept, overflow to inf), so their bits are ml_dtypes'. Widening is exact
(``bits << 16``). The call releases the GIL.
"""

from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np
from functorch_core.ir import dtypes
from llvmlite import ir

from . import engine
from .narrowing import bf16_bits, bf16_to_f32

_NARROW, _WIDEN = "fc_bf16_narrow", "fc_bf16_widen"
_F32, _I16, _I64, _PTR = ir.FloatType(), ir.IntType(16), ir.IntType(64), ir.PointerType()
_BF16, _NP_F32 = dtypes.bfloat16, np.dtype(np.float32)
_lock = threading.Lock()


def _loop(module, name, src_type, dst_type, convert):
    """``name(src, dst, n)``: dst[i] = convert(builder, src[i]) for i < n."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR, _PTR, _I64]), name)
    src, dst, n = fn.args
    for a in (src, dst):
        a.add_attribute("noalias")
    entry, body, done = (fn.append_basic_block(s) for s in ("entry", "body", "done"))
    b = ir.IRBuilder(entry)
    zero = ir.Constant(_I64, 0)
    b.cbranch(b.icmp_signed(">", n, zero), body, done)
    b.position_at_end(body)
    i = b.phi(_I64)
    i.add_incoming(zero, entry)
    value = b.load(b.gep(src, [i], inbounds=True, source_etype=src_type), typ=src_type)
    b.store(convert(b, value), b.gep(dst, [i], inbounds=True, source_etype=dst_type))
    nxt = b.add(i, ir.Constant(_I64, 1))
    i.add_incoming(nxt, body)
    b.cbranch(b.icmp_signed("<", nxt, n), body, done)
    b.position_at_end(done)
    b.ret_void()


def module_ir() -> str:
    """The two loops' IR text: ``fc_bf16_narrow(float *src, i16 *dst, n)`` and
    ``fc_bf16_widen(i16 *src, float *dst, n)``."""
    module = ir.Module(name="fc_bf16_cast")
    _loop(module, _NARROW, _F32, _I16, bf16_bits)
    _loop(module, _WIDEN, _I16, _F32, bf16_to_f32)
    return str(module)


@functools.cache
def _functions():
    """(native module, narrow, widen) as ctypes functions, compiled once per process."""
    with _lock:
        nat = engine.compile_ir(module_ir(), [_NARROW, _WIDEN], "full", "bf16_cast")
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    return nat, proto(nat.addresses[_NARROW]), proto(nat.addresses[_WIDEN])


def narrow(x, out=None):
    """float32 array ``x`` rounded to bfloat16 (as ``x.astype(bfloat16)``), into ``out``
    (a bfloat16 array of ``x``'s size, its shape taken) when given; returns the bfloat16
    array."""
    x = np.ascontiguousarray(x, _NP_F32)
    if out is not None:
        if out.dtype != _BF16:
            raise TypeError(f"bf16_cast.narrow: out is {out.dtype}, not bfloat16")
        if out.size != x.size:
            raise ValueError(f"bf16_cast.narrow: out has shape {out.shape}, x {x.shape}")
        x = x.reshape(out.shape)
    dst = out if out is not None and out.flags.c_contiguous else np.empty(x.shape, _BF16)
    _functions()[1](x.ctypes.data, dst.ctypes.data, x.size)
    if out is not None and dst is not out:
        out[...] = dst
        return out
    return dst


def widen(x):
    """bfloat16 array ``x`` as float32 (exactly; as ``x.astype(float32)``), a new array."""
    if x.dtype != _BF16:
        raise TypeError(f"bf16_cast.widen: x is {x.dtype}, not bfloat16")
    x = np.ascontiguousarray(x)
    dst = np.empty(x.shape, _NP_F32)
    _functions()[2](x.ctypes.data, dst.ctypes.data, x.size)
    return dst
