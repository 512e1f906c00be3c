"""The reference interpreter's primitive implementations (``IMPLS``) and ``run_graph``.

This module is the executable specification of the catalogue. Importing it
registers the implementations as the host's eager dispatch (``ir/eager.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from functorch_core.backends.openblas import eager_product
from functorch_core.ir import dtypes, eager
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Graph, Lit, Primitive
from functorch_core.ir.indexing import check_index, to_numpy_index
from functorch_core.ir.numerics import reduced_precision
from functorch_core.ir.passes.precision import BF16_BITS, reduced_product
from functorch_core.ir.tables import Table

from .betainc_grad import betainc_grad
from .collectives import COLLECTIVE_IMPLS
from .igamma_grad import igamma_grad_a
from .linalg import LINALG_IMPLS

IMPLS: Table[Primitive, Callable] = Table("interpreter")  # + LINALG_IMPLS, COLLECTIVE_IMPLS


def _quiet(fn):
    def run(*args, **params):
        with np.errstate(all="ignore"):
            return fn(*args, **params)
    run.__name__ = getattr(fn, "__name__", "impl")
    return run


def _special(fn):
    """A SciPy function with the dtype of its operands (jv: a real v, a complex z)."""
    def impl(*xs, **params):
        dt = np.result_type(*(np.asarray(x).dtype for x in xs))
        with np.errstate(all="ignore"):
            out = fn(*(() if "order" not in params else (params["order"],)), *xs)
        return np.asarray(out, dtype=dt)
    return impl


def _lazy(spec):
    """The reference of ``spec``, resolved on first call (scipy.special costs ~165 ms)."""
    def run(*args, **params):
        return spec.reference(*args, **params)
    run.__name__ = spec.numpy.rpartition(".")[2]
    return run


def _from_spec(prim):
    spec = prim.spec
    if prim in P.SPECIAL:
        return _special(_lazy(spec))
    return _quiet(_lazy(spec) if spec.numpy.startswith("scipy.") else spec.reference)


# the elementwise primitives run their specs' NumPy / SciPy functions (select: below)
for _p in P.ALL.values():
    if _p.spec.numpy is not None and _p is not P.select:
        IMPLS.register(_p, _from_spec(_p))


def _impl(prim):
    def register(fn):
        return IMPLS.register(prim, fn)
    return register


@_impl(P.complex)
def _complex(re, im):
    re, im = np.broadcast_arrays(re, im)
    out = np.empty(re.shape, np.result_type(re.dtype, np.complex64))
    out.real, out.imag = re, im
    return out if out.ndim else out[()]


@_impl(P.select)
def _select(pred, on_true, on_false):
    return np.where(pred, on_true, on_false)


@_impl(P.convert)
def _convert(x, *, new_dtype, weak_type=False):
    with np.errstate(all="ignore"):
        if np.iscomplexobj(x) and new_dtype.kind == "b":
            return np.asarray(x != 0)
        if np.iscomplexobj(x) and new_dtype.kind != "c":
            x = np.real(x)
        return np.asarray(x).astype(new_dtype)


@_impl(P.iota)
def _iota(*, dtype, shape, dimension):
    r = np.arange(shape[dimension], dtype=dtype)
    return np.broadcast_to(r.reshape([-1 if i == dimension else 1 for i in range(len(shape))]),
                           shape).copy()


@_impl(P.broadcast_in_dim)
def _broadcast_in_dim(x, *, shape, broadcast_dimensions):
    expanded = np.reshape(x, [x.shape[broadcast_dimensions.index(i)]
                              if i in broadcast_dimensions else 1 for i in range(len(shape))])
    return np.broadcast_to(expanded, shape)


@_impl(P.reshape)
def _reshape(x, *, new_sizes):
    return np.reshape(x, new_sizes)


@_impl(P.transpose)
def _transpose(x, *, permutation):
    return np.transpose(x, permutation)


@_impl(P.squeeze)
def _squeeze(x, *, dimensions):
    return np.squeeze(x, tuple(dimensions))


@_impl(P.expand_dims)
def _expand_dims(x, *, dimensions):
    return np.expand_dims(x, tuple(dimensions))


@_impl(P.rev)
def _rev(x, *, dimensions):
    return np.flip(x, tuple(dimensions)) if dimensions else x


@_impl(P.concatenate)
def _concatenate(*xs, dimension):
    return np.concatenate(xs, axis=dimension)


@_impl(P.pad)
def _pad(x, padding_value, *, padding_config):
    x = np.asarray(x)
    full = [lo + hi + d + max(d - 1, 0) * it
            for d, (lo, hi, it) in zip(x.shape, padding_config, strict=True)]
    inner = [d + max(d - 1, 0) * it for d, (_, _, it) in zip(x.shape, padding_config, strict=True)]
    body = np.full(inner, padding_value, dtype=x.dtype)
    body[tuple(slice(None, None, it + 1) for _, _, it in padding_config)] = x
    out = np.full([max(n, 0) for n in full], padding_value, dtype=x.dtype)
    src, dst = [], []
    for n, (lo, hi, _) in zip(inner, padding_config, strict=True):
        s0, d0 = max(-lo, 0), max(lo, 0)
        length = n - s0 - max(-hi, 0)
        src.append(slice(s0, s0 + max(length, 0)))
        dst.append(slice(d0, d0 + max(length, 0)))
    out[tuple(dst)] = body[tuple(src)]
    return out


@_impl(P.slice)
def _slice(x, *, start_indices, limit_indices, strides):
    return x[tuple(slice(s, e, st) for s, e, st in zip(start_indices, limit_indices, strides,
                                                         strict=True))]


def _clamped_starts(x_shape, sizes, idx):
    return [int(np.clip(int(i), 0, d - s)) for i, d, s in zip(idx, x_shape, sizes, strict=True)]


@_impl(P.dynamic_slice)
def _dynamic_slice(x, *idx, slice_sizes):
    starts = _clamped_starts(x.shape, slice_sizes, idx)
    return x[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes, strict=True))]


@_impl(P.dynamic_update_slice)
def _dynamic_update_slice(x, update, *idx):
    starts = _clamped_starts(x.shape, update.shape, idx)
    out = np.array(x, copy=True)
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape, strict=True))] = update
    return out


def _gather_index(x_shape, indices, axes):
    """A NumPy advanced index equivalent to gather's indices (clamped into range)."""
    nb = indices.ndim - 1
    index = []
    for ax, d in enumerate(x_shape):
        if ax in axes:
            col = np.clip(indices[..., axes.index(ax)], 0, d - 1)
            index.append(col.reshape(col.shape + (1,) * (len(x_shape) - len(axes))))
        else:
            r = len(x_shape) - len(axes)
            pos = [a for a in range(len(x_shape)) if a not in axes].index(ax)
            shape = [1] * nb + [1] * r
            shape[nb + pos] = d
            index.append(np.arange(d).reshape(shape))
    return tuple(index)


