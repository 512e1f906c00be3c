"""``all_reduce`` over the process axis as a native call of ``MPI_Allreduce``.

The partitioner plans a collective as an interpreter step (``lowering.FALLBACK``); the
runtime replaces a world ``all_reduce`` on a slot of a dtype MPI has by an
:class:`AllreduceCall`: a ctypes call of the MPI library when the graph runs step by
step, or a call inside the native graph entry (``entry_codegen``), so a jitted step
whose kernels and products fit the entry runs its backward pass and its gradient
reduction in one native call, with no Python in between.

The code names the function and the handles by symbols (``fc_mpi_allreduce``, and the
table ``fc_mpi_handles``: the communicator, ``MPI_IN_PLACE``, the ops, the datatypes),
bound to this process's library with ``llvm.add_symbol`` before the code is loaded: the
IR, its digest and the disk-cached object code hold no address, so a cached object is
bound again in every process. ``compile_library`` refuses collectives by name
(``aot.py``). In a world without MPI (a world of one) the all-reduce is a copy.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np
from functorch_core.ir import primitives as P
from llvmlite import binding as llvm
from llvmlite import ir

from .. import mpi
from ..planning.plan import Fallback
from . import engine

FUNCTION = "fc_mpi_allreduce"
HANDLES = "fc_mpi_handles"
_CHARS = tuple(mpi.NATIVE_DTYPES)
# the table's layout: comm, in_place, one entry per op, one per datatype char
_COMM, _IN_PLACE, _OPS = 0, 1, 2
_TYPES = _OPS + len(mpi.NATIVE_OPS)
_bound: list = []       # [(ctypes table, ctypes function)] once bound in this process
_MAX_COUNT = 2 ** 31 - 1   # MPI's count is a C int


@dataclass(frozen=True)
class AllreduceCall:
    """``recv = all_reduce(send, op)`` over the world: slots, element count and the table
    indices of its handles; ``copy`` in a world without MPI."""

    send: int
    recv: int
    count: int
    nbytes: int
    op: int
    datatype: int
    handle_bits: int
    copy: bool


def allreduce_call(step) -> AllreduceCall | None:
    """``step`` (a plan step) as a native all-reduce, or None when it is not one (another
    step, an operand that is a literal, a dtype the MPI library has no type for)."""
    if not isinstance(step, Fallback) or step.eqn.prim is not P.all_reduce \
            or step.eqn.params["axis_name"] != mpi.WORLD or step.inputs[0][0] != "slot":
        return None
    aval = step.eqn.outputs[0].aval
    native = mpi.native()
    if native is not None and (aval.dtype.char not in native.datatypes
                               or aval.size > _MAX_COUNT):
        return None
    if native is not None:
        _bind(native)
    return AllreduceCall(step.inputs[0][1], step.outputs[0], aval.size,
                         aval.size * aval.dtype.itemsize,
                         _OPS + mpi.NATIVE_OPS.index(step.eqn.params["op"]),
                         _TYPES + _CHARS.index(aval.dtype.char),
                         0 if native is None else native.handle_bits, native is None)


def _bind(native):
    with engine.lock:
        if _bound:
            return
        values = [native.comm, native.in_place, *(native.ops[o] for o in mpi.NATIVE_OPS),
                  *(native.datatypes.get(c, 0) for c in _CHARS)]
        table = (ctypes.c_int64 * len(values))(*values)
        handle = ctypes.c_int32 if native.handle_bits == 32 else ctypes.c_int64
        fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                              handle, handle, handle)(native.allreduce)
        llvm.add_symbol(HANDLES, ctypes.addressof(table))
        llvm.add_symbol(FUNCTION, native.allreduce)
        _bound.append((table, fn))


def allreduce_step(call: AllreduceCall):
    """The Python-driven step: one ctypes call of ``MPI_Allreduce`` on the slots' memory."""
    if call.copy:
        def copy(bufs):
            np.copyto(bufs[call.recv].reshape(-1), bufs[call.send].reshape(-1))
        return copy
    table, fn = _bound[0]
    comm, in_place = table[_COMM], table[_IN_PLACE]
    op, datatype = table[call.op], table[call.datatype]

    def run(bufs):
        send, recv = bufs[call.send], bufs[call.recv]
        if not send.flags.c_contiguous:
            send = np.ascontiguousarray(send)
        s, r = send.ctypes.data, recv.ctypes.data
        code = fn(in_place if s == r else s, r, call.count, datatype, op, comm)
        if code != 0:
            raise mpi.DistributedError(f"all_reduce over {mpi.WORLD!r}: MPI_Allreduce "
                                       f"returned error code {code}")
    return run


def emit_allreduce(b: ir.IRBuilder, call: AllreduceCall, data):
    """The call at ``b``; ``data(slot)`` is the slot's data pointer."""
    module, i64, ptr = b.module, ir.IntType(64), ir.PointerType()
    send, recv = data(call.send), data(call.recv)
    if call.copy:
        memcpy = module.globals.get("llvm.memmove.p0.p0.i64") or ir.Function(
            module, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64, ir.IntType(1)]),
            "llvm.memmove.p0.p0.i64")
        b.call(memcpy, [recv, send, ir.Constant(i64, call.nbytes), ir.Constant(ir.IntType(1), 0)])
        return
    handle = ir.IntType(call.handle_bits)
    fn = module.globals.get(FUNCTION) or ir.Function(
        module, ir.FunctionType(ir.IntType(32), [ptr, ptr, ir.IntType(32), handle, handle,
                                                 handle]), FUNCTION)
    n = _TYPES + len(_CHARS)
    table = module.globals.get(HANDLES) or ir.GlobalVariable(module, ir.ArrayType(i64, n),
                                                             HANDLES)

    def load(index):
        value = b.load(b.gep(table, [ir.Constant(i64, 0), ir.Constant(i64, index)],
                             source_etype=ir.ArrayType(i64, n)), typ=i64)
        return value if call.handle_bits == 64 else b.trunc(value, handle)
    in_place = b.inttoptr(b.load(b.gep(table, [ir.Constant(i64, 0),
                                               ir.Constant(i64, _IN_PLACE)],
                                       source_etype=ir.ArrayType(i64, n)), typ=i64), ptr)
    source = b.select(b.icmp_unsigned("==", send, recv), in_place, send)
    b.call(fn, [source, recv, ir.Constant(ir.IntType(32), call.count), load(call.datatype),
                load(call.op), load(_COMM)])
