"""Modules as pure functions of their state: ``functional_call``, ``stack_module_state``,
and functorch's ``make_functional`` / ``make_functional_with_buffers`` /
``combine_state_for_ensemble``."""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np

from .functional.linear import BN_ADVICE, BatchedStatWriteError
from .normalization import _BatchNorm

__all__ = ["combine_state_for_ensemble", "functional_call", "make_functional",
           "make_functional_with_buffers", "replace_all_batch_norm_modules_",
           "stack_module_state"]


def _join(prefix, name):
    return f"{prefix}.{name}" if prefix else name


def _tied_groups(module):
    """``{id(array): [every dotted name it is registered under]}`` (shared ones listed
    under each name)."""
    groups = {}
    for prefix, mod in module.named_modules(remove_duplicate=False):
        for own in ("_parameters", "_buffers"):
            for name, v in mod.__dict__[own].items():
                if v is not None:
                    groups.setdefault(id(v), []).append(_join(prefix, name))
    return groups


def _merge(parameters_and_buffers):
    if isinstance(parameters_and_buffers, dict):
        return dict(parameters_and_buffers)
    merged = {}
    for d in parameters_and_buffers:
        for k, v in d.items():
            if k in merged:
                raise ValueError(f"functional_call: {k!r} appeared in multiple dictionaries; "
                                 "this will lead to incorrect behavior")
            merged[k] = v
    return merged


