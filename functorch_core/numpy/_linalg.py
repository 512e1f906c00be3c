"""Products and matrix structure: ``matmul``, ``dot``, ``einsum``, ``diagonal``, ``tril``...

Every product is one ``dot_general`` (contracting and batch dimensions) plus
layout primitives; the operands are first converted to arrays and promoted
to NumPy's ``result_type`` (Python scalars are not weak here, as in NumPy:
``np.dot(2, x_f32)`` is float64). Shape mismatches raise ``ValueError``
naming the function, both shapes and the user's line.
"""

from __future__ import annotations

import operator
import string

import numpy as np

from functorch_core._internal import autocast
from functorch_core.ir import dtypes, mark_read_only
from functorch_core.ir import primitives as P
from functorch_core.ir.source import user_source

from .._internal import matmul_precision
from ._core import (
    aval,
    broadcast_all,
    broadcast_to_shape,
    cast,
    constant,
    implements,
    normalize_axis,
    to_result,
)
from ._creation import _tri_mask, array_operand
from ._elementwise import _conj
from ._reductions import sum as _sum

__all__ = ["matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "trace", "diag",
           "diagonal", "tril", "triu"]


def _shape_error(name, a, b, da, db, what="are not aligned"):
    sa, sb = aval(a).shape, aval(b).shape
    return ValueError(f"{name}: shapes {sa} and {sb} {what}: {sa[da]} (dim {da}) != "
                      f"{sb[db]} (dim {db}) (at {user_source()})")


def _promoted(*xs):
    """The operands as strong arrays of their common NumPy result dtype."""
    xs = [array_operand(x) for x in xs]
    dt = dtypes.canonical(np.result_type(*(aval(x).dtype for x in xs)))
    return [cast(x, dt) for x in xs]


def _dot_general(lhs, rhs, lc=(), rc=(), lb=(), rb=(), precision=None, name="dot_general"):
    """The product; a float32 one at ``precision`` (None: the float32 matmul precision
    in force, read now, when it is traced)."""
    dims = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    lhs, rhs = autocast.lowered(lhs, rhs)
    return P.dot_general.bind(lhs, rhs, dimension_numbers=dims,
                              **matmul_precision.param(name, precision, aval(lhs).dtype))


def _scalar_product(a, b):
    """The product of operands where one is 0-d (NumPy's dot/inner of a scalar)."""
    a, b = broadcast_all("dot", a, b)
    return P.mul.bind(a, b)


def _flat(x):
    return P.reshape.bind(x, new_sizes=(aval(x).size,)) if aval(x).ndim != 1 else x


# --- products ---------------------------------------------------------------------------

def matmul(x1, x2, /, out=None, *, casting="same_kind", order="K", dtype=None, subok=True,
           signature=None, axes=None, axis=None, precision=None):
    """``numpy.matmul`` (and ``@``): matrix product with broadcast batch dimensions.

    A 1-D first operand is a row vector, a 1-D second operand a column vector; the
    added dimension is removed from the result. 0-d operands are rejected.
    ``precision`` (default ``None``: ``fc.get_float32_matmul_precision()``), as
    ``jax.numpy.matmul``'s: ``lax.Precision`` or its names, for float32 operands.

    Example::

        >>> fnp.matmul(np.ones((2, 3), np.float32), np.ones(3, np.float32),
        ...            precision="highest")
        array([3., 3.], dtype=float32)
    """
    for key, v in (("out", out), ("signature", signature), ("axes", axes), ("axis", axis)):
        if v is not None:
            raise NotImplementedError(f"matmul(..., {key}=...) is not supported")
    name = "matmul"
    a, b = _promoted(x1, x2)
    if dtype is not None:
        dt = dtypes.canonical(dtype)
        for x in (a, b):
            if not np.can_cast(aval(x).dtype, dt, casting=casting):
                raise TypeError(f"matmul: cannot cast {aval(x).dtype} to {dt} with casting="
                                f"{casting!r}")
        a, b = cast(a, dt), cast(b, dt)
    for i, x in enumerate((a, b)):
        if aval(x).ndim == 0:
            raise ValueError(f"matmul: input operand {i} does not have enough dimensions "
                             f"(has 0, gufunc core with signature (n?,k),(k,m?)->(n?,m?) "
                             f"requires 1) (at {user_source()})")
    sa, sb = aval(a).shape, aval(b).shape
    ka, kb = len(sa) - 1, max(len(sb) - 2, 0)
    if sa[ka] != sb[kb]:
        raise _shape_error("matmul", a, b, ka, kb)
    if len(sb) <= 2 or len(sa) == 1:
        # no batch on one side: dot_general's (free lhs..., free rhs...) is NumPy's order
        return to_result(_dot_general(a, b, (ka,), (kb,), precision=precision, name=name),
                         scalar=True)
    if len(sa) == 2:
        y = _dot_general(a, b, (1,), (kb,), precision=precision, name=name)  # (n, batch, m)
        nb = len(sb) - 2
        return to_result(P.transpose.bind(y, permutation=(*range(1, nb + 1), 0, nb + 1)))
    try:
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of shapes {sa} and {sb} could not be "
                         f"broadcast together (at {user_source()})") from None
    a = broadcast_to_shape(a, batch + sa[-2:])
    b = broadcast_to_shape(b, batch + sb[-2:])
    nb = len(batch)
    return to_result(_dot_general(a, b, (nb + 1,), (nb,), range(nb), range(nb),
                                  precision=precision, name=name))


