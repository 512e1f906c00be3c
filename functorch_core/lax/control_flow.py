"""Structured control flow with JAX's signatures: cond, switch, while_loop, fori_loop, scan,
map and associative_scan.

Each body is traced once to a closed graph (values it closes over become explicit
operands) and recorded as one ``cond``/``while``/``scan`` equation, which every
transform (jvp, vjp, vmap, functionalize) and backend understands. Called on
concrete arrays outside any transform, they run at once.
"""

from __future__ import annotations

import operator

import numpy as np

from functorch_core import numpy as fnp
from functorch_core.ir import Graph, Tracer, Var, eval_graph, passes, trace_flat
from functorch_core.ir import primitives as P
from functorch_core.ir.pytree import tree_flatten, tree_map, tree_unflatten
from functorch_core.transforms import vmap

from .._internal.tracing import fn_name, leaf_aval
from ..transforms.functionalize import functionalize_graph, has_mutation

__all__ = ["associative_scan", "cond", "fori_loop", "map", "scan", "switch", "while_loop"]


# --- tracing bodies -------------------------------------------------------------------

class _Body:
    """A traced body: its graph (inputs, then captures), captured tracers, output tree."""

    def __init__(self, graph, captured, out_tree):
        self.graph, self.captured, self.out_tree = graph, captured, out_tree


def _trace_body(fn, in_tree, in_avals, what) -> _Body:
    out_tree_cell = []

    def flat(*tracers):
        out = fn(*tree_unflatten(in_tree, list(tracers)))
        leaves, tree = tree_flatten(out)
        for leaf in leaves:
            leaf_aval(leaf, f"an output leaf of {what}")
        out_tree_cell.append(tree)
        return leaves

    graph, captured = trace_flat(flat, in_avals, name=what)
    return _Body(_functional(graph, len(in_avals), what), captured, out_tree_cell[0])


def _functional(graph: Graph, n_args: int, what: str) -> Graph:
    """Calls inlined; in-place writes rewritten into pure updates (local to the body)."""
    graph = passes.inline(graph)
    if not has_mutation(graph):
        return graph
    new, mutated = functionalize_graph(graph)
    if any(i >= n_args for i in mutated):
        raise NotImplementedError(
            f"{what} writes into an array it closes over; a loop or branch body cannot carry "
            "that write out. Pass the array in the carry (or as an operand) and return its "
            "new value")
    new.outputs = new.outputs[:len(new.outputs) - len(mutated)]
    return passes.dce(new)


def _with_inputs(graph: Graph, captured, union) -> Graph:
    """``graph`` taking every tracer of ``union`` as its captures (unused ones ignored)."""
    n = len(graph.inputs) - len(captured)
    own = {id(t): v for t, v in zip(captured, graph.inputs[n:], strict=True)}
    extra = [own.get(id(t)) or Var(t.aval) for t in union]
    return Graph(graph.inputs[:n] + extra, graph.eqns, graph.outputs)


def _union(*lists):
    seen, out = set(), []
    for lst in lists:
        for t in lst:
            if id(t) not in seen:
                seen.add(id(t))
                out.append(t)
    return out


def _avals(leaves, what):
    return [leaf_aval(x, what) for x in leaves]


def _strong_leaves(leaves):
    """Python scalars as NumPy scalars of their default dtype (loop carries are strong)."""
    return [np.asarray(x)[()] if isinstance(x, bool | int | float | complex) else x
            for x in leaves]


def _describe(tree, avals) -> str:
    return f"{tree} with leaves ({', '.join(str(a.strong()) for a in avals)})"


def _check_same(what, left_name, left, right_name, right):
    """``left``/``right``: (tree, avals). Raise a TypeError showing both sides."""
    (lt, la), (rt, ra) = left, right
    same = lt == rt and len(la) == len(ra) and all(
        a.shape == b.shape and a.dtype == b.dtype for a, b in zip(la, ra, strict=True))
    if not same:
        diff = ""
        if lt == rt:
            bad = [i for i, (a, b) in enumerate(zip(la, ra, strict=True))
                   if a.shape != b.shape or a.dtype != b.dtype]
            diff = (f"; leaf {bad[0]} is {la[bad[0]].strong()} in the {left_name} and "
                    f"{ra[bad[0]].strong()} in the {right_name}")
        raise TypeError(f"{what}: the {left_name} and the {right_name} must have the same "
                        f"structure, shapes and dtypes{diff}.\n  {left_name}: "
                        f"{_describe(lt, la)}\n  {right_name}: {_describe(rt, ra)}")