def with_state(module, values):
    """A copy of ``module``'s hierarchy with ``values`` under their dotted names.

    Each module is copied once (a submodule registered twice stays shared); the copies
    hold the original's arrays except where ``values`` replaces one, so ``module`` itself
    is never changed and concurrent calls cannot see each other's state."""
    copies: dict[int, object] = {}

    def copy_of(m):
        c = copies.get(id(m))
        if c is None:
            c = copies[id(m)] = type(m).__new__(type(m))
            d = c.__dict__
            d.update(m.__dict__)
            for own in ("_parameters", "_buffers", "_modules"):
                d[own] = OrderedDict(m.__dict__[own])
            for k, sub in d["_modules"].items():
                if sub is not None:
                    d["_modules"][k] = copy_of(sub)
        return c

    root = copy_of(module)
    for name, value in values.items():
        prefix, _, leaf = name.rpartition(".")
        try:
            d = root.get_submodule(prefix).__dict__
        except AttributeError as e:
            raise AttributeError(f"functional_call: key {name!r} names no submodule of "
                                 f"{module._get_name()} ({e})") from None
        own = next((o for o in ("_parameters", "_buffers") if leaf in d[o]), None)
        if own is None:
            d[leaf] = value
        else:
            d[own][leaf] = value
    return root


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call ``module`` with its parameters and buffers replaced by the given arrays.

    ``module`` itself is not changed: the call runs on a shallow copy of its module
    hierarchy holding the given arrays (the others are the module's own arrays; hooks see
    the copy), so concurrent calls from several threads each see their own state. Values
    may be tracers, so this is the way to take ``grad``/``vmap`` with respect to a
    module's state held in a dict. Writes the forward
    makes into a buffer (BatchNorm's running statistics in training mode) go into the
    array passed for it, which ends up in the caller's array eagerly and under every
    transform (``jit``, ``grad``, ``vmap``...), as an eager call would leave it.

    Args:
        module (Module): the module.
        parameters_and_buffers (dict or tuple of dicts): dotted names (as
            ``named_parameters()`` / ``named_buffers()``) to arrays; a tuple of dicts is
            merged (a key in two dicts is an error).
        args: positional arguments (a tuple, or one non-tuple argument).
        kwargs (dict, optional): keyword arguments.
        tie_weights (bool): an array registered under several names (tied weights)
            takes the given value under all of them when only one name is given (two
            different values for tied names are an error). ``False``: each given name is
            replaced alone, the others keep the module's array. Default ``True``.
        strict (bool): every parameter and buffer must be given, and no other key.
            Default ``False`` (missing ones keep the module's value).

    Returns:
        whatever ``module`` returns.

    Example::

        >>> model = nn.Linear(3, 1)
        >>> params = dict(model.named_parameters())
        >>> g = grad(lambda p, x: functional_call(model, p, (x,)).sum())(params, x)
        >>> sorted(g)
        ['bias', 'weight']
    """
    values = _merge(parameters_and_buffers)
    groups = _tied_groups(module)
    names = {n for g in groups.values() for n in g}
    if tie_weights:
        for group in groups.values():
            given = [n for n in group if n in values]
            if len(group) > 1 and given:
                first = values[given[0]]
                if any(values[n] is not first for n in given[1:]):
                    raise ValueError(f"functional_call got multiple values for keys "
                                     f"{given}, which are tied. Consider using "
                                     "tie_weights=False")
                for n in group:
                    values.setdefault(n, first)
    if strict:
        missing = sorted(names - set(values))
        unexpected = sorted(set(values) - names)
        errors = []
        if unexpected:
            errors.append("Unexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
        if missing:
            errors.append("Missing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
        if errors:
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t"
                               + "\n\t".join(errors))
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    try:
        return with_state(module, values)(*args, **(kwargs or {}))
    except BatchedStatWriteError as err:
        raise _named_write_error(module, values, err) from None


def _named_write_error(module, values, err):
    """``err`` restated with the dotted name of the buffer it wrote (found by identity)."""
    name = next((n for n, v in values.items() if v is err.buffer), None)
    if name is None:
        name = next((n for n, v in module.named_buffers() if v is err.buffer), "?")
    return BatchedStatWriteError(
        f"functional_call({module._get_name()}): under vmap, training-mode BatchNorm would "
        f"update buffer '{name}' (shape {tuple(err.buffer.shape)}) with statistics that "
        "differ across the vmapped batch, but that buffer is shared by the whole batch (not "
        f"batched); {BN_ADVICE}", err.buffer)


def _check_same(fn, models):
    if not models:
        raise ValueError(f"{fn}: expected at least one model, got 0")
    first = models[0]
    pn = [(k, np.shape(v)) for k, v in first.named_parameters()]
    bn = [(k, np.shape(v)) for k, v in first.named_buffers()]
    for i, m in enumerate(models[1:], 1):
        if type(m) is not type(first):
            raise ValueError(f"{fn}: models[{i}] is a {type(m).__name__}, models[0] a "
                             f"{type(first).__name__}; all models must be the same type")
        if m.training != first.training:
            raise ValueError(f"{fn}: models[{i}] and models[0] are in different modes "
                             "(train/eval); expected all in the same mode")
        for what, ref, got in (("parameters", pn,
                                [(k, np.shape(v)) for k, v in m.named_parameters()]),
                               ("buffers", bn,
                                [(k, np.shape(v)) for k, v in m.named_buffers()])):
            if got != ref:
                raise ValueError(f"{fn}: models[{i}]'s {what} {got} differ from models[0]'s "
                                 f"{ref} (names and shapes must match)")


def stack_module_state(models):
    """Stack the parameters and buffers of same-structured models along a new axis 0.

    Args:
        models (sequence of Module): models of one class and shapes.

    Returns:
        ``(params, buffers)``: dicts from dotted names to stacked arrays (new arrays).

    Example::

        >>> models = [nn.Linear(3, 2) for _ in range(5)]
        >>> params, buffers = stack_module_state(models)
        >>> params['weight'].shape
        (5, 2, 3)
        >>> out = vmap(lambda p, b, x: functional_call(models[0], (p, b), (x,)),
        ...            in_dims=(0, 0, None))(params, buffers, x)
    """
    models = list(models)
    _check_same("stack_module_state", models)
    params = {k: np.stack([np.asarray(dict(m.named_parameters())[k]) for m in models])
              for k, _ in models[0].named_parameters()}
    buffers = {k: np.stack([np.asarray(dict(m.named_buffers())[k]) for m in models])
               for k, _ in models[0].named_buffers()}
    return params, buffers


class FunctionalModule:
    """``fmodel(params, *args)``: a copy of a module called with ``params`` (a tuple in
    ``named_parameters()`` order); made by :func:`make_functional`."""

    def __init__(self, module, param_names):
        self.stateless_model, self.param_names = module, tuple(param_names)

    def __call__(self, params, *args, **kwargs):
        return functional_call(self.stateless_model,
                               dict(zip(self.param_names, params, strict=True)), args, kwargs)


class FunctionalModuleWithBuffers:
    """``fmodel(params, buffers, *args)``; made by :func:`make_functional_with_buffers`."""

    def __init__(self, module, param_names, buffer_names):
        self.stateless_model = module
        self.param_names, self.buffer_names = tuple(param_names), tuple(buffer_names)

    def __call__(self, params, buffers, *args, **kwargs):
        state = dict(zip(self.param_names, params, strict=True))
        state.update(zip(self.buffer_names, buffers, strict=True))
        return functional_call(self.stateless_model, state, args, kwargs)


def make_functional(model, disable_autograd_tracking=False):
    """functorch's ``make_functional``: ``(fmodel, params)`` with ``fmodel(params, *args)``.

    Args:
        model (Module): a module without buffers (use
            :func:`make_functional_with_buffers` otherwise).
        disable_autograd_tracking (bool): accepted for compatibility (nothing tracks here).

    Returns:
        ``(fmodel, params)``: ``params`` a tuple of the parameter arrays (copies).
    """
    if any(True for _ in model.buffers()):
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    names = [k for k, _ in model.named_parameters()]
    params = tuple(np.array(v) for _, v in model.named_parameters())
    return FunctionalModule(copy.deepcopy(model), names), params


def make_functional_with_buffers(model, disable_autograd_tracking=False):
    """functorch's ``make_functional_with_buffers``: ``(fmodel, params, buffers)`` with
    ``fmodel(params, buffers, *args)`` (arrays copied, in ``named_*`` order)."""
    pnames = [k for k, _ in model.named_parameters()]
    bnames = [k for k, _ in model.named_buffers()]
    params = tuple(np.array(v) for _, v in model.named_parameters())
    buffers = tuple(np.array(v) for _, v in model.named_buffers())
    return FunctionalModuleWithBuffers(copy.deepcopy(model), pnames, bnames), params, buffers


def combine_state_for_ensemble(models):
    """functorch's ``combine_state_for_ensemble``: ``(fmodel, params, buffers)`` with
    parameters and buffers stacked along axis 0, ready for
    ``vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)``."""
    models = list(models)
    _check_same("combine_state_for_ensemble", models)
    fmodel, _, _ = make_functional_with_buffers(models[0])
    params, buffers = stack_module_state(models)
    return (fmodel, tuple(params[k] for k in fmodel.param_names),
            tuple(buffers[k] for k in fmodel.buffer_names))




def replace_all_batch_norm_modules_(root):
    """functorch's ``replace_all_batch_norm_modules_``: every BatchNorm in ``root`` stops
    tracking running statistics (``running_mean``/``running_var``/``num_batches_tracked``
    become ``None``, ``track_running_stats=False``), so it always normalises with the
    batch statistics, as needed under ``vmap``. Modifies ``root`` in place and returns it.
    """
    for m in root.modules():
        if isinstance(m, _BatchNorm):
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                m._buffers[name] = None
            m.track_running_stats = False
    return root
