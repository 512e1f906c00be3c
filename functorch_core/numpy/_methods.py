"""The NumPy surface of tracers: operators, ndarray methods, NEP 13/18 dispatch.

``install()`` puts these on ``ir.Tracer`` once, when ``functorch_core.numpy``
is imported. Names resolve through the ``fnp`` module at call time.
"""

from __future__ import annotations

import sys

import numpy as np

from functorch_core.ir import Tracer, current_trace
from functorch_core.transforms.functionalize import reshape_is_view

from ._core import HANDLED_FUNCTIONS
from ._elementwise import UFUNCS
from ._refusals import refusal


def _fnp():
    """The ``functorch_core.numpy`` namespace, read at call time: this module's package,
    which is in ``sys.modules`` before any of its modules runs."""
    return sys.modules[__package__]


def _operator(name):
    """``fnp.<name>`` as an operator: Python scalars combined stay weak (``0.5 * step``)."""
    fn = getattr(_fnp(), name)
    return getattr(fn, "operator", fn)


def _binary(name, reflected=False):
    def op(self, other):
        fn = _operator(name)
        return fn(other, self) if reflected else fn(self, other)
    return op


def _unary(name):
    return lambda self: _operator(name)(self)


def _method(name):
    def method(self, *args, **kwargs):
        return getattr(_fnp(), name)(self, *args, **kwargs)
    method.__name__ = name
    return method


