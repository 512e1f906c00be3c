"""Clearer errors for what a traced function commonly trips on, raised in place of the
error it raised: a list of Python scalars used as an array, a traced shape given to
NumPy's own creation functions, a write into a concrete NumPy array (a global, a
closed-over or a NumPy-made local) from inside a trace."""

from __future__ import annotations

import linecache
import re

import numpy as np

from functorch_core.ir import Tracer, TracerError
from functorch_core.ir.source import user_frame_of, user_source_of

from .signatures import positional_names

_PY_SCALARS = (bool, int, float, complex)
_NUMPY_SHAPE_ERROR = "expected a sequence of integers or a single integer, got 'Traced<"
_NUMPY_WRITE_ERRORS = ("setting an array element with a sequence",
                       "cannot write a traced value into a concrete NumPy array",
                       "np.asarray()/np.array() (conversion to a concrete NumPy array)")
_NAME = r"[A-Za-z_][\w.]*"
_OP = r"(?:\*\*|//|>>|<<|[-+*/%@&|^])"
_WRITE_TARGETS = (                               # where a line names the array it writes
    re.compile(rf"^\s*({_NAME})\s*\[.*\]\s*{_OP}?=(?!=)"),      # buf[i] = v, buf[i] += v
    re.compile(rf"^\s*({_NAME})\s*{_OP}=(?!=)"),                 # buf += v
    re.compile(rf"copyto\(\s*({_NAME})"),
    re.compile(rf"\bout\s*=\s*\(?\s*({_NAME})"),
    re.compile(rf"({_NAME})\.fill\("),
    re.compile(rf"\.at\(\s*({_NAME})"),
)


def explain(err, fn, fname, args, static_argnums):
    """Raise a clearer error than ``err`` (raised while tracing ``fn``) where one is
    known; return quietly otherwise."""
    if getattr(err, "explained", False):        # by a trace nested in this one
        return
    msg = str(err)
    new = None
    if isinstance(err, TypeError | ValueError) and any(m in msg for m in _NUMPY_WRITE_ERRORS):
        text = _write_into_concrete(fname, err)
        new = None if text is None else type(err)(text)
    if new is None and isinstance(err, TypeError) and msg.startswith(_NUMPY_SHAPE_ERROR):
        new = TracerError(
            f"{fname}: a NumPy function at {user_source_of(err.__traceback__)} was given a "
            f"traced value as a shape ({msg}); an array's shape must be known while "
            "tracing. Under jit, mark the argument it comes from static (jit(f, "
            "static_argnums=...) or static_argnames=...), or take it from an input's shape "
            "(x.shape[0] is a Python int while tracing)")
    if new is None and isinstance(err, TypeError | AttributeError):
        text = _scalar_list_hint(fn, fname, args, static_argnums, err)
        new = None if text is None else type(err)(text)
    if new is None:
        return
    new.explained = True
    raise new from err


def _resolve(frame, dotted):
    """``(value, origin)`` of ``dotted`` (``buf`` or ``self.buf``) seen from ``frame``."""
    head, *attrs = dotted.split(".")
    code = frame.f_code
    if head in frame.f_locals:
        value = frame.f_locals[head]
        origin = ("closed-over" if head in code.co_freevars else
                  "argument" if head in code.co_varnames[:code.co_argcount
                                                         + code.co_kwonlyargcount] else
                  "local")
    elif head in frame.f_globals:
        value, origin = frame.f_globals[head], "global"
    else:
        return None, None
    try:
        for a in attrs:
            value = getattr(value, a)
    except AttributeError:
        return None, None
    return value, origin if not attrs else f"{origin}-attribute"


def _write_into_concrete(fname, err) -> str | None:
    """The message for a write of a traced value into a concrete NumPy array that the
    failing line names, or None when the line names none."""
    found = user_frame_of(err.__traceback__)
    if found is None:
        return None
    frame, lineno = found
    line = linecache.getline(frame.f_code.co_filename, lineno).strip()
    for pattern in _WRITE_TARGETS:
        m = pattern.search(line)
        if m is None:
            continue
        value, origin = _resolve(frame, m.group(1))
        if not isinstance(value, np.ndarray) or isinstance(value, Tracer):
            continue
        name, arr = m.group(1), f"{value.dtype}{list(value.shape)}"
        where = f"`{line}` at {frame.f_code.co_filename}:{lineno}"
        if origin == "local":
            return (f"{fname}: {where} writes a traced value into {name} ({arr}), an array "
                    "the function made with NumPy (np.zeros...), which does not trace; a "
                    "trace cannot write into a concrete NumPy array. Make it with "
                    "functorch_core.numpy instead (fnp.zeros(...)): its arrays take traced "
                    "writes")
        whose = {"global": "a global of the module", "closed-over": "a variable it closes "
                 "over", "argument": "an untraced argument"}[origin.removesuffix("-attribute")]
        if origin.endswith("-attribute"):
            whose += " (through an attribute)"
        return (f"{fname}: {where} writes a traced value into {name} ({arr}), a concrete "
                f"NumPy array the function reads as {whose}, not as one of its arguments; a "
                f"trace cannot write into it. Pass {name.split('.')[-1]} as an argument and "
                "return what you need (jit and functionalize write an argument's mutations "
                "back to the caller), or build the array inside the function with "
                "functorch_core.numpy (fnp.zeros(...))")
    return None


def _scalar_list_hint(fn, fname, args, static_argnums, err) -> str | None:
    """Why ``fn`` failed, when a positional argument is a list or tuple of Python
    scalars and the error is about that container: a pytree of scalars, legal, but
    usually meant as an array."""
    msg = str(err)
    for i, a in enumerate(args):
        if i in static_argnums or type(a) not in (list, tuple) or not a:
            continue
        if not all(type(v) in _PY_SCALARS for v in a):
            continue
        kind = type(a).__name__
        if kind not in msg and "sequence" not in msg:
            continue
        types = sorted({type(v).__name__ for v in a})
        scalars = f"Python {types[0]}s" if len(types) == 1 else "Python scalars"
        name = positional_names(fn, len(args))[i]
        named = f"argument {i}" + ("" if name == f"args[{i}]" else f" ({name})")
        return (f"{fname}: {named} is a {kind} of {len(a)} {scalars}; a {kind} is a pytree, "
                f"so the function received a {kind} of {len(a)} traced scalars, not an "
                f"array, and failed on it: {type(err).__name__}: {msg}. Pass an array "
                f"(np.asarray({kind}_of_values)) to compute on a vector; keep the {kind} "
                f"only if the function indexes it element by element")
    return None
