"""Checkpoints without pickle: pytrees of arrays as ``.npz`` plus a JSON tree description.

``save`` to a path is atomic: the archive is written to a temporary file in the same folder,
flushed to disk, renamed onto the path and the folder flushed, so a crash, a ``kill -9`` or a
full disk leaves either the previous checkpoint or the new one, never a broken file.
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import stat
import struct
import time
import zipfile
import zlib
from collections import OrderedDict

import numpy as np

try:
    import fcntl
except ImportError:     # Windows
    fcntl = None

_TREE_KEY = "__tree__"
_FORMAT = "functorch_core.checkpoint/1"
_TEMP_SUFFIX = ".tmp"


def save(obj, path):
    """Save a pytree of arrays (a state dict, an optimizer's ``state_dict()``, ...) to ``path``.

    Containers may be dicts and ``OrderedDict``s (str or int keys; a Module's
    ``state_dict()`` is one), lists and tuples; leaves may be NumPy arrays
    (an ``nn.Parameter`` or other ndarray subclass is saved as a plain array), NumPy
    scalars (they load back with their NumPy type and dtype), Python
    ``bool``/``int``/``float``/``complex``/``str`` and ``None``. Masked arrays and
    ``np.matrix`` are refused, since they would load back as plain arrays without their mask
    or their matrix product. The file is an ``.npz`` archive whose arrays are stored as
    ``.npy`` members and whose structure is a JSON document; nothing is pickled, so ``load``
    needs neither the model code nor trust in the file.

    Saving to a path is atomic: the archive goes to a temporary file
    ``.<name>.<random>.tmp`` next to ``path``, which is flushed (``fsync``), renamed onto
    ``path`` and the folder flushed. A crash or an error (a full disk, ``KeyboardInterrupt``)
    leaves the previous file at ``path`` as it was and removes the temporary. Only a process
    killed outright (``kill -9``, power loss) leaves its temporary behind; ``load`` ignores it,
    and the next ``save`` to the same path removes it once it is 10 s old and no process holds
    it (a save holds a lock on its temporary; on Windows, or on a file system without
    ``flock``, such leftovers stay and may be deleted by hand). If ``path`` is a symlink, the
    file it points to is replaced; an existing file's permission bits are kept (not its owner,
    nor other hard links to it, which keep the old content), and a new file gets the usual
    ``0o666 & ~umask``. Saving to a file object writes into it directly, without any of these
    guarantees.

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
        _atomic_write(os.fspath(path), lambda f: np.savez(f, allow_pickle=False, **members))
    else:
        np.savez(path, allow_pickle=False, **members)


def check_savable(obj) -> None:
    """Raise the ``TypeError`` that ``save(obj, ...)`` would raise, without writing anything
    (``functorch_core.distributed.checkpoint.save`` checks before the ranks meet).

    Args:
        obj: the pytree ``save`` would be given.

    Example::

        >>> functorch_core.checkpoint.check_savable({"w": np.ones(3), "step": 1})
    """
    _encode(obj, "obj", {})


def encode(obj):
    """Split a pytree into the JSON description ``load`` reads and its arrays, as ``save``
    does (``functorch_core.distributed.checkpoint`` writes these into its own files).

    Args:
        obj: the pytree ``save`` would be given.

    Returns:
        tuple[dict, dict[str, numpy.ndarray]]: the tree description (JSON-serialisable) and
        the arrays it names, in the order the tree lists them.

    Raises:
        TypeError: as ``save`` does, for a leaf or key it cannot store.

    Example::

        >>> tree, arrays = functorch_core.checkpoint.encode({"w": np.ones(3), "step": 1})
        >>> list(arrays)
        ['a0']
    """
    arrays: dict[str, np.ndarray] = {}
    return _encode(obj, "obj", arrays), arrays


def decode(tree, arrays, where):
    """The pytree that ``encode`` split into ``tree`` and ``arrays`` (array leaves are copies).

    Args:
        tree: the tree description ``encode`` returned (after a JSON round trip).
        arrays (Mapping[str, numpy.ndarray]): the arrays it names.
        where (str): what to name in an error, e.g. the file's path.

    Raises:
        ValueError: a description that is not ``encode``'s, or names a missing array.

    Example::

        >>> functorch_core.checkpoint.decode(*functorch_core.checkpoint.encode([1.5]), "x")
        [1.5]
    """
    try:
        return _decode(tree, arrays, set(arrays), "obj")
    except _Corrupt as e:
        raise ValueError(f"load: {where} {e}") from None
    except RecursionError:
        raise ValueError(f"load: {where} has a tree nested too deeply to load") from None


def load(path):
    """Load what ``save`` wrote: the same pytree, with fresh NumPy arrays as array leaves.

    A file that is not a checkpoint, or one that is truncated or damaged, raises a
    ``ValueError`` naming the file and what is wrong with it; errors of the file system itself
    (a missing file, no permission) are raised as they are.

    Args:
        path (str or os.PathLike or file): the checkpoint.

    Example::

        >>> ckpt = functorch_core.load("ckpt.npz")
        >>> model.load_state_dict(ckpt["model"])
    """
    where = _describe(path)
    if isinstance(path, (str, os.PathLike)):
        with open(path, "rb") as f:     # errors of opening are the file system's, raised as is
            return _load_from(f, where)
    return _load_from(path, where)