def _packed(args):
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``: ndarray methods take both spellings."""
    if len(args) == 1 and (args[0] is None or isinstance(args[0], tuple | list)):
        return args[0]
    return args


def _reshape(self, *shape, **kwargs):
    if not shape:
        raise TypeError("reshape() takes exactly 1 argument (0 given)")
    return _fnp().reshape(self, _packed(shape), **kwargs)


def _transpose(self, *axes):
    return _fnp().transpose(self, _packed(axes) if axes else None)


def _inplace(name):
    def op(self, other):
        _fnp().inplace_update(self, name, other)
        return self
    return op


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    calls = _fnp().UFUNC_CALLS
    if method == "__call__" and ufunc in calls:
        return calls[ufunc](*inputs, **kwargs)
    if method == "reduce" and ufunc in _fnp().UFUNC_REDUCTIONS:
        return _fnp().UFUNC_REDUCTIONS[ufunc](*inputs, **kwargs)
    if method == "at" and ufunc in UFUNCS:
        return _fnp().ufunc_at(ufunc, *inputs, **kwargs)
    scipy_ufuncs = _scipy_ufuncs()
    if scipy_ufuncs is not None and ufunc in scipy_ufuncs.SCIPY_NAMES:
        if method == "__call__" and ufunc in scipy_ufuncs.UFUNC_CALLS:
            return scipy_ufuncs.UFUNC_CALLS[ufunc](*inputs, **kwargs)
        raise NotImplementedError(scipy_ufuncs.refusal(ufunc, method))
    raise NotImplementedError(refusal(ufunc, method))


def _scipy_ufuncs():
    """``functorch_core.scipy.ufuncs`` (SciPy's ufuncs on tracers) once ``scipy.special`` is
    imported (a SciPy ufunc cannot exist before), else None. A function-level import: the
    SciPy layer sits above this one, and importing it loads SciPy."""
    if "scipy.special" not in sys.modules:
        return None
    from functorch_core.scipy import ufuncs
    return ufuncs


def _array_function(self, func, types, args, kwargs):
    impl = HANDLED_FUNCTIONS.get(func)
    if impl is None:
        raise NotImplementedError(refusal(func))
    return impl(*args, **kwargs)


def _iter(self):
    if not self.ndim:
        raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))


METHODS = {
    "__array_ufunc__": _array_ufunc,
    "__array_function__": _array_function,
    "__iter__": _iter,
    "__getitem__": lambda self, idx: _fnp().getitem(self, idx),
    "__setitem__": lambda self, idx, value: _fnp().setitem(self, idx, value),
    "__neg__": _unary("negative"),
    "__pos__": _unary("positive"),
    "__abs__": _unary("absolute"),
    "__invert__": _unary("invert"),
    "T": property(lambda self: _fnp().transpose(self)),
    "mT": property(lambda self: _fnp().swapaxes(self, -1, -2)),
    "real": property(lambda self: _fnp().real(self)),
    "imag": property(lambda self: _fnp().imag(self)),
    "flat": property(lambda self: _fnp().ravel(self)),
    "itemsize": property(lambda self: self.dtype.itemsize),
    "nbytes": property(lambda self: self.dtype.itemsize * self.size),
}
for _name, _fn in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                   ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                   ("mod", "remainder"), ("pow", "power"), ("matmul", "matmul"),
                   ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                   ("lshift", "left_shift"), ("rshift", "right_shift")]:
    METHODS[f"__{_name}__"] = _binary(_fn)
    METHODS[f"__r{_name}__"] = _binary(_fn, reflected=True)
    METHODS[f"__i{_name}__"] = _inplace(_fn)
for _name, _fn in [("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                   ("gt", "greater"), ("ge", "greater_equal")]:
    METHODS[f"__{_name}__"] = _binary(_fn)
METHODS["__divmod__"] = lambda self, other: (_fnp().floor_divide(self, other),
                                             _fnp().remainder(self, other))
for _name in ["sum", "mean", "max", "min", "prod", "var", "std", "argmax", "argmin", "all",
              "any", "cumsum", "cumprod", "reshape", "transpose", "astype", "ravel", "flatten",
              "squeeze", "swapaxes", "clip", "dot", "conj", "conjugate", "round", "copy",
              "repeat", "take", "diagonal", "trace", "nonzero", "argsort", "fill"]:
    METHODS[_name] = _method(_name)
METHODS["reshape"] = _reshape
METHODS["transpose"] = _transpose


def _sort_in_place(self, axis=-1, kind=None, order=None, *, stable=None):
    """``ndarray.sort``: sorts in place (a write functionalize carries out); returns None."""
    if axis is None:
        raise TypeError("'NoneType' object cannot be interpreted as an integer "
                        "(x.sort sorts along one axis; np.sort(x, axis=None) flattens)")
    self[...] = _fnp().sort(self, axis=axis, kind=kind, order=order, stable=stable)


def _set_shape(self, shape):
    """``x.shape = shape``: ``x`` becomes a reshaped view of the same buffer, as in NumPy,
    whose errors it raises (a size that does not fit: ValueError; a reshape that would
    need a copy: AttributeError)."""
    new = _fnp().reshape(self, shape)
    trace = current_trace()
    if self._trace is not trace or any(v is self._var for v in trace.inputs):
        raise TypeError(
            f"x.shape = {shape!r} on an argument of the traced function ({self._trace.name}), "
            "or a value it closes over, would change the caller's array, which a transform "
            f"cannot do; write x = x.reshape({shape!r}) instead")
    if new is not self and not reshape_is_view(self, new.shape):
        raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` "
                             "to make a copy with the desired shape.")
    if new is not self:
        self._var = new._var


METHODS["sort"] = _sort_in_place
METHODS["shape"] = property(lambda self: self.aval.shape, _set_shape)


def _holds_tracer(key) -> bool:
    items = key if isinstance(key, tuple | list) else (key,)
    return any(isinstance(e, Tracer) or (isinstance(e, tuple | list) and _holds_tracer(e))
               for e in items)


def _index_trick(cls, name):
    """``cls.__getitem__`` (the class of ``np.r_`` or ``np.c_``) routing keys that hold
    tracers to ``fnp.<name>``: NumPy's own converts each entry with ``np.array``, which
    does not dispatch. Keys without tracers go to NumPy's unchanged."""
    numpy_getitem = cls.__getitem__
    if getattr(numpy_getitem, "traces", False):
        return numpy_getitem

    def __getitem__(self, key):
        if _holds_tracer(key):
            return getattr(_fnp(), name)[key]
        return numpy_getitem(self, key)
    __getitem__.traces = True
    __getitem__.__doc__ = numpy_getitem.__doc__
    return __getitem__


def install():
    Tracer.install_methods(METHODS)
    for trick, name in ((np.r_, "r_"), (np.c_, "c_")):
        type(trick).__getitem__ = _index_trick(type(trick), name)


__all__: list[str] = []
