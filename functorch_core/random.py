"""Splittable, counter-based random numbers with JAX's keys and functions.

A key is a ``uint32`` array of shape ``(2,)`` (JAX's raw key representation). Every
function is a pure function of its key: the same key gives the same numbers on every
host backend, thread count, under ``jit`` or not, in a ``vmap`` or a loop. Draw new keys
with :func:`split` or :func:`fold_in`; never reuse a key for two draws.

The bits come from one primitive, ``threefry2x32`` (Threefry-2x32, 20 rounds, the
generator JAX uses; Philox-4x32-10 is torch's). Threefry was chosen to give JAX's
numbers: ``key``, ``split``, ``fold_in``, ``bits``, ``uniform``, ``randint`` (32-bit),
``bernoulli``, ``exponential``, ``gumbel``, ``permutation``, ``choice`` and
``categorical`` follow JAX's constructions (``jax_threefry_partitionable=True``, JAX's
default), with 64-bit seeds as JAX under ``jax_enable_x64``: the bits and the integer
draws match JAX's; where a ``log`` enters (exponential, gumbel, categorical, choice with
``p``) the floats agree with JAX to about an ulp. ``normal`` and ``truncated_normal`` use
XLA's ``erfinv`` polynomials, so they agree with JAX to a few ulp, not bit for bit.

Same bits everywhere: every transform from bits to floats is built from correctly
rounded operations only (``+ - * /``, ``sqrt``, comparisons, ``where``; ``log`` and
``log1p`` come from ``_internal.portable_log``, not from NumPy's or the backend's own ``log``),
so a draw gives identical bits eagerly, under ``jit`` (cpu and interpreter backends),
under ``vmap`` and on every machine. (The cuda backend's compiler may fuse a multiply and
an add, which rounds once: there a float draw may differ in the last bit.)

Defaults follow NumPy, not JAX: floats are ``float64`` and integers ``int64`` unless a
``dtype`` is given (JAX gives float32/int32 with x64 off).

Eager convenience: :func:`manual_seed` seeds a global generator and :func:`next_key`
draws a fresh key from it (stateful modules such as Dropout use it). Inside ``jit``,
``grad``/``vjp``/``jvp`` the draw becomes an implicit key input fed a fresh key on every
call (the compiled graph is reused); inside ``vmap`` it follows ``randomness=``.
"""

from __future__ import annotations

import math
import operator
import threading

import numpy as np

from functorch_core.backends import registry
from functorch_core.ir import Tracer
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.trace import current_trace

from . import numpy as fnp
from ._internal import portable_log as _portable_log
from ._internal import random_scope as _random_scope
from ._internal.erfinv import erfinv

__all__ = ["PRNGKey", "bernoulli", "bits", "categorical", "choice", "dropout_mask",
           "exponential", "fold_in", "get_rng_state", "gumbel", "key", "manual_seed",
           "next_key", "normal", "permutation", "randint", "set_rng_state", "split",
           "truncated_normal", "uniform"]

_U32 = np.dtype(np.uint32)
_MASK = 0xFFFFFFFF


# --- checks ------------------------------------------------------------------------------

def _aval(x):
    return (tuple(x.aval.shape), x.aval.dtype) if isinstance(x, Tracer) else \
        (np.shape(x), np.asarray(x).dtype)


def _check_key(fn, key):
    shape, dtype = _aval(key)
    if shape != (2,) or dtype != _U32:
        hint = " (a batch of keys: vmap over it)" if shape[-1:] == (2,) and dtype == _U32 else ""
        raise TypeError(f"random.{fn}: key must be a uint32 array of shape (2,) from "
                        f"random.key, split or fold_in; got a {dtype} array of shape "
                        f"{shape}{hint}")


