"""``make_graph`` and ``jit``."""

from __future__ import annotations

import functools
import inspect
import logging
import sys
import weakref
from collections import OrderedDict

import numpy as np

from functorch_core.backends import devices, profiling, registry
from functorch_core.ir import Graph, check_graph, current_trace, eval_graph, passes
from functorch_core.ir import primitives as P
from functorch_core.ir.core import on_device
from functorch_core.ir.once import Once
from functorch_core.ir.pytree import FAST_FLATTEN, dict_keys, tree_leaves, tree_unflatten
from functorch_core.ir.trace import CURRENT_TRACE

from . import _donation
from ._internal import autocast, axis_env, matmul_precision, scopes
from ._internal.random_scope import Scope
from ._internal.tracing import (
    arg_paths,
    argnums_tuple,
    flat_args,
    fn_name,
    leaf_aval,
    merge_static,
    native_leaves,
    normalize_argnums,
    positional_names,
    trace_call,
)
from .config import config
from .devices import placement
from .random import next_key
from .transforms.common import clear_transform_caches
from .transforms.functionalize import (
    check_writable,
    functionalize_graph,
    has_mutation,
    input_plan,
    with_plan,
    write_back,
)

log = logging.getLogger("functorch_core.jit")


def make_graph(func, *, static_argnums=()):
    """Return a function that traces ``func`` and returns its :class:`ir.Graph`.

    The graph is the raw trace: one equation per primitive that ``func``
    applies, mutations included, before any pass runs.

    Args:
        func: a Python function of arrays (pytrees of arrays) written with NumPy
            or ``functorch_core.numpy``.
        static_argnums (int or tuple of ints, default ``()``): positional
            arguments that are configuration rather than data; their values are
            baked into the graph.

    Returns:
        A function with the signature of ``func`` that returns a ``Graph``.

    Example::

        >>> g = make_graph(lambda x, w: np.sum(np.tanh(x @ w)))(np.ones((2, 3)), np.ones(3))
        >>> print(g)
        graph(a:f64[2,3], b:f64[3]) {
          c:f64[2] = dot_general[dimension_numbers=(((1,), (0,)), ((), ()))] a b
          d:f64[2] = tanh c
          e:f64[] = reduce_sum[axes=(0,)] d
          return e
        }
    """
    @functools.wraps(func)
    def graph_of(*args, **kwargs) -> Graph:
        nums = normalize_argnums(static_argnums, len(args), fn_name(func))
        return trace_call(func, args, kwargs, nums).graph
    return graph_of


class _Compiled:
    __slots__ = ("captured", "donation", "graph", "keys", "mutated", "out_tree", "raw", "run")

    def __init__(self, graph, run, out_tree, captured, raw=None, mutated=(), keys=0):
        self.graph, self.run, self.out_tree, self.captured = graph, run, out_tree, captured
        self.raw, self.mutated = raw, mutated   # the traced graph; inputs written back
        self.keys = keys    # global-generator draws: key inputs after the leaves
        self.donation = None    # _donation.Donation, on the first call that donates


def _signature(leaves, in_tree, static, fname):
    avals = tuple(leaf_aval(x, f"an argument leaf of {fname}") for x in leaves)
    avals = (*avals, input_plan(leaves, f"jit({fname})"))   # how the arguments overlap
    for i, v in static:
        try:
            hash(v)
        except TypeError:
            raise TypeError(
                f"jit({fname}): static argument {i} is a {type(v).__name__}, which is not "
                "hashable; static arguments key the compilation cache, so pass a hashable "
                "value (a tuple instead of a list, say) or make the argument dynamic") from None
    return (in_tree, avals, static, in_tree.orders)    # the function may observe key order


