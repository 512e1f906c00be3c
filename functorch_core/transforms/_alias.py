"""Memory layouts for alias analysis: which raw-graph values share memory, and how.

A layout is ``(offset, strides)`` in elements of the root buffer a value lives
in (``offset`` is None where a traced start index makes it unknown). A fresh
value (the output of any non-view primitive) is its own C-contiguous root.
Layouts decide the one view rule that depends on memory, NumPy's reshape: a
view where the strides allow it, a copy otherwise. Graph inputs are assumed
C-contiguous and distinct unless the caller's arrays say otherwise: the plan
built at call time (``input_plan``) records the strides of non-contiguous
inputs and how inputs that share memory overlap, and it is part of every
cache key.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib.array_utils import byte_bounds

from functorch_core.ir import Primitive, Tracer
from functorch_core.ir import primitives as P
from functorch_core.ir.tables import Table


@dataclass(frozen=True)
class Layout:
    offset: int | None
    strides: tuple[int, ...]


def c_strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def fresh(shape) -> Layout:
    return Layout(0, c_strides(shape))


def reshape_strides(shape, strides, new_shape):
    """Strides of a no-copy reshape, or None where NumPy's reshape must copy."""
    if math.prod(shape) == 0:
        return c_strides(new_shape)
    old = [(d, s) for d, s in zip(shape, strides, strict=True) if d != 1]
    out = [0] * len(new_shape)
    oi = ni = 0
    while oi < len(old) and ni < len(new_shape):
        nprod, oprod, nj, oj = new_shape[ni], old[oi][0], ni + 1, oi + 1
        while nprod != oprod:
            if nprod < oprod:
                nprod, nj = nprod * new_shape[nj], nj + 1
            else:
                oprod, oj = oprod * old[oj][0], oj + 1
        if any(old[k][1] != old[k + 1][1] * old[k + 1][0] for k in range(oi, oj - 1)):
            return None
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new_shape[k]
        oi, ni = oj, nj
    return tuple(out)


def _off(lay, delta):
    return None if lay.offset is None or delta is None else lay.offset + delta


def _slice(lay, x, *, start_indices, limit_indices, strides):
    delta = sum(s * st for s, st in zip(start_indices, lay.strides, strict=True))
    return Layout(_off(lay, delta),
                  tuple(a * b for a, b in zip(lay.strides, strides, strict=True)))


def _dynamic_slice(lay, x, *, slice_sizes):
    return Layout(None, lay.strides)


def _reshape(lay, x, *, new_sizes):
    st = reshape_strides(x.shape, lay.strides, tuple(new_sizes))
    return None if st is None else Layout(lay.offset, st)


def _transpose(lay, x, *, permutation):
    return Layout(lay.offset, tuple(lay.strides[p] for p in permutation))


def _squeeze(lay, x, *, dimensions):
    return Layout(lay.offset, tuple(s for i, s in enumerate(lay.strides) if i not in dimensions))


def _expand_dims(lay, x, *, dimensions):
    it = iter(lay.strides)
    n = x.ndim + len(dimensions)
    return Layout(lay.offset, tuple(0 if i in dimensions else next(it) for i in range(n)))


def _rev(lay, x, *, dimensions):
    delta = sum((x.shape[d] - 1) * lay.strides[d] for d in dimensions)
    return Layout(_off(lay, delta), tuple(-s if i in dimensions else s
                                          for i, s in enumerate(lay.strides)))


def _part(which):
    def rule(lay, x):
        # a real/imag view of a complex array: strides in units of the real dtype
        return Layout(None if lay.offset is None else 2 * lay.offset + which,
                      tuple(2 * s for s in lay.strides))
    return rule


# primitive -> (layout of the input, input aval, **params) -> layout of the output view,
# or None where the primitive copies after all (reshape of an incompatible layout)
VIEWS: Table[Primitive, Callable[..., Layout | None]] = Table("views", [
    (P.slice, _slice), (P.dynamic_slice, _dynamic_slice), (P.reshape, _reshape),
    (P.transpose, _transpose), (P.squeeze, _squeeze), (P.expand_dims, _expand_dims),
    (P.rev, _rev), (P.real, _part(0)), (P.imag, _part(1)),
])


def _complex_part_error():
    return NotImplementedError(
        "writing through .real or .imag of a complex array is not supported by "
        "functionalize; build the new complex value and assign it to the array instead")


# views that NumPy makes, but that writes may not go through
READ_ONLY: Table[Primitive, Callable[[], Exception]] = Table(
    "read-only views", [(P.real, _complex_part_error), (P.imag, _complex_part_error)])


def view_layout(prim, lay: Layout, in_aval, params):
    """The layout of a view primitive's output, or None when it is not a view here."""
    rule = VIEWS.get(prim)
    if rule is None or (prim in READ_ONLY and in_aval.dtype.kind != "c"):
        return None
    return rule(lay, in_aval, **params)


# --- the input plan ----------------------------------------------------------

@dataclass(frozen=True)
class InputLayout:
    """How one input sits in memory: its own root (group None) or a member of a group."""

    group: int | None
    offset: int
    strides: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    inputs: tuple[InputLayout | None, ...]   # None: C-contiguous, shares memory with nothing
    group_sizes: tuple[int, ...]
    error: str | None = None                 # why the overlap cannot be handled (raised on write)


