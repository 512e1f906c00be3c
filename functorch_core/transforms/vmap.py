"""``vmap``: vectorize a per-example function over a batch axis of its arguments."""

from __future__ import annotations

import contextlib
import functools
import operator
import weakref

import numpy as np

from functorch_core.backends import devices
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Var, on_device
from functorch_core.ir.pytree import tree_flatten, tree_unflatten
from functorch_core.ir.trace import Tracer

from .. import random
from .._internal import axis_env
from .._internal.random_scope import FRESH_KEY, Scope, current_scope, fill
from .._internal.tracing import flat_args, fn_name, leaf_aval
from .batching import BatchedOutputError, batch_graph
from .common import Transformed, cached, run_transformed, signature, trace_for_transform
from .functionalize import check_writable, write_back

_UNSET = object()
_RANDOMNESS = ("error", "different", "same")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None,
         in_axes=_UNSET, out_axes=_UNSET, axis_name=None):
    """Vectorize ``func`` over a batch axis of its inputs.

    ``vmap(func)(xs)`` computes ``func`` on every slice of ``xs`` along the batch
    axis and stacks the results, as ``np.stack([func(x) for x in xs])`` would,
    but with one traced program over the whole batch instead of a Python loop.
    ``func`` is traced once per input signature with the batch axis removed;
    the batching pass rewrites its graph; the result runs on the arguments (or
    records into an enclosing transform: ``vmap`` composes with ``grad``,
    ``jit`` and itself).

    Args:
        func: a function of arrays (pytrees of arrays and Python scalars),
            written with NumPy or ``functorch_core.numpy``, returning arrays or
            pytrees of arrays (or scalars).
        in_dims (int, None or pytree, default ``0``): the batch axis of each
            positional argument. An int (negative counts from the end) or None
            applies to every argument; a tuple gives one entry per positional
            argument, and each entry may itself be a pytree prefix of that
            argument (an entry applies to a whole subtree). ``None`` marks an
            argument that is the same for every example. Keyword arguments are
            never batched.
        out_dims (int, None or pytree, default ``0``): where the batch axis goes
            in each output, with the same prefix rules. ``None`` requires the
            output not to depend on the batched inputs; an output that does not
            depend on them but has an int out_dim is broadcast along the batch.
        randomness (str, default ``'error'``): what a draw from the global
            random generator inside ``func`` (``functorch_core.random.next_key``,
            used by stateful modules such as Dropout) does, as in torch.func:
            ``'error'`` raises, ``'same'`` gives every batch element the same
            numbers, ``'different'`` independent numbers per element. Either way
            each call draws fresh keys. Functions of explicit keys
            (``random.uniform(key, ...)``) do not depend on it: a batched key gives
            per-element numbers, an unbatched one the same numbers. Inside ``jit``
            the fresh keys come from the enclosing jit's key inputs.
        chunk_size (int or None, default ``None``): with an int, the batch is
            split into chunks of this many examples (the last may be smaller),
            run one after the other, and the results are concatenated; this
            bounds memory (of jacobians, for instance). ``None`` runs the whole
            batch at once.
        in_axes, out_axes: keyword aliases of ``in_dims``/``out_dims`` (JAX spelling).
        axis_name (str or None, default ``None``): a name for the batch axis, as in JAX:
            inside ``func`` the collectives of ``functorch_core.lax`` (``psum``,
            ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``,
            ``axis_index``) given this name act across the examples of the batch
            (``psum(x, "i")`` is the sum over the batch, the same for every example).
            Nested vmaps bind different names; ``"world"`` is reserved for the process
            axis (``functorch_core.distributed.WORLD``). Not with ``chunk_size``.

    Writes ``func`` makes into its arguments (``b[0] = x.sum()``, BatchNorm's running
    statistics) reach the caller's arrays after the call: each example's slice of a
    batched argument, as a loop over the examples would leave it. A write into an
    unbatched argument (in_dims ``None``) of a value that is the same for every example
    is applied once; of a value that differs across the batch it is an error, since the
    argument is shared by the whole batch.

    Returns:
        A function with ``func``'s signature that takes batched arguments and
        returns batched outputs.

    Example::

        >>> dot = lambda a, b: np.sum(a * b)
        >>> vmap(dot)(np.ones((3, 4)), np.ones((3, 4)))           # 3 dot products
        array([4., 4., 4.])
        >>> vmap(dot, in_dims=(0, None))(np.ones((3, 4)), np.ones(4))
        array([4., 4., 4.])
        >>> vmap(lambda x: {"twice": 2 * x}, out_dims={"twice": 1})(np.ones((3, 2)))["twice"].shape
        (2, 3)
        >>> vmap(vmap(np.outer))(np.ones((5, 2, 3)), np.ones((5, 2, 4))).shape
        (5, 2, 3, 4)
        >>> vmap(lambda x: x / fc.lax.psum(x, "i"), axis_name="i")(np.array([1., 3.]))
        array([0.25, 0.75])
    """
    in_dims = _alias(in_dims, in_axes, "in_dims", "in_axes")
    out_dims = _alias(out_dims, out_axes, "out_dims", "out_axes")
    fname = fn_name(func)
    if randomness not in _RANDOMNESS:
        raise ValueError(f"vmap({fname}): randomness must be one of {_RANDOMNESS}, "
                         f"got {randomness!r}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or _as_int(chunk_size) is None
                                   or chunk_size < 1):
        raise ValueError(f"vmap({fname}): chunk_size must be None or a positive int, "
                         f"got {chunk_size!r}")
    if axis_name is not None:
        axis_env.check_name(axis_name, f"vmap({fname})")
        if chunk_size is not None:
            raise ValueError(f"vmap({fname}): chunk_size={chunk_size!r} with "
                             f"axis_name={axis_name!r}: a collective over the axis would see "
                             "one chunk of the batch only; drop chunk_size")
    if isinstance(in_dims, list):
        in_dims = tuple(in_dims)
    spec = _Spec(fname, in_dims, out_dims, chunk_size)
    spec.randomness, spec.axis_name = randomness, axis_name

    @functools.wraps(func)
    def batched(*args, **kwargs):
        return _call(func, spec, args, kwargs)
    spec.owner = func if _weakrefable(func) else batched   # NumPy's C functions are not
    return batched


