"""The counted loop the llvm emitters write: ``for i in range(start, end, step)`` as a
head block with an i64 phi, a body, and a done block; loop nests over fixed sizes; and the
two small pieces every emitter of a whole function needs (a stack cell, a declared libc
or intrinsic function)."""

from __future__ import annotations

from llvmlite import ir

I64 = ir.IntType(64)


def open_loop(b, start, end, names=("head", "body", "done")):
    """Branch into the loop's head; returns ``(head, i, done)`` with the builder at the
    start of the body (``i`` counts from ``start`` while ``i < end``)."""
    pre = b.block
    head, body, done = (b.append_basic_block(n) for n in names)
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", i, end), body, done)
    b.position_at_end(body)
    return head, i, done


def close_loop(b, head, i, done, step):
    """End the body: ``i += step`` (an i64 value), back to the head; continue after it."""
    i.add_incoming(b.add(i, step), b.block)
    b.branch(head)
    b.position_at_end(done)


def nest(b, sizes, body, idx=()):
    """``body(*indices)`` for every index tuple below ``sizes`` (Python ints), as nested
    counted loops, the last size innermost."""
    if len(idx) == len(sizes):
        body(*idx)
        return
    head, i, done = open_loop(b, ir.Constant(I64, 0), ir.Constant(I64, sizes[len(idx)]))
    nest(b, sizes, body, (*idx, i))
    close_loop(b, head, i, done, ir.Constant(I64, 1))


def cell(b, ty, value):
    """A stack slot of type ``ty`` holding ``value`` (a Fortran argument passed by pointer)."""
    p = b.alloca(ty)
    b.store(ir.Constant(ty, value), p)
    return p


def declare(module, name, ret, args):
    """``module``'s function ``name``, declared with that signature on first use."""
    return module.globals.get(name) or ir.Function(module, ir.FunctionType(ret, args), name)
