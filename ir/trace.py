"""Tracing: the current trace, tracers, ``bind``, tracing a function into a graph, replay.

There is one notion of "where equations go": the current ``GraphTrace`` (a
``contextvars`` value with a parent pointer). A tracer of an enclosing trace
that reaches an inner trace is captured as an extra input of the inner graph;
replaying that graph passes the outer tracer back in.
"""

from __future__ import annotations

import contextvars

import numpy as np

from . import eager
from .core import AbstractArray, Eqn, Graph, Lit, ShapeTooLargeError, Var, aval_of, on_device
from .source import user_code, user_source

CURRENT_TRACE: contextvars.ContextVar[GraphTrace | None] = contextvars.ContextVar(
    "functorch_core_trace", default=None)


class TracerError(TypeError):
    """A traced value was used where a concrete value is needed, or after its trace ended."""


class GraphTrace:
    """Records equations into a graph under construction."""

    def __init__(self, parent: GraphTrace | None, name: str = "function"):
        self.parent = parent
        self.name = name
        self.inputs: list[Var] = []
        self.eqns: list[Eqn] = []
        self.captures: dict[int, tuple[Tracer, Var]] = {}
        self.alive = True

    def is_ancestor_of(self, other: GraphTrace | None) -> bool:
        while other is not None:
            if other is self:
                return True
            other = other.parent
        return False

    def new_input(self, aval: AbstractArray, hint=None) -> Tracer:
        var = Var(aval, hint)
        self.inputs.append(var)
        return Tracer(self, var)

    def to_atom(self, value) -> Var | Lit:
        if isinstance(value, Tracer):
            if value._trace is self:
                return value._var
            if value._trace.alive and value._trace.is_ancestor_of(self.parent):
                entry = self.captures.get(id(value))
                if entry is None:
                    entry = self.captures[id(value)] = (value, Var(value.aval))
                return entry[1]
            raise escaped_error(value)
        if isinstance(value, Lit):
            return value
        if on_device(value):    # a graph's constants live on the host: one copy back
            value = value.get()
        return Lit(value)


class Tracer:
    """A value being traced: an abstract array standing for a concrete one.

    Its NumPy surface (operators, methods, ``__array_ufunc__``...) is installed
    by ``functorch_core.numpy``; this class keeps only what is not NumPy's.
    """

    __slots__ = ("__weakref__", "_read_only", "_source", "_trace", "_var")
    __array_priority__ = 1000

    def __init__(self, trace: GraphTrace, var: Var):
        self._trace = trace
        self._var = var
        self._source = None
        self._read_only = None      # what made it a read-only view (see mark_read_only)

    @classmethod
    def install_methods(cls, methods: dict):
        """Fill the method table (called once by ``functorch_core.numpy``)."""
        for name, fn in methods.items():
            setattr(cls, name, fn)

    @property
    def aval(self) -> AbstractArray:
        return self._var.aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    def __len__(self):
        if not self.ndim:
            raise TypeError("len() of unsized object (a traced 0-d array)")
        return self.shape[0]

    def __repr__(self):
        return f"Traced<{self.aval}>"

    __hash__ = None

    def _concrete(self, what, hint):
        raise TracerError(
            f"{what} needs the value of a traced array {self.aval} at {user_source()}"
            f"{user_code()}, but its value is not known while tracing. {hint}")

    def __bool__(self):
        self._concrete("bool() (a Python `if`, `while`, `and`/`or` or assert on data)",
                       "Use fnp.where(cond, x, y) to choose elementwise, functorch_core.lax.cond "
                       "(fc.cond), fc.switch, fc.while_loop or fc.fori_loop for data-dependent "
                       "control flow, or pass the value as a static argument (static_argnums).")

    def __int__(self):
        self._concrete("int(x)", _SCALAR_HINT)

    def __float__(self):
        self._concrete("float(x)", _SCALAR_HINT)

    def __complex__(self):
        self._concrete("complex(x)", _SCALAR_HINT)

    def __index__(self):
        self._concrete("Using it as a Python int (__index__: a shape, a length, a range() "
                       "bound or an index)", _SHAPE_HINT + " To index, use the traced array "
                       "directly (x[i] with i an array).")

    def __array__(self, dtype=None, copy=None):
        self._concrete("np.asarray()/np.array() (conversion to a concrete NumPy array)",
                       "Use functorch_core.numpy (fnp) functions, or NumPy functions that "
                       "dispatch on traced arrays, instead of converting to a NumPy array. "
                       "If it is a length or a shape (np.arange(n), np.zeros(n)), note: "
                       + _SHAPE_HINT[0].lower() + _SHAPE_HINT[1:])

    def tolist(self):
        self._concrete("x.tolist()", _SCALAR_HINT)

    def item(self, *args):
        self._concrete("x.item()", _SCALAR_HINT)