@implements(np.dot)
def dot(a, b, out=None, *, precision=None):
    """``numpy.dot``: for N-D operands, a sum over the last axis of ``a`` and the
    second-to-last of ``b`` (the last if ``b`` is 1-D); a 0-d operand multiplies.
    ``precision`` (default ``None``: the float32 matmul precision in force) as in
    :func:`matmul`.

    Example::

        >>> fnp.dot(np.ones(3, np.float32), np.ones(3, np.float32), precision="high")
        np.float32(3.0)
    """
    if out is not None:
        raise NotImplementedError("dot(..., out=...) is not supported")
    name = "dot"
    a, b = _promoted(a, b)
    if aval(a).ndim == 0 or aval(b).ndim == 0:
        return to_result(_scalar_product(a, b), scalar=True)
    ka, kb = aval(a).ndim - 1, max(aval(b).ndim - 2, 0)
    if aval(a).shape[ka] != aval(b).shape[kb]:
        raise _shape_error("dot", a, b, ka, kb)
    return to_result(_dot_general(a, b, (ka,), (kb,), precision=precision, name=name),
                     scalar=True)


@implements(np.vdot)
def vdot(a, b, /):
    """``numpy.vdot``: the dot product of the flattened operands, conjugating ``a``."""
    a, b = _promoted(a, b)
    if aval(a).size != aval(b).size:
        raise ValueError(f"vdot: operands of shapes {aval(a).shape} and {aval(b).shape} have "
                         f"different sizes {aval(a).size} != {aval(b).size} "
                         f"(at {user_source()})")
    return to_result(_dot_general(_conj(_flat(a)), _flat(b), (0,), (0,)), scalar=True)


@implements(np.inner)
def inner(a, b, /):
    """``numpy.inner``: a sum over the last axes of both operands (0-d multiplies)."""
    a, b = _promoted(a, b)
    if aval(a).ndim == 0 or aval(b).ndim == 0:
        return to_result(_scalar_product(a, b), scalar=True)
    ka, kb = aval(a).ndim - 1, aval(b).ndim - 1
    if aval(a).shape[ka] != aval(b).shape[kb]:
        raise _shape_error("inner", a, b, ka, kb)
    return to_result(_dot_general(a, b, (ka,), (kb,)), scalar=True)


@implements(np.outer)
def outer(a, b, out=None):
    """``numpy.outer``: ``out[i, j] = a.ravel()[i] * b.ravel()[j]``."""
    if out is not None:
        raise NotImplementedError("outer(..., out=...) is not supported")
    a, b = _promoted(a, b)
    return to_result(_dot_general(_flat(a), _flat(b)))


