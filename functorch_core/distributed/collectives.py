"""Collectives on pytrees of arrays, eagerly over MPI (``backends/mpi``).

Every rank first agrees on the call and the tree (``_signature``); then the leaves of one
dtype travel in one buffer (one MPI call per dtype: a leaf alone, when contiguous, is passed
as it is, without a copy), and the results are views of the received buffer. The inputs
are never modified. A leaf that is a tracer (inside ``jit``, ``grad``, ``vmap``) sends the
whole call to ``functorch_core.lax.parallel`` with the axis name ``WORLD``.
"""

from __future__ import annotations

import math

import numpy as np

from functorch_core.backends import mpi, profiling
from functorch_core.ir.dtypes import NARROW_FLOATS, compute_dtype
from functorch_core.ir.pytree import tree_flatten, tree_map, tree_unflatten
from functorch_core.ir.trace import Tracer
from functorch_core.lax import parallel

from . import _signature
from .world import ReduceOp

__all__ = ["all_gather", "all_reduce", "broadcast", "recv", "reduce_scatter", "send"]

OPS = ("sum", "mean", "max", "min", "prod")
_IN_GRAPH = {"sum": parallel.psum, "mean": parallel.pmean, "max": parallel.pmax,
             "min": parallel.pmin}


def _op(call: str, op) -> str:
    value = op.value if isinstance(op, ReduceOp) else op
    if value not in OPS:
        raise ValueError(f"{call}: op must be one of {OPS} or a ReduceOp, got {op!r}")
    return value


def _in_graph(call: str, tree, op=None):
    """The collective on a tree with a tracer leaf (inside ``jit``, ``grad``, ``vmap``):
    ``functorch_core.lax.parallel``'s over the process axis ``WORLD``."""
    if call == "all_gather":
        return parallel.all_gather(tree, mpi.WORLD)
    if call == "reduce_scatter" and op in ("sum", "mean"):
        out = parallel.psum_scatter(tree, mpi.WORLD)
        return out if op == "sum" else tree_map(lambda x: x / mpi.world().size, out)
    if call == "all_reduce" and op in _IN_GRAPH:
        return _IN_GRAPH[op](tree, mpi.WORLD)
    what = f"{call}(op={op!r})" if op is not None else call
    raise NotImplementedError(
        f"{what} inside jit/grad/vmap: there is no such collective primitive (in a graph: "
        f"all_reduce with op sum, mean, max or min; all_gather; reduce_scatter with sum or "
        f"mean); call it outside the transform")


def _prepare(call, tree):
    """The tree's leaves for an eager collective, or None when one is a tracer."""
    leaves, td = tree_flatten(tree)
    if any(type(x) is not np.ndarray and isinstance(x, Tracer) for x in leaves):
        return None
    return _signature.Leaves(call, leaves, td)


def _groups(dtypes):
    """Leaf indices grouped by the dtype they travel in, in order of first appearance."""
    groups: dict = {}
    for i, dt in enumerate(dtypes):
        groups.setdefault(dt, []).append(i)
    return groups


