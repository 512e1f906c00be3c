"""Pytree structures as JSON, for saved exports.

Saved: tuple, list, dict with str/int keys, None, namedtuple (rebuilt on load as a
namedtuple class of the same name and fields) and leaves. Refused: any other
registered container (an ``nn.Module``, a ``pytree_dataclass``), whose class the
loading process might not have.
"""

from __future__ import annotations

import collections

from functorch_core.ir.pytree import PyTreeDef, dict_def, tree_flatten

_LEAF = tree_flatten(0)[1]


def callable_name(func) -> str:
    """``func`` named for messages: a function by its qualified name, a module or other
    callable object by its class (``Sequential``), never by its repr (a model's repr
    runs to many lines)."""
    return (getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
            or type(func).__name__)
_namedtuples: dict = {}


def to_json(td: PyTreeDef, what: str):
    """``td`` as JSON; ``what`` names the structure in errors."""
    if td.node is None:
        return "*"
    kids = [to_json(c, what) for c in td.children]
    if td.node is tuple:
        return {"tuple": kids}
    if td.node is list:
        return {"list": kids}
    if td.node is type(None):
        return None
    if td.node is dict:
        by_key = dict(zip(td.aux, kids, strict=True))
        for k in td.aux:
            if type(k) not in (str, int):
                raise TypeError(f"{what}: a dict key {k!r} is a {type(k).__name__}; only str "
                                "and int keys can be saved")
        return {"dict": [[k, by_key[k]] for k in td.order or td.aux]}   # as inserted
    if issubclass(td.node, tuple) and hasattr(td.node, "_fields"):
        return {"namedtuple": td.node.__name__, "fields": list(td.node._fields), "of": kids}
    raise TypeError(f"{what}: a {td.node.__name__} cannot be saved; an export's inputs and "
                    "outputs may nest dict (str/int keys), list, tuple, None and namedtuple "
                    "only (pass a module's state dict, not the module)")


def from_json(x) -> PyTreeDef:
    """The structure :func:`to_json` wrote (namedtuples as classes of the same name and
    fields, made once per process)."""
    if x == "*":
        return _LEAF
    if x is None:
        return PyTreeDef(type(None), None, ())
    if "tuple" in x:
        return PyTreeDef(tuple, None, [from_json(c) for c in x["tuple"]])
    if "list" in x:
        return PyTreeDef(list, None, [from_json(c) for c in x["list"]])
    if "dict" in x:
        return dict_def((k, from_json(c)) for k, c in x["dict"])
    key = (x["namedtuple"], tuple(x["fields"]))
    cls = _namedtuples.get(key)
    if cls is None:
        cls = _namedtuples[key] = collections.namedtuple(*key)
    return PyTreeDef(cls, None, [from_json(c) for c in x["of"]])
