"""LLVM IR of the functions Python calls into a graph's native code through: a kernel's
array entry (:func:`emit_array_entry`), a whole graph as one CPython builtin
(:func:`emit_graph_entry`) and a native loop (:func:`emit_loop_entry`). ``entries.py``
compiles and wraps them; the kernels themselves are ``codegen.py``'s."""

from __future__ import annotations

from llvmlite import ir

from ..planning.plan import NativeLoop
from . import irloop
from .blas import GemmCall, emit_gemm
from .collectives import CollectiveCall, emit_collective
from .ops import I64

_PTR = ir.PointerType()


def emit_array_entry(module: ir.Module, name: str, kernel_name: str, data_offset: int | None,
                     packed: bool = False):
    """``name(PyArrayObject*..., lo, hi)``: read each array's data pointer (at
    ``data_offset`` in the object) and call the kernel, so Python passes arrays without
    converting them. ``packed``: ``name(PyArrayObject **arrays, int64 *index, lo, hi)``
    takes its i-th array at ``arrays[index[i]]`` instead (a C call takes at most about a
    thousand arguments; a graph entry passes its own argument vector and a constant
    index). With ``data_offset`` None the pointers are the data pointers themselves."""
    kernel = module.globals[kernel_name]
    n = len(kernel.args) - 2
    params = [_PTR, _PTR] if packed else [_PTR] * n
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [*params, I64, I64]), name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if packed:
        arrays, index = fn.args[:2]
        objects = []
        for i in range(n):
            k = b.load(b.gep(index, [ir.Constant(I64, i)], source_etype=I64), typ=I64)
            objects.append(b.load(b.gep(arrays, [k], source_etype=_PTR), typ=_PTR))
    else:
        objects = fn.args[:n]
    data = objects if data_offset is None else [
        b.load(b.gep(a, [ir.Constant(I64, data_offset)], source_etype=ir.IntType(8)),
               typ=_PTR) for a in objects]
    b.call(kernel, [*data, *fn.args[-2:]])
    b.ret_void()


# a graph entry of more calls runs them through internal functions of this many calls each,
# so LLVM's code generation works on functions of bounded size (its cost stays linear)
PART_CALLS = 64


def emit_graph_entry(module: ir.Module, name: str, calls, n_args: int, none_symbol: str,
                     incref_none: bool, data_offset: int = 0):
    """``name(self, PyObject *const *args, Py_ssize_t nargs)``: a CPython METH_FASTCALL
    function that runs a whole graph of kernels in one call from Python.

    ``args`` are the graph's array objects, one per slot; ``calls`` lists, in execution
    order, ``(array-entry symbol, slot indices, lo, hi, packed)`` per kernel (each entry
    reads its arrays' data pointers itself; a packed one gets ``args`` and a constant
    table of its slots), a :class:`blas.GemmCall` or a :class:`collectives.CollectiveCall`
    (data pointers read here,
    at ``data_offset`` in the array object). Returns ``None`` (a new reference,
    so incremented unless this CPython's None is immortal), or NULL for a wrong ``nargs``
and, with the exception set, when a bounded collective failed (``bounded.py``).
    ``None`` is the external symbol ``none_symbol``: no address of this process is in the
    code, so its object code can be cached on disk. More than :data:`PART_CALLS` calls are
    made from internal functions of that many calls each.
    """
    fn = ir.Function(module, ir.FunctionType(_PTR, [_PTR, _PTR, I64]), name)
    _, args, nargs = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    body, fail = fn.append_basic_block("body"), fn.append_basic_block("fail")
    b.cbranch(b.icmp_signed("==", nargs, ir.Constant(I64, n_args)), body, fail)
    b.position_at_end(fail)
    b.ret(ir.Constant(_PTR, None))
    b.position_at_end(body)
    def bail(bb):       # a collective failed with an exception set
        bb.ret(ir.Constant(_PTR, None))
    if len(calls) <= PART_CALLS:
        _emit_calls(module, b, args, calls, 0, data_offset, bail)
    else:
        i1 = ir.IntType(1)
        part_type = ir.FunctionType(i1, [_PTR])     # set: bail out
        for first in range(0, len(calls), PART_CALLS):
            part = ir.Function(module, part_type, f"{name}_part{first // PART_CALLS}")
            part.linkage = "internal"
            part.attributes.add("noinline")
            pb = ir.IRBuilder(part.append_basic_block("entry"))
            _emit_calls(module, pb, part.args[0], calls[first:first + PART_CALLS], first,
                        data_offset, lambda bb: bb.ret(ir.Constant(i1, 1)))
            pb.ret(ir.Constant(i1, 0))
            failed = b.call(part, [args])
            if any(isinstance(c, CollectiveCall) for c in calls[first:first + PART_CALLS]):
                _bail_if(b, failed, bail)
    none = ir.GlobalVariable(module, I64, none_symbol)     # its reference count
    if incref_none:
        b.store(b.add(b.load(none, typ=I64), ir.Constant(I64, 1)), none)
    b.ret(b.bitcast(none, _PTR))


