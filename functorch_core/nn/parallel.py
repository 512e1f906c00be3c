"""``DistributedDataParallel`` and ``SyncBatchNorm``: data parallelism over the process world.

Every rank holds the whole model and a slice of the global batch. The gradient of a loss
through a :class:`DistributedDataParallel` module is averaged over the ranks inside the
backward pass: the parameters enter the forward through one identity per *bucket* (a
``custom_vjp`` whose backward all-reduces that bucket's gradients as one concatenated
buffer, ``psum`` over :data:`WORLD`), so each bucket's reduction sits in the backward graph
where its gradients are complete, before the rest of the backward pass.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict

import numpy as np

import functorch_core.numpy as fnp
from functorch_core import distributed as dist
from functorch_core.api import jit
from functorch_core.backends import mpi
from functorch_core.lax import parallel as lp
from functorch_core.transforms import custom_vjp, stop_gradient

from .module import Module, shape_of
from .normalization import _BatchNorm
from .stateless import functional_call, with_state

__all__ = ["DistributedDataParallel", "SyncBatchNorm", "WORLD"]

WORLD = dist.WORLD


# --- buckets -----------------------------------------------------------------------------

def plan_buckets(named, cap_bytes):
    """Group ``named`` (``[(name, array)]`` in registration order) into buckets.

    As torch does, buckets are filled in reverse registration order (the order in which a
    backward pass completes the gradients), one dtype per bucket; a bucket is closed once
    it holds ``cap_bytes`` or more. Returns a tuple of tuples of names.
    """
    open_, sizes, done = {}, {}, []
    for name, v in reversed(named):
        dt = np.dtype(v.dtype)
        open_.setdefault(dt, []).append(name)
        sizes[dt] = sizes.get(dt, 0) + int(np.prod(shape_of(v), dtype=np.int64)) * dt.itemsize
        if sizes[dt] >= cap_bytes:
            done.append(tuple(open_.pop(dt)))
            sizes[dt] = 0
    done.extend(tuple(names) for names in open_.values())
    return tuple(done)


def _reduce_flat(cts, by_count):
    """The rank mean of the cotangents ``cts``: one ``psum`` over :data:`WORLD` of their
    concatenation, with a trailing 1 that counts the ranks taking part (a rank shadowing
    the reduction after ``join()`` sends 0 there and zeros for the gradients)."""
    dtype = cts[0].dtype
    flat = fnp.concatenate([fnp.ravel(c) for c in cts] + [fnp.ones(1, dtype)])
    total = lp.psum(flat, WORLD)
    divisor = total[-1] if by_count else dist.world_size()
    out, start = [], 0
    for c in cts:
        size = int(np.prod(shape_of(c), dtype=np.int64))
        out.append(fnp.reshape(total[start:start + size] / divisor, shape_of(c)))
        start += size
    return tuple(out)


def _identity(leaves):
    return leaves


def _make_sync(by_count):
    sync = custom_vjp(_identity)

    def bwd(_, cts):
        cts = tuple(cts)
        return (_reduce_flat(cts, by_count),)
    sync.defvjp(lambda leaves: (leaves, None), bwd)
    return sync


# A finished rank's stand-in for a bucket reduction: the same psum, compiled as the other
# ranks' jitted steps compile theirs, so that both make the same MPI call (a blocking
# MPI_Allreduce of native code does not match the non-blocking one of an eager call
# under a timeout).
_shadow_psum = jit(lambda zeros: lp.psum(zeros, WORLD))


# divided by the world size (torch's default, also under ``join()``), or by the number of
# ranks that contributed (``join(divide_by_initial_world_size=False)``)
_SYNC = {False: _make_sync(False), True: _make_sync(True)}


def _bucket_sizes(named, buckets):
    arrays = dict(named)
    return tuple((sum(int(np.prod(shape_of(arrays[n]), dtype=np.int64)) for n in names),
                  np.dtype(arrays[names[0]].dtype).str) for names in buckets)


def _trainable(module):
    """``[(name, parameter)]`` that get a gradient: inexact and not frozen."""
    out = []
    for prefix, mod in module.named_modules():
        frozen = mod.__dict__.get("_frozen", frozenset())
        for name, v in mod.__dict__["_parameters"].items():
            if v is None or name in frozen or getattr(v, "requires_grad", True) is False:
                continue
            if not np.issubdtype(np.dtype(v.dtype), np.inexact):
                continue
            out.append((f"{prefix}.{name}" if prefix else name, v))
    seen, unique = set(), []
    for name, v in out:                     # tied parameters: one entry, as named_parameters
        if id(v) not in seen:
            seen.add(id(v))
            unique.append((name, v))
    return unique


def _check_same_layout(who, named):
    """Every rank's parameters and buffers have the same names, shapes and dtypes."""
    mine = [(k, tuple(np.shape(v)), np.dtype(v.dtype).str) for k, v in named]
    every = mpi.all_gather_object(mine, " (DistributedDataParallel: the module's layout)")
    for r, theirs in enumerate(every):
        if theirs != mine:
            diff = next((f"{a} vs {b}" for a, b in zip(mine, theirs, strict=False) if a != b),
                        f"{len(mine)} vs {len(theirs)} tensors")
            raise ValueError(f"{who}: rank {dist.rank()}'s module differs from rank {r}'s "
                             f"(name, shape, dtype): {diff}")


