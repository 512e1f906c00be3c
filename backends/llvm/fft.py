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

Transforms over several axes go axis by axis, every pass after the first in place. Along a
leading axis of a power-of-two length the transforms are native too (``_emit_columns``):
Stockham's radix-4 algorithm with whole strips of rows as the vectors, each strip in
scratch that stays in cache; pocketfft (built for baseline x86-64) runs them about a
quarter slower. The four-step method's column pass is such a pass.

The results depend on the shape alone, never on the thread count: the same bits under any
``FUNCTORCH_CORE_NUM_THREADS``. Where a native pass runs they are pocketfft's values to
rounding, not to the bit; elsewhere pocketfft's bits.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import math
import threading

import numpy as np
from llvmlite import ir

from . import engine, irloop, threads
from .steps import fetch

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


def _unit_roots(k, n, dtype=np.complex128):
    """``exp(-2 pi i k / n)`` for the integers ``k``, computed in long double and rounded
    once to ``dtype``."""
    angle = 8 * np.arctan(np.longdouble(1)) / n * k.astype(np.longdouble)
    return (np.cos(angle) - 1j * np.sin(angle)).astype(dtype)


@functools.lru_cache(maxsize=16)
def twiddle_tables(n: int):
    """``(hi, lo, shift)``: ``exp(-2 pi i r / n) = hi[r >> shift] * lo[r & (2^shift - 1)]``
    for ``0 <= r < n``, two tables of about ``sqrt(n)`` complex128 values each."""
    shift = max(1, (n.bit_length() + 1) // 2)
    return (_unit_roots(np.arange(-(-n >> shift)) << shift, n),
            _unit_roots(np.arange(1 << shift), n), shift)


# ------------------------------------------------------------------ native kernels

class _Emitter:
    """One function's builder with counted loops and complex loads, stores and products
    (computed in double)."""

    def __init__(self, module, name, ft, n_ptrs, n_ints, n_doubles=0):
        fn = ir.Function(module, ir.FunctionType(
            ir.VoidType(), [PTR] * n_ptrs + [I64] * n_ints + [F64] * n_doubles), name)
        self.ft, self.args = ft, fn.args
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))

    def const(self, v):
        return ir.Constant(I64, v)

    def loop(self, lo, hi, body, step=1):
        """``for i in range(lo, hi, step): body(i)`` (``lo``, ``hi``: i64 values)."""
        head, i, done = irloop.open_loop(self.b, lo, hi, ("head", "work", "done"))
        body(i)
        irloop.close_loop(self.b, head, i, done, self.const(step))

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


STRIP_BYTES = 256     # a strip of columns: these bytes of each row (benchmarks/fft_four_step.py)
# transforms along a leading axis run natively (_emit_columns) from this many elements on
COLUMNS_MIN = 1 << 16