def _weakrefable(fn) -> bool:
    try:
        weakref.ref(fn)
    except TypeError:
        return False
    return True


def _alias(value, alias, name, alias_name):
    if alias is _UNSET:
        return value
    if value != 0:
        raise TypeError(f"vmap: pass {name} or {alias_name}, not both")
    return alias


def _as_int(d):
    if isinstance(d, bool):
        return None
    try:
        return operator.index(d)
    except TypeError:
        return None


class _Spec:
    """The validated options of one ``vmap(func, ...)``."""

    def __init__(self, fname, in_dims, out_dims, chunk_size):
        self.fname, self.call, self.owner = fname, f"vmap({fname})", None
        self.in_dims, self.out_dims, self.chunk_size = in_dims, out_dims, chunk_size
        self.out_key = _dims_key(out_dims, "out_dims", self.call)
        _dims_key(in_dims, "in_dims", self.call)


def _dims_key(dims, what, call):
    leaves, tree = tree_flatten(dims, is_leaf=lambda x: x is None)
    for d in leaves:
        if d is not None and _as_int(d) is None:
            raise TypeError(f"{call}: {what} must be an int, None, or a pytree of ints and "
                            f"None matching the {'arguments' if what == 'in_dims' else 'outputs'}"
                            f", got {what}={dims!r} (with a {type(d).__name__} in it)")
    return tree, tuple(d if d is None else _as_int(d) for d in leaves)


# --- matching dims to leaves -----------------------------------------------------------

def _leaf_keys(treedef):
    """The key path of every leaf of ``treedef``, in leaf order."""
    out, stack = [], [(treedef, ())]
    while stack:
        t, keys = stack.pop()
        if t.node is None:
            out.append(keys)
            continue
        names = t.aux if t.node is dict else range(len(t.children))
        stack.extend((c, (*keys, k)) for k, c in reversed(list(zip(names, t.children,
                                                                    strict=True))))
    return out


def _broadcast_prefix(prefix, tree, what, whose, call):
    """``[(entry of prefix, key path)]``, one per leaf of ``tree``."""
    pleaves, pdef = tree_flatten(prefix, is_leaf=lambda x: x is None)
    tdef = tree_flatten(tree)[1]
    entries = iter(pleaves)
    out, stack = [], [(pdef, tdef, ())]
    while stack:
        p, t, keys = stack.pop()
        if p.node is None:
            d = next(entries)
            out.extend((d, (*keys, *sub)) for sub in _leaf_keys(t))
            continue
        if (p.node, p.aux, len(p.children)) != (t.node, t.aux, len(t.children)):
            raise ValueError(f"{call}: {what}={prefix!r} does not match the structure of "
                             f"{whose}: {what} has structure {pdef} but {whose} have "
                             f"structure {tdef}")
        names = t.aux if t.node is dict else range(len(t.children))
        stack.extend((pc, tc, (*keys, k)) for k, pc, tc in reversed(list(zip(
            names, p.children, t.children, strict=True))))
    return out