def _indexed_view(x, indices, axes):
    """(x, NumPy index) with at least one indexed axis: with none, a unit axis is indexed by 0,
    so that the index arrays still carry the batch dimensions of ``indices``."""
    x, indices = np.asarray(x), np.asarray(indices)
    if not axes:
        x = x[None]
        indices = np.zeros(indices.shape[:-1] + (1,), indices.dtype)
        axes = (0,)
    return x, _gather_index(x.shape, indices, tuple(axes))


@_impl(P.gather)
def _gather(x, indices, *, axes):
    x, index = _indexed_view(x, indices, axes)
    return x[index]


@_impl(P.check_index)
def _check_index(a, *, size, axis, where):
    return check_index(a, size, axis, where)


def _scatter_with(write):
    def run(x, indices, updates, *, axes):
        out = np.array(x, copy=True)
        target, index = _indexed_view(out, indices, axes)   # target is a view of out
        write(target, index, updates)
        return out
    return run


def _overwrite(target, index, updates):
    target[index] = updates


IMPLS.register(P.scatter_add, _scatter_with(np.add.at))
IMPLS.register(P.scatter, _scatter_with(_overwrite))


def _wide(x):
    """bfloat16 computed in float32 (NumPy's own float16 loops already are)."""
    dt = x.dtype
    return x.astype(np.float32) if dt.kind == "V" and dt == dtypes.bfloat16 else x


