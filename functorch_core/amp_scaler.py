"""Loss scaling for float16 training: :class:`GradScaler`, as ``torch.amp.GradScaler``."""

from __future__ import annotations

import math

import numpy as np

from functorch_core.ir.pytree import tree_leaves, tree_map
from functorch_core.ir.trace import Tracer

__all__ = ["GradScaler"]


def _is_traced(tree) -> bool:
    return any(isinstance(x, Tracer) for x in tree_leaves(tree))


class GradScaler:
    """Scale a float16 loss so small gradients do not flush to zero, as
    ``torch.amp.GradScaler``: ``scale(loss)`` multiplies by the current scale, ``step``
    unscales the gradients and applies them only when every one is finite, ``update``
    grows the scale after ``growth_interval`` clean steps and backs it off after a step
    with an inf or NaN gradient.

    Gradients here are values (``fc.grad`` returns them), so ``unscale_`` returns the
    unscaled gradients and ``step(optimizer, grads)`` takes them (torch's ``step(optimizer)``
    reads them off the parameters). The scaler runs eagerly, between calls of a jitted
    loss-and-gradient function: pass ``scaler.get_scale()`` into it as an argument so a
    new scale does not retrace it. bfloat16 has float32's range and needs no scaler.

    Args:
        device (str, default ``"cpu"``): accepted for PyTorch compatibility.
        init_scale (float, default ``2.0**16``): the first scale.
        growth_factor (float, default ``2.0``): the scale's factor after
            ``growth_interval`` consecutive steps without an inf or NaN gradient.
        backoff_factor (float, default ``0.5``): its factor after a step with one.
        growth_interval (int, default ``2000``): clean steps between growths.
        enabled (bool, default ``True``): False makes every method a pass-through
            (``scale`` returns its input, ``step`` always steps).

    Example::

        >>> scaler = fc.amp.GradScaler()
        >>> opt = optim.SGD(model.parameters(), lr=0.1)
        >>> with fc.autocast(dtype=fnp.float16):
        ...     grads = fc.grad(lambda m: scaler.scale(loss(m, x, y)))(model)
        >>> scaler.step(opt, grads)        # skipped when a gradient is inf or NaN
        >>> scaler.update()
    """

    def __init__(self, device="cpu", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        for name, v, lo, hi in (("init_scale", init_scale, 0, math.inf),
                                ("growth_factor", growth_factor, 1, math.inf),
                                ("backoff_factor", backoff_factor, 0, 1)):
            if isinstance(v, bool) or not isinstance(v, int | float) or not lo < v < hi:
                raise ValueError(f"GradScaler: {name} must be a number in ({lo}, {hi}), "
                                 f"got {v!r}")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) or \
                growth_interval < 1:
            raise ValueError(f"GradScaler: growth_interval must be a positive int, got "
                             f"{growth_interval!r}")
        self.device, self._enabled = device, bool(enabled)
        self._scale, self._growth_tracker = float(init_scale), 0
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = growth_interval
        self._found_inf = None          # this step's: None until unscale_ or step
        self._unscaled = None

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def scale(self, outputs):
        """``outputs`` (an array, or a pytree of them) times the scale, each in its own
        dtype; usable inside ``grad`` and ``jit`` (the scale is then a constant of the
        trace: pass ``get_scale()`` in as an argument instead to avoid retracing)."""
        if not self._enabled:
            return outputs
        s = self._scale
        return tree_map(lambda x: x * np.asarray(s, getattr(x, "dtype", np.float32)), outputs)

    def unscale_(self, grads):
        """``grads`` divided by the scale (in float32 for float16 gradients, rounded once),
        and whether any is inf or NaN remembered for this step's ``step`` and ``update``."""
        if _is_traced(grads):
            raise TypeError("GradScaler.unscale_: got traced gradients; the scaler runs "
                            "eagerly, on the gradients a jitted function returned")
        if not self._enabled:
            return grads
        inv = 1.0 / self._scale

        def one(g):
            g = np.asarray(g)
            if g.dtype.kind not in "fc" and str(g.dtype) != "bfloat16":
                return g
            wide = g.astype(np.float32) if g.dtype.itemsize < 4 else g
            return (wide * np.asarray(inv, wide.dtype)).astype(g.dtype)
        out = tree_map(one, grads)
        self._found_inf = not all(bool(np.all(np.isfinite(g))) for g in tree_leaves(out)
                                  if np.asarray(g).dtype.kind in "fcV")
        self._unscaled = (id(grads), out)
        return out

    def step(self, optimizer, grads):
        """Unscale ``grads`` (unless ``unscale_`` already ran this step: then ``grads`` are
        taken as unscaled, e.g. clipped after it) and, when all are finite, apply them:
        ``optimizer.step(grads)`` for a stateful optimizer. Returns what ``optimizer.step``
        returns, or None when the step is skipped."""
        if not hasattr(optimizer, "step"):
            raise TypeError(f"GradScaler.step: optimizer must have a step(grads) method (an "
                            f"optim.SGD, optim.Adam...), got {type(optimizer).__name__}")
        if not self._enabled:
            return optimizer.step(grads)
        if self._unscaled is None:
            unscaled = self.unscale_(grads)
        else:       # unscale_ ran this step: grads are its result (or derived from it)
            unscaled = self._unscaled[1] if id(grads) == self._unscaled[0] else grads
        return None if self._found_inf else optimizer.step(unscaled)

    def update(self, new_scale=None):
        """End the step: back the scale off after an inf or NaN gradient, grow it after
        ``growth_interval`` clean steps (torch's rule); ``new_scale`` sets it instead."""
        if not self._enabled:
            return
        if new_scale is not None:
            v = float(new_scale)
            if not math.isfinite(v) or v <= 0:
                raise ValueError(f"GradScaler.update: new_scale must be a positive finite "
                                 f"number, got {new_scale!r}")
            self._scale = v
        elif self._found_inf is None:
            raise RuntimeError("GradScaler.update: no gradients were unscaled since the last "
                               "update (call step or unscale_ first)")
        elif self._found_inf:
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._found_inf, self._unscaled = None, None

    def state_dict(self) -> dict:
        """torch's keys: ``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval``, ``_growth_tracker`` (empty when disabled, as torch)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state: dict) -> None:
        if not self._enabled:
            return
        if not state:
            raise RuntimeError("GradScaler.load_state_dict: the state is empty (saved from a "
                               "disabled scaler)")
        self._scale = float(state["scale"])
        self._growth_factor = float(state["growth_factor"])
        self._backoff_factor = float(state["backoff_factor"])
        self._growth_interval = int(state["growth_interval"])
        self._growth_tracker = int(state["_growth_tracker"])

    def __repr__(self):
        return f"GradScaler(scale={self.get_scale()}, enabled={self._enabled})"