def _path(kind, keys):
    if kind == "argument":
        return f"argument {keys[0]}" + "".join(f"[{k!r}]" for k in keys[1:])
    return "output" + "".join(f"[{k!r}]" for k in keys)


def _normalize(d, ndim, call, what, spec_value, where, shape):
    if d is None:
        return None
    d = _as_int(d)
    if not -ndim <= d < ndim:
        if ndim == 0:
            raise ValueError(f"{call}: {what}={spec_value!r} asks to batch {where}, which is a "
                             "scalar (shape ()); give it a None entry")
        raise ValueError(f"{call}: {what}={spec_value!r} gives axis {d} for {where} of "
                         f"rank {ndim} (shape {shape}); it must be in [{-ndim}, {ndim - 1}]")
    return d % ndim


def _in_dims(spec, args):
    """Per leaf of ``args``: (batch axis or None, aval, path), and the batch size."""
    call = spec.call
    matched = _broadcast_prefix(spec.in_dims, tuple(args), "in_dims",
                                "the positional arguments", call)
    leaves = tree_flatten(tuple(args))[0]
    out = []
    for x, (d, keys) in zip(leaves, matched, strict=True):
        where = _path("argument", keys)
        aval = leaf_aval(x, f"{where} of {call}")
        out.append((_normalize(d, aval.ndim, call, "in_dims", spec.in_dims, where, aval.shape),
                    aval, where))
    batched = [(d, aval, where) for d, aval, where in out if d is not None]
    if not batched:
        raise ValueError(f"{call}: at least one argument must be batched (in_dims are all "
                         f"None{'' if leaves else '; no array arguments were passed'})")
    d0, a0, w0 = batched[0]
    for d, aval, where in batched[1:]:
        if aval.shape[d] != a0.shape[d0]:
            raise ValueError(f"{call}: in_dims={spec.in_dims!r} gives batch sizes "
                             f"{a0.shape[d0]} for {w0} (shape {a0.shape}) and "
                             f"{aval.shape[d]} for {where} (shape {aval.shape})")
    return out, a0.shape[d0]


# --- running ----------------------------------------------------------------------------

def _call(func, spec, args, kwargs):
    dims, size = _in_dims(spec, args)
    chunk = spec.chunk_size
    if chunk is None or chunk >= size:
        outs, out_tree, _, writes = _run(func, spec, args, kwargs, dims, size)
        if writes:
            write_back(_targets(args, kwargs), *writes)
        return tree_unflatten(out_tree, outs)
    arg_leaves, arg_tree = tree_flatten(tuple(args))
    pieces = []
    for start in range(0, size, chunk):
        stop = min(start + chunk, size)
        leaves = [x if d is None else _take(x, d, start, stop)
                  for x, (d, _, _) in zip(arg_leaves, dims, strict=True)]
        pieces.append(_run(func, spec, tree_unflatten(arg_tree, leaves), kwargs, dims,
                           stop - start, _targets(args, kwargs)))
    _, out_tree, out_dims, _ = pieces[0]
    outs = [pieces[0][0][i] if od is None else
            P.concatenate.bind(*(p[0][i] for p in pieces), dimension=od)
            for i, od in enumerate(out_dims)]
    if pieces[0][3]:    # every chunk ran: now write each chunk's part of the arguments
        _write_chunks(_targets(args, kwargs), dims, pieces, chunk)
    return tree_unflatten(out_tree, outs)


def _targets(args, kwargs):
    """The caller's argument leaves, in the order of ``signature``'s leaves."""
    return flat_args(tuple(args), kwargs, ())[0]


def _write_chunks(targets, dims, pieces, chunk):
    """Write each chunk's final values into its slice of the batched arguments (an
    unbatched argument takes the last chunk's value: every chunk computed the same)."""
    for k, (_, _, _, (mutated, finals)) in enumerate(pieces):
        for i, value in zip(mutated, finals, strict=True):
            d = dims[i][0] if i < len(dims) else None
            t = targets[i]
            if d is None:
                if k == len(pieces) - 1:
                    write_back(targets, [i], [value])
                continue
            stop = min(k * chunk + chunk, t.shape[d])
            if isinstance(t, Tracer) or isinstance(value, Tracer):
                P.setitem.bind(t, value, indexer=tuple(
                    ("slice", k * chunk, stop, 1) if j == d else ("slice", 0, n, 1)
                    for j, n in enumerate(t.shape)))
            else:
                index = (slice(None),) * d + (slice(k * chunk, stop),)
                if on_device(t):
                    devices.copy_into(t, value, index)
                else:
                    np.copyto(t[index], value, casting="unsafe")