class _Record:
    """What the last traced forward did: ``order``, the buckets in the order the backward
    reduces them. Compared by identity in the module's pytree structure."""

    __slots__ = ("order", "static_plan")

    def __init__(self):
        self.order = None
        self.static_plan = None     # static_graph=True: the buckets of the first forward


def _call_with_bucket_hooks(ddp, sync, buckets, inputs, kwargs):
    """Call a copy of ``ddp.module`` whose modules each pass the buckets holding their
    parameters through ``sync`` just before their forward runs (once per call): each
    bucket's identity then sits before the first use of its parameters, so the backward
    reduces it as soon as its gradients are complete."""
    named = dict(_trainable(ddp.module))
    bucket_of = {id(named[n]): b for b, names in enumerate(buckets) for n in names}
    root = with_state(ddp.module, {})
    copies = [m for _, m in root.named_modules()]
    order = []

    def pre_hook(module, args):
        for v in list(module.__dict__["_parameters"].values()):
            b = None if v is None else bucket_of.get(id(v))
            if b is None or b in order:
                continue
            order.append(b)
            leaves = tuple(named[n] for n in buckets[b])
            new = {id(a): o for a, o in zip(leaves, sync(leaves), strict=True)}
            for m in copies:
                ps = m.__dict__["_parameters"]
                for k, p in ps.items():
                    if p is not None and id(p) in new:
                        ps[k] = new[id(p)]

    for m in copies:
        if any(v is not None and id(v) in bucket_of for v in m.__dict__["_parameters"].values()):
            m.__dict__["_forward_pre_hooks"] = OrderedDict(
                [("ddp_bucket_sync", pre_hook), *m.__dict__["_forward_pre_hooks"].items()])
    out = root(*inputs, **kwargs)
    missing = [n for b, names in enumerate(buckets) if b not in order for n in names]
    if missing:
        raise RuntimeError(f"DistributedDataParallel: the forward did not run the modules "
                           f"holding parameters {missing} (unused, or read outside their "
                           f"module's forward), so their gradients would not be averaged; "
                           f"pass find_unused_parameters=True")
    ddp._record.order = tuple(reversed(order))
    return out


