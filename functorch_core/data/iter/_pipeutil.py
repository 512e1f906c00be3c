"""Small helpers shared by the pipes of this package (not public)."""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import warnings

HASHES = {"sha256": hashlib.sha256, "md5": hashlib.md5}


class LazyModule:
    """An optional dependency, imported on first attribute access (pyarrow, s3fs with
    botocore and aiohttp, protobuf: importing them with the package took
    ``import functorch_core`` from 372 to 946 modules and 40 to 107 MB);
    :meth:`available` says whether it is installed without importing it."""

    def __init__(self, name: str):
        self._name, self._module = name, None

    def available(self) -> bool:
        if self._module is not None:
            return True
        try:
            return importlib.util.find_spec(self._name) is not None
        except (ImportError, ValueError):       # a missing parent package
            return False

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


def apply_on_cols(fn, data, input_col):
    """``fn(data)``, ``fn(data[col])`` or ``fn(*(data[c] for c in cols))``."""
    if input_col is None:
        return fn(data)
    if isinstance(input_col, (list, tuple)):
        return fn(*(data[c] for c in input_col))
    return fn(data[input_col])


def check_hash_type(pipe: str, hash_type) -> None:
    if hash_type not in HASHES:
        raise ValueError(f"{pipe}: hash_type must be one of {list(HASHES)}, got {hash_type!r}")


def check_positive(pipe: str, name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{pipe}: {name} must be a positive int, got {value!r}")


class ShuffleSwitch:
    """For a shuffling pipe: ``set_shuffle(False)`` makes it pass its items through in
    order (the DataLoader's ``shuffle=`` reaches every such pipe of the graph).

    A pipe over ``self.datapipe`` defines ``_shuffled(rng)`` (the shuffled epoch,
    drawing from ``rng``) and inherits ``__iter__``: the source as is when
    shuffling is off, else ``_shuffled`` with this epoch's generator.
    """

    _enabled = True

    def set_shuffle(self, shuffle: bool = True):
        """Turn shuffling on or off (off: items pass through in order). Returns the pipe."""
        self._enabled = bool(shuffle)
        return self

    def __iter__(self):
        if not self._enabled:
            return iter(self.datapipe)
        return self._shuffled(self._rng())

    def _skip(self, n: int) -> bool:
        # only the unshuffled pass-through can start mid-epoch exactly
        return False if self._enabled else self.datapipe._skip(n)


def close_quietly(obj) -> None:
    """``obj.close()`` where ``obj`` has one (a stream, an archive); nothing otherwise."""
    close = getattr(obj, "close", None)
    if close is not None:
        close()


def no_op_fn(*args):
    """The default ``fn`` of ``flatmap`` and the map-style ``map``: one argument is
    returned as is, several (from a list of ``input_col``) as a tuple."""
    return args[0] if len(args) == 1 else args


def fn_name(fn) -> str:
    if isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _is_local(fn) -> bool:
    code = getattr(fn, "__code__", None)
    if code is not None:
        return bool(code.co_flags & inspect.CO_NESTED) or "<locals>" in fn.__qualname__
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return "<locals>" in qualname


def check_fn(pipe: str, name: str, fn, input_col=None, *, optional: bool = False) -> None:
    """What TorchData checks of a pipe's function when the pipe is built.

    ``fn`` must be callable (``None`` too when ``optional``); a lambda or a local
    function draws TorchData's ``UserWarning`` (pickle cannot send it to a spawned
    worker); and its positional parameters must fit ``input_col`` (one argument,
    or one per listed column), as torch's ``validate_input_col``.
    """
    if fn is None and optional:
        return
    if not callable(fn):
        raise TypeError(f"{pipe}: {name}={fn!r} is not callable")
    inner = fn.func if isinstance(fn, functools.partial) else fn
    if getattr(inner, "__name__", None) == "<lambda>":
        warnings.warn(f"{pipe}: {name}: Lambda function is not supported by pickle, please "
                      "use regular python function or functools.partial instead.",
                      UserWarning, stacklevel=4)
    elif _is_local(inner):
        warnings.warn(f"{pipe}: {name}: Local function is not supported by pickle, please "
                      "use regular python function or functools.partial instead.",
                      UserWarning, stacklevel=4)
    _check_arity(pipe, fn, input_col)


def _check_arity(pipe: str, fn, input_col) -> None:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or C function: nothing to inspect
        return
    need = len(input_col) if isinstance(input_col, (list, tuple)) else 1
    kinds = inspect.Parameter
    positional = [p for p in params if p.kind in (kinds.POSITIONAL_ONLY,
                                                  kinds.POSITIONAL_OR_KEYWORD)]
    var_positional = any(p.kind is kinds.VAR_POSITIONAL for p in params)
    kw_required = [p.name for p in params
                   if p.kind is kinds.KEYWORD_ONLY and p.default is p.empty]
    where = f"{pipe}: the function {fn_name(fn)}"
    if kw_required:
        raise ValueError(f"{where} takes {len(kw_required)} non-default keyword-only "
                         f"parameters ({', '.join(kw_required)}), which is not allowed")
    required = [p for p in positional if p.default is p.empty]
    if len(required) > need or (len(positional) < need and not var_positional):
        raise ValueError(f"{where} takes {len(positional)} positional parameters, but "
                         f"{need} are required (input_col={input_col!r})")


def known_len(dp) -> int | None:
    """``len(dp)``, or ``None`` when ``dp``'s length is not knowable."""
    try:
        return len(dp)
    except (TypeError, NotImplementedError):
        return None
