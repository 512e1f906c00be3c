"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
``ParameterDict``."""

from __future__ import annotations

from collections import OrderedDict

from .module import Module, _to_parameter

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


def _index(name, idx, n):
    if not -n <= idx < n:
        raise IndexError(f"{name}: index {idx} is out of range for length {n}")
    return idx % n


def _parameter_lines(named):
    return "\n".join(f"({k}): Parameter containing: [{p.dtype} of size {p.shape}]"
                     for k, p in named)


class Sequential(Module):
    """Modules called in order, each on the previous one's output.

    Args:
        *args: modules (named ``'0'``, ``'1'``, ...), or one ``OrderedDict`` of name -> module.

    Example::

        >>> model = Sequential(Linear(3, 4), ReLU(), Linear(4, 1))
        >>> model(np.ones((2, 3))).shape
        (2, 1)
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index("Sequential", idx, len(self))]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input


class _ListOf:
    """The list methods of a container over one of its module's tables (``_table``),
    registered under ``'0'``, ``'1'``, ...; ``_store(name, value)`` registers one entry."""

    _table: str

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def _values(self):
        return list(getattr(self, self._table).values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(self._values()[idx])
        return self._values()[_index(type(self).__name__, idx, len(self))]

    def __setitem__(self, idx, value):
        self._store(str(_index(type(self).__name__, idx, len(self))), value)

    def __len__(self):
        return len(getattr(self, self._table))

    def __iter__(self):
        return iter(getattr(self, self._table).values())

    def append(self, value):
        """Add ``value`` at the end; returns ``self``."""
        self._store(str(len(self)), value)
        return self

    def extend(self, values):
        """Append every value of ``values``; returns ``self``."""
        for v in values:
            self.append(v)
        return self


class _DictOf:
    """The dict methods of a container over one of its module's tables (``_table``);
    ``self[key] = value`` registers, by the container's ``_store(key, value)``."""

    _table: str

    def __init__(self, entries=None):
        super().__init__()
        if entries is not None:
            self.update(entries)

    def __getitem__(self, key):
        return getattr(self, self._table)[key]

    def __setitem__(self, key, value):
        self._store(key, value)

    def __delitem__(self, key):
        del getattr(self, self._table)[key]

    def __len__(self):
        return len(getattr(self, self._table))

    def __iter__(self):
        return iter(getattr(self, self._table))

    def __contains__(self, key):
        return key in getattr(self, self._table)

    def keys(self):
        return getattr(self, self._table).keys()

    def values(self):
        return getattr(self, self._table).values()

    def items(self):
        return getattr(self, self._table).items()

    def update(self, entries):
        """Add every ``(name, value)`` of ``entries`` (a mapping or pairs)."""
        for k, v in entries.items() if hasattr(entries, "items") else entries:
            self[k] = v


class _OfModules:
    """A container whose entries are submodules (``modules``, torch's argument name)."""

    _table = "_modules"

    def __init__(self, modules=None):
        super().__init__(modules)

    def _store(self, name, module):
        self.add_module(name, module)


class _OfParameters:
    """A container whose entries are parameters (arrays become :class:`Parameter`\\ s)."""

    _table = "_parameters"

    def _store(self, name, value):
        self.register_parameter(name, _to_parameter(value))

    def extra_repr(self):
        return _parameter_lines(self._parameters.items())


class ModuleList(_OfModules, _ListOf, Module):
    """A list of submodules, registered under ``'0'``, ``'1'``, ... (no forward).

    Args:
        modules (iterable of Module, optional): the initial modules.
    """


class ModuleDict(_OfModules, _DictOf, Module):
    """An ordered dict of submodules (no forward).

    Args:
        modules (mapping or iterable of pairs, optional): name -> module.
    """


class ParameterList(_OfParameters, _ListOf, Module):
    """A list of parameters registered under ``'0'``, ``'1'``, ... (arrays become
    :class:`Parameter`\\ s).

    Args:
        values (iterable of arrays, optional): the initial parameters.
    """

    def __init__(self, values=None):
        super().__init__(values)


class ParameterDict(_OfParameters, _DictOf, Module):
    """An ordered dict of parameters (arrays become :class:`Parameter`\\ s).

    Args:
        parameters (mapping or iterable of pairs, optional): name -> array.
    """

    def __init__(self, parameters=None):
        super().__init__(parameters)