def _take(x, d, start, stop):
    shape = leaf_aval(x, "").shape
    return P.slice.bind(x, start_indices=tuple(start if i == d else 0 for i in range(len(shape))),
                        limit_indices=tuple(stop if i == d else n for i, n in enumerate(shape)),
                        strides=(1,) * len(shape))


def _run(func, spec, args, kwargs, dims, size, targets=None):
    """Batch ``func`` (cached per signature) and run it: (out leaves, out tree, out dims,
    writes). ``writes`` is None, or (argument leaves written, their final values) for the
    caller to write back into ``targets`` (the leaves; checked writable before running).
    """
    leaves, _, sig_key = signature(func, args, kwargs, spec.call)
    flat_dims = tuple(d for d, _, _ in dims) + (None,) * (len(leaves) - len(dims))
    entry = cached(spec.owner, ("vmap", flat_dims, spec.out_key, spec.randomness,
                                spec.axis_name), sig_key,
                   lambda: _build(func, spec, args, kwargs, dims, flat_dims, size))
    captured = fill(entry.captured, lambda: _fresh_key(spec.randomness, size))
    if not entry.mutated:
        return run_transformed(entry, list(leaves) + captured), entry.out_tree, entry.extra, None
    mutated = check_writable(leaves if targets is None else targets, entry.mutated, spec.call,
                             scalars="rebind")
    flat = run_transformed(entry, list(leaves) + captured)
    n, k = entry.out_tree.num_leaves, len(entry.mutated)
    finals = dict(zip(entry.mutated, flat[n:n + k], strict=True))
    return flat[:n], entry.out_tree, entry.extra, (mutated, [finals[i] for i in mutated])


def _fresh_key(randomness, size):
    """The key a global-generator draw of ``func`` gets on this call (_internal.random_scope)."""
    key = random.next_key()     # eager, or an input of an enclosing vmap's trace
    return random.split(key, size) if randomness == "different" else key


def _example(x, d, aval):
    """A stand-in for one example of ``x`` (batched at ``d``): its type matters, and for
    arrays how it overlaps the other arguments (what writes into it mean); no value is read.
    """
    if d is None:
        return x
    shape = aval.shape[:d] + aval.shape[d + 1:]
    if isinstance(x, np.ndarray) and x.shape[d]:
        return x[(slice(None),) * d + (0,)]
    if not shape and aval.weak_type:   # keep a weak scalar weak: pass a Python scalar
        py = {"b": bool, "i": int, "f": float, "c": complex}[dtypes.dtype_kind(aval.dtype)](0)
        if dtypes.python_scalar_dtype(py) == aval.dtype:
            return py
    return np.zeros(shape, aval.dtype)


def _crossed(leaves, dims) -> dict:
    """``{i: j}`` for array arguments i and j that may share memory but are batched
    differently (one not batched, or batch axes of different strides): the examples of one
    batch overlap in a way the next ones do not, so no single per-example trace says what
    a read of one after a write into the other sees."""
    arrays = [(i, x, d) for i, (x, (d, _, _)) in enumerate(zip(leaves, dims, strict=True))
              if isinstance(x, np.ndarray) and x.size]
    out = {}
    for i, x, d in arrays:
        if d is None:
            continue
        for j, y, e in arrays:
            if j != i and (e is None or y.strides[e] != x.strides[d]) \
                    and np.may_share_memory(x, y):
                out.setdefault(i, j)
                out.setdefault(j, i)
    return out


