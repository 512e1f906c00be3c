"""``Module`` and ``Parameter``: PyTorch-style stateful layers that are also pytrees.

A module's parameters and buffers are the leaves of its pytree; its class,
hyper-parameters, submodule structure and ``training`` flag are static. So
``jit(model)(x)``, ``grad(lambda m, x: loss(m(x)))(model, x)`` (a module-shaped
gradient) and ``vmap`` work by flattening and unflattening, and in-place writes
into buffers (BatchNorm's running statistics) are written back by ``jit``.

``Module`` itself registers attributes, calls ``forward`` with its hooks and prints; its
other concerns are mixins: traversal (``module_traversal.py``), ``state_dict``
(``module_state.py``), modes and device/dtype moves (``module_modes.py``); the pytree
flatten/unflatten is ``module_tree.py``, ``Parameter`` is ``parameter.py``.
"""

from __future__ import annotations

import itertools

import numpy as np

from functorch_core.ir.pytree import register_pytree_node
from functorch_core.numpy.internal import is_tracer

from .epoch import Table, bump
from .module_fast import module_fast_flatten
from .module_modes import ModuleModes
from .module_state import ModuleState
from .module_traversal import ModuleTraversal
from .module_tree import OWN, module_flatten, module_unflatten
from .parameter import Parameter, _to_parameter  # noqa: F401  (nn.container's import)

__all__ = ["Module", "Parameter"]


