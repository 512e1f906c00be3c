"""``export``: a traced, functionalized, simplified graph that runs, saves and loads
without the user's code."""

from __future__ import annotations

import hashlib

import numpy as np

from functorch_core.backends import registry
from functorch_core.ir import check_graph, passes, serialize
from functorch_core.ir import primitives as P
from functorch_core.ir.core import AbstractArray
from functorch_core.ir.pytree import tree_flatten, tree_unflatten

from .._internal.random_scope import Scope
from .._internal.tracing import (
    arg_paths,
    leaf_aval,
    merge_static,
    normalize_argnums,
    positional_names,
    trace_call,
)
from ..transforms.functionalize import functionalize_graph, has_mutation
from . import dynamic as dyn
from . import native as stored
from . import trees

KIND = "functorch_core.export"
EXPORT_VERSION = 1


def _aval_json(a: AbstractArray):
    return [list(a.shape), a.dtype.name, a.weak_type]


def _aval_of_json(x) -> AbstractArray:
    return AbstractArray(tuple(x[0]), np.dtype(x[1]), bool(x[2]))


def _trace(func, args, nums, what):
    """(functional graph with calls and custom rules inlined, in_tree, out_tree)."""
    with Scope(what, "fresh") as scope:
        traced = trace_call(func, args, {}, nums, name=what)
    if traced.captured:
        raise ValueError(f"{what}: cannot export under another transform (the function "
                         "closes over values of an enclosing trace)")
    if scope.n_keys:
        raise ValueError(f"{what}: the function draws from the global random generator; "
                         "an export takes its randomness as an explicit key argument "
                         "(functorch_core.random)")
    graph = traced.graph
    if has_mutation(graph):
        graph, mutated = functionalize_graph(graph)
        if mutated:
            names = arg_paths(func, traced.in_tree, nums, len(args))
            raise ValueError(f"{what}: the function writes into its argument(s) "
                             f"{', '.join(names[i] for i in mutated)}; an export is a pure "
                             "function (return the new values instead)")
    graph = passes.inline(graph, (P.call, *passes.CUSTOM_CALLS))
    return check_graph(graph), traced.in_tree, traced.out_tree


def _dynamic_dims(spec, func, names, leaves, nargs, nums, what):
    """{leaf index: {dim: symbol}} from ``dynamic`` (keys: argument names, leaf paths as
    errors print them, or positions)."""
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise TypeError(f"{what}: dynamic must be a dict like {{'x': {{0: 'batch'}}}}, got "
                        f"{type(spec).__name__}")
    params = positional_names(func, nargs)
    out: dict[int, dict[int, str]] = {}
    for key, dims in spec.items():
        arg = params[key] if isinstance(key, int) and 0 <= key < nargs else key
        if isinstance(key, int) and key in nums:
            raise ValueError(f"{what}: dynamic names argument {key}, which is static")
        hits = [i for i, n in enumerate(names)
                if n == arg or (n.startswith(str(arg)) and n[len(str(arg)):][:1] in ("[", "."))]
        if not hits:
            raise ValueError(f"{what}: dynamic names {key!r}, which is none of the arguments "
                             f"{names}")
        if not isinstance(dims, dict) or not all(
                isinstance(d, int) and isinstance(s, str) for d, s in dims.items()):
            raise TypeError(f"{what}: dynamic[{key!r}] must map dimensions (int) to names "
                            f"(str), got {dims!r}")
        for i in hits:
            if not isinstance(leaves[i], np.ndarray):
                raise TypeError(f"{what}: dynamic dimension of {names[i]}, which is not an "
                                "array")
            nd = leaves[i].ndim
            for d, s in dims.items():
                if not -nd <= d < nd:
                    raise ValueError(f"{what}: {names[i]} has {nd} dimensions; dynamic "
                                     f"dimension {d} ({s!r}) is out of range")
                out.setdefault(i, {})[d % nd] = s
    return out