def _scalar_index(x, what, kind):
    av = leaf_aval(x, f"the {kind} of {what}")
    if av.shape != ():
        raise TypeError(f"{what}: the {kind} must be a scalar, got an array of shape {av.shape}")
    return av


# --- cond and switch ------------------------------------------------------------------

def cond(pred, true_fun, false_fun, *operands):
    """Run ``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``.

    Both branches are traced; only the taken one runs. Under ``vmap`` with a
    batched ``pred`` both run and the results are selected per example.

    Args:
        pred (bool scalar): the predicate; a traced value is allowed (that is the
            point), but it must be a 0-d bool array.
        true_fun, false_fun: functions of ``*operands`` returning pytrees of the
            same structure, shapes and dtypes.
        *operands: the arguments passed to the branch (arrays or pytrees).

    Returns:
        The output of the taken branch.

    Example::

        >>> x = np.array([1.0, -2.0, 4.0])
        >>> cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, x)
        array([ 2., -4.,  8.])
    """
    what = f"cond({fn_name(true_fun)}, {fn_name(false_fun)})"
    av = _scalar_index(pred, what, "predicate")
    if av.dtype != np.dtype(bool):
        raise TypeError(f"{what}: the predicate must be a bool scalar, got dtype {av.dtype}; "
                        "compare it explicitly (x != 0) or use switch for an integer index")
    index = P.convert.bind(pred, new_dtype=np.dtype(np.int32))
    return _switch(index, [false_fun, true_fun], operands, what)


def switch(index, branches, *operands):
    """Run ``branches[index](*operands)``, with ``index`` clamped to ``[0, len(branches) - 1]``.

    Args:
        index (integer scalar): which branch to run; out-of-range values are
            clamped, as in JAX.
        branches (sequence of callables): functions of ``*operands`` returning
            pytrees of the same structure, shapes and dtypes.
        *operands: the arguments passed to the branch.

    Returns:
        The output of the chosen branch.

    Example::

        >>> switch(2, [lambda x: x, lambda x: x * 2, lambda x: x * 3], 1.0)
        array(3.)
    """
    branches = list(branches)
    what = f"switch({', '.join(fn_name(b) for b in branches)})"
    if not branches:
        raise ValueError(f"{what}: branches must be a non-empty sequence of functions")
    av = _scalar_index(index, what, "index")
    if av.dtype.kind not in "iu":
        raise TypeError(f"{what}: the index must be an integer scalar, got dtype {av.dtype}")
    index = P.convert.bind(index, new_dtype=np.dtype(np.int32)) \
        if av.dtype != np.dtype(np.int32) or av.weak_type else index
    if isinstance(index, np.ndarray) or not isinstance(index, Tracer):
        index = np.int32(min(max(int(np.asarray(index)), 0), len(branches) - 1))
    else:
        index = P.max.bind(P.min.bind(index, np.int32(len(branches) - 1)), np.int32(0))
    return _switch(index, branches, operands, what)


def _switch(index, funs, operands, what):
    leaves, in_tree = tree_flatten(operands)
    avals = _avals(leaves, f"an operand of {what}")
    bodies = [_trace_body(f, in_tree, avals, f"branch {k} ({fn_name(f)}) of {what}")
              for k, f in enumerate(funs)]
    for k, b in enumerate(bodies[1:], 1):
        _check_same(what, "output of branch 0", (bodies[0].out_tree, bodies[0].graph.out_avals),
                    f"output of branch {k}", (b.out_tree, b.graph.out_avals))
    union = _union(*(b.captured for b in bodies))
    graphs = tuple(_with_inputs(b.graph, b.captured, union) for b in bodies)
    outs = P.cond.bind(index, *leaves, *union, branches=graphs)
    return tree_unflatten(bodies[0].out_tree, outs)


# --- loops ----------------------------------------------------------------------------

