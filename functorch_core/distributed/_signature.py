"""What every rank checks before a collective moves data: the call, the tree's structure,
each leaf's shape and dtype. One 16-byte all-reduce of a hash agrees on it; only on a
mismatch are the signatures gathered, to say which leaf differs on which ranks."""

from __future__ import annotations

import functools
import hashlib

import numpy as np

from functorch_core.backends import mpi
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.pytree import leaf_paths


class Leaves:
    """A tree's leaves as host arrays, with what names them in errors."""

    __slots__ = ("arrays", "bad", "call", "td")

    def __init__(self, call: str, leaves, td):
        self.call, self.td = call, td
        self.arrays, self.bad = [], []
        for i, leaf in enumerate(leaves):
            if type(leaf) is np.ndarray and dtype_kind(leaf.dtype) in "biufc" \
                    and leaf.dtype.isnative:
                self.arrays.append(leaf)
                continue
            try:
                a = np.asarray(leaf)
            except Exception as e:     # reported on every rank by agree()
                a = None
                self.bad.append((i, f"{type(leaf).__name__} ({e})"))
            else:
                if dtype_kind(a.dtype) not in "biufc":
                    self.bad.append((i, f"{type(leaf).__name__} of dtype {a.dtype}"))
                elif not a.dtype.isnative:      # MPI's types are native: a copy, swapped
                    a = a.astype(a.dtype.newbyteorder("="))
            self.arrays.append(a)

    def path(self, i: int) -> str:
        return _tree(self.td)[1][i] or "(the tree itself)"

    def describe(self, indices=None) -> Described:
        """`` (leaves ['w'], ['b'])``, formatted only when an error message needs it."""
        return Described(self, range(len(self.arrays)) if indices is None else indices)


class Described:
    __slots__ = ("indices", "leaves")

    def __init__(self, leaves: Leaves, indices):
        self.leaves, self.indices = leaves, indices

    def __str__(self) -> str:
        names = [self.leaves.path(i) for i in self.indices]
        if not names:
            return " (no leaves)"
        if names == ["(the tree itself)"]:
            return ""
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        return f" (leaf {shown})" if len(names) == 1 else f" (leaves {shown})"


def _skeleton(td) -> str:
    if td.node is None:
        return "*"
    return f"{td.node.__qualname__}({','.join(_skeleton(c) for c in td.children)})"


@functools.lru_cache(maxsize=256)
def _tree(td) -> tuple:
    return _skeleton(td), tuple(leaf_paths(td))


def local(leaves: Leaves, extra) -> tuple:
    """This rank's signature: the call and its arguments, the tree, each leaf."""
    bad = dict(leaves.bad)
    entries = tuple(("invalid", bad[i]) if i in bad else (a.dtype.str, a.shape)
                    for i, a in enumerate(leaves.arrays))
    return (leaves.call, extra, *_tree(leaves.td), entries)


@functools.lru_cache(maxsize=1024)
def key(sig) -> int:
    """A 62-bit hash of ``sig`` that every process computes alike (``hash()`` of a string
    differs between processes)."""
    digest = hashlib.blake2b(repr(sig).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2 ** 62 - 1)


def _ranks(ranks, labels=None) -> str:
    if labels is not None:
        return ", ".join(labels[r] for r in ranks)
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


def _groups(values, labels=None) -> str:
    by = {}
    for r, v in enumerate(values):
        by.setdefault(v, []).append(r)
    return "; ".join(f"{_ranks(rs, labels)}: {v}" for v, rs in by.items())


def _leaf(entry) -> str:
    if entry[0] == "invalid":
        return f"not an array: {entry[1]}"
    return f"{np.dtype(entry[0]).name}{list(entry[1])}"


def mismatch(sigs, labels=None) -> str:
    """What differs between the ranks' signatures (they are not all equal); ``labels``
    names each signature's owner when they are not ranks 0, 1, ..."""
    calls = [(s[0], s[1]) for s in sigs]
    if len(set(calls)) > 1:
        return "the ranks made different calls: " + _groups(
            [f"{c}{'' if a is None else a}" for c, a in calls], labels)
    paths = [s[3] for s in sigs]
    if len(set(paths)) > 1 or len({s[2] for s in sigs}) > 1:
        everywhere = set.intersection(*map(set, paths))
        for p in paths:
            odd = [x for x in p if x not in everywhere]
            if odd:
                return (f"the tree's structure differs across ranks: leaf {odd[0] or '(root)'} "
                        f"is in {_ranks([q for q, pp in enumerate(paths) if odd[0] in pp], labels)}"
                        f" only; " + _groups([f"{len(pp)} leaves" for pp in paths], labels))
        return "the tree's structure differs across ranks: " + _groups([s[2] for s in sigs],
                                                                        labels)
    for i, path in enumerate(paths[0]):
        entries = [s[4][i] for s in sigs]
        if len(set(entries)) > 1:
            return (f"leaf {path or '(the tree itself)'} differs across ranks: "
                    + _groups([_leaf(e) for e in entries], labels))
    return "the ranks' inputs differ"


def agree(leaves: Leaves, extra=None) -> None:
    """Check that every rank made this call on a tree like this one; raise on every rank
    (naming the leaf and the ranks) when not, or when a leaf is not an array."""
    w = mpi.world()
    if w.size == 1:
        sig = None
    elif not mpi.agree(key(sig := local(leaves, extra)), leaves.call, leaves.describe()):
        why = mismatch(mpi.all_gather_object(sig, f" ({leaves.call}: gathering the ranks' "
                                                  f"inputs to compare them)"))
        raise mpi.DistributedError(f"{leaves.call}: {why} (this is rank {w.rank} of {w.size})")
    if leaves.bad:
        i, why = leaves.bad[0]
        raise TypeError(f"{leaves.call}: leaf {leaves.path(i)} is not an array: {why}")