def _axis_list(axes, ndim, name):
    try:
        axes = [operator.index(axes)]
    except TypeError:
        axes = [operator.index(a) for a in axes]
    return [normalize_axis(a, ndim, name) for a in axes]


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    """``numpy.tensordot``: sum over ``axes`` (an int N: the last N of ``a`` with the first
    N of ``b``; or a pair of axis sequences). The result is ``a``'s free axes then ``b``'s."""
    a, b = _promoted(a, b)
    na, nb = aval(a).ndim, aval(b).ndim
    if isinstance(axes, int | np.integer):
        n = operator.index(axes)
        if n < 0 or n > min(na, nb):
            raise ValueError(f"tensordot: axes={n} does not fit shapes {aval(a).shape} and "
                             f"{aval(b).shape} (at {user_source()})")
        la, lb = list(range(na - n, na)), list(range(n))
    else:
        try:
            axes_a, axes_b = axes
        except (TypeError, ValueError):
            raise ValueError("tensordot: axes must be an int or a pair of axis sequences, "
                             f"got {axes!r}") from None
        la, lb = _axis_list(axes_a, na, "axes"), _axis_list(axes_b, nb, "axes")
    if len(la) != len(lb):
        raise ValueError(f"tensordot: shape-mismatch for sum: {len(la)} axes of a {la} and "
                         f"{len(lb)} axes of b {lb} (at {user_source()})")
    for i, j in zip(la, lb, strict=True):
        if aval(a).shape[i] != aval(b).shape[j]:
            raise _shape_error("tensordot", a, b, i, j, "do not match for the sum")
    return to_result(_dot_general(a, b, la, lb))      # NumPy reshapes: never a scalar


# --- diagonals and triangles ------------------------------------------------------------

def _diagonal(x, offset, axis1, axis2, name="diagonal"):
    """The ``offset`` diagonal of ``axis1``/``axis2``, appended as the last axis.

    Pure layout: move the two axes last, flatten them and take every (m + 1)-th
    element from the diagonal's first one.
    """
    shape = aval(x).shape
    nd = len(shape)
    if nd < 2:
        raise ValueError(f"{name}: requires an array of at least two dimensions, got shape "
                         f"{shape}")
    a1, a2 = normalize_axis(axis1, nd, "axis1"), normalize_axis(axis2, nd, "axis2")
    if a1 == a2:
        raise ValueError(f"{name}: axis1 and axis2 cannot be the same (both {a1})")
    offset = operator.index(offset)
    rest = [i for i in range(nd) if i not in (a1, a2)]
    perm = (*rest, a1, a2)
    if perm != tuple(range(nd)):
        x = P.transpose.bind(x, permutation=perm)
    lead = tuple(shape[i] for i in rest)
    n, m = shape[a1], shape[a2]
    r0, c0 = max(-offset, 0), max(offset, 0)
    size = max(min(n - r0, m - c0), 0)
    if size == 0:
        return constant(0, aval(x).dtype, (*lead, 0))
    # On the flattened (n * m) block the diagonal is every (m + 1)-th element: for a
    # C-contiguous block both steps are views, as NumPy's diagonal is.
    x = P.reshape.bind(x, new_sizes=(*lead, n * m))
    start = r0 * m + c0
    return P.slice.bind(x, start_indices=(0,) * len(lead) + (start,),
                        limit_indices=(*lead, start + (size - 1) * (m + 1) + 1),
                        strides=(1,) * len(lead) + (m + 1,))