def while_loop(cond_fun, body_fun, init_val, *, max_steps=None):
    """``val = init_val; while cond_fun(val): val = body_fun(val); return val``.

    Args:
        cond_fun: ``val -> bool scalar``.
        body_fun: ``val -> val`` (same structure, shapes and dtypes).
        init_val: the initial carry (an array or pytree).
        max_steps (int or None, default ``None``): stop after at most this many
            iterations. Reverse-mode differentiation (grad, vjp, jacrev) needs it:
            it records up to ``max_steps`` iterations and differentiates them
            exactly. Without it only forward mode (jvp, jacfwd) is defined; use
            ``fori_loop`` for a fixed trip count.

    Returns:
        The final carry.

    Example::

        >>> while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0))
        (array(10), array(1024.))
    """
    what = f"while_loop({fn_name(cond_fun)}, {fn_name(body_fun)})"
    if max_steps is not None:
        try:
            max_steps = operator.index(max_steps)
        except TypeError:
            raise TypeError(f"{what}: max_steps must be an int or None, got "
                            f"{max_steps!r}") from None
        if max_steps < 0:
            raise ValueError(f"{what}: max_steps must be non-negative, got {max_steps}")
    leaves, tree = tree_flatten(init_val)
    # loop carries are strongly typed (a Python scalar init is its default dtype)
    avals = [a.strong() for a in _avals(leaves, f"a leaf of the init_val of {what}")]
    c = _trace_body(lambda v: cond_fun(v), tree_flatten((init_val,))[1], avals,
                    f"cond_fun ({fn_name(cond_fun)}) of {what}")
    out = c.graph.out_avals
    if len(out) != 1 or out[0].shape != () or out[0].dtype != np.dtype(bool):
        raise TypeError(f"{what}: cond_fun must return a bool scalar, it returned "
                        f"{_describe(c.out_tree, out)}")
    b = _trace_body(lambda v: body_fun(v), tree_flatten((init_val,))[1], avals,
                    f"body_fun ({fn_name(body_fun)}) of {what}")
    _check_same(what, "init_val", (tree, avals), "output of body_fun",
                (b.out_tree, b.graph.out_avals))
    cg, bg = _consts_first(c), _consts_first(b)
    outs = P.while_loop.bind(*c.captured, *b.captured, *_strong_leaves(leaves), cond_graph=cg,
                             body_graph=bg, n_cond_consts=len(c.captured),
                             n_body_consts=len(b.captured), max_steps=max_steps)
    return tree_unflatten(tree, outs)


def _consts_first(body: _Body) -> Graph:
    g = body.graph
    n = len(g.inputs) - len(body.captured)
    return Graph(g.inputs[n:] + g.inputs[:n], g.eqns, g.outputs)