def _load_from(f, where):
    try:
        data = np.load(f, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise _Corrupt("is not a functorch_core checkpoint (it holds a single .npy array)")
        with data:
            return _load_tree(data)
    except _Corrupt as e:
        raise ValueError(f"load: {where} {e}") from None
    except OSError as e:
        if e.errno not in (None, errno.EINVAL):     # EINVAL: a seek to a damaged offset
            raise
        raise _unreadable(where, e) from e
    except _READ_ERRORS as e:
        raise _unreadable(where, e) from e


# What a truncated or altered archive makes NumPy and zipfile raise.
_READ_ERRORS = (zipfile.BadZipFile, EOFError, ValueError, KeyError, zlib.error, struct.error,
                NotImplementedError, RecursionError, OverflowError,
                RuntimeError)  # zipfile: "File ... is encrypted"


class _Corrupt(Exception):
    """A checkpoint whose archive reads but whose content is not what ``save`` writes."""


def _unreadable(where, e):
    return ValueError(f"load: {where} is not a readable checkpoint (truncated or damaged?): "
                      f"{type(e).__name__}: {e}")


def _describe(path):
    if isinstance(path, (str, os.PathLike)):
        return repr(os.fspath(path))
    name = getattr(path, "name", None)
    return f"file {name!r}" if isinstance(name, str) else f"the {type(path).__name__} given"


def _load_tree(data):
    if _TREE_KEY not in data.files:
        raise _Corrupt(f"is not a functorch_core checkpoint (no {_TREE_KEY!r} member)")
    raw = data[_TREE_KEY]
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _Corrupt(f"has a {_TREE_KEY!r} member of dtype {raw.dtype} and shape {raw.shape}, "
                       "not the bytes of a JSON document")
    try:
        doc = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _Corrupt(f"has a tree description that is not JSON: {e}") from None
    except RecursionError:
        raise _Corrupt("has a tree nested too deeply to load") from None
    if not isinstance(doc, dict):
        raise _Corrupt(f"has a tree description that is a {type(doc).__name__}, not an object")
    if doc.get("format") != _FORMAT:
        raise _Corrupt(f"has format {doc.get('format')!r}, expected {_FORMAT!r}")
    if "tree" not in doc:
        raise _Corrupt("has no 'tree' in its tree description")
    try:
        return _decode(doc["tree"], data, set(data.files), "obj")
    except RecursionError:
        raise _Corrupt("has a tree nested too deeply to load") from None


def _atomic_write(path, write):
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    try:
        old_mode = os.stat(target).st_mode
    except FileNotFoundError:
        old_mode = None
    if old_mode is not None:
        if stat.S_ISREG(old_mode) and not os.access(target, os.W_OK):
            raise PermissionError(errno.EACCES, "save: the file is read-only; it was left as "
                                  "it is", path)
        old_mode = stat.S_IMODE(old_mode)
    _remove_dead_temps(folder, name)
    fd, tmp = _create_temp(folder, name)
    f = None
    try:
        f = os.fdopen(fd, "wb")
        _lock(f.fileno())
        write(f)
        f.flush()
        if old_mode is not None and hasattr(os, "fchmod"):
            os.fchmod(f.fileno(), old_mode)
        os.fsync(f.fileno())
        if fcntl is None:       # Windows renames no open file; it has no locks to hold anyway
            f.close()
        os.replace(tmp, target)     # still open (and locked): no other save takes it for dead
    except BaseException:
        if f is None:
            os.close(fd)
        else:
            try:
                f.close()
            except OSError:     # the flush of what a full disk refused fails again
                pass
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    f.close()
    try:
        _fsync_folder(folder)
    except OSError as e:
        e.add_note(f"save: {path!r} holds the new checkpoint, but flushing its folder failed, "
                   "so a crash soon after may bring back the previous one")
        raise


def _create_temp(folder, name):
    """A new file ``.<name>.<random>.tmp`` in ``folder``, created with mode ``0o666 & ~umask``
    (``tempfile.mkstemp`` would give ``0o600``)."""
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL
             | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
    for _ in range(100):
        tmp = os.path.join(folder, f".{name[:200]}.{secrets.token_hex(6)}{_TEMP_SUFFIX}")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
        except PermissionError as e:
            e.add_note(f"save: the checkpoint is written to a temporary file in {folder!r} and "
                       "renamed onto its path, so that folder must be writable")
            raise
    raise FileExistsError(errno.EEXIST, "save: no unused temporary name", folder)


# A temporary this old that no process holds locked is a killed save's: the next save of the
# same path removes it. A live save locks its temporary right after creating it and holds the
# lock until it is renamed; the age covers the moment in between.
_DEAD_TEMP_AGE_S = 10.0


def _lock(fd):
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:     # a file system without locks: dead temporaries then stay
            pass


def _remove_dead_temps(folder, name):
    if fcntl is None:
        return
    prefix = f".{name[:200]}."
    try:
        entries = list(os.scandir(folder or "."))
    except OSError:
        return
    for entry in entries:
        middle = entry.name[len(prefix):-len(_TEMP_SUFFIX)]
        if not (entry.name.startswith(prefix) and entry.name.endswith(_TEMP_SUFFIX)
                and len(middle) == 12 and all(c in "0123456789abcdef" for c in middle)):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or time.time() - st.st_mtime < _DEAD_TEMP_AGE_S:
                continue
            fd = os.open(entry.path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a live save's, left alone
            if os.fstat(fd).st_ino == st.st_ino:
                os.unlink(entry.path)
        except OSError:
            pass
        finally:
            os.close(fd)


# fsync on a folder: some file systems and platforms answer these instead of doing it.
_NO_FOLDER_FSYNC = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP}


def _fsync_folder(folder):
    if os.name == "nt":     # a folder cannot be opened, and NTFS journals the rename itself
        return
    try:
        fd = os.open(folder or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except PermissionError:     # a folder we may write but not read: nothing to flush with
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in _NO_FOLDER_FSYNC:
            raise
    finally:
        os.close(fd)


def _encode(x, where, arrays):
    if x is None:
        return {"t": "none"}
    if isinstance(x, (np.ndarray, np.generic)):     # before float/complex: np.float64 is one
        _refuse_lossy_subclass(x, where)
        a = np.asarray(x)
        if a.dtype.hasobject or a.dtype.fields is not None:
            raise TypeError(f"save: {where} is an array of dtype {a.dtype}, which cannot be "
                            "stored without pickle")
        name = f"a{len(arrays)}"
        arrays[name] = a
        return {"t": "scalar" if isinstance(x, np.generic) else "array", "k": name}
    if isinstance(x, bool):
        return {"t": "bool", "v": x}
    if isinstance(x, int):
        return {"t": "int", "v": x}
    if isinstance(x, float):
        return {"t": "float", "v": _float(x)}
    if isinstance(x, complex):
        return {"t": "complex", "v": [_float(x.real), _float(x.imag)]}
    if isinstance(x, str):
        return {"t": "str", "v": x}
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


def _refuse_lossy_subclass(x, where):
    """ndarray subclasses load back as plain arrays; refuse those that would change meaning."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"save: {where} is a numpy.ma.MaskedArray; its mask would be lost: "
                        "pass .filled(...) or the data and mask as two arrays")
    if isinstance(x, np.matrix):
        raise TypeError(f"save: {where} is a numpy.matrix; it would load back as a plain "
                        "ndarray, on which * is elementwise: pass np.asarray(...) if that is "
                        "what you mean")


def _float(v):
    return v if math.isfinite(v) else repr(v)


_NONFINITE = ("nan", "inf", "-inf")


def _unfloat(v, where):
    if type(v) in (float, int) or v in _NONFINITE:
        return float(v)
    raise _Corrupt(f"has {_short(v)} where {where} should be a float")


def _short(v):
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


_PLAIN = {"bool": bool, "int": int, "str": str}


def _decode(node, data, members, where):
    if not isinstance(node, dict) or not isinstance(node.get("t"), str):
        raise _Corrupt(f"has {_short(node)} where the tree node of {where} should be")
    t = node["t"]
    if t == "none":
        return None
    if t in _PLAIN:
        v = node.get("v")
        if type(v) is not _PLAIN[t]:
            raise _Corrupt(f"has {_short(v)} where {where} should be a {t}")
        return v
    if t == "float":
        return _unfloat(node.get("v"), where)
    if t == "complex":
        v = node.get("v")
        if not isinstance(v, list) or len(v) != 2:
            raise _Corrupt(f"has {_short(v)} where {where} should be a [real, imag] pair")
        return complex(_unfloat(v[0], where), _unfloat(v[1], where))
    if t in ("array", "scalar"):
        k = node.get("k")
        if not isinstance(k, str) or k not in members:
            raise _Corrupt(f"has no array member {_short(k)} for {where}")
        a = np.array(data[k])
        if t == "array":
            return a
        if a.ndim != 0:
            raise _Corrupt(f"has an array of shape {a.shape} in member {k!r}, where {where} "
                           "should be a scalar")
        return a[()]
    items = node.get("items")
    if t in ("dict", "ordereddict", "list", "tuple") and not isinstance(items, list):
        raise _Corrupt(f"has {_short(items)} where the items of {where} should be a list")
    if t in ("dict", "ordereddict"):
        d = {}
        for item in items:
            if not (isinstance(item, list) and len(item) == 2
                    and type(item[0]) in (str, int)):
                raise _Corrupt(f"has {_short(item)} where a [key, node] pair of {where} "
                               "should be")
            d[item[0]] = _decode(item[1], data, members, f"{where}[{item[0]!r}]")
        return d if t == "dict" else OrderedDict(d)
    if t == "list":
        return [_decode(v, data, members, f"{where}[{i}]") for i, v in enumerate(items)]
    if t == "tuple":
        return tuple(_decode(v, data, members, f"{where}[{i}]") for i, v in enumerate(items))
    raise _Corrupt(f"has an unknown node type {_short(t)} for {where}")
