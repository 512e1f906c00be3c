"""TorchData's DataPipe registry as plain data, and ours in the same form.

``registry(iter_base, map_base, iter_module, map_module)`` describes a library's pipes: the
functional names on each base with the class each one builds, and every class that its
``datapipes.iter`` / ``datapipes.map`` modules export with its constructor signature as
text (names, kinds and defaults; annotations are left out). ``torchdata_registry.json``
beside this file is that description taken from TorchData 0.9, so a test without TorchData
can still compare.

Rewrite the JSON from the dev venv (torch 2.5 + torchdata 0.9)::

    /work/tdvenv/bin/python tests/data/torchdata_registry.py
"""

import functools
import inspect
import json
import os
import sys
import warnings

from functorch_core.data import IterDataPipe, MapDataPipe
from functorch_core.data.datapipes import iter as iter_pipes
from functorch_core.data.datapipes import map as map_pipes

JSON_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchdata_registry.json")

_PLAIN = (type(None), bool, int, float, str)


class _Shown:
    """A default as the registry writes it: its ``repr`` is the description."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def describe_default(value) -> str:
    """A parameter default as text: plain values by ``repr``, classes and callables by name."""
    if isinstance(value, _PLAIN):
        return repr(value)
    if isinstance(value, type):
        return f"<class {value.__name__}>"
    if callable(value):
        return f"<callable {getattr(value, '__name__', type(value).__name__)}>"
    return f"<{type(value).__name__} {value!r}>"


def describe_signature(cls) -> str:
    """The constructor's signature as text, without annotations: ``(datapipe, fn=None)``."""
    params = [p.replace(annotation=inspect.Parameter.empty,
                        default=p.default if p.default is inspect.Parameter.empty
                        else _Shown(describe_default(p.default)))
              for p in inspect.signature(cls).parameters.values()]
    return str(inspect.Signature(params))


def _built_class(target):
    # torch registers a functional name as partial(class_function, cls, enable_df_api_tracing)
    return target.args[0] if isinstance(target, functools.partial) else target


def registry(iter_base, map_base, iter_module, map_module) -> dict:
    """A library's registry: ``{"functional": {kind: {name: class}}, "classes": {kind: ...}}``.

    A functional name's class is given by the name its module exports it under (TorchData's
    ``MapperIterDataPipe`` is ``datapipes.iter.Mapper``), or its own name when not exported.
    """
    modules = {"iter": iter_module, "map": map_module}
    exported = {}
    for module in modules.values():
        for name in module.__all__:
            exported.setdefault(id(getattr(module, name)), name)
    functional = {}
    for kind, functions in (("iter", _functions(iter_base)), ("map", _functions(map_base))):
        functional[kind] = {}
        for name, target in sorted(functions.items()):
            cls = _built_class(target)
            functional[kind][name] = exported.get(id(cls), cls.__name__)
    classes = {}
    for kind, module in modules.items():
        classes[kind] = {}
        for name in sorted(module.__all__):
            obj = getattr(module, name)
            if isinstance(obj, type) and name not in ("IterDataPipe", "MapDataPipe"):
                classes[kind][name] = describe_signature(obj)
    return {"functional": functional, "classes": classes}


def _functions(base) -> dict:
    # torch keeps the registry in ``functions``, we keep it in ``_functions``
    return getattr(base, "functions", None) or vars(base).get("_functions") or {}


def ours() -> dict:
    """functorch_core.data's registry, in the form of the JSON file."""
    return registry(IterDataPipe, MapDataPipe, iter_pipes, map_pipes)


def torchdatas() -> dict:
    """TorchData's registry (needs torch and torchdata), with the TorchData version."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the datapipes deprecation banner
        import torchdata
        from torch.utils.data import IterDataPipe as TorchIter
        from torch.utils.data import MapDataPipe as TorchMap
        from torchdata.datapipes import iter as iter_module
        from torchdata.datapipes import map as map_module

    recorded = registry(TorchIter, TorchMap, iter_module, map_module)
    return {"torchdata_version": torchdata.__version__.split("+")[0], **recorded}


def load() -> dict:
    with open(JSON_PATH) as f:
        return json.load(f)


if __name__ == "__main__":
    with open(JSON_PATH, "w") as f:
        json.dump(torchdatas(), f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {JSON_PATH}", file=sys.stderr)