def _reduction(fn):
    def run(x, *, axes):
        with np.errstate(all="ignore"):
            return np.asarray(fn(_wide(x), axis=tuple(axes))).astype(x.dtype, copy=False)
    return run


IMPLS.register(P.reduce_sum, _reduction(np.sum))
IMPLS.register(P.reduce_prod, _reduction(np.prod))
IMPLS.register(P.reduce_max, _reduction(np.max))
IMPLS.register(P.reduce_min, _reduction(np.min))


@_impl(P.argmax)
def _argmax(x, *, axis, index_dtype):
    return np.argmax(x, axis=axis).astype(index_dtype)


@_impl(P.argmin)
def _argmin(x, *, axis, index_dtype):
    return np.argmin(x, axis=axis).astype(index_dtype)


def _cumulative(fn):
    def run(x, *, axis, reverse):
        dt, x = x.dtype, _wide(x)
        with np.errstate(all="ignore"):
            out = np.flip(fn(np.flip(x, axis), axis=axis), axis) if reverse else \
                fn(x, axis=axis)
        return out.astype(dt, copy=False)
    return run


IMPLS.register(P.cumsum, _cumulative(lambda x, axis: np.cumsum(x, axis=axis, dtype=x.dtype)))
IMPLS.register(P.cumprod, _cumulative(lambda x, axis: np.cumprod(x, axis=axis, dtype=x.dtype)))
IMPLS.register(P.cummax, _cumulative(lambda x, axis: np.maximum.accumulate(x, axis=axis)))
IMPLS.register(P.cummin, _cumulative(lambda x, axis: np.minimum.accumulate(x, axis=axis)))


def _at_precision(impl):
    """A product's implementation that honours its ``precision`` param (absent: float32),
    by the formula every backend expands it with (``ir/passes/precision.py``)."""
    def run(lhs, rhs, *, precision=None, **params):
        if precision is None:
            return impl(lhs, rhs, **params)
        return reduced_product(lambda a, b: impl(a, b, **params),
                               lambda x: reduce_precision(x, **BF16_BITS), np.subtract,
                               np.add, lhs, rhs, precision)
    run.__name__ = impl.__name__
    return run


@_impl(P.reduce_precision)
def reduce_precision(x, *, exponent_bits, mantissa_bits):
    """XLA's ReducePrecision on the bits of ``x`` (``ir/numerics.py``'s constants)."""
    return reduce_precision_with(np, np.asarray(x), exponent_bits, mantissa_bits)


def reduce_precision_with(xp, x, exponent_bits, mantissa_bits):
    """:func:`reduce_precision` over the array module ``xp`` (NumPy, or CuPy on a device)."""
    fi = np.finfo(x.dtype)
    c = reduced_precision(fi.nexp, fi.nmant, exponent_bits, mantissa_bits)
    ut = np.dtype(f"uint{c.bits}")
    u = x.view(ut)
    k = ut.type
    if c.shift:
        lsb = (u >> k(c.shift)) & k(1)
        u = (u + (k(c.half - 1) + lsb)) & k(c.truncate)
    if c.clamp:
        field, sign = u & k(c.exponent_mask), u & k(c.sign_mask)
        u = xp.where(field > k(c.max_field), sign | k(c.exponent_mask),
                     xp.where(field <= k(c.min_field), sign, u))
    out = xp.asarray(u, ut).view(x.dtype)
    if c.keep_nan:
        out = xp.where(xp.isnan(x), x, out)
    return out.reshape(x.shape)


