"""``freeze``: parameters bound as constants, then the freezing rewrites."""

from __future__ import annotations

import numpy as np

from functorch_core.backends import registry
from functorch_core.ir import check_graph, current_trace, passes
from functorch_core.ir import primitives as P
from functorch_core.ir.passes.freezing import fold_affine_into_products, pretranspose_constants
from functorch_core.ir.pytree import tree_flatten, tree_map, tree_unflatten

from .._internal.tracing import leaf_aval, trace_call
from .trees import callable_name


def _constants(tree):
    """``tree`` with every array leaf a plain, read-only ndarray copy (so the frozen
    function does not change when the caller's arrays do)."""
    def leaf(x):
        if isinstance(x, np.ndarray):
            a = np.array(x, copy=True)
            a.flags.writeable = False
            return a
        return x
    return tree_map(leaf, tree)


_WRITES = ("{}: the function writes into its frozen parameters (a BatchNorm in training "
           "mode updates its running statistics; call model.eval() before freezing)")


class Frozen:
    """A function with its parameters bound as constants; see :func:`freeze`."""

    def __init__(self, func, params, backend, name):
        self.func, self.params, self.backend, self.__name__ = func, params, backend, name
        self._graphs: dict = {}
        self._runs: dict = {}
        self._fast: dict = {}       # (shape, dtype) per array argument -> (run, out_tree)

    def _apply(self, *args):
        if self.params is None:
            return self.func(*args)
        return self.func(self.params, *args)

    def graph_for(self, *args, folded=True):
        """The frozen graph for these arguments (``folded=False``: constants bound and
        simplified, without the freezing rewrites), with the output structure."""
        leaves, in_tree = tree_flatten(args)
        key = (in_tree, tuple(leaf_aval(x, f"an argument of {self.__name__}") for x in leaves),
               folded)
        hit = self._graphs.get(key)
        if hit is None:
            try:
                traced = trace_call(self._apply, args, {}, (), name=self.__name__)
            except ValueError as err:
                if "read-only" not in str(err):
                    raise
                raise ValueError(_WRITES.format(self.__name__)) from err
            if traced.captured:
                raise ValueError(f"{self.__name__}: the frozen function closes over values "
                                 "of an enclosing trace")
            graph = traced.graph
            if any(e.prim.mutates for e in graph.eqns) or P.setitem in {
                    e.prim for e in passes.inline(graph).eqns}:
                raise ValueError(_WRITES.format(self.__name__))
            # grow=False: a bias broadcast to the batch stays an equation, so no constant
            # has the batch's shape and the graph exports with a dynamic batch
            graph = passes.simplify(passes.inline(graph, (P.call, *passes.CUSTOM_CALLS)),
                                    grow=False)
            if folded:
                graph = fold_affine_into_products(graph)
                graph = pretranspose_constants(passes.simplify(graph, grow=False))
            hit = self._graphs[key] = (check_graph(graph), traced.out_tree)
        return hit

    def __call__(self, *args):
        plain = current_trace() is None and all(
            type(a) is np.ndarray and a.flags.c_contiguous for a in args)
        if plain:
            hit = self._fast.get(tuple((a.shape, a.dtype) for a in args))
            if hit is not None:
                return tree_unflatten(hit[1], hit[0](list(args)))
        graph, out_tree = self.graph_for(*args)
        leaves = tree_flatten(args)[0]
        if current_trace() is not None:     # under export, jit or a transform: one call
            outs = P.call.bind(*leaves, graph=graph, name=self.__name__)
        else:
            run = self._runs.get(id(graph))
            if run is None:
                run = self._runs[id(graph)] = registry.get(self.backend).compile(graph)
            if plain:
                # C-contiguous arrays of the signature's dtypes: the backend's unchecked call
                self._fast[tuple((a.shape, a.dtype) for a in args)] = (
                    getattr(run, "trusted", run), out_tree)
            outs = run([np.asarray(x) for x in leaves])
        return tree_unflatten(out_tree, outs)


def freeze(func, params=None, *, backend=None) -> Frozen:
    """Bind ``params`` as constants of ``func``, then constant-fold and apply the freezing
    rewrites: a bias and an eval-mode BatchNorm after a convolution or linear layer are
    folded into its weights (``conv``/``dot_general`` followed by per-channel
    ``add``/``sub``/``mul``/``div`` by constants becomes one product and one bias add),
    and constant ``dot_general`` operands are stored in the layout gemm reads directly.

    Args:
        func: ``func(params, *args)``, or a module (an ``nn.Module`` or any callable
            pytree) called as ``func(*args)`` when ``params`` is None. A module must be in
            eval mode (``model.eval()``): freezing refuses a function that writes into
            arrays.
        params (pytree, default ``None``): the parameters to bind (a module's state dict,
            a dict of arrays, or a module); they are copied, so later changes to the
            caller's arrays do not reach the frozen function.
        backend (str, default ``None``): where calls run (``'cpu'`` or
            ``'interpreter'``; ``None``: ``fc.default_backend()``).

    Returns:
        A :class:`Frozen`: ``frozen(*args)`` traces once per input signature and runs the
        folded graph; ``fc.export(frozen, *args)`` exports it; ``frozen.graph_for(*args)``
        shows it.

    Example::

        >>> model.eval()
        >>> frozen = fc.freeze(model)                 # weights are constants now
        >>> frozen(x)                                 # same result as model(x), up to rounding
        >>> fc.export(frozen, x).save("model.fcx")
    """
    name = f"freeze({callable_name(func)})"
    if params is None:
        return Frozen(_constants(func), None, backend, name)
    return Frozen(func, _constants(params), backend, name)
