"""``Module`` and ``Parameter``: PyTorch-style stateful layers that are also pytrees.

A module's parameters and buffers are the leaves of its pytree; its class,
hyper-parameters, submodule structure and ``training`` flag are static. So
``jit(model)(x)``, ``grad(lambda m, x: loss(m(x)))(model, x)`` (a module-shaped
gradient) and ``vmap`` work by flattening and unflattening, and in-place writes
into buffers (BatchNorm's running statistics) are written back by ``jit``.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from functorch_core.backends import devices
from functorch_core.ir.pytree import register_pytree_node
from functorch_core.numpy.internal import is_tracer
from functorch_core.transforms import stop_gradient

__all__ = ["Module", "Parameter"]


class Parameter(np.ndarray):
    """A NumPy array marked as a trainable parameter of a :class:`Module`.

    Args:
        data (array_like): the initial value (copied to an array; floats stay as given).
        requires_grad (bool): ``False`` freezes it: its gradient through a module
            pytree is zero (it enters the forward through ``stop_gradient``). Default ``True``.

    Results of arithmetic on a ``Parameter`` are plain ``np.ndarray``\\ s.

    Example::

        >>> w = Parameter(np.zeros((3, 4)))
        >>> type(w * 2)
        <class 'numpy.ndarray'>
    """

    def __new__(cls, data=None, requires_grad=True):
        arr = np.array(np.zeros(0) if data is None else data)
        obj = arr.view(cls)
        obj.requires_grad = bool(requires_grad)
        return obj

    def __array_finalize__(self, obj):
        self.requires_grad = getattr(obj, "requires_grad", True)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(_plain(x) for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_plain(x) for x in out)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None:      # in place (p += 1): hand back the Parameter itself
            return out[0] if len(out) == 1 else out
        return result

    def __array_function__(self, func, types, args, kwargs):
        args = tuple(_plain(a) for a in args)
        kwargs = {k: _plain(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)

    def __repr__(self):
        return "Parameter containing:\n" + repr(self.view(np.ndarray))

    def __reduce__(self):
        return (Parameter, (self.view(np.ndarray), self.requires_grad))


def _plain(x):
    """``x`` with every Parameter (also inside lists and tuples) viewed as ``np.ndarray``."""
    if isinstance(x, Parameter):
        return x.view(np.ndarray)
    if type(x) in (list, tuple):
        return type(x)(_plain(v) for v in x)
    return x


def _to_parameter(x, requires_grad=True):
    return x if isinstance(x, Parameter) else Parameter(x, requires_grad)


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list


class RemovableHandle:
    """Returned by ``register_forward_hook``; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks):
        self._hooks, self.id = hooks, next(RemovableHandle._ids)

    def remove(self):
        self._hooks.pop(self.id, None)


_OWN = ("_parameters", "_buffers", "_modules")