def _describe_change(old, new, fn=None) -> str:
    """Why ``new`` missed the cache, the arguments named as ``fn``'s signature names them."""
    (old_tree, old_avals, old_static, _), (new_tree, new_avals, new_static, _) = old, new
    if old_tree != new_tree:
        return f"the argument structure changed from {old_tree} to {new_tree}"
    if old_tree.orders != new_tree.orders:
        return f"a dict's key order changed from {old_tree} to {new_tree}"
    nums = [i for i, _ in new_static if isinstance(i, int)]
    paths = arg_paths(fn, new_tree, nums, len(new_tree.children[0].children) + len(nums))
    for path, a, b in zip(paths, old_avals[:-1], new_avals[:-1], strict=True):
        if a != b:
            return f"argument {path} changed from {a} to {b}"
    if old_avals[-1] != new_avals[-1]:
        return "the arguments share memory differently (same array twice, views, strides)"
    old_s, new_s = dict(old_static), dict(new_static)
    names = positional_names(fn, 1 + max((i for i in (*old_s, *new_s) if isinstance(i, int)),
                                         default=-1))
    for i in sorted(old_s.keys() | new_s.keys(), key=str):
        a, b = old_s.get(i, _NOT_PASSED), new_s.get(i, _NOT_PASSED)
        if type(a) is not type(b) or a != b:
            where = names[i] if isinstance(i, int) else i
            return f"static argument {where} changed from {a!r} to {b!r}"
    return "the signature was evicted"


class _NotPassed:
    def __repr__(self):
        return "<not passed>"


_NOT_PASSED = _NotPassed()


_SCALAR_TYPES = (float, int, bool, complex)
_FAST_ENTRIES = 64      # fast-path keys kept per jitted function
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_trace_get = CURRENT_TRACE.get     # current_trace() without a Python call
_scopes_open = scopes.OPEN       # [count]: autocast / matmul precision blocks open
_ndarray = np.ndarray
_fast_flatten_get = FAST_FLATTEN.get


def _fast_key(args):
    """A cheap cache key and the flat leaves of the positional arguments, or None.

    Arguments may be C-contiguous ndarrays, Python scalars and tuples, lists, dicts
    and None nesting them, and pytree nodes registered with a ``fast_flatten`` (modules).
    Each array gives its shape and dtype, each scalar its type (which fixes its weak
    dtype), each container its type and length or keys, a fast-flattened node its part;
    the leaves come in ``tree_flatten``'s order. None (take the general path) for anything
    else: other types, ints outside int64, non-contiguous arrays, and several arrays
    that might share memory (the same array twice, arrays that do not own their data,
    or leaves of nodes that lie in one array), whose overlap the signature records.
    """
    if len(args) == 1 and type(args[0]) is np.ndarray:     # the commonest call, inlined
        a = args[0]
        return ((a.shape, a.dtype), args) if a.flags.c_contiguous else None
    key, leaves, owners = [], [], []
    if not _walk(args, key, leaves, owners):
        return None
    if len(owners) > 1:
        if len({id(a) for a in owners}) < len(owners):
            return None
        if not all(a.flags.owndata for a in owners):
            return None
    return tuple(key), leaves


def _walk(items, key, leaves, owners):
    for a in items:
        t = type(a)
        if t is np.ndarray:
            if not a.flags.c_contiguous:
                return False
            key.append(a.shape)
            key.append(a.dtype)
            leaves.append(a)
            owners.append(a)
        elif t in _SCALAR_TYPES:
            if t is int and not _INT64_MIN <= a <= _INT64_MAX:
                return False
            key.append(t)
            leaves.append(a)
        elif t is tuple or t is list:
            key.append((t, len(a)))
            if not _walk(a, key, leaves, owners):
                return False
        elif t is dict:
            keys = tuple(dict_keys(a))
            key.append((dict, tuple(a)))    # as inserted: the function may observe it
            if not _walk([a[k] for k in keys], key, leaves, owners):
                return False
        elif a is None:
            key.append(None)
        else:
            fast = _fast_flatten_get(t)
            found = None if fast is None else fast(a)
            if found is None:
                return False
            key.append(found[0])
            leaves.extend(found[1])
            owners.extend(found[2])
    return True


def _with_leaves(args, kwargs, nums, in_tree, leaves):
    """``args`` and ``kwargs`` with their dynamic leaves replaced by ``leaves``."""
    dyn, kwargs = tree_unflatten(in_tree, leaves)
    return tuple(merge_static(dyn, [(i, args[i]) for i in nums], len(args))), kwargs
