"""A versioned, checksummed file format for graphs (no pickle anywhere).

Layout of a file (all integers little-endian)::

    magic   8 bytes   b"FCGRAPH\\0"
    version 4 bytes   FORMAT_VERSION
    sha256 32 bytes   over the contents (everything after ``size``)
    size    8 bytes   of the contents
    length  8 bytes   of the JSON header
    header  JSON      {"graph": ..., "arrays": [[offset, nbytes], ...], "meta": ...}
    blob    bytes     every array's raw bytes, each at an offset aligned to 64

Values of the graph (``Var``) are numbered; an atom is ``{"v": n}`` or
``{"lit": i, "aval": ...}`` (array ``i`` of the blob). Params are tagged JSON
(:func:`_encode_param`): ints, bools, strings and None as themselves, floats as
their hex form, tuples, lists, dtypes, graphs and NumPy scalars tagged.
A truncated, tampered or other-version file raises :class:`FormatError` before
anything is decoded; a decoded graph is re-checked with every shape rule.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import struct

import numpy as np

from . import dtypes
from .check import check_graph
from .core import AbstractArray, Eqn, Graph, Lit, Var
from .dtypes import dtype_kind
from .primitives import ALL

MAGIC = b"FCGRAPH\0"
FORMAT_VERSION = 1
_ALIGN = 64
_HEAD = struct.Struct("<8sI32sQ")


class FormatError(ValueError):
    """A file that is not a graph of this format version, or is damaged."""


MAX_JSON_DEPTH = 200    # nested bodies, pytrees and params of real graphs stay far below


_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\1\1\xff\xff")     # +1, +1, -1, -1 as int8


def json_depth(text: bytes) -> int:
    """How deeply ``text``'s arrays and objects nest, brackets inside strings skipped: the
    largest prefix sum of +1 per opening and -1 per closing bracket (at C speed: escapes
    are dropped, then every other piece between quotes is outside a string)."""
    outside = b"".join(text.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    steps = np.frombuffer(outside.translate(None, _NOT_BRACKETS).translate(_STEPS), np.int8)
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def _parse_header(text: bytes):
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise FormatError(f"the file's header nests {depth} levels deep; a graph file nests "
                          f"at most {MAX_JSON_DEPTH} (crafted or damaged): refusing it")
    return json.loads(text)


# --- values ------------------------------------------------------------------

def _aval(a: AbstractArray):
    return [list(a.shape), a.dtype.name, a.weak_type]


def _read_aval(x) -> AbstractArray:
    shape, name, weak = x
    return AbstractArray(tuple(shape), np.dtype(name), bool(weak))


def _float(x: float):
    if math.isnan(x):
        return {"f": "nan", "bits": struct.pack("<d", x).hex()}
    return {"f": float.hex(x)}


def _read_float(x) -> float:
    if x["f"] == "nan":
        return struct.unpack("<d", bytes.fromhex(x["bits"]))[0]
    return float.fromhex(x["f"])


class _Writer:
    def __init__(self):
        self.vars: dict[int, int] = {}
        self.arrays: list[np.ndarray] = []
        self._array_ids: dict[int, int] = {}

    def array(self, value: np.ndarray) -> int:
        i = self._array_ids.get(id(value))
        if i is None:
            if dtype_kind(value.dtype) not in "biufc":
                raise TypeError(f"cannot save an array of dtype {value.dtype}")
            i = self._array_ids[id(value)] = len(self.arrays)
            self.arrays.append(value)
        return i

    def var(self, v: Var) -> int:
        n = self.vars[id(v)] = len(self.vars)
        return n

    def atom(self, a):
        if isinstance(a, Lit):
            return {"lit": self.array(a.value), "aval": _aval(a.aval)}
        try:
            return {"v": self.vars[id(a)]}
        except KeyError:
            raise ValueError(f"the graph uses a value {a} before defining it (not closed)") \
                from None

    def graph(self, g: Graph):
        inputs = [[self.var(v), _aval(v.aval)] for v in g.inputs]
        eqns = []
        for eqn in g.eqns:
            ins = [self.atom(a) for a in eqn.inputs]
            params = {k: self.param(v, eqn.prim.name, k) for k, v in eqn.params.items()}
            outs = [[self.var(v), _aval(v.aval)] for v in eqn.outputs]
            eqns.append({"prim": eqn.prim.name, "in": ins, "out": outs, "params": params,
                         "source": eqn.source})
        return {"in": inputs, "eqns": eqns, "out": [self.atom(o) for o in g.outputs]}

    def param(self, value, prim: str, name: str):
        t = type(value)
        if value is None or t in (bool, int, str):
            return value
        if t is float:
            return _float(value)
        if t is tuple:
            return {"t": [self.param(v, prim, name) for v in value]}
        if t is list:
            return {"l": [self.param(v, prim, name) for v in value]}
        if isinstance(value, np.dtype):
            return {"dt": value.name}
        if isinstance(value, Graph):
            return {"g": self.graph(value)}
        if isinstance(value, np.generic) and dtype_kind(value.dtype) in "biufc":
            return {"np": value.dtype.name, "hex": value.tobytes().hex()}
        raise TypeError(f"cannot save the parameter {name}={value!r} of {prim}: a "
                        f"{t.__name__} is not one of the saved kinds (None, bool, int, float, "
                        "str, tuple, list, dtype, Graph, NumPy scalar)")


class _Reader:
    def __init__(self, arrays):
        self.arrays = arrays
        self._cache: dict = {}
        self.vars: dict[int, Var] = {}

    def var(self, x) -> Var:
        n, aval = x
        v = self.vars[n] = Var(_read_aval(aval))
        return v

    def atom(self, x):
        if "lit" in x:
            aval = _read_aval(x["aval"])
            return Lit(_lit_value(self.arrays, self._cache, x["lit"], aval), aval)
        return self.vars[x["v"]]

    def graph(self, x) -> Graph:
        inputs = [self.var(v) for v in x["in"]]
        eqns = []
        for e in x["eqns"]:
            prim = ALL.get(e["prim"])
            if prim is None:
                raise FormatError(f"the file uses a primitive {e['prim']!r} this version does "
                                  "not know")
            ins = tuple(self.atom(a) for a in e["in"])
            params = {k: self.param(v) for k, v in e["params"].items()}
            outs = tuple(self.var(v) for v in e["out"])
            eqns.append(Eqn(prim, ins, outs, params, e["source"]))
        return Graph(inputs, eqns, [self.atom(o) for o in x["out"]])

    def param(self, x):
        if not isinstance(x, dict):
            return x
        tag = next(iter(x))
        v = x[tag]
        if tag == "f":
            return _read_float(x)
        if tag == "t":
            return tuple(self.param(e) for e in v)
        if tag == "l":
            return [self.param(e) for e in v]
        if tag == "dt":
            return dtypes.canonical(v)
        if tag == "g":
            return self.graph(v)
        if tag == "np":
            return np.frombuffer(bytes.fromhex(x["hex"]), dtype=np.dtype(v))[0]
        raise FormatError(f"unknown parameter tag {tag!r}")


# --- the container -----------------------------------------------------------

def encode(graph: Graph) -> tuple[dict, list[np.ndarray]]:
    """``graph`` as (a JSON-able description, the arrays its literals index)."""
    w = _Writer()
    return w.graph(graph), w.arrays


def decode(body: dict, arrays: list[bytes]) -> Graph:
    """The graph of :func:`encode`'s description, its literals read from raw ``arrays``
    (not checked: :func:`loads` runs ``check_graph``)."""
    try:
        return _Reader(arrays).graph(body)
    except FormatError:
        raise
    except (KeyError, ValueError, TypeError, IndexError) as err:
        raise FormatError(f"the graph in the file is malformed: {err!r}") from err


def pack(header: dict, arrays: list[np.ndarray]) -> bytes:
    """A file of this format: the JSON ``header`` and the raw bytes of ``arrays``
    (the header gets their table as ``header["arrays"]``)."""
    table, offset = [], 0
    for a in arrays:
        offset = -(-offset // _ALIGN) * _ALIGN
        table.append([offset, a.nbytes])
        offset += a.nbytes
    text = json.dumps({**header, "arrays": table}, separators=(",", ":"),
                      allow_nan=False).encode()
    blob = bytearray(offset)
    for (off, n), a in zip(table, arrays, strict=True):
        blob[off:off + n] = np.ascontiguousarray(a).tobytes()
    payload = struct.pack("<Q", len(text)) + text + bytes(blob)
    digest = hashlib.sha256(payload).digest()
    return _HEAD.pack(MAGIC, FORMAT_VERSION, digest, len(payload)) + payload


def unpack(data: bytes) -> tuple[dict, list[bytes]]:
    """(header, raw bytes of each array) of a file; checks magic, version, size and
    checksum before decoding anything.

    Raises:
        FormatError: not a file of this format, another format version, truncated, or
            the checksum does not match (tampered or damaged).
    """
    data = memoryview(data)
    fixed = _HEAD.size
    if len(data) < 8 or bytes(data[:8]) != MAGIC:
        raise FormatError("not a functorch_core graph file (bad magic bytes)")
    if len(data) < fixed:
        raise FormatError("the file is truncated (incomplete fixed header)")
    _, version, digest, size = _HEAD.unpack(bytes(data[:fixed]))
    if version != FORMAT_VERSION:
        raise FormatError(f"this file has format version {version}; this functorch_core "
                          f"reads version {FORMAT_VERSION} only")
    payload = data[fixed:]
    if len(payload) != size:
        raise FormatError(f"the file is truncated or padded: {size} bytes of contents "
                          f"expected after the fixed header, {len(payload)} found")
    if hashlib.sha256(payload).digest() != digest:
        raise FormatError("the file's SHA-256 checksum does not match its contents: it was "
                          "modified or damaged; refusing to load it")
    try:
        (n,) = struct.unpack("<Q", bytes(payload[:8]))
        head = _parse_header(bytes(payload[8:8 + n]))
        blob = payload[8 + n:]
        arrays = []
        for off, nbytes in head["arrays"]:
            if off + nbytes > len(blob):
                raise FormatError("an array lies beyond the end of the file")
            arrays.append(bytes(blob[off:off + nbytes]))
    except FormatError:
        raise
    except (KeyError, ValueError, TypeError, struct.error, RecursionError) as err:
        raise FormatError(f"the file's header is malformed: {err!r}") from err
    return head, arrays


def read(f, what="the file") -> bytes:
    """The bytes of a graph file from the binary file object ``f``: the fixed header is
    read and checked first (magic bytes, version), then exactly the size it declares,
    so a device (``/dev/zero``), a FIFO or a huge unrelated file is never read whole.

    Raises:
        FormatError: bad magic bytes or version, a declared size larger than the file,
            or more bytes than declared.
    """
    head = f.read(_HEAD.size)
    if len(head) < 8 or head[:8] != MAGIC:
        raise FormatError(f"{what} is not a functorch_core graph file (bad magic bytes)")
    if len(head) < _HEAD.size:
        raise FormatError(f"{what} is truncated (incomplete fixed header)")
    _, version, _, size = _HEAD.unpack(head)
    if version != FORMAT_VERSION:
        raise FormatError(f"{what} has format version {version}; this functorch_core "
                          f"reads version {FORMAT_VERSION} only")
    try:
        st = os.fstat(f.fileno())
    except (AttributeError, OSError, ValueError):   # a file object without a descriptor
        st = None
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size - _HEAD.size != size:
        raise FormatError(f"{what} is truncated or padded: {size} bytes of contents "
                          f"declared after the fixed header, {st.st_size - _HEAD.size} "
                          "in the file")
    chunks, left = [head], size + 1     # one byte more: padding is an error
    while left > 0:
        chunk = f.read(min(left, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    if left != 1:
        raise FormatError(f"{what} is truncated or padded: {size} bytes of contents "
                          f"declared after the fixed header, {size + 1 - left} found")
    return b"".join(chunks)


def dumps(graph: Graph, meta: dict | None = None) -> bytes:
    """``graph`` (and a JSON-able ``meta`` dict) as the bytes of a graph file.

    Example::

        >>> data = dumps(g, {"note": "mlp"})
        >>> g2, meta = loads(data)       # str(g2) == str(g)
    """
    body, arrays = encode(graph)
    return pack({"graph": body, "meta": meta or {}}, arrays)


def loads(data: bytes) -> tuple[Graph, dict]:
    """(graph, meta) from the bytes of a graph file; the graph is checked.

    Raises:
        FormatError: see :func:`unpack`; nothing is decoded then.
    """
    head, arrays = unpack(data)
    try:
        body = head["graph"]
    except (KeyError, TypeError) as err:
        raise FormatError("the file holds no graph") from err
    return check_graph(decode(body, arrays)), head.get("meta", {})


def _lit_value(raw: list, cache: dict, i: int, aval: AbstractArray) -> np.ndarray:
    """Array ``i`` of the blob read as ``aval`` (one array per (i, shape, dtype))."""
    key = (i, aval.shape, aval.dtype)
    got = cache.get(key)
    if got is None:
        data = raw[i]
        if len(data) != aval.size * aval.dtype.itemsize:
            raise FormatError(f"a constant has {len(data)} bytes, its type {aval} needs "
                              f"{aval.size * aval.dtype.itemsize}")
        got = cache[key] = np.frombuffer(data, dtype=aval.dtype).reshape(aval.shape).copy()
    return got


def save(path, graph: Graph, meta: dict | None = None) -> None:
    """Write ``graph`` to the file ``path`` (see :func:`dumps`)."""
    with open(path, "wb") as f:
        f.write(dumps(graph, meta))


def load(path) -> tuple[Graph, dict]:
    """Read (graph, meta) from the file ``path`` (see :func:`loads`)."""
    with open(path, "rb") as f:
        return loads(read(f, str(path)))