class Module:
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
        register_pytree_node(cls, _module_flatten, _module_unflatten)   # every layer a pytree

    def __init__(self):
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_modules"] = OrderedDict()
        d["_non_persistent_buffers"] = frozenset()
        d["_frozen"] = frozenset()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()

    # --- attribute registration ---------------------------------------------------------

    def _check_init(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call "
                                 f"(in {type(self).__name__}.__init__)")

    def __setattr__(self, name, value):
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
        for own in _OWN:
            d[own].pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for own in _OWN:
            if own in d and name in d[own]:
                return d[own][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for own in _OWN:
            if name in self.__dict__.get(own, ()):
                del self.__dict__[own][name]
                return
        object.__delattr__(self, name)

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

    # --- traversal ----------------------------------------------------------------------

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Yield ``(dotted_name, module)`` for ``self`` and every descendant, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, mod in self._modules.items():
            if mod is not None:
                sub = f"{prefix}.{name}" if prefix else name
                yield from mod.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        """Yield ``self`` and every descendant module."""
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """Yield ``(name, module)`` for the immediate children."""
        seen = set()
        for name, mod in self._modules.items():
            if mod is not None and id(mod) not in seen:
                seen.add(id(mod))
                yield name, mod

    def children(self):
        """Yield the immediate child modules."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, own, prefix, recurse, remove_duplicate=True):
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        seen = set()
        for mprefix, mod in mods:
            for name, v in mod.__dict__[own].items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield (f"{mprefix}.{name}" if mprefix else name), v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Yield ``(dotted_name, parameter)`` in registration order, depth first.

        Args:
            prefix (str): prepended to every name. Default ``''``.
            recurse (bool): include the submodules' parameters. Default ``True``.
            remove_duplicate (bool): a parameter registered under several names (tied
                weights) is yielded once, under its first name, as in PyTorch. Default
                ``True``.

        Example::

            >>> lm.out.weight = lm.emb.weight
            >>> [k for k, _ in lm.named_parameters()]       # 'out.weight' is not listed
            ['emb.weight', ...]
        """
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        """Yield the parameters (each tied or shared one once), in ``named_parameters()``
        order: the order of the Module's gradient leaves, and of ``list(g.parameters())``
        for the Module ``g`` that ``grad`` returns."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """Yield ``(dotted_name, buffer)``."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """Yield the buffers."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # --- state ----------------------------------------------------------------------------

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An ``OrderedDict`` of parameters and persistent buffers under PyTorch's dotted
        keys (the arrays themselves, not copies; ``keep_vars`` is accepted and ignored)."""
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                out[prefix + name] = b
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".")
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copy ``state_dict``'s arrays into the parameters and buffers, in place.

        Args:
            state_dict (Mapping[str, array]): dotted keys as ``state_dict()`` gives them
                (a PyTorch checkpoint converted with ``.numpy()`` loads as is).
            strict (bool): whether missing or unexpected keys are an error. Default ``True``.

        Returns:
            ``NamedTuple(missing_keys, unexpected_keys)``.

        Raises:
            RuntimeError: PyTorch's message listing missing/unexpected keys and every shape
            mismatch; nothing is copied then.
        """
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for k, target in own.items():
            if k in state_dict:
                shape = np.shape(state_dict[k])
                if shape != target.shape:
                    errors.append(f"size mismatch for {k}: copying a param with shape {shape} "
                                  f"from checkpoint, the shape in current model is "
                                  f"{target.shape}.")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {self._get_name()}:\n\t"
                               + "\n\t".join(errors))
        for k, target in own.items():
            if k in state_dict:
                np.copyto(target, np.asarray(state_dict[k]), casting="unsafe")
        return _IncompatibleKeys(missing, unexpected)

    # --- modes and conversions ------------------------------------------------------------

    def train(self, mode=True):
        """Set ``training`` on this module and every descendant; returns ``self``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self):
        """``train(False)``."""
        return self.train(False)

    def apply(self, fn):
        """Call ``fn(m)`` on every child (recursively), then on ``self``; returns ``self``."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, requires_grad=True):
        """Mark every parameter trainable (or frozen with ``False``); returns ``self``."""
        for p in self.parameters():
            if isinstance(p, Parameter):
                p.requires_grad = bool(requires_grad)
        for m in self.modules():
            m.__dict__["_frozen"] = frozenset() if requires_grad else frozenset(m._parameters)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast the parameters and buffers, as ``torch.nn.Module.to``; returns
        ``self`` (modified in place).

        Call it as ``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or with the keywords
        ``device=`` / ``dtype=`` (``non_blocking`` is accepted and ignored).

        Args:
            device (str): ``'cpu'`` (NumPy arrays) or ``'cuda'`` (``'cuda:0'``; device
                arrays, as :func:`functorch_core.device_put` makes them; needs the cuda
                backend: a GPU with numba-cuda and CuPy, or numba-cuda's simulator). Arrays
                already there are kept as they are.
            dtype (dtype): floating and complex arrays are cast to it (new arrays);
                integer buffers (BatchNorm's ``num_batches_tracked``) keep their dtype.

        A tied array (one array under several names) stays one array. On the GPU a
        parameter is a device array, not a :class:`Parameter`; ``requires_grad=False``
        is kept (and restored when it comes back with ``to('cpu')``).

        Example::

            >>> model.to(np.float32)              # cast
            >>> model.to("cuda")                  # place on the GPU
            >>> model.to("cpu", np.float64)       # both
        """
        device, dtype = _to_arguments(self, args, kwargs)
        if device == "cuda":
            _require_gpu(f"{self._get_name()}.to('cuda')")
        done: dict[int, object] = {}
        for m in self.modules():
            d = m.__dict__
            frozen = set(d["_frozen"])
            for own in ("_parameters", "_buffers"):
                for name, v in d[own].items():
                    if v is None:
                        continue
                    new = done.get(id(v))
                    if new is None:
                        new = done[id(v)] = _moved(v, device, dtype)
                        if own == "_parameters" and isinstance(new, np.ndarray) and \
                                not isinstance(new, Parameter):
                            new = done[id(v)] = Parameter(
                                new, getattr(v, "requires_grad", name not in frozen))
                            frozen.discard(name)    # the Parameter carries the flag again
                    if own == "_parameters" and not isinstance(new, Parameter) and \
                            getattr(v, "requires_grad", True) is False:
                        frozen.add(name)           # a device array has no requires_grad
                    d[own][name] = new
            d["_frozen"] = frozenset(frozen)
        return self

    def cpu(self):
        """``to('cpu')``."""
        return self.to("cpu")

    def cuda(self, device=None):
        """``to('cuda')`` (``device`` is accepted for PyTorch compatibility: one GPU)."""
        return self.to("cuda")

    def float(self):
        """``to(np.float32)``."""
        return self.to(np.float32)

    def double(self):
        """``to(np.float64)``."""
        return self.to(np.float64)

    def zero_grad(self, set_to_none=True):
        """A no-op: gradients are values returned by ``grad``, never stored on modules."""

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
        return sorted(set(object.__dir__(self)).union(*(self.__dict__[o] for o in _OWN)))


_DEVICES = ("cpu", "cuda")


def _device_of(x):
    """``'cpu'``/``'cuda'`` for a device argument of ``Module.to``, else None."""
    if isinstance(x, str) and (x in _DEVICES or x.startswith("cuda:")):
        return "cuda" if x.startswith("cuda") else "cpu"
    kind = getattr(x, "type", None)           # a torch.device-like object
    return kind if isinstance(kind, str) and kind in _DEVICES else None


def _to_arguments(module, args, kwargs):
    """``(device or None, dtype or None)`` from ``Module.to``'s torch-style arguments."""
    call = f"{module._get_name()}.to"
    unknown = set(kwargs) - {"device", "dtype", "non_blocking"}
    if unknown or len(args) > 2:
        raise TypeError(f"{call}() takes to(device), to(dtype), to(device, dtype) or the "
                        f"keywords device=, dtype=; got {len(args)} positional argument(s)"
                        + (f" and {sorted(unknown)}" if unknown else ""))
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    if device is not None:
        name = _device_of(device)
        if name is None:
            raise ValueError(f"{call}(device={device!r}): the device must be 'cpu' or "
                             "'cuda'")
        device = name
    for a in args:
        name = _device_of(a)
        if name is not None:
            if device is not None:
                raise TypeError(f"{call}: got two devices, {device!r} and {a!r}")
            device = name
            continue
        try:
            dt = np.dtype(a)
        except (TypeError, ValueError):
            dt = None
        if dt is None or dtype is not None:
            raise TypeError(f"{call}({a!r}): {a!r} is neither a device ('cpu', 'cuda') nor "
                            "a dtype; call to(device), to(dtype) or to(device, dtype)")
        dtype = dt
    if dtype is not None:
        dtype = np.dtype(dtype)
    return device, dtype


def _require_gpu(call):
    why = devices.missing()
    if why is not None:
        raise RuntimeError(f"{call}: no GPU backend is available here ({why}); keep the "
                           "model on 'cpu', or install the cuda extra "
                           f"(`{devices.INSTALL}`) on a machine with an NVIDIA GPU")


def _moved(v, device, dtype):
    """``v`` cast to ``dtype`` (floating/complex only) and placed on ``device``; ``v``
    itself when nothing changes."""
    on_gpu = devices.is_device_array(v)
    x = v
    if dtype is not None and np.dtype(x.dtype).kind in "fc" and x.dtype != dtype:
        x = devices.to_device(devices.to_host(x).astype(dtype)) if on_gpu else \
            np.asarray(x).astype(dtype)
    if device == "cuda" and not devices.is_device_array(x):
        x = devices.to_device(x)
    elif device == "cpu" and devices.is_device_array(x):
        x = devices.to_host(x)
    return x


def _is_array(x):
    return isinstance(x, np.ndarray) or is_tracer(x)


# --- the module pytree -------------------------------------------------------------------

class _Static:
    """A module's static part: its class, names and other attributes, hashable."""

    __slots__ = ("attrs", "cls", "frozen", "hash", "key", "names")

    def __init__(self, cls, names, attrs, frozen):
        self.cls, self.names, self.attrs, self.frozen = cls, names, attrs, frozen
        self.key = (cls, names, frozen, tuple((k, _freeze(v)) for k, v in attrs))
        self.hash = hash(self.key)

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        return isinstance(other, _Static) and self.hash == other.hash and self.key == other.key


class _Ident:
    """Compares by identity (arrays and other unhashable attribute values)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, _Ident) and other.obj is self.obj


def _freeze(v):
    if isinstance(v, dict):
        return (dict, tuple((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, list | tuple):
        return (type(v), tuple(_freeze(x) for x in v))
    if isinstance(v, np.ndarray):
        return _Ident(v)
    try:
        hash(v)
    except TypeError:
        return _Ident(v)
    return (type(v), v)


class _Tree:
    """The static part of a module hierarchy: one ``(_Static, param slots, buffer slots,
    child slots)`` per distinct module (a submodule registered twice is one node). A
    param/buffer slot is the index of its leaf, a child slot the index of its node; -1
    stands for ``None``. An array registered under several names (tied weights) is one
    leaf, so transforms see one input and its gradient sums every use."""

    __slots__ = ("hash", "nodes")

    def __init__(self, nodes):
        self.nodes = nodes
        self.hash = hash(nodes)

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        return isinstance(other, _Tree) and self.hash == other.hash and self.nodes == other.nodes


def _module_flatten(root):
    leaves, leaf_at, node_at, nodes = [], {}, {}, []

    def leaf(v):
        if v is None:
            return -1
        if isinstance(v, _SCALARS):      # immutable (and interned): never a tie
            leaves.append(v)
            return len(leaves) - 1
        j = leaf_at.get(id(v))
        if j is None:
            j = leaf_at[id(v)] = len(leaves)
            leaves.append(_plain(v))
        return j

    def visit(m):
        i = node_at.get(id(m))
        if i is not None:
            return i
        i = node_at[id(m)] = len(nodes)
        nodes.append(None)
        d = m.__dict__
        params, bufs, mods = d["_parameters"], d["_buffers"], d["_modules"]
        frozen = d.get("_frozen", frozenset()) | frozenset(
            k for k, v in params.items() if getattr(v, "requires_grad", True) is False)
        attrs = tuple((k, v) for k, v in d.items() if k not in _OWN and k != "_frozen")
        static = _Static(type(m), (tuple(params), tuple(bufs), tuple(mods)), attrs,
                         frozenset(frozen))
        pslots = tuple(leaf(v) for v in params.values())
        bslots = tuple(leaf(v) for v in bufs.values())
        mslots = tuple(-1 if c is None else visit(c) for c in mods.values())
        nodes[i] = (static, pslots, bslots, mslots)
        return i

    visit(root)
    return leaves, _Tree(tuple(nodes))


_SCALARS = (bool, int, float, complex, np.generic)


def _unaliased(children):
    """``children`` with a copy of each array that already appeared: distinct leaves are
    distinct arrays (a compiled call may return one array for two equal outputs), so the
    module flattens back to the same structure and ties only what was tied."""
    seen, out = set(), []
    for v in children:
        if not isinstance(v, _SCALARS) and id(v) in seen and hasattr(v, "copy"):
            v = v.copy()
        seen.add(id(v))
        out.append(v)
    return out


def _module_unflatten(tree, children):
    leaves = _unaliased(children)
    built = []
    for static, *_ in tree.nodes:
        m = static.cls.__new__(static.cls)
        m.__dict__.update(static.attrs)
        built.append(m)
    for m, (static, pslots, bslots, mslots) in zip(built, tree.nodes, strict=True):
        pn, bn, mn = static.names
        d = m.__dict__
        d["_parameters"] = OrderedDict(
            (k, None if j < 0 else leaves[j]) for k, j in zip(pn, pslots, strict=True))
        d["_buffers"] = OrderedDict(
            (k, None if j < 0 else leaves[j]) for k, j in zip(bn, bslots, strict=True))
        d["_modules"] = OrderedDict(
            (k, None if j < 0 else built[j]) for k, j in zip(mn, mslots, strict=True))
        d["_frozen"] = static.frozen
        for k in static.frozen:
            v = d["_parameters"].get(k)
            if v is not None and is_tracer(v):
                d["_parameters"][k] = stop_gradient(v)
    return built[0]


register_pytree_node(Module, _module_flatten, _module_unflatten)


def shape_of(x):
    """``x``'s shape for arrays, tracers, scalars and nested lists alike."""
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
