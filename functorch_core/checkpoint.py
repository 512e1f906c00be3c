"""Checkpoints without pickle: pytrees of arrays as ``.npz`` plus a JSON tree description."""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict

import numpy as np

_TREE_KEY = "__tree__"
_FORMAT = "functorch_core.checkpoint/1"


def save(obj, path):
    """Save a pytree of arrays (a state dict, an optimizer's ``state_dict()``, ...) to ``path``.

    Containers may be dicts and ``OrderedDict``s (str or int keys; a Module's
    ``state_dict()`` is one), lists and tuples; leaves may be NumPy arrays
    (and ``nn.Parameter``s), NumPy scalars, Python ``bool``/``int``/``float``/``complex``/``str``
    and ``None``. The file is an ``.npz`` archive whose arrays are stored as ``.npy`` members
    and whose structure is a JSON document; nothing is pickled, so ``load`` needs neither the
    model code nor trust in the file.

    Args:
        obj: the pytree to save.
        path (str or os.PathLike or file): where to write (the name is used as given, no
            ``.npz`` suffix is added).

    Example::

        >>> functorch_core.save({"model": model.state_dict(), "step": 10}, "ckpt.npz")
    """
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(obj, "obj", arrays)
    doc = json.dumps({"format": _FORMAT, "tree": tree})
    members = dict(arrays)
    members[_TREE_KEY] = np.frombuffer(doc.encode("utf-8"), dtype=np.uint8)
    if isinstance(path, (str, os.PathLike)):
        with open(path, "wb") as f:
            np.savez(f, allow_pickle=False, **members)
    else:
        np.savez(path, allow_pickle=False, **members)


def load(path):
    """Load what ``save`` wrote: the same pytree, with fresh NumPy arrays as array leaves.

    Args:
        path (str or os.PathLike or file): the checkpoint.

    Example::

        >>> ckpt = functorch_core.load("ckpt.npz")
        >>> model.load_state_dict(ckpt["model"])
    """
    with np.load(path, allow_pickle=False) as data:
        if _TREE_KEY not in data.files:
            raise ValueError(f"load: {path!r} is not a functorch_core checkpoint "
                             f"(no {_TREE_KEY!r} member)")
        doc = json.loads(bytes(data[_TREE_KEY]).decode("utf-8"))
        if doc.get("format") != _FORMAT:
            raise ValueError(f"load: {path!r} has format {doc.get('format')!r}, "
                             f"expected {_FORMAT!r}")
        return _decode(doc["tree"], data)


def _encode(x, where, arrays):
    if x is None:
        return {"t": "none"}
    if isinstance(x, bool):
        return {"t": "bool", "v": x}
    if isinstance(x, int) and not isinstance(x, np.integer):
        return {"t": "int", "v": x}
    if isinstance(x, float):
        return {"t": "float", "v": _float(x)}
    if isinstance(x, complex):
        return {"t": "complex", "v": [_float(x.real), _float(x.imag)]}
    if isinstance(x, str):
        return {"t": "str", "v": x}
    if isinstance(x, (np.ndarray, np.generic)):
        a = np.asarray(x)
        if a.dtype.hasobject or a.dtype.fields is not None:
            raise TypeError(f"save: {where} is an array of dtype {a.dtype}, which cannot be "
                            "stored without pickle")
        name = f"a{len(arrays)}"
        arrays[name] = a
        return {"t": "scalar" if isinstance(x, np.generic) else "array", "k": name}
    if type(x) in (dict, OrderedDict):
        items = []
        for k, v in x.items():
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise TypeError(f"save: {where} has key {k!r} of type {type(k).__name__}; "
                                "only str and int keys are supported")
            items.append([k, _encode(v, f"{where}[{k!r}]", arrays)])
        return {"t": "dict" if type(x) is dict else "ordereddict", "items": items}
    if type(x) in (list, tuple):
        return {"t": type(x).__name__,
                "items": [_encode(v, f"{where}[{i}]", arrays) for i, v in enumerate(x)]}
    raise TypeError(f"save: {where} is a {type(x).__module__}.{type(x).__qualname__}; "
                    "supported are dict, OrderedDict, list, tuple, NumPy arrays and scalars, "
                    "bool, int, float, complex, str and None")


def _float(v):
    return v if math.isfinite(v) else repr(v)


def _unfloat(v):
    return float(v)


def _decode(node, data):
    t = node["t"]
    if t == "none":
        return None
    if t in ("bool", "int", "str"):
        return node["v"]
    if t == "float":
        return _unfloat(node["v"])
    if t == "complex":
        return complex(_unfloat(node["v"][0]), _unfloat(node["v"][1]))
    if t == "array":
        return np.array(data[node["k"]])
    if t == "scalar":
        return data[node["k"]][()]
    if t in ("dict", "ordereddict"):
        d = {k: _decode(v, data) for k, v in node["items"]}
        return d if t == "dict" else OrderedDict(d)
    if t == "list":
        return [_decode(v, data) for v in node["items"]]
    if t == "tuple":
        return tuple(_decode(v, data) for v in node["items"])
    raise ValueError(f"load: unknown node type {t!r} in the checkpoint")