def _bail_if(b, failed, bail):
    """Go on at ``b`` unless ``failed`` (an i1) is set: then ``bail(builder)`` returns."""
    out, on = b.append_basic_block("bail"), b.append_basic_block("on")
    b.cbranch(failed, out, on)
    b.position_at_end(out)
    bail(b)
    b.position_at_end(on)


def _emit_calls(module, b, args, calls, first, data_offset, bail):
    """The calls of ``calls`` (the ``first``-th of the graph's onwards) at ``b``, each
    reading the array objects it takes from ``args`` right before it (values held across
    many calls would make register allocation the bulk of the compile time); a
    collective that fails (a bounded one: timed out, a failed rank) ends them with
    ``bail(builder)``."""
    def obj(slot):
        return b.load(b.gep(args, [ir.Constant(I64, slot)], source_etype=_PTR), typ=_PTR)

    def data(slot):
        field = b.gep(obj(slot), [ir.Constant(I64, data_offset)], source_etype=ir.IntType(8))
        return b.load(field, typ=_PTR)

    for i, call in enumerate(calls, first):
        if isinstance(call, GemmCall):
            emit_gemm(b, call, data)
            continue
        if isinstance(call, CollectiveCall):
            failed = emit_collective(b, call, data)
            if failed is not None:
                _bail_if(b, failed, bail)
            continue
        symbol, slots, lo, hi, packed = call
        bounds = [ir.Constant(I64, lo), ir.Constant(I64, hi)]
        kernel = module.globals.get(symbol)     # twin kernels share one function
        if packed:
            kernel = kernel or ir.Function(module, ir.FunctionType(
                ir.VoidType(), [_PTR, _PTR, I64, I64]), symbol)
            table_type = ir.ArrayType(I64, len(slots))
            table = ir.GlobalVariable(module, table_type, f"fc_slots_{i}")
            table.initializer = ir.Constant(table_type, [ir.Constant(I64, s) for s in slots])
            table.global_constant, table.linkage = True, "internal"
            b.call(kernel, [args, table, *bounds])
            continue
        kernel = kernel or ir.Function(module, ir.FunctionType(
            ir.VoidType(), [_PTR] * len(slots) + [I64, I64]), symbol)
        b.call(kernel, [obj(s) for s in slots] + bounds)


# a native loop's bodies are small (a kernel big enough for threads keeps its loop in
# Python): a check every 64 steps costs ~0.1 ns a step where one per step cost ~5 ns
SIGNAL_STEPS = 64