_JITTED: weakref.WeakSet = weakref.WeakSet()     # every live Jitted, for clear_caches


class Jitted:
    """A function compiled per input signature; see :func:`jit`."""

    def __init__(self, func, static_argnums, backend, static_argnames=(), named_nums=(),
                 cache_size=None, donate=((), ())):
        functools.update_wrapper(self, func)
        self.donate_argnums, self.donate_argnames = donate
        self.func = func
        self.static_argnums = static_argnums
        self.static_argnames = static_argnames
        self._named_nums = named_nums   # positions of static_argnames, when passed so
        # a static argument keys the cache by name, by position or keyword alike
        known = [i for i in (*static_argnums, *named_nums) if i >= 0]
        self._key_names = {i: n for i, n in enumerate(
            positional_names(func, max(known, default=-1) + 1)) if n in static_argnames}
        self.backend = backend
        self.cache_size = cache_size
        self.cache: OrderedDict = OrderedDict()     # signature -> _Compiled, least recent first
        self._once = Once()
        _JITTED.add(self)
        # fast-path key -> (run, convert scalars, single output, out_tree, signature)
        self._fast: dict | None = None if static_argnums not in ((), []) or named_nums else {}
        self._last_key = None

    def __reduce__(self):
        # by reference: the module attribute when this object is one (``@jit def f``),
        # else jit applied again to the wrapped function; compiled code is not pickled
        module = getattr(self, "__module__", None)
        owner = sys.modules.get(module) if module else None
        target = owner
        for part in getattr(self, "__qualname__", "<>").split("."):
            target = getattr(target, part, None)
        if target is self:
            return self.__qualname__
        return (_rebuild_jitted, (self.func, self.static_argnums, self.backend,
                                  self.static_argnames, self._named_nums, self.cache_size,
                                  (self.donate_argnums, self.donate_argnames)))

    def _compile(self, args, kwargs, nums, key, static_kw=None):
        func = functools.partial(self.func, **static_kw) if static_kw else self.func
        name = f"jit({fn_name(self.func)})"
        with Scope(name, "fresh") as scope, profiling.span("trace", "trace"):
            # a draw becomes a key input: see _internal.random_scope
            traced = trace_call(with_plan(func, key[1][-1]), args, kwargs, nums, name=name)
        graph, mutated = traced.graph, []
        if has_mutation(graph):
            with profiling.span("functionalize", "transform"):
                graph, mutated = functionalize_graph(graph, key[1][-1])
        with profiling.span("simplify", "compile"):
            graph = check_graph(passes.simplify(graph))
        backend = registry.get(self.backend)
        run = None
        if not traced.captured:
            with profiling.span(f"compile({self.backend or registry.default_backend()})",
                                "compile"):
                run = backend.compile(passes.lower_custom(graph))
        return _Compiled(graph, run, traced.out_tree, traced.captured, traced.graph, mutated,
                         scope.n_keys)

    def __call__(self, *args, **kwargs):
        fast = self._fast
        # the fast path is keyed by arguments only: not while a scoped setting is open
        if fast is not None and not kwargs and not _scopes_open[0]:
            if len(args) == 1:      # one array: the commonest call, checked inline
                a = args[0]
                if type(a) is _ndarray and a.flags.c_contiguous:
                    hit = fast.get((a.shape, a.dtype))
                    if hit is not None and _trace_get() is None:
                        self._last_key = hit[4]
                        return hit[5](a)
            found = _fast_key(args)
            if found is None:
                return self._call(args, kwargs, None)
            fkey, leaves = found
            hit = fast.get(fkey)
            if hit is not None and current_trace() is None:
                run, scalars, single, out_tree, self._last_key, _ = hit
                outs = run([a if type(a) is np.ndarray else np.asarray(a) for a in leaves]
                           if scalars else list(leaves))
                return outs[0] if single else tree_unflatten(out_tree, outs)
            return self._call(args, kwargs, fkey)
        return self._call(args, kwargs, None)

    def _call(self, args, kwargs, fkey, profiled=False):
        """The general path: flatten, full signature (aliasing included), compile if new.
        While a profile is active every call comes here (see ``drop_fast_paths``) and runs
        as one event, through the backend's instrumented runner, never remembered for the
        fast path."""
        fname = fn_name(self.func)
        if self.backend != "cuda" and devices.maybe_present() and _device_leaf(args, kwargs):
            return self._on_device(args, kwargs, fname)
        if not profiled and profiling.recorder is not None:
            shapes = _shapes(args, kwargs) if profiling.recorder.record_shapes else None
            with profiling.span(f"jit({fname})", "call", shapes):
                return self._call(args, kwargs, None, True)
        nums = self.static_argnums
        if kwargs and self._key_names:       # a static position passed by name instead
            nums = tuple(i for i in nums if i < len(args) or self._key_names.get(i) not in kwargs)
        nums = normalize_argnums(nums, len(args), fname)
        if self._named_nums:
            nums += tuple(i for i in self._named_nums if i < len(args) and i not in nums)
        static_kw = None
        if self.static_argnames and kwargs:
            static_kw = {k: v for k, v in kwargs.items() if k in self.static_argnames}
            kwargs = {k: v for k, v in kwargs.items() if k not in static_kw}
        leaves, in_tree = flat_args(args, kwargs, nums, self.func, f"jit({fname})")
        if self.backend == "cuda":
            placement(leaves, lambda: arg_paths(self.func, in_tree, nums, len(args)),
                      f"jit({fname}, backend='cuda')")
        given, leaves = leaves, native_leaves(leaves)
        if leaves is not given:     # big-endian arrays: traced and run as native copies
            fkey = None
            args, kwargs = _with_leaves(args, kwargs, nums, in_tree, leaves)
        static = tuple((self._key_names.get(i, i), args[i]) for i in nums)
        if static_kw:
            static += tuple(static_kw.items())
        if self.static_argnames:
            static = tuple(sorted(static, key=lambda kv: str(kv[0])))
        if axis_env.current():      # traced inside a named vmap: collectives read its axes
            static += (("the named vmap axes", axis_env.current()),)
        if matmul_precision.current() != "highest":     # products read it when traced
            static += (("the float32 matmul precision", matmul_precision.current()),)
        if autocast.current() is not None:     # products and reductions read it when traced
            static += (("autocast", str(autocast.current())),)
        if autocast.current() is not None or matmul_precision.is_scoped():
            fkey = None     # a scoped setting is not remembered by the fast path
        key = _signature(leaves, in_tree, static, fname)
        entry = self.cache.get(key)
        if entry is None:
            last = self._last_key

            def build():
                if config.log_retraces and last is not None:
                    log.warning("jit(%s) is tracing again: %s", fname,
                                _describe_change(last, key, self.func))
                return self._compile(args, kwargs, nums, key, static_kw)
            entry = self._once.get(self.cache, key, build, self._store)
        else:
            try:
                self.cache.move_to_end(key)
            except KeyError:    # evicted by another thread meanwhile
                pass
        self._last_key = key
        keys = [next_key() for _ in range(entry.keys)] if entry.keys else []
        if entry.mutated and (current_trace() is not None or entry.captured):
            # writes into traced arguments: replay them into the enclosing trace, whose
            # own functionalization sees how those arguments alias
            outs = eval_graph(entry.raw, [*leaves, *keys, *entry.captured])
        elif current_trace() is not None or entry.captured:
            outs = P.call.bind(*leaves, *keys, *entry.captured, graph=entry.graph, name=fname)
        else:
            donation = None
            if (self.donate_argnums or self.donate_argnames) and not profiled:
                donation = _donation.runner(self, entry, args, kwargs, nums, in_tree, given,
                                            leaves, fname)
            if fkey is not None and key[1][-1] is None and not keys:
                self._remember_fast(fkey, entry, key, donation)
            check_writable(given, entry.mutated, f"jit({fname})")
            run = _profiled_runner(entry.run, self.backend) if profiled else entry.run
            run_args = [x if isinstance(x, np.ndarray) or on_device(x) else np.asarray(x)
                        for x in leaves] + keys
            if donation is not None:
                run = _donation.pick(donation, fname, leaves, run_args) or run
            outs = run(run_args)
            n = len(outs) - len(entry.mutated)
            write_back(given, entry.mutated, outs[n:])
            outs = outs[:n]
        return tree_unflatten(entry.out_tree, outs)

    def _on_device(self, args, kwargs, fname):
        """A call with GPU arrays: the default backend hands it to the cuda backend (one
        twin of this function, with its own cache); a named host backend refuses it."""
        if self.backend is not None:
            nums = normalize_argnums(self.static_argnums, len(args), fname)
            leaves, tree = flat_args(args, kwargs, nums)
            i = next(i for i, x in enumerate(leaves) if on_device(x))
            raise ValueError(
                f"jit({fname}, backend={self.backend!r}): argument "
                f"{arg_paths(self.func, tree, nums, len(args))[i]} is on cuda (shape "
                f"{tuple(leaves[i].shape)}) and the backend runs on the cpu; call "
                "functorch_core.device_get on the arguments, or jit with backend='cuda' (or "
                "no backend) to run on the GPU")
        twin = self.__dict__.get("_cuda_twin")
        if twin is None:
            twin = self._cuda_twin = Jitted(self.func, self.static_argnums, "cuda",
                                            self.static_argnames, self._named_nums,
                                            self.cache_size,
                                            (self.donate_argnums, self.donate_argnames))
        return twin._call(args, kwargs, None)

    def _store(self, key, entry):
        """Cache ``entry`` (unless it captured tracers), evicting the least recently used
        signatures beyond the bound. Called under ``self._once``'s lock; False when
        ``entry`` is private to the calling trace."""
        if entry.captured:
            return False
        self.cache[key] = entry
        limit = config.jit_cache_size if self.cache_size is None else self.cache_size
        while limit is not None and len(self.cache) > max(limit, 1):
            old, _ = self.cache.popitem(last=False)
            if self._fast:
                for fkey, hit in list(self._fast.items()):
                    if hit[4] == old:
                        self._fast.pop(fkey, None)
            if config.log_retraces:
                log.warning("jit(%s) evicted a compiled signature (cache_size=%d): %s",
                            fn_name(self.func), limit, _describe_change(key, old, self.func))
        return True

    def clear_cache(self):
        """Drop every compiled signature of this function (they compile again when called)."""
        with self._once._lock:
            self.cache.clear()
            if self._fast:
                self._fast.clear()
            self._last_key = None
        twin = self.__dict__.get("_cuda_twin")
        if twin is not None:
            twin.clear_cache()

    def _remember_fast(self, fkey, entry, key, donation=None):
        if len(self._fast) >= _FAST_ENTRIES:
            self._fast.clear()
        scalars = any(type(k) is type and k in _SCALAR_TYPES for k in fkey)
        single = entry.out_tree.node is None
        # a backend may offer run.trusted: run without argument checks, for exactly what
        # the fast key guarantees (C-contiguous arrays of the signature's dtypes)
        run = getattr(entry.run, "trusted", entry.run)
        if donation is not None and donation.run is not None:
            run = _donation.fast_runner(donation, fn_name(self.func), run)
        if entry.mutated:
            run = _writing(run, entry.mutated, f"jit({fn_name(self.func)})")
        one = None
        if len(key[1]) == 2 and not scalars:     # one leaf, an array: the inline path
            # (not when run wraps the backend's: writes into arguments, or donation)
            one = getattr(entry.run, "trusted_one", None) if single and run is \
                getattr(entry.run, "trusted", entry.run) else None
            if one is None:
                out_tree = entry.out_tree

                def one(a):
                    outs = run([a])
                    return outs[0] if single else tree_unflatten(out_tree, outs)
        self._fast[fkey] = (run, scalars, single, entry.out_tree, key, one)