_SCALAR_HINT = (
    "The value is traced (an abstract array: jit, grad, vmap... run the function on "
    "placeholders). Keep it an array and return it from the function (convert the result "
    "outside), use fnp.where(cond, x, y) or functorch_core.lax.cond (fc.cond) for a "
    "decision on it, or pass it as a static argument (static_argnums).")

_SHAPE_HINT = (
    "Shapes and lengths must be concrete Python ints while tracing: under jit, mark the "
    "argument it comes from static (jit(f, static_argnums=...) or static_argnames=...), "
    "or take it from an input's shape (x.shape[0] is a Python int while tracing).")


def escaped_error(t: Tracer) -> TracerError:
    where = f" It was created at {t._source}." if t._source else ""
    return TracerError(
        f"A traced value {t.aval} from a function that has finished tracing was used at "
        f"{user_source()}.{where} It escaped its trace (kept in a global, a closure or an "
        "attribute and used after the call). Return it from the function instead.")


def current_trace() -> GraphTrace | None:
    return CURRENT_TRACE.get()


def _with_source(err: Exception, prim, source, trace=None) -> Exception:
    msg = str(err.args[0]) if err.args else str(err)
    if source not in msg:
        where = f" while tracing {trace.name}" if trace is not None else ""
        msg = f"{msg} (in {prim.name} at {source}{where})"
    return type(err)(msg)


# Views of a read-only view are read-only, as in NumPy (a reshape is left out: NumPy's
# copies a strided view, and the copy is writable).
_VIEWS_KEEPING_READ_ONLY = frozenset({"slice", "dynamic_slice", "transpose", "squeeze",
                                      "expand_dims", "rev", "real", "imag"})


def mark_read_only(t, why: str):
    """Make the tracer ``t`` a read-only view, as NumPy's ``why`` (``'numpy.diagonal'``)
    returns one: a write into it, or into a view of it, raises NumPy's ValueError while
    tracing. Returns ``t``; anything but a tracer is returned as is."""
    if isinstance(t, Tracer):
        t._read_only = why
    return t


def _read_only_error(prim, target: Tracer, source, trace) -> ValueError:
    return ValueError(f"assignment destination is read-only: {prim.name} at {source} while "
                      f"tracing {trace.name} writes into the result of {target._read_only} "
                      "(a read-only view in NumPy too); write into a copy (.copy()) instead")


def bind(prim, *args, **params):
    """Apply a primitive: record it into the current trace, or run it eagerly."""
    trace = CURRENT_TRACE.get()
    if trace is None:
        return _bind_eager(prim, args, params)
    atoms = [trace.to_atom(a) for a in args]
    source = user_source()
    read_only = args and isinstance(args[0], Tracer) and args[0]._read_only
    if read_only and prim.mutates:
        raise _read_only_error(prim, args[0], source, trace)
    try:
        avals = prim.shape_rule(*(a.aval for a in atoms), **params)
    except ShapeTooLargeError as err:
        raise _with_source(err, prim, source, trace) from None
    except (ValueError, TypeError) as err:
        raise _with_source(err, prim, source) from None
    outs = tuple(Var(av) for av in avals)
    trace.eqns.append(Eqn(prim, tuple(atoms), outs, params, source))
    tracers = [Tracer(trace, v) for v in outs]
    for t in tracers:
        t._source = source
    if read_only and prim.name in _VIEWS_KEEPING_READ_ONLY:
        tracers[0]._read_only = read_only
    return tracers if prim.multiple_results else tracers[0]


