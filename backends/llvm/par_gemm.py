"""A few-row product's column blocks on the calling thread and one native helper thread.

A product of few rows (a 10-model ensemble's first layer, 64x784 @ 784x1280 f32: 1.03 ms
on one OpenBLAS thread) cannot split by rows; :func:`blas.column_blocks` cuts it into
COLUMN_PARTS column blocks fixed by its shape. Handing blocks to a Python pool thread
costs tens of microseconds before that thread runs (a queue, a wake-up, the GIL); here
the caller, inside one ctypes call (the GIL released), publishes the call in a job
record, and a helper thread running native code claims blocks with an atomic
compare-and-swap while the caller claims the rest and waits until every block is done.
The bits do not depend on who runs which block. The helper spins (yielding the core to
any other runnable thread) for ``GRACE_NS`` after its last block, then polls with naps
from NAP_MIN_US doubling to NAP_MAX_US; a helper that is asleep or preempted costs only
the caller doing the blocks itself. A second caller that finds the record taken runs its
blocks alone, in order.

The job record is an int64 array: the job number, the claim word (job number << 32 |
next block), the done count, a stop flag, the owner flag, the number of blocks the helper
has run, then the call: ?gemm's address, the column count, the bytes per column of the
rhs and of the result, and ?gemm's 13 argument pointers.
"""

from __future__ import annotations

import atexit
import ctypes
import platform
import threading
import time

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir

from . import engine, irloop

# the column blocks of a product (blas.column_cuts): COLUMN_PARTS of them, cut at multiples
# of COLUMN_ALIGN columns
COLUMN_PARTS = 4
COLUMN_ALIGN = 64

SEQ, CLAIM, DONE, STOP, OWNER, HELPED, GEMM, COLS, RHS_STEP, OUT_STEP, ARGS = range(11)
JOB_WORDS = ARGS + 13
SYMBOL = "fc_par_gemm"
JOB_SYMBOL = "fc_par_gemm_job"
# after its last block the helper spins this long (back-to-back calls of a jit function
# find it awake: the ensemble forward's product 0.63 -> ... ms), then naps from
# NAP_MIN_US, doubling to NAP_MAX_US while idle
GRACE_NS = 1_000_000
NAP_MIN_US, NAP_MAX_US = 50, 20_000

I32, I64, PTR = ir.IntType(32), ir.IntType(64), ir.PointerType()
_state: dict = {}
_lock = threading.Lock()


def _const(v):
    return ir.Constant(I64, v)


def _word(b, rec, i):
    return b.gep(rec, [_const(i)], source_etype=I64)


def _atomic_load(b, p):
    return b.load_atomic(p, "seq_cst", 8, typ=I64)


def _pause(b):
    """x86's spin-wait hint (nothing elsewhere)."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        b.call(irloop.declare(b.module, "llvm.x86.sse2.pause", ir.VoidType(), []), [])


def _now_ns(b, spec):
    """CLOCK_MONOTONIC in nanoseconds (libc's clock_gettime into ``spec``, two i64 the
    entry block allocated: an alloca inside the loop would grow the stack each turn)."""
    clock = irloop.declare(b.module, "clock_gettime", I32, [I32, PTR])
    b.call(clock, [ir.Constant(I32, time.CLOCK_MONOTONIC), spec])
    sec = b.load(b.gep(spec, [_const(0)], source_etype=I64), typ=I64)
    nsec = b.load(b.gep(spec, [_const(1)], source_etype=I64), typ=I64)
    return b.add(b.mul(sec, _const(1_000_000_000)), nsec)


class _Indirect:
    """A call through a pointer (opaque pointers carry no function type: llvmlite reads
    it from here)."""

    def __init__(self, value, ftype):
        self.value, self.function_type, self.type = value, ftype, value.type

    def get_reference(self):
        return self.value.get_reference()


def _emit_block(module, int_bits):
    """``void fc_pg_block(ptr rec, i64 j)``: block j of the call in record ``rec`` (an
    empty block calls nothing); ``int_bits``: the BLAS's integer width."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64]), "fc_pg_block")
    fn.linkage = "internal"
    rec, j = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    n = b.load(_word(b, rec, COLS), typ=I64)
    unit = _const(COLUMN_PARTS * COLUMN_ALIGN)

    def cut(p):     # blas.column_cuts, in integer arithmetic
        at = b.mul(b.udiv(b.mul(n, p), unit), _const(COLUMN_ALIGN))
        return b.select(b.icmp_unsigned("==", p, _const(COLUMN_PARTS)), n, at)
    lo, hi = cut(j), cut(b.add(j, _const(1)))
    run, done = fn.append_basic_block("run"), fn.append_basic_block("done")
    b.cbranch(b.icmp_unsigned("<", lo, hi), run, done)
    b.position_at_end(run)
    int_t = ir.IntType(int_bits)
    cols = b.alloca(int_t)
    width = b.sub(hi, lo)
    b.store(b.trunc(width, int_t) if int_t is I32 else width, cols)
    args = [b.inttoptr(b.load(_word(b, rec, ARGS + i), typ=I64), PTR) for i in range(13)]

    def moved(p, step_word):
        step = b.load(_word(b, rec, step_word), typ=I64)
        return b.gep(p, [b.mul(lo, step)], source_etype=ir.IntType(8))
    args[2] = cols                          # BLAS's m: the result's columns
    args[6] = moved(args[6], RHS_STEP)      # the rhs's first column of the block
    args[11] = moved(args[11], OUT_STEP)    # the result's
    gemm = b.inttoptr(b.load(_word(b, rec, GEMM), typ=I64), PTR)
    b.call(_Indirect(gemm, ir.FunctionType(ir.VoidType(), [PTR] * 13)), args)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _emit_claims(b, fn, rec, block, seq, helped=False):
    """Claim and run blocks of job ``seq`` until none is left, each counted in DONE (and
    in HELPED: the helper's)."""
    head, try_, run, out = (fn.append_basic_block(x) for x in ("claim", "try", "run", "all"))
    b.branch(head)
    b.position_at_end(head)
    v = _atomic_load(b, _word(b, rec, CLAIM))
    mine = b.icmp_unsigned("==", b.lshr(v, _const(32)), seq)
    k = b.and_(v, _const(0xFFFFFFFF))
    b.cbranch(b.and_(mine, b.icmp_unsigned("<", k, _const(COLUMN_PARTS))), try_, out)
    b.position_at_end(try_)
    pair = b.cmpxchg(_word(b, rec, CLAIM), v, b.add(v, _const(1)), "seq_cst", "seq_cst")
    b.cbranch(b.extract_value(pair, 1), run, head)
    b.position_at_end(run)
    b.call(block, [rec, k])
    if helped:
        b.atomic_rmw("add", _word(b, rec, HELPED), _const(1), "seq_cst")
    b.atomic_rmw("add", _word(b, rec, DONE), _const(1), "seq_cst")
    b.branch(head)
    b.position_at_end(out)


