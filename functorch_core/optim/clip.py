"""Gradient clipping over pytrees: PyTorch's in-place ``clip_grad_norm_`` /
``clip_grad_value_`` (scale the given arrays, return the norm), and the functional
``clip_grad_norm`` / ``clip_grad_value`` (return new arrays)."""

from __future__ import annotations

import math

import numpy as np

from functorch_core.ir.pytree import leaf_paths, tree_flatten, tree_unflatten

from .. import numpy as fnp
from ..numpy.internal import is_tracer


def _total_norm(who, leaves, norm_type, error_if_nonfinite):
    p = float(norm_type)
    if not p > 0:
        raise ValueError(f"{who}: norm_type must be positive (or inf), got {norm_type!r}")
    if math.isinf(p):
        total = fnp.max(fnp.abs(leaves[0]))
        for g in leaves[1:]:
            total = fnp.maximum(total, fnp.max(fnp.abs(g)))
    else:
        norms = [fnp.sum(fnp.abs(g) ** p) ** (1.0 / p) for g in leaves]
        total = sum(n ** p for n in norms) ** (1.0 / p)
    if error_if_nonfinite:
        if is_tracer(total):
            raise ValueError(f"{who}: error_if_nonfinite=True needs the norm's value, but "
                             "it is traced here (under jit/grad/vmap); check "
                             "np.isfinite(norm) on the returned norm outside the transform")
        if not np.isfinite(total):
            raise RuntimeError(
                f"{who}: the total norm of order {norm_type} of the gradients is {total}, "
                "so it cannot be clipped; pass error_if_nonfinite=False to scale them by "
                "the non-finite norm anyway")
    return total


def _coef(max_norm, total):
    return fnp.minimum(max_norm / (total + 1e-6), 1.0)


def clip_grad_norm(grads, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Functional gradient-norm clipping: return scaled copies and the norm.

    The total norm is the ``norm_type``-norm of the per-leaf norms (as if every leaf were
    concatenated into one vector); every leaf is multiplied by
    ``min(1, max_norm / (total_norm + 1e-6))``, PyTorch's formula. ``grads`` is not
    changed; :func:`clip_grad_norm_` is the in-place version that returns only the norm.

    Args:
        grads: a pytree of arrays (a dict, a list, the Module ``grad`` returns, ...).
        max_norm (float): the largest allowed total norm.
        norm_type (float): the p of the p-norm; ``inf`` (or ``'inf'``) for the max norm.
            Default 2.
        error_if_nonfinite (bool): raise a RuntimeError when the total norm is nan or
            infinite (only eagerly: under a transform the norm has no value yet). Default
            ``False``.

    Returns:
        ``(clipped_grads, total_norm)``: a pytree like ``grads`` and the norm of the grads
        before clipping (a 0-d array).

    Example::

        >>> grads, norm = optim.clip_grad_norm(grads, max_norm=1.0)   # jit-able
    """
    leaves, td = tree_flatten(grads)
    if not leaves:
        return grads, fnp.asarray(0.0)
    total = _total_norm("clip_grad_norm", leaves, norm_type, error_if_nonfinite)
    coef = _coef(max_norm, total)
    return tree_unflatten(td, [g * coef.astype(g.dtype) for g in leaves]), total


def _writable_leaves(who, grads):
    leaves, td = tree_flatten(grads)
    for i, g in enumerate(leaves):
        if is_tracer(g):
            continue
        if not isinstance(g, np.ndarray) or not g.flags.writeable:
            what = type(g).__name__ if not isinstance(g, np.ndarray) else "a read-only array"
            raise TypeError(f"{who}: leaf grads{leaf_paths(td)[i]} is {what}; this function "
                            "scales the gradient arrays in place, so they must be writable "
                            "NumPy arrays (the functional version without the trailing "
                            "underscore returns new arrays instead)")
    return leaves


def _scale_into(g, value):
    if is_tracer(g):
        g[...] = value
    else:
        np.copyto(g, np.asarray(value), casting="unsafe")


def clip_grad_norm_(grads, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """``torch.nn.utils.clip_grad_norm_``: scale the gradient arrays in place so their
    total norm is at most ``max_norm``, and return that total norm.

    Same formula as :func:`clip_grad_norm` (which returns ``(clipped, norm)`` and leaves
    ``grads`` alone). The arrays of ``grads`` are written into, so every pytree that holds
    them (the Module ``grad`` returned, a dict of it) sees the clipped values.

    Args:
        grads: a pytree of writable arrays, or a single array: what ``grad`` returned
            (a Module of gradients, a dict), or a list of gradient arrays.
        max_norm (float): the largest allowed total norm.
        norm_type (float): the p of the p-norm; ``inf`` (or ``'inf'``) for the max norm.
            Default 2.
        error_if_nonfinite (bool): raise a RuntimeError (nothing is scaled) when the total
            norm is nan or infinite. Default ``False``.
        foreach: accepted for PyTorch compatibility; ignored.

    Returns:
        The total norm of the gradients before clipping (a 0-d array), as PyTorch returns.

    Example::

        >>> g = fc.grad(loss)(model, x, y)
        >>> norm = optim.clip_grad_norm_(g, max_norm=1.0)   # g is clipped in place
        >>> opt.step(g)
    """
    who = "clip_grad_norm_"
    leaves = _writable_leaves(who, grads)
    if not leaves:
        return fnp.asarray(0.0)
    total = _total_norm(who, leaves, norm_type, error_if_nonfinite)
    coef = _coef(max_norm, total)
    for g in leaves:
        _scale_into(g, g * coef.astype(g.dtype))
    return total


def clip_grad_value(grads, clip_value):
    """Clamp every gradient entry to ``[-clip_value, clip_value]``, returning new arrays
    (:func:`clip_grad_value_` clamps in place).

    Args:
        grads: a pytree of arrays.
        clip_value (float): the bound.

    Example::

        >>> grads = optim.clip_grad_value(grads, 0.5)
    """
    leaves, td = tree_flatten(grads)
    return tree_unflatten(td, [fnp.clip(g, -clip_value, clip_value) for g in leaves])


def clip_grad_value_(grads, clip_value, foreach=None):
    """``torch.nn.utils.clip_grad_value_``: clamp every entry of the gradient arrays to
    ``[-clip_value, clip_value]`` in place; returns ``None``.

    Args:
        grads: a pytree of writable arrays, or a single array.
        clip_value (float): the bound.
        foreach: accepted for PyTorch compatibility; ignored.

    Example::

        >>> optim.clip_grad_value_(g, 0.5)
    """
    for g in _writable_leaves("clip_grad_value_", grads):
        _scale_into(g, fnp.clip(g, -clip_value, clip_value))