def _elem(nbytes, itemsize, what):
    if nbytes % itemsize:
        raise NotImplementedError(f"{what} has a memory layout that is not a whole number of "
                                  "elements; pass a copy (np.ascontiguousarray)")
    return nbytes // itemsize


def _own_layout(x):
    if x.flags.c_contiguous or x.size == 0:
        return None
    st = tuple(0 if d == 1 else _elem(s, x.itemsize, "an argument")
               for d, s in zip(x.shape, x.strides, strict=True))
    return InputLayout(None, 0, st)


def _owner(x):
    while isinstance(x.base, np.ndarray):
        x = x.base
    return x.base if x.base is not None else x


def _maybe_shared(arrays):
    """The arrays that may share memory: a common owner, or a buffer NumPy does not own."""
    owners: dict[int, list] = {}
    foreign = False
    for i, x in arrays:
        if x.size:
            o = _owner(x)
            foreign = foreign or not isinstance(o, np.ndarray)
            owners.setdefault(id(o), []).append((i, x))
    if foreign:
        return [ix for group in owners.values() for ix in group]
    return [ix for group in owners.values() if len(group) > 1 for ix in group]


def _overlapping_pairs(arrays):
    spans = sorted((*byte_bounds(x), i) for i, x in arrays)
    active = []
    for lo, hi, i in spans:
        active = [(h, j) for h, j in active if h > lo]
        for _, j in active:
            yield j, i
        active.append((hi, i))


def array_plan(leaves, fname) -> Plan | None:
    """The plan of concrete arguments (None: all distinct and C-contiguous)."""
    arrays = [(i, x) for i, x in enumerate(leaves) if isinstance(x, np.ndarray)]
    shared = _maybe_shared(arrays)
    if not shared and all(x.flags.c_contiguous for _, x in arrays):
        return None
    parent = {i: i for i, _ in arrays}

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    by_index = dict(arrays)
    for i, j in _overlapping_pairs(shared):
        if np.shares_memory(by_index[i], by_index[j]):
            parent[find(j)] = find(i)
    groups: dict[int, list[int]] = {}
    for i, _ in arrays:
        groups.setdefault(find(i), []).append(i)
    entries: list[InputLayout | None] = [None] * len(leaves)
    sizes = []
    for members in groups.values():
        if len(members) == 1:
            entries[members[0]] = _own_layout(by_index[members[0]])
            continue
        entries_g, size = _group_layouts([by_index[i] for i in members], members, fname,
                                         len(sizes))
        sizes.append(size)
        for i, e in zip(members, entries_g, strict=True):
            entries[i] = e
    if all(e is None for e in entries):
        return None
    return Plan(tuple(entries), tuple(sizes))


def _group_layouts(xs, members, fname, g):
    if len({x.dtype for x in xs}) > 1:
        raise NotImplementedError(
            f"{fname}: arguments {members} share memory but have different dtypes "
            f"({', '.join(str(x.dtype) for x in xs)}); pass copies")
    itemsize = xs[0].itemsize
    lo = min(byte_bounds(x)[0] for x in xs)
    hi = max(byte_bounds(x)[1] for x in xs)
    what = f"{fname}: argument {members}"
    out = [InputLayout(g, _elem(x.__array_interface__["data"][0] - lo, itemsize, what),
                       tuple(_elem(s, itemsize, what) for s in x.strides)) for x in xs]
    return out, _elem(hi - lo, itemsize, what)


@dataclass(eq=False)
class GroupRoot:
    """The shared buffer of trace inputs that overlap (a root without a var)."""

    size: int


def tracer_plan(leaves, views_of) -> Plan | None:
    """The plan of traced arguments: tracers that are views of one value share memory.

    ``views_of(var)`` gives ``(root var, Layout)`` for a var of the current trace.
    """
    roots: dict[int, list] = {}
    for i, x in enumerate(leaves):
        if isinstance(x, Tracer):
            root, lay = views_of(x._var)
            roots.setdefault(id(root), [root, []])[1].append((i, lay))
    entries: list[InputLayout | None] = [None] * len(leaves)
    sizes = []
    for root, members in roots.values():
        if len(members) == 1:
            i, lay = members[0]
            if lay.strides != c_strides(leaves[i].shape) and leaves[i].size:
                entries[i] = InputLayout(None, 0, lay.strides)
            continue
        if any(lay.offset is None for _, lay in members):
            raise NotImplementedError(
                f"arguments {[i for i, _ in members]} are views of one array, one of them at "
                "a traced offset (dynamic_slice); functionalize cannot tell how they overlap")
        for i, lay in members:
            entries[i] = InputLayout(len(sizes), lay.offset, lay.strides)
        sizes.append(root.size if isinstance(root, GroupRoot) else max(root.aval.size, 1))
    if all(e is None for e in entries):
        return None
    return Plan(tuple(entries), tuple(sizes))


def positions(shape, lay: InputLayout) -> np.ndarray:
    """The element positions of an input inside its group's root buffer."""
    pos = np.full(shape, lay.offset, dtype=np.int64)
    for axis, (d, s) in enumerate(zip(shape, lay.strides, strict=True)):
        pos += (np.arange(d, dtype=np.int64) * s).reshape([-1 if a == axis else 1
                                                            for a in range(len(shape))])
    return pos