def _publish(b, rec, gemm, gargs, cols, rhs_step, out_step):
    """Write the call into the record ``rec``."""
    b.store(b.ptrtoint(gemm, I64), _word(b, rec, GEMM))
    b.store(cols, _word(b, rec, COLS))
    b.store(rhs_step, _word(b, rec, RHS_STEP))
    b.store(out_step, _word(b, rec, OUT_STEP))
    for i, a in enumerate(gargs):
        b.store(b.ptrtoint(a, I64), _word(b, rec, ARGS + i))


def _emit_caller(module, job, block):
    """``void fc_par_gemm(ptr gemm, 13 x ptr gemm args, i64 cols, i64 rhs_step,
    i64 out_step)``: the caller's side. ``cols`` is the result's column count (BLAS's
    m, whose argument is ignored), the steps are bytes per column of the rhs and result."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR] * 14 + [I64] * 3), SYMBOL)
    gemm, *gargs = fn.args[:14]
    cols, rhs_step, out_step = fn.args[14:]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    local = b.alloca(I64, size=JOB_WORDS)
    owned, solo = fn.append_basic_block("owned"), fn.append_basic_block("solo")
    pair = b.cmpxchg(_word(b, job, OWNER), _const(0), _const(1), "seq_cst", "seq_cst")
    b.cbranch(b.extract_value(pair, 1), owned, solo)
    # another caller holds the record: the same blocks, in order, on a local copy
    b.position_at_end(solo)
    _publish(b, local, gemm, gargs, cols, rhs_step, out_step)
    pre = b.block
    head, step, out = (fn.append_basic_block(x) for x in ("j_head", "j_step", "j_out"))
    b.branch(head)
    b.position_at_end(head)
    j = b.phi(I64)
    j.add_incoming(_const(0), pre)
    b.cbranch(b.icmp_unsigned("<", j, _const(COLUMN_PARTS)), step, out)
    b.position_at_end(step)
    b.call(block, [local, j])
    j.add_incoming(b.add(j, _const(1)), b.block)
    b.branch(head)
    b.position_at_end(out)
    b.ret_void()
    # the record is ours: publish job seq, claim blocks beside the helper, wait for all
    b.position_at_end(owned)
    seq = b.add(_atomic_load(b, _word(b, job, SEQ)), _const(1))
    _publish(b, job, gemm, gargs, cols, rhs_step, out_step)
    b.store_atomic(_const(0), _word(b, job, DONE), "seq_cst", 8)
    b.store_atomic(b.shl(seq, _const(32)), _word(b, job, CLAIM), "seq_cst", 8)
    b.store_atomic(seq, _word(b, job, SEQ), "seq_cst", 8)
    _emit_claims(b, fn, job, block, seq)
    wait, spin, finished = (fn.append_basic_block(x) for x in ("wait", "spin", "finished"))
    b.branch(wait)
    b.position_at_end(wait)
    count = _atomic_load(b, _word(b, job, DONE))
    b.cbranch(b.icmp_unsigned("==", count, _const(COLUMN_PARTS)), finished, spin)
    b.position_at_end(spin)
    _pause(b)
    b.branch(wait)
    b.position_at_end(finished)
    b.store_atomic(_const(0), _word(b, job, OWNER), "seq_cst", 8)
    b.ret_void()


def _emit_helper(module, job, block):
    """``void fc_pg_helper()``: the helper thread's loop, until STOP: spin (yielding) for
    GRACE_NS after its last block, else sleep (from NAP_MIN_US, doubling to NAP_MAX_US
    while idle), for a new job number; then claim its blocks."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "fc_pg_helper")
    usleep = irloop.declare(module, "usleep", I32, [I32])
    sched_yield = irloop.declare(module, "sched_yield", I32, [])
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    spec = b.alloca(I64, size=2)
    pre = b.block
    top, check, idle, wake, nap, work, out = (fn.append_basic_block(x) for x in (
        "top", "check", "idle", "wake", "nap", "work", "stop"))
    first = _atomic_load(b, _word(b, job, SEQ))
    b.branch(top)
    b.position_at_end(top)
    last, sleep, since = b.phi(I64), b.phi(I32), b.phi(I64)
    last.add_incoming(first, pre)
    sleep.add_incoming(ir.Constant(I32, NAP_MIN_US), pre)
    since.add_incoming(_const(-GRACE_NS), pre)
    stop = _atomic_load(b, _word(b, job, STOP))
    b.cbranch(b.icmp_unsigned("!=", stop, _const(0)), out, check)
    b.position_at_end(check)
    seq = _atomic_load(b, _word(b, job, SEQ))
    b.cbranch(b.icmp_unsigned("==", seq, last), idle, work)
    b.position_at_end(idle)
    recent = b.icmp_signed("<", b.sub(_now_ns(b, spec), since), _const(GRACE_NS))
    b.cbranch(recent, wake, nap)
    b.position_at_end(wake)
    _pause(b)
    b.call(sched_yield, [])
    b.branch(top)
    for phi, value in ((last, last), (sleep, ir.Constant(I32, NAP_MIN_US)), (since, since)):
        phi.add_incoming(value, wake)
    b.position_at_end(nap)
    b.call(usleep, [sleep])
    longer = b.mul(sleep, ir.Constant(I32, 2))
    cap = ir.Constant(I32, NAP_MAX_US)
    longer = b.select(b.icmp_unsigned("<", longer, cap), longer, cap)
    b.branch(top)
    for phi, value in ((last, last), (sleep, longer), (since, since)):
        phi.add_incoming(value, nap)
    b.position_at_end(work)
    _emit_claims(b, fn, job, block, seq, helped=True)
    finished = _now_ns(b, spec)
    b.branch(top)
    for phi, value in ((last, seq), (sleep, ir.Constant(I32, NAP_MIN_US)), (since, finished)):
        phi.add_incoming(value, b.block)
    b.position_at_end(out)
    b.ret_void()