_host_get = eager.HOST.get


def _bind_eager(prim, args, params):
    values = []
    for a in args:
        if isinstance(a, Tracer):
            raise escaped_error(a)
        values.append(a.value if isinstance(a, Lit) else a)
    in_avals = [a.aval if isinstance(a, Lit) else aval_of(a) for a in args]
    try:
        avals = prim.shape_rule(*in_avals, **params)
    except (ValueError, TypeError) as err:
        raise _with_source(err, prim, user_source()) from None
    if eager.DEVICE is not None and any(on_device(v) for v in values):
        return eager.DEVICE(prim, args, values, in_avals, avals, params)
    impl = prim.impl or _host_get(prim)
    if impl is None:
        raise NotImplementedError(f"primitive {prim.name} has no eager implementation")
    out = impl(*values, **params)
    outs = out if prim.multiple_results else [out]
    fixed = [o if isinstance(o, np.ndarray) and o.dtype == av.dtype and o.shape == av.shape
             else np.asarray(o, dtype=av.dtype).reshape(av.shape)
             for o, av in zip(outs, avals, strict=True)]
    return fixed if prim.multiple_results else fixed[0]


def trace_flat(fn, in_avals, *, name="function"):
    """Trace ``fn(*tracers) -> list of outputs`` into a closed Graph.

    Returns ``(graph, captured)``: the graph's inputs are the ``in_avals``
    followed by one input per captured outer tracer, listed in ``captured``.
    """
    trace = GraphTrace(CURRENT_TRACE.get(), name)
    in_tracers = [trace.new_input(av) for av in in_avals]
    token = CURRENT_TRACE.set(trace)
    try:
        outs = fn(*in_tracers)
        out_atoms = [trace.to_atom(o) for o in outs]
    finally:
        CURRENT_TRACE.reset(token)
        trace.alive = False
    captured = [t for t, _ in trace.captures.values()]
    graph = Graph(trace.inputs + [v for _, v in trace.captures.values()], trace.eqns, out_atoms)
    return graph, captured


def eval_graph(graph: Graph, args):
    """Replay ``graph`` on ``args``: eagerly on arrays, or into the current trace."""
    if len(args) != len(graph.inputs):
        raise TypeError(f"graph takes {len(graph.inputs)} inputs, got {len(args)}")
    env = {id(v): a.astype(v.aval.dtype) if isinstance(a, np.ndarray) and not a.dtype.isnative
           else a for v, a in zip(graph.inputs, args, strict=True)}   # >f8 -> f8: a copy

    def read(atom):
        return atom if isinstance(atom, Lit) else env[id(atom)]

    for eqn in graph.eqns:
        outs = bind(eqn.prim, *map(read, eqn.inputs), **eqn.params)
        if not eqn.prim.multiple_results:
            outs = [outs]
        for v, o in zip(eqn.outputs, outs, strict=True):
            env[id(v)] = o
    outs, seen = [_unlit(read(o)) for o in graph.outputs], set()
    for i, o in enumerate(outs):
        if isinstance(o, np.ndarray):
            if id(o) in seen:   # one var returned twice (grad of a + b): two arrays, or a
                outs[i] = o.copy()   # module gradient's named_parameters() drops one
            seen.add(id(o))
    return outs


def _unlit(x):
    # A copy: a literal's array may be the user's closed-over array.
    return x.value.copy() if isinstance(x, Lit) else x
