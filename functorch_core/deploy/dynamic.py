"""Symbolic dimensions of an export: which numbers of a graph follow a dynamic size.

The function is traced at a few sizes of every named dimension (``TRACE_SIZES``); the
encoded graphs (``ir.serialize.encode``) must agree everywhere except in integers (shapes,
slice bounds, loop lengths, ...) and scalar constants (a mean's count). Each number that
differs is fitted as ``c + sum(a[name] * size[name])`` (integers exactly; scalar
constants also as ``c / size``) from one trace per name, then checked against a trace at
other sizes. A call at a new size substitutes the sizes into those numbers and re-runs
the shape rules; the user's function is not traced again.
"""

from __future__ import annotations

import copy

import numpy as np

BASE, STEP, CHECK = 5, 7, 11      # trace sizes: every name at BASE; one name at STEP; all at CHECK


class DynamicError(ValueError):
    """A dynamic dimension the graph does not follow in a way that can be re-derived."""


def _where(body, path) -> str:
    """``path`` in an encoded graph, named by its equations' primitives."""
    node, names = body, []
    for i, key in enumerate(path):
        if key == "eqns" and i + 1 < len(path):
            eqn = node["eqns"][path[i + 1]]
            names.append(f"{eqn['prim']} (equation {path[i + 1]})")
        if key == "params" and i + 1 < len(path):
            names.append(f"parameter {path[i + 1]}")
        node = node[key]
    return ", in ".join(reversed(names)) or "the graph's signature"


def fit(build, names: list[str], what: str):
    """(the graph encoded at BASE sizes, its arrays, patches) for ``build(sizes) ->
    (body, arrays)``; raises :class:`DynamicError` naming the first number that does not
    follow the sizes."""
    base_sizes = dict.fromkeys(names, BASE)
    base, base_arrays = build(base_sizes)
    variants = {n: build({**base_sizes, n: STEP}) for n in names}
    check_sizes = dict.fromkeys(names, CHECK)
    check, check_arrays = build(check_sizes)
    if any(len(a) != len(base_arrays) for a in (check_arrays, *(v[1] for v in variants.values()))):
        raise DynamicError(f"{what}: the graph has a different number of constants at "
                           "different dynamic sizes")
    patches: list = []
    _walk(base, {n: v[0] for n, v in variants.items()}, check, [], patches, base, what)
    for i, raw in enumerate(base_arrays):
        others = {n: v[1][i] for n, v in variants.items()}
        if all(np.array_equal(raw, o, equal_nan=True) and raw.dtype == o.dtype
               for o in (*others.values(), check_arrays[i])):
            continue
        patches.append(_fit_constant(i, raw, others, check_arrays[i], names, what))
    return base, base_arrays, patches


def _walk(base, variants, check, path, patches, root, what):
    kinds = {type(base), type(check), *map(type, variants.values())}
    if len(kinds) > 1:
        raise DynamicError(f"{what}: the graph changes shape with the dynamic sizes at "
                           f"{_where(root, path)}")
    if isinstance(base, dict):
        if any(v.keys() != base.keys() for v in (check, *variants.values())):
            raise DynamicError(f"{what}: the graph changes with the dynamic sizes at "
                               f"{_where(root, path)}")
        for k in base:
            _walk(base[k], {n: v[k] for n, v in variants.items()}, check[k], [*path, k],
                  patches, root, what)
    elif isinstance(base, list):
        if any(len(v) != len(base) for v in (check, *variants.values())):
            if path == ["eqns"]:
                raise DynamicError(f"{what}: the graph has {len(base)} equations at size "
                                   f"{BASE} but {len(check)} at size {CHECK}; the function "
                                   "must trace to the same equations at every size")
            raise DynamicError(f"{what}: the graph's structure changes with the dynamic "
                               f"sizes at {_where(root, path)}")
        for k in range(len(base)):
            _walk(base[k], {n: v[k] for n, v in variants.items()}, check[k], [*path, k],
                  patches, root, what)
    elif base != check or any(v != base for v in variants.values()):
        if type(base) is not int:
            raise DynamicError(f"{what}: {_where(root, path)} depends on the dynamic sizes "
                               f"({base!r} at size {BASE}); only integers and scalar "
                               "constants can follow a dynamic dimension")
        a = {}
        for n, v in variants.items():
            a[n], rem = divmod(v - base, STEP - BASE)
            if rem:
                raise DynamicError(f"{what}: {_where(root, path)} is not a whole multiple of "
                                   f"dimension {n!r}")
        c = base - BASE * sum(a.values())
        if c + CHECK * sum(a.values()) != check:
            raise DynamicError(f"{what}: {_where(root, path)} is not an affine function of "
                               f"the dynamic sizes ({base} at {BASE}, {check} at {CHECK})")
        patches.append({"path": path, "c": c, "a": {n: k for n, k in a.items() if k}})


def _fit_constant(i, raw, others, check, names, what):
    if raw.size != 1 or any(o.shape != raw.shape for o in (*others.values(), check)):
        raise DynamicError(f"{what}: a constant array of shape {raw.shape} depends on the "
                           "dynamic sizes; only scalar constants can follow them")
    b = raw.astype(np.float64).item() if raw.dtype.kind != "c" else raw.item()
    a = {n: (o.astype(np.float64).item() - b) / (STEP - BASE) for n, o in others.items()}
    affine = {"array": i, "dtype": raw.dtype.name, "shape": list(raw.shape),
              "c": b - BASE * sum(a.values()), "a": a, "kind": "affine"}
    if _close(constant_value(affine, dict.fromkeys(names, CHECK)), check):
        return affine
    if len(names) == 1:
        inverse = {**affine, "c": b * BASE, "a": {}, "kind": "inverse", "name": names[0]}
        if _close(constant_value(inverse, {names[0]: CHECK}), check) and _close(
                constant_value(inverse, {names[0]: STEP}), others[names[0]]):
            return inverse
    raise DynamicError(f"{what}: a scalar constant ({b!r} at size {BASE}) depends on the "
                       "dynamic sizes neither as a + b * size nor as c / size")


def _close(value: np.ndarray, want: np.ndarray) -> bool:
    if want.dtype.kind in "biu":
        return np.array_equal(value, want)
    return bool(np.allclose(value, want, rtol=4 * np.finfo(want.dtype).eps, atol=0))


def constant_value(patch, sizes) -> np.ndarray:
    if patch["kind"] == "inverse":
        v = patch["c"] / sizes[patch["name"]]
    else:
        v = patch["c"] + sum(k * sizes[n] for n, k in patch["a"].items())
    dt = np.dtype(patch["dtype"])
    if dt.kind in "biu":
        v = round(v)
    return np.full(tuple(patch["shape"]), v, dtype=dt)


def apply(base, raw_arrays: list[bytes], patches, sizes):
    """(the encoded graph, raw arrays) at ``sizes``."""
    body, arrays = copy.deepcopy(base), list(raw_arrays)
    for p in patches:
        if "array" in p:
            arrays[p["array"]] = constant_value(p, sizes).tobytes()
            continue
        node = body
        for k in p["path"][:-1]:
            node = node[k]
        node[p["path"][-1]] = p["c"] + sum(k * sizes[n] for n, k in p["a"].items())
    return body, arrays
