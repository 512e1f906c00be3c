"""``functionalize``: rewrite a graph with mutation and views into a pure graph.

The raw trace records NumPy's semantics faithfully: ``y = x[1:]`` is a view
of ``x`` and ``y += 1`` (a ``setitem``) changes ``x`` too. The pass walks the
equations once, in order, keeping for every value

- its *root*: the buffer it lives in (a graph input, the output of a non-view
  primitive, a constant, or a shared buffer for arguments that overlap), and
  the chain of view steps from the root to it;
- for every root, its current value in the new graph and a version number.

A write computes the new value of the written view with pure primitives
(``dynamic_update_slice``, ``pad``/``select``, ``scatter``), carries it back
up the chain to the root, and bumps the root's version. Reading a value whose
root has moved on replays its view chain on the root's current value. So a
write through any alias is seen by every alias and every later read, and
equation order is the only order that matters.

Views are the outputs of ``slice``, ``dynamic_slice``, ``transpose``,
``squeeze``, ``expand_dims``, ``rev``, ``real``/``imag`` of complex values
(read-only here) and ``reshape`` where NumPy's reshape would not copy (see
``_alias``). Everything else, ``broadcast_in_dim`` included (``fnp.zeros``
builds fresh buffers with it), makes a new buffer, and integer-array
indexing (``gather``) copies. NumPy's ``diagonal`` returns a read-only view: the
tracer is marked (``ir.mark_read_only``) and a write into it, or into a view of it,
raises while tracing. Known gap: ``broadcast_to``'s result is a fresh buffer here, so a
write into it is not refused (NumPy's is a read-only view).

Every transform writes the final values of mutated arguments back into the
caller's arrays after a successful call: ``jit`` and ``functionalize`` here and
in ``api.py``, ``grad``/``vjp``/``jvp``/``vmap`` and the transforms built on them
through ``common.run_writing`` (the written values are primal: no tangent flows
through a write-back). Under an enclosing trace the write-back is recorded as a
whole-array ``setitem`` into the enclosing trace's value, which that trace's own
functionalization carries out in turn.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from functorch_core.backends import devices
from functorch_core.ir import Graph, Lit, Primitive, Tracer, Var, current_trace, passes, trace_flat
from functorch_core.ir import primitives as P
from functorch_core.ir.core import on_device
from functorch_core.ir.source import code_at
from functorch_core.ir.tables import Table
from functorch_core.ir.updates import apply_step, pure_setitem, scalar, unview

from ._alias import (
    READ_ONLY,
    VIEWS,
    GroupRoot,
    InputLayout,
    Layout,
    Plan,
    array_plan,
    c_strides,
    fresh,
    positions,
    tracer_plan,
    view_layout,
)


class _State:
    """Roots, view chains and current values of the raw graph's values (keyed by id)."""

    def __init__(self):
        self.parent: dict[int, tuple] = {}     # view -> (parent atom, step)
        self.root: dict[int, int] = {}         # value -> root key
        self.layout: dict[int, Layout] = {}
        self.read_only: dict[int, object] = {}  # value -> error factory for writes
        self.cur: dict[int, object] = {}       # root key -> its current value
        self.version: dict[int, int] = {}
        self.const: set[int] = set()           # roots that are literals
        self.cache: dict[int, tuple] = {}      # view -> (root version, value)

    def new_root(self, key_atom, value, layout=None):
        k = id(key_atom)
        self.root[k], self.cur[k], self.version[k] = k, value, 0
        self.layout[k] = layout or fresh(key_atom.aval.shape)

    def _know(self, atom):
        if isinstance(atom, Lit) and id(atom) not in self.root:
            self.new_root(atom, atom)
            self.const.add(id(atom))

    def add_view(self, out, parent, step, layout):
        k = id(out)
        self.parent[k] = (parent, step)
        self.root[k] = self.root[id(parent)]
        self.layout[k] = layout
        if id(parent) in self.read_only:
            self.read_only[k] = self.read_only[id(parent)]

    def read(self, atom):
        """The current value of a raw-graph value, replaying its view chain if needed."""
        if isinstance(atom, Lit):
            return atom
        r = self.root[id(atom)]
        version = self.version[r]
        path, node = [], atom
        while id(node) in self.parent:
            hit = self.cache.get(id(node))
            if hit is not None and hit[0] == version:
                value = hit[1]
                break
            path.append(node)
            node = self.parent[id(node)][0]
        else:
            value = self.cur[r]
        for node in reversed(path):
            value = apply_step(self.parent[id(node)][1], value)
            self.cache[id(node)] = (version, value)
        return value

    def write(self, atom, new_value, eqn):
        """Make ``new_value`` the value of ``atom``; every alias sees it from now on."""
        k = id(atom)
        if k in self.read_only:
            raise self.read_only[k]()
        self._know(atom)
        r = self.root[k]
        if r in self.const:
            av = self.cur[r].aval
            raise NotImplementedError(
                f"{eqn.prim.name} at {eqn.source}{code_at(eqn.source)} writes into a "
                "constant of the graph: a "
                f"concrete NumPy array ({av.dtype}{list(av.shape)}) the function reads as a "
                "global or closes over, or a view of one (reaching the write through an "
                "inner jit call, say); functionalize cannot write back into it. Pass the "
                "array as an argument of the outermost transformed function instead")
        node, value = atom, new_value
        while id(node) in self.parent:
            parent, step = self.parent[id(node)]
            value = unview(step, self.read(parent), value)
            node = parent
        self.cur[r] = value
        self.version[r] += 1
        if k in self.parent:
            self.cache[k] = (self.version[r], new_value)

    def mutated(self, atom) -> bool:
        return self.version[self.root[id(atom)]] > 0