def _writing(run, mutated, fname):
    """``run`` followed by the writes into the arguments: the fast path of a function that
    writes into its arguments (the fast key guarantees arrays that share no memory)."""
    def writing(leaves):
        check_writable(leaves, mutated, fname)
        outs = run(leaves)
        n = len(outs) - len(mutated)
        write_back(leaves, mutated, outs[n:])
        return outs[:n]
    return writing


def _device_leaf(args, kwargs) -> bool:
    return any(on_device(x) for x in tree_leaves((args, kwargs)))


def drop_fast_paths():
    """Forget every jitted function's fast-path entries, so that each call takes the
    general path (which refills them unless a profile is active)."""
    for f in list(_JITTED):
        if f._fast:
            f._fast.clear()


def _profiled_runner(run, backend):
    """``run`` as the profiler sees it: the backend's instrumented twin when it has one
    (``run.profiled``), else ``run`` as one event."""
    twin = getattr(run, "profiled", None)
    if twin is not None:
        return twin
    name = f"run({backend or registry.default_backend()})"

    def timed(args):
        with profiling.span(name, "run"):
            return run(args)
    return timed


_SHAPED = (np.ndarray, np.generic, float, int, complex)


def _shapes(args, kwargs):
    """The shapes and dtypes of the arguments' array leaves, for ``record_shapes``."""
    shapes = []
    for x in tree_leaves((args, kwargs)):
        if isinstance(x, _SHAPED):
            a = x if type(x) is np.ndarray else np.asarray(x)
            shapes.append(f"{a.dtype.name}{list(a.shape)}")
    return {"input_shapes": shapes}


