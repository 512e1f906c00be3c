"""The catalogue's register and the checks its shape rules share.

``ALL`` maps every primitive's name to it; the modules that define primitives
(``primitives``, ``control_flow``, ``linalg``) register them here, so none of them needs
another's module to exist first.
"""

from __future__ import annotations

import numpy as np

from .core import Primitive
from .dtypes import dtype_kind
from .specs import spec_for

ALL: dict[str, Primitive] = {}


def register(name, rule, family, **kw) -> Primitive:
    prim = Primitive(name, rule, family=family, spec=spec_for(name, family), **kw)
    ALL[name] = prim
    return prim


def fail(msg):
    raise ValueError(msg)


def kinds_check(name, avals, kinds):
    for a in avals:     # NumPy's kind first: only bfloat16's "V" needs dtype_kind
        if a.dtype.kind not in kinds and dtype_kind(a.dtype) not in kinds:
            raise TypeError(f"{name} does not accept dtype {a.dtype}")


def real_of(dt):
    return np.dtype(np.finfo(dt).dtype) if dt.kind == "c" else dt


def complex_of(dt) -> np.dtype:
    """The complex dtype of a real dtype's precision (float32 -> complex64)."""
    return np.result_type(dt, np.complex64)