def _pack(arrays, idx, dtype, lead=()):
    """The leaves ``idx`` as one C-contiguous buffer of ``dtype`` (shape ``lead + (n,)``);
    a lone contiguous leaf of that dtype is passed as it is (a view, no copy)."""
    rows = math.prod(lead)
    if len(idx) == 1:
        a = arrays[idx[0]]
        return np.ascontiguousarray(a, dtype).reshape(*lead, a.size // rows)
    parts = [arrays[i].reshape(*lead, arrays[i].size // rows) for i in idx]
    return np.concatenate(parts, axis=-1, dtype=dtype)


def _unpack(buf, idx, shapes, out, lead=()):
    """Each leaf ``idx`` as a view of ``buf`` (packed as ``_pack`` packs) shaped ``shapes[i]``."""
    o, rows = 0, math.prod(lead)
    if len(idx) == 1:
        out[idx[0]] = buf.reshape(shapes[idx[0]])
        return
    for i in idx:
        n = math.prod(shapes[i]) // rows
        out[i] = buf[..., o:o + n].reshape(shapes[i])
        o += n


def _span(name, leaves: _signature.Leaves, **args):
    if profiling.recorder is None:
        return profiling.span(name, "collective")
    arrays = [a for a in leaves.arrays if a is not None]
    w = mpi.world()
    return profiling.span(name, "collective", {
        **args, "bytes": int(sum(a.nbytes for a in arrays)),
        "dtype": ",".join(sorted({a.dtype.name for a in arrays})), "leaves": len(arrays),
        "ranks": w.size, "rank": w.rank})


def _mean_dtype(dt):
    """The dtype a mean is summed in: NumPy's mean of integers and bools is float64; float16
    is summed in float32 and rounded once."""
    if dt.kind in "biu":
        return np.dtype(np.float64)
    return compute_dtype(dt)


def _divide(total, n):
    """``total / n`` as ``np.mean`` divides: a complex sum part by part."""
    if total.dtype.kind != "c":
        return total / total.dtype.type(n)
    out = np.empty_like(total)
    out.real, out.imag = total.real / out.real.dtype.type(n), total.imag / out.real.dtype.type(n)
    return out


def all_reduce(tree, op="sum"):
    """Reduce every leaf elementwise over the ranks; every rank gets the result.

    The result has each leaf's dtype and equals NumPy's ufunc reduced over the ranks'
    copies in that dtype: ``np.add`` for ``"sum"`` (integers wrap; for bool it is logical
    or), ``np.multiply`` for ``"prod"`` (bool: logical and), ``np.maximum``/``np.minimum``
    for ``"max"``/``"min"``. float16 is reduced in float32 and rounded once. ``"mean"`` is
    the sum divided by the world size; of integers and bools it is float64, as
    ``np.mean`` gives. Leaves of one dtype travel in one MPI call.

    Args:
        tree: a pytree of arrays (NumPy arrays, NumPy or Python scalars, 0-d and empty
            arrays included), the same structure, shapes and dtypes on every rank (checked:
            a difference raises ``DistributedError`` on every rank, naming the leaf).
        op (str | ReduceOp): ``"sum"`` (default), ``"mean"``, ``"max"``, ``"min"``,
            ``"prod"``, or torch's ``ReduceOp.SUM``/``AVG``/``MAX``/``MIN``/``PRODUCT``.

    Returns:
        a pytree of the same structure with new arrays (the input is not modified).

    Example::

        >>> grads = dist.all_reduce({"w": gw, "b": gb}, op="mean")   # averaged over ranks
    """
    op = _op("all_reduce", op)
    call = f"all_reduce(op={op!r})"
    leaves = _prepare(call, tree)
    if leaves is None:
        return _in_graph("all_reduce", tree, op)
    with _span("all_reduce", leaves, op=op):
        _signature.agree(leaves)
        out = _reduced(leaves, op, mpi.all_reduce, (), [a.shape for a in leaves.arrays])
    return tree_unflatten(leaves.td, out)


def _reduced(leaves, op, reduce, lead, shapes):
    """The leaves reduced by ``reduce(buffer, op, what)`` (MPI's all_reduce or
    reduce_scatter) one dtype group at a time, packed with the leading axes ``lead``,
    unpacked into ``shapes``; ``"mean"`` divides a sum by the world size."""
    arrays, n = leaves.arrays, mpi.world().size
    dtypes = [_mean_dtype(a.dtype) if op == "mean" else a.dtype for a in arrays]
    out: list = [None] * len(arrays)
    for dt, idx in _groups(dtypes).items():
        red = reduce(_pack(arrays, idx, dt, lead=lead), "sum" if op == "mean" else op,
                     leaves.describe(idx))
        _unpack(_divide(red, n) if op == "mean" else red, idx, shapes, out)
    if op == "mean":
        out = [o.astype(a.dtype) if a.dtype in NARROW_FLOATS else o
               for o, a in zip(out, arrays, strict=True)]
    return out


def broadcast(tree, src: int = 0):
    """Rank ``src``'s leaves on every rank.

    Args:
        tree: a pytree of arrays; on every rank it must have ``src``'s structure, shapes
            and dtypes (checked), its values elsewhere are not read.
        src (int): the rank whose values are sent. Default: ``0``.

    Returns:
        a pytree of new arrays holding ``src``'s values.

    Example::

        >>> params = dist.broadcast(params, src=0)     # every rank starts from rank 0's
    """
    call = f"broadcast(src={src})"
    leaves = _prepare(call, tree)
    if leaves is None:
        _in_graph(call, tree)
    with _span("broadcast", leaves, src=src):
        _signature.agree(leaves)
        arrays = leaves.arrays
        out: list = [None] * len(arrays)
        for dt, idx in _groups([a.dtype for a in arrays]).items():
            got = mpi.broadcast(_pack(arrays, idx, dt), src, leaves.describe(idx))
            _unpack(got, idx, [a.shape for a in arrays], out)
    return tree_unflatten(leaves.td, out)


def all_gather(tree):
    """Every rank's leaves stacked along a new leading axis, in rank order.

    Args:
        tree: a pytree of arrays, the same structure, shapes and dtypes on every rank.

    Returns:
        a pytree whose leaf of shape ``s`` is an array of shape ``(world_size(), *s)``.

    Example::

        >>> dist.all_gather(np.float32(dist.rank()))      # on 2 ranks
        array([0., 1.], dtype=float32)
    """
    leaves = _prepare("all_gather", tree)
    if leaves is None:
        return _in_graph("all_gather", tree)
    with _span("all_gather", leaves):
        _signature.agree(leaves)
        arrays, n = leaves.arrays, mpi.world().size
        out: list = [None] * len(arrays)
        for dt, idx in _groups([a.dtype for a in arrays]).items():
            got = mpi.all_gather(_pack(arrays, idx, dt), leaves.describe(idx))
            _unpack(got, idx, [(n, *a.shape) for a in arrays], out, lead=(n,))
    return tree_unflatten(leaves.td, out)


def reduce_scatter(tree, op="sum"):
    """Reduce over the ranks and keep this rank's slice: ``all_reduce(tree, op)[rank()]``
    leaf by leaf, with less traffic.

    Args:
        tree: a pytree of arrays, each with a leading axis of length ``world_size()``, the
            same structure, shapes and dtypes on every rank.
        op (str | ReduceOp): as ``all_reduce``'s. Default: ``"sum"``.

    Returns:
        a pytree whose leaf of shape ``(world_size(), *s)`` is an array of shape ``s``.

    Example::

        >>> shard = dist.reduce_scatter(np.ones((dist.world_size(), 3)))  # (3,), summed
    """
    op = _op("reduce_scatter", op)
    call = f"reduce_scatter(op={op!r})"
    leaves = _prepare(call, tree)
    if leaves is None:
        return _in_graph("reduce_scatter", tree, op)
    with _span("reduce_scatter", leaves, op=op):
        _signature.agree(leaves)
        arrays, w = leaves.arrays, mpi.world()
        wrong = [i for i, a in enumerate(arrays) if a.ndim == 0 or a.shape[0] != w.size]
        if wrong:
            a = arrays[wrong[0]]
            raise ValueError(f"{call}: leaf {leaves.path(wrong[0])} of shape {a.shape} needs "
                             f"a leading axis of the world size {w.size}")
        out = _reduced(leaves, op, mpi.reduce_scatter, (w.size,),
                       [a.shape[1:] for a in arrays])
    return tree_unflatten(leaves.td, out)


def send(tree, dst: int, tag: int = 0) -> None:
    """Send a pytree of arrays to rank ``dst`` (which calls ``recv(like, src=this rank)``).

    A small description of the tree goes first, so that the receiver checks it against
    its ``like`` tree and raises, naming the leaf, on a difference.

    Args:
        tree: a pytree of arrays.
        dst (int): the receiving rank.
        tag (int): tells apart several messages between the same ranks. Default: ``0``.

    Example::

        >>> if dist.rank() == 0:
        ...     dist.send({"h": h}, dst=1)
    """
    call = f"send(dst={dst}, tag={tag})"
    leaves = _prepare(call, tree)
    if leaves is None:
        _in_graph(call, tree)
    if leaves.bad:
        i, why = leaves.bad[0]
        raise TypeError(f"{call}: leaf {leaves.path(i)} is not an array: {why}")
    with _span("send", leaves, dst=dst, tag=tag):
        sig = _signature.local(leaves, None)
        mpi.send_object(sig, dst, tag, f" ({call}: the tree's description)")
        arrays = leaves.arrays
        for dt, idx in _groups([a.dtype for a in arrays]).items():
            mpi.send(_pack(arrays, idx, dt), dst, tag, leaves.describe(idx))


def recv(like, src: int, tag: int = 0):
    """Receive the pytree rank ``src`` sends with ``send(tree, dst=this rank)``.

    Args:
        like: a pytree with the structure, shapes and dtypes expected (its values are not
            read); a difference from what ``src`` sent raises ``DistributedError`` naming
            the leaf (the message is received and dropped, so the ranks stay in step).
        src (int): the sending rank.
        tag (int): as the sender's. Default: ``0``.

    Returns:
        a pytree like ``like`` holding the values received.

    Example::

        >>> if dist.rank() == 1:
        ...     got = dist.recv({"h": np.empty((4, 8), np.float32)}, src=0)
    """
    call = f"recv(src={src}, tag={tag})"
    leaves = _prepare(call, like)
    if leaves is None:
        _in_graph(call, like)
    with _span("recv", leaves, src=src, tag=tag):
        theirs = mpi.recv_object(src, tag, f" ({call}: the tree's description)")
        mine = _signature.local(leaves, None)
        same = theirs[2:] == mine[2:]
        shapes = [e[1] for e in theirs[4]]
        dtypes = [np.dtype(e[0]) for e in theirs[4]]
        got: list = [None] * len(shapes)
        for dt, idx in _groups(dtypes).items():
            total = sum(math.prod(shapes[i]) for i in idx)
            what = leaves.describe(idx) if same else f" (from rank {src})"
            buf = mpi.recv(np.empty(total, dt), src, tag, what)
            _unpack(buf, idx, shapes, got)
        if not same:
            why = _signature.mismatch([mine, (mine[0], None, *theirs[2:])],
                                      labels=["`like`", f"rank {src}'s tree"])
            raise mpi.DistributedError(f"{call}: what rank {src} sent differs from `like`: "
                                       f"{why}")
        if leaves.bad:
            i, why = leaves.bad[0]
            raise TypeError(f"{call}: leaf {leaves.path(i)} of `like` is not an array: {why}")
    return tree_unflatten(leaves.td, got)