def _rebuild_jitted(func, static_argnums, backend, static_argnames=(), named_nums=(),
                    cache_size=None, donate=((), ())):
    return Jitted(func, static_argnums, backend, static_argnames, named_nums, cache_size,
                  donate)


def _static_args(func, static_argnums, static_argnames):
    """(static_argnums, static_argnames, positions of static_argnames), as JAX infers them.

    A parameter named static is static when passed by position too, and a static
    position is static when passed by name.
    """
    fname = fn_name(func)
    nums = argnums_tuple(static_argnums, f"jit({fname})")
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"jit({fname}): static_argnames must be a str or a tuple of str, got "
                        f"{static_argnames!r}")
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return nums, names, ()
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                         p.POSITIONAL_OR_KEYWORD)]
    by_name = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    named_nums = tuple(positional.index(n) for n in names
                       if n in positional and positional.index(n) not in nums)
    names += tuple(positional[i] for i in nums
                   if -len(positional) <= i < len(positional) and positional[i] in by_name
                   and positional[i] not in names)
    return nums, names, named_nums


def jit(func=None, *, static_argnums=(), static_argnames=(), donate_argnums=(),
        donate_argnames=(), backend=None, cache_size=None):
    """Compile ``func`` once per input signature and run the compiled graph.

    The function is traced with abstract arguments the first time it sees a
    signature (the pytree structure of the arguments, the shape, dtype and
    weak-typedness of every leaf, and the values of static arguments); the
    graph is simplified (inlining, constant folding, CSE, DCE), compiled by
    the backend and cached. Later calls with the same signature skip tracing
    and compiling; a call whose positional arguments are C-contiguous arrays,
    Python scalars, or tuples, lists and dicts of them (no keyword or static
    arguments, no two arrays that may share memory)
    is looked up by the arguments' structure, shapes and dtypes alone and runs
    the executable directly.

    Args:
        func: the function to compile; its arguments and results are arrays,
            Python scalars or pytrees of them. Closed-over arrays become
            constants of the graph.
        static_argnums (int or tuple of ints, default ``()``): positional
            arguments treated as compile-time constants. They must be hashable;
            a new value triggers a new trace.
        static_argnames (str or tuple of str, default ``()``): the same for
            arguments passed by keyword. As in JAX, a parameter named here is
            static when passed by position too, and a parameter of
            ``static_argnums`` is static when passed by name.
        donate_argnums (int or tuple of ints, default ``()``): positional
            arguments whose arrays the caller gives up, as in JAX: the compiled call
            may write its results into their memory instead of allocating new arrays
            (``params = step(params, grads)`` updates in place). A result takes a
            donated array when it has the same shape and dtype and the computation
            no longer reads the argument once it writes the result; a donated
            argument returned as it is comes back without a copy. The donated
            array's contents are unspecified after the call (it may be one of the
            results, the very same object): do not read it again, use the result.
            Donation is ignored, with a warning, for a buffer no result can take,
            and for an array that is read-only, not C-contiguous, passed twice, a
            view sharing memory with another argument or a constant, or one the
            function writes into (write-back needs it); the interpreter and cuda
            backends ignore it silently, and so does a call under another
            transform. The check runs on every call, so donation never changes
            the results.
        donate_argnames (str or tuple of str, default ``()``): the same for
            arguments named here (passed by keyword or by position).
        backend (str, default ``None``): ``'cpu'`` (native code through
            llvmlite: fused loops and BLAS) or ``'interpreter'`` (the NumPy
            reference). ``None`` picks ``fc.default_backend()``, which is
            ``'cpu'`` unless the environment variable ``FUNCTORCH_CORE_BACKEND``
            names another.
        cache_size (int, default ``None``): how many input signatures stay compiled
            for this function; beyond it the least recently used one is dropped (and
            its native code freed once no call is running it). Recency counts calls
            that look the signature up in full (the first call of a signature, calls
            with keyword or static arguments, and the fast path's occasional refills),
            not each fast-path call, which stays free of bookkeeping. ``None`` takes
            ``functorch_core.config.jit_cache_size`` (128 unless the environment
            variable ``FUNCTORCH_CORE_JIT_CACHE_SIZE`` says otherwise; ``0`` there
            means unbounded).

    A function that writes into arrays in place is functionalized first; writes
    into its own arguments are applied to the caller's arrays after a
    successful call, exactly as eager NumPy would leave them.

    Returns:
        A callable with ``func``'s signature. Under another transform it
        records one ``call`` equation instead of running.

    Set ``functorch_core.config.log_retraces = True`` (or the environment
    variable ``FUNCTORCH_CORE_LOG_RETRACES=1``) to log why each retrace happened
    and when a signature is evicted.

    The returned function may be called from several threads at once: a new
    signature is traced and compiled once, by the first thread asking for it,
    while the others wait for it.

    Example::

        >>> f = jit(lambda x, y: np.tanh(x) * y)
        >>> f(np.ones(3, np.float32), 2.0)       # traced and compiled for f32[3], f64~[]
        array([1.5231884, 1.5231884, 1.5231884], dtype=float32)
        >>> f(np.zeros(3, np.float32), 3.0)      # same signature: cached
        array([0., 0., 0.], dtype=float32)
    """
    if func is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, backend=backend,
                                 cache_size=cache_size)
    registry.get(backend)  # reject an unknown backend now, not at the first call
    if cache_size is not None and (type(cache_size) is not int or cache_size < 1):
        raise ValueError(f"jit({fn_name(func)}): cache_size must be a positive int or None, "
                         f"got {cache_size!r}")
    nums, names, named_nums = _static_args(func, static_argnums, static_argnames)
    donate = _donation.check_spec(fn_name(func), donate_argnums, donate_argnames, nums, names)
    return Jitted(func, nums, backend, names, named_nums, cache_size, donate)


def clear_caches():
    """Forget everything compiled or traced so far in this process: every ``jit``
    function's compiled signatures, the cpu backend's executables and the transforms'
    traced graphs. Native code is freed once no call is running it. The on-disk object
    cache is left alone (``backends.llvm.cache.clear()`` empties it).

    Example::

        >>> f = jit(lambda x: x + 1)
        >>> f(np.ones(3))
        array([2., 2., 2.])
        >>> functorch_core.clear_caches()
        >>> f(np.ones(3))                      # traced and compiled again
        array([2., 2., 2.])
    """
    import gc

    for f in list(_JITTED):
        f.clear_cache()
    clear_transform_caches()
    gc.collect()    # executables in reference cycles, before their native code is released
    registry.clear_caches()
