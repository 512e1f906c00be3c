"""The shared shape of a functional optimizer: an ``(init, update)`` pair over pytrees."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.pytree import tree_flatten, tree_unflatten

from .. import numpy as fnp


class FunctionalOptimizer(tuple):
    """A pure optimizer, the pair ``(init, update)``: ``state = init(params)``,
    ``params, state = update(grads, state, params)``.

    It unpacks as that pair (``init, update = optim.adam(lr=1e-3)``, as optax); the
    rest is reachable as attributes: ``init``, ``update``, ``name`` (``'adam'``),
    ``hyperparams`` (the constructor arguments, the PyTorch ``param_groups`` entry of the
    stateful wrappers) and ``slots`` (the names of the per-parameter state entries).
    ``update`` uses only ``functorch_core.numpy`` on the leaves, so it runs eagerly on NumPy
    arrays and traces under ``jit``/``vmap``/``grad``.

    Example::

        >>> init, update = optim.adam(lr=1e-3)
        >>> opt = optim.adam(lr=1e-3); opt.name, opt.hyperparams["lr"], opt.slots
        ('adam', 0.001, ('exp_avg', 'exp_avg_sq'))
    """

    def __new__(cls, init: Callable[[Any], dict],
                update: Callable[[Any, dict, Any], tuple[Any, dict]],
                name: str, hyperparams: dict, slots: tuple[str, ...]):
        self = super().__new__(cls, (init, update))
        self.name, self.hyperparams, self.slots = name, dict(hyperparams), tuple(slots)
        return self

    @property
    def init(self) -> Callable[[Any], dict]:
        return self[0]

    @property
    def update(self) -> Callable[[Any, dict, Any], tuple[Any, dict]]:
        return self[1]

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.hyperparams.items())
        return f"{self.name}({args})"

    def __reduce__(self):
        return (FunctionalOptimizer, (*self, self.name, self.hyperparams, self.slots))


def lr_at(lr, step):
    """``lr`` itself, or a schedule's value at ``step`` (the number of steps already taken)."""
    return lr(step) if callable(lr) else lr


def shape(x):
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def full_like(p, fill):
    """A slot's initial value; ``fnp`` so that ``init`` also traces under ``jit``."""
    return fnp.full(shape(p), fill, dtype=_dtype(p))


def _dtype(p):
    dt = getattr(p, "dtype", None)
    return dt if dt is not None else np.result_type(p)


def initial_step():
    return np.zeros((), dtype=np.int64)


def check_structures(who, grads, state, params, slots):
    """Flatten ``grads`` and ``params`` and check them against every per-parameter slot."""
    g_leaves, g_td = tree_flatten(grads)
    p_leaves, p_td = tree_flatten(params)
    if g_td != p_td:
        raise ValueError(f"{who}: grads and params differ in structure: grads has {g_td}, "
                         f"params has {p_td}")
    expected = {"step", *slots}
    if not isinstance(state, dict) or set(state) != expected:
        got = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{who}: state must be what this optimizer's init returned, with keys "
                         f"{sorted(expected)}; got {got}")
    slot_leaves = {}
    for s in slots:
        leaves, td = tree_flatten(state[s])
        if td != p_td:
            raise ValueError(f"{who}: params/grads have structure {p_td} but the optimizer "
                             f"state {s!r} (from init) has structure {td}")
        slot_leaves[s] = leaves
    for i, (g, p) in enumerate(zip(g_leaves, p_leaves, strict=True)):
        if shape(g) != shape(p):
            raise ValueError(f"{who}: leaf {i} of grads has shape {shape(g)} but the "
                             f"parameter has shape {shape(p)}")
    return g_leaves, p_leaves, p_td, slot_leaves


def cast(x, ref):
    """``x`` in ``ref``'s dtype: 0-d float64 scalars would otherwise promote float32 leaves."""
    dt = _dtype(ref)
    return x if _dtype(x) == dt else fnp.asarray(x).astype(dt)


def scalar(x, ref):
    """A step-dependent scalar in ``ref``'s dtype (Python numbers, and traced ones, are weak and
    stay as they are), so float32 parameters are updated in float32 as ``torch.optim`` does."""
    weak = (isinstance(x, (int, float)) and not isinstance(x, np.generic)) or getattr(
        getattr(x, "aval", None), "weak_type", False)
    return x if weak else cast(x, ref)


def make_optimizer(name, hyperparams, slots, slot_init, leaf_update, master_dtype=None):
    """Build a ``FunctionalOptimizer`` from a per-leaf rule.

    ``slot_init(slot, p)`` gives a slot's initial array; ``leaf_update(g, p, slots, step, lr)``
    (``step`` counts this step, from 1) returns ``(new_p, new_slots)`` for one leaf. With
    ``master_dtype`` the state also holds ``master``, a copy of the float parameters in that
    dtype: the slots and the update are computed in it and the parameters are its rounding.
    """
    lr = hyperparams["lr"]
    if master_dtype is not None:
        master_dtype = np.dtype(master_dtype)
        if dtype_kind(master_dtype) != "f":
            raise TypeError(f"{name}: master_dtype must be a float dtype, got {master_dtype}")
        hyperparams = {**hyperparams, "master_dtype": master_dtype}
        slots = (*slots, "master")
    rule_slots = tuple(s for s in slots if s != "master")

    def master_of(p):
        return fnp.asarray(p).astype(master_dtype) if dtype_kind(np.dtype(_dtype(p))) == "f" \
            else p

    def init(params):
        p_leaves, td = tree_flatten(params)
        refs = [master_of(p) for p in p_leaves] if master_dtype is not None else p_leaves
        state = {"step": initial_step()}
        for s in rule_slots:
            state[s] = tree_unflatten(td, [slot_init(s, r) for r in refs])
        if master_dtype is not None:
            state["master"] = tree_unflatten(td, refs)
        return state

    def update(grads, state, params):
        g_leaves, p_leaves, td, slot_leaves = check_structures(
            f"{name}.update", grads, state, params, slots)
        lr_t = lr_at(lr, state["step"])
        step = state["step"] + 1
        new_p, new_slots = [], {s: [] for s in slots}
        for i, (g, p) in enumerate(zip(g_leaves, p_leaves, strict=True)):
            ref = slot_leaves["master"][i] if master_dtype is not None else p
            p2, sl = leaf_update(cast(g, ref), ref, {s: slot_leaves[s][i] for s in rule_slots},
                                 step, scalar(lr_t, ref))
            new_p.append(cast(p2, p))
            if master_dtype is not None:
                new_slots["master"].append(cast(p2, ref))
            for s in rule_slots:
                new_slots[s].append(cast(sl[s], slot_leaves[s][i]))
        new_state = {"step": step}
        for s in slots:
            new_state[s] = tree_unflatten(td, new_slots[s])
        return tree_unflatten(td, new_p), new_state

    init.__doc__ = f"The initial state of {name} for ``params`` (a pytree of arrays)."
    update.__doc__ = (f"One {name} step: ``(grads, state, params) -> (new_params, new_state)``; "
                      "``grads`` and ``params`` must have the structure ``init`` saw.")
    return FunctionalOptimizer(init, update, name, dict(hyperparams), tuple(slots))
