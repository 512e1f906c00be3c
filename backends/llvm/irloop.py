"""The counted loop the llvm emitters write: ``for i in range(start, end, step)`` as a
head block with an i64 phi, a body, and a done block."""

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