def export(func, *example_args, static_argnums=(), dynamic=None, backend=None):
    """Trace ``func`` once and return an :class:`Exported`: a self-contained graph that
    runs compiled, saves to a file and loads in a process without ``func``'s code.

    The graph is traced on ``example_args``, functionalized, inlined and simplified;
    the input and output pytree structures and avals are kept with it. Calls of the
    :class:`Exported` take the non-static arguments, in order.

    Args:
        func: a function of arrays (pytrees of dict/list/tuple/None/namedtuple of arrays)
            written with NumPy or ``functorch_core.numpy``. It must not write into its
            arguments or draw from the global random generator.
        *example_args: arrays (or pytrees of them) of the shapes and dtypes to export for,
            and the values of the static arguments.
        static_argnums (int or tuple of ints, default ``()``): positional arguments baked
            into the graph (left out of the calls of the export).
        dynamic (dict, default ``None``): symbolic dimensions, ``{argument: {dim: name}}``
            with the argument named as in ``func``'s signature (or its position, or a leaf
            path like ``"batch['x']"``). Every dimension of one name has the same size in a
            call. A call at a new size substitutes it into the stored graph and compiles
            again (shape rules re-run; ``func`` is not traced again). Sizes enter the graph
            as affine integers (shapes, bounds, lengths) or scalar constants (a mean's
            count, ``c / size``); anything else is refused here.
        backend (str, default ``None``): where calls of the returned export run
            (``'cpu'`` or ``'interpreter'``; ``None``: ``fc.default_backend()``). A saved
            export records no backend: ``load_exported`` takes its own.

    Returns:
        An :class:`Exported`.

    Example::

        >>> exp = fc.export(lambda x, w: np.tanh(x @ w), np.ones((8, 3), np.float32),
        ...                 np.ones((3, 2), np.float32), dynamic={0: {0: "batch"}})
        >>> exp.save("model.fcx")
        >>> fc.load_exported("model.fcx")(np.ones((5, 3), np.float32), w).shape
        (5, 2)
    """
    fname = trees.callable_name(func)
    what = f"export({fname})"
    nums = normalize_argnums(static_argnums, len(example_args), fname)
    graph, in_tree, out_tree = _trace(func, example_args, nums, what)
    leaves = tree_flatten(tuple(a for i, a in enumerate(example_args) if i not in nums))[0]
    names = arg_paths(func, in_tree, nums, len(example_args))
    in_avals = [leaf_aval(x, f"an argument leaf of {what}") for x in leaves]
    dims = _dynamic_dims(dynamic, func, names, leaves, len(example_args), nums, what)
    header = {"kind": KIND, "export_version": EXPORT_VERSION, "name": fname,
              "in_tree": trees.to_json(in_tree, f"{what}: the arguments"),
              "out_tree": trees.to_json(out_tree, f"{what}: the results"),
              "in_names": names, "in_avals": [_aval_json(a) for a in in_avals],
              "dynamic": {str(i): {str(d): s for d, s in ds.items()} for i, ds in dims.items()}}
    if not dims:
        graph = check_graph(passes.lower_custom(passes.simplify(graph)))
        body, arrays = serialize.encode(graph)
        header.update(graph=body, patches=[])
    else:
        static = [(i, example_args[i]) for i in nums]

        def build(sizes):
            new = list(leaves)
            for i, ds in dims.items():
                shape = [sizes[ds[d]] if d in ds else n for d, n in enumerate(leaves[i].shape)]
                new[i] = np.broadcast_to(np.zeros((), leaves[i].dtype), shape)
            dyn_args, _ = tree_unflatten(in_tree, new)
            args = merge_static(dyn_args, static, len(example_args))
            g, it, ot = _trace(func, args, nums, what)
            if it != in_tree or ot != out_tree:
                raise dyn.DynamicError(f"{what}: the output structure changes with the "
                                       "dynamic sizes")
            return serialize.encode(g)
        symbols = sorted({s for ds in dims.values() for s in ds.values()})
        spec = ", ".join(f"{names[i]} dim {d} {s!r}" for i, ds in dims.items()
                         for d, s in ds.items())
        body, arrays, patches = dyn.fit(build, symbols, f"{what} (dynamic: {spec})")
        header.update(graph=body, patches=patches)
    return Exported(header, [np.ascontiguousarray(a).tobytes() for a in arrays], backend)