def _build(func, spec, args, kwargs, dims, flat_dims, size) -> Transformed:
    arg_leaves, arg_tree = tree_flatten(tuple(args))
    examples = [_example(x, d, aval) for x, (d, aval, _) in zip(arg_leaves, dims, strict=True)]
    crossed = _crossed(arg_leaves, dims)
    for i in crossed:       # traced as distinct arrays; a write into one is refused below
        examples[i] = np.array(examples[i])
    scope = Scope(spec.call, spec.randomness)
    scope.in_dims = flat_dims
    with axis_env.bound(spec.axis_name, size) if spec.axis_name is not None \
            else contextlib.nullcontext():
        traced = trace_for_transform(func, tree_unflatten(arg_tree, examples), kwargs,
                                     spec.fname, scope)
    written = [i for i in traced.mutated if i in crossed]
    if written:
        i, j = written[0], crossed[written[0]]
        raise NotImplementedError(
            f"{spec.call}: the function writes into {dims[i][2]}, which shares memory with "
            f"{dims[j][2]}, and the two are batched differently (in_dims {dims[i][0]} and "
            f"{dims[j][0]}), so how they overlap differs from one example to the next; pass "
            "a copy of one of them")
    out_avals = traced.graph.out_avals[:traced.out_tree.num_leaves]
    matched = _broadcast_prefix(spec.out_dims, tree_unflatten(traced.out_tree, out_avals),
                                "out_dims", "the outputs", spec.call)
    out_dims = [_normalize(d, av.ndim + 1, spec.call, "out_dims", spec.out_dims,
                           _path("output", keys), (size, *av.shape))
                for (d, keys), av in zip(matched, out_avals, strict=True)]
    key_dim = 0 if spec.randomness == "different" else None
    in_dims = list(flat_dims) + [key_dim if c is FRESH_KEY else None for c in traced.captured]
    # a written argument comes back with its batch axis where it came in (None: unbatched)
    write_dims = [flat_dims[i] for i in traced.mutated]
    try:
        graph, captured = batch_graph(traced.graph, in_dims, size, out_dims + write_dims,
                                      name=spec.call, axis_name=spec.axis_name)
    except BatchedOutputError as err:
        if err.index >= len(out_dims):
            i = traced.mutated[err.index - len(out_dims)]
            where = dims[i][2] if i < len(dims) else f"keyword argument leaf {i - len(dims)}"
            raise ValueError(
                f"{spec.call}: the function writes values that differ across the vmapped "
                f"batch into {where} (shape {dims[i][1].shape if i < len(dims) else ()}), "
                "which is not batched (in_dims None) and so is shared by the whole batch: "
                "the write has no per-example meaning. Batch that argument (an int in_dims "
                "entry, one slice per example), or write into a copy of it") from None
        keys = matched[err.index][1]
        raise ValueError(f"{spec.call}: out_dims={spec.out_dims!r} gives None for "
                         f"{_path('output', keys)} (shape {err.shape} with the batch), but it "
                         "depends on the batched inputs; give it an int out_dim") from None
    return Transformed(graph, traced.out_tree, traced.captured + captured, extra=out_dims,
                       mutated=traced.mutated)


def is_batched(x) -> bool:
    """Whether ``x`` varies along the batch axis of the innermost ``vmap`` being traced.

    ``x`` is a value inside the function that ``vmap`` traces (or inside a transform
    nested in it, such as ``grad``): it is batched when it depends on an argument with
    an int ``in_dims`` (or on a ``randomness='different'`` draw). Outside ``vmap`` it is
    ``False``. Layers use it to refuse what has no per-example meaning, such as writing a
    batched value into a buffer shared by the whole batch (like torch.func's
    ``is_batchedtensor``).

    Example::

        >>> vmap(lambda x, y: (is_batched(x), is_batched(y)), in_dims=(0, None))  # traced:
        ... # is_batched(x) is True, is_batched(y) is False
    """
    if not isinstance(x, Tracer):
        return False
    scope = current_scope()
    while scope is not None and scope.in_dims is None:
        scope = scope.enclosing
    if scope is None:
        return False
    example = scope.example_trace(x._trace)
    return example is not None and _depends(x._trace, x._var, example, scope)


def _depends(trace, var, example, scope) -> bool:
    """Whether ``var`` of ``trace`` (the per-example trace or one nested in it) depends on a
    batched input of ``example``."""
    producers = {v: e for e in trace.eqns for v in e.outputs}
    inputs = {v: i for i, v in enumerate(trace.inputs)}
    captures = {v: t for t, v in trace.captures.values()}
    stack, seen = [var], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in producers:
            stack.extend(a for a in producers[v].inputs if isinstance(a, Var))
        elif v in inputs:
            i = inputs[v]
            if trace is example:
                dims = scope.in_dims
                if (dims[i] is not None) if i < len(dims) else scope.mode == "different":
                    return True
            else:
                sources = getattr(trace, "input_sources", None)
                src = sources[i] if sources is not None and i < len(sources) else None
                if isinstance(src, Tracer) and example.is_ancestor_of(src._trace) \
                        and _depends(src._trace, src._var, example, scope):
                    return True
        elif v in captures:
            t = captures[v]
            if example.is_ancestor_of(t._trace) and _depends(t._trace, t._var, example, scope):
                return True
    return False