def _emit_columns(module, ft):
    """Stockham transforms (radix 4, a last radix-2 level for an odd ``levels``; unscaled;
    conjugate twiddles when ``inverse``) down the columns of a ``(rows, cols)`` complex
    matrix, ``rows = 2^levels``, in place: strips ``s0 <= s < s1`` of STRIP_BYTES of each
    row, one at a time, copied into scratch ``sa`` (each row's real parts, then its
    imaginary parts), transformed level by level between ``sa`` and ``sb`` by butterflies
    that combine whole strip rows (vector loops), and copied back times ``scale``.
    ``table[k] = exp(-2 pi i k / rows)`` for ``k < rows``."""
    e = _Emitter(module, "fc_fft_columns", ft, 4, 6, n_doubles=1)
    for arg in e.args[:4]:
        arg.add_attribute("noalias")
    b = e.b
    data, sa, sb, table, rows, cols, levels, inverse, s0, s1, scale = e.args
    width = STRIP_BYTES // (8 if ft is F64 else 4) // 2
    zero, one, two = e.const(0), e.const(1), e.const(2)
    lanes, row_len = e.const(width), e.const(2 * width)
    flip = b.icmp_signed("!=", inverse, zero)
    factor = scale if ft is F64 else b.fptrunc(scale, ft)
    fours = b.lshr(levels, one)

    def at(base, index):
        return b.gep(base, [index], source_etype=ft)

    def get(base, row, c):      # a scratch row: real parts, then imaginary parts
        line = at(base, b.mul(row, row_len))
        return [b.load(at(line, c), typ=ft), b.load(at(line, b.add(c, lanes)), typ=ft)]

    def put(base, row, c, value):
        line = at(base, b.mul(row, row_len))
        b.store(value[0], at(line, c))
        b.store(value[1], at(line, b.add(c, lanes)))

    def add(u, v):
        return [b.fadd(u[0], v[0]), b.fadd(u[1], v[1])]

    def sub(u, v):
        return [b.fsub(u[0], v[0]), b.fsub(u[1], v[1])]

    def mul(u, w):      # contracted into fused multiply-adds where the target has them
        f = ("contract",)
        return [b.fsub(b.fmul(u[0], w[0], flags=f), b.fmul(u[1], w[1], flags=f), flags=f),
                b.fadd(b.fmul(u[0], w[1], flags=f), b.fmul(u[1], w[0], flags=f), flags=f)]

    def root(k):
        w = e.load(table, k, ft)
        w = [v if ft is F64 else b.fptrunc(v, ft) for v in w]
        return [w[0], b.select(flip, b.fneg(w[1]), w[1])]

    def across(body):
        e.loop(zero, lanes, body)

    def radix4(i, x, y):
        """Level ``i``: ``n = rows / 4^i`` points in ``s = 4^i`` interleaved sequences."""
        s = b.shl(one, b.shl(i, one))
        quarter = b.lshr(rows, b.add(b.shl(i, one), two))       # n / 4

        def butterflies(p):
            step = b.mul(p, s)                                   # p * rows / n
            w1, w2, w3 = root(step), root(b.shl(step, one)), root(b.mul(step, e.const(3)))
            rows_in = [b.add(p, b.mul(quarter, e.const(j))) for j in range(4)]

            def sequence(q):
                src = [b.add(q, b.mul(s, r)) for r in rows_in]
                dst = [b.add(q, b.mul(s, b.add(b.shl(p, two), e.const(j)))) for j in range(4)]

                def lane(c):
                    va, vb, vc, vd = (get(x, r, c) for r in src)
                    apc, amc, bpd, bmd = add(va, vc), sub(va, vc), add(vb, vd), sub(vb, vd)
                    jbmd = [b.fneg(bmd[1]), bmd[0]]                 # i (b - d)
                    jbmd = [b.select(flip, b.fneg(v), v) for v in jbmd]
                    put(y, dst[0], c, add(apc, bpd))
                    put(y, dst[1], c, mul(sub(amc, jbmd), w1))
                    put(y, dst[2], c, mul(sub(apc, bpd), w2))
                    put(y, dst[3], c, mul(add(amc, jbmd), w3))
                across(lane)
            e.loop(zero, s, sequence)
        e.loop(zero, quarter, butterflies)

    def radix2(x, y):
        """The last level of an odd ``levels``: pairs ``rows / 2`` apart, no twiddles."""
        half = b.lshr(rows, one)

        def pair(q):
            def lane(c):
                va, vb = get(x, q, c), get(x, b.add(q, half), c)
                put(y, q, c, add(va, vb))
                put(y, b.add(q, half), c, sub(va, vb))
            across(lane)
        e.loop(zero, half, pair)

    def two_levels(i):      # sa -> sb, then sb -> sa unless i + 1 is past the radix-4 levels
        radix4(i, sa, sb)
        i1 = b.add(i, one)
        with b.if_then(b.icmp_signed("<", i1, fours)):
            radix4(i1, sb, sa)

    def one_strip(k):
        first = b.mul(k, lanes)

        def element(r, c, part):
            line = at(data, b.shl(b.add(b.mul(r, cols), first), one))
            return at(line, b.add(b.shl(c, one), e.const(part)))

        def copy_out(result):
            def lane(r, c):
                v = get(result, r, c)
                for part in (0, 1):
                    b.store(b.fmul(v[part], factor), element(r, c, part))
            e.loop(zero, rows, lambda r: across(lambda c: lane(r, c)))

        e.loop(zero, rows, lambda r: across(lambda c: put(
            sa, r, c, [b.load(element(r, c, part), typ=ft) for part in (0, 1)])))
        e.loop(zero, fours, two_levels, 2)
        in_sb = b.icmp_signed("!=", b.and_(fours, one), zero)    # after the radix-4 levels
        odd = b.icmp_signed("!=", b.and_(levels, one), zero)
        with b.if_else(in_sb) as branches:
            for branch, (src, dst) in zip(branches, ((sb, sa), (sa, sb)), strict=True):
                with branch, b.if_else(odd) as (last, done):
                    with last:
                        radix2(src, dst)
                        copy_out(dst)
                    with done:
                        copy_out(src)

    e.loop(s0, s1, one_strip)
    b.ret_void()


