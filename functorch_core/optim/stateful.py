"""PyTorch-style stateful optimizers over named arrays, updated in place, with param groups."""

from __future__ import annotations

import numpy as np

from ..nn.module import Module
from . import _compiled
from ._optimizers import adagrad, adam, adamw, rmsprop, sgd

# param_group keys of torch.optim that select an implementation, not the update
_TORCH_ONLY = ("foreach", "capturable", "differentiable", "fused", "decoupled_weight_decay")


def _named(who, params, start):
    """``(names, arrays, keyed)`` of one group's params (a dict, ``(name, array)`` pairs, or a
    list of arrays numbered from ``start``)."""
    if isinstance(params, np.ndarray) or _is_module(params):
        raise TypeError(f"{who}: the group's params are {_describe(params)}; pass "
                        f"{_ACCEPTED_PARAMS}")
    if isinstance(params, dict):
        names, arrays = list(params), list(params.values())
    else:
        items = list(params)
        if items and all(isinstance(it, tuple) and len(it) == 2 and isinstance(it[0], str)
                         for it in items):
            names, arrays = [n for n, _ in items], [a for _, a in items]
        else:
            names, arrays = list(range(start, start + len(items))), items
    for n, a in zip(names, arrays, strict=True):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{who}: parameter {n!r} must be a NumPy array (updated in "
                            f"place), got {type(a).__name__}; pass {_ACCEPTED_PARAMS}")
    return names, arrays, bool(names) and isinstance(names[0], str)


_ACCEPTED_PARAMS = ("model.parameters(), model.named_parameters(), a dict of named arrays, "
                    "a list of arrays, or a list of param groups [{'params': ..., "
                    "'lr': ...}, ...]")


def _is_module(x):
    return isinstance(x, Module)


def _describe(x):
    if _is_module(x):
        return f"a Module ({type(x).__name__})"
    if isinstance(x, np.ndarray):
        return f"a single array of shape {x.shape}"
    return f"a value of type {type(x).__name__}"


def _shapes(named):
    return "{" + ", ".join(f"{n!r}: {tuple(np.shape(a))}" for n, a in named.items()) + "}"