def _shape(fn, shape, what="shape"):
    if isinstance(shape, int | np.integer):
        shape = (shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"random.{fn}: {what} must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"random.{fn}: {what} {shape} has a negative dimension")
    return shape


def _float_dtype(fn, dtype):
    dtype = np.dtype(dtype)
    if dtype_kind(dtype) != "f":
        raise TypeError(f"random.{fn}: dtype must be a float dtype, got {dtype}")
    return dtype


def _concrete(x):
    """``x`` as a NumPy array, or None when it is traced."""
    return None if isinstance(x, Tracer) else np.asarray(x)


# --- the bits ----------------------------------------------------------------------------

def _hash(key, x0, x1):
    k0 = fnp.reshape(key[0:1], ())
    k1 = fnp.reshape(key[1:2], ())
    return P.threefry2x32.bind(k0, k1, x0, x1)


def _counters(fn, shape):
    """JAX's ``iota_2x32_shape``: the row-major index of each element as (hi, lo) words."""
    n = math.prod(shape)
    if n > _MASK:
        raise ValueError(f"random.{fn}: shape {shape} has {n} elements; at most 2**32 - 1 "
                         "are supported")
    lo = fnp.reshape(P.iota.bind(dtype=_U32, shape=(n,), dimension=0), shape)
    return np.zeros((), _U32), lo


def _bits_pair(fn, key, shape):
    return _hash(key, *_counters(fn, shape))


def _bits32(fn, key, shape):
    y0, y1 = _bits_pair(fn, key, shape)
    return P.xor.bind(y0, y1)


def _words(fn, x, what):
    """(hi, lo) uint32 words of an integer ``x`` (a Python int, array or tracer)."""
    c = _concrete(x)
    if c is not None:
        if c.dtype.kind not in "iub" and not isinstance(x, int):
            raise TypeError(f"random.{fn}: {what} must be an integer, got {c.dtype}")
        v = int(c)
        return np.uint32((v >> 32) & _MASK), np.uint32(v & _MASK)
    if x.aval.dtype.kind not in "iu" or x.aval.shape:
        raise TypeError(f"random.{fn}: {what} must be an integer scalar, got a "
                        f"{x.aval.dtype} array of shape {x.aval.shape}")
    wide = fnp.asarray(x, dtype=np.int64)
    hi = fnp.asarray(fnp.floor_divide(wide, np.int64(1 << 32)), dtype=_U32)
    return hi, fnp.asarray(wide, dtype=_U32)


def key(seed):
    """A key from an integer seed: ``uint32[2]`` holding the seed's high and low words.

    Args:
        seed (int or integer scalar array): the seed; 64-bit seeds keep both words (as
            JAX with ``jax_enable_x64``); a traced integer scalar is accepted.

    Returns:
        The key, a ``uint32`` array of shape ``(2,)``.

    Example::

        >>> random.key(42)
        array([ 0, 42], dtype=uint32)
    """
    hi, lo = _words("key", seed, "seed")
    return fnp.stack([fnp.asarray(hi, dtype=_U32), fnp.asarray(lo, dtype=_U32)])


PRNGKey = key


def split(key, num=2):
    """New keys from ``key``: ``num`` of them (an int or a shape), stacked.

    Args:
        key: a key (``uint32[2]``).
        num (int or tuple of ints, default ``2``): how many keys, or their batch shape.

    Returns:
        ``uint32`` array of shape ``(num, 2)`` (``(*num, 2)`` for a shape).

    Example::

        >>> k1, k2 = random.split(random.key(0))
    """
    _check_key("split", key)
    y0, y1 = _bits_pair("split", key, _shape("split", num, "num"))
    return fnp.stack([y0, y1], axis=-1)


def fold_in(key, data):
    """A new key from ``key`` and an integer ``data`` (a step number, a rank, ...).

    Args:
        key: a key.
        data (int or integer scalar, may be traced): the value folded in.

    Example::

        >>> step_key = random.fold_in(random.key(0), 3)
    """
    _check_key("fold_in", key)
    hi, lo = _words("fold_in", data, "data")
    y0, y1 = _hash(key, hi, lo)
    return fnp.stack([y0, y1])


def bits(key, shape=(), dtype=np.uint32):
    """Uniformly random bits: unsigned integers of ``dtype`` (``uint32`` or ``uint8``).

    Args:
        key: a key.
        shape (tuple of ints, default ``()``): the output shape.
        dtype (default ``uint32``): ``uint32`` or ``uint8`` (the low byte of the
            ``uint32`` draw, as JAX).
    """
    _check_key("bits", key)
    shape, dtype = _shape("bits", shape), np.dtype(dtype)
    if dtype not in (np.dtype(np.uint32), np.dtype(np.uint8)):
        raise TypeError(f"random.bits: dtype must be uint32 or uint8, got {dtype}")
    out = _bits32("bits", key, shape)
    return out if dtype == _U32 else fnp.asarray(out, dtype=dtype)


def _unit(fn, key, shape, dtype):
    """Floats in [0, 1) filling the mantissa from the bits, exactly as JAX does."""
    if dtype == np.float64:        # JAX: (bits64 >> 12) * 2**-52, bits64 = y0 << 32 | y1
        y0, y1 = _bits_pair(fn, key, shape)
        hi = fnp.asarray(y0, dtype=np.float64) * np.float64(2.0 ** 20)
        lo = fnp.asarray(fnp.floor_divide(y1, np.uint32(1 << 12)), dtype=np.float64)
        return (hi + lo) * np.float64(2.0 ** -52)
    b = _bits32(fn, key, shape)
    if dtype == np.float32:        # (bits32 >> 9) * 2**-23
        return fnp.asarray(fnp.floor_divide(b, np.uint32(1 << 9)), dtype=np.float32) * \
            np.float32(2.0 ** -23)
    # 16 bits: JAX takes the low 16 bits, then (bits16 >> (16 - nmant)) * 2**-nmant
    nmant = np.finfo(dtype).nmant
    m = fnp.floor_divide(fnp.remainder(b, np.uint32(1 << 16)), np.uint32(1 << (16 - nmant)))
    return fnp.asarray(m, dtype=dtype) * np.asarray(2.0 ** -nmant, dtype)


def _bound(fn, name, value, dtype, shape):
    v = fnp.asarray(value, dtype=dtype)
    try:
        if np.broadcast_shapes(_aval(v)[0], shape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"random.{fn}: {name} of shape {_aval(v)[0]} does not broadcast "
                         f"to shape {shape}") from None
    return v


def _check_order(fn, lo, hi, lo_name, hi_name):
    clo, chi = _concrete(lo), _concrete(hi)
    if clo is not None and chi is not None and np.any(clo > chi):
        raise ValueError(f"random.{fn}: {lo_name} must be <= {hi_name}, got {lo_name}={clo} "
                         f"and {hi_name}={chi}")


def uniform(key, shape=(), dtype=np.float64, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)``.

    Args:
        key: a key.
        shape (tuple of ints, default ``()``): the output shape.
        dtype (default ``float64``, NumPy's default; JAX's is float32): a float dtype.
        minval, maxval (default ``0.0``, ``1.0``): bounds broadcastable to ``shape``; may
            be traced (the result is differentiable in them).

    Example::

        >>> random.uniform(random.key(0), (3,), minval=-1.0, maxval=1.0).shape
        (3,)
    """
    _check_key("uniform", key)
    shape, dtype = _shape("uniform", shape), _float_dtype("uniform", dtype)
    _check_order("uniform", minval, maxval, "minval", "maxval")
    lo = _bound("uniform", "minval", minval, dtype, shape)
    hi = _bound("uniform", "maxval", maxval, dtype, shape)
    out = _unit("uniform", key, shape, dtype) * (hi - lo) + lo
    return fnp.broadcast_to(fnp.maximum(lo, out), shape)


def normal(key, shape=(), dtype=np.float64):
    """Standard normal floats: ``sqrt(2) * erfinv(u)`` with ``u`` uniform in (-1, 1).

    Args:
        key: a key.
        shape (tuple of ints, default ``()``): the output shape.
        dtype (default ``float64``): a float dtype.
    """
    _check_key("normal", key)
    shape, dtype = _shape("normal", shape), _float_dtype("normal", dtype)
    lo = np.nextafter(np.asarray(-1.0, dtype), np.asarray(0.0, dtype))
    u = uniform(key, shape, dtype, lo, 1.0)
    return np.asarray(np.sqrt(2), dtype) * erfinv(u)


def truncated_normal(key, lower, upper, shape=None, dtype=np.float64):
    """Standard normal floats truncated to ``(lower, upper)``.

    Args:
        key: a key.
        lower, upper: the bounds (concrete scalars or arrays broadcastable to ``shape``).
        shape (tuple of ints, default ``None``): the output shape (the bounds' broadcast
            shape when None).
        dtype (default ``float64``): a float dtype.
    """
    _check_key("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    lo, hi = _concrete(lower), _concrete(upper)
    if lo is None or hi is None:
        raise NotImplementedError("random.truncated_normal: lower and upper must be concrete "
                                  "(no erf primitive exists to trace them)")
    _check_order("truncated_normal", lo, hi, "lower", "upper")
    shape = np.broadcast_shapes(lo.shape, hi.shape) if shape is None else \
        _shape("truncated_normal", shape)
    from scipy.special import erf
    lo, hi = lo.astype(dtype), hi.astype(dtype)
    sqrt2 = np.asarray(np.sqrt(2), dtype)
    a = erf(lo / sqrt2).astype(dtype)
    b = erf(hi / sqrt2).astype(dtype)
    out = sqrt2 * erfinv(uniform(key, shape, dtype, a, b))
    return fnp.clip(out, np.nextafter(lo, np.asarray(np.inf, dtype)),
                    np.nextafter(hi, np.asarray(-np.inf, dtype)))


def _check_p(fn, p):
    c = _concrete(p)
    if c is not None and (np.any(c < 0) or np.any(c > 1)):
        raise ValueError(f"random.{fn}: p must be in [0, 1], got {c}")


def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability ``p``.

    Args:
        key: a key.
        p (float or array, default ``0.5``): the probability, broadcastable to ``shape``.
        shape (tuple of ints, default ``None``): the output shape (``p``'s when None).
    """
    _check_key("bernoulli", key)
    _check_p("bernoulli", p)
    p = fnp.asarray(p)
    if dtype_kind(p.dtype) != "f":
        p = fnp.asarray(p, dtype=np.float64)
    shape = _aval(p)[0] if shape is None else _shape("bernoulli", shape)
    return uniform(key, shape, p.dtype) < p


def dropout_mask(key, rate, shape):
    """The keep mask of dropout: True with probability ``1 - rate``.

    Args:
        key: a key.
        rate (float in [0, 1]): the probability of dropping an element.
        shape (tuple of ints): the mask's shape.

    Example::

        >>> x = np.ones((2, 3)); keep = random.dropout_mask(random.key(0), 0.5, x.shape)
        >>> y = np.where(keep, x / 0.5, 0.0)
    """
    _check_p("dropout_mask", rate)
    return bernoulli(key, 1.0 - fnp.asarray(rate, dtype=np.float64), _shape("dropout_mask",
                                                                             shape))


def randint(key, shape, minval, maxval, dtype=np.int64):
    """Uniform integers in ``[minval, maxval)`` (JAX's 32-bit construction).

    Args:
        key: a key.
        shape (tuple of ints): the output shape.
        minval, maxval (int or integer arrays broadcastable to ``shape``): the bounds;
            ``maxval - minval`` must be below ``2**32``. Where ``maxval <= minval`` the
            result is ``minval``.
        dtype (default ``int64``): an integer dtype.
    """
    _check_key("randint", key)
    shape, dtype = _shape("randint", shape), np.dtype(dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"random.randint: dtype must be an integer dtype, got {dtype}")
    _check_order("randint", minval, maxval, "minval", "maxval")
    lo = _bound("randint", "minval", fnp.asarray(minval, dtype=np.int64), np.int64, shape)
    hi = _bound("randint", "maxval", fnp.asarray(maxval, dtype=np.int64), np.int64, shape)
    clo, chi = _concrete(lo), _concrete(hi)
    if clo is not None and chi is not None and np.any(chi - clo > _MASK):
        raise ValueError(f"random.randint: maxval - minval must be below 2**32, got "
                         f"minval={clo} and maxval={chi}")
    k1, k2 = split(key)
    higher, lower = _bits32("randint", k1, shape), _bits32("randint", k2, shape)
    span = fnp.asarray(hi - lo, dtype=_U32)
    span = fnp.where(hi <= lo, np.uint32(1), span)
    mult = fnp.remainder(np.uint32(1 << 16), span)
    mult = fnp.remainder(mult * mult, span)
    offset = fnp.remainder(fnp.remainder(higher, span) * mult + fnp.remainder(lower, span),
                           span)
    return fnp.broadcast_to(fnp.asarray(lo + fnp.asarray(offset, dtype=np.int64), dtype=dtype),
                            shape)


def _shuffle(key, x, axis):
    """JAX's shuffle: sort by fresh random 32-bit keys, ceil(3 log n / log 2**32) rounds."""
    size = math.prod(_aval(x)[0])
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(_MASK)))
    for _ in range(rounds):
        key, sub = split(key)
        sort_keys = _bits32("permutation", sub, _aval(x)[0])
        _, x = P.sort.bind(sort_keys, x, dimension=axis, num_keys=1)
    return x


