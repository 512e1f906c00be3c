"""The buffer plan: intermediate slots share memory when their lifetimes do not overlap.

A backend lays every *intermediate* slot (neither a graph input, a constant nor a
result) at a byte offset of one block, the *arena*, that it allocates once per
concurrent call and reuses across calls; results are fresh arrays, except where the
caller donates an input (:func:`donations`: a result then lives in the input's memory).
:func:`arena_layout` is the whole plan for a :class:`~backends.planning.plan.Plan`;
:func:`step_slots`, :func:`lifetimes` and :func:`plan_arena` are its parts.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .plan import Blas, Conv, Kernel, Lapack, Sort, c_strides


def nbytes(shape, dtype) -> int:
    """Bytes of a C-contiguous array of ``shape`` and ``dtype``."""
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def step_slots(step) -> tuple[set, set]:
    """(slots ``step`` reads, slots it writes); a scatter's target is both."""
    def refs(rs):
        return {r[1] for r in rs if r[0] == "slot"}
    if isinstance(step, Kernel):
        scattered = {sc.slot for sc in step.scatters}
        reads = {v.slot for v in step.reads + step.dyn_reads} | scattered
        writes = {s for _, s, _ in step.stores} | {r.slot for r in step.reduces} | scattered
        return reads, writes
    if isinstance(step, Blas | Conv):
        return refs([step.lhs, step.rhs]), {step.out}
    if isinstance(step, Sort):
        return set(step.inputs) | {step.scratch}, set(step.outputs) | {step.scratch}
    if isinstance(step, Lapack):
        return refs(step.inputs) | set(step.scratch), set(step.outputs) | set(step.scratch)
    return refs(step.inputs), set(step.outputs)


def lifetimes(steps, keep) -> dict:
    """{slot: [first, last]} over ``steps`` (indices, inclusive) for each slot a step
    writes, from its first write to the last step that touches it; slots in ``keep``
    (inputs, constants, results: memory the arena does not own) are left out."""
    spans: dict = {}
    for k, step in enumerate(steps):
        reads, writes = step_slots(step)
        for s in writes:
            spans.setdefault(s, [k, k])[1] = k
        for s in reads:
            if s in spans:
                spans[s][1] = k
    for s in keep:
        spans.pop(s, None)
    return spans


def plan_arena(sizes: dict, spans: dict, align: int):
    """Byte offsets that let buffers share memory when their lifetimes do not overlap.

    ``sizes[s]`` is buffer s's size in bytes, ``spans[s]`` its (first, last) step, both
    inclusive: a buffer lives from the step that first writes it to the last step that
    touches it, so a step never writes over a buffer it reads. Biggest first, each at the
    lowest ``align``-ed offset free of every placed buffer whose lifetime overlaps its own.
    Returns ({slot: offset}, total bytes).
    """
    placed, offsets = [], {}
    # the placed buffers by blocks of _SPAN_BLOCK steps their lifetime touches, so each
    # buffer is checked against those that may overlap it, not against all placed so far
    blocks: dict = {}
    for s in sorted(spans, key=lambda s: (-sizes[s], s)):
        first, last = spans[s]
        size = -(-sizes[s] // align) * align
        near = range(first // _SPAN_BLOCK, last // _SPAN_BLOCK + 1)
        seen = {j for block in near for j in blocks.get(block, ())}
        off = 0
        for lo, hi in sorted((o, e) for f, la, o, e in map(placed.__getitem__, seen)
                             if f <= last and first <= la):
            if off + size <= lo:
                break
            off = max(off, hi)
        offsets[s] = off
        for block in near:
            blocks.setdefault(block, []).append(len(placed))
        placed.append((first, last, off, off + size))
    return offsets, max((e for *_, e in placed), default=0)


_SPAN_BLOCK = 64


def arena_layout(plan, align: int):
    """The arena of ``plan``: ({intermediate slot: byte offset}, total bytes).

    Example::

        >>> offsets, total = arena_layout(plan, 256)
        >>> arena = np.empty(total, np.uint8)   # one block per concurrent call
        >>> shape, dtype = plan.slots[s]
        >>> buf = arena[offsets[s]:offsets[s] + nbytes(shape, dtype)].view(dtype)
    """
    borrowed = set(range(plan.n_inputs)) | set(plan.consts)
    results = {r[1] for r in plan.outputs if r[0] == "slot"}
    spans = lifetimes(plan.steps, borrowed | results)
    return plan_arena({s: nbytes(*plan.slots[s]) for s in spans}, spans, align)


def _pointwise(kernel: Kernel, slot: int) -> bool:
    """Whether ``kernel`` reads ``slot`` only at the element it stores at (offset 0, the
    stores' C-order strides), in one elementwise loop nest (no reduction, scan, scatter
    or gather of it): then a result it stores may take ``slot``'s memory, each element
    read before it is overwritten."""
    if kernel.axes is not None or kernel.reduces or kernel.scatters or \
            any(v.slot == slot for v in kernel.dyn_reads):
        return False
    want = c_strides(kernel.shape)
    return all(v.offset == 0 and all(s == w for s, w, d in zip(v.strides, want, kernel.shape,
                                                              strict=True) if d != 1)
               for v in kernel.reads if v.slot == slot)


def donations(plan, donated) -> tuple[dict, set]:
    """Which results may live in the memory of the donated inputs ``donated`` (input
    slots whose arrays the caller gives up).

    A result slot ``r`` takes input ``i``'s memory when it has ``i``'s shape and dtype,
    one step writes it, that step is a :class:`Kernel` storing it in place, and nothing
    reads ``i`` afterwards: every read of ``i`` comes before that step, or in it when the
    kernel reads ``i`` pointwise (:func:`_pointwise`; the backend then points that
    kernel's reads of ``i`` at ``r``, so no two pointers of one kernel alias). A result
    that *is* a donated input is handed back without a copy. Graph results count as
    reads at the end, so a donated input that is also returned is never overwritten.

    Returns ``({input slot: result slot}, {donated inputs returned as they are})``.
    """
    results = [r[1] for r in plan.outputs if r[0] == "slot"]
    last_read, writers = {}, {}
    for k, step in enumerate(plan.steps):
        reads, writes = step_slots(step)
        for s in reads:
            last_read[s] = k
        for s in writes:
            writers.setdefault(s, []).append(k)
    for s in results:
        last_read[s] = len(plan.steps)
    pairs, returned = {}, set()
    for i in donated:
        for r in results:
            ks = writers.get(r, ())
            if r < plan.n_inputs or r in plan.consts or r in pairs.values() or len(ks) != 1 \
                    or plan.slots[r] != plan.slots[i] or not isinstance(plan.steps[ks[0]], Kernel) \
                    or r not in {s for _, s, _ in plan.steps[ks[0]].stores}:
                continue
            k, last = ks[0], last_read.get(i, -1)
            if last < k or (last == k and _pointwise(plan.steps[k], i)):
                pairs[i] = r
                break
        if i not in pairs and i in results:
            returned.add(i)
    return pairs, returned


def read_donated_in_place(plan, pairs):
    """Point the reads of each donated input ``i`` in the kernel that writes its result
    ``r`` at ``r`` (the same memory at run time), so that kernel has one pointer for
    it: two pointers to one buffer in one kernel would break its ``noalias``."""
    for i, r in pairs.items():
        for step in plan.steps:
            if isinstance(step, Kernel) and r in {s for _, s, _ in step.stores}:
                step.reads = [dataclasses.replace(v, slot=r) if v.slot == i else v
                              for v in step.reads]