@implements(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    """``numpy.diagonal``: the ``offset`` diagonal of the 2-D slices along ``axis1`` and
    ``axis2``, as the last axis of the result.

    Inside a traced function the result aliases ``a`` when the two axes are its last two
    and ``a`` is C-contiguous (writes to ``a`` are seen through it, as in NumPy); as in
    NumPy it is read-only: a write into it (or a view of it) raises ValueError."""
    return mark_read_only(to_result(_diagonal(array_operand(a), offset, axis1, axis2)),
                          "numpy.diagonal")


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """``numpy.trace``: the sum along a diagonal; dtypes as ``sum`` (int8 gives int64)."""
    if out is not None:
        raise NotImplementedError("trace(..., out=...) is not supported")
    return _sum(_diagonal(array_operand(a), offset, axis1, axis2, "trace"), axis=-1, dtype=dtype)


@implements(np.diag)
def diag(v, k=0):
    """``numpy.diag``: a 1-D ``v`` becomes a square matrix with ``v`` on diagonal ``k``;
    a 2-D ``v`` gives its ``k``-th diagonal."""
    x = array_operand(v)
    k = operator.index(k)
    nd = aval(x).ndim
    if nd == 2:
        return to_result(_diagonal(x, k, 0, 1, "diag"))
    if nd != 1:
        raise ValueError(f"diag: input must be 1- or 2-d, got shape {aval(x).shape}")
    n = aval(x).shape[0]
    size = n + abs(k)
    if n == 0:
        return to_result(constant(0, aval(x).dtype, (size, size)))
    # Interior padding puts the entries size + 1 apart in the flattened matrix.
    lo = k if k >= 0 else -k * size
    hi = size * size - lo - n - (n - 1) * size
    flat = P.pad.bind(x, constant(0, aval(x).dtype), padding_config=((lo, hi, size),))
    return to_result(P.reshape.bind(flat, new_sizes=(size, size)))


def _triangle(name, m, k, compare):
    x = array_operand(m)
    shape = aval(x).shape
    if not shape:
        raise ValueError(f"{name}: input must be at least 1-d, got a 0-d array")
    n, mm = shape[-2:] if len(shape) >= 2 else (shape[0], shape[0])
    out_shape = shape if len(shape) >= 2 else (n, mm)
    mask = _tri_mask(n, mm, operator.index(k), compare)
    nd = len(out_shape)
    mask = P.broadcast_in_dim.bind(mask, shape=out_shape, broadcast_dimensions=(nd - 2, nd - 1))
    x = broadcast_to_shape(x, out_shape)
    return to_result(P.select.bind(mask, x, constant(0, aval(x).dtype)))


@implements(np.tril)
def tril(m, k=0):
    """``numpy.tril``: zero the entries above diagonal ``k`` of the last two axes
    (a 1-D input is a row broadcast to a square)."""
    return _triangle("tril", m, k, P.le)


@implements(np.triu)
def triu(m, k=0):
    """``numpy.triu``: zero the entries below diagonal ``k``; see :func:`tril`."""
    return _triangle("triu", m, k, P.ge)


# --- einsum ------------------------------------------------------------------------------

_LETTERS = string.ascii_letters
_SUBLIST_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _parse_term(term, where):
    """Labels of one subscript term: letters as their char, '...' as None."""
    labels, i = [], 0
    while i < len(term):
        if term.startswith("...", i):
            if None in labels:
                raise ValueError(f"einsum: more than one ellipsis in {where} {term!r}")
            labels.append(None)
            i += 3
        elif term[i] in _LETTERS:
            labels.append(term[i])
            i += 1
        else:
            raise ValueError(f"einsum: invalid subscript {term[i]!r} in {where} {term!r}; "
                             "use letters and '...'")
    return labels


def _interleaved(args):
    """``einsum(op0, sub0, op1, sub1, ..., [out])`` as a subscripts string and operands.

    Integer labels 0-25 are 'A'-'Z' and 26-51 are 'a'-'z', as in NumPy.
    """
    def term(sub):
        return "".join("..." if s is Ellipsis else _SUBLIST_LETTERS[operator.index(s)]
                       for s in sub)
    args = list(args)
    out = term(args.pop()) if len(args) % 2 else None
    subs = ",".join(term(s) for s in args[1::2])
    return subs + ("" if out is None else "->" + out), args[0::2]


@implements(np.einsum)
def einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe",
           optimize=False, precision=None):
    """``numpy.einsum``: Einstein summation, explicit (``'ij,jk->ik'``) or implicit
    (output = the labels used once, in alphabetical order), with ``...`` and repeated
    labels (diagonals). Operands are contracted pairwise, left to right, each pair by
    one ``dot_general``; ``optimize`` is accepted and ignored. ``precision`` (default
    ``None``: the float32 matmul precision in force) as in :func:`matmul`.

    Example::

        >>> fnp.einsum("ij,j->i", np.ones((2, 3), np.float32), np.ones(3, np.float32),
        ...            precision="bfloat16")
        array([3., 3.], dtype=float32)
    """
    matmul_precision.canonical("einsum", precision)     # a bad value fails before the work
    if out is not None:
        raise NotImplementedError("einsum(..., out=...) is not supported")
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved((subscripts, *operands))
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        lhs, rhs = spec.split("->", 1)
        if "->" in rhs:
            raise ValueError(f"einsum: subscripts {subscripts!r} have more than one '->'")
    else:
        lhs, rhs = spec, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: {len(terms)} operand subscripts in {subscripts!r} but "
                         f"{len(operands)} operands")
    xs = _promoted(*operands) if operands else []
    if dtype is not None:
        dt = dtypes.canonical(dtype)
        for x in xs:
            if not np.can_cast(aval(x).dtype, dt, casting=casting):
                raise TypeError(f"einsum: cannot cast {aval(x).dtype} to {dt} with casting="
                                f"{casting!r}")
        xs = [cast(x, dt) for x in xs]

    # Expand ellipses into ranked labels (0, 1, ...) counted from the right, so they broadcast.
    ops = []
    n_ell = 0
    for k, (term, x) in enumerate(zip(terms, xs, strict=True)):
        labels = _parse_term(term, f"operand {k}")
        nd = aval(x).ndim
        named = len(labels) - (None in labels)
        if named > nd or (None not in labels and named != nd):
            raise ValueError(f"einsum: operand {k} has {nd} dimensions but subscripts "
                             f"{term!r} name {named} (at {user_source()})")
        if None in labels:
            e = nd - named
            n_ell = max(n_ell, e)
            i = labels.index(None)
            labels[i:i + 1] = [e - 1 - j for j in range(e)]
        ops.append((x, labels))
    ell = list(range(n_ell - 1, -1, -1))

    counts: dict = {}
    for _, labels in ops:
        for lab in labels:
            counts[lab] = counts.get(lab, 0) + 1
    if rhs is None:
        out_labels = ell + sorted(lab for lab, c in counts.items()
                                  if isinstance(lab, str) and c == 1)
    else:
        out_labels = _parse_term(rhs, "the output")
        if None in out_labels:
            i = out_labels.index(None)
            out_labels[i:i + 1] = ell
        elif n_ell:
            raise ValueError("einsum: output has more dimensions than subscripts given in "
                             "einstein sum, but no '...' ellipsis provided to broadcast the "
                             f"extra dimensions ({subscripts!r})")
        for lab in out_labels:
            if out_labels.count(lab) > 1:
                raise ValueError(f"einsum: output subscript {lab!r} appears more than once")
            if lab not in counts:
                raise ValueError(f"einsum: output subscript {lab!r} does not appear in the "
                                 "inputs")

    sizes = _label_sizes(ops, subscripts)
    ops = [_take_diagonals(x, labels) for x, labels in ops]
    ops = [(_broadcast_labels(x, labels, sizes), labels) for x, labels in ops]

    x, labels = ops[0]
    for i in range(1, len(ops)):
        later = set(out_labels).union(*(set(lab) for _, lab in ops[i + 1:]))
        y, ylabels = ops[i]
        x, labels = _sum_unused(x, labels, later | set(ylabels))
        y, ylabels = _sum_unused(y, ylabels, later | set(labels))
        batch = [lab for lab in labels if lab in ylabels and lab in later]
        contract = [lab for lab in labels if lab in ylabels and lab not in later]
        x = _dot_general(x, y, [labels.index(c) for c in contract],
                         [ylabels.index(c) for c in contract],
                         [labels.index(b) for b in batch], [ylabels.index(b) for b in batch],
                         precision=precision, name="einsum")
        labels = batch + [lab for lab in labels if lab not in ylabels] + \
            [lab for lab in ylabels if lab not in labels]
    x, labels = _sum_unused(x, labels, set(out_labels))
    perm = tuple(labels.index(lab) for lab in out_labels)
    if perm != tuple(range(len(perm))):
        x = P.transpose.bind(x, permutation=perm)
    return to_result(x, scalar=True)