class Exported:
    """A function exported by :func:`export` (or loaded by :func:`load_exported`).

    Attributes:
        graph: the simplified graph at the example shapes.
        graph_text: ``str(graph)``.
        in_avals, out_avals: the flat inputs' and results' types at the example shapes.
        in_tree, out_tree: the arguments' and results' pytree structures.
        in_names: each flat input as the function's signature names it.
        dynamic: ``{input name: {dim: symbol}}``.
    """

    def __init__(self, header: dict, raw_arrays: list[bytes], backend: str | None = None):
        self._header, self._raw = header, raw_arrays
        self.name = header["name"]
        self.in_tree = trees.from_json(header["in_tree"])
        self.out_tree = trees.from_json(header["out_tree"])
        self.in_names = list(header["in_names"])
        self.in_avals = [_aval_of_json(a) for a in header["in_avals"]]
        self._dims = {int(i): {int(d): s for d, s in ds.items()}
                      for i, ds in header["dynamic"].items()}
        self.dynamic = {self.in_names[i]: dict(ds) for i, ds in self._dims.items()}
        self.backend = backend
        registry.get(backend)       # an unknown backend fails now
        self._native = None         # native.Library: the stored code that calls run on
        self._trees_ok = {self.in_tree}
        self._runs: dict = {}
        self._fast: dict = {}       # (shape, dtype) per array argument -> run
        example = self._example_sizes()
        self.graph = self._graph_at(example)
        self.graph_text = str(self.graph)
        self.out_avals = list(self.graph.out_avals)

    def _example_sizes(self):
        sizes = {}
        for i, ds in self._dims.items():
            for d, s in ds.items():
                sizes[s] = self.in_avals[i].shape[d]
        return sizes

    def _graph_at(self, sizes):
        h = self._header
        body, raw = (h["graph"], self._raw) if not h["patches"] else dyn.apply(
            h["graph"], self._raw, h["patches"], sizes)
        graph = check_graph(serialize.decode(body, raw))
        if h["patches"]:
            graph = check_graph(passes.lower_custom(passes.simplify(graph)))
        return graph

    @property
    def native(self) -> bool:
        """Whether calls run the native code stored in the file (see :meth:`save`)."""
        return self._native is not None

    def _explain(self, arrays):
        """Run the graph in the interpreter, which raises the error the stored native code
        could only report by a code (an index out of bounds, named with the user's line)."""
        registry.get("interpreter").compile(self.graph)(arrays)

    def _run(self, sizes: tuple):
        if self._native is not None and not sizes:
            return self._native
        run = self._runs.get(sizes)
        if run is None:
            graph = self.graph if sizes == tuple(sorted(self._example_sizes().items())) \
                else self._graph_at(dict(sizes))
            run = self._runs[sizes] = registry.get(self.backend).compile(graph)
        return run

    def _check(self, leaves):
        """(the arrays to run on, the dynamic sizes) or a TypeError/ValueError naming the
        input and what was expected."""
        arrays, sizes = [], {}
        for i, (x, want, name) in enumerate(zip(leaves, self.in_avals, self.in_names,
                                                strict=True)):
            ds = self._dims.get(i)
            if type(x) is np.ndarray:
                a = x
            elif want.weak_type and isinstance(x, (bool, int, float, complex)):
                a = np.asarray(x, want.dtype)
            else:
                a = np.asarray(x)
            shape_ok = a.ndim == want.ndim and all(
                n == w or (ds is not None and d in ds) for d, (n, w) in enumerate(
                    zip(a.shape, want.shape, strict=True)))
            if not shape_ok or a.dtype != want.dtype:
                raise TypeError(f"exported {self.name}: input {name} is {a.dtype}{list(a.shape)}; "
                                f"expected {self._describe(i)}")
            for d, s in (ds or {}).items():
                if sizes.setdefault(s, a.shape[d]) != a.shape[d]:
                    raise ValueError(f"exported {self.name}: input {name} has size "
                                     f"{a.shape[d]} in dimension {d} ({s!r}), but an earlier "
                                     f"input gives {s!r} the size {sizes[s]}")
            arrays.append(a)
        return arrays, tuple(sorted(sizes.items()))

    def _describe(self, i) -> str:
        want, ds = self.in_avals[i], self._dims.get(i, {})
        dims = [ds.get(d, n) for d, n in enumerate(want.shape)]
        return f"{want.dtype}[{', '.join(map(str, dims))}]"

    def __call__(self, *args, **kwargs):
        plain = not kwargs and all(type(a) is np.ndarray and a.flags.c_contiguous
                                   for a in args)
        if plain:
            run = self._fast.get(tuple((a.shape, a.dtype) for a in args))
            if run is not None:
                return tree_unflatten(self.out_tree, run(list(args)))
        leaves, tree = tree_flatten((args, kwargs))
        if tree not in self._trees_ok:
            if trees.to_json(tree, f"exported {self.name}") != self._header["in_tree"]:
                raise TypeError(f"exported {self.name}: the arguments have the structure "
                                f"{tree}; expected {self.in_tree} (the non-static arguments "
                                "of the exported call)")
            self._trees_ok.add(tree)
        arrays, sizes = self._check(leaves)
        run = self._run(sizes)
        if plain:       # checked once: C-contiguous arrays of these types take the fast call
            self._fast[tuple((a.shape, a.dtype) for a in args)] = getattr(run, "trusted", run)
        return tree_unflatten(self.out_tree, run(arrays))

    def compile_library(self, path, name: str, *, header=None) -> dict:
        """Compile the export ahead of time into the shared library ``path`` with one C
        entry point, ``int name(const void *const *inputs, void *const *outputs)``, query
        functions for the inputs' and outputs' count, rank, shape and dtype, and a C
        header (``header``, default ``path`` with ``.h``) that documents them. The
        weights are embedded; the BLAS (NumPy's bundled OpenBLAS) is opened at the first
        call from the path recorded now, or from ``name_init(path)``. See
        ``backends/llvm/aot.py`` for the calling convention and return codes.

        Args:
            path: the ``.so`` file to write.
            name (str): the C name of the entry (a C identifier); the query functions are
                ``name_num_inputs`` and so on.
            header (path, default ``None``): where to write the header.

        Returns:
            A dict: ``inputs``/``outputs`` as (shape, dtype) pairs in the flat order of
            ``in_avals``/``out_avals``, ``blas`` (the recorded library path or None),
            ``arena_bytes`` and ``header``.

        Raises:
            NotImplementedError: a step is not native code in the cpu backend (an
                interpreter fallback, sqrtm/sylvester or a complex LAPACK call, fft, a
                kernel-gradient convolution); the message names the primitive.
                ValueError: the export has dynamic dimensions (a library has fixed
                shapes: export at the shapes to compile). RuntimeError: no ``cc``.

        Example::

            >>> exp.compile_library("mlp.so", "mlp")      # writes mlp.so and mlp.h
        """
        from functorch_core.backends.llvm import aot
        if self._dims:
            raise ValueError(f"compile_library({self.name}): the export has dynamic "
                             f"dimensions {self.dynamic}; a shared library has fixed shapes "
                             "(export without dynamic, at the shapes to compile)")
        return aot.compile_library(self.graph, path, name, header,
                                   doc=f"Exported from {self.name}.")

    def save(self, path, *, native: bool = True) -> None:
        """Write the export to the file ``path`` (``ir.serialize``'s format: JSON graph,
        raw constants, SHA-256 checksum, format version).

        Args:
            path: the file to write.
            native (bool, default ``True``): also store the export compiled for this CPU
                (:meth:`compile_library`'s shared library, with the CPU flags it needs), so
                that :func:`load_exported` on a machine with those flags calls it without
                compiling anything: the first call of a loaded file costs a ``dlopen``. It
                is left out, silently, where a library cannot hold the export (dynamic
                dimensions, a step that is not native code) or there is no ``cc``; saving
                then takes the compile time of the library (about a second for a CNN).

        Example::

            >>> exp.save("model.fcx")
            >>> fc.load_exported("model.fcx").native      # on this machine
            True
        """
        header, raw = {k: v for k, v in self._header.items() if k != "native"}, list(self._raw)
        if native:
            # the entry is named by the digest of the graph and its constants: libraries of
            # two exports never share a symbol
            digest = hashlib.sha256(self.graph_text.encode())
            for r in self._raw:
                digest.update(r)
            entry = "fcx_" + digest.hexdigest()[:24]
            lib = stored.build(self, entry)
            if lib is not None:
                header["native"] = {"array": len(raw), "name": entry,
                                    "machine": stored.machine()}
                raw.append(lib)
        data = serialize.pack(header, [np.frombuffer(r, np.uint8) for r in raw])
        with open(path, "wb") as f:
            f.write(data)

    def __repr__(self):
        ins = ", ".join(f"{n}: {self._describe(i)}" for i, n in enumerate(self.in_names))
        return f"<Exported {self.name}({ins}) -> {len(self.out_avals)} outputs>"