class RemovableHandle:
    """Returned by ``register_forward_hook``; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks):
        self._hooks, self.id = hooks, next(RemovableHandle._ids)

    def remove(self):
        self._hooks.pop(self.id, None)


class Module(ModuleTraversal, ModuleState, ModuleModes):
    """Base class for layers, as ``torch.nn.Module``.

    Assigning a :class:`Parameter` registers a parameter, a ``Module`` a submodule;
    ``register_buffer`` registers a buffer. Subclasses define ``forward``.

    A module is a pytree (arrays are leaves; class, hyper-parameters, ``training`` and
    hooks are static). An array registered under several names (tied weights:
    ``self.out.weight = self.emb.weight``) and a submodule registered twice are one leaf
    and one node: ``grad`` returns one gradient for it, the sum over every use, and
    unflattening ties it again. Pass it to a transform as an argument,
    ``jit(lambda m, x: m(x))(model, x)`` or ``grad(loss)(model, x)``, so its current
    arrays are inputs. ``jit(model)`` closes over the arrays: they become constants
    of the compiled graph, and later updates to the parameters are not seen.

    Example::

        >>> class Affine(Module):
        ...     def __init__(self, n):
        ...         super().__init__()
        ...         self.w = Parameter(np.ones(n))
        ...         self.register_buffer("count", np.zeros(()))
        ...     def forward(self, x):
        ...         return x * self.w
        >>> m = Affine(3); [k for k in m.state_dict()]
        ['w', 'count']
    """

    _int_leaves_are_state = True    # grad gives integer buffers zero gradients, no error

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register_pytree_node(cls, module_flatten, module_unflatten,   # every layer a pytree
                             module_fast_flatten)

    def __init__(self):
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = Table()
        d["_buffers"] = Table()
        d["_modules"] = Table()
        d["_non_persistent_buffers"] = frozenset()
        d["_frozen"] = frozenset()
        d["_forward_hooks"] = Table()
        d["_forward_pre_hooks"] = Table()

    # --- attribute registration ---------------------------------------------------------

    def _check_init(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call "
                                 f"(in {type(self).__name__}.__init__)")

    def __setattr__(self, name, value):
        try:
            self._store_attribute(name, value)
        finally:
            bump()      # the static part may have changed: jit's cached structures are stale

    def _store_attribute(self, name, value):
        d = self.__dict__
        if isinstance(value, Parameter):
            self._check_init("parameters")
            self._forget(name)
            d["_parameters"][name] = value
        elif isinstance(value, Module):
            self._check_init("module")
            self._forget(name)
            d["_modules"][name] = value
        elif "_parameters" in d and name in d["_parameters"]:
            if value is not None and not _is_array(value):
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter "
                                f"'{name}' (Parameter or None expected)")
            d["_parameters"][name] = value
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not _is_array(value):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer "
                                f"'{name}' (array or None expected)")
            d["_buffers"][name] = value
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (Module or None expected)")
            d["_modules"][name] = None
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        d = self.__dict__
        d.pop(name, None)
        for own in OWN:
            d[own].pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for own in OWN:
            if own in d and name in d[own]:
                return d[own][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        try:
            for own in OWN:
                if name in self.__dict__.get(own, ()):
                    del self.__dict__[own][name]
                    return
            object.__delattr__(self, name)
        finally:
            bump()

    def register_buffer(self, name, tensor, persistent=True):
        """Register an array as a buffer (state that is not a parameter).

        Args:
            name (str): the attribute name.
            tensor (array or None): the value (kept as given: writes into it are seen).
            persistent (bool): whether it appears in ``state_dict()``. Default ``True``.
        """
        self._check_init("buffers")
        if "." in name or not name:
            raise KeyError(f"register_buffer: buffer name can't be empty or contain '.', "
                           f"got {name!r}")
        if name in self.__dict__ or name in self._parameters or name in self._modules:
            raise KeyError(f"register_buffer: attribute '{name}' already exists")
        if tensor is not None and not _is_array(tensor):
            raise TypeError(f"register_buffer: cannot assign '{type(tensor).__name__}' "
                            f"as buffer '{name}' (array or None expected)")
        self._buffers[name] = tensor
        npb = set(self._non_persistent_buffers)
        (npb.discard if persistent else npb.add)(name)
        self.__dict__["_non_persistent_buffers"] = frozenset(npb)
        bump()

    def register_parameter(self, name, param):
        """Register ``param`` (a :class:`Parameter` or ``None``) as parameter ``name``."""
        self._check_init("parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: cannot assign '{type(param).__name__}' "
                            f"as parameter '{name}' (Parameter or None expected)")
        self._forget(name)
        self._parameters[name] = param

    def add_module(self, name, module):
        """Register ``module`` (or ``None``) as child ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {type(module).__name__} is not a Module subclass")
        self._forget(name)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """The submodule at dotted path ``target`` (``''`` is ``self``)."""
        mod = self
        for part in target.split(".") if target else ():
            if part not in mod._modules or mod._modules[part] is None:
                raise AttributeError(f"{mod._get_name()} has no attribute `{part}` "
                                     f"(looking up submodule '{target}')")
            mod = mod._modules[part]
        return mod

    # --- calling ------------------------------------------------------------------------

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            res = hook(self, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            res = hook(self, args, out)
            if res is not None:
                out = res
        return out

    def register_forward_hook(self, hook):
        """Call ``hook(module, args, output)`` after every forward; a non-``None`` result
        replaces the output. Returns a handle whose ``remove()`` unregisters it."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def register_forward_pre_hook(self, hook):
        """Call ``hook(module, args)`` before every forward; a non-``None`` result
        replaces the positional arguments. Returns a removable handle."""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    # --- printing -------------------------------------------------------------------------

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """The text inside the parentheses of ``repr`` (override in layers)."""
        return ""

    def __repr__(self):
        lines = [line for line in self.extra_repr().split("\n") if line] \
            if self.extra_repr() else []
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {sub}")
        if not lines:
            return f"{self._get_name()}()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return sorted(set(object.__dir__(self)).union(*(self.__dict__[o] for o in OWN)))


def _is_array(x):
    return isinstance(x, np.ndarray) or is_tracer(x)


register_pytree_node(Module, module_flatten, module_unflatten, module_fast_flatten)


def shape_of(x):
    """``x``'s shape for arrays, tracers, scalars and nested lists alike."""
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
