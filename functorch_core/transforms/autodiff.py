"""Public autodiff API: grad, grad_and_value, value_and_grad, vjp, jvp, linearize,
jacrev, jacfwd, hessian.

Each call traces the function once per input signature (cached beside the
function), rewrites the graph (jvp pass; for reverse mode, split and
transpose) and replays the result on the actual arguments. Replaying into an
enclosing trace is what makes the transforms compose.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from functorch_core.backends.devices import to_device
from functorch_core.ir import Graph, Lit, eval_graph, passes, trace_flat
from functorch_core.ir import primitives as P
from functorch_core.ir.core import on_device
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.pytree import tree_flatten, tree_leaves, tree_structure, tree_unflatten

from .._internal.random_scope import fill
from .._internal.tracing import argnums_tuple, fn_name, leaf_aval, normalize_argnums
from .common import Transformed, cached, run_writing, signature, trace_for_transform
from .jvp import closed, differentiable, jvp_graph
from .transpose import linearize_graph, transpose_graph
from .vmap import vmap

# --- preparing a differentiated call ------------------------------------------------


def _arg_offsets(args):
    counts = [len(tree_leaves(a)) for a in args]
    return [sum(counts[:i]) for i in range(len(args))], counts


def _holds_state(arg):
    """Whether ``arg`` contains an object whose class says its integer leaves are state
    (``nn.Module``: BatchNorm's ``num_batches_tracked``), not inputs to differentiate."""
    def marked(x):
        return getattr(type(x), "_int_leaves_are_state", False)
    return any(marked(x) for x in tree_leaves(arg, is_leaf=marked))


def _diff_mask(args, nums, leaves, what, *, strict):
    """Which leaves are differentiated; integer/bool leaves of ``nums`` raise if ``strict``
    (except inside an argument holding module state: they get zero gradients)."""
    offsets, counts = _arg_offsets(args)
    mask = [False] * len(leaves)
    for n in nums:
        for i in range(offsets[n], offsets[n] + counts[n]):
            av = leaf_aval(leaves[i], f"argument {n} of {what}")
            if not differentiable(av):
                if strict and not _holds_state(args[n]):
                    raise TypeError(
                        f"{what}: argument {n} (argnums) has dtype {av.dtype}; differentiation "
                        "is only defined for floating-point and complex inputs. Convert it "
                        "(x.astype(float)) or leave it out of argnums")
                continue
            mask[i] = True
    return mask


def _split_outputs(out_tree, has_aux, what):
    """(main tree, number of main leaves, aux tree or None)."""
    if not has_aux:
        return out_tree, out_tree.num_leaves, None
    if out_tree.node is not tuple or len(out_tree.children) != 2:
        raise TypeError(f"{what}: with has_aux=True the function must return a pair "
                        f"(output, aux), but it returned a value of structure {out_tree}")
    main, aux = out_tree.children
    return main, main.num_leaves, aux


def _trace(func, args, kwargs, what, has_aux):
    traced = trace_for_transform(func, args, kwargs, what)
    main_tree, n_main, aux_tree = _split_outputs(traced.out_tree, has_aux, what)
    return traced, main_tree, n_main, aux_tree


def _scalar_check(graph: Graph, what, holomorphic=False):
    av = graph.outputs[0].aval if graph.outputs else None
    if av is None or av.shape != ():
        shape = "nothing" if av is None else f"an array of shape {av.shape}"
        raise ValueError(f"{what}: the function must return a scalar (a 0-d array), but it "
                         f"returned {shape}; use jacrev or vjp for non-scalar outputs")
    if holomorphic and av.dtype.kind != "c":
        raise TypeError(f"{what}: with holomorphic=True the function must return a complex "
                        f"scalar, but it returned dtype {av.dtype}")
    if not holomorphic and dtype_kind(av.dtype) != "f":
        raise TypeError(f"{what}: the function must return a real floating-point scalar, but "
                        f"it returned dtype {av.dtype}; for a holomorphic function pass "
                        "holomorphic=True, else differentiate its real part, or use vjp")


def _input_kinds(what, args, nums, holomorphic, complex_ok):
    """Holomorphic differentiation takes complex inputs only; ``complex_ok=False`` (jacfwd's
    basis) refuses complex inputs otherwise."""
    for n in nums:
        for leaf in tree_leaves(args[n]):
            dt = leaf_aval(leaf, f"argument {n} of {what}").dtype
            if holomorphic and dt.kind != "c":
                raise TypeError(f"{what}: with holomorphic=True the differentiated inputs must "
                                f"be complex, but argument {n} has a leaf of dtype {dt}")
            if not holomorphic and not complex_ok and dt.kind == "c":
                raise TypeError(f"{what}: the differentiated inputs must be real, but argument "
                                f"{n} has a leaf of dtype {dt}; for a holomorphic function "
                                "pass holomorphic=True, for another use jvp directly")


def _output_kinds(what, avals, holomorphic):
    for av in avals:
        if holomorphic and av.dtype.kind != "c":
            raise TypeError(f"{what}: with holomorphic=True the outputs must be complex, but "
                            f"one has dtype {av.dtype}")
        if not holomorphic and av.dtype.kind == "c":
            raise TypeError(f"{what}: the outputs must be real, but one has dtype {av.dtype}; "
                            "for a holomorphic function pass holomorphic=True, for another "
                            "use vjp directly")


def _per_arg(args, nums, flat):
    """Split ``flat`` (leaves of the args in ``nums``, in order) back into their trees."""
    out, it = [], iter(flat)
    for n in nums:
        td = tree_structure(args[n])
        out.append(tree_unflatten(td, [next(it) for _ in range(td.num_leaves)]))
    return out


def _diff_leaves(args, nums, leaves, mask):
    """Per leaf of the args in ``nums``: (index in ``leaves``, differentiated or not)."""
    offsets, counts = _arg_offsets(args)
    return [(i, mask[i]) for n in nums for i in range(offsets[n], offsets[n] + counts[n])]


def _fill_zeros(entries, leaves, values):
    """Values for differentiated leaves, zeros (primal dtype) for the others."""
    it = iter(values)
    out = []
    for i, d in entries:
        av = leaf_aval(leaves[i], "a leaf")
        out.append(next(it) if d else np.zeros(av.shape, av.dtype))
    return out


def _simplified(fn, avals, name):
    graph, captured = trace_flat(fn, avals, name=name)
    return passes.simplify(closed(graph, captured, name))


# --- grad ---------------------------------------------------------------------------

def _grad_call(func, args, kwargs, argnums, has_aux, what, holomorphic=False):
    nums = normalize_argnums(argnums, len(args), what, "argnums")
    leaves, _, sig = signature(func, args, kwargs, what)
    mask = _diff_mask(args, nums, leaves, what, strict=True)
    if holomorphic:
        _input_kinds(what, args, nums, True, True)

    def build():
        traced, _, n_main, _ = _trace(func, args, kwargs, what, has_aux)
        graph = traced.graph
        if n_main != 1:
            raise ValueError(f"{what}: the function must return a scalar (a 0-d array), but it "
                             f"returned a pytree with {n_main} leaves; use jacrev or vjp")
        _scalar_check(graph, what, holomorphic)
        lin = linearize_graph(graph, mask + [False] * len(traced.captured))
        n_out = len(graph.outputs)
        back = transpose_graph(lin.linear, lin.n_res, [True] + [False] * (n_out - 1))
        one = Lit(np.ones((), graph.outputs[0].aval.dtype))

        def body(*xs):
            outs_res = eval_graph(lin.primal, list(xs))
            cts = eval_graph(back, outs_res[n_out:] + [one])
            return outs_res[:n_out] + cts

        combined = _simplified(body, graph.in_avals, what)
        return Transformed(combined, traced.out_tree, traced.captured, mutated=traced.mutated)

    entry = cached(func, ("grad", nums, has_aux, holomorphic), sig, build)
    flat = run_writing(entry, leaves, list(leaves) + fill(entry.captured), what)
    n_out = entry.out_tree.num_leaves
    out = tree_unflatten(entry.out_tree, flat[:n_out])
    value, aux = out if has_aux else (out, None)
    per_leaf = _fill_zeros(_diff_leaves(args, nums, leaves, mask), leaves, flat[n_out:])
    grads = _per_arg(args, nums, per_leaf)
    grads = grads[0] if not isinstance(argnums, tuple | list) else tuple(grads)
    return grads, value, aux


def _gradient(name, func, argnums, has_aux, holomorphic, pack):
    """grad and its two value-returning variants: ``pack(g, value, aux)`` is the result."""
    what = f"{name}({fn_name(func)})"
    argnums_tuple(argnums, what, "argnums")   # a bad argnums fails here, not per call

    @functools.wraps(func)
    def grad_fn(*args, **kwargs):
        g, value, aux = _grad_call(func, args, kwargs, argnums, has_aux, what, holomorphic)
        return pack(g, value, aux)
    return grad_fn


def grad(func, argnums=0, has_aux=False, *, holomorphic=False):
    """Return a function that computes the gradient of ``func`` with respect to ``argnums``.

    Args:
        func: a Python function returning a real scalar (a 0-d float array), or
            with ``has_aux=True`` a pair ``(scalar, aux)``. Its arguments are
            arrays, scalars or pytrees of them.
        argnums (int or tuple of ints, default ``0``): the positional arguments
            to differentiate. A tuple gives a tuple of gradients.
        has_aux (bool, default ``False``): ``func`` returns ``(output, aux)``;
            the gradient function then returns ``(grads, aux)``.
        holomorphic (bool, default ``False``): ``func`` is a holomorphic function of
            complex inputs with a complex output; the result is its complex derivative
            ``f'(z)``. Without it, the output must be real; for complex inputs the
            gradient follows JAX's convention (the conjugate of PyTorch's): for
            ``f(z) = |z|^2`` it is ``2 * conj(z)``.

    Returns:
        A function with ``func``'s signature returning gradients shaped like the
        differentiated arguments (pytrees included).

    Writes ``func`` makes into its array arguments (a module's buffers: BatchNorm's
    running statistics in training mode) are applied to the caller's arrays after the
    call, as an eager call of ``func`` would leave them; the written values are not
    differentiated, and the gradient is taken at the values passed in. The same holds
    for every transform here (``vjp``, ``jvp``, ``linearize``, ``jacrev``...).

    Example::

        >>> grad(lambda x: np.sum(np.sin(x)))(np.array([0.0, 1.0]))
        array([1.        , 0.54030231])
        >>> grad(lambda x, y: x * y, argnums=(0, 1))(2.0, 3.0)
        (array(3.), array(2.))
        >>> grad(lambda z: z ** 2, holomorphic=True)(np.complex128(1 + 2j))
        array(2.+4.j)
    """
    return _gradient("grad", func, argnums, has_aux, holomorphic,
                     lambda g, value, aux: (g, aux) if has_aux else g)


def grad_and_value(func, argnums=0, has_aux=False, *, holomorphic=False):
    """Like :func:`grad`, but the function returns ``(gradients, value)`` (torch.func order).

    Args:
        func: as for :func:`grad`.
        argnums (int or tuple of ints, default ``0``): arguments to differentiate.
        has_aux (bool, default ``False``): ``func`` returns ``(output, aux)``; the
            result is then ``(gradients, (value, aux))``.
        holomorphic (bool, default ``False``): as for :func:`grad`.

    Example::

        >>> g, v = grad_and_value(lambda x: x ** 2)(3.0)
        >>> g, v
        (array(6.), array(9.))
    """
    return _gradient("grad_and_value", func, argnums, has_aux, holomorphic,
                     lambda g, value, aux: (g, (value, aux)) if has_aux else (g, value))


def value_and_grad(func, argnums=0, has_aux=False, *, holomorphic=False):
    """Like :func:`grad`, but the function returns ``(value, gradients)`` (JAX order).

    Args:
        func: as for :func:`grad`.
        argnums (int or tuple of ints, default ``0``): arguments to differentiate.
        has_aux (bool, default ``False``): ``func`` returns ``(output, aux)``; the
            result is then ``((value, aux), gradients)``.
        holomorphic (bool, default ``False``): as for :func:`grad`.

    Example::

        >>> value_and_grad(lambda x: x ** 2)(3.0)
        (array(9.), array(6.))
    """
    return _gradient("value_and_grad", func, argnums, has_aux, holomorphic,
                     lambda g, value, aux: ((value, aux), g) if has_aux else (value, g))


# --- vjp and linearize --------------------------------------------------------------

def _linearized(func, args, nums, has_aux, what, kind):
    """The cached split of ``func`` at ``args``; ``kind`` 'vjp' adds the transposed graph."""
    leaves, _, sig = signature(func, args, {}, what)
    mask = _diff_mask(args, nums, leaves, what, strict=kind != "vjp")

    def build():
        traced, _, n_main, _ = _trace(func, args, {}, what, has_aux)
        lin = linearize_graph(traced.graph, mask + [False] * len(traced.captured))
        n_out = len(traced.graph.outputs)
        if kind == "vjp":
            wanted = [True] * n_main + [False] * (n_out - n_main)
            extra = transpose_graph(lin.linear, lin.n_res, wanted)
        else:
            extra = passes.dce(Graph(lin.linear.inputs, lin.linear.eqns,
                                     lin.linear.outputs[:n_main]))
        return Transformed(lin.primal, traced.out_tree, traced.captured, extra,
                           mutated=traced.mutated)

    entry = cached(func, (kind, nums, has_aux), sig, build)
    flat = run_writing(entry, leaves, list(leaves) + fill(entry.captured), what)
    n_out = entry.out_tree.num_leaves
    out = tree_unflatten(entry.out_tree, flat[:n_out])
    return entry, out, flat[n_out:], leaves, mask


def _check_like(what, name, given, expected_tree, expected_avals):
    flat, tree = tree_flatten(given)
    if tree != expected_tree:
        raise ValueError(f"{what}: {name} has structure {tree}, but the function's output "
                         f"has structure {expected_tree}")
    for x, av in zip(flat, expected_avals, strict=True):
        got = leaf_aval(x, f"a leaf of the {name} of {what}")
        if got.shape != av.shape or (got.dtype != av.dtype and not got.weak_type):
            raise ValueError(f"{what}: {name} leaf {got} does not match the output {av}")
    return flat


def _vjp(func, primals, nums, has_aux, what):
    entry, out, res, leaves, mask = _linearized(func, primals, nums, has_aux, what, "vjp")
    back = entry.extra
    value, aux = out if has_aux else (out, None)
    main_tree = tree_structure(value)
    out_avals = back.in_avals[len(res):]
    entries = _diff_leaves(primals, nums, leaves, mask)

    def vjp_fn(cotangent):
        cts = _check_like(what, "the cotangent", cotangent, main_tree, out_avals)
        grads = eval_graph(back, list(res) + cts)
        return tuple(_per_arg(primals, nums, _fill_zeros(entries, leaves, grads)))

    return value, vjp_fn, aux


def vjp(func, *primals, has_aux=False, holomorphic=False):
    """Evaluate ``func`` at ``primals`` and return its vector-Jacobian product function.

    Args:
        func: a Python function of arrays (pytrees of arrays).
        *primals: the arguments at which to linearize ``func``.
        has_aux (bool, default ``False``): ``func`` returns ``(output, aux)``;
            ``vjp`` then returns ``(output, vjp_fn, aux)``.
        holomorphic (bool, default ``False``): assert that ``func`` is a holomorphic map of
            complex inputs to complex outputs (checked on the dtypes); ``vjp_fn(ct)`` is
            then ``ct * f'(z)``. Without it any dtypes are accepted, with JAX's convention
            for complex values (the pairing ``Re(sum(a * b))``, no conjugation).

    Returns:
        ``(output, vjp_fn)``. ``vjp_fn(cotangent)`` takes a cotangent shaped like
        the output and returns a tuple with one cotangent per primal (zeros for
        integer primals). It may be called many times, and under ``vmap``.

    Example::

        >>> out, vjp_fn = vjp(np.sin, np.array([0.0, 1.0]))
        >>> vjp_fn(np.ones(2))
        (array([1.        , 0.54030231]),)
    """
    what = f"vjp({fn_name(func)})"
    nums = tuple(range(len(primals)))
    if holomorphic:
        _input_kinds(what, primals, nums, True, True)
    value, vjp_fn, aux = _vjp(func, primals, nums, has_aux, what)
    if holomorphic:
        _output_kinds(what, [leaf_aval(o, "an output leaf") for o in tree_leaves(value)], True)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def _linearize(func, primals, nums, has_aux, what):
    entry, out, res, leaves, mask = _linearized(func, primals, nums, has_aux, what, "linearize")
    fwd = entry.extra
    tangent_trees = [tree_structure(primals[n]) for n in nums]
    tangent_avals = [leaf_aval(leaves[i], "a leaf")
                     for i, _ in _diff_leaves(primals, nums, leaves, mask)]
    value, aux = out if has_aux else (out, None)
    main_tree = tree_structure(value)
    entries = _diff_leaves(primals, nums, leaves, mask)

    def jvp_fn(*tangents):
        flat = _check_tangents(what, tangents, tangent_trees, tangent_avals)
        used = [t for t, (_, d) in zip(flat, entries, strict=True) if d]
        return tree_unflatten(main_tree, eval_graph(fwd, list(res) + used))

    return value, jvp_fn, aux


def _check_tangents(what, tangents, trees, avals):
    if len(tangents) != len(trees):
        raise TypeError(f"{what}: expected {len(trees)} tangents (one per primal), "
                        f"got {len(tangents)}")
    flat = []
    for k, (t, td) in enumerate(zip(tangents, trees, strict=True)):
        leaves, tree = tree_flatten(t)
        if tree != td:
            raise ValueError(f"{what}: tangent {k} has structure {tree}, but primal {k} has "
                             f"structure {td}")
        flat += leaves
    for k, (t, av) in enumerate(zip(flat, avals, strict=True)):
        got = leaf_aval(t, f"a tangent leaf of {what}")
        if got.shape != av.shape or (differentiable(av) and got.dtype != av.dtype
                                     and not got.weak_type):
            raise ValueError(f"{what}: tangent leaf {k} is {got}, but its primal is "
                             f"{av.strong()}; tangents must match the primals' shapes "
                             "and dtypes")
    return flat


def linearize(func, *primals):
    """Evaluate ``func`` at ``primals`` and return its Jacobian-vector product function.

    The primal computation runs once; ``jvp_fn`` replays only the linear part.

    Args:
        func: a Python function of arrays (pytrees of arrays).
        *primals: the point at which to linearize.

    Returns:
        ``(output, jvp_fn)`` where ``jvp_fn(*tangents)`` returns the output tangent.

    Example::

        >>> out, jvp_fn = linearize(np.sin, np.array([0.0, 1.0]))
        >>> jvp_fn(np.ones(2))
        array([1.        , 0.54030231])
    """
    what = f"linearize({fn_name(func)})"
    value, jvp_fn, _ = _linearize(func, primals, tuple(range(len(primals))), False, what)
    return value, jvp_fn


# --- jvp -----------------------------------------------------------------------------

def jvp(func, primals, tangents, *, has_aux=False):
    """Evaluate ``func`` and its Jacobian-vector product at ``primals`` along ``tangents``.

    Args:
        func: a Python function of arrays (pytrees of arrays).
        primals (tuple): the positional arguments of ``func``.
        tangents (tuple): one tangent per primal, of the same structure, shapes
            and dtypes (ignored for integer primals).
        has_aux (bool, default ``False``): ``func`` returns ``(output, aux)``;
            ``jvp`` then returns ``(output, tangent_out, aux)``.

    Returns:
        ``(output, tangent_out)``.

    Example::

        >>> jvp(np.sin, (np.array([0.0, 1.0]),), (np.ones(2),))
        (array([0.        , 0.84147098]), array([1.        , 0.54030231]))
    """
    what = f"jvp({fn_name(func)})"
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError(f"{what}: primals and tangents must be tuples, got "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    leaves, _, sig = signature(func, primals, {}, what)
    nums = tuple(range(len(primals)))
    mask = _diff_mask(primals, nums, leaves, what, strict=False)
    avals = [leaf_aval(x, "a leaf") for x in leaves]
    flat_t = _check_tangents(what, tangents, [tree_structure(p) for p in primals], avals)

    def build():
        traced, _, n_main, _ = _trace(func, primals, {}, what, has_aux)
        graph = jvp_graph(traced.graph, mask + [False] * len(traced.captured))
        # outputs: the primal outputs and written arguments, then their tangents; the
        # written arguments' tangents are not wanted (a write-back is primal)
        n_out = traced.out_tree.num_leaves
        graph.outputs = graph.outputs[:2 * n_out + len(traced.mutated)]
        return Transformed(passes.simplify(graph), traced.out_tree, traced.captured, n_main,
                           mutated=traced.mutated)

    entry = cached(func, ("jvp", has_aux), sig, build)
    used = [t for t, d in zip(flat_t, mask, strict=True) if d]
    flat = run_writing(entry, leaves, list(leaves) + fill(entry.captured) + used, what)
    n_out = entry.out_tree.num_leaves
    out = tree_unflatten(entry.out_tree, flat[:n_out])
    value, aux = out if has_aux else (out, None)
    tout = tree_unflatten(tree_structure(value), flat[n_out:n_out + entry.extra])
    return (value, tout, aux) if has_aux else (value, tout)


# --- Jacobians -------------------------------------------------------------------------

def _vmap():
    return vmap


def _rows(x, start, stop, shape):
    """``x[start:stop]`` reshaped to ``shape``."""
    av = leaf_aval(x, "a Jacobian block")
    nd = len(av.shape)
    if (start, stop) != (0, av.shape[0]):
        x = P.slice.bind(x, start_indices=(start,) + (0,) * (nd - 1),
                         limit_indices=(stop,) + av.shape[1:], strides=(1,) * nd)
    return _reshaped(x, shape)


def _reshaped(x, shape):
    same = tuple(shape) == leaf_aval(x, "a Jacobian block").shape
    return x if same else P.reshape.bind(x, new_sizes=tuple(shape))


def _basis(avals, dtypes_of, device=False):
    """Identity rows split per leaf: leaf k gets shape (total,) + avals[k].shape (on the
    GPU with ``device``, where the primal arguments are)."""
    sizes = [math.prod(a.shape) for a in avals]
    total = sum(sizes)
    out, off = [], 0
    for a, n, dt in zip(avals, sizes, dtypes_of, strict=True):
        eye = np.eye(total, dtype=dt)[:, off:off + n]
        eye = eye.reshape((total,) + a.shape)
        out.append(to_device(eye) if device else eye)
        off += n
    return out, sizes, total


def _partial(func, args, nums):
    def partial(*diff_args):
        full = list(args)
        for n, a in zip(nums, diff_args, strict=True):
            full[n] = a
        return func(*full)
    return partial


def _jac_structure(argnums, args, nums, blocks_per_out, out_tree):
    inner = [_per_arg(args, nums, blocks) for blocks in blocks_per_out]
    inner = [i[0] if not isinstance(argnums, tuple | list) else tuple(i) for i in inner]
    return tree_unflatten(out_tree, inner)


def _jacobian(name, func, argnums, has_aux, holomorphic, chunk_size, reverse):
    """jacrev (``reverse``) or jacfwd of ``func``: the checks and the one linearization
    they share, then the blocks by rows of vjps or by columns of jvps."""
    what = f"{name}({fn_name(func)})"
    argnums_tuple(argnums, what, "argnums")   # a bad argnums fails here, not per call

    @functools.wraps(func)
    def jac_fn(*args):
        nums = normalize_argnums(argnums, len(args), what, "argnums")
        leaves, _, _ = signature(func, args, {}, what)
        _diff_mask(args, nums, leaves, what, strict=True)
        _input_kinds(what, args, nums, holomorphic, reverse)
        value, linear_fn, aux = (_vjp if reverse else _linearize)(func, args, nums, has_aux,
                                                                  what)
        out_leaves, out_tree = tree_flatten(value)
        out_avals = [leaf_aval(o, "an output leaf").strong() for o in out_leaves]
        if reverse or holomorphic:
            # jacfwd of real inputs may have complex outputs: each column is one jvp
            _output_kinds(what, out_avals, holomorphic)
        in_avals = [leaf_aval(x, "a leaf").strong() for n in nums for x in tree_leaves(args[n])]
        on_dev = any(on_device(x) for x in tree_leaves(args))
        if reverse:
            blocks = _reverse_blocks(linear_fn, out_tree, out_avals, in_avals, on_dev,
                                     chunk_size)
        else:
            blocks = _forward_blocks(linear_fn, args, nums, out_avals, in_avals, on_dev,
                                     chunk_size)
        jac = _jac_structure(argnums, args, nums, blocks, out_tree)
        return (jac, aux) if has_aux else jac
    return jac_fn


def _reverse_blocks(vjp_fn, out_tree, out_avals, in_avals, on_dev, chunk_size):
    """The Jacobian's blocks ``[output][input]``, a row of vjps per output element."""
    basis, sizes, total = _basis(out_avals, [a.dtype for a in out_avals], on_dev)
    if total == 0 or any(a.size == 0 for a in in_avals):
        return [[np.zeros(o.shape + i.shape, i.dtype) for i in in_avals] for o in out_avals]
    if sizes == [1]:
        # one output element: a single vjp with a ones cotangent, no size-1 batch
        flat_cts = tree_leaves(vjp_fn(tree_unflatten(out_tree, [basis[0].reshape(
            out_avals[0].shape)])))
        return [[_reshaped(c, out_avals[0].shape + i.shape)
                 for c, i in zip(flat_cts, in_avals, strict=True)]]
    cts = _vmap()(vjp_fn, chunk_size=chunk_size)(tree_unflatten(out_tree, basis))
    flat_cts = tree_leaves(cts)
    blocks, off = [], 0
    for o, n in zip(out_avals, sizes, strict=True):
        blocks.append([_rows(c, off, off + n, o.shape + i.shape)
                       for c, i in zip(flat_cts, in_avals, strict=True)])
        off += n
    return blocks


def _forward_blocks(jvp_fn, args, nums, out_avals, in_avals, on_dev, chunk_size):
    """The Jacobian's blocks ``[output][input]``, a column of jvps per input element."""
    basis, sizes, total = _basis(in_avals, [a.dtype for a in in_avals], on_dev)
    if total == 0 or any(o.size == 0 for o in out_avals):
        return [[np.zeros(o.shape + i.shape, o.dtype) for i in in_avals] for o in out_avals]
    tangents = _per_arg(args, nums, basis)
    touts = tree_leaves(_vmap()(jvp_fn, chunk_size=chunk_size)(*tangents))
    blocks = []
    for t, o in zip(touts, out_avals, strict=True):
        row, off = [], 0
        for i, n in zip(in_avals, sizes, strict=True):
            b = _rows(t, off, off + n, i.shape + o.shape)
            nd_i, nd_o = len(i.shape), len(o.shape)
            perm = tuple(range(nd_i, nd_i + nd_o)) + tuple(range(nd_i))
            row.append(P.transpose.bind(b, permutation=perm) if nd_i and nd_o else b)
            off += n
        blocks.append(row)
    return blocks


def jacrev(func, argnums=0, *, has_aux=False, holomorphic=False, chunk_size=None):
    """Jacobian of ``func`` by reverse mode: one vjp per output element, batched with vmap.

    A function with a single output element (a scalar loss) takes one plain vjp
    with a ones cotangent, with no batch axis of size one.

    Args:
        func: a Python function of arrays (pytrees of arrays).
        argnums (int or tuple of ints, default ``0``): arguments to differentiate.
        has_aux (bool, default ``False``): ``func`` returns ``(output, aux)``; the
            result is then ``(jacobian, aux)``.
        holomorphic (bool, default ``False``): ``func`` is holomorphic (complex inputs
            and outputs); the Jacobian holds complex derivatives. Without it the outputs
            must be real (use ``vjp`` for other complex outputs).
        chunk_size (int or None, default ``None``): pull the basis through in
            chunks of this many rows (less memory); ``None`` does all at once.

    Returns:
        A function returning the Jacobian: the output's pytree structure outside,
        the ``argnums`` structure inside, each block of shape
        ``output.shape + input.shape``.

    Example::

        >>> jacrev(np.sin)(np.array([0.0, 1.0]))
        array([[1.        , 0.        ],
               [0.        , 0.54030231]])
    """
    return _jacobian("jacrev", func, argnums, has_aux, holomorphic, chunk_size, True)


def jacfwd(func, argnums=0, *, has_aux=False, holomorphic=False, chunk_size=None):
    """Jacobian of ``func`` by forward mode: one jvp per input element, batched with vmap.

    Args:
        func: a Python function of arrays (pytrees of arrays).
        argnums (int or tuple of ints, default ``0``): arguments to differentiate.
        has_aux (bool, default ``False``): ``func`` returns ``(output, aux)``; the
            result is then ``(jacobian, aux)``.
        holomorphic (bool, default ``False``): ``func`` is holomorphic (complex inputs
            and outputs). Without it the inputs must be real (use ``jvp`` for other
            functions of complex inputs).
        chunk_size (int or None, default ``None``): push the basis through in
            chunks of this many columns; ``None`` does all at once.

    Returns:
        A function returning the Jacobian, structured as for :func:`jacrev`.

    Example::

        >>> jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
    """
    return _jacobian("jacfwd", func, argnums, has_aux, holomorphic, chunk_size, False)


def hessian(func, argnums=0, *, holomorphic=False, chunk_size=None):
    """Hessian of a scalar ``func``: ``jacfwd(jacrev(func, argnums), argnums)``.

    Args:
        func: a Python function returning a scalar.
        argnums (int or tuple of ints, default ``0``): arguments to differentiate.
        holomorphic (bool, default ``False``): as for :func:`jacfwd`/:func:`jacrev`.
        chunk_size (int or None, default ``None``): as for :func:`jacfwd`/:func:`jacrev`.

    Example::

        >>> hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums, holomorphic=holomorphic, chunk_size=chunk_size), argnums,
                  holomorphic=holomorphic, chunk_size=chunk_size)