def _label_sizes(ops, subscripts):
    """The size of every label; a size-1 dimension broadcasts, as in NumPy."""
    sizes: dict = {}
    for x, labels in ops:
        for lab, d in zip(labels, aval(x).shape, strict=True):
            old = sizes.get(lab)
            if old is None or old == 1:
                sizes[lab] = d
            elif d not in (1, old):
                name = lab if isinstance(lab, str) else "..."
                raise ValueError(f"einsum: operands could not be broadcast together: label "
                                 f"{name!r} has sizes {old} and {d} in {subscripts!r} "
                                 f"(at {user_source()})")
    return sizes


def _take_diagonals(x, labels):
    """Resolve a label repeated within one operand by taking that diagonal."""
    labels = list(labels)
    while True:
        dup = next((lab for i, lab in enumerate(labels) if lab in labels[:i]), None)
        if dup is None:
            return x, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        if aval(x).shape[i] != aval(x).shape[j]:
            raise ValueError(f"einsum: repeated subscript {dup!r} has sizes "
                             f"{aval(x).shape[i]} and {aval(x).shape[j]} in one operand")
        x = _diagonal(x, 0, i, j, "einsum")
        labels = [lab for k, lab in enumerate(labels) if k not in (i, j)] + [dup]


def _broadcast_labels(x, labels, sizes):
    shape = tuple(sizes[lab] for lab in labels)
    return broadcast_to_shape(x, shape) if shape != aval(x).shape else x


def _sum_unused(x, labels, needed):
    axes = tuple(i for i, lab in enumerate(labels) if lab not in needed)
    if not axes:
        return x, labels
    return P.reduce_sum.bind(x, axes=axes), [lab for lab in labels if lab in needed]