class _Stateful:
    """Holds one functional optimizer per param group, its state and the user's arrays;
    ``step`` writes in place.

    ``param_groups`` is a list of dicts as in ``torch.optim``: ``'params'`` (the arrays),
    ``'param_names'`` (when named) and the hyper-parameters, which may be changed between
    steps (``opt.param_groups[0]['lr'] = 0.01``); other keys are kept and ignored.
    """

    _factory = None

    def __init__(self, params, **hyperparams):
        who = type(self).__name__
        self.defaults = dict(type(self)._factory(**hyperparams).hyperparams)
        self.param_groups, self.params = [], {}
        self._groups = []            # per group: [names, optimizer, its hyper-parameters, state]
        if _is_module(params) or isinstance(params, np.ndarray) or not (
                isinstance(params, dict) or hasattr(params, "__iter__")):
            raise TypeError(f"{who}(params): got {_describe(params)}; pass "
                            f"{_ACCEPTED_PARAMS}")
        items = params if isinstance(params, (list, tuple)) else list(
            params.items() if isinstance(params, dict) else params)
        if not items:
            raise ValueError(f"{who}: got an empty parameter list")
        groups = items if all(isinstance(g, dict) for g in items) else [{"params": items}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        """Add a group: ``{'params': arrays or named arrays, **hyper-parameters}``; missing
        hyper-parameters take the constructor's values (``defaults``).

        Example::

            >>> opt = optim.SGD(dict(model.body.named_parameters()), lr=0.1)
            >>> opt.add_param_group({"params": dict(model.head.named_parameters()), "lr": 0.01})
        """
        who = f"{type(self).__name__}.add_param_group"
        if not isinstance(param_group, dict) or "params" not in param_group:
            raise TypeError(f"{who}: a param group is a dict with a 'params' entry, got "
                            f"{type(param_group).__name__}")
        names, arrays, keyed = _named(who, param_group["params"], len(self.params))
        if not arrays:
            raise ValueError(f"{who}: the group has no parameters")
        if self._groups and keyed != self._keyed:
            raise ValueError(f"{who}: either every group names its parameters or none does")
        self._keyed = keyed
        seen = {id(a) for a in self.params.values()}
        for n, a in zip(names, arrays, strict=True):
            if n in self.params or id(a) in seen:
                raise ValueError(f"{who}: parameter {n!r} appears in more than one group")
            seen.add(id(a))
        group = {k: v for k, v in param_group.items() if k not in ("params", "param_names")}
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        hp = {k: group[k] for k in self.defaults}
        opt = type(self)._factory(**hp)
        named = dict(zip(names, arrays, strict=True))
        self.params.update(named)
        entry = {"params": list(arrays), **group}
        if keyed:
            entry["param_names"] = list(names)
        self.param_groups.append(entry)
        self._groups.append([names, opt, hp, opt.init(named)])

    def zero_grad(self, set_to_none=True):
        """A no-op: gradients are values returned by ``grad``, never accumulated on arrays."""

    def _optimizer(self, i):
        """Group ``i``'s optimizer, rebuilt when its hyper-parameters were changed."""
        _, opt, hp, _ = self._groups[i]
        now = {k: self.param_groups[i][k] for k in self.defaults}
        if now != hp:
            new = type(self)._factory(**now)
            if new.slots != opt.slots:
                raise ValueError(f"{type(self).__name__}.step: changing group {i}'s "
                                 f"hyper-parameters from {hp} to {now} changes its state "
                                 f"{opt.slots} -> {new.slots}; build a new optimizer")
            self._groups[i][1:3] = [new, now]
            opt = new
        return opt

    def _keyed_grads(self, grads):
        """``grads`` as a dict keyed like ``self.params``, or a TypeError/ValueError that
        says what was given and what ``step`` accepts."""
        who, names = f"{type(self).__name__}.step(grads)", list(self.params)
        if _is_module(grads):
            named = dict(grads.named_parameters())
            if self._keyed and all(n in named for n in names):
                return {n: named[n] for n in names}
            if len(self._groups) > 1 and not self._keyed:
                raise ValueError(f"{who}: got a {type(grads).__name__} of gradients, but "
                                 f"this optimizer's {len(self._groups)} param groups hold "
                                 "unnamed arrays, which cannot be matched to it; build the "
                                 "groups from model.named_parameters() (or dicts of it), "
                                 "or pass a list of gradients in the order of the groups")
            if len(named) == len(names) and all(
                    np.shape(g) == np.shape(self.params[n])
                    for g, n in zip(named.values(), names, strict=True)):
                return dict(zip(names, named.values(), strict=True))
            raise ValueError(f"{who}: got a {type(grads).__name__} of gradients with "
                             f"parameters {_shapes(named)}, which do not match this "
                             f"optimizer's {_shapes(self.params)}; pass the gradient of the "
                             "module whose parameters the optimizer was built from (for "
                             "optim.SGD(model.head.parameters()), grads.head)")
        if isinstance(grads, (list, tuple)) and not (
                grads and isinstance(grads[0], tuple)):
            if len(grads) != len(names):
                raise ValueError(f"{who}: got a {type(grads).__name__} of {len(grads)} "
                                 f"gradients; this optimizer has {len(names)} parameters "
                                 f"{_shapes(self.params)} (pass one per parameter, in the "
                                 "order they were given)")
            return dict(zip(names, grads, strict=True))
        if isinstance(grads, dict):
            if set(grads) == set(names):
                return grads
            if not self._keyed and all(isinstance(k, str) for k in grads):
                raise ValueError(f"{who}: got a dict of named gradients, but this optimizer "
                                 "was built from unnamed arrays (model.parameters()), which "
                                 "names cannot be matched to; build it from "
                                 "model.named_parameters() to step with a dict, or pass the "
                                 "Module of gradients fc.grad returned, or a list in "
                                 "parameters() order")
            raise ValueError(f"{who}: got a dict with keys {sorted(map(str, grads))}; grads "
                             f"must be keyed like the parameters {sorted(map(str, names))} "
                             "(or pass the Module of gradients fc.grad returned, or a list "
                             "in parameter order)")
        got = _describe(grads)
        raise TypeError(f"{who}: got {got}; pass what fc.grad returned for the module (a "
                        f"Module of gradients), a dict keyed like the parameters "
                        f"{sorted(map(str, names))}, or a list of {len(names)} gradient "
                        "arrays in parameter order")

    def step(self, grads):
        """Apply one update with ``grads`` and write the new values into the arrays in place.

        Args:
            grads: the gradients, as ``fc.grad`` returns them: for a Module, the Module of
                gradients (matched to the parameters by name, or by order when the
                optimizer was built from ``model.parameters()``); a dict keyed like the
                parameters (``grad`` of a ``functional_call`` loss); or a list in
                parameter order.

        Example::

            >>> opt = optim.Adam(model.parameters(), lr=1e-3)
            >>> opt.step(fc.grad(loss)(model, x, y))      # model's arrays change in place
        """
        grads = self._keyed_grads(grads)
        results = []
        for i, (names, *_, state) in enumerate(self._groups):
            mine = {n: self.params[n] for n in names}
            theirs = {n: grads[n] for n in names}
            opt = self._optimizer(i)
            hp = self._groups[i][2]
            update = _compiled.compiled_update(type(self)._factory, hp)
            if update is not None and _compiled.arrays_only(theirs, mine):
                results.append(_compiled.run(update, theirs, state, mine, hp["lr"]))
            else:
                results.append(opt.update(theirs, state, mine))
        for (names, *_), (new_params, _) in zip(self._groups, results, strict=True):
            for n in names:
                np.copyto(self.params[n], new_params[n])
        for g, (_, new_state) in zip(self._groups, results, strict=True):
            g[3] = new_state

    def state_dict(self):
        """PyTorch's layout: ``{'state': {i: {'step', slots...}}, 'param_groups': [{...}]}``.

        Parameters are numbered across groups in the order given; each group lists its
        numbers in ``params`` and, when named, ``param_names``. The state is empty before
        a group's first ``step``, as in PyTorch.
        """
        state, groups, i = {}, [], 0
        for entry, (names, opt, _, st) in zip(self.param_groups, self._groups, strict=True):
            step = np.asarray(st["step"], dtype=np.float64)
            for n in names:
                if int(step) > 0:
                    slot = {} if opt.name == "sgd" else {"step": step.copy()}
                    for s in opt.slots:
                        slot[s] = np.array(st[s][n], copy=True)
                    if slot:
                        state[i + names.index(n)] = slot
            group = {k: v for k, v in entry.items() if k not in ("params", "param_names")}
            group["params"] = list(range(i, i + len(names)))
            if self._keyed:
                group["param_names"] = list(names)
            groups.append(group)
            i += len(names)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore what ``state_dict`` returned, or a ``torch.optim`` state dict whose tensors
        were converted to NumPy (its implementation keys such as ``foreach`` are ignored):
        the groups' hyper-parameters and the per-parameter state. Nothing changes when the
        state does not fit.
        """
        who = f"{type(self).__name__}.load_state_dict"
        groups = state_dict.get("param_groups")
        if not isinstance(groups, list) or len(groups) != len(self._groups):
            raise ValueError(f"{who}: expected {len(self._groups)} param group(s), got "
                             f"{groups!r}")
        entries = {int(k): v for k, v in state_dict.get("state", {}).items()}
        new_groups, new_entries = [], []
        for gi, (saved, (names, *_)) in enumerate(zip(groups, self._groups, strict=True)):
            if len(saved.get("params", ())) != len(names):
                raise ValueError(f"{who}: group {gi} of the state has "
                                 f"{len(saved.get('params', ()))} params, this optimizer's has "
                                 f"{len(names)}")
            decoupled = saved.get("decoupled_weight_decay")
            if decoupled is not None and bool(decoupled) != (
                    self._groups[gi][1].name == "adamw"):
                raise ValueError(f"{who}: the state has decoupled_weight_decay={decoupled}, "
                                 f"which {type(self).__name__} does not do")
            group = {k: v for k, v in saved.items()
                     if k not in ("params", "param_names") + _TORCH_ONLY}
            if "betas" in group:
                group["betas"] = tuple(group["betas"])
            if not set(self.defaults) <= set(group):
                raise ValueError(f"{who}: hyper-parameters {sorted(group)} of group {gi} do "
                                 f"not match {sorted(self.defaults)}")
            hp = {k: group[k] for k in self.defaults}
            opt = type(self)._factory(**hp)
            mine = {n: self.params[n] for n in names}
            st = opt.init(mine)
            idx = [int(x) for x in saved["params"]]
            if any(j in entries for j in idx):
                steps = set()
                for j, n in zip(idx, names, strict=True):
                    if j not in entries:
                        raise ValueError(f"{who}: no state for parameter {j} ({n!r})")
                    steps.add(float(np.asarray(entries[j].get("step", -1))))
                    for s in opt.slots:
                        arr = np.asarray(entries[j][s])
                        if arr.shape != np.shape(mine[n]):
                            raise ValueError(f"{who}: state {s!r} of parameter {n!r} has shape "
                                             f"{arr.shape}, the parameter has "
                                             f"{np.shape(mine[n])}")
                        st[s][n] = arr.astype(mine[n].dtype, copy=True)
                step = max(steps) if steps != {-1.0} else 1.0
                st["step"] = np.asarray(int(step), dtype=np.int64)
            new_groups.append({"params": list(mine.values()), **group,
                               **({"param_names": list(names)} if self._keyed else {})})
            new_entries.append([names, opt, hp, st])
        self.param_groups, self._groups = new_groups, new_entries


class SGD(_Stateful):
    """``torch.optim.SGD`` over named arrays, which ``step(grads)`` updates in place.

    Args:
        params: ``model.parameters()``, ``model.named_parameters()``, a dict of named
            arrays (``dict(model.named_parameters())``), a list of arrays, or a list of
            param groups ``[{"params": ..., "lr": ...}, ...]`` (see
            :meth:`add_param_group`).
        **hyperparams: ``optim.sgd``'s arguments (``lr``, ``momentum``, ``dampening``,
            ``weight_decay``, ``nesterov``, ``maximize``).

    ``step(grads)`` takes the Module of gradients ``fc.grad`` returns for a Module, a dict
    keyed like the parameters, or a list in parameter order (see :meth:`step`).

    Example::

        >>> opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> opt.step(fc.grad(loss)(model, x, y))     # model's parameters change in place
        >>> params = dict(model.named_parameters())  # or the torch.func way, by name
        >>> opt = optim.SGD(params, lr=0.1)
        >>> opt.step(fc.grad(lambda p: loss_of(fc.functional_call(model, p, x)))(params))
    """

    _factory = staticmethod(sgd)


class Adam(_Stateful):
    """``torch.optim.Adam`` over named arrays, which ``step(grads)`` updates in place.

    Args:
        params: ``model.parameters()``, ``model.named_parameters()``, a dict of named
            arrays, a list of arrays, or a list of param groups.
        **hyperparams: ``optim.adam``'s arguments.

    Example::

        >>> opt = optim.Adam(model.named_parameters(), lr=1e-3)
    """

    _factory = staticmethod(adam)


class AdamW(_Stateful):
    """``torch.optim.AdamW`` over named arrays, which ``step(grads)`` updates in place.

    Args:
        params: ``model.parameters()``, ``model.named_parameters()``, a dict of named
            arrays, a list of arrays, or a list of param groups.
        **hyperparams: ``optim.adamw``'s arguments.

    Example::

        >>> opt = optim.AdamW(model.named_parameters(), lr=1e-3, weight_decay=0.01)
    """

    _factory = staticmethod(adamw)


class RMSprop(_Stateful):
    """``torch.optim.RMSprop`` over named arrays, which ``step(grads)`` updates in place.

    Args:
        params: ``model.parameters()``, ``model.named_parameters()``, a dict of named
            arrays, a list of arrays, or a list of param groups.
        **hyperparams: ``optim.rmsprop``'s arguments (``lr``, ``alpha``, ``eps``,
            ``weight_decay``, ``momentum``, ``centered``, ``maximize``).

    Example::

        >>> opt = optim.RMSprop(model.named_parameters(), lr=1e-2, momentum=0.9)
    """

    _factory = staticmethod(rmsprop)


class Adagrad(_Stateful):
    """``torch.optim.Adagrad`` over named arrays, which ``step(grads)`` updates in place.

    Args:
        params: ``model.parameters()``, ``model.named_parameters()``, a dict of named
            arrays, a list of arrays, or a list of param groups.
        **hyperparams: ``optim.adagrad``'s arguments (``lr``, ``lr_decay``,
            ``weight_decay``, ``initial_accumulator_value``, ``eps``, ``maximize``).

    Example::

        >>> opt = optim.Adagrad(model.named_parameters(), lr=0.1)
    """

    _factory = staticmethod(adagrad)