def _module(int_bits):
    module = ir.Module(name="fc_par_gemm")
    job = ir.GlobalVariable(module, ir.ArrayType(I64, JOB_WORDS), JOB_SYMBOL)
    job.linkage = "external"
    job = job.gep([ir.Constant(I32, 0), ir.Constant(I32, 0)])
    block = _emit_block(module, int_bits)
    _emit_caller(module, job, block)
    _emit_helper(module, job, block)
    return module


def caller(int_bits: int):
    """``fc_par_gemm`` as a ctypes function (compiled, its helper thread started, on first
    use) for a BLAS of ``int_bits``-bit integers: ``(gemm address, ?gemm's 13 argument
    pointers, columns, rhs bytes per column, result bytes per column)``; None where it
    cannot start (no ``usleep``, ``sched_yield`` or ``clock_gettime`` in the C library, no
    threads): products then split over the runtime's pool."""
    with _lock:
        if "caller" not in _state:
            try:
                _start(int_bits)
            except Exception:       # any failure: the pool takes the blocks
                _state["caller"] = None
        return _state["caller"]


def _start(int_bits):
    job = np.zeros(JOB_WORDS, np.int64)
    libc = ctypes.CDLL(None)
    with engine.lock:
        engine.target_machine()
        llvm.add_symbol(JOB_SYMBOL, job.ctypes.data)
        for name in ("usleep", "sched_yield", "clock_gettime"):
            llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
        text = str(_module(int_bits))
        native = engine.compile_ir(text, [SYMBOL, "fc_pg_helper"], "small", "par_gemm",
                                   locked=True)
    helper = ctypes.CFUNCTYPE(None)(native.addresses["fc_pg_helper"])
    thread = threading.Thread(target=helper, name="fc-gemm-helper", daemon=True)
    proto = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 14, *[ctypes.c_int64] * 3)
    _state.update(job=job, native=native, helper=helper, thread=thread,
                  caller=proto(native.addresses[SYMBOL]))
    thread.start()
    atexit.register(_stop)


def _stop():
    """At exit: stop the helper (its code stays: a later atexit hook may still call it)."""
    job, thread = _state.get("job"), _state.get("thread")
    if job is not None:
        job[STOP] = 1
        thread.join(timeout=1)


def helped() -> int:
    """How many blocks the helper thread has run in this process (0 before first use)."""
    job = _state.get("job")
    return 0 if job is None else int(job[HELPED])