# --- the equations ------------------------------------------------------------

def _setitem_rule(st, eqn):
    x, value, *arrays = eqn.inputs
    current = st.read(x)
    try:
        new = pure_setitem(current, st.read(value), [st.read(a) for a in arrays],
                           eqn.params["indexer"])
    except (ValueError, IndexError, TypeError) as err:
        raise type(err)(f"{err.args[0] if err.args else err} (setitem at {eqn.source})") \
            from None
    st.write(x, new, eqn)


MUTATION_RULES: Table[Primitive, Callable] = Table("mutations", [(P.setitem, _setitem_rule)])


def _view_rule(st, eqn):
    x = eqn.inputs[0]
    st._know(x)
    out_layout = view_layout(eqn.prim, st.layout[id(x)], x.aval, eqn.params)
    if out_layout is None:
        return False
    extra = tuple(st.read(a) for a in eqn.inputs[1:])   # start indices, fixed at creation
    st.add_view(eqn.outputs[0], x, (eqn.prim, extra, dict(eqn.params)), out_layout)
    if eqn.prim in READ_ONLY:
        st.read_only[id(eqn.outputs[0])] = READ_ONLY[eqn.prim]
    return True


def _generic_rule(st, eqn):
    outs = eqn.prim.bind(*(st.read(a) for a in eqn.inputs), **eqn.params)
    outs = outs if eqn.prim.multiple_results else [outs]
    for v, o in zip(eqn.outputs, outs, strict=True):
        st.new_root(v, o)


def _run_eqn(st, eqn):
    rule = MUTATION_RULES.get(eqn.prim)
    if rule is not None:
        return rule(st, eqn)
    if eqn.prim.mutates:
        raise NotImplementedError(f"functionalize has no rule for the mutation primitive "
                                  f"{eqn.prim.name} (at {eqn.source})")
    if eqn.prim in VIEWS and _view_rule(st, eqn):
        return None
    return _generic_rule(st, eqn)


def _bind_inputs(st, graph, xs, plan: Plan | None):
    entries = plan.inputs if plan is not None else ()
    entries = tuple(entries) + (None,) * (len(graph.inputs) - len(entries))
    groups: dict[int, Var] = {}
    for v, x, e in zip(graph.inputs, xs, entries, strict=True):
        if e is None or e.group is None:
            st.new_root(v, x, None if e is None else Layout(0, e.strides))
            continue
        if e.group not in groups:
            size = plan.group_sizes[e.group]
            groups[e.group] = root = Var(v.aval.update(shape=(size,), weak_type=False))
            st.new_root(root, P.broadcast_in_dim.bind(scalar(0, v.aval.dtype), shape=(size,),
                                                      broadcast_dimensions=()))
        root = groups[e.group]
        pos = Lit(positions(v.aval.shape, e)[..., None])
        st.cur[id(root)] = P.scatter.bind(st.cur[id(root)], pos, x, axes=(0,))
        st.add_view(v, root, (P.gather, (pos,), {"axes": (0,)}), Layout(e.offset, e.strides))


def functionalize_graph(graph: Graph, plan: Plan | None = None):
    """Rewrite ``graph`` into a graph with no mutation.

    Returns ``(new_graph, mutated)``: the new graph's outputs are the old ones
    followed by the final value of every input in ``mutated`` (input indices,
    in order), which a caller writes back. ``plan`` says how inputs overlap
    (see ``_alias.array_plan``); None means distinct C-contiguous inputs.
    """
    graph = passes.inline(graph)
    if plan is not None and plan.error and has_mutation(graph):
        raise NotImplementedError(plan.error)
    mutated_cell: list[list[int]] = []

    def body(*xs):
        st = _State()
        _bind_inputs(st, graph, xs, plan)
        for eqn in graph.eqns:
            _run_eqn(st, eqn)
        outs = [st.read(o) for o in graph.outputs]
        mutated = [i for i, v in enumerate(graph.inputs) if st.mutated(v)]
        mutated_cell.append(mutated)
        return outs + [st.read(graph.inputs[i]) for i in mutated]

    new, captured = trace_flat(body, graph.in_avals, name="functionalize")
    if captured:   # the raw graph is closed, so nothing from outside can appear
        raise AssertionError("functionalize_graph captured outer values")
    return passes.dce(new), mutated_cell[0]


def has_mutation(graph: Graph) -> bool:
    return any(e.prim.mutates or (e.prim is P.call and has_mutation(e.params["graph"]))
               for e in graph.eqns)


