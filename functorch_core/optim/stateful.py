"""PyTorch-style stateful optimizers over named arrays, updated in place."""

from __future__ import annotations

import numpy as np

from ._optimizers import adam, adamw, sgd

# param_group keys of torch.optim that select an implementation, not the update
_TORCH_ONLY = ("foreach", "capturable", "differentiable", "fused", "decoupled_weight_decay")


class _Stateful:
    """Holds a functional optimizer, its state and the user's arrays; ``step`` writes in place."""

    _factory = None

    def __init__(self, params, **hyperparams):
        if isinstance(params, dict):
            names, arrays = list(params), list(params.values())
        else:
            items = list(params)
            if items and all(isinstance(it, tuple) and len(it) == 2 and isinstance(it[0], str)
                             for it in items):
                names, arrays = [n for n, _ in items], [a for _, a in items]
            else:
                names, arrays = list(range(len(items))), items
        if not arrays:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        for n, a in zip(names, arrays, strict=True):
            if not isinstance(a, np.ndarray):
                raise TypeError(f"{type(self).__name__}: parameter {n!r} must be a NumPy array "
                                f"(updated in place), got {type(a).__name__}")
        self._names = names
        self._keyed = isinstance(names[0], str)
        self.params = dict(zip(names, arrays, strict=True))
        self._opt = type(self)._factory(**hyperparams)
        self._state = self._opt.init(self.params)

    @property
    def defaults(self):
        return dict(self._opt.hyperparams)

    def zero_grad(self, set_to_none=True):
        """A no-op: gradients are values returned by ``grad``, never accumulated on arrays."""

    def step(self, grads):
        """Apply one update with ``grads`` and write the new values into the arrays in place.

        Args:
            grads: gradients keyed like the parameters (a dict by name, as ``grad`` of a
                ``functional_call`` loss returns them), or a list in parameter order.
        """
        if not self._keyed and isinstance(grads, (list, tuple)):
            grads = dict(enumerate(grads))
        if not isinstance(grads, dict) or set(grads) != set(self._names):
            got = sorted(map(str, grads)) if isinstance(grads, dict) else type(grads).__name__
            raise ValueError(f"{type(self).__name__}.step: grads must be keyed like the "
                             f"parameters {sorted(map(str, self._names))}, got {got}")
        new_params, new_state = self._opt.update(grads, self._state, self.params)
        for n in self._names:
            np.copyto(self.params[n], new_params[n])
        self._state = new_state

    def state_dict(self):
        """PyTorch's layout: ``{'state': {i: {'step', slots...}}, 'param_groups': [{...}]}``.

        Parameters are numbered in the order given to the constructor; ``param_names`` lists
        their names. The state is empty before the first ``step``, as in PyTorch.
        """
        step = np.asarray(self._state["step"], dtype=np.float64)
        state = {}
        if int(step) > 0:
            for i, n in enumerate(self._names):
                entry = {} if self._opt.name == "sgd" else {"step": step.copy()}
                for s in self._opt.slots:
                    entry[s] = np.array(self._state[s][n], copy=True)
                if entry:
                    state[i] = entry
        group = dict(self._opt.hyperparams)
        group["params"] = list(range(len(self._names)))
        if self._keyed:
            group["param_names"] = list(self._names)
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict):
        """Restore what ``state_dict`` returned, or a ``torch.optim`` state dict whose tensors
        were converted to NumPy (its implementation keys such as ``foreach`` are ignored).
        """
        who = f"{type(self).__name__}.load_state_dict"
        groups = state_dict.get("param_groups")
        if not isinstance(groups, list) or len(groups) != 1:
            raise ValueError(f"{who}: expected one param group, got {groups!r}")
        if len(groups[0].get("params", ())) != len(self._names):
            raise ValueError(f"{who}: the state has {len(groups[0].get('params', ()))} params, "
                             f"this optimizer has {len(self._names)}")
        hp = {k: v for k, v in groups[0].items()
              if k not in ("params", "param_names") + _TORCH_ONLY}
        decoupled = groups[0].get("decoupled_weight_decay")
        if decoupled is not None and bool(decoupled) != (self._opt.name == "adamw"):
            raise ValueError(f"{who}: the state has decoupled_weight_decay={decoupled}, which "
                             f"{type(self).__name__} does not do")
        if "betas" in hp:
            hp["betas"] = tuple(hp["betas"])
        mine = self._opt.hyperparams
        if set(hp) != set(mine):
            raise ValueError(f"{who}: hyper-parameters {sorted(hp)} do not match "
                             f"{sorted(mine)}")
        entries = {int(k): v for k, v in state_dict.get("state", {}).items()}
        new_opt = type(self)._factory(**hp)
        new_state = new_opt.init(self.params)
        if entries:
            steps = {float(np.asarray(e.get("step", -1))) for e in entries.values()}
            for i, n in enumerate(self._names):
                if i not in entries:
                    raise ValueError(f"{who}: no state for parameter {i} ({n!r})")
                for s in new_opt.slots:
                    arr = np.asarray(entries[i][s])
                    if arr.shape != np.shape(self.params[n]):
                        raise ValueError(f"{who}: state {s!r} of parameter {n!r} has shape "
                                         f"{arr.shape}, the parameter has "
                                         f"{np.shape(self.params[n])}")
                    new_state[s][n] = arr.astype(self.params[n].dtype, copy=True)
            step = max(steps) if steps != {-1.0} else 1.0
            new_state["step"] = np.asarray(int(step), dtype=np.int64)
        self._opt, self._state = new_opt, new_state


class SGD(_Stateful):
    """``torch.optim.SGD`` over named arrays, which ``step(grads)`` updates in place.

    Args:
        params: a dict of named arrays (``dict(model.named_parameters())``), an iterable of
            ``(name, array)`` pairs, or a list of arrays.
        **hyperparams: ``optim.sgd``'s arguments (``lr``, ``momentum``, ``dampening``,
            ``weight_decay``, ``nesterov``, ``maximize``).

    Example::

        >>> params = dict(model.named_parameters())
        >>> opt = optim.SGD(params, lr=0.1, momentum=0.9)
        >>> opt.step(grad(loss)(params, x, y))      # model's parameters change in place
    """

    _factory = staticmethod(sgd)


class Adam(_Stateful):
    """``torch.optim.Adam`` over named arrays, which ``step(grads)`` updates in place.

    Args:
        params: a dict of named arrays, an iterable of ``(name, array)`` pairs, or a list.
        **hyperparams: ``optim.adam``'s arguments.

    Example::

        >>> opt = optim.Adam(model.named_parameters(), lr=1e-3)
    """

    _factory = staticmethod(adam)


class AdamW(_Stateful):
    """``torch.optim.AdamW`` over named arrays, which ``step(grads)`` updates in place.

    Args:
        params: a dict of named arrays, an iterable of ``(name, array)`` pairs, or a list.
        **hyperparams: ``optim.adamw``'s arguments.

    Example::

        >>> opt = optim.AdamW(model.named_parameters(), lr=1e-3, weight_decay=0.01)
    """

    _factory = staticmethod(adamw)