def load_exported(path, *, backend=None) -> Exported:
    """Load an export saved by :meth:`Exported.save`; imports none of the user's code.

    When the file carries native code for this CPU (see :meth:`Exported.save`) and calls
    run on the cpu backend, they run it: nothing is compiled and LLVM is not loaded
    (``.native`` says so); on a machine without the building CPU's flags it warns once
    and compiles.

    Args:
        path: the file.
        backend (str, default ``None``): where calls run: ``'cpu'`` (native code) or
            ``'interpreter'``; ``None`` picks ``fc.default_backend()``.

    Raises:
        ir.serialize.FormatError: the file is truncated, from another format version, or
            fails its checksum; nothing in it is run.

    Example::

        >>> exp = fc.load_exported("model.fcx")
        >>> exp(np.ones((5, 3), np.float32), w)
    """
    with open(path, "rb") as f:
        data = serialize.read(f, str(path))
    header, raw = serialize.unpack(data)
    if header.get("kind") != KIND:
        raise serialize.FormatError(f"{path} holds no functorch_core export")
    if header.get("export_version") != EXPORT_VERSION:
        raise serialize.FormatError(f"{path} is an export of version "
                                    f"{header.get('export_version')}; this functorch_core "
                                    f"loads version {EXPORT_VERSION}")
    try:
        exp = Exported(header, raw, backend)
        if (backend or registry.default_backend()) == "cpu":
            exp._native = stored.load(header, raw, exp.out_avals, f"exported {exp.name}",
                                      explain=exp._explain)
    except (KeyError, TypeError, IndexError, RecursionError) as err:
        raise serialize.FormatError(f"{path}: the export is malformed: {err!r}") from err
    return exp