def _axis(fn, axis, ndim):
    if not -ndim <= axis < ndim:
        raise ValueError(f"random.{fn}: axis {axis} is out of range for an array of rank {ndim}")
    return axis % ndim


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``range(x)`` (an int) or of ``x`` along ``axis``.

    Args:
        key: a key.
        x (int or array): what to permute.
        axis (int, default ``0``): the axis permuted.
        independent (bool, default ``False``): permute every slice along ``axis``
            independently instead of moving whole slices.
    """
    _check_key("permutation", key)
    if isinstance(x, int | np.integer):
        if x < 0:
            raise ValueError(f"random.permutation: x must be >= 0, got {x}")
        return _shuffle(key, fnp.arange(int(x)), 0)
    x = fnp.asarray(x)
    shape = _aval(x)[0]
    if not shape:
        raise ValueError("random.permutation: x must be an int or an array of rank >= 1, "
                         "got a rank-0 array")
    axis = _axis("permutation", axis, len(shape))
    if independent or len(shape) == 1:
        return _shuffle(key, x, axis)
    ind = _shuffle(key, fnp.arange(shape[axis]), 0)
    return fnp.take(x, ind, axis=axis)


def gumbel(key, shape=(), dtype=np.float64):
    """Standard Gumbel floats: ``-log(-log(u))``, ``u`` uniform in [tiny, 1).

    Args:
        key: a key.
        shape (tuple of ints, default ``()``): the output shape.
        dtype (default ``float64``): a float dtype.
    """
    _check_key("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    u = uniform(key, _shape("gumbel", shape), dtype, np.finfo(dtype).tiny, 1.0)
    return -_portable_log.log(-_portable_log.log(u))


def exponential(key, shape=(), dtype=np.float64):
    """Standard exponential floats: ``-log1p(-u)``, ``u`` uniform in [0, 1).

    Args:
        key: a key.
        shape (tuple of ints, default ``()``): the output shape.
        dtype (default ``float64``): a float dtype.
    """
    _check_key("exponential", key)
    dtype = _float_dtype("exponential", dtype)
    return -_portable_log.log1p(-uniform(key, _shape("exponential", shape), dtype))


def categorical(key, logits, axis=-1, shape=None):
    """Category indices drawn with probabilities ``softmax(logits)`` along ``axis``.

    Args:
        key: a key.
        logits (array): unnormalized log probabilities.
        axis (int, default ``-1``): the category axis of ``logits``.
        shape (tuple of ints, default ``None``): the output shape; it must end with the
            batch shape of ``logits`` (its shape without ``axis``), which it is when None.

    Returns:
        int64 indices of shape ``shape``.
    """
    _check_key("categorical", key)
    logits = fnp.asarray(logits)
    lshape = _aval(logits)[0]
    if not lshape:
        raise ValueError("random.categorical: logits must have rank >= 1, got a scalar")
    axis = _axis("categorical", axis, len(lshape))
    batch = lshape[:axis] + lshape[axis + 1:]
    shape = batch if shape is None else _shape("categorical", shape)
    if shape[len(shape) - len(batch):] != batch:
        raise ValueError(f"random.categorical: shape {shape} must end with the batch shape "
                         f"{batch} of logits (shape {lshape}, axis {axis})")
    prefix = shape[:len(shape) - len(batch)]
    g = gumbel(key, prefix + lshape, _aval(logits)[1])
    return fnp.argmax(g + fnp.reshape(logits, (1,) * len(prefix) + lshape),
                      axis=len(prefix) + axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Random elements of ``a`` (or of ``range(a)`` for an int) along ``axis``.

    Args:
        key: a key.
        a (int or array): the population.
        shape (tuple of ints, default ``()``): how many draws, as a shape.
        replace (bool, default ``True``): draw with replacement.
        p (array or None, default ``None``): the probability of each element (uniform
            when None); it need not be normalized.
        axis (int, default ``0``): the axis of ``a`` drawn from.
    """
    _check_key("choice", key)
    shape = _shape("choice", shape)
    if isinstance(a, int | np.integer):
        n, arr = int(a), None
    else:
        arr = fnp.asarray(a)
        ashape = _aval(arr)[0]
        if not ashape:
            raise ValueError("random.choice: a must be an int or an array of rank >= 1")
        axis = _axis("choice", axis, len(ashape))
        n = ashape[axis]
    draws = math.prod(shape)
    if n <= 0 and draws:
        raise ValueError(f"random.choice: a has no elements to choose from (a={a!r})")
    if not replace and draws > n:
        raise ValueError(f"random.choice: cannot take {draws} samples (shape {shape}) from "
                         f"{n} elements without replacement")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n)
        else:
            ind = fnp.reshape(permutation(key, n)[:draws], shape)
    else:
        p = fnp.asarray(p)
        if _aval(p)[0] != (n,):
            raise ValueError(f"random.choice: p must have shape ({n},) to match a, got "
                             f"{_aval(p)[0]}")
        _check_p("choice", p)
        if replace:
            cum = fnp.cumsum(p)
            r = cum[-1] * (1 - uniform(key, shape, _aval(cum)[1]))
            ind = fnp.sum(cum < fnp.expand_dims(r, -1), axis=-1)      # searchsorted, left
        else:
            g = gumbel(key, (n,), _aval(p)[1]) + _portable_log.log(p)
            ind = fnp.reshape(fnp.argsort(-g)[:draws], shape)
    if arr is None:
        return ind
    return fnp.take(arr, ind, axis=axis)


