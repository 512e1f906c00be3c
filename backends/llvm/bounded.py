"""A bounded collective in native code: MPI's non-blocking call polled until the world's
deadline, so a compiled step under ``init(timeout=...)`` keeps its reduction inside the
native graph entry (no Python per step) and still never hangs.

``fc_mpi_bounded(kind, send, recv, count, datatype, op, comm, state)`` (kind 0:
``MPI_Iallreduce``, 1: ``MPI_Iallgather``, 2: ``MPI_Ireduce_scatter_block``) does what
``backends/mpi.py``'s ``_run`` does around the call: it refuses an unusable world, counts
the collective (and writes the launcher's watchdog counter), then calls ``MPI_Test`` in a
loop: back to back for the first 100 us (as MPI's blocking calls poll: a wait that short
should not give the core away), then with ``sched_yield`` between polls up to 10 ms (to
ranks that share the core), then sleeping from 50 us doubling up to 1 ms between polls,
each sleep followed by a probe of the side communicator for a failed rank's report
(``MPI_Iprobe``), until the request completes or the deadline
(``clock_gettime(CLOCK_MONOTONIC)`` plus the timeout) passes. It returns
``mpi.NATIVE_DONE`` or the status that says why not, also stored in the state; only then
does Python run (``mpi.native_failure``) to build the error: the missing ranks, the failed
rank's message. ``state`` is ``mpi.native_state()``: the timeout, the counters and the
handles, read on each call, so a later ``set_timeout`` holds for code compiled before.

The code names MPI's and libc's functions by symbols bound to this process's addresses
before it is loaded, so its disk-cached object code holds no address.
"""

from __future__ import annotations

import ctypes
import re

from llvmlite import binding as llvm

from .. import mpi
from . import cache, engine

SYMBOLS = {"MPI_Iallreduce": "fc_mpi_iallreduce", "MPI_Iallgather": "fc_mpi_iallgather",
           "MPI_Ireduce_scatter_block": "fc_mpi_ireduce_scatter_block",
           "MPI_Test": "fc_mpi_test", "MPI_Iprobe": "fc_mpi_iprobe"}
LIBC = ("clock_gettime", "sched_yield", "nanosleep")
STATE = "fc_mpi_state"          # the symbol of mpi.native_state()'s memory
FUNCTION = "fc_mpi_bounded"     # the symbol compiled entries call
RAISER = "fc_mpi_raiser"        # an int64 cell: the address of :func:`_raise_pending`
CALL_NO_ARGS = "fc_py_call_no_args"     # CPython's PyObject_CallNoArgs
KINDS = ("all_reduce", "all_gather", "reduce_scatter")
_STATUS_BYTES = 128     # room for an MPI_Status (MPICH: 20 bytes, Open MPI: 24)
_F = {name: i for i, name in enumerate(mpi.STATE_FIELDS)}

