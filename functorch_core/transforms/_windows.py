"""Arithmetic shared by the convolution and window rules (transpose and batching).

It follows lax's own derivation: the padding of the transposed convolutions and the
moves of a batch axis into the feature/group axes by a transpose and a reshape.
"""

from __future__ import annotations

from functorch_core.ir import primitives as P


def dilate(d: int, k: int) -> int:
    return 0 if d == 0 else 1 + k * (d - 1)


def vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    """Padding of the convolution that maps an output cotangent back onto the input."""
    pads = []
    for i, w, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                          lhs_dil, rhs_dil, strict=True):
        before = dilate(w, rd) - lo - 1
        pads.append((before, dilate(i, ld) + dilate(w, rd) - 1 - dilate(o, s) - before))
    return tuple(pads)


def vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    """Padding of the convolution of the input with the cotangent (the kernel's cotangent)."""
    pads = []
    for i, w, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                          lhs_dil, rhs_dil, strict=True):
        pads.append((lo, dilate(o, s) - dilate(i, ld) + dilate(w, rd) - lo - 1))
    return tuple(pads)


def spec_transpose(spec):
    return (spec[1], spec[0], *spec[2:])


def reshape_axis_into(src: int, dst: int, x):
    """Merge axis ``src`` of ``x`` into axis ``dst`` (numbered without ``src``), as its
    major part."""
    shape = x.aval.shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    if perm != sorted(perm):
        x = P.transpose.bind(x, permutation=tuple(perm))
    new = [shape[i] for i in range(len(shape)) if i != src]
    new[dst] *= shape[src]
    return P.reshape.bind(x, new_sizes=tuple(new))


def reshape_axis_out_of(src: int, size1: int, x):
    """Split axis ``src`` of ``x`` into (``size1``, rest)."""
    shape = list(x.aval.shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return P.reshape.bind(x, new_sizes=tuple(shape))
