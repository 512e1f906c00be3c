"""The stateful optimizers' ``step`` as one compiled call: every leaf's update fused into
native kernels, the state's buffers reused (donated) and the new parameters written into
the user's arrays, as ``torch.optim``'s ``foreach``/``fused`` paths do.

One jitted update per optimizer family and fixed hyper-parameters, shared by every
optimizer built with them; the learning rate is an argument, so a schedule that changes
``param_groups[i]['lr']`` every step never recompiles.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from functorch_core.api import jit

_UPDATES = {}


def _hashable(hp):
    try:
        key = tuple(sorted((k, v) for k, v in hp.items() if k != "lr"))
        hash(key)
    except TypeError:
        return None
    return key


def compiled_update(factory, hp):
    """A jitted ``(grads, state, params, lr) -> (params, state)`` for ``factory(**hp)``, or
    None when the step cannot be compiled (a callable learning rate, unhashable values)."""
    if not isinstance(hp.get("lr"), numbers.Real):
        return None
    static = _hashable(hp)
    if static is None:
        return None
    key = (factory, static)
    update = _UPDATES.get(key)
    if update is None:
        fixed = dict(static)

        def step(grads, state, params, lr):
            return factory(lr=lambda _step: lr, **fixed).update(grads, state, params)
        step.__name__ = f"{factory.__name__}_step"
        update = _UPDATES[key] = jit(step, donate_argnums=(1,))
    return update


def arrays_only(*trees):
    """Whether every leaf is a NumPy array (not a tracer, a CuPy array or a scalar)."""
    return all(isinstance(v, np.ndarray) for t in trees for v in t.values())


def run(update, grads, state, params, lr):
    """``update``'s new parameters and state; the state's old buffers may hold the new one."""
    with warnings.catch_warnings():
        # a state leaf no result can reuse (the step counter, say) is simply not reused
        warnings.filterwarnings("ignore", "jit.*some donated buffers were not usable")
        return update(grads, state, params, float(lr))     # weak, as in the eager step
