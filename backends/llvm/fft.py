"""The CPU backend's ``fft`` step: pocketfft (``scipy.fft``) for the transforms, split over
the runtime's threads, and Bailey's four-step method for long one-dimensional transforms.

pocketfft splits a batch of transforms over threads, but runs one long transform on one
thread and out of cache. A transform of length ``m = n1 * n2`` is the input transposed into
the result as an ``(n1, n2)`` matrix, ``n1`` transforms of length ``n2`` along its rows, a
twiddle ``w^(j1 k2)`` on each element and ``n2`` transforms of length ``n1`` down its
columns, all in place, which leave the result in natural order: two passes of short
transforms that fit in cache and split over threads. A real transform of even length ``n``
is the complex transform of its ``n / 2`` pairs of samples followed by one pass that
separates the transforms of the even and odd samples; the inverse runs the inverse pass
first. The transpose, the twiddles and that pass are native code (this module).
Transforms over several axes go axis by axis, every pass after the first in place.

The results depend on the shape alone, never on the thread count: the same bits under any
``FUNCTORCH_CORE_NUM_THREADS``. They are pocketfft's values to rounding, not to the bit.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import math
import threading

import numpy as np
from llvmlite import ir

# the complex points of a transform from which the four-step method runs, for complex
# transforms and for real ones (half their samples): benchmarks/fft_four_step.py
FOUR_STEP_MIN = 1 << 15
FOUR_STEP_MIN_REAL = 1 << 18
# a batch of transforms, and the four-step method's native passes, split over threads from
# this many points on
THREADS_MIN = 1 << 16
TILE = 32          # the transpose's tile (32 x 32 complex128: 16 kB)
FLOATS = {np.dtype(np.complex64): np.dtype(np.float32),
          np.dtype(np.complex128): np.dtype(np.float64)}

I64, F64, PTR = ir.IntType(64), ir.DoubleType(), ir.PointerType()
_FT = {np.dtype(np.float32): ir.FloatType(), np.dtype(np.float64): F64}
_lock = threading.Lock()
_kernels: dict = {}


def split(m: int) -> tuple[int, int] | None:
    """``(n1, n2)`` with ``n1 * n2 == m``: ``n1`` (the row length) the smallest divisor of
    ``m`` at least ``sqrt(m)``; None when the shorter side would be under 16 (a prime
    length, say: pocketfft's own algorithm for it is the better one)."""
    for n1 in range(math.isqrt(m - 1) + 1, m + 1):
        if m % n1 == 0:
            return (n1, m // n1) if m // n1 >= 16 else None
    return None


@functools.lru_cache(maxsize=16)
def twiddle_tables(n: int):
    """``(hi, lo, shift)``: ``exp(-2 pi i r / n) = hi[r >> shift] * lo[r & (2^shift - 1)]``
    for ``0 <= r < n``, two tables of about ``sqrt(n)`` complex128 values each, computed in
    long double and rounded once."""
    shift = max(1, (n.bit_length() + 1) // 2)
    turn = 8 * np.arctan(np.longdouble(1)) / n

    def roots(r):
        angle = turn * r.astype(np.longdouble)
        return (np.cos(angle) - 1j * np.sin(angle)).astype(np.complex128)

    return roots(np.arange(-(-n >> shift)) << shift), roots(np.arange(1 << shift)), shift


# ------------------------------------------------------------------ native kernels

class _Emitter:
    """One function's builder with counted loops and complex loads, stores and products
    (computed in double)."""

    def __init__(self, module, name, ft, n_ptrs, n_ints):
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR] * n_ptrs + [I64] * n_ints),
                         name)
        self.ft, self.args = ft, fn.args
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))

    def const(self, v):
        return ir.Constant(I64, v)

    def loop(self, lo, hi, body, step=1):
        """``for i in range(lo, hi, step): body(i)`` (``lo``, ``hi``: i64 values)."""
        b = self.b
        pre = b.block
        head, work, done = (b.append_basic_block(s) for s in ("head", "work", "done"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", i, hi), work, done)
        b.position_at_end(work)
        body(i)
        i.add_incoming(b.add(i, self.const(step)), b.block)
        b.branch(head)
        b.position_at_end(done)

    def at(self, base, index, part, ft=None):
        return self.b.gep(base, [self.b.add(self.b.shl(index, self.const(1)), self.const(part))],
                          source_etype=ft or self.ft)

    def load(self, base, index, ft=None):
        """The complex element ``base[index]`` as two doubles."""
        ft = ft or self.ft
        parts = [self.b.load(self.at(base, index, p, ft), typ=ft) for p in (0, 1)]
        return [v if ft is F64 else self.b.fpext(v, F64) for v in parts]

    def store(self, base, index, value):
        for p, v in enumerate(value):
            self.b.store(v if self.ft is F64 else self.b.fptrunc(v, self.ft),
                         self.at(base, index, p))

    def mul(self, x, y):
        b = self.b
        return [b.fsub(b.fmul(x[0], y[0]), b.fmul(x[1], y[1])),
                b.fadd(b.fmul(x[0], y[1]), b.fmul(x[1], y[0]))]

    def twiddle(self, r, hi, lo, shift):
        """``exp(-2 pi i r / n)`` from :func:`twiddle_tables`."""
        b = self.b
        mask = b.sub(b.shl(self.const(1), shift), self.const(1))
        return self.mul(self.load(hi, b.lshr(r, shift), F64), self.load(lo, b.and_(r, mask), F64))


def _emit_twiddle(module, ft):
    """``buf[r, c] *= w^(r c)`` for the rows ``r0 <= r < r1`` of an ``(m / cols, cols)``
    matrix (``w = exp(-2 pi i / m)``; its conjugate when ``inverse``)."""
    e = _Emitter(module, "fc_fft_twiddle", ft, 3, 6)
    buf, hi, lo, cols, m, shift, inverse, r0, r1 = e.args
    b = e.b
    flip = b.icmp_signed("!=", inverse, e.const(0))

    def row(r):
        start = b.mul(r, cols)
        pre = b.block
        head, done = b.append_basic_block("cols"), b.append_basic_block("cols.done")
        b.branch(head)
        b.position_at_end(head)
        c, power = b.phi(I64), b.phi(I64)      # power = r c mod m
        c.add_incoming(e.const(0), pre)
        power.add_incoming(e.const(0), pre)
        w = e.twiddle(power, hi, lo, shift)
        w[1] = b.select(flip, b.fneg(w[1]), w[1])
        at = b.add(start, c)
        e.store(buf, at, e.mul(e.load(buf, at), w))
        nxt = b.add(power, r)
        power.add_incoming(b.select(b.icmp_signed(">=", nxt, m), b.sub(nxt, m), nxt), b.block)
        c.add_incoming(b.add(c, e.const(1)), b.block)
        b.cbranch(b.icmp_signed("<", b.add(c, e.const(1)), cols), head, done)
        b.position_at_end(done)

    e.loop(r0, r1, row)
    b.ret_void()


def _halves(e, zk, zm):
    """``(zk + conj(zm)) / 2`` and ``(zk - conj(zm)) / 2``."""
    b, half = e.b, ir.Constant(F64, 0.5)
    return ([b.fmul(b.fadd(zk[0], zm[0]), half), b.fmul(b.fsub(zk[1], zm[1]), half)],
            [b.fmul(b.fsub(zk[0], zm[0]), half), b.fmul(b.fadd(zk[1], zm[1]), half)])


def _emit_rfft_post(module, ft):
    """In place on ``z[:m + 1]`` holding the transform ``Z`` of the ``m`` pairs of a real
    ``x`` of length ``n = 2 m``: ``X[k] = E[k] - i w^k O[k]``, where ``E`` and ``O`` are
    the transforms of the even and odd samples, ``E[k] = (Z[k] + conj(Z[m - k])) / 2``,
    ``O[k] = (Z[k] - conj(Z[m - k])) / 2i`` and ``w = exp(-2 pi i / n)``. ``X[k]`` and
    ``X[m - k]`` come from the same two values: the pairs ``k0 <= k < k1``, ``k <= m / 2``."""
    e = _Emitter(module, "fc_fft_rfft_post", ft, 3, 4)
    z, hi, lo, m, shift, k0, k1 = e.args
    b = e.b

    def pair(k):
        mk = b.sub(m, k)
        zk = e.load(z, k)
        zm = e.load(z, b.select(b.icmp_signed("==", k, e.const(0)), k, mk))
        ev, od = _halves(e, zk, zm)
        t = e.mul(e.twiddle(k, hi, lo, shift), od)
        e.store(z, k, [b.fadd(ev[0], t[1]), b.fsub(ev[1], t[0])])
        e.store(z, mk, [b.fsub(ev[0], t[1]), b.fsub(b.fneg(ev[1]), t[0])])

    e.loop(k0, k1, pair)
    b.ret_void()


def _emit_irfft_pre(module, ft):
    """The inverse of :func:`_emit_rfft_post`: from ``x[:m + 1]`` (a half spectrum; the
    imaginary parts of ``X[0]`` and ``X[m]`` ignored, as pocketfft ignores them) the
    ``z[:m]`` whose inverse transform holds the samples in pairs; pairs ``k0 <= k < k1``."""
    e = _Emitter(module, "fc_fft_irfft_pre", ft, 4, 4)
    x, z, hi, lo, m, shift, k0, k1 = e.args
    b = e.b
    zero = ir.Constant(F64, 0.0)

    def pair(k):
        mk = b.sub(m, k)
        first = b.icmp_signed("==", k, e.const(0))
        xk, xm = e.load(x, k), e.load(x, mk)
        xk[1], xm[1] = b.select(first, zero, xk[1]), b.select(first, zero, xm[1])
        ev, d = _halves(e, xk, xm)
        w = e.twiddle(k, hi, lo, shift)
        od = e.mul([b.fneg(d[1]), d[0]], [w[0], b.fneg(w[1])])      # i d conj(w)
        # Z[m - k] = conj(E) - conj(O) (k = 0: Z[m mod m], written below as Z[0])
        mirror = [b.select(first, b.fadd(ev[0], od[0]), b.fsub(ev[0], od[0])),
                  b.select(first, b.fadd(ev[1], od[1]), b.fsub(od[1], ev[1]))]
        e.store(z, b.select(first, k, mk), mirror)
        e.store(z, k, [b.fadd(ev[0], od[0]), b.fadd(ev[1], od[1])])

    e.loop(k0, k1, pair)
    b.ret_void()


def _emit_transpose(module, ft):
    """``dst[c, r] = src[r, c]`` for the rows ``r0 <= r < r1`` of a ``(rows, cols)``
    complex matrix, by tiles."""
    e = _Emitter(module, "fc_fft_transpose", ft, 2, 4)
    src, dst, rows, cols, r0, r1 = e.args
    b = e.b
    et = ir.IntType(2 * (32 if ft is not F64 else 64))
    tile = e.const(TILE)

    def lesser(x, y):
        return b.select(b.icmp_signed("<", x, y), x, y)

    def element(c, r):
        value = b.load(b.gep(src, [b.add(b.mul(r, cols), c)], source_etype=et), typ=et)
        b.store(value, b.gep(dst, [b.add(b.mul(c, rows), r)], source_etype=et))

    def block(rt, ct):
        rend, cend = lesser(b.add(rt, tile), r1), lesser(b.add(ct, tile), cols)
        e.loop(ct, cend, lambda c: e.loop(rt, rend, lambda r: element(c, r)))

    e.loop(r0, r1, lambda rt: e.loop(e.const(0), cols, lambda ct: block(rt, ct), TILE), TILE)
    b.ret_void()


# (symbol, emitter, pointer arguments, integer arguments)
_EMITTERS = (("fc_fft_twiddle", _emit_twiddle, 3, 6),
             ("fc_fft_rfft_post", _emit_rfft_post, 3, 4),
             ("fc_fft_irfft_pre", _emit_irfft_pre, 4, 4),
             ("fc_fft_transpose", _emit_transpose, 2, 4))


def kernels(real: np.dtype) -> dict:
    """The four kernels for complex numbers of ``real`` parts, as ctypes functions (compiled
    on first use; the disk cache keeps their object code)."""
    real = np.dtype(real)
    with _lock:
        if real not in _kernels:
            from llvmlite import binding as llvm  # noqa: F401  (the engine's module)

            from . import cache, runtime
            module = ir.Module(name=f"fc_fft_{real.char}")
            for _, emit, _, _ in _EMITTERS:
                emit(module, _FT[real])
            text = str(module)
            with runtime._lock:
                runtime._engine()
                digest = cache.key(text, runtime._state["target"])
                native = runtime._add_module(text, digest, [n for n, *_ in _EMITTERS], "full")
            fns = {}
            for name, _, n_ptrs, n_ints in _EMITTERS:
                proto = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * n_ptrs,
                                         *[ctypes.c_int64] * n_ints)
                fns[name[len("fc_fft_"):]] = proto(native.addresses[name])
            fns["native"] = native
            _kernels[real] = fns
        return _kernels[real]


def _ptr(a):
    return a.ctypes.data


def _split_run(fn, args, count, workers, points, align=1):
    """``fn(*args, lo, hi)`` over ``0 <= lo < hi <= count`` in ``workers`` parts (one below
    :data:`THREADS_MIN` ``points``) cut at multiples of ``align``: the first on this thread,
    the others on the runtime's pool (ctypes releases the GIL). Each element is computed the
    same way whatever the cuts."""
    from .runtime import _pool
    units = -(-count // align)
    parts = max(1, min(workers, units)) if points >= THREADS_MIN else 1
    cuts = [min(count, units * i // parts * align) for i in range(parts + 1)]
    futures = [_pool().submit(fn, *args, lo, hi) for lo, hi in itertools.pairwise(cuts[1:])]
    fn(*args, cuts[0], cuts[1])
    for f in futures:
        f.result()


# ------------------------------------------------------------------ the transforms

def _pass(x, axis, inverse, workers, overwrite, scaled=True):
    """pocketfft's transform of one axis; ``scaled=False``: an inverse without its 1/n."""
    import scipy.fft
    many = x.size >= THREADS_MIN and x.size > x.shape[axis]
    return (scipy.fft.ifft if inverse else scipy.fft.fft)(
        x, axis=axis, workers=workers if many else 1, overwrite_x=overwrite,
        norm="forward" if inverse and not scaled else "backward")


def _scale(y, count):
    """``y *= 1 / count`` on the real parts and imaginary parts, with pocketfft's factor
    (the long double quotient rounded once), as pocketfft scales an n-d inverse."""
    real = y.view(FLOATS.get(y.dtype, y.dtype))
    real *= real.dtype.type(np.longdouble(1) / count)
    return y


def _in_place(x, axis, inverse, workers):
    y = _pass(x, axis, inverse, workers, True)
    if not np.shares_memory(y, x):
        np.copyto(x, y)


def _four_step(z, out, inverse, workers):
    """The length-``m`` transform of ``z`` (complex, contiguous) into ``out`` (the same,
    not overlapping ``z``): ``z`` transposed into ``out`` as an ``(n1, n2)`` matrix, the
    transforms of its rows, the twiddles, the transforms of its columns, all in place,
    leave the result in natural order."""
    m = z.size
    n1, n2 = split(m)
    k = kernels(FLOATS[z.dtype])
    _split_run(k["transpose"], (_ptr(z), _ptr(out), n2, n1), n2, workers, m, TILE)
    mat = out.reshape(n1, n2)
    _in_place(mat, 1, inverse, workers)
    hi, lo, shift = twiddle_tables(m)
    _split_run(k["twiddle"], (_ptr(mat), _ptr(hi), _ptr(lo), n2, m, shift, int(inverse)), n1,
               workers, m)
    _in_place(mat, 0, inverse, workers)


def four_step_length(m: int, dtype, real=False) -> bool:
    """Whether a transform of ``m`` complex points (``real``: of ``2 m`` real samples) runs
    by the four-step method."""
    return m >= (FOUR_STEP_MIN_REAL if real else FOUR_STEP_MIN) and \
        np.dtype(dtype) in FLOATS and split(m) is not None


def _rows(x, out):
    """``x`` and ``out`` as lists of their last-axis rows (``x`` made contiguous)."""
    x = np.ascontiguousarray(x)
    return x.reshape(-1, x.shape[-1]), out.reshape(-1, out.shape[-1])


def _c2c(x, inverse, workers, out=None):
    """The transform of the last axis of complex ``x``."""
    if not four_step_length(x.shape[-1], x.dtype):
        return _pass(x, -1, inverse, workers, False)
    out = np.empty(x.shape, x.dtype) if out is None else out
    for src, dst in zip(*_rows(x, out)):
        _four_step(src, dst, inverse, workers)
    return out


def _r2c(x, workers, out=None):
    """rfft of the last axis of real ``x``."""
    import scipy.fft
    n = x.shape[-1]
    cplx = np.result_type(x.dtype, np.complex64)
    if n % 2 or not four_step_length(n // 2, cplx, real=True):
        many = x.size >= THREADS_MIN and x.size > n
        return scipy.fft.rfft(x, axis=-1, workers=workers if many else 1)
    m = n // 2
    out = np.empty((*x.shape[:-1], m + 1), cplx) if out is None else out
    post = kernels(x.dtype)["rfft_post"]
    hi, lo, shift = twiddle_tables(n)
    for src, dst in zip(*_rows(x, out)):
        pairs = src.view(cplx)
        _four_step(pairs if pairs.flags.aligned else pairs.copy(), dst[:m], False, workers)
        _split_run(post, (_ptr(dst), _ptr(hi), _ptr(lo), m, shift), m // 2 + 1, workers, m)
    return out


def _c2r(x, n, workers, out=None, scaled=True):
    """irfft of the last axis of complex ``x`` to ``n`` points; ``scaled=False``: without
    the 1/n where pocketfft's own algorithm runs (the four-step method always scales)."""
    import scipy.fft
    m = n // 2
    if n % 2 or not four_step_length(m, x.dtype, real=True):
        many = x.size >= THREADS_MIN and x.size > x.shape[-1]
        return scipy.fft.irfft(x, n, axis=-1, workers=workers if many else 1,
                               norm="backward" if scaled else "forward")
    out = np.empty((*x.shape[:-1], n), FLOATS[x.dtype]) if out is None else out
    pre = kernels(FLOATS[x.dtype])["irfft_pre"]
    hi, lo, shift = twiddle_tables(n)
    z = np.empty(m, x.dtype)
    for src, dst in zip(*_rows(x, out)):
        _split_run(pre, (_ptr(src), _ptr(z), _ptr(hi), _ptr(lo), m, shift), m // 2 + 1,
                   workers, m)
        _four_step(z, dst.view(x.dtype), True, workers)
    return out


SUPPORTED = frozenset({np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                                np.complex128)})


def fft(x, *, fft_type, fft_lengths, workers=1, out=None):
    """The ``fft`` primitive on ``x`` (float32/64 or complex64/128); ``out``: where the
    result may go (an array of the result's shape and dtype, C order), or None.

    Transforms over several axes take them in pocketfft's order (an rfft's last axis first,
    an irfft's last axis last, a complex transform's in order), each pass after the first in
    place, so their bits are pocketfft's unless the last axis runs by the four-step method."""
    lengths = tuple(fft_lengths)
    lead = list(range(x.ndim - len(lengths), x.ndim - 1))
    if fft_type == "irfft":
        for j, axis in enumerate(lead):
            x = _pass(x, axis, True, workers, j > 0, scaled=False)
        y = _c2r(x, lengths[-1], workers, out, scaled=not lead)
        if lead:
            plain = y.shape[-1] % 2 or not four_step_length(y.shape[-1] // 2, x.dtype, real=True)
            _scale(y, math.prod(lengths if plain else lengths[:-1]))
    elif fft_type == "rfft":
        y = _r2c(x, workers, out)
        for axis in lead:
            y = _pass(y, axis, False, workers, True)
    else:
        inverse = fft_type == "ifft"
        if lead and not four_step_length(x.shape[-1], x.dtype):
            if out is None:
                y = x.copy()
            else:
                np.copyto(out, x)
                y = out
            for j, axis in enumerate([*lead, x.ndim - 1]):
                y = _pass(y, axis, inverse, workers, True, scaled=False)
                if inverse and j == 0:
                    y = _scale(y, math.prod(lengths))
        else:
            y = _c2c(x, inverse, workers, out)
            for axis in lead:
                y = _pass(y, axis, inverse, workers, True)
    if out is not None and y is not out:
        np.copyto(out, y)
        return out
    return y


def fft_step(step, arena: set):
    """The runtime's step for an ``fft`` equation (a :class:`Fallback` of the plan): the
    result lands in the arena when it is an intermediate (the four-step method writes it
    there directly), else in a fresh array."""
    from .runtime import _fetch, get_num_threads
    (slot,) = step.outputs
    params = step.eqn.params

    def run(bufs):
        out = bufs[slot] if slot in arena else None
        y = fft(_fetch(step.inputs[0], bufs), **params, workers=get_num_threads(), out=out)
        if out is None:
            bufs[slot] = y
    return run


def runs(eqn) -> bool:
    """Whether :func:`fft_step` runs ``eqn`` (else the interpreter does)."""
    return eqn.inputs[0].aval.dtype in SUPPORTED