def emit_loop_entry(module: ir.Module, name: str, loop: NativeLoop, none_symbol: str,
                    incref_none: bool, data_offset: int, check_signals: str):
    """``name(self, PyObject *const *args, Py_ssize_t nargs)``: a METH_FASTCALL function
    that runs the loop ``loop`` describes (see :class:`plan.NativeLoop`), calling the
    bodies' graph entries (METH_FASTCALL themselves) through the addresses in its table
    argument, so its code holds no address of this process and can be cached on disk.
    Every :data:`SIGNAL_STEPS` steps it calls ``check_signals`` (CPython's
    ``PyErr_CheckSignals``; the caller holds the GIL): a Ctrl-C (or a signal handler that
    raises) ends the loop, returning NULL with that exception set."""
    fn = ir.Function(module, ir.FunctionType(_PTR, [_PTR, _PTR, I64]), name)
    _, args, nargs = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    start, fail = fn.append_basic_block("start"), fn.append_basic_block("fail")
    b.cbranch(b.icmp_signed("==", nargs, ir.Constant(I64, loop.n_args)), start, fail)
    b.position_at_end(fail)
    b.ret(ir.Constant(_PTR, None))
    b.position_at_end(start)
    i8 = ir.IntType(8)
    objects = [b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=_PTR), typ=_PTR)
               for i in range(loop.n_args)]

    def field(k):
        return b.gep(objects[k], [ir.Constant(I64, data_offset)], source_etype=i8)

    def data(k):
        return b.load(field(k), typ=_PTR)

    entry_type = ir.FunctionType(_PTR, [_PTR, _PTR, I64])
    table = data(loop.table)
    entries = []
    for k in range(2):
        address = b.load(b.gep(table, [ir.Constant(I64, k)], source_etype=I64), typ=I64)
        # a pointer that knows its function type (it prints as a plain ``ptr``)
        entries.append(b.inttoptr(address, entry_type.as_pointer()))
    carry_a = [data(a) for a, _ in loop.carry]
    carry_b = [data(c) for _, c in loop.carry]
    bases = {k: data(k) for _, kind, k, _ in loop.pointers if kind == "x"}
    bases.update({k: data(k) for kind, k, *_ in loop.copies if kind == "x"})
    limit = ir.Constant(I64, (1 << 62) if loop.length is None else loop.length)
    memcpy = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR, _PTR, I64, ir.IntType(1)]),
                         "llvm.memcpy.p0.p0.i64")

    def call(which, span):
        first, count = span
        result = b.call(entries[which], [ir.Constant(_PTR, None),
                                         b.gep(args, [ir.Constant(I64, first)], source_etype=_PTR),
                                         ir.Constant(I64, count)])
        if incref_none:     # the entry returned None as a new reference: give it back
            b.store(b.sub(b.load(result, typ=I64), ir.Constant(I64, 1)), result)

    signals = ir.Function(module, ir.FunctionType(ir.IntType(32), []), check_signals)
    head, i, done = irloop.open_loop(b, ir.Constant(I64, 0), limit, ("head", "step", "done"))
    check, running = fn.append_basic_block("check_signals"), fn.append_basic_block("running")
    due = b.and_(i, ir.Constant(I64, SIGNAL_STEPS - 1))
    b.cbranch(b.icmp_signed("==", due, ir.Constant(I64, 0)), check, running)
    b.position_at_end(check)
    b.cbranch(b.icmp_signed("!=", b.call(signals, []), ir.Constant(ir.IntType(32), 0)),
              fail, running)
    b.position_at_end(running)
    odd = b.trunc(i, ir.IntType(1))
    t = b.sub(ir.Constant(I64, loop.length - 1), i) if loop.reverse else i

    def where(kind, k, stride):
        if kind == "in":
            return b.select(odd, carry_b[k], carry_a[k])
        if kind == "out":
            return b.select(odd, carry_a[k], carry_b[k])
        return b.gep(bases[k], [b.mul(t, ir.Constant(I64, stride))], source_etype=i8)

    for proxy, kind, k, stride in loop.pointers:
        b.store(where(kind, k, stride), field(proxy))
    if loop.cond_result is not None:
        if loop.cond is not None:
            call(1, loop.cond)
        go = fn.append_basic_block("go")
        pred = b.load(data(loop.cond_result), typ=i8)
        b.cbranch(b.icmp_unsigned("!=", pred, ir.Constant(i8, 0)), go, done)
        b.position_at_end(go)
    if loop.body is not None:
        call(0, loop.body)
    for kind, k, stride, source, nbytes in loop.copies:
        b.call(memcpy, [where(kind, k, stride), data(source), ir.Constant(I64, nbytes),
                        ir.Constant(ir.IntType(1), 0)])
    irloop.close_loop(b, head, i, done, ir.Constant(I64, 1))
    if loop.steps is not None:
        b.store(i, data(loop.steps))
    none = ir.GlobalVariable(module, I64, none_symbol)
    if incref_none:
        b.store(b.add(b.load(none, typ=I64), ir.Constant(I64, 1)), none)
    b.ret(b.bitcast(none, _PTR))