# --- call-time aliasing -------------------------------------------------------

def views_in_current_trace():
    """``var -> (root, Layout)`` over the equations recorded so far in the current trace."""
    trace = current_trace()
    info: dict[int, tuple] = {}
    if trace is not None:
        _seed_inputs(info, trace)
        for eqn in trace.eqns:
            if eqn.prim not in VIEWS or isinstance(eqn.inputs[0], Lit):
                continue
            x = eqn.inputs[0]
            root, lay = info.get(id(x), (x, fresh(x.aval.shape)))
            out = view_layout(eqn.prim, lay, x.aval, eqn.params)
            if out is not None:
                info[id(eqn.outputs[0])] = (root, out)
    return lambda var: info.get(id(var), (var, fresh(var.aval.shape)))


def _seed_inputs(info, trace):
    """Inputs of a trace started by ``with_plan`` sit where the caller's arrays sit."""
    plan = getattr(trace, "input_plan", None)
    if plan is None or plan.error:
        return
    groups = [GroupRoot(n) for n in plan.group_sizes]
    for var, e in zip(trace.inputs, plan.inputs, strict=False):
        if e is not None:
            root = var if e.group is None else groups[e.group]
            info[id(var)] = (root, Layout(e.offset, e.strides))


def with_plan(func, plan):
    """``func``, recording in the trace that runs it how its argument leaves overlap.

    A ``functionalize`` nested in the trace (``jit(functionalize(f))``) then
    sees the caller's aliasing, not just distinct inputs.
    """
    if plan is None:
        return func

    @functools.wraps(func)
    def run(*args, **kwargs):
        current_trace().input_plan = plan
        return func(*args, **kwargs)
    return run


def is_c_contiguous(tracer) -> bool:
    """Whether a tracer of the current trace is C-contiguous, as far as the trace shows.

    Graph inputs count as C-contiguous. ``fnp.ravel`` asks, because NumPy's ravel
    returns a view only of a C-contiguous array where reshape would view more.
    """
    if tracer._trace is not current_trace():
        return True
    lay = views_in_current_trace()(tracer._var)[1]
    return all(s == c for s, c, d in zip(lay.strides, c_strides(tracer.shape), tracer.shape,
                                         strict=True) if d > 1)


def reshape_is_view(tracer, shape) -> bool:
    """Whether NumPy would reshape the array ``tracer`` (of the current trace) stands for to
    ``shape`` without a copy, as far as the trace shows (``x.shape = shape`` needs that)."""
    if tracer._trace is not current_trace():
        return True
    lay = views_in_current_trace()(tracer._var)[1]
    return view_layout(P.reshape, lay, tracer.aval, {"new_sizes": tuple(shape)}) is not None


def input_plan(leaves, fname) -> Plan | None:
    """How the argument leaves overlap in memory (part of every cache key)."""
    try:
        if any(isinstance(x, Tracer) for x in leaves):
            return tracer_plan(leaves, views_in_current_trace())
        return array_plan(leaves, fname)
    except NotImplementedError as err:   # matters only if the function writes
        return Plan((), (), error=str(err))


# --- write-back -----------------------------------------------------------------

def check_writable(targets, mutated, fname, scalars="refuse"):
    """Refuse before running, so that a failing call writes nothing; returns the entries
    of ``mutated`` to write back.

    A read-only array is refused. A Python or NumPy scalar cannot change in place:
    ``scalars='refuse'`` (jit, functionalize) refuses a write into one and into a
    device array; ``'rebind'`` (grad, vmap...) leaves a scalar out, as eager Python
    rebinds the name and leaves the caller's value alone, and writes device arrays.
    """
    keep = []
    for i in mutated:
        t = targets[i]
        if isinstance(t, Tracer) or (scalars == "rebind" and on_device(t)):
            keep.append(i)
            continue
        if not isinstance(t, np.ndarray):
            if scalars == "rebind" and isinstance(t, bool | int | float | complex | np.generic):
                continue
            raise TypeError(f"{fname} writes into argument leaf {i}, a {type(t).__name__}, "
                            "which cannot be changed in place; pass a NumPy array")
        if not t.flags.writeable:
            raise ValueError(f"assignment destination is read-only ({fname} writes into "
                             f"argument leaf {i} of shape {t.shape})")
        keep.append(i)
    return keep


def write_back(targets, mutated, finals):
    """Apply the final values of mutated inputs: ``np.copyto``, a copy on the device, or,
    under a trace, one whole-array ``setitem`` recorded into it (the enclosing transform
    writes back in turn)."""
    for i, value in zip(mutated, finals, strict=True):
        t = targets[i]
        if isinstance(t, Tracer) or isinstance(value, Tracer):
            full = tuple(("slice", 0, d, 1) for d in t.shape)
            P.setitem.bind(t, value, indexer=full)
        elif on_device(t):
            devices.copy_into(t, value)
        else:
            np.copyto(t, value, casting="unsafe")


__all__ = ["InputLayout", "functionalize_graph", "has_mutation", "input_plan"]