_TEMPLATE = """
declare i32 @fc_mpi_iallreduce(ptr, ptr, i32, H, H, H, ptr)
declare i32 @fc_mpi_iallgather(ptr, i32, H, ptr, i32, H, H, ptr)
declare i32 @fc_mpi_ireduce_scatter_block(ptr, ptr, i32, H, H, H, ptr)
declare i32 @fc_mpi_test(ptr, ptr, ptr)
declare i32 @fc_mpi_iprobe(i32, i32, H, ptr, ptr)
declare i32 @fc_clock_gettime(i32, ptr)
declare i32 @fc_sched_yield()
declare i32 @fc_nanosleep(ptr, ptr)

define internal i64 @now(ptr %ts) {
  %c = call i32 @fc_clock_gettime(i32 1, ptr %ts)
  %s = load i64, ptr %ts
  %np = getelementptr i64, ptr %ts, i64 1
  %n = load i64, ptr %np
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %n
  ret i64 %t
}

define internal i64 @field(ptr %state, i64 %i) {
  %p = getelementptr i64, ptr %state, i64 %i
  %v = load i64, ptr %p
  ret i64 %v
}

define i32 @NAME(i32 %kind, ptr %send, ptr %recv, i32 %count, H %datatype, H %op, H %comm,
                 ptr %state) {
entry:
  %req = alloca [2 x i64]
  %flag = alloca i32
  %status = alloca [STATUS x i8]
  %ts = alloca [2 x i64]
  %pause = alloca i64
  store [2 x i64] zeroinitializer, ptr %req
  store i64 0, ptr %pause
  %kp = getelementptr i64, ptr %state, i64 F_KIND
  %k64 = sext i32 %kind to i64
  store i64 %k64, ptr %kp
  %broken = call i64 @field(ptr %state, i64 F_BROKEN)
  %isbroken = icmp ne i64 %broken, 0
  br i1 %isbroken, label %exit, label %counting

counting:
  %cp = getelementptr i64, ptr %state, i64 F_CALLS
  %c0 = load i64, ptr %cp
  %c1 = add i64 %c0, 1
  store i64 %c1, ptr %cp
  %beats = call i64 @field(ptr %state, i64 F_BEATS)
  %hasbeats = icmp ne i64 %beats, 0
  br i1 %hasbeats, label %beat, label %start

beat:
  %rank = call i64 @field(ptr %state, i64 F_RANK)
  %bp = inttoptr i64 %beats to ptr
  %slot = getelementptr i64, ptr %bp, i64 %rank
  store volatile i64 %c1, ptr %slot
  br label %start

start:
  switch i32 %kind, label %allreduce [i32 1, label %allgather
                                      i32 2, label %reducescatter]

allreduce:
  %rc0 = call i32 @fc_mpi_iallreduce(ptr %send, ptr %recv, i32 %count, H %datatype,
                                     H %op, H %comm, ptr %req)
  br label %started

allgather:
  %rc1 = call i32 @fc_mpi_iallgather(ptr %send, i32 %count, H %datatype, ptr %recv,
                                     i32 %count, H %datatype, H %comm, ptr %req)
  br label %started

reducescatter:
  %rc2 = call i32 @fc_mpi_ireduce_scatter_block(ptr %send, ptr %recv, i32 %count,
                                                H %datatype, H %op, H %comm, ptr %req)
  br label %started

started:
  %rc = phi i32 [%rc0, %allreduce], [%rc1, %allgather], [%rc2, %reducescatter]
  %startbad = icmp ne i32 %rc, 0
  br i1 %startbad, label %exit, label %clock

clock:
  %t0 = call i64 @now(ptr %ts)
  %timeout = call i64 @field(ptr %state, i64 F_TIMEOUT)
  %deadline = add i64 %t0, %timeout
  %spinend = add i64 %t0, 10000000
  %yieldfrom = add i64 %t0, 100000
  %side = call i64 @field(ptr %state, i64 F_SIDE)
  %hasside = icmp ne i64 %side, 0
  %sideh = TRUNC_SIDE
  %any64 = call i64 @field(ptr %state, i64 F_ANY)
  %any = trunc i64 %any64 to i32
  %tag64 = call i64 @field(ptr %state, i64 F_TAG)
  %tag = trunc i64 %tag64 to i32
  br label %poll

poll:
  store i32 0, ptr %flag
  %trc = call i32 @fc_mpi_test(ptr %req, ptr %flag, ptr %status)
  %testbad = icmp ne i32 %trc, 0
  br i1 %testbad, label %exit, label %tested

tested:
  %f = load i32, ptr %flag
  %done = icmp ne i32 %f, 0
  br i1 %done, label %exit, label %waiting

waiting:
  %now = call i64 @now(ptr %ts)
  %late = icmp sgt i64 %now, %spinend
  br i1 %late, label %backoff, label %spinning

spinning:
  %polite = icmp sgt i64 %now, %yieldfrom
  br i1 %polite, label %spin, label %deadlinecheck

spin:
  %y = call i32 @fc_sched_yield()
  br label %deadlinecheck

backoff:
  %p = load i64, ptr %pause
  %sec = udiv i64 %p, 1000000000
  %nsec = urem i64 %p, 1000000000
  store i64 %sec, ptr %ts
  %nsp = getelementptr i64, ptr %ts, i64 1
  store i64 %nsec, ptr %nsp
  %sl = call i32 @fc_nanosleep(ptr %ts, ptr null)
  %p2 = shl i64 %p, 1
  %small = icmp ult i64 %p2, 50000
  %p3 = select i1 %small, i64 50000, i64 %p2
  %big = icmp ugt i64 %p3, 1000000
  %p4 = select i1 %big, i64 1000000, i64 %p3
  store i64 %p4, ptr %pause
  br i1 %hasside, label %probe, label %deadlinecheck

probe:
  store i32 0, ptr %flag
  %prc = call i32 @fc_mpi_iprobe(i32 %any, i32 %tag, H %sideh, ptr %flag, ptr %status)
  %pf = load i32, ptr %flag
  %reported = icmp ne i32 %pf, 0
  br i1 %reported, label %exit, label %deadlinecheck

deadlinecheck:
  %past = icmp sgt i64 %now, %deadline
  br i1 %past, label %exit, label %poll

exit:
  %outcome = phi i32 [S_BROKEN, %entry], [S_ERROR, %started], [S_ERROR, %poll], [0, %tested],
                     [S_FAILED, %probe], [S_TIMEOUT, %deadlinecheck]
  %code = phi i32 [0, %entry], [%rc, %started], [%trc, %poll], [0, %tested], [0, %probe],
                  [0, %deadlinecheck]
  %sp = getelementptr i64, ptr %state, i64 F_STATUS
  %s64 = sext i32 %outcome to i64
  store i64 %s64, ptr %sp
  %ep = getelementptr i64, ptr %state, i64 F_ERROR
  %e64 = sext i32 %code to i64
  store i64 %e64, ptr %ep
  ret i32 %outcome
}
"""

