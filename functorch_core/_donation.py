"""``jit(donate_argnums=...)``: let a compiled call put its results in the memory of the
arguments the caller gives up, as JAX's buffer donation does.

Which argument leaves are donated is fixed per signature (the positions and names the
user gave, minus what the function writes into: its write-back needs the array);
which results may take their memory is the backend's decision
(``backends.planning.buffers.donations``, compiled into an executable of its own), and
whether this call's arrays are fit for it (C-contiguous, writable, sharing memory with
no other argument or constant) is checked on every call. Whatever cannot be used is
ignored with a warning, as JAX warns about donated buffers it did not use.
"""

from __future__ import annotations

import warnings

import numpy as np

from functorch_core.ir.pytree import tree_leaves, tree_unflatten

from ._internal.tracing import arg_paths, argnums_tuple, normalize_argnums, positional_names


def check_spec(fname, donate_argnums, donate_argnames, static_argnums, static_argnames):
    """(donate_argnums, donate_argnames) as tuples, refused where they name a static
    argument (JAX refuses it too: a static argument has no buffer)."""
    nums = argnums_tuple(donate_argnums, fname, "donate_argnums")
    names = (donate_argnames,) if isinstance(donate_argnames, str) else tuple(donate_argnames)
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"jit({fname}): donate_argnames must be a str or a tuple of str, got "
                        f"{donate_argnames!r}")
    both = sorted(set(nums) & set(static_argnums)) + sorted(set(names) & set(static_argnames))
    if both:
        raise ValueError(f"jit({fname}): argument {both[0]!r} is both static and donated; a "
                         "static argument is a compile-time constant, not a buffer")
    return nums, names


class Donation:
    """Per signature: the donated leaves and the executable that reuses them."""

    __slots__ = ("paths", "run", "warned")

    def __init__(self, paths, run):
        self.paths, self.run, self.warned = paths, run, False


def _leaves_of(jitted, args, kwargs, nums, in_tree, n_leaves, fname):
    """Indices of the flat argument leaves that the caller donates."""
    pos = set(normalize_argnums(jitted.donate_argnums, len(args), fname, "donate_argnums")) \
        if jitted.donate_argnums else set()
    names = positional_names(jitted.func, len(args))
    pos |= {names.index(n) for n in jitted.donate_argnames if n in names}
    static = pos & set(nums)
    if static:
        raise ValueError(f"jit({fname}): positional argument {min(static)} is both static and "
                         "donated; a static argument is a compile-time constant, not a buffer")
    dyn, kw = tree_unflatten(in_tree, list(range(n_leaves)))
    order = [p for p in range(len(args)) if p not in nums]
    out = [i for j, p in enumerate(order) if p in pos for i in tree_leaves(dyn[j])]
    out += [i for n in jitted.donate_argnames if n in kw for i in tree_leaves(kw[n])]
    return sorted(set(out))


def runner(jitted, entry, args, kwargs, nums, in_tree, given, leaves, fname):
    """The donation of this signature (built on its first call), or None when the
    function donates nothing or the backend cannot reuse buffers (the interpreter and
    cuda backends ignore donation)."""
    donation = entry.donation
    if donation is None:
        want = _leaves_of(jitted, args, kwargs, nums, in_tree, len(leaves), fname)
        mutated = set(entry.mutated)
        usable = tuple(i for i in want if i not in mutated and leaves[i] is given[i]
                       and type(leaves[i]) is np.ndarray)
        donating = getattr(entry.run, "donating", None)
        run = donating(usable) if usable and donating is not None else None
        paths = arg_paths(jitted.func, in_tree, nums, len(args))
        donation = entry.donation = Donation(paths, run)
        if donating is not None:
            unused = [i for i in want if run is None or i not in run.reused]
            if unused:
                _warn(fname, paths, leaves, unused, "no result can take its memory (a result "
                      "of the same shape and dtype, written by an elementwise loop once the "
                      "argument is no longer read), or the function writes into it")
    return donation


def _warn(fname, paths, leaves, which, why, stacklevel=5):
    what = ", ".join(f"{paths[i]} ({np.asarray(leaves[i]).dtype}{list(np.shape(leaves[i]))})"
                     for i in which)
    # the user's call <- Jitted.__call__ <- _call <- runner/pick <- here
    warnings.warn(f"jit({fname}): some donated buffers were not usable: {what}: {why}",
                  UserWarning, stacklevel=stacklevel)


def pick(donation, fname, leaves, run_args, stacklevel=5):
    """The executable for this call: the donating one when this call's arrays are fit."""
    run = donation.run
    if run is None or not run.reused:
        return None
    if run.accepts_donation(run_args):
        return run
    if not donation.warned:
        donation.warned = True
        _warn(fname, donation.paths, leaves, sorted(run.reused), "an array is read-only, "
              "not C-contiguous, passed twice or shares memory with another argument or a "
              "constant of the function; this call allocates its results", stacklevel)
    return None


def fast_runner(donation, fname, plain):
    """``run(leaves)`` for jit's fast path: :func:`pick`'s choice on every call."""
    def run(args):
        donating = pick(donation, fname, args, args)
        return (donating or plain)(args)
    return run
