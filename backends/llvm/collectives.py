"""Collectives over the process axis as native calls of the MPI library:
``all_reduce`` -> ``MPI_Allreduce``, ``all_gather`` -> ``MPI_Allgather``,
``reduce_scatter`` -> ``MPI_Reduce_scatter_block``.

The partitioner plans a collective as an interpreter step (``lowering.FALLBACK``); the
runtime replaces one over the world on a slot of a dtype MPI has by a
:class:`CollectiveCall`: a ctypes call of the MPI library when the graph runs step by
step, or a call inside the native graph entry (``entry_codegen``), so a jitted step
whose kernels and products fit the entry runs its backward pass and its gradient
reduction in one native call, with no Python in between. Under a world's timeout (read
when the call runs) each is instead ``bounded.py``'s non-blocking call polled to the
deadline in native code; a failure there ends the entry with the error Python builds.

The code names the functions and the handles by symbols (``fc_mpi_allreduce``..., the
table ``fc_mpi_handles``: the communicator, ``MPI_IN_PLACE``, the ops, the datatypes),
bound to this process's library with ``llvm.add_symbol`` before the code is loaded: the
IR, its digest and the disk-cached object code hold no address, so a cached object is
bound again in every process. ``compile_library`` refuses collectives by name
(``aot.py``). In a world without MPI (a world of one) each is a copy.
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
from . import bounded, engine

HANDLES = "fc_mpi_handles"
# primitive -> (the MPI function, its symbol in compiled code, whether it takes an op)
FUNCTIONS = {P.all_reduce: ("MPI_Allreduce", "fc_mpi_allreduce"),
             P.all_gather: ("MPI_Allgather", "fc_mpi_allgather"),
             P.reduce_scatter: ("MPI_Reduce_scatter_block", "fc_mpi_reduce_scatter_block")}
_CHARS = tuple(mpi.NATIVE_DTYPES)
# the table's layout: comm, in_place, one entry per op, one per datatype char
_COMM, _IN_PLACE, _OPS = 0, 1, 2
_TYPES = _OPS + len(mpi.NATIVE_OPS)
_bound: dict = {}       # "table" and each primitive's ctypes function, once bound here
_MAX_COUNT = 2 ** 31 - 1   # MPI's counts are C ints
_KINDS = {P.all_reduce: 0, P.all_gather: 1, P.reduce_scatter: 2}     # bounded.KINDS


@dataclass(frozen=True)
class CollectiveCall:
    """A collective over the world on slots ``send`` -> ``recv``: ``count`` elements per
    rank (all_reduce's whole operand, all_gather's operand, reduce_scatter's result),
    the table indices of its op and datatype; ``copy`` in a world without MPI (each of
    the three is then a copy of ``nbytes``)."""

    prim: object
    send: int
    recv: int
    count: int
    nbytes: int
    op: int
    datatype: int
    handle_bits: int
    copy: bool


def collective_call(step) -> CollectiveCall | None:
    """``step`` (a plan step) as a native collective, or None when it is not one (another
    step, an operand that is a literal, a dtype the MPI library has no type for, a graph
    traced for another world size, whose interpreter step raises). Under a world's
    timeout the call is the bounded one of ``bounded.py``, chosen when it runs."""
    if not isinstance(step, Fallback) or step.eqn.prim not in FUNCTIONS \
            or step.eqn.params["axis_name"] != mpi.WORLD or step.inputs[0][0] != "slot":
        return None
    eqn, native = step.eqn, mpi.native()
    size = 1 if native is None else mpi.world().size
    if eqn.params.get("axis_size", size) != size:
        return None
    # the per-rank count: the operand's for all_gather, the result's for the others
    aval = eqn.inputs[0].aval if eqn.prim is P.all_gather else eqn.outputs[0].aval
    count = aval.size
    if native is not None and (aval.dtype.char not in native.datatypes or count > _MAX_COUNT
                               or count * size > _MAX_COUNT):
        return None
    if native is not None:
        _bind(native)
    op = eqn.params.get("op", "sum")
    return CollectiveCall(eqn.prim, step.inputs[0][1], step.outputs[0], count,
                          eqn.outputs[0].aval.size * aval.dtype.itemsize,
                          _OPS + mpi.NATIVE_OPS.index(op), _TYPES + _CHARS.index(aval.dtype.char),
                          0 if native is None else native.handle_bits, native is None)


def _bind(native):
    with engine.lock:
        if _bound:
            return
        bounded.bind(native)
        values = [native.comm, native.in_place, *(native.ops[o] for o in mpi.NATIVE_OPS),
                  *(native.datatypes.get(c, 0) for c in _CHARS)]
        table = (ctypes.c_int64 * len(values))(*values)
        h, ptr, i32 = (ctypes.c_int32 if native.handle_bits == 32 else ctypes.c_int64,
                       ctypes.c_void_p, ctypes.c_int)
        protos = {P.all_reduce: (ptr, ptr, i32, h, h, h),
                  P.all_gather: (ptr, i32, h, ptr, i32, h, h),
                  P.reduce_scatter: (ptr, ptr, i32, h, h, h)}
        llvm.add_symbol(HANDLES, ctypes.addressof(table))
        _bound["table"] = table
        for prim, (name, symbol) in FUNCTIONS.items():
            address = native.functions[name]
            llvm.add_symbol(symbol, address)
            _bound[prim] = ctypes.CFUNCTYPE(ctypes.c_int, *protos[prim])(address)


def collective_step(call: CollectiveCall):
    """The Python-driven step: one ctypes call of the MPI function on the slots' memory."""
    if call.copy:
        def copy(bufs):
            np.copyto(bufs[call.recv].reshape(-1), bufs[call.send].reshape(-1))
        return copy
    table, fn = _bound["table"], _bound[call.prim]
    comm, in_place = table[_COMM], table[_IN_PLACE]
    op, datatype = table[call.op], table[call.datatype]
    name = FUNCTIONS[call.prim][0]
    state, kind = mpi.native_state(), _KINDS[call.prim]

    def run(bufs):
        send, recv = bufs[call.send], bufs[call.recv]
        if not send.flags.c_contiguous:
            send = np.ascontiguousarray(send)
        s, r = send.ctypes.data, recv.ctypes.data
        if state[0]:        # the world's timeout: the bounded call
            bounded.call(kind, in_place if s == r and kind != 1 else s, r, call.count,
                         datatype, op, comm)
            return
        if call.prim is P.all_gather:
            code = fn(s, call.count, datatype, r, call.count, datatype, comm)
        else:
            code = fn(in_place if s == r else s, r, call.count, datatype, op, comm)
        if code != 0:
            raise mpi.DistributedError(f"{call.prim.name} over {mpi.WORLD!r}: {name} "
                                       f"returned error code {code}")
    return run


def emit_collective(b: ir.IRBuilder, call: CollectiveCall, data):
    """The call at ``b``; ``data(slot)`` is the slot's data pointer. Returns None (a
    copy), else an i1 that is set when the call failed with a Python exception set: the
    caller returns NULL. Without a timeout the call is the blocking MPI function, whose
    error handler on the world communicator (``MPI_ERRORS_ARE_FATAL`` unless the user sets
    another) ends the job on a failure, so its return code is not read; under one it is
    ``bounded.py``'s function, whose failure calls :func:`bounded._raise_pending`."""
    module, i32, i64, ptr = b.module, ir.IntType(32), ir.IntType(64), ir.PointerType()
    send, recv = data(call.send), data(call.recv)
    if call.copy:
        move = module.globals.get("llvm.memmove.p0.p0.i64") or ir.Function(
            module, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64, ir.IntType(1)]),
            "llvm.memmove.p0.p0.i64")
        b.call(move, [recv, send, ir.Constant(i64, call.nbytes), ir.Constant(ir.IntType(1), 0)])
        return None
    h = ir.IntType(call.handle_bits)
    n = _TYPES + len(_CHARS)
    table = module.globals.get(HANDLES) or ir.GlobalVariable(module, ir.ArrayType(i64, n),
                                                             HANDLES)
    state_type = ir.ArrayType(i64, len(mpi.STATE_FIELDS))
    state = module.globals.get(bounded.STATE) or ir.GlobalVariable(module, state_type,
                                                                   bounded.STATE)

    def entry(index):
        return b.load(b.gep(table, [ir.Constant(i64, 0), ir.Constant(i64, index)],
                            source_etype=ir.ArrayType(i64, n)), typ=i64)

    def handle(index):
        value = entry(index)
        return value if call.handle_bits == 64 else b.trunc(value, h)
    symbol = FUNCTIONS[call.prim][1]
    count = ir.Constant(i32, call.count)
    gather = call.prim is P.all_gather
    source = send if gather else b.select(b.icmp_unsigned("==", send, recv),
                                          b.inttoptr(entry(_IN_PLACE), ptr), send)
    dtype, comm = handle(call.datatype), handle(_COMM)
    op = ir.Constant(h, 0) if gather else handle(call.op)
    timeout = b.load(b.gep(state, [ir.Constant(i64, 0), ir.Constant(i64, 0)],
                           source_etype=state_type), typ=i64)
    direct, limited = b.append_basic_block("mpi_direct"), b.append_basic_block("mpi_bounded")
    failing, done = b.append_basic_block("mpi_failing"), b.append_basic_block("mpi_done")
    b.cbranch(b.icmp_unsigned("==", timeout, ir.Constant(i64, 0)), direct, limited)
    b.position_at_end(direct)
    if gather:
        fn = module.globals.get(symbol) or ir.Function(
            module, ir.FunctionType(i32, [ptr, i32, h, ptr, i32, h, h]), symbol)
        b.call(fn, [send, count, dtype, recv, count, dtype, comm])
    else:
        fn = module.globals.get(symbol) or ir.Function(
            module, ir.FunctionType(i32, [ptr, ptr, i32, h, h, h]), symbol)
        b.call(fn, [source, recv, count, dtype, op, comm])
    b.branch(done)
    b.position_at_end(limited)
    fn = module.globals.get(bounded.FUNCTION) or ir.Function(
        module, ir.FunctionType(i32, [i32, ptr, ptr, i32, h, h, h, ptr]), bounded.FUNCTION)
    status = b.call(fn, [ir.Constant(i32, _KINDS[call.prim]), source, recv, count, dtype, op,
                         comm, b.bitcast(state, ptr)])
    b.cbranch(b.icmp_unsigned("==", status, ir.Constant(i32, mpi.NATIVE_DONE)), done, failing)
    b.position_at_end(failing)
    raiser = module.globals.get(bounded.RAISER) or ir.GlobalVariable(module, i64,
                                                                     bounded.RAISER)
    call_no_args = module.globals.get(bounded.CALL_NO_ARGS) or ir.Function(
        module, ir.FunctionType(ptr, [ptr]), bounded.CALL_NO_ARGS)
    b.call(call_no_args, [b.inttoptr(b.load(raiser, typ=i64), ptr)])    # raises: NULL
    b.branch(done)
    b.position_at_end(done)
    failed = b.phi(ir.IntType(1))
    failed.add_incoming(ir.Constant(ir.IntType(1), 0), direct)
    failed.add_incoming(ir.Constant(ir.IntType(1), 0), limited)
    failed.add_incoming(ir.Constant(ir.IntType(1), 1), failing)
    return failed