def fori_loop(lower, upper, body_fun, init_val, *, checkpoint=False):
    """``val = init_val; for i in range(lower, upper): val = body_fun(i, val); return val``.

    With Python (or NumPy) integer bounds the loop is a ``scan`` of
    ``upper - lower`` steps, so reverse-mode differentiation works; with traced
    bounds it is a ``while_loop`` (forward mode only).

    Args:
        lower, upper (integer scalars): the range of ``i``.
        body_fun: ``(i, val) -> val``.
        init_val: the initial carry (an array or pytree).
        checkpoint (bool, default ``False``): as ``scan``'s: for reverse mode, store only
            the carry of every step and recompute ``body_fun`` in the backward pass,
            instead of storing all of its intermediate values. The values and
            derivatives are the same. With traced bounds (a ``while_loop``, which
            reverse mode does not run through) it changes nothing.

    Returns:
        The final carry.

    Example::

        >>> fori_loop(0, 5, lambda i, x: x + i, 0.0)
        array(10.)
    """
    what = f"fori_loop({fn_name(body_fun)})"
    for name, b in (("lower", lower), ("upper", upper)):
        av = _scalar_index(b, what, name)
        if av.dtype.kind not in "iu":
            raise TypeError(f"{what}: {name} must be an integer scalar, got dtype {av.dtype}")
    dtype = np.result_type(np.asarray(lower).dtype if not isinstance(lower, Tracer)
                           else lower.dtype,
                           np.asarray(upper).dtype if not isinstance(upper, Tracer)
                           else upper.dtype)
    if not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
        lo, hi = int(lower), int(upper)

        def step(carry, _):
            i, val = carry
            return (i + dtype.type(1), body_fun(i, val)), None

        (_, val), _ = scan(step, (dtype.type(lo), init_val), length=max(hi - lo, 0),
                           checkpoint=checkpoint)
        return val

    def body(carry):
        i, hi, val = carry
        return i + dtype.type(1), hi, body_fun(i, val)

    lo = P.convert.bind(lower, new_dtype=dtype)
    hi = P.convert.bind(upper, new_dtype=dtype)
    return while_loop(lambda c: c[0] < c[1], body, (lo, hi, init_val))[2]


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, checkpoint=False):
    """Loop ``f`` over the leading axis of ``xs``, carrying state: JAX's ``lax.scan``.

    Semantically::

        carry, ys = init, []
        for x in xs:                     # (reversed(xs) if reverse)
            carry, y = f(carry, x)
            ys.append(y)
        return carry, stack(ys)

    Args:
        f: ``(carry, x) -> (carry, y)``; the carry keeps its structure, shapes and
            dtypes; ``y`` may be any pytree (``None`` for nothing).
        init: the initial carry (an array or pytree).
        xs (pytree of arrays or None, default ``None``): scanned over their
            leading axis; ``None`` passes ``None`` as ``x`` (give ``length``).
        length (int or None, default ``None``): the number of steps; required when
            ``xs`` is ``None``, checked against the xs otherwise.
        reverse (bool, default ``False``): run from the last element to the first
            (the outputs stay in the order of ``xs``).
        unroll (int or bool, default ``1``): copies of the body per iteration of the
            loop: a scan of ``length // unroll`` steps over blocks of ``unroll`` elements,
            then the ``length % unroll`` left over in a scan of their own (first, when
            ``reverse``). ``True`` unrolls fully, ``False`` means 1. The results are those
            of ``unroll=1``; a bigger body trades compile time for fewer loop steps.
        checkpoint (bool, default ``False``): for reverse mode, store only the carry
            of every step and recompute the body in the backward pass, instead of
            storing all of its intermediate values.

    Returns:
        ``(final carry, stacked ys)``.

    Example::

        >>> scan(lambda c, x: (c + x, c), 0.0, np.arange(4.0))
        (array(6.), array([0., 0., 1., 3.]))
    """
    what = f"scan({fn_name(f)})"
    if not isinstance(unroll, bool) and (not isinstance(unroll, int) or unroll < 1):
        raise ValueError(f"{what}: unroll must be a positive int or a bool, got {unroll!r}")
    x_leaves, x_tree = tree_flatten(xs)
    x_avals = _avals(x_leaves, f"a leaf of the xs of {what}")
    lengths = {a.shape[0] for a in x_avals if a.shape}
    if any(not a.shape for a in x_avals):
        raise ValueError(f"{what}: every leaf of xs needs a leading axis to scan over; got "
                         f"{_describe(x_tree, x_avals)}")
    if len(lengths) > 1 or (length is not None and lengths and lengths != {length}):
        given = "" if length is None else f" and length={length}"
        raise ValueError(f"{what}: the leaves of xs have leading axes of different lengths"
                         f" {sorted(lengths)}{given}: {_describe(x_tree, x_avals)}")
    if not lengths and length is None:
        raise ValueError(f"{what}: give length when xs is None or has no leaves")
    n = operator.index(length) if length is not None else lengths.pop()
    c_leaves, c_tree = tree_flatten(init)
    c_avals = [a.strong() for a in _avals(c_leaves, f"a leaf of the init of {what}")]
    slice_avals = [a.update(shape=a.shape[1:]) for a in x_avals]
    _, in_tree = tree_flatten((init, xs))
    body = _trace_body(f, in_tree, c_avals + slice_avals, f"{fn_name(f)} (the body of {what})")
    out_tree = body.out_tree
    if out_tree.node is not tuple or len(out_tree.children) != 2:
        raise TypeError(f"{what}: f must return a pair (carry, y), it returned {out_tree}")
    carry_tree, y_tree = out_tree.children
    n_carry = len(c_leaves)
    _check_same(what, "init carry", (c_tree, c_avals), "carry returned by f",
                (carry_tree, body.graph.out_avals[:carry_tree.num_leaves]))
    g = body.graph
    k = len(g.inputs) - len(body.captured)
    graph = Graph(g.inputs[k:] + g.inputs[:k], g.eqns, g.outputs)
    block = max(n, 1) if unroll is True else min(int(unroll), max(n, 1))
    outs = _unrolled_scan(graph, list(body.captured), _strong_leaves(c_leaves), x_leaves, n,
                          block, bool(reverse), bool(checkpoint))
    return (tree_unflatten(carry_tree, outs[:n_carry]),
            tree_unflatten(y_tree, outs[n_carry:]))