@_impl(P.dot_general)
@_at_precision
def _dot_general(lhs, rhs, *, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    lfree = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    lhs = np.transpose(lhs, list(lb) + lfree + list(lc))
    rhs = np.transpose(rhs, list(rb) + list(rc) + rfree)
    nb, k = len(lb), int(np.prod([lhs.shape[i] for i in range(lhs.ndim - len(lc), lhs.ndim)],
                                 dtype=np.int64))
    bshape = lhs.shape[:nb]
    lf, rf = lhs.shape[nb:lhs.ndim - len(lc)], rhs.shape[nb + len(rc):]
    m, n = int(np.prod(lf, dtype=np.int64)), int(np.prod(rf, dtype=np.int64))
    with eager_product(m * n * k):      # each batch is one gemm call of m n k
        out = np.matmul(_wide(lhs.reshape(bshape + (m, k))), _wide(rhs.reshape(bshape + (k, n))))
    return out.reshape(bshape + tuple(lf) + tuple(rf))


# --- convolution and windows ------------------------------------------------------

def _windows(x, fill, axes, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
    """A view of ``x`` (dilated and padded with ``fill`` along ``axes``) whose ``axes``
    index the window positions, followed by one new trailing axis per window dimension."""
    config = [(0, 0, 0)] * x.ndim
    for a, (lo, hi), bd in zip(axes, padding, base_dilation, strict=True):
        config[a] = (lo, hi, bd - 1)
    xp = _pad(x, np.asarray(fill, x.dtype), padding_config=config)
    spans = [1 + (w - 1) * wd for w, wd in zip(window_dimensions, window_dilation, strict=True)]
    view = np.lib.stride_tricks.sliding_window_view(xp, spans, axis=tuple(axes))
    index = [slice(None)] * x.ndim
    for a, s in zip(axes, window_strides, strict=True):
        index[a] = slice(None, None, s)
    index += [slice(None, None, wd) for wd in window_dilation]
    return view[tuple(index)]


@_impl(P.conv_general_dilated)
@_at_precision
def _conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                          dimension_numbers, feature_group_count, batch_group_count):
    lspec, rspec, ospec = dimension_numbers
    dtype = np.result_type(lhs, rhs)
    work = dtypes.compute_dtype(dtype)     # XLA's CPU f16 conv widens too
    x = np.transpose(lhs, lspec).astype(work, copy=False)
    w = np.transpose(rhs, rspec).astype(work, copy=False)
    nsp = x.ndim - 2
    win = _windows(x, 0, range(2, 2 + nsp), w.shape[2:], window_strides, padding,
                   lhs_dilation, rhs_dilation)                  # N C *out *kernel
    (n, c), (o, i), out_sp = x.shape[:2], w.shape[:2], win.shape[2:2 + nsp]
    sp, kk = "stuvwxyz"[:nsp], "ijklmpqr"[:nsp]
    g = batch_group_count if batch_group_count > 1 else feature_group_count
    w = w.reshape(g, o // g, i, *w.shape[2:])
    if batch_group_count > 1:
        win = win.reshape(g, n // g, c, *win.shape[2:])
        with eager_product(n // g * o * int(np.prod(out_sp)) * w[0, 0].size):
            out = np.einsum(f"gnc{sp}{kk},goc{kk}->ngo{sp}", win, w, optimize=True)
        out = out.reshape(n // g, o, *out_sp)
    else:
        win = win.reshape(n, g, c // g, *win.shape[2:])
        with eager_product(n * o * int(np.prod(out_sp)) * w[0, 0].size):
            out = np.einsum(f"ngc{sp}{kk},goc{kk}->ngo{sp}", win, w, optimize=True)
        out = out.reshape(n, o, *out_sp)
    return np.ascontiguousarray(np.transpose(out, np.argsort(ospec))).astype(dtype, copy=False)


def _window_reducer(reduce, fill):
    def impl(x, *, window_dimensions, **window):
        x = np.asarray(x)
        win = _windows(_wide(x), fill(x.dtype), range(x.ndim), window_dimensions, **window)
        return reduce(win, axis=tuple(range(x.ndim, win.ndim))).astype(x.dtype, copy=False)
    return impl


IMPLS.register(P.reduce_window_sum, _window_reducer(np.sum, lambda dt: 0))
IMPLS.register(P.reduce_window_max, _quiet(_window_reducer(
    np.max, lambda dt: dtypes.extreme_identity(dt, "max"))))
IMPLS.register(P.reduce_window_min, _quiet(_window_reducer(
    np.min, lambda dt: dtypes.extreme_identity(dt, "min"))))


def _selected(x, select, window_dimensions, window):
    """Per window of ``x``: the flat in-window index of its first max/min (NaN wins)."""
    win = _windows(x, dtypes.extreme_identity(x.dtype, select), range(x.ndim),
                   window_dimensions, **window)
    flat = win.reshape(win.shape[:x.ndim] + (-1,))
    return (np.argmax if select == "max" else np.argmin)(flat, axis=-1)


@_impl(P.select_and_gather_add)
def _select_and_gather_add(t, x, *, select, window_dimensions, **window):
    t, x = np.asarray(t), np.asarray(x)
    k = _selected(x, select, window_dimensions, window)
    wt = _windows(t, 0, range(t.ndim), window_dimensions, **window)
    flat = wt.reshape(wt.shape[:t.ndim] + (-1,))
    return np.take_along_axis(flat, k[..., None], axis=-1)[..., 0]


@_impl(P.select_and_scatter_add)
def _select_and_scatter_add(ct, x, *, select, window_dimensions, window_strides, padding,
                            base_dilation, window_dilation):
    ct, x = np.asarray(ct), np.asarray(x)
    window = dict(window_strides=window_strides, padding=padding, base_dilation=base_dilation,
                  window_dilation=window_dilation)
    k = _selected(x, select, window_dimensions, window)
    sizes = [1 + (d - 1) * bd + lo + hi for d, bd, (lo, hi) in
             zip(x.shape, base_dilation, padding, strict=True)]
    acc = np.zeros(sizes, ct.dtype)
    zero = np.zeros((), ct.dtype)
    for t, tap in enumerate(np.ndindex(*window_dimensions)):
        # the positions this tap covers, one per window: distinct, so a strided add
        at = tuple(slice(j * wd, j * wd + (o - 1) * s + 1, s) for j, wd, o, s in
                   zip(tap, window_dilation, ct.shape, window_strides, strict=True))
        acc[at] += np.where(k == t, ct, zero)
    return acc[tuple(slice(lo, lo + 1 + (d - 1) * bd, bd) for d, bd, (lo, _) in
                     zip(x.shape, base_dilation, padding, strict=True))]


@_impl(P.sort)
def _sort(*operands, dimension, num_keys):
    keys = [np.moveaxis(o, dimension, -1) for o in operands[:num_keys]]
    # np.lexsort sorts by the last key first; it is stable and puts NaN last.
    order = np.lexsort(keys[::-1], axis=-1) if num_keys > 1 else \
        np.argsort(keys[0], axis=-1, kind="stable")
    return [np.moveaxis(np.take_along_axis(np.moveaxis(o, dimension, -1), order, -1), -1,
                        dimension) for o in operands]






@_impl(P.igamma_grad_a)
def _igamma_grad_a(a, x):
    return igamma_grad_a(a, x)


@_impl(P.igamma_hess_a)
def _igamma_hess_a(a, x):
    return igamma_grad_a(a, x, order=2)


@_impl(P.betainc_grad)
def _betainc_grad(a, b, x, *, wrt):
    return betainc_grad(a, b, x, wrt)

_FFT_SCIPY = {"fft": "fftn", "ifft": "ifftn", "rfft": "rfftn", "irfft": "irfftn"}


@_impl(P.fft)
def _fft(x, *, fft_type, fft_lengths):
    import scipy.fft  # pocketfft: NumPy's own algorithm, with n-d transforms in one call
    k = len(fft_lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    # independent 1-d transforms over threads: the same bits for any worker count
    workers = -1 if x.size >= 1 << 16 and x.size > x.shape[-1] else 1
    out = getattr(scipy.fft, _FFT_SCIPY[fft_type])(x, s=tuple(fft_lengths), axes=axes,
                                                   workers=workers)
    want = P.complex_of(x.dtype) if fft_type == "rfft" else \
        np.finfo(x.dtype).dtype if fft_type == "irfft" else x.dtype
    return np.asarray(out, dtype=want)

_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32, 20 rounds (Salmon et al., SC'11; Random123's threefry2x32_R(20))."""
    u32 = np.uint32
    k0, k1, x0, x1 = np.broadcast_arrays(*(np.asarray(a, u32) for a in (k0, k1, x0, x1)))
    ks = (k0, k1, k0 ^ k1 ^ u32(0x1BD11BDA))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for i in range(5):
        for r in _THREEFRY_ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = ((x1 << u32(r)) | (x1 >> u32(32 - r))) ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + u32(i + 1)
    return [x0, x1]


IMPLS.register(P.threefry2x32, _quiet(_threefry2x32))


@_impl(P.setitem)
def _setitem(x, value, *index_arrays, indexer):
    x[to_numpy_index(indexer, index_arrays)] = value
    return []


@_impl(P.call)
def _call(*args, graph, name):
    return run_graph(graph, args)


@_impl(P.custom_jvp_call)
@_impl(P.custom_vjp_call)
def _custom_call(*args, graph, name, **rules):
    return run_graph(graph, args)


@_impl(P.custom_lin)
def _custom_lin(*args, n_res, bwd, out_avals):
    raise TypeError(f"cannot run forward-mode differentiation (jvp, linearize, jacfwd, "
                    f"hessian) through {bwd}: it defines only a reverse-mode rule "
                    "(custom_vjp); use vjp, grad or jacrev, or define a custom_jvp")


@_impl(P.cond)
def _cond(index, *operands, branches):
    return run_graph(branches[min(max(int(index), 0), len(branches) - 1)], operands)


@_impl(P.while_loop)
def _while(*args, cond_graph, body_graph, n_cond_consts, n_body_consts, max_steps):
    cc = list(args[:n_cond_consts])
    bc = list(args[n_cond_consts:n_cond_consts + n_body_consts])
    carry = list(args[n_cond_consts + n_body_consts:])
    steps = 0
    while (max_steps is None or steps < max_steps) and bool(run_graph(cond_graph, cc + carry)[0]):
        carry = run_graph(body_graph, bc + carry)
        steps += 1
    return carry


@_impl(P.scan)
def _scan(*args, body, n_consts, n_carry, length, reverse, checkpoint):
    consts, carry = list(args[:n_consts]), list(args[n_consts:n_consts + n_carry])
    xs = [np.asarray(x) for x in args[n_consts + n_carry:]]
    ys = [np.empty((length,) + av.shape, av.dtype) for av in body.out_avals[n_carry:]]
    for i in (reversed(range(length)) if reverse else range(length)):
        outs = run_graph(body, consts + carry + [x[i] for x in xs])
        carry = outs[:n_carry]
        for y, o in zip(ys, outs[n_carry:], strict=True):
            y[i] = o
    return carry + ys


def run_graph(graph: Graph, args):
    """Run a graph on concrete arrays, one NumPy call per equation."""
    env = {id(v): a for v, a in zip(graph.inputs, args, strict=True)}

    def read(atom):
        return atom.value if isinstance(atom, Lit) else env[id(atom)]

    for eqn in graph.eqns:
        outs = (_get(eqn.prim) or IMPLS[eqn.prim])(*map(read, eqn.inputs), **eqn.params)
        if not eqn.prim.multiple_results:
            outs = [outs]
        for v, o in zip(eqn.outputs, outs, strict=True):
            env[id(v)] = o if isinstance(o, np.ndarray) and o.dtype == v.aval.dtype \
                else np.asarray(o, dtype=v.aval.dtype)
    return [read(o) for o in graph.outputs]


IMPLS.include(LINALG_IMPLS, COLLECTIVE_IMPLS)
_get = IMPLS.get
eager.register_host(IMPLS)
MISSING = sorted(p.name for p in P.ALL.values() if p not in IMPLS)