# --- the global generator ----------------------------------------------------------------

class _Global:
    lock = threading.Lock()
    key = np.array([0, 0], np.uint32)


def manual_seed(seed):
    """Seed the global generator that :func:`next_key` (and stateful modules) draw from.

    Args:
        seed (int): the seed, as for :func:`key`.

    Example::

        >>> functorch_core.manual_seed(0); k = random.next_key()
    """
    if isinstance(seed, Tracer):
        raise TypeError("manual_seed: seed must be a concrete int, got a traced value")
    hi, lo = _words("manual_seed", seed, "seed")
    with _Global.lock:
        _Global.key = np.array([hi, lo], np.uint32)


def get_rng_state():
    """The global generator's state: a copy to give :func:`set_rng_state` later (a
    checkpoint stores it, so that a resumed run draws what the uninterrupted one would).

    Returns:
        a ``uint32`` array of shape ``(2,)``.

    Example::

        >>> state = random.get_rng_state(); a = random.next_key()
        >>> random.set_rng_state(state); bool((random.next_key() == a).all())
        True
    """
    with _Global.lock:
        return _Global.key.copy()


def set_rng_state(state):
    """Restore the global generator to ``state`` (from :func:`get_rng_state`).

    Args:
        state (array-like): two ``uint32`` words.

    Example::

        >>> random.set_rng_state(random.get_rng_state())
    """
    a = np.asarray(state)
    if a.shape != (2,) or a.dtype != _U32:
        raise ValueError(f"set_rng_state(state): expected a uint32 array of shape (2,) from "
                         f"get_rng_state(), got dtype {a.dtype} and shape {a.shape}")
    with _Global.lock:
        _Global.key = a.copy()