def _unrolled_scan(body, consts, init, xs, n, block, reverse, checkpoint):
    """``scan`` of ``body`` with ``block`` copies of it per step: a scan over blocks of
    ``block`` elements, and one of the original body over the ``n % block`` left over."""
    nc, nk = len(consts), len(init)

    def scan_of(graph, carry, xs, length):
        return P.scan.bind(*consts, *carry, *xs, body=graph, n_consts=nc, n_carry=nk,
                           length=length, reverse=reverse, checkpoint=checkpoint)
    if block == 1:
        return scan_of(body, init, xs, n)
    main, rest = n - n % block, n % block

    def part(x, lo, hi):
        return P.slice.bind(x, start_indices=(lo,) + (0,) * (x.ndim - 1),
                            limit_indices=(hi,) + tuple(x.shape[1:]), strides=(1,) * x.ndim)
    carry, y_parts = list(init), []
    if rest and reverse:        # the last elements come first
        outs = scan_of(body, carry, [part(x, main, n) for x in xs], rest)
        carry, y_rest = outs[:nk], outs[nk:]
    blocks = [P.reshape.bind(part(x, 0, main) if rest else x,
                             new_sizes=(main // block, block) + tuple(x.shape[1:])) for x in xs]
    outs = scan_of(_unrolled_body(body, nc, nk, block, reverse), carry, blocks, main // block)
    carry = outs[:nk]
    y_parts.append([P.reshape.bind(y, new_sizes=(main,) + tuple(y.shape[2:]))
                    for y in outs[nk:]])
    if rest and not reverse:
        outs = scan_of(body, carry, [part(x, main, n) for x in xs], rest)
        carry, y_rest = outs[:nk], outs[nk:]
    if rest:
        y_parts.append(y_rest)
        ys = [P.concatenate.bind(*ys, dimension=0) for ys in zip(*y_parts, strict=True)]
    else:
        ys = y_parts[0]
    return list(carry) + list(ys)


def _unrolled_body(body, nc, nk, block, reverse):
    """A scan body running ``body`` on ``block`` consecutive elements (backwards when
    ``reverse``), taking and returning them stacked along a leading axis."""

    def step(*args):
        consts, carry, xs = list(args[:nc]), list(args[nc:nc + nk]), args[nc + nk:]
        ys = [None] * block
        for j in (range(block - 1, -1, -1) if reverse else range(block)):
            x_j = [P.reshape.bind(P.slice.bind(x, start_indices=(j,) + (0,) * (x.ndim - 1),
                                               limit_indices=(j + 1,) + tuple(x.shape[1:]),
                                               strides=(1,) * x.ndim),
                                  new_sizes=tuple(x.shape[1:])) for x in xs]
            outs = eval_graph(body, consts + carry + x_j)
            carry, ys[j] = list(outs[:nk]), outs[nk:]
        stacked = [P.concatenate.bind(*[P.reshape.bind(y, new_sizes=(1,) + tuple(y.shape))
                                        for y in per_y], dimension=0)
                   for per_y in zip(*ys, strict=True)]
        return carry + stacked
    avals = body.in_avals[:nc + nk] + [a.update(shape=(block,) + a.shape)
                                       for a in body.in_avals[nc + nk:]]
    graph, captured = trace_flat(step, avals, name="scan (unrolled body)")
    assert not captured
    return graph


def map(f, xs, *, batch_size=None):
    """Apply ``f`` to each slice of ``xs`` along the leading axis and stack the results:
    JAX's ``lax.map``.

    A ``scan`` with no carry: the body is traced once and the loop is kept. With
    ``batch_size``, each step applies ``vmap(f)`` to ``batch_size`` slices at once (the
    ``n % batch_size`` left over go through one more ``vmap(f)``): fewer, wider steps,
    the same results.

    Args:
        f: ``x -> y`` on one slice (pytrees allowed).
        xs: arrays (or a pytree of them) with a common leading axis.
        batch_size (int or None, default ``None``): slices per step; ``None`` runs one.

    Returns:
        The stacked outputs.

    Example::

        >>> map(lambda x: x @ x, np.ones((3, 2)))
        array([2., 2., 2.])
        >>> map(lambda x: x.sum(), np.ones((5, 2)), batch_size=2)
        array([2., 2., 2., 2., 2.])
    """
    if batch_size is None:
        return scan(lambda c, x: ((), f(x)), (), xs)[1]
    return _batched_map(f, xs, batch_size, f"map({fn_name(f)})")


def _batched_map(f, xs, batch_size, what):
    if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer) \
            or batch_size < 1:
        raise ValueError(f"{what}: batch_size must be a positive int or None, "
                         f"got {batch_size!r}")
    leaves, tree = tree_flatten(xs)
    avals = _avals(leaves, f"a leaf of the xs of {what}")
    lengths = {a.shape[0] if a.shape else None for a in avals}
    if len(lengths) != 1 or None in lengths:
        raise ValueError(f"{what}: every leaf of xs needs the same leading axis to map "
                         f"over; got {_describe(tree, avals)}")
    n, batch_size = lengths.pop(), int(batch_size)
    main = n - n % batch_size
    parts = []
    if main:
        blocks = [fnp.reshape(x[:main], (main // batch_size, batch_size) + x.shape[1:])
                  for x in leaves]
        ys = scan(lambda c, x: ((), vmap(f)(x)), (), tree_unflatten(tree, blocks))[1]
        parts.append(tree_map(lambda y: fnp.reshape(y, (main,) + y.shape[2:]), ys))
    if n > main:
        parts.append(vmap(f)(tree_unflatten(tree, [x[main:] for x in leaves])))
    if len(parts) == 1:
        return parts[0]
    return tree_map(lambda a, b: fnp.concatenate([a, b]), *parts)


# --- associative_scan (ordinary ops, no primitive) --------------------------------------

def associative_scan(fn, elems, reverse=False, axis=0):
    """Inclusive scan of an associative ``fn`` along ``axis``, in O(log n) depth.

    Built from slices, concatenations and ``fn`` itself (JAX's parallel prefix
    algorithm), so every transform applies without a primitive of its own.

    Args:
        fn: an associative function ``(a, b) -> c`` on pytrees like ``elems``,
            applied elementwise over slices along ``axis``.
        elems: an array or pytree of arrays with equal sizes along ``axis``.
        reverse (bool, default ``False``): scan from the end.
        axis (int, default ``0``): the axis to scan along.

    Returns:
        A pytree like ``elems`` whose element ``i`` along ``axis`` is
        ``fn(...fn(elems[0], elems[1])..., elems[i])``.

    Example::

        >>> associative_scan(np.add, np.arange(5.0))
        array([ 0.,  1.,  3.,  6., 10.])
    """
    what = f"associative_scan({fn_name(fn)})"
    leaves, tree = tree_flatten(elems)
    if not leaves:
        return elems
    avals = _avals(leaves, f"a leaf of the elems of {what}")
    nd = avals[0].ndim
    if not -nd <= axis < nd or any(a.ndim != nd for a in avals):
        raise ValueError(f"{what}: axis {axis} is out of range for the elems "
                         f"{_describe(tree, avals)}")
    axis %= nd
    sizes = {a.shape[axis] for a in avals}
    if len(sizes) != 1:
        raise ValueError(f"{what}: the elems have different sizes {sorted(sizes)} along axis "
                         f"{axis}: {_describe(tree, avals)}")
    leaves = [fnp.asarray(x) for x in leaves]
    if reverse:
        leaves = [fnp.flip(x, axis) for x in leaves]

    def combine(a, b):
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        return tree_flatten(out)[0]

    def sl(x, start, stop=None, step=1):
        idx = [slice(None)] * nd
        idx[axis] = slice(start, stop, step)
        return x[tuple(idx)]

    def interleave(a, b):
        na, nb = a.shape[axis], b.shape[axis]
        if na > nb:
            pad = [(0, 0)] * nd
            pad[axis] = (0, 1)
            b = fnp.pad(b, pad)
        both = fnp.stack([a, b], axis=axis + 1)
        shape = list(a.shape)
        shape[axis] = 2 * na
        return sl(fnp.reshape(both, tuple(shape)), 0, na + nb)

    def run(xs):
        n = xs[0].shape[axis]
        if n < 2:
            return xs
        reduced = combine([sl(x, 0, n - 1, 2) for x in xs], [sl(x, 1, None, 2) for x in xs])
        odd = run(reduced)
        if n % 2 == 0:
            even = combine([sl(o, 0, -1) for o in odd], [sl(x, 2, None, 2) for x in xs])
        else:
            even = combine(odd, [sl(x, 2, None, 2) for x in xs])
        even = [fnp.concatenate([sl(x, 0, 1), e], axis=axis) for x, e in
                zip(xs, even, strict=True)]
        return [interleave(e, o) for e, o in zip(even, odd, strict=True)]

    out = run(leaves)
    if reverse:
        out = [fnp.flip(x, axis) for x in out]
    return tree_unflatten(tree, out)
