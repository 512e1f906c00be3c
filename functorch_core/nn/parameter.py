"""``Parameter``: a NumPy array marked as a trainable parameter of a module."""

from __future__ import annotations

import numpy as np

from .epoch import bump

__all__ = ["Parameter"]


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
        self.__dict__["requires_grad"] = getattr(obj, "requires_grad", True)

    def __setattr__(self, name, value):
        np.ndarray.__setattr__(self, name, value)
        if name == "requires_grad":     # a module's static part holds it (frozen or not)
            bump()

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