_bound: dict = {}


def _ir(handle_bits: int, name: str) -> str:
    text = re.sub(r"\bH\b", f"i{handle_bits}", _TEMPLATE.replace("@NAME", f"@{name}"))
    text = text.replace("[STATUS x i8]", f"[{_STATUS_BYTES} x i8]")
    text = text.replace("TRUNC_SIDE", "add i64 %side, 0" if handle_bits == 64
                        else "trunc i64 %side to i32")
    subs = {"F_STATUS": "status", "F_ERROR": "error", "F_KIND": "kind", "F_BROKEN": "broken",
            "F_CALLS": "calls", "F_BEATS": "beats", "F_RANK": "rank", "F_TIMEOUT": "timeout_ns",
            "F_SIDE": "side", "F_ANY": "any_source", "F_TAG": "tag_failed"}
    for key, field in subs.items():
        text = text.replace(key, str(_F[field]))
    for key, value in {"S_BROKEN": mpi.NATIVE_BROKEN, "S_ERROR": mpi.NATIVE_ERROR,
                       "S_FAILED": mpi.NATIVE_FAILED, "S_TIMEOUT": mpi.NATIVE_TIMEOUT}.items():
        text = text.replace(key, str(value))
    return text


def _raise_pending():
    """What compiled code calls (with the GIL, through ``PyObject_CallNoArgs``) after a
    bounded collective failed: raises the error its status in the state says."""
    state = _bound["state"]
    mpi.native_failure(int(state[_F["status"]]), KINDS[int(state[_F["kind"]])])


def bind(native: mpi.NativeMPI) -> None:
    """Compile ``fc_mpi_bounded`` for this process's MPI library (once) and bind the
    symbols compiled entries name (:data:`FUNCTION`, :data:`STATE`, :data:`RAISER`,
    :data:`CALL_NO_ARGS`). Called under ``engine.lock``."""
    if _bound:
        return
    libc = ctypes.CDLL(None)
    for name, symbol in SYMBOLS.items():
        llvm.add_symbol(symbol, native.functions[name])
    for name in LIBC:
        llvm.add_symbol(f"fc_{name}", ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
    text = _ir(native.handle_bits, FUNCTION)
    engine.target_machine()     # the target names the digest
    digest = cache.key(text, f"{engine.target()} bounded")
    name = f"fc_{digest[:32]}_bounded"
    module = engine.add_module(text.replace(f"@{FUNCTION}(", f"@{name}("), digest, [name],
                               None)
    address = module.addresses[name]
    state = mpi.native_state()
    raiser = ctypes.c_int64(id(_raise_pending))
    llvm.add_symbol(FUNCTION, address)
    llvm.add_symbol(STATE, state.ctypes.data)
    llvm.add_symbol(RAISER, ctypes.addressof(raiser))
    llvm.add_symbol(CALL_NO_ARGS, ctypes.cast(ctypes.pythonapi.PyObject_CallNoArgs,
                                              ctypes.c_void_p).value)
    h = ctypes.c_int32 if native.handle_bits == 32 else ctypes.c_int64
    fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_int, h, h, h, ctypes.c_void_p)(address)
    _bound.update(module=module, state=state, raiser=raiser, fn=fn)


def call(kind: int, send: int, recv: int, count: int, datatype: int, op: int,
         comm: int) -> None:
    """The bounded collective from Python (a graph run step by step): raises as
    :func:`_raise_pending` does when it did not complete."""
    state = _bound["state"]
    status = _bound["fn"](kind, send, recv, count, datatype, op, comm, state.ctypes.data)
    if status != mpi.NATIVE_DONE:
        mpi.native_failure(status, KINDS[kind])