_P, _I, _D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
# (symbol, emitter, ctypes argument types)
_EMITTERS = (("fc_fft_twiddle", _emit_twiddle, [_P] * 3 + [_I] * 6),
             ("fc_fft_rfft_post", _emit_rfft_post, [_P] * 3 + [_I] * 4),
             ("fc_fft_irfft_pre", _emit_irfft_pre, [_P] * 4 + [_I] * 4),
             ("fc_fft_transpose", _emit_transpose, [_P] * 2 + [_I] * 4),
             ("fc_fft_columns", _emit_columns, [_P] * 4 + [_I] * 6 + [_D]))


def kernels(real: np.dtype) -> dict:
    """The kernels for complex numbers of ``real`` parts, as ctypes functions (compiled
    on first use; the disk cache keeps their object code)."""
    real = np.dtype(real)
    with _lock:
        if real not in _kernels:
            module = ir.Module(name=f"fc_fft_{real.char}")
            for _, emit, _ in _EMITTERS:
                emit(module, _FT[real])
            text = str(module)
            native = engine.compile_ir(text, [n for n, *_ in _EMITTERS], "full")
            fns = {}
            for name, _, argtypes in _EMITTERS:
                proto = ctypes.CFUNCTYPE(None, *argtypes)
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
    units = -(-count // align)
    parts = max(1, min(workers, units)) if points >= THREADS_MIN else 1
    cuts = [min(count, units * i // parts * align) for i in range(parts + 1)]
    futures = [threads.pool().submit(fn, *args, lo, hi) for lo, hi in itertools.pairwise(cuts[1:])]
    fn(*args, cuts[0], cuts[1])
    for f in futures:
        f.result()


# ------------------------------------------------------------------ the transforms

def _pocketfft_workers(x, axis, workers):
    """pocketfft's threads for the transforms along ``axis`` of ``x``: ``workers`` for a
    batch of at least THREADS_MIN points, else one."""
    return workers if x.size >= THREADS_MIN and x.size > x.shape[axis] else 1


def _pass(x, axis, inverse, workers, overwrite, scaled=True):
    """pocketfft's transform of one axis; ``scaled=False``: an inverse without its 1/n."""
    import scipy.fft
    return (scipy.fft.ifft if inverse else scipy.fft.fft)(
        x, axis=axis, workers=_pocketfft_workers(x, axis, workers), overwrite_x=overwrite,
        norm="forward" if inverse and not scaled else "backward")


def _scale(y, count):
    """``y *= 1 / count`` on the real parts and imaginary parts, with pocketfft's factor
    (the long double quotient rounded once), as pocketfft scales an n-d inverse."""
    real = y.view(FLOATS.get(y.dtype, y.dtype))
    real *= real.dtype.type(np.longdouble(1) / count)
    return y


@functools.lru_cache(maxsize=16)
def _roots(rows: int, dtype):
    """``exp(-2 pi i k / rows)`` for ``k < rows``, as ``dtype`` (the column kernel's table)."""
    return _unit_roots(np.arange(rows), rows, dtype)


def native_columns(x, axis) -> bool:
    """Whether the transforms along ``axis`` of ``x`` (C order) run natively in place
    (``_emit_columns``): a power-of-two length of at least 16, the elements after it a
    whole number of strips, at least COLUMNS_MIN elements."""
    rows = x.shape[axis]
    inner = math.prod(x.shape[axis + 1:]) if axis >= 0 else 0
    return x.dtype in FLOATS and x.flags.c_contiguous and x.size >= COLUMNS_MIN and \
        rows >= 16 and rows & (rows - 1) == 0 and inner > 0 and \
        inner % (STRIP_BYTES // x.dtype.itemsize) == 0


def _columns(x, axis, inverse, workers, scale):
    """The transforms along ``axis`` of ``x`` in place, natively (:func:`native_columns`),
    times ``scale``: each ``(rows, inner)`` matrix's strips split over threads."""
    rows = x.shape[axis]
    mats = x.reshape(-1, rows, math.prod(x.shape[axis + 1:]))
    width = STRIP_BYTES // x.dtype.itemsize
    per_mat = mats.shape[2] // width
    table = _roots(rows, x.dtype)
    kernel = kernels(FLOATS[x.dtype])["columns"]

    def run(lo, hi):        # strips lo..hi, each part in scratch of its own
        scratch = np.empty((2, rows * width), x.dtype)
        while lo < hi:      # strip ranges within one matrix at a time
            mat, first = divmod(lo, per_mat)
            last = min(hi - mat * per_mat, per_mat)
            kernel(_ptr(mats[mat]), _ptr(scratch[0]), _ptr(scratch[1]), _ptr(table), rows,
                   mats.shape[2], rows.bit_length() - 1, int(inverse), first, last, scale)
            lo = mat * per_mat + last

    _split_run(run, (), mats.shape[0] * per_mat, workers, x.size)
    return x


def _lead_pass(x, axis, inverse, workers, overwrite, scaled=True):
    """The transforms along ``axis`` (not the last): natively in place where
    :func:`native_columns` allows and ``x`` may be overwritten, else pocketfft's."""
    if overwrite and native_columns(x, axis):
        return _columns(x, axis, inverse, workers, 1 / x.shape[axis] if inverse and scaled else 1)
    return _pass(x, axis, inverse, workers, overwrite, scaled)


def _in_place(x, axis, inverse, workers):
    y = _lead_pass(x, axis, inverse, workers, True)
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
        return scipy.fft.rfft(x, axis=-1, workers=_pocketfft_workers(x, -1, workers))
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
        return scipy.fft.irfft(x, n, axis=-1, workers=_pocketfft_workers(x, -1, workers),
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
            x = _lead_pass(x, axis, True, workers, j > 0, scaled=False)
        y = _c2r(x, lengths[-1], workers, out, scaled=not lead)
        if lead:
            plain = y.shape[-1] % 2 or not four_step_length(y.shape[-1] // 2, x.dtype, real=True)
            _scale(y, math.prod(lengths if plain else lengths[:-1]))
    elif fft_type == "rfft":
        y = _r2c(x, workers, out)
        for axis in lead:
            y = _lead_pass(y, axis, False, workers, True)
    else:
        inverse = fft_type == "ifft"
        if lead and not four_step_length(x.shape[-1], x.dtype) and \
                not any(native_columns(x, axis) for axis in lead):
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
                y = _lead_pass(y, axis, inverse, workers, True)
    if out is not None and y is not out:
        np.copyto(out, y)
        return out
    return y


def fft_step(step, arena: set):
    """The runtime's step for an ``fft`` equation (a :class:`Fallback` of the plan): the
    result lands in the arena when it is an intermediate (the four-step method writes it
    there directly), else in a fresh array."""
    (slot,) = step.outputs
    params = step.eqn.params

    def run(bufs):
        out = bufs[slot] if slot in arena else None
        y = fft(fetch(step.inputs[0], bufs), **params, workers=threads.workers, out=out)
        if out is None:
            bufs[slot] = y
    return run


def runs(eqn) -> bool:
    """Whether :func:`fft_step` runs ``eqn`` (an fft of a supported dtype; else the
    interpreter does)."""
    return eqn.prim.name == "fft" and eqn.inputs[0].aval.dtype in SUPPORTED