class DistributedDataParallel(Module):
    """Data parallelism over the process world, as ``torch.nn.parallel.DistributedDataParallel``.

    Wrapping broadcasts rank 0's parameters and buffers to every rank (in place, so every
    rank starts from the same model). The gradient of a loss through the wrapped module
    (a plain call, or ``functional_call(ddp, (params, buffers), args)``) is the mean over
    the ranks of each rank's gradient, reduced in buckets inside the backward pass. In
    training mode with ``broadcast_buffers``, each forward first copies rank 0's buffers to
    every rank (as torch does), inside the traced step.

    The names of parameters and buffers carry the ``module.`` prefix, as in torch
    (``ddp.state_dict()`` has ``module.0.weight``); ``ddp.module.state_dict()`` has the
    plain names, and ``ddp.load_state_dict`` takes either form.

    Under ``jit``, what ``no_sync()`` and ``join()`` change is read when the step is
    traced: trace the step in the mode it runs in (jit one step function for inside
    ``no_sync()`` and one for outside), or pass the module as an argument of the jitted
    function (its mode is part of its pytree structure, so a change retraces).

    Args:
        module (Module): the model, the same on every rank up to its values.
        static_graph (bool): the set of trainable parameters and their shapes are fixed
            after the first forward: the bucket plan is computed once and every later
            forward checks it. Default ``False`` (planned again at every trace).
        bucket_cap_mb (float): the size of a gradient bucket, in MiB. Default ``25``.
        broadcast_buffers (bool): copy rank 0's buffers to every rank at each training
            forward. Default ``True``.
        find_unused_parameters (bool): ``False``: each bucket enters the forward just
            before the first module holding one of its parameters runs (so its reduction
            overlaps the rest of the backward), and a forward that does not run some
            parameter's module is an error naming it. ``True``: every bucket enters
            before the forward, so parameters that are unused, or read outside their
            module's forward, get their (possibly zero) gradient averaged too. Default
            ``False``.
        device_ids, output_device: accepted for torch's signature; the model computes
            where its arrays are.

    Example::

        >>> dist.init()
        >>> ddp = DistributedDataParallel(nn.Linear(4, 1))
        >>> params = dict(ddp.named_parameters())
        >>> loss = lambda p, x, y: ((fc.functional_call(ddp, p, (x,)) - y) ** 2).mean()
        >>> grads = fc.jit(fc.grad(loss))(params, x, y)     # averaged over the ranks

    The functional form needs no wrapper: reduce the gradients yourself in the step::

        >>> @fc.jit
        ... def step(params, x, y):
        ...     grads = fc.grad(loss_of_plain_model)(params, x, y)
        ...     return dist.all_reduce(grads, op="mean")
    """

    def __init__(self, module, *, static_graph=False, bucket_cap_mb=25, broadcast_buffers=True,
                 find_unused_parameters=False, device_ids=None, output_device=None):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel(module=...): expected a Module, got "
                            f"{type(module).__name__}")
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel(bucket_cap_mb={bucket_cap_mb}): "
                             f"must be positive")
        dist.init()
        self.module = module
        self.static_graph = bool(static_graph)
        self.bucket_cap_mb = float(bucket_cap_mb)
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.require_backward_grad_sync = True
        self.join_divide_by_count = None        # None: not joined; else join()'s divisor
        self.last_joiner = None
        self._record = _Record()
        named = list(module.named_parameters()) + list(module.named_buffers())
        _check_same_layout("DistributedDataParallel", named)
        got = dist.broadcast([np.asarray(v) for _, v in named], src=0)
        for (_, v), b in zip(named, got, strict=True):
            v[...] = b

    # --- the forward --------------------------------------------------------------------

    def buckets(self):
        """The gradient buckets: a tuple of tuples of the wrapped module's parameter
        names (reverse registration order, ``bucket_cap_mb`` each)."""
        named = _trainable(self.module)
        plan = plan_buckets(named, self.bucket_cap_mb * 2 ** 20)
        if not self.static_graph:
            return plan
        layout = (plan, _bucket_sizes(named, plan))
        first = self._record.static_plan
        if first is None:
            self._record.static_plan = layout
        elif first != layout:
            raise ValueError(f"DistributedDataParallel(static_graph=True): the trainable "
                             f"parameters changed after the first step: buckets {first} "
                             f"became {layout}")
        return plan

    def forward(self, *inputs, **kwargs):
        if self.training and self.broadcast_buffers and self.join_divide_by_count is None:
            self._broadcast_buffers()
        if not self.require_backward_grad_sync or dist.world_size() == 1:
            return self.module(*inputs, **kwargs)
        sync = _SYNC[bool(self.join_divide_by_count)]
        buckets = self.buckets()
        if self.find_unused_parameters:
            # every bucket enters before the forward: right whatever reads the parameters
            arrays = dict(_trainable(self.module))
            synced = {}
            for names in reversed(buckets):
                synced.update(zip(names, sync(tuple(arrays[n] for n in names)), strict=True))
            self._record.order = tuple(range(len(buckets)))
            return functional_call(self.module, synced, inputs, kwargs)
        return _call_with_bucket_hooks(self, sync, buckets, inputs, kwargs)

    def _broadcast_buffers(self):
        """Rank 0's buffers written into every rank's (one ``psum`` per dtype, inside the
        trace: a rank's contribution is its buffers on rank 0, zeros elsewhere)."""
        if dist.world_size() == 1:
            return
        groups = {}
        for _, b in self.module.named_buffers():
            groups.setdefault(np.dtype(b.dtype), []).append(b)
        for bufs in groups.values():
            flat = fnp.concatenate([fnp.ravel(stop_gradient(b)) for b in bufs])
            mine = fnp.where(lp.axis_index(WORLD) == 0, flat, fnp.zeros_like(flat))
            total, start = lp.psum(mine, WORLD), 0
            for b in bufs:
                size = int(np.prod(shape_of(b), dtype=np.int64))
                b[...] = fnp.reshape(total[start:start + size], shape_of(b))
                start += size

    # --- gradient accumulation and uneven inputs ---------------------------------------

    @contextlib.contextmanager
    def no_sync(self):
        """Inside it, gradients are not reduced: each rank's gradient is its own.

        Sum the micro-batches' gradients, then reduce the sum once (``reduce_gradients``),
        or take the last micro-batch's gradient outside ``no_sync`` and reduce the rest::

            >>> with ddp.no_sync():
            ...     acc = sum_trees(grad(loss)(ddp, x) for x in micro[:-1])
            >>> total = ddp.reduce_gradients(acc)   # the rank mean of the local sums
        """
        old = self.require_backward_grad_sync
        self.__dict__["require_backward_grad_sync"] = False
        try:
            yield
        finally:
            self.__dict__["require_backward_grad_sync"] = old

    def reduce_gradients(self, grads):
        """The rank mean of a pytree of gradients (``fc.distributed.all_reduce(grads,
        op="mean")``; eager or inside a traced step)."""
        return dist.all_reduce(grads, op="mean")

    @contextlib.contextmanager
    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """Train on uneven inputs: a rank that runs out of data keeps matching the others.

        Wrap each rank's training loop in it. When a rank's loop ends, it shadows the
        other ranks' gradient reductions (zeros for the gradients, 0 for its count) until
        every rank has finished, so no rank waits forever.

        Args:
            divide_by_initial_world_size (bool): the averaged gradient is the sum of the
                ranks' gradients divided by the world size (every sample weighs the same,
                torch's default), or, ``False``, by the number of ranks that still have
                data. Default ``True``.
            enable (bool): ``False`` makes it a no-op. Default ``True``.
            throw_on_early_termination (bool): raise on every rank once one rank runs
                out of data, instead of shadowing. Default ``False``.

        The parameters of a rank that finished early are not updated by the steps it
        shadowed: afterwards ``ddp.last_joiner`` names the rank that trained longest, and
        ``params = dist.broadcast(params, src=ddp.last_joiner)`` makes every rank's final
        parameters that rank's (what torch's join does to the module).

        Inside ``join()`` buffers are not broadcast at each forward (each rank keeps its
        own), and a model with :class:`SyncBatchNorm` is refused: the ranks that have
        finished shadow only the gradient buckets.

        Example::

            >>> with ddp.join():
            ...     for x, y in loader:          # ranks may hold different batch counts
            ...         params = step(params, x, y)
        """
        if not enable:
            yield
            return
        if any(isinstance(m, SyncBatchNorm) for m in self.module.modules()):
            raise ValueError("DistributedDataParallel.join(): a model with SyncBatchNorm "
                             "runs collectives in its forward that a finished rank cannot "
                             "shadow; use BatchNorm with join()")
        old = self.join_divide_by_count
        self.__dict__["join_divide_by_count"] = not divide_by_initial_world_size
        try:
            yield
        finally:
            try:
                if throw_on_early_termination:
                    self._agree_on_termination()
                else:
                    self._shadow()
            finally:
                self.__dict__["join_divide_by_count"] = old

    def _layout(self):
        """(size, dtype) of each bucket reduction of a step, in the order they run."""
        named = _trainable(self.module)
        sizes = _bucket_sizes(named, plan_buckets(named, self.bucket_cap_mb * 2 ** 20))
        order = self._record.order
        return sizes if order is None else tuple(sizes[b] for b in order)

    def _shadow(self):
        """Match the other ranks' bucket reductions with zeros until no rank sends a
        count (every rank still training adds 1 to each bucket's trailing count); then
        ``last_joiner`` is the rank that trained longest (the fewest rounds of shadowing),
        whose parameters are the final ones."""
        layout = self._layout()
        rounds = 0
        if dist.world_size() > 1 and layout:
            while True:
                rounds += 1
                counts = [_shadow_psum(np.zeros(n + 1, np.dtype(dt)))[-1] for n, dt in layout]
                if counts[0] == 0:
                    break
        every = mpi.all_gather_object(rounds, " (DistributedDataParallel.join: rounds)")
        self.__dict__["last_joiner"] = min(range(len(every)), key=every.__getitem__)

    def _agree_on_termination(self):
        raise NotImplementedError("DistributedDataParallel.join(throw_on_early_termination"
                                  "=True) is not supported")

    # --- state ----------------------------------------------------------------------------

    def load_state_dict(self, state_dict, strict=True):
        """Load ``module.``-prefixed keys (as ``state_dict()`` gives) or the wrapped
        module's plain ones."""
        if state_dict and not all(k.startswith("module.") for k in state_dict):
            return self.module.load_state_dict(state_dict, strict)
        return super().load_state_dict(state_dict, strict)

    def extra_repr(self):
        return (f"static_graph={self.static_graph}, bucket_cap_mb={self.bucket_cap_mb}, "
                f"broadcast_buffers={self.broadcast_buffers}")


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose training statistics are taken over every rank's batch,
    as ``torch.nn.SyncBatchNorm``.

    In training mode the batch mean and variance are those of the union of the ranks'
    batches (two ``psum`` over :data:`WORLD`: the counts and sums, then the sums of
    squared deviations from the global mean); a rank with an empty batch contributes
    nothing. The running statistics are updated with them as ``BatchNorm`` does (the
    unbiased variance of the global batch). Eval mode is ``BatchNorm``'s. In a world of
    one it is ``BatchNorm``.

    Args:
        num_features (int): ``C`` of an ``(N, C, *)`` input.
        eps (float): added to the variance. Default ``1e-5``.
        momentum (float or None): running-stat factor; ``None`` is the cumulative
            average. Default ``0.1``.
        affine (bool): learn ``weight``/``bias``. Default ``True``.
        track_running_stats (bool): keep ``running_mean``/``running_var``. Default True.
        process_group: only the whole world (``None``) is supported.

    Example::

        >>> model = SyncBatchNorm.convert_sync_batchnorm(
        ...     nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4)))
        >>> ddp = DistributedDataParallel(model)
    """

    _ranks = (2, 3, 4, 5)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None):
        if process_group is not None:
            raise ValueError("SyncBatchNorm(process_group=...): only the whole world "
                             "(None) is supported")
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)

    def forward(self, input):
        if not self.training or dist.world_size() == 1:
            return super().forward(input)
        shape = tuple(shape_of(input))
        if len(shape) < 2 or shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm(num_features={self.num_features}): expected an "
                             f"(N, {self.num_features}, *) input, got shape {shape}")
        axes = (0,) + tuple(range(2, len(shape)))
        bshape = (1, shape[1]) + (1,) * (len(shape) - 2)
        n_local = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        dtype = np.result_type(input.dtype, np.float32)
        x = fnp.asarray(input, dtype)
        sums = lp.psum(fnp.concatenate([fnp.full(1, n_local, dtype), fnp.sum(x, axis=axes)]),
                       WORLD)
        n = sums[0]
        mean = sums[1:] / fnp.maximum(n, 1)
        var = lp.psum(fnp.sum(fnp.square(x - fnp.reshape(mean, bshape)), axis=axes),
                      WORLD) / fnp.maximum(n, 1)
        if self.track_running_stats:
            self.num_batches_tracked[...] = self.num_batches_tracked + 1
            momentum = 0.0 if self.momentum is None else self.momentum
            if self.momentum is None:
                momentum = 1.0 / self.num_batches_tracked
            unbiased = var * (n / fnp.maximum(n - 1, 1))
            self.running_mean[...] = stop_gradient(
                (1 - momentum) * self.running_mean + momentum * mean)
            self.running_var[...] = stop_gradient(
                (1 - momentum) * self.running_var + momentum * unbiased)
        out = (x - fnp.reshape(mean, bshape)) / fnp.sqrt(fnp.reshape(var, bshape) + self.eps)
        if self.weight is not None:
            out = out * fnp.reshape(self.weight, bshape)
        if self.bias is not None:
            out = out + fnp.reshape(self.bias, bshape)
        return fnp.asarray(out, input.dtype)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replace every ``BatchNorm*d`` in ``module`` by a :class:`SyncBatchNorm` holding
        the same parameters and buffers (the very arrays); returns the converted module
        (``module`` itself when it is not a BatchNorm, its children replaced in place).

        Args:
            module (Module): the model.
            process_group: only ``None`` (the whole world).

        Example::

            >>> m = SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm1d(3)))
            >>> type(m[0]).__name__
            'SyncBatchNorm'
        """
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            new = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            for own in ("_parameters", "_buffers"):
                new.__dict__[own] = type(module.__dict__[own])(module.__dict__[own])
            new.training = module.training
            return new
        for name, child in list(module._modules.items()):
            if child is not None:
                module._modules[name] = cls.convert_sync_batchnorm(child, process_group)
        return module