def _draw():
    """A fresh concrete key from the global generator (its state advances)."""
    with _Global.lock:
        k = _Global.key
        y0, y1 = registry.evaluate(P.threefry2x32, k[0], k[1], np.zeros(2, _U32),
                                   np.arange(2, dtype=_U32))
        _Global.key = np.array([y0[0], y1[0]], np.uint32)
        return np.array([y0[1], y1[1]], np.uint32)


def next_key():
    """A fresh key from the global generator (seeded by :func:`manual_seed`).

    Eagerly it returns a new key and advances the generator. Inside a transform
    (``jit``, ``grad``, ``vjp``, ``jvp``, ``vmap``, custom rules) the key becomes an input
    of the traced function that the transform feeds a fresh key on every call, so a
    jitted function draws new numbers each call, the same ones the eager function would
    have drawn from the same generator state. Under ``vmap(f, randomness=...)``:
    ``'same'`` gives every batch element the same key, ``'different'`` one key per
    element, ``'error'`` (vmap's default) raises. Where nothing feeds it (``make_graph``,
    ``functionalize``) it raises: pass a key argument instead.

    Example::

        >>> functorch_core.manual_seed(0)
        >>> noise = random.normal(random.next_key(), (3,))
    """
    trace = current_trace()
    if trace is None:
        return _draw()
    scope = _random_scope.current_scope()
    example = scope.example_trace(trace) if scope is not None else None
    if example is None:
        raise RuntimeError(
            f"random.next_key was called while tracing {trace.name} outside the transforms "
            "that feed it fresh keys (jit, grad, vjp, jvp, vmap), e.g. under make_graph or "
            "functionalize: a key drawn at trace time would give the same numbers on every "
            "call. Pass a key as an argument (random.key / random.split)")
    if scope.mode == "error":
        raise RuntimeError(
            f"{scope.call}: the function draws from the global random generator "
            "(random.next_key, used by stateful modules such as Dropout); pass "
            "randomness='same' (every batch element gets the same numbers) or "
            "randomness='different' (independent numbers per element) to vmap")
    return scope.new_key(example)
