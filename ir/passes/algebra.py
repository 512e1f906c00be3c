"""Algebraic rewrites of products that forward-mode Jacobians create.

``jacfwd`` pushes an identity basis through the function, so ``x @ w`` turns
into ``I @ w``: a full matrix product whose answer is a transpose of ``w``.
``simplify_products`` finds ``dot_general`` with a scaled identity ``c * I``
(a literal, checked by value, or ``mul``/``neg`` of one by a uniform constant)
contracted over one dimension and replaces it with ``c * transpose(x)``; a
row or column slice of one (``chunk_size`` splits the basis so) picks a slice
of ``x``.
``jacrev`` of an elementwise function meets ``(I * v[None, :]) @ w`` (the basis
times the local derivative): a diagonal matrix, ``c * I`` times a broadcast real
vector, becomes a row scaling ``(c * v)[:, None] * w`` the same way. It also
drops multiplications of real and integer arrays by a literal one, and moves
each ``transpose`` into what computes its operand (``jacfwd`` ends with one),
so that no separate transposed copy is made.

Exactness. ``sum_m (c I)[i, m] x[m, r]`` is ``c * x[i, r]`` plus products
``0 * x[m, r]``: zeros while ``x`` is finite, NaN where ``x[m, r]`` is
infinite or NaN. The rewrite keeps that:

* a literal ``x`` is rewritten (folded into a new literal) only when all its
  entries and ``c`` are finite;
* a real floating-point ``x`` computed at run time gets a guard: an entry is
  NaN when another entry of its contracted fibre is not finite, as the product
  gives. Integer ``x`` needs none;
* for a diagonal matrix the off-diagonal entries are ``0 * v[m]``, NaN where
  ``v[m]`` is not finite, and the guard counts those too;
* a complex ``x`` computed at run time is left alone (a product spreads a
  non-finite part over both components in ways a select cannot follow cheaply).

The one difference left is the sign of a zero result: the rewrite gives
``c * x[i, r]`` (``-0.0`` for ``x[i, r] == -0.0``, ``c > 0``), a BLAS product
usually ``+0.0`` (its accumulator starts at ``+0.0``); the two compare equal.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import primitives as P
from ..core import AbstractArray, Eqn, Graph, Lit, Var
from ..dtypes import dtype_kind

INT_KINDS = "iu"
IDENTITY_KINDS = "iufc"


def simplify_products(graph: Graph) -> Graph:
    """Rewrite products with (scaled) identity matrices and ones; move transposes up.

    Args:
        graph: a functional graph; it is left untouched.

    Returns:
        A new graph computing the same values (see the module notes on
        non-finite values and the sign of zero). Equations it makes dead stay
        in place for ``dce``.

    Example::

        >>> x = Var(AbstractArray((3, 4), np.dtype(np.int64)))
        >>> y = Var(AbstractArray((4, 3), np.dtype(np.int64)))
        >>> dn = (((0,), (0,)), ((), ()))         # y = x.T @ I
        >>> g = Graph([x], [Eqn(P.dot_general, (x, Lit(np.eye(3, dtype=np.int64))), (y,),
        ...                     {"dimension_numbers": dn})], [y])
        >>> print(simplify_products(g))
        graph(a:i64[3,4]) {
          b:i64[4,3] = transpose[permutation=(1, 0)] a
          return b
        }
    """
    return _push_transposes(_Rewriter(graph).run())


class _Diagonal(NamedTuple):
    """A matrix that is ``c`` (finite, nonzero) where ``col - row == off`` and zero
    elsewhere: ``c * I`` or a slice of it. With ``v``, times ``v`` broadcast along
    matrix axis ``axis`` (then square with ``off == 0``)."""

    c: object
    off: int = 0
    v: Var | None = None
    axis: int | None = None


class _Rewriter:
    def __init__(self, graph):
        self.graph = graph
        self.env: dict[int, Var | Lit] = {}
        self.diagonals: dict[int, _Diagonal] = {}
        self.lit_diagonals: dict[int, _Diagonal | None] = {}   # checked once per literal
        self.broadcasts: dict[int, Eqn] = {}     # id(var) -> its broadcast_in_dim
        self.eqns: list[Eqn] = []

    def run(self) -> Graph:
        for eqn in self.graph.eqns:
            inputs = tuple(self.read(a) for a in eqn.inputs)
            new = Eqn(eqn.prim, inputs, eqn.outputs, eqn.params, eqn.source)
            if eqn.prim is P.dot_general:
                # a reduced-precision product rounds its operands: c * x is not its value
                if "precision" not in eqn.params and self.identity_product(new):
                    continue
            elif eqn.prim is P.mul:
                if self.times_one(new):
                    continue
                self.note_product(new)
            elif eqn.prim is P.neg:
                d = self.diagonal_of(inputs[0])
                if d is not None and d.v is None:
                    self.diagonals[id(eqn.outputs[0])] = d._replace(c=-d.c)
            elif eqn.prim is P.slice:
                self.note_slice(new)
            elif eqn.prim is P.broadcast_in_dim:
                self.broadcasts[id(eqn.outputs[0])] = new
            self.eqns.append(new)
        return Graph(list(self.graph.inputs), self.eqns, [self.read(o) for o in self.graph.outputs])

    def read(self, a):
        return self.env.get(id(a), a) if isinstance(a, Var) else a

    # --- what is known about an atom ---------------------------------------------

    def diagonal_of(self, a) -> _Diagonal | None:
        """What ``a`` is known to be, if it is a ``_Diagonal``."""
        if isinstance(a, Var):
            return self.diagonals.get(id(a))
        if id(a) not in self.lit_diagonals:
            self.lit_diagonals[id(a)] = _literal_diagonal(a.value)
        return self.lit_diagonals[id(a)]

    def scale_of(self, a):
        """``c`` when ``a`` is exactly ``c * I`` (square, no offset), else None."""
        d = self.diagonal_of(a)
        if d is None or d.v is not None or d.off != 0 or a.aval.shape[0] != a.aval.shape[1]:
            return None
        return d.c

    def note_slice(self, eqn):
        d = self.diagonal_of(eqn.inputs[0])
        if d is None or d.v is not None or set(eqn.params["strides"]) != {1}:
            return
        (r0, c0) = eqn.params["start_indices"]
        self.diagonals[id(eqn.outputs[0])] = d._replace(off=d.off + r0 - c0)

    def note_product(self, eqn):
        """Record ``c * I`` times a uniform constant, or times a broadcast vector."""
        x, y = eqn.inputs
        out = eqn.outputs[0]
        for a, b in ((x, y), (y, x)):
            d = self.diagonal_of(a) if a.aval.ndim == 2 else None
            if d is None or d.v is not None:
                continue
            s = _uniform(b, self.eqn_of)
            if s is not None:
                dt = out.aval.dtype
                with np.errstate(all="ignore"):
                    cs = np.asarray(d.c, dt) * np.asarray(s, dt)
                if _finite_nonzero(cs):
                    self.diagonals[id(out)] = d._replace(c=cs[()])
                return
            c = self.scale_of(a)
            bcast = self.eqn_of(b)
            if c is not None and bcast is not None and dtype_kind(out.aval.dtype) in "iuf":
                v, dims = bcast.inputs[0], bcast.params["broadcast_dimensions"]
                if v.aval.shape == out.aval.shape[:1] and len(dims) == 1:
                    self.diagonals[id(out)] = _Diagonal(c, 0, v, dims[0])
                return

    def eqn_of(self, v):
        return self.broadcasts.get(id(v))

    # --- rewrites ---------------------------------------------------------------------

    def times_one(self, eqn) -> bool:
        """``mul(x, 1)`` is ``x`` exactly for real and integer dtypes."""
        out = eqn.outputs[0]
        if dtype_kind(out.aval.dtype) not in "iuf":
            return False
        x, y = eqn.inputs
        for a, b in ((x, y), (y, x)):
            s = _uniform(b, self.eqn_of)
            if s is not None and s == 1 and a.aval == out.aval:
                self.env[id(out)] = a
                return True
        return False

    def identity_product(self, eqn) -> bool:
        lhs, rhs = eqn.inputs
        (lc, rc), (lb, _) = eqn.params["dimension_numbers"]
        if lb or len(lc) != 1:
            return False
        out = eqn.outputs[0]
        if dtype_kind(out.aval.dtype) not in IDENTITY_KINDS:
            return False
        for eye, x, j, k, first in ((lhs, rhs, rc[0], lc[0], True),
                                    (rhs, lhs, lc[0], rc[0], False)):
            diagonal = self.diagonal_of(eye) if eye.aval.ndim == 2 else None
            if diagonal is None:
                continue
            picked = _picked(eye.aval.shape, k, diagonal.off)
            if picked is None:
                continue
            rest = tuple(d for d in range(x.aval.ndim) if d != j)
            perm = (j,) + rest if first else rest + (j,)
            emit = _Emitter(self.eqns, eqn.source)
            c, v = diagonal.c, diagonal.v
            if v is None:
                result = self.scaled_layout(emit, x, c, perm, j, picked)
            else:
                result = self.diagonal_layout(emit, x, c, v, diagonal.axis == k, perm, j)
            if result is not None and result.aval == out.aval:
                self.env[id(out)] = result
                return True
        return False

    def scaled_layout(self, emit, x, c, perm, j, picked):
        """``c * transpose(x[picked along j], perm)``, guarded as the product would be;
        None if not exact. ``picked`` is ``(start, stop)``: the entries the matrix selects."""
        dt = x.aval.dtype
        c = np.asarray(c, dt)
        if dt.kind == "c" and c.imag != 0:
            return None
        if isinstance(x, Lit):
            if dtype_kind(dt) in "fc" and not np.all(np.isfinite(x.value)):
                return None
            value = np.take(x.value, range(*picked), axis=j)
            value = np.ascontiguousarray(np.transpose(value, perm))
            return _lit(value if c == 1 else c * value, x.aval)
        if dt.kind == "c":
            return None
        t = _transpose(emit, _take(emit, x, j, picked), perm)
        if c != 1:
            t = emit(P.mul, _lit(c, AbstractArray((), dt, x.aval.weak_type)), t)
        if dt.kind in INT_KINDS:
            return t
        return self.nan_guard(emit, _not_finite(emit, x), t, perm, j, picked)

    def diagonal_layout(self, emit, x, c, v, on_contracted, perm, j):
        """``diag(c * v)`` times ``x`` as a row scaling of ``transpose(x, perm)``, guarded.

        An off-diagonal entry of the matrix is ``0 * v[m]``, NaN when ``v[m]`` is not
        finite; it meets ``x`` along the contracted axis when ``v`` lies on the
        matrix's contracted axis, and along the whole row otherwise.
        """
        dt = x.aval.dtype
        if dtype_kind(dt) not in "iuf":
            return None
        c = np.asarray(c, dt)
        d = v if c == 1 else emit(P.mul, _lit(c, AbstractArray((), dt, v.aval.weak_type)), v)
        t = _transpose(emit, x, perm)
        at = perm.index(j)                     # the matrix's free axis in the result
        t = emit(P.mul, emit(P.broadcast_in_dim, d, shape=t.aval.shape,
                             broadcast_dimensions=(at,)), t)
        if dt.kind in INT_KINDS:
            return t
        bad_v = _not_finite(emit, v)
        bad = _not_finite(emit, x)
        if on_contracted:
            spread = emit(P.broadcast_in_dim, bad_v, shape=x.aval.shape, broadcast_dimensions=(j,))
            return self.nan_guard(emit, emit(P.or_, bad, spread), t, perm, j)
        guarded = self.nan_guard(emit, bad, t, perm, j)
        if x.aval.shape[j] == 1:               # no off-diagonal entries
            return guarded
        row = emit(P.broadcast_in_dim, bad_v, shape=t.aval.shape, broadcast_dimensions=(at,))
        return emit(P.select, row, _nan(dt), guarded)

    def nan_guard(self, emit, bad, t, perm, j, picked=None):
        """``t`` (``x[picked]`` transposed by ``perm``), NaN where ``bad`` (in ``x``'s
        layout) holds for another entry of the contracted fibre: ``0 * x`` is NaN there."""
        count_t = np.dtype(np.int32) if bad.aval.shape[j] < 2 ** 31 else np.dtype(np.int64)
        bad = emit(P.convert, bad, new_dtype=count_t)
        total = emit(P.reduce_sum, bad, axes=(j,))
        rest_at = tuple(i for i, p in enumerate(perm) if p != j)
        total = emit(P.broadcast_in_dim, total, shape=t.aval.shape, broadcast_dimensions=rest_at)
        own = bad if picked is None else _take(emit, bad, j, picked)
        others = emit(P.gt, total, _transpose(emit, own, perm))
        return emit(P.select, others, _nan(t.aval.dtype), t)


def _picked(shape, k, off):
    """``(start, stop)`` of the contracted entries a matrix with ones at ``col - row ==
    off`` picks, one per free index, when it picks exactly one for each; else None."""
    rows, cols = shape
    if k == 1:              # rows are free: row r picks column r + off
        start, stop = off, off + rows
        return (start, stop) if 0 <= start and stop <= cols else None
    start, stop = -off, cols - off      # columns are free: column q picks row q - off
    return (start, stop) if 0 <= start and stop <= rows else None


def _take(emit, x, j, picked):
    """``x[start:stop]`` along axis ``j`` (``x`` itself when that is all of it)."""
    start, stop = picked
    if (start, stop) == (0, x.aval.shape[j]):
        return x
    nd = x.aval.ndim
    return emit(P.slice, x, start_indices=tuple(start if d == j else 0 for d in range(nd)),
                limit_indices=tuple(stop if d == j else x.aval.shape[d] for d in range(nd)),
                strides=(1,) * nd)


def _transpose(emit, x, perm):
    return x if perm == tuple(range(len(perm))) else emit(P.transpose, x, permutation=perm)


def _not_finite(emit, x):
    return emit(P.not_, emit(P.is_finite, x))


def _nan(dt):
    return _lit(np.asarray(np.nan, dt), AbstractArray((), dt))


ELEMENTWISE = {"unary", "binary", "select", "convert"}
MAX_PUSH_DEPTH = 64      # equations a transpose moves through (keeps the recursion short)


def _push_transposes(graph: Graph) -> Graph:
    """Move each ``transpose`` towards the graph inputs (see ``_Transposer``)."""
    if not any(e.prim is P.transpose for e in graph.eqns):
        return graph
    return _Transposer(graph).run()


class _Transposer:
    """Rewrites ``transpose(y)`` by transposing what ``y`` is computed from.

    A transpose of a transpose composes into one (or none); a transpose of a
    broadcast is a broadcast; a transpose of a literal is a transposed literal; a
    transpose of an elementwise result used nowhere else is the elementwise op
    on transposed operands. A transpose left at the end of a Jacobian then
    becomes part of the fused loop that computes it, instead of a copy.
    """

    def __init__(self, graph):
        self.graph = graph
        self.uses: dict[int, int] = {}
        for e in graph.eqns:
            for a in e.inputs:
                self.uses[id(a)] = self.uses.get(id(a), 0) + 1
        for o in graph.outputs:
            self.uses[id(o)] = self.uses.get(id(o), 0) + 2
        self.producer = {id(o): e for e in graph.eqns for o in e.outputs}
        self.env: dict[int, Var | Lit] = {}
        self.eqns: list[Eqn] = []

    def read(self, a):
        return self.env.get(id(a), a) if isinstance(a, Var) else a

    def run(self) -> Graph:
        for eqn in self.graph.eqns:
            new = Eqn(eqn.prim, tuple(self.read(a) for a in eqn.inputs), eqn.outputs,
                      eqn.params, eqn.source)
            if eqn.prim is P.transpose:
                out = eqn.outputs[0]
                start = len(self.eqns)
                result = self.transposed(eqn.inputs[0], tuple(eqn.params["permutation"]),
                                         _Emitter(self.eqns, eqn.source))
                if result.aval == out.aval:
                    self.env[id(out)] = result
                    continue
                del self.eqns[start:]
            self.eqns.append(new)
        return Graph(list(self.graph.inputs), self.eqns, [self.read(o) for o in self.graph.outputs])

    def transposed(self, a, perm, emit, depth=0):
        """``transpose(a, perm)`` for an atom ``a`` of the original graph."""
        if perm == tuple(range(len(perm))):
            return self.read(a)
        if isinstance(a, Lit):
            return _lit(np.ascontiguousarray(np.transpose(a.value, perm)), a.aval)
        eqn = self.producer.get(id(a))
        if eqn is None or depth > MAX_PUSH_DEPTH:
            return emit(P.transpose, self.read(a), permutation=perm)
        if eqn.prim is P.transpose:
            inner = eqn.params["permutation"]
            return self.transposed(eqn.inputs[0], tuple(inner[p] for p in perm), emit, depth + 1)
        if eqn.prim is P.broadcast_in_dim:
            return self.broadcast(eqn.inputs[0], eqn.params, perm, emit, depth + 1)
        if eqn.prim.family in ELEMENTWISE and self.uses.get(id(a)) == 1:
            moved = [self.read(x) if x.aval.ndim == 0 else
                     self.transposed(x, perm, emit, depth + 1) for x in eqn.inputs]
            return emit(eqn.prim, *moved, **eqn.params)
        return emit(P.transpose, self.read(a), permutation=perm)

    def broadcast(self, x, params, perm, emit, depth):
        shape, dims = params["shape"], params["broadcast_dimensions"]
        where = [perm.index(d) for d in dims]           # x's axes in the transposed result
        order = tuple(sorted(range(len(where)), key=where.__getitem__))
        x = self.transposed(x, order, emit, depth)
        return emit(P.broadcast_in_dim, x, shape=tuple(shape[p] for p in perm),
                    broadcast_dimensions=tuple(sorted(where)))


class _Emitter:
    """Appends single-output equations to ``eqns`` with types from the shape rules."""

    def __init__(self, eqns, source):
        self.eqns, self.source = eqns, source

    def __call__(self, prim, *inputs, **params):
        (aval,) = prim.shape_rule(*(a.aval for a in inputs), **params)
        out = Var(aval)
        self.eqns.append(Eqn(prim, tuple(inputs), (out,), params, self.source))
        return out


def _lit(value, aval):
    value = np.asarray(value, aval.dtype)
    return Lit(value, aval.update(shape=value.shape))


def _finite_nonzero(c) -> bool:
    return bool(np.isfinite(c)) and c != 0 if dtype_kind(np.asarray(c).dtype) in "fc" else c != 0


def _literal_diagonal(value: np.ndarray) -> _Diagonal | None:
    """``value`` as a ``_Diagonal`` whose diagonal spans its shorter side, or None."""
    if value.ndim != 2 or 0 in value.shape or dtype_kind(value.dtype) not in IDENTITY_KINDS:
        return None
    rows, cols = value.shape
    edge = value[0] if rows <= cols else value[:, 0]
    if np.count_nonzero(edge) != 1:        # rejects a dense matrix without a full scan
        return None
    off = int(np.argmax(edge != 0))
    off = off if rows <= cols else -off
    diag = np.diagonal(value, off)
    c = diag[0]
    if (len(diag) != min(rows, cols) or not _finite_nonzero(c) or not np.all(diag == c)
            or np.count_nonzero(value) != len(diag)):
        return None
    return _Diagonal(c, off)


def _uniform(a, eqn_of):
    """The value every entry of ``a`` has, when known at compile time; else None."""
    if isinstance(a, Var):
        eqn = eqn_of(a)
        if eqn is None:
            return None
        a = eqn.inputs[0]
        if not isinstance(a, Lit):
            return None
    v = a.value
    if v.size == 0:
        return None
    first = v.flat[0]
    if v.size > 1 and (v.flat[-1] != first or not np.all(v == first)):
        return None
    return first