# the records of a table entry (see emit_table_entry): kind, address, two arguments, count
RECORD_KERNEL, RECORD_PACKED, RECORD_GEMM, RECORD_GEMV = 0, 1, 2, 3
RECORD_HEAD = 5
GEMM_FIELDS = 16
GEMV_FIELDS = 13


def emit_table_entry(module: ir.Module, name: str, none_symbol: str, incref_none: bool,
                     data_offset: int, max_direct: int):
    """``name(self, PyObject *const *args, Py_ssize_t nargs)``: a METH_FASTCALL function
    that runs the calls a table describes, the same code for every graph: ``self`` is a
    C-contiguous int64 array ``[n_args, n_calls, record...]``, each record
    ``[kind, address, a, b, count, count values]``:

    - ``RECORD_KERNEL``: ``address(object of args[v] for each value v, lo=a, hi=b)``, a
      kernel's array entry of at most ``max_direct`` slots;
    - ``RECORD_PACKED``: ``address(args, the record's values, lo=a, hi=b)``;
    - ``RECORD_GEMM``: ?gemm at ``address``, ``a`` times (the batch): values
      ``[&transa, &transb, &n, &m, &k, &alpha, &ldb, &lda, &beta, &ldc, rhs, lhs, out,
      rhs step, lhs step, out step]`` (pointers to the scalar arguments, the operands'
      slots and their byte steps per batch), as :func:`blas.emit_gemm` calls it;
    - ``RECORD_GEMV``: ?gemv at ``address``, ``a`` times: values ``[&trans, &rows, &cols,
      &alpha, &ld, &inc, &beta, matrix, vector, out, their steps]`` (``blas.GemvForm``).

    A graph's entry is then a table (data) instead of code: its cost does not grow the
    native code LLVM compiles. Returns ``None`` as :func:`emit_graph_entry` does.
    """
    i8 = ir.IntType(8)
    fn = ir.Function(module, ir.FunctionType(_PTR, [_PTR, _PTR, I64]), name)
    this, args, nargs = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    table = b.load(b.gep(this, [ir.Constant(I64, data_offset)], source_etype=i8), typ=_PTR)

    def at(index):
        return b.load(b.gep(table, [index], source_etype=I64), typ=I64)

    def c(v):
        return ir.Constant(I64, v)
    start, fail = fn.append_basic_block("start"), fn.append_basic_block("fail")
    b.cbranch(b.icmp_signed("==", nargs, at(c(0))), start, fail)
    b.position_at_end(fail)
    b.ret(ir.Constant(_PTR, None))
    b.position_at_end(start)
    pos = b.alloca(I64)
    b.store(c(2), pos)
    head, _, done = irloop.open_loop(b, c(0), at(c(1)), ("call_head", "call_body", "calls_done"))
    counter = head.instructions[0]
    p = b.load(pos, typ=I64)
    kind, address, lo, hi, count = (at(b.add(p, c(j))) for j in range(RECORD_HEAD))
    values = b.gep(table, [b.add(p, c(RECORD_HEAD))], source_etype=I64)
    b.store(b.add(p, b.add(count, c(RECORD_HEAD))), pos)
    next_call = fn.append_basic_block("next_call")
    kernel, packed, gemm, gemv = (fn.append_basic_block(n)
                                  for n in ("kernel", "packed", "gemm", "gemv"))
    switch = b.switch(kind, next_call)
    for value, block in ((RECORD_KERNEL, kernel), (RECORD_PACKED, packed), (RECORD_GEMM, gemm),
                         (RECORD_GEMV, gemv)):
        switch.add_case(c(value), block)

    def value(j):
        return b.load(b.gep(values, [c(j)], source_etype=I64), typ=I64)

    def obj(j):
        return b.load(b.gep(args, [value(j)], source_etype=_PTR), typ=_PTR)

    b.position_at_end(packed)
    target = b.inttoptr(address, ir.PointerType(ir.FunctionType(
        ir.VoidType(), [_PTR, _PTR, I64, I64])))
    b.call(target, [args, values, lo, hi])
    b.branch(next_call)
    b.position_at_end(kernel)
    arity = b.switch(count, next_call)
    for n in range(max_direct + 1):
        block = fn.append_basic_block(f"arity{n}")
        arity.add_case(c(n), block)
        b.position_at_end(block)
        callee = b.inttoptr(address, ir.PointerType(ir.FunctionType(
            ir.VoidType(), [_PTR] * n + [I64, I64])))
        b.call(callee, [obj(j) for j in range(n)] + [lo, hi])
        b.branch(next_call)
    def blas_call(block, name, n_scalars, arguments):
        """At ``block``: the BLAS routine at ``address`` once per batch (``lo`` times) on
        the record's three slots, each stepped per batch; ``arguments(scalars, slots)``
        orders the call's arguments."""
        b.position_at_end(block)
        scalars = [b.inttoptr(value(j), _PTR) for j in range(n_scalars)]
        data = [b.load(b.gep(obj(j), [c(data_offset)], source_etype=i8), typ=_PTR)
                for j in range(n_scalars, n_scalars + 3)]
        steps = [value(j) for j in range(n_scalars + 3, n_scalars + 6)]
        args = arguments(scalars, [None] * 3)
        routine = b.inttoptr(address, ir.PointerType(ir.FunctionType(ir.VoidType(),
                                                                      [_PTR] * len(args))))
        loop_head, i, loop_done = irloop.open_loop(b, c(0), lo, tuple(
            f"{name}_{part}" for part in ("head", "body", "done")))
        slots = [b.gep(d, [b.mul(i, s)], source_etype=i8) for d, s in zip(data, steps,
                                                                            strict=True)]
        b.call(routine, arguments(scalars, slots))
        irloop.close_loop(b, loop_head, i, loop_done, c(1))
        b.branch(next_call)

    def gemm_arguments(scalars, slots):
        (ta, tb, n_, m, k, alpha, ldb, lda, beta, ldc), (rhs, lhs, out) = scalars, slots
        return [ta, tb, n_, m, k, alpha, rhs, ldb, lhs, lda, beta, out, ldc]

    def gemv_arguments(scalars, slots):
        (trans, rows, cols, alpha, ld, inc, beta), (mat, vec, out) = scalars, slots
        return [trans, rows, cols, alpha, mat, ld, vec, inc, beta, out, inc]
    blas_call(gemm, "gemm", 10, gemm_arguments)
    blas_call(gemv, "gemv", 7, gemv_arguments)
    b.position_at_end(next_call)
    irloop.close_loop(b, head, counter, done, c(1))
    none = ir.GlobalVariable(module, I64, none_symbol)
    if incref_none:
        b.store(b.add(b.load(none, typ=I64), c(1)), none)
    b.ret(b.bitcast(none, _PTR))
