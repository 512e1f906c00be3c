"""A module's modes and conversions: ``train``/``eval``, ``apply``, ``requires_grad_``
and ``to`` (device and dtype), with the argument parsing and moves ``to`` needs."""

from __future__ import annotations

import numpy as np

from functorch_core.backends import devices
from functorch_core.ir import dtypes
from functorch_core.ir.dtypes import dtype_kind

from .epoch import bump
from .parameter import Parameter


class ModuleModes:
    """The mode and conversion methods of :class:`~functorch_core.nn.Module`."""

    def train(self, mode=True):
        """Set ``training`` on this module and every descendant; returns ``self``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        bump()
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
        bump()
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
        bump()
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

    def half(self):
        """``to(np.float16)``."""
        return self.to(np.float16)

    def bfloat16(self):
        """``to(bfloat16)`` (ml_dtypes' bfloat16, ``functorch_core.numpy.bfloat16``)."""
        return self.to(dtypes.bfloat16)

    def zero_grad(self, set_to_none=True):
        """A no-op: gradients are values returned by ``grad``, never stored on modules."""


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
    if dtype is not None and dtype_kind(np.dtype(x.dtype)) in "fc" and x.dtype != dtype:
        x = devices.to_device(devices.to_host(x).astype(dtype)) if on_gpu else \
            np.asarray(x).astype(dtype)
    if device == "cuda" and not devices.is_device_array(x):
        x = devices.to_device(x)
    elif device == "cpu" and devices.is_device_array(x):
        x = devices.to_host(x)
    return x
